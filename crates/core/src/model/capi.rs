//! Readers for CAPI `IPAddressClaim` and `IPAddress` (`ipam.cluster.x-k8s.io` v1alpha1, v1beta1,
//! v1beta2). The versions share one JSON shape for what we read; they differ in what the schema
//! allows (v1beta1 `poolRef.apiGroup` optional, `prefix` an unbounded integer; v1beta2 `prefix`
//! int32), so one lenient reader serves all three and never narrows a number.
//!
//! Each reader decodes every field once into a typed reading (`model::written`) and judges
//! nothing: what is wrong with a field (type, syntax, bounds) and between fields and objects is
//! said by the rules (`rules::claim`, `rules::ipaddress`), under their ids.

use serde_json::Value;

use crate::field::FieldPath;
use crate::kinds::{default_pool_group, Kind};
use crate::model::paths::{address, claim, reference};
use crate::model::read;
use crate::model::written::{self, AddressFields, AddressPaths, Written};
use crate::model::{AddressProj, ClaimProj, KeyRef, ObjKey, PoolRef};

/// A `poolRef` (TypedLocalObjectReference) as written; borrowed from the object.
#[derive(Debug, Clone, PartialEq)]
pub struct RefReading<'a> {
    /// The whole reference: an object (whose keys are read below), or of another type.
    pub raw: Written<'a, ()>,
    pub api_group: Written<'a, &'a str>,
    pub kind: Written<'a, &'a str>,
    pub name: Written<'a, &'a str>,
    /// A `namespace` key is present (C2: references never leave the namespace).
    pub has_namespace: bool,
}

impl<'a> RefReading<'a> {
    /// Reads the reference at `path` (`spec.poolRef`), in one pass over its keys rather than a
    /// search per key.
    pub fn read(obj: &'a Value, path: FieldPath) -> Self {
        let found = written::object(obj, path);
        let mut out = RefReading {
            raw: found.present(),
            api_group: Written::Absent,
            kind: Written::Absent,
            name: Written::Absent,
            has_namespace: false,
        };
        let Written::Ok(Value::Object(r)) = found else {
            return out;
        };
        for (key, v) in r {
            match key.as_str() {
                k if k == reference::API_GROUP.as_str() => {
                    out.api_group = written::string_of(Some(v))
                }
                k if k == reference::KIND.as_str() => out.kind = written::string_of(Some(v)),
                k if k == reference::NAME.as_str() => out.name = written::string_of(Some(v)),
                // Present at all, even as null: C2 forbids the key.
                k if k == reference::NAMESPACE.as_str() => out.has_namespace = true,
                _ => {}
            }
        }
        out
    }

    /// The group the reference means once mutated (M1): a missing or empty group of an in-cluster
    /// pool kind is `ipam.cluster.x-k8s.io`. The index and the rules compare this, so a claim
    /// stored before the mutating webhook existed still matches its addresses.
    pub(crate) fn effective_group(&self) -> &'a str {
        match self.api_group.get() {
            Some(g) if !g.is_empty() => g,
            _ => self
                .kind
                .get()
                .and_then(default_pool_group)
                .unwrap_or_default(),
        }
    }

    /// The reference as the index keeps it.
    pub fn pool_ref(&self) -> PoolRef {
        PoolRef {
            api_group: self.effective_group().to_string(),
            kind: self.kind.get().unwrap_or_default().to_string(),
            name: self.name.get().unwrap_or_default().to_string(),
        }
    }

    /// Whether the reference is `p` as the index keeps it (`pool_ref`), without copying it.
    pub(crate) fn refers_to(&self, p: &PoolRef) -> bool {
        p.api_group == self.effective_group()
            && p.kind == self.kind.get().unwrap_or_default()
            && p.name == self.name.get().unwrap_or_default()
    }

    /// Whether the reference names a prefix pool kind (whose addresses are sub-prefixes).
    pub(crate) fn names_prefix_pool(&self) -> bool {
        self.kind
            .get()
            .and_then(|k| Kind::from_group_kind(self.effective_group(), k))
            .is_some_and(Kind::is_prefix_pool)
    }

    /// The key of the referenced pool, when the reference names a known pool kind.
    pub fn pool_key(&self, namespace: Option<&str>) -> Option<ObjKey> {
        self.pool_key_ref(namespace).map(KeyRef::to_key)
    }

    /// As `pool_key`, borrowed: for looking the pool up.
    pub(crate) fn pool_key_ref<'k>(&'k self, namespace: Option<&'k str>) -> Option<KeyRef<'k>> {
        let kind = Kind::from_group_kind(self.effective_group(), self.kind.get()?)?;
        let name = self.name.get().filter(|n| !n.is_empty())?;
        kind.is_pool().then(|| KeyRef::new(kind, namespace, name))
    }
}

// === IPAddressClaim ===

/// An `IPAddressClaim` spec as read.
#[derive(Debug, Clone)]
pub struct ClaimReading<'a> {
    pub pool_ref: RefReading<'a>,
    pub cluster_name: Written<'a, &'a str>,
}

/// Reads an `IPAddressClaim` of any served version.
pub fn read_claim(obj: &Value) -> ClaimReading<'_> {
    ClaimReading {
        pool_ref: RefReading::read(obj, claim::POOL_REF),
        cluster_name: written::string(obj, claim::CLUSTER_NAME),
    }
}

/// What the index keeps of a claim.
pub fn project_claim(obj: &Value, key: ObjKey) -> ClaimProj {
    project_claim_reading(&RefReading::read(obj, claim::POOL_REF), obj, key)
}

/// As `project_claim`, with the reference already read (`read_claim`'s, on admission).
pub(crate) fn project_claim_reading(pool_ref: &RefReading, obj: &Value, key: ObjKey) -> ClaimProj {
    ClaimProj {
        key,
        pool_ref: pool_ref.pool_ref(),
        created: super::creation_timestamp(obj),
        bound: super::has_name(obj, claim::ADDRESS_REF_NAME),
        endpoint_of: super::endpoint_of(obj),
        cluster: super::claim_cluster(obj),
    }
}

// === IPAddress ===

/// An `IPAddress` spec as read: each field parsed once.
#[derive(Debug, Clone)]
pub struct AddressReading<'a> {
    /// `spec.address`, `spec.prefix`, `spec.gateway`.
    pub spec: AddressFields<'a>,
    pub claim_ref: Written<'a, ()>,
    pub claim_name: Written<'a, &'a str>,
    pub claim_ref_has_namespace: bool,
    pub pool_ref: RefReading<'a>,
}

impl<'a> AddressReading<'a> {
    /// `spec.claimRef.name`, when it is a string.
    pub fn claim(&self) -> Option<&'a str> {
        self.claim_name.get()
    }
}

/// Where a CAPI `IPAddress` keeps its address, prefix and gateway.
pub const ADDRESS_PATHS: AddressPaths = AddressPaths {
    address: address::ADDRESS,
    prefix: address::PREFIX,
    gateway: address::GATEWAY,
};

/// Reads a CAPI `IPAddress` of any served version.
pub fn read_address(obj: &Value) -> AddressReading<'_> {
    let claim_ref = written::object(obj, address::CLAIM_REF);
    AddressReading {
        spec: AddressFields::read(obj, ADDRESS_PATHS),
        claim_ref_has_namespace: claim_ref
            .get()
            .is_some_and(|c| c.get(reference::NAMESPACE.as_str()).is_some()),
        // `spec.claimRef.name`, read in the reference already found: it is absent wherever
        // the reference is absent or not an object, as a lookup from the root finds it.
        claim_name: claim_ref
            .get()
            .map_or(Written::Absent, |c| written::string(c, reference::NAME)),
        claim_ref: claim_ref.present(),
        pool_ref: RefReading::read(obj, address::POOL_REF),
    }
}

/// `project_address` from a reading the rules took already: the X2 record of an admitted
/// address, which would otherwise read its address, pool and claim a second time.
pub(crate) fn project_reading(r: &AddressReading, key: ObjKey) -> AddressProj {
    AddressProj {
        pool: r.pool_ref.pool_key(key.namespace.as_deref()),
        ip: r.spec.ip(),
        claim: r
            .claim()
            .filter(|s| !s.is_empty())
            .map(std::sync::Arc::from),
        key,
    }
}

/// What the index keeps of an address: only what A7–A9 and P8–P9 ask about.
pub fn project_address(obj: &Value, key: ObjKey) -> AddressProj {
    let ip = read::ip_value(obj, address::ADDRESS);
    let pool_ref = RefReading::read(obj, address::POOL_REF);
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
        fixture(name)["request"]["object"].clone()
    }

    #[test]
    fn a_reference_refers_to_the_pool_ref_it_is_kept_as_and_to_no_other() {
        let refs = [
            json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"}),
            json!({"kind": "InClusterIPPool", "name": "p"}),
            json!({"apiGroup": "", "kind": "InClusterIPPool", "name": "p"}),
            json!({"apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "p"}),
            json!({"kind": "InClusterIPPool", "name": "q"}),
            json!({"kind": 7, "name": "p"}),
            json!({}),
            json!("p"),
        ];
        let objects: Vec<Value> = refs
            .iter()
            .map(|r| json!({"spec": {"poolRef": r}}))
            .collect();
        for a in &objects {
            for b in &objects {
                let a = RefReading::read(a, address::POOL_REF);
                let b = RefReading::read(b, address::POOL_REF);
                assert_eq!(
                    a.refers_to(&b.pool_ref()),
                    a.pool_ref() == b.pool_ref(),
                    "{a:?} {b:?}"
                );
            }
        }
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
            assert_eq!(r.spec.ip().unwrap().to_string(), "10.10.0.10", "{f}");
            assert_eq!(r.spec.prefix_len(), Some(24));
            assert_eq!(r.spec.gateway_ip().unwrap().to_string(), "10.10.0.1");
            assert_eq!(r.claim(), Some("claim-a"));
            assert!(matches!(r.claim_ref, Written::Ok(_)));
            assert_eq!(r.pool_ref.name, Written::Ok("pool-a"));
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
            assert!(matches!(r.pool_ref.raw, Written::Ok(_)), "{f}");
            assert_eq!(r.pool_ref.pool_ref().api_group, CAPI_IPAM);
        }
    }

    /// The X2 record of an admitted address comes from the rules' reading: it must be what the
    /// index makes of the same object, for every way a field can be written.
    #[test]
    fn projection_from_a_reading_is_the_index_projection() {
        let pool =
            json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"});
        let mut objects: Vec<Value> = [
            "ipaddress-create.json",
            "ipaddress-create-v1beta1.json",
            "ipaddress-create-v1alpha1.json",
        ]
        .into_iter()
        .map(capture)
        .collect();
        for spec in [
            json!({"address": "10.0.0.1", "poolRef": pool, "claimRef": {"name": "c"}}),
            json!({"address": "fd00::1", "poolRef": pool, "claimRef": {"name": ""}}),
            json!({"address": "010.0.0.1", "poolRef": pool, "claimRef": {"name": 5}}),
            json!({"address": "::ffff:10.0.0.1", "poolRef": pool, "claimRef": "c"}),
            json!({"address": 7, "poolRef": {"kind": "InClusterIPPool", "name": "p"}}),
            json!({"address": null, "poolRef": {"kind": "Unknown", "name": "p"}}),
            json!({"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "GlobalInClusterIPPool", "name": ""}}),
            json!({"poolRef": "p", "claimRef": null}),
            json!({"poolRef": {"apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "m"}}),
            json!({}),
        ] {
            objects
                .push(json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": spec.clone()}));
            objects.push(json!({"metadata": {"name": "a"}, "spec": spec}));
        }
        objects.push(json!({"metadata": {"name": "a"}, "spec": "not an object"}));
        for obj in &objects {
            let key = crate::model::record_key(Kind::IPAddress, obj).unwrap();
            assert_eq!(
                project_reading(&read_address(obj), key.clone()),
                project_address(obj, key),
                "{obj}"
            );
        }
        assert_eq!(
            crate::model::record_key(Kind::IPAddress, &json!({"spec": {}})),
            None
        );
    }

    #[test]
    fn a_reference_is_read_key_by_key_as_written() {
        let obj = |r: Value| json!({"spec": {"poolRef": r}});
        let o = obj(json!({"apiGroup": "g", "kind": "K", "name": "n", "other": 1}));
        let r = RefReading::read(&o, claim::POOL_REF);
        assert_eq!(
            (r.api_group, r.kind, r.name, r.has_namespace),
            (Written::Ok("g"), Written::Ok("K"), Written::Ok("n"), false)
        );
        let o = obj(json!({"apiGroup": null, "kind": 7, "namespace": null}));
        let r = RefReading::read(&o, claim::POOL_REF);
        assert_eq!(r.api_group, Written::Absent, "null is absent");
        assert!(matches!(r.kind, Written::Wrong(_)));
        assert_eq!(r.name, Written::Absent);
        assert!(r.has_namespace, "a namespace key, even null, is one");
        for not_a_map in [json!("p"), json!(["n"]), Value::Null] {
            let o = obj(not_a_map.clone());
            let r = RefReading::read(&o, claim::POOL_REF);
            assert_eq!(
                (r.api_group, r.kind, r.name, r.has_namespace),
                (Written::Absent, Written::Absent, Written::Absent, false),
                "{not_a_map}"
            );
        }
    }

    #[test]
    fn a2_prefix_is_read_unnarrowed() {
        // 2^32 + 24 would read as 24 if narrowed to 32 bits.
        let obj = json!({"spec": {"address": "10.0.0.1", "prefix": 4294967320u64}});
        let r = read_address(&obj);
        assert_eq!(r.spec.prefix, Written::Ok(4294967320));
        assert_eq!(r.spec.prefix_len(), None);
        let obj = json!({"spec": {"address": "10.0.0.1", "prefix": "abc"}});
        assert!(matches!(read_address(&obj).spec.prefix, Written::Wrong(_)));
    }

    #[test]
    fn v1beta1_pool_ref_without_group_means_the_in_cluster_group() {
        let obj = json!({"spec": {"poolRef": {"kind": "GlobalInClusterIPPool", "name": "g"}}});
        let r = read_claim(&obj);
        assert_eq!(r.pool_ref.api_group, Written::Absent);
        assert_eq!(
            r.pool_ref.pool_key(Some("ns")),
            Some(ObjKey::new(Kind::GlobalInClusterIPPool, None, "g"))
        );
        // A group someone else owns is never guessed.
        let obj = json!({"spec": {"poolRef": {"kind": "IPPool", "name": "m"}}});
        assert_eq!(read_claim(&obj).pool_ref.pool_key(Some("ns")), None);
    }
}
