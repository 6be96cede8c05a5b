//! Metal3's `Metal3DataTemplate`: MD1. Every machine rendered from the template claims an
//! address from the pools its metadata and network data name, so a reference that cannot be
//! served leaves each of them without one, found only when it boots. A reference that can never
//! be valid (a kind ipam-guard knows that is not a pool, a reference naming no pool) is refused; a pool not found, or of the
//! other family than its network, is a warning: pools are often applied after their templates.

use std::collections::HashSet;

use serde_json::Value;

use crate::field::{FieldError, Verdict};
use crate::model::metal3_template::{pool_refs, TemplateRef};
use crate::model::{Meta, ObjKey, Operation};
use crate::rule_id::RuleId;
use crate::rules::conditions::field_at;
use crate::rules::util::same;
use crate::rules::{Call, Ctx, Options, Validator};

/// `Metal3DataTemplate`: MD1.
pub(crate) struct DataTemplate;

impl Validator for DataTemplate {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let namespace = call.namespace_of(obj);
        for r in &pool_refs(obj) {
            md1(r, namespace, ctx, &mut v);
        }
        v
    }

    fn update(&self, obj: &Value, old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let unchanged = |key: &str| same(field_at(obj, key), field_at(old, key));
        // X5: only references the update adds or changes are looked at.
        if Meta::read(obj).deleting || (unchanged("spec.metaData") && unchanged("spec.networkData"))
        {
            return v;
        }
        let namespace = call.namespace_of(obj);
        let before: HashSet<(String, String)> = pool_refs(old)
            .iter()
            .map(|r| (r.path.clone(), r.raw.to_string()))
            .collect();
        for r in pool_refs(obj)
            .iter()
            .filter(|r| !before.contains(&(r.path.clone(), r.raw.to_string())))
        {
            md1(r, namespace, ctx, &mut v);
        }
        v
    }

    /// Templates are Metal3's to delete.
    fn delete(&self, _old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        Verdict::default()
    }

    /// MD1 denies only what the reference itself says; what it reads in the view only warns.
    fn view_denials(&self, _op: Operation, _options: &Options) -> Vec<RuleId> {
        Vec::new()
    }
}

/// MD1 for one reference.
fn md1(r: &TemplateRef, namespace: Option<&str>, ctx: &Ctx, v: &mut Verdict) {
    let path = r.path.clone();
    let Some(name) = r.name.filter(|n| !n.is_empty()) else {
        // A reference that names no pool can never be served (Metal3's own webhook refuses an
        // empty `fromPoolRef.name` too).
        let path = match r.raw {
            Value::Object(_) => format!("{path}.name"),
            _ => path,
        };
        v.deny(FieldError::required(
            RuleId::MD1,
            path,
            "no pool is named: machines of this template can never get an address from it",
        ));
        return;
    };
    let Some(kind) = r.named_kind() else {
        let written = format!(
            "{}.{}",
            r.kind.unwrap_or_default(),
            r.api_group.unwrap_or_default()
        );
        v.warn(
            RuleId::MD1,
            path,
            format!("{written} is not a pool kind ipam-guard knows; the reference was not checked"),
        );
        return;
    };
    if !kind.is_pool() {
        v.deny(FieldError::invalid(
            RuleId::MD1,
            path,
            format!("{}.{}/{name}", kind.name(), kind.group()),
            format!(
                "{kind} is not a pool: machines of this template can never get an address from it"
            ),
        ));
        return;
    }
    let key = ObjKey::new(kind, namespace.filter(|_| kind.namespaced()), name);
    let Some(pool) = ctx.index.pool(&key) else {
        v.warn(
            RuleId::MD1,
            path,
            format!(
                "{key} not found: machines of this template wait for an address until it exists"
            ),
        );
        return;
    };
    if let (Some(need), Some(has)) = (r.family, pool.family) {
        if need != has {
            v.warn(
                RuleId::MD1,
                path,
                format!(
                    "{key} hands out {} addresses; this network needs {}",
                    has.name(),
                    need.name()
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::kinds::Kind;
    use crate::rules::test_support::{create, errors, index, update, warnings};

    fn template(networks: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3DataTemplate",
            "metadata": {"name": "workers", "namespace": "metal"},
            "spec": {"clusterName": "prod", "networkData": {"networks": networks}}
        })
    }

    #[test]
    fn md1_refuses_what_is_no_pool_and_warns_about_pools_not_found_or_of_the_other_family() {
        let v6 = json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": {"name": "v6", "namespace": "metal"},
            "spec": {"addresses": ["fd00::10-fd00::20"], "prefix": 64}
        });
        let ix = index(&[(Kind::InClusterIPPool, &v6)]);
        let t = template(json!({"ipv4": [
            {"id": "a", "link": "eth0", "ipAddressFromIPPool": "missing"},
            {"id": "b", "link": "eth1", "fromPoolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "v6"}},
            {"id": "c", "link": "eth2", "fromPoolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "IPAddressClaim", "name": "x"}}
        ]}));
        let v = create(Kind::Metal3DataTemplate, &t, &ix);
        assert_eq!(
            errors(&v),
            ["spec.networkData.networks.ipv4[2].fromPoolRef: Invalid value: \"IPAddressClaim.ipam.cluster.x-k8s.io/x\": IPAddressClaim is not a pool: machines of this template can never get an address from it"]
        );
        assert_eq!(
            warnings(&v),
            [
                "spec.networkData.networks.ipv4[0].ipAddressFromIPPool: IPPool.ipam.metal3.io metal/missing not found: machines of this template wait for an address until it exists",
                "spec.networkData.networks.ipv4[1].fromPoolRef: InClusterIPPool metal/v6 hands out IPv6 addresses; this network needs IPv4",
            ]
        );
        // A reference that names no pool is refused.
        let t2 = template(json!({"ipv6": [
            {"id": "d", "link": "eth3", "fromPoolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": ""}}
        ]}));
        assert_eq!(
            errors(&create(Kind::Metal3DataTemplate, &t2, &ix)),
            ["spec.networkData.networks.ipv6[0].fromPoolRef.name: Required value: no pool is named: machines of this template can never get an address from it"]
        );
        // X5: an update that leaves the references alone says nothing of them.
        let mut relabelled = t.clone();
        relabelled["spec"]["clusterName"] = json!("prod-2");
        let v = update(Kind::Metal3DataTemplate, &relabelled, &t, &ix);
        assert!(errors(&v).is_empty() && warnings(&v).is_empty());
    }
}
