//! Readers for CAPI `IPAddressClaim` and `IPAddress` (`ipam.cluster.x-k8s.io` v1alpha1, v1beta1,
//! v1beta2). The versions share one JSON shape for what we read; they differ in what the schema
//! allows (v1beta1 `poolRef.apiGroup` optional, `prefix` an unbounded integer; v1beta2 `prefix`
//! int32), so one lenient reader serves all three and never narrows a number.
//!
//! Each reader parses every field once and reports what is wrong with a field on its own (type,
//! syntax, bounds) with the id of the rule that reads it; relations between fields and other
//! objects are the rules' business.

use serde_json::Value;

use crate::address::{Family, Ip};
use crate::field::{FieldError, FieldPath, Warning};
use crate::kinds::{default_pool_group, Kind};
use crate::model::paths::{address, claim, reference};
use crate::model::read;
use crate::model::{AddressProj, ClaimProj, ObjKey, PoolRef};
use crate::rule_id::RuleId;

/// A `poolRef` (TypedLocalObjectReference) as written; borrowed from the object.
#[derive(Debug, Clone, Copy, Default)]
pub struct RefReading<'a> {
    /// The whole reference, for error values; None when absent or not an object.
    pub raw: Option<&'a Value>,
    pub api_group: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub name: Option<&'a str>,
    /// A `namespace` key is present (SPEC C2: references never leave the namespace).
    pub has_namespace: bool,
}

impl<'a> RefReading<'a> {
    /// Reads the reference at `path` (`spec.poolRef`); type errors go to `errors` under `rule`.
    fn read(rule: RuleId, obj: &'a Value, path: FieldPath, errors: &mut Vec<FieldError>) -> Self {
        let Some(r) = read::keep(read::object(rule, obj, path), errors) else {
            return RefReading::default();
        };
        let mut field = |key: FieldPath| match key.get(r) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(v) => {
                errors.push(FieldError::invalid(
                    rule,
                    format!("{path}.{key}"),
                    v.clone(),
                    "must be a string",
                ));
                None
            }
        };
        RefReading {
            raw: Some(r),
            api_group: field(reference::API_GROUP),
            kind: field(reference::KIND),
            name: field(reference::NAME),
            has_namespace: r.get(reference::NAMESPACE.as_str()).is_some(),
        }
    }

    /// The group the reference means once mutated (M1): a missing or empty group of an in-cluster
    /// pool kind is `ipam.cluster.x-k8s.io`. The index and the rules compare this, so a claim
    /// stored before the mutating webhook existed still matches its addresses.
    pub fn effective_group(&self) -> &'a str {
        match self.api_group {
            Some(g) if !g.is_empty() => g,
            _ => self.kind.and_then(default_pool_group).unwrap_or_default(),
        }
    }

    /// The reference as the index keeps it.
    pub fn pool_ref(&self) -> PoolRef {
        PoolRef {
            api_group: self.effective_group().to_string(),
            kind: self.kind.unwrap_or_default().to_string(),
            name: self.name.unwrap_or_default().to_string(),
        }
    }

    /// Whether the reference names a prefix pool kind (whose addresses are sub-prefixes).
    pub fn names_prefix_pool(&self) -> bool {
        self.kind
            .and_then(|k| Kind::from_group_kind(self.effective_group(), k))
            .is_some_and(Kind::is_prefix_pool)
    }

    /// The key of the referenced pool, when the reference names a known pool kind.
    pub fn pool_key(&self, namespace: Option<&str>) -> Option<ObjKey> {
        let kind = Kind::from_group_kind(self.effective_group(), self.kind?)?;
        let name = self.name.filter(|n| !n.is_empty())?;
        kind.is_pool().then(|| ObjKey::new(kind, namespace, name))
    }
}

// === IPAddressClaim ===

/// An `IPAddressClaim` spec as read.
#[derive(Debug, Clone)]
pub struct ClaimReading<'a> {
    /// `spec.poolRef` is present (an object).
    pub has_pool_ref: bool,
    pub pool_ref: RefReading<'a>,
    pub cluster_name: Option<&'a str>,
    /// Fields of the wrong type (C1 for the reference, C5 for `clusterName`).
    pub errors: Vec<FieldError>,
}

/// Reads an `IPAddressClaim` of any served version.
pub fn read_claim(obj: &Value) -> ClaimReading<'_> {
    let mut errors = Vec::new();
    let pool_ref = RefReading::read(RuleId::C1, obj, claim::POOL_REF, &mut errors);
    let cluster_name = read::keep(
        read::string(RuleId::C5, obj, claim::CLUSTER_NAME),
        &mut errors,
    );
    ClaimReading {
        has_pool_ref: pool_ref.raw.is_some(),
        pool_ref,
        cluster_name,
        errors,
    }
}

/// What the index keeps of a claim.
pub fn project_claim(obj: &Value, key: ObjKey) -> ClaimProj {
    let mut ignored = Vec::new();
    let pool_ref = RefReading::read(RuleId::C1, obj, claim::POOL_REF, &mut ignored);
    ClaimProj {
        key,
        pool_ref: pool_ref.pool_ref(),
        created: super::creation_timestamp(obj),
        bound: super::has_name(obj, claim::ADDRESS_REF_NAME),
    }
}

// === IPAddress ===

/// An `IPAddress` spec as read: each field parsed once.
#[derive(Debug, Clone)]
pub struct AddressReading<'a> {
    /// `spec.address` as written.
    pub address_text: Option<&'a str>,
    /// The parsed address; None when absent or invalid (an error says which).
    pub address: Option<Ip>,
    /// `spec.prefix` as written (never narrowed), and checked against the address's family.
    pub prefix_raw: Option<&'a Value>,
    pub prefix: Option<u8>,
    pub gateway_text: Option<&'a str>,
    pub gateway: Option<Ip>,
    /// `spec.claimRef.name`.
    pub claim_name: Option<&'a str>,
    pub claim_ref_has_namespace: bool,
    pub pool_ref: RefReading<'a>,
    /// Problems of one field on its own: A1 address, A2 prefix, A3 gateway syntax, A5 types.
    pub errors: Vec<FieldError>,
    /// Non-canonical IPv6 text (A1, A3).
    pub warnings: Vec<Warning>,
}

impl AddressReading<'_> {
    /// The family the object is about: the address's, else the gateway's.
    pub fn family(&self) -> Option<Family> {
        self.address.or(self.gateway).map(|ip| ip.family)
    }
}

/// Reads a CAPI `IPAddress` of any served version.
pub fn read_address(obj: &Value) -> AddressReading<'_> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();

    let (address_text, address) = read::ip(
        RuleId::A1,
        obj,
        address::ADDRESS,
        &mut errors,
        &mut warnings,
    );
    if address_text.is_none() && !errors.iter().any(|e| e.path == address::ADDRESS) {
        errors.push(FieldError::required(RuleId::A1, address::ADDRESS, ""));
    }
    let (gateway_text, gateway) = read::ip(
        RuleId::A3,
        obj,
        address::GATEWAY,
        &mut errors,
        &mut warnings,
    );

    let prefix_raw = read::get(obj, address::PREFIX);
    let family = address.or(gateway).map(|ip| ip.family);
    let prefix = read::prefix(RuleId::A2, obj, address::PREFIX, family, &mut errors);
    if prefix_raw.is_none() {
        errors.push(FieldError::required(RuleId::A2, address::PREFIX, ""));
    }

    let claim_ref = read::keep(
        read::object(RuleId::A5, obj, address::CLAIM_REF),
        &mut errors,
    );
    let claim_name = read::keep(
        read::string(RuleId::A5, obj, address::CLAIM_REF_NAME),
        &mut errors,
    );
    let pool_ref = RefReading::read(RuleId::A5, obj, address::POOL_REF, &mut errors);

    AddressReading {
        address_text,
        address,
        prefix_raw,
        prefix,
        gateway_text,
        gateway,
        claim_name,
        claim_ref_has_namespace: claim_ref.is_some_and(|c| c.get("namespace").is_some()),
        pool_ref,
        errors,
        warnings,
    }
}

/// What the index keeps of an address: only what A7–A9 and P8–P9 ask about.
pub fn project_address(obj: &Value, key: ObjKey) -> AddressProj {
    let ip = read::ip_value(obj, address::ADDRESS);
    let mut ignored = Vec::new();
    let pool_ref = RefReading::read(RuleId::A5, obj, address::POOL_REF, &mut ignored);
    let claim = read::get(obj, address::CLAIM_REF_NAME)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(std::sync::Arc::from);
    AddressProj {
        pool: pool_ref.pool_key(key.namespace.as_deref()),
        key,
        ip,
        claim,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::CAPI_IPAM;
    use crate::model::test_support::fixture;
    use serde_json::json;

    fn capture(name: &str) -> Value {
        fixture("rules", name)["request"]["object"].clone()
    }

    #[test]
    fn reads_every_served_version_of_a_capture() {
        for f in [
            "ipaddress-create.json",
            "ipaddress-create-v1beta1.json",
            "ipaddress-create-v1alpha1.json",
        ] {
            let obj = capture(f);
            let r = read_address(&obj);
            assert!(r.errors.is_empty(), "{f}: {:?}", r.errors);
            assert_eq!(r.address.unwrap().to_string(), "10.10.0.10");
            assert_eq!(r.prefix, Some(24));
            assert_eq!(r.gateway.unwrap().to_string(), "10.10.0.1");
            assert_eq!(r.claim_name, Some("claim-a"));
            let key = ObjKey::new(Kind::IPAddress, Some("capture-ns"), "a");
            assert_eq!(
                project_address(&obj, key).pool,
                Some(ObjKey::new(
                    Kind::InClusterIPPool,
                    Some("capture-ns"),
                    "pool-a"
                ))
            );
        }
        for f in [
            "ipaddressclaim-create.json",
            "ipaddressclaim-create-v1beta1.json",
            "ipaddressclaim-create-v1alpha1.json",
        ] {
            let obj = capture(f);
            let r = read_claim(&obj);
            assert!(r.errors.is_empty(), "{f}");
            assert_eq!(r.pool_ref.pool_ref().api_group, CAPI_IPAM);
        }
    }

    #[test]
    fn a2_prefix_never_wraps() {
        // 2^32 + 24 would read as 24 if narrowed to 32 bits.
        let obj = json!({"spec": {"address": "10.0.0.1", "prefix": 4294967320u64}});
        let r = read_address(&obj);
        assert_eq!(r.prefix, None);
        assert!(r.errors.iter().any(|e| e.to_string()
            == "spec.prefix: Invalid value: 4294967320: prefix is too large for an IPv4 address"));
        let obj = json!({"spec": {"address": "10.0.0.1", "prefix": "abc"}});
        let r = read_address(&obj);
        assert!(r
            .errors
            .iter()
            .any(|e| e.to_string() == r#"spec.prefix: Invalid value: "abc": must be an integer"#));
    }

    #[test]
    fn v1beta1_pool_ref_without_group_means_the_in_cluster_group() {
        let obj = json!({"spec": {"poolRef": {"kind": "GlobalInClusterIPPool", "name": "g"}}});
        let r = read_claim(&obj);
        assert_eq!(r.pool_ref.api_group, None);
        assert_eq!(
            r.pool_ref.pool_key(Some("ns")),
            Some(ObjKey::new(Kind::GlobalInClusterIPPool, None, "g"))
        );
        // A group someone else owns is never guessed.
        let obj = json!({"spec": {"poolRef": {"kind": "IPPool", "name": "m"}}});
        assert_eq!(read_claim(&obj).pool_ref.pool_key(Some("ns")), None);
    }
}
