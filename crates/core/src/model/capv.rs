//! Reader for the pool references of CAPV's `VSphereMachine` and `VSphereMachineTemplate`
//! (`infrastructure.cluster.x-k8s.io` v1beta1 and v1beta2). Both versions spell the path and the
//! reference the same way (`network.devices[i].addressesFromPools[j]` with `apiGroup`, `kind`,
//! `name`); v1beta1 leaves `apiGroup` optional, v1beta2 requires all three.

use serde_json::Value;

use crate::field::FieldPath;
use crate::kinds::Kind;
use crate::model::paths::{capv as fields, reference};
use crate::model::read;

/// One `addressesFromPools[j]` entry as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PoolRefReading<'a> {
    /// `spec.network.devices[0].addressesFromPools[1]`.
    pub path: String,
    /// The entry is an object; None for anything else (reported by the caller).
    pub raw: &'a Value,
    pub api_group: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub name: Option<&'a str>,
    pub has_namespace: bool,
}

impl PoolRefReading<'_> {
    /// The pool kind it names, when group and kind are a known pool kind.
    pub(crate) fn pool_kind(&self) -> Option<Kind> {
        Kind::from_group_kind(self.api_group?, self.kind?).filter(|k| k.is_pool())
    }
}

/// The `network` of the machine spec and its `devices`: templates nest the spec under
/// `spec.template.spec`.
fn network_paths(kind: Kind) -> (FieldPath, FieldPath) {
    match kind {
        Kind::VSphereMachineTemplate => (fields::TEMPLATE_NETWORK, fields::TEMPLATE_DEVICES),
        _ => (fields::NETWORK, fields::DEVICES),
    }
}

/// The `network` of the machine spec, for comparing old and new on UPDATE.
pub fn network(kind: Kind, obj: &Value) -> Option<&Value> {
    read::get(obj, network_paths(kind).0)
}

/// Every pool reference of the object, in device and list order. Entries of the wrong shape are
/// returned with empty fields so the caller can say so.
pub(crate) fn pool_refs(kind: Kind, obj: &Value) -> Vec<PoolRefReading<'_>> {
    let base = network_paths(kind).1;
    let devices = read::get(obj, base)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, device) in devices.iter().enumerate() {
        let refs = read::get(device, fields::ADDRESSES_FROM_POOLS)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (j, r) in refs.iter().enumerate() {
            let s = |k: FieldPath| read::get(r, k).and_then(Value::as_str);
            out.push(PoolRefReading {
                path: format!("{}[{j}]", base.entry(i, fields::ADDRESSES_FROM_POOLS)),
                raw: r,
                api_group: s(reference::API_GROUP),
                kind: s(reference::KIND),
                name: s(reference::NAME),
                has_namespace: r.get(reference::NAMESPACE.as_str()).is_some(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_support::fixture;

    fn capture(name: &str) -> Value {
        fixture(name)["request"]["object"].clone()
    }

    #[test]
    fn reads_both_versions_and_the_template_nesting() {
        for (kind, f, base) in [
            (Kind::VSphereMachine, "vspheremachine-create.json", "spec"),
            (
                Kind::VSphereMachine,
                "vspheremachine-create-v1beta1.json",
                "spec",
            ),
            (
                Kind::VSphereMachineTemplate,
                "vspheremachinetemplate-create.json",
                "spec.template.spec",
            ),
            (
                Kind::VSphereMachineTemplate,
                "vspheremachinetemplate-create-v1beta1.json",
                "spec.template.spec",
            ),
        ] {
            let obj = capture(f);
            let refs = pool_refs(kind, &obj);
            assert_eq!(refs.len(), 1, "{f}");
            assert_eq!(
                refs[0].path,
                format!("{base}.network.devices[0].addressesFromPools[0]")
            );
            assert_eq!(refs[0].pool_kind(), Some(Kind::InClusterIPPool));
            assert_eq!(refs[0].name, Some("vsphere-node-pool"));
        }
    }
}
