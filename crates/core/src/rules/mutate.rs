//! M1, M2: the mutating webhook fills what is absent and never rewrites what the user wrote,
//! so GitOps tools see no drift and a second pass over the result yields no operation.

use serde_json::{json, Value};

use crate::field::{PatchOp, Verdict};
use crate::kinds::default_pool_group;
use crate::model::paths::claim;
use crate::rule_id::RuleId;

/// The label CAPI uses to tie an object to its cluster.
pub use crate::model::cluster::CLUSTER_NAME_LABEL;

/// The defaults of one kind. Like `Validator`, every method is written out: a kind with nothing
/// to fill says so.
pub trait Mutator: Sync {
    fn create(&self, obj: &Value) -> Verdict;
    fn update(&self, obj: &Value, old: &Value) -> Verdict;
}

/// `IPAddressClaim`: M1 on create, M2 on create and update.
pub(crate) struct ClaimDefaults;
/// `IPAddress`: M1 on create.
pub(crate) struct AddressDefaults;
/// Kinds ipam-guard fills nothing in.
pub(crate) struct NoDefaults;

impl Mutator for ClaimDefaults {
    fn create(&self, obj: &Value) -> Verdict {
        let mut v = Verdict::default();
        m1_pool_group(obj, &mut v);
        m2_cluster_label(obj, &mut v);
        v
    }
    fn update(&self, obj: &Value, _old: &Value) -> Verdict {
        let mut v = Verdict::default();
        m2_cluster_label(obj, &mut v);
        v
    }
}

impl Mutator for AddressDefaults {
    fn create(&self, obj: &Value) -> Verdict {
        let mut v = Verdict::default();
        m1_pool_group(obj, &mut v);
        v
    }
    fn update(&self, _obj: &Value, _old: &Value) -> Verdict {
        Verdict::default()
    }
}

impl Mutator for NoDefaults {
    fn create(&self, _obj: &Value) -> Verdict {
        Verdict::default()
    }
    fn update(&self, _obj: &Value, _old: &Value) -> Verdict {
        Verdict::default()
    }
}

/// M1, CREATE only: on UPDATE the spec is immutable and a patch would be denied by C4/A10.
fn m1_pool_group(obj: &Value, v: &mut Verdict) {
    let Some(pool_ref) = obj.pointer("/spec/poolRef").and_then(Value::as_object) else {
        return;
    };
    let Some(group) = pool_ref
        .get("kind")
        .and_then(Value::as_str)
        .and_then(default_pool_group)
    else {
        return;
    };
    let absent = match pool_ref.get("apiGroup") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if absent {
        // `add` on an existing member replaces it (RFC 6902 §4.1), which covers `apiGroup: ""`.
        v.patch.push(PatchOp {
            rule: RuleId::M1,
            path: "/spec/poolRef/apiGroup".to_string(),
            value: Value::String(group.to_string()),
        });
    }
}

/// M2, CREATE and UPDATE: a label removed later is put back, a label with another value is left
/// alone (C5 reports the disagreement instead of the webhook silently picking a side).
fn m2_cluster_label(obj: &Value, v: &mut Verdict) {
    let Some(cluster) = obj
        .pointer("/spec/clusterName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return;
    };
    let Some(meta) = obj.get("metadata").and_then(Value::as_object) else {
        return;
    };
    let labels = meta.get("labels");
    if labels
        .and_then(Value::as_object)
        .is_some_and(|l| l.contains_key(CLUSTER_NAME_LABEL))
    {
        return;
    }
    if !is_label_value(cluster) {
        // The API server would reject the whole request for our label: warn instead.
        v.warn(
            RuleId::M2,
            claim::CLUSTER_NAME,
            format!("not a valid label value, label {CLUSTER_NAME_LABEL} was not added"),
        );
        return;
    }
    match labels {
        None | Some(Value::Null) => v.patch.push(PatchOp {
            rule: RuleId::M2,
            path: "/metadata/labels".to_string(),
            value: json!({ CLUSTER_NAME_LABEL: cluster }),
        }),
        Some(Value::Object(_)) => v.patch.push(PatchOp {
            rule: RuleId::M2,
            path: format!("/metadata/labels/{}", escape_pointer(CLUSTER_NAME_LABEL)),
            value: Value::String(cluster.to_string()),
        }),
        // Labels of another type: the API server rejects the object on its own.
        Some(_) => {}
    }
}

/// RFC 6901: `~` → `~0`, `/` → `~1`.
fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Kubernetes `IsValidLabelValue`: at most 63 characters, alphanumerics with `-_.` inside.
fn is_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() <= 63
        && b.first().is_none_or(u8::is_ascii_alphanumeric)
        && b.last().is_none_or(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{Kind, CAPI_IPAM};
    use crate::model::Operation;
    use crate::model::Request;
    use crate::rules::mutate;
    use serde_json::json;

    fn req<'a>(kind: Kind, op: Operation, obj: &'a Value) -> Request<'a> {
        Request {
            operation: op,
            kind,
            version: kind.storage_version(),
            namespace: Some("ns"),
            name: "x",
            object: Some(obj),
            // An update carries its stored object (`shape` refuses one without).
            old_object: (op == Operation::Update).then_some(obj),
            dry_run: false,
        }
    }

    /// Applies the verdict's ops with a real JSON Patch implementation.
    fn apply(obj: &Value, v: &Verdict) -> Value {
        let ops: Vec<Value> = v
            .patch
            .iter()
            .map(|p| json!({"op": "add", "path": p.path, "value": p.value}))
            .collect();
        let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
        let mut out = obj.clone();
        json_patch::patch(&mut out, &patch).unwrap();
        out
    }

    /// Mutates, applies, and checks that a second pass yields nothing.
    fn mutate_twice(kind: Kind, op: Operation, obj: &Value) -> (Verdict, Value) {
        let v = mutate(&req(kind, op, obj));
        let out = apply(obj, &v);
        let again = mutate(&req(kind, op, &out));
        assert!(again.patch.is_empty(), "not idempotent: {:?}", again.patch);
        (v, out)
    }

    #[test]
    fn m1_fills_absent_or_empty_api_group_on_create() {
        for pool_ref in [
            json!({"kind": "InClusterIPPool", "name": "p"}),
            json!({"kind": "GlobalInClusterIPPool", "name": "p", "apiGroup": ""}),
            json!({"kind": "InClusterIPPool", "name": "p", "apiGroup": null}),
        ] {
            for kind in [Kind::IPAddressClaim, Kind::IPAddress] {
                let obj = json!({"metadata": {"name": "x"}, "spec": {"poolRef": pool_ref}});
                let (v, out) = mutate_twice(kind, Operation::Create, &obj);
                assert_eq!(v.patch.len(), 1);
                assert_eq!(v.patch[0].rule, "M1");
                assert_eq!(out["spec"]["poolRef"]["apiGroup"], CAPI_IPAM);
                assert_eq!(out["spec"]["poolRef"]["name"], "p");
            }
        }
    }

    #[test]
    fn m1_never_rewrites_a_group_or_touches_other_kinds() {
        let cases = [
            json!({"kind": "InClusterIPPool", "name": "p", "apiGroup": "example.com"}),
            json!({"kind": "IPPool", "name": "p"}),
            json!({"kind": "InClusterIPPool", "name": "p", "apiGroup": CAPI_IPAM}),
        ];
        for pool_ref in cases {
            let obj = json!({"metadata": {"name": "x"}, "spec": {"poolRef": pool_ref}});
            let v = mutate(&req(Kind::IPAddress, Operation::Create, &obj));
            assert!(v.patch.is_empty(), "{pool_ref}");
        }
    }

    #[test]
    fn m1_not_on_update() {
        let obj = json!({"metadata": {"name": "x"}, "spec": {"poolRef": {"kind": "InClusterIPPool", "name": "p"}}});
        assert!(mutate(&req(Kind::IPAddress, Operation::Update, &obj))
            .patch
            .is_empty());
        assert!(mutate(&req(Kind::IPAddressClaim, Operation::Update, &obj))
            .patch
            .is_empty());
    }

    #[test]
    fn m2_adds_label_creating_labels_map() {
        let obj = json!({"metadata": {"name": "x"}, "spec": {"clusterName": "wl-1",
            "poolRef": {"apiGroup": CAPI_IPAM, "kind": "InClusterIPPool", "name": "p"}}});
        let (v, out) = mutate_twice(Kind::IPAddressClaim, Operation::Create, &obj);
        assert_eq!(v.patch[0].path, "/metadata/labels");
        assert_eq!(out["metadata"]["labels"][CLUSTER_NAME_LABEL], "wl-1");
    }

    #[test]
    fn m2_adds_label_to_existing_labels_escaping_slash() {
        let obj = json!({"metadata": {"name": "x", "labels": {"env": "test"}},
            "spec": {"clusterName": "wl-1"}});
        for op in [Operation::Create, Operation::Update] {
            let (v, out) = mutate_twice(Kind::IPAddressClaim, op, &obj);
            assert_eq!(
                v.patch[0].path,
                "/metadata/labels/cluster.x-k8s.io~1cluster-name"
            );
            assert_eq!(out["metadata"]["labels"][CLUSTER_NAME_LABEL], "wl-1");
            assert_eq!(out["metadata"]["labels"]["env"], "test");
        }
    }

    #[test]
    fn m2_leaves_a_present_label_alone() {
        let obj = json!({"metadata": {"name": "x", "labels": {CLUSTER_NAME_LABEL: "other"}},
            "spec": {"clusterName": "wl-1"}});
        assert!(mutate(&req(Kind::IPAddressClaim, Operation::Update, &obj))
            .patch
            .is_empty());
        // Not for IPAddress, not on DELETE.
        assert!(mutate(&req(Kind::IPAddress, Operation::Create, &obj))
            .patch
            .is_empty());
    }

    #[test]
    fn m2_warns_instead_of_writing_an_invalid_label() {
        let obj = json!({"metadata": {"name": "x"}, "spec": {"clusterName": "bad name!"}});
        let v = mutate(&req(Kind::IPAddressClaim, Operation::Create, &obj));
        assert!(v.patch.is_empty());
        assert_eq!(
            v.warnings[0].to_string(),
            "spec.clusterName: not a valid label value, label cluster.x-k8s.io/cluster-name was not added"
        );
    }

    #[test]
    fn m1_and_m2_together_on_a_real_capture() {
        let review: Value = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/reviews/v1.36/mutating/ipaddressclaim-create.json"
        ))
        .unwrap();
        let mut obj = review["request"]["object"].clone();
        obj["spec"]["poolRef"]
            .as_object_mut()
            .unwrap()
            .remove("apiGroup");
        let (v, out) = mutate_twice(Kind::IPAddressClaim, Operation::Create, &obj);
        assert_eq!(
            v.patch.iter().map(|p| p.rule).collect::<Vec<_>>(),
            ["M1", "M2"]
        );
        assert_eq!(out["spec"]["poolRef"]["apiGroup"], CAPI_IPAM);
        assert_eq!(out["metadata"]["labels"][CLUSTER_NAME_LABEL], "workload-1");
    }
}
