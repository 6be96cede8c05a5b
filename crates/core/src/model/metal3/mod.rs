//! Readers for Metal3 IPAM (`ipam.metal3.io` v1alpha1): `IPPool` (judged by
//! `rules::metal3_pool`, MP1–MP3 and MP5), `IPClaim` and `IPAddress`.
//!
//! The pool is read the way ip-address-manager walks it (`GetIPAddress` in its `api/v1alpha1`):
//! an entry runs from `start` (else the subnet's network + 1) to `end` (else the subnet's last
//! address). The provider skips nothing on the way — not the gateway, not the IPv4 broadcast
//! address — so those are left out of the allocatable set like for every other pool,
//! and a warning tells the author that the provider would hand them out.
//!
//! - `entry`: one `spec.pools[i]` as written, and its walk;
//! - `pool`: the whole pool as written, its entries laid out in one family, and its reading;
//! - `objects`: `IPClaim` and `IPAddress`.

mod entry;
mod objects;
mod pool;

pub use entry::{Bound, DnsServers, EntryFields, EntrySpec, Note, Walk};
pub use objects::{
    project_address, project_claim, read_address, read_claim, AddressReading, ClaimReading,
};
pub(crate) use pool::read_pool;
pub use pool::{layout, parse, read_spec, Layout, Placed, PreAllocations, Spec};

/// The annotation ip-address-manager reads on a claim to hand out one particular address
/// (`IPAddressAnnotation` in its `ipam` package).
pub(crate) const IP_ADDRESS_ANNOTATION: &str = "ipAddress";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Kind;
    use crate::model::test_support::{fixture, metal3_pool as pool};
    use crate::model::written::Written;
    use crate::model::ObjKey;
    use serde_json::{json, Value};

    fn capture(name: &str) -> Value {
        fixture(name)
    }

    #[test]
    fn capture_pool_reads_as_the_provider_walks_it() {
        let review = capture("metal3-ippool-create.json");
        let r = read_pool(&review["request"]["object"]);
        // The reading judges nothing (`rules::metal3_pool` does).
        assert!(r.errors.is_empty() && r.warnings.is_empty());
        assert_eq!(
            r.declared.to_string(),
            "192.168.0.10-192.168.0.30, 192.168.1.1-192.168.1.63, 192.168.1.129-192.168.1.255"
        );
        // 192.168.1.1 is the pool's gateway and 192.168.1.255 the broadcast address of its /24.
        assert_eq!(
            r.proj.allocatable.to_string(),
            "192.168.0.10-192.168.0.30, 192.168.1.2-192.168.1.63, 192.168.1.129-192.168.1.254"
        );
        assert_eq!(r.proj.prefix, Some(24));
        assert_eq!(r.proj.gateway.unwrap().to_string(), "192.168.1.1");
        assert_eq!(r.entries[1].text, "192.168.1.0/26");
        assert_eq!(r.entries[0].text, "192.168.0.10-192.168.0.30");
    }

    #[test]
    fn missing_bounds_come_from_the_subnet() {
        let r = read_pool(&pool(json!({"prefix": 24, "pools": [
            {"start": "10.0.0.100", "subnet": "10.0.0.0/24"},
            {"end": "10.0.1.20", "subnet": "10.0.1.0/24", "prefix": 24},
            {"start": "10.0.2.250"}, {"end": "10.0.3.5"},
        ]})));
        assert_eq!(
            r.declared.to_string(),
            "10.0.0.100-10.0.0.255, 10.0.1.1-10.0.1.20, 10.0.2.250-255.255.255.255"
        );
    }

    #[test]
    fn broken_and_mixed_entries_are_left_out() {
        let r = read_pool(&pool(json!({"pools": [
            {"start": "10.0.0.1", "end": "10.0.0.9"},
            {"start": "10.0.1.9", "end": "10.0.1.1"},
            {"start": "10.0.2.1", "end": "fd00::1"},
            {"start": "10.0.3.1", "subnet": "10.0.4.0/24"},
            {"subnet": "10.0.5.0/33"},
            {"subnet": "fd00::/64"},
            "not an entry",
        ]})));
        assert_eq!(r.declared.to_string(), "10.0.0.1-10.0.0.9");
        assert_eq!(r.entries.len(), 1);
        assert_eq!(r.proj.family, Some(crate::address::Family::V4));
    }

    #[test]
    fn address_reads_and_projects_the_capture() {
        let review = capture("metal3-ipaddress-create.json");
        let obj = &review["request"]["object"];
        let r = read_address(obj);
        assert_eq!(r.spec.ip().unwrap().to_string(), "192.168.0.13");
        assert_eq!(r.spec.prefix_len(), Some(25));
        assert_eq!(r.pool_name, Written::Ok("provisioning-pool"));
        let key = ObjKey::new(Kind::Metal3IPAddress, Some("capture-eco"), "a");
        let p = project_address(obj, key);
        assert_eq!(
            p.pool,
            Some(ObjKey::new(
                Kind::Metal3IPPool,
                Some("capture-eco"),
                "provisioning-pool"
            ))
        );
        assert_eq!(
            p.claim.as_deref(),
            Some("test1-controlplane-template-0-provisioning-pool")
        );
    }

    #[test]
    fn claim_reads_the_ip_address_annotation() {
        let obj = json!({"metadata": {"annotations": {"ipAddress": "10.0.0.5"}},
            "spec": {"pool": {"name": "p", "namespace": "ns"}}});
        let r = read_claim(&obj);
        assert_eq!(r.requested, Some("10.0.0.5"));
        assert_eq!(r.pool_name, Written::Ok("p"));
        assert_eq!(r.pool_namespace, Written::Ok("ns"));
    }
}
