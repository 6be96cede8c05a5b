//! CAPV `VSphereMachine` and `VSphereMachineTemplate`: V1, warnings only. CAPV owns
//! these objects and its own webhooks judge them; ipam-guard only points out a pool reference
//! that will leave a machine waiting for an address that never comes.

use std::collections::HashSet;

use serde_json::Value;

use crate::field::Verdict;
use crate::model::capv::{network, pool_refs, PoolRefReading};
use crate::model::{Meta, ObjKey, Operation};
use crate::rule_id::RuleId;
use crate::rules::claim::not_a_pool_kind_of;
use crate::rules::holders::static_conflicts;
use crate::rules::util::same;
use crate::rules::{Call, Ctx, Options, Validator};

/// `VSphereMachine` and `VSphereMachineTemplate`: V1; a machine (`Machine(true)`: it holds its
/// static addresses, a template does not) SA3 too.
pub(crate) struct Machine(pub bool);

impl Validator for Machine {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let namespace = call.namespace_of(obj);
        for r in &pool_refs(call.kind, obj) {
            v1(r, namespace, ctx, &mut v);
        }
        if self.0 {
            static_conflicts(obj, None, ctx, &mut v);
        }
        v
    }

    fn update(&self, obj: &Value, old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let (meta, old_meta) = (Meta::read(obj), Meta::read(old));
        if self.0 && !meta.deleting && meta.address_space() != old_meta.address_space() {
            // Moved to another address space: every static address meets new neighbours.
            static_conflicts(obj, None, ctx, &mut v);
            return v;
        }
        // X5: only references and static addresses the update adds or changes are looked at.
        if meta.deleting || same(network(call.kind, obj), network(call.kind, old)) {
            return v;
        }
        if self.0 {
            static_conflicts(obj, Some(old), ctx, &mut v);
        }
        let namespace = call.namespace_of(obj);
        let before: HashSet<String> = pool_refs(call.kind, old)
            .iter()
            .map(|r| r.raw.to_string())
            .collect();
        for r in pool_refs(call.kind, obj)
            .iter()
            .filter(|r| !before.contains(&r.raw.to_string()))
        {
            v1(r, namespace, ctx, &mut v);
        }
        v
    }

    /// CAPV's objects are CAPV's to delete.
    fn delete(&self, _old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        Verdict::default()
    }

    /// V1 only warns; SA3 refuses a machine's static address.
    fn view_denials(&self, op: Operation, options: &Options) -> Vec<RuleId> {
        let on = self.0 && options.overlap_scope != crate::rules::OverlapScope::Off;
        match op {
            Operation::Create | Operation::Update if on => vec![RuleId::SA3],
            _ => Vec::new(),
        }
    }
}

/// V1 for one `addressesFromPools[j]`.
fn v1(r: &PoolRefReading, namespace: Option<&str>, ctx: &Ctx, v: &mut Verdict) {
    let path = r.path.clone();
    if !r.raw.is_object() {
        v.warn(
            RuleId::V1,
            path,
            "must be an object with apiGroup, kind and name",
        );
        return;
    }
    let mut missing = false;
    for (field, value) in [
        ("apiGroup", r.api_group),
        ("kind", r.kind),
        ("name", r.name),
    ] {
        if value.is_none_or(str::is_empty) {
            v.warn(RuleId::V1, path.clone(), format!("{field} is required"));
            missing = true;
        }
    }
    if r.has_namespace {
        v.warn(
            RuleId::V1,
            path.clone(),
            "namespace is not part of the reference: CAPV looks the pool up in the machine's namespace",
        );
    }
    if missing {
        return;
    }
    let (group, kind, name) = (
        r.api_group.unwrap_or_default(),
        r.kind.unwrap_or_default(),
        r.name.unwrap_or_default(),
    );
    let Some(pool_kind) = r.pool_kind() else {
        let message = not_a_pool_kind_of(group, kind).unwrap_or_else(|| {
            format!(
                "{kind}.{group} is not a pool kind ipam-guard knows; the reference was not checked"
            )
        });
        v.warn(RuleId::V1, path, message);
        return;
    };
    let key = ObjKey::new(pool_kind, namespace, name);
    if ctx.index.pool(&key).is_none() {
        v.warn(RuleId::V1, path, format!("{key} not found"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Index;
    use crate::kinds::Kind;
    use crate::model::{project, Projection, Request};
    use crate::rules::test_support::{fixture, index, warnings};
    use crate::rules::{validate, Options};
    use serde_json::json;

    fn judge(kind: Kind, file: &str, edit: impl Fn(&mut Value), ix: &Index) -> Verdict {
        let review = fixture(file);
        let rq = &review["request"];
        let mut obj = rq["object"].clone();
        edit(&mut obj);
        let old = rq.get("oldObject").filter(|o| !o.is_null());
        let req = Request {
            operation: Operation::parse(rq["operation"].as_str().unwrap()).unwrap(),
            kind,
            version: rq["kind"]["version"].as_str().unwrap(),
            namespace: rq["namespace"].as_str(),
            name: rq["name"].as_str().unwrap(),
            object: Some(&obj),
            old_object: old,
            dry_run: false,
        };
        let options = Options::default();
        validate(
            &req,
            &Ctx {
                index: ix,
                options,
                now: std::time::Instant::now(),
            },
        )
    }

    fn pools() -> Index {
        let node_pool = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": {"name": "vsphere-node-pool", "namespace": "capture-eco"},
            "spec": {"addresses": ["10.10.0.0/24"], "prefix": 24}});
        let node_pool_v6 = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
            "metadata": {"name": "vsphere-node-pool-v6"},
            "spec": {"addresses": ["fd00::/120"], "prefix": 64}});
        index(&[
            (Kind::InClusterIPPool, &node_pool),
            (Kind::GlobalInClusterIPPool, &node_pool_v6),
        ])
    }

    const REF: &str = "spec.network.devices[0].addressesFromPools[0]";
    const TREF: &str = "spec.template.spec.network.devices[0].addressesFromPools[0]";

    #[test]
    fn v1_captures_with_their_pools_pass_silently() {
        let ix = pools();
        for (kind, f) in [
            (Kind::VSphereMachine, "vspheremachine-create.json"),
            (Kind::VSphereMachine, "vspheremachine-create-v1beta1.json"),
            (
                Kind::VSphereMachineTemplate,
                "vspheremachinetemplate-create.json",
            ),
            (
                Kind::VSphereMachineTemplate,
                "vspheremachinetemplate-create-v1beta1.json",
            ),
            (Kind::VSphereMachine, "vspheremachine-update-label.json"),
            (Kind::VSphereMachine, "vspheremachine-update-spec.json"),
        ] {
            assert_eq!(judge(kind, f, |_| {}, &ix), Verdict::default(), "{f}");
        }
    }

    #[test]
    fn v1_missing_pool_is_a_warning_never_a_denial() {
        let v = judge(
            Kind::VSphereMachine,
            "vspheremachine-create.json",
            |_| {},
            &Index::new(),
        );
        assert!(v.allowed());
        assert_eq!(
            warnings(&v),
            [format!(
                "{REF}: InClusterIPPool capture-eco/vsphere-node-pool not found"
            )]
        );
        // The template, v1beta1: the same, under spec.template.spec.
        let v = judge(
            Kind::VSphereMachineTemplate,
            "vspheremachinetemplate-create-v1beta1.json",
            |_| {},
            &Index::new(),
        );
        assert!(v.allowed());
        assert_eq!(
            warnings(&v),
            [format!(
                "{TREF}: InClusterIPPool capture-eco/vsphere-node-pool not found"
            )]
        );
    }

    #[test]
    fn v1_incomplete_or_unknown_references_warn() {
        let edit = |obj: &mut Value| {
            obj["spec"]["network"]["devices"][0]["addressesFromPools"] = json!([
                {"kind": "InClusterIPPool", "name": "vsphere-node-pool", "namespace": "other"},
                {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "IPPoolX", "name": "a"},
                {"apiGroup": "example.com", "kind": "NetboxPool", "name": "b"},
                "vsphere-node-pool",
            ]);
        };
        let v = judge(
            Kind::VSphereMachine,
            "vspheremachine-create.json",
            edit,
            &pools(),
        );
        assert!(v.allowed());
        assert!(v.errors.is_empty());
        let base = "spec.network.devices[0].addressesFromPools";
        assert_eq!(
            warnings(&v),
            [
                format!("{base}[0]: apiGroup is required"),
                format!("{base}[0]: namespace is not part of the reference: CAPV looks the pool up in the machine's namespace"),
                format!("{base}[1]: IPPoolX is not a pool kind of ipam.cluster.x-k8s.io (pool kinds: InClusterIPPool, GlobalInClusterIPPool, InClusterPrefixPool, GlobalInClusterPrefixPool)"),
                format!("{base}[2]: NetboxPool.example.com is not a pool kind ipam-guard knows; the reference was not checked"),
                format!("{base}[3]: must be an object with apiGroup, kind and name"),
            ]
        );
        assert!(v.rules() == ["V1"]);
    }

    #[test]
    fn v1_metal3_and_spiderpool_pools_are_looked_up_by_their_scope() {
        let mut ix = Index::new();
        let m3 = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
            "metadata": {"name": "m3", "namespace": "capture-eco"},
            "spec": {"namePrefix": "m3", "pools": [{"subnet": "10.1.0.0/24"}]}});
        if let Some(Projection::Pool(p)) = project(Kind::Metal3IPPool, &m3) {
            ix.upsert_pool(*p);
        }
        let edit = |obj: &mut Value| {
            obj["spec"]["network"]["devices"][0]["addressesFromPools"] = json!([
                {"apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "m3"},
                {"apiGroup": "spiderpool.spidernet.io", "kind": "SpiderIPPool", "name": "s"},
            ]);
        };
        let v = judge(
            Kind::VSphereMachine,
            "vspheremachine-create.json",
            edit,
            &ix,
        );
        assert_eq!(
            warnings(&v),
            ["spec.network.devices[0].addressesFromPools[1]: SpiderIPPool.spiderpool.spidernet.io s not found"]
        );
    }

    #[test]
    fn v1_updates_judge_only_added_references() {
        // The capture adds a reference to vsphere-node-pool-v6; only that one is looked up.
        let v = judge(
            Kind::VSphereMachine,
            "vspheremachine-update-spec.json",
            |_| {},
            &Index::new(),
        );
        assert_eq!(
            warnings(&v),
            ["spec.network.devices[0].addressesFromPools[1]: GlobalInClusterIPPool vsphere-node-pool-v6 not found"]
        );
        let v = judge(
            Kind::VSphereMachineTemplate,
            "vspheremachinetemplate-update-spec.json",
            |_| {},
            &Index::new(),
        );
        assert_eq!(
            warnings(&v),
            [format!(
                "{TREF}: InClusterIPPool capture-eco/vsphere-node-pool-b not found"
            )]
        );
        let v = judge(
            Kind::VSphereMachine,
            "vspheremachine-update-label.json",
            |_| {},
            &Index::new(),
        );
        assert_eq!(v, Verdict::default());
    }
}
