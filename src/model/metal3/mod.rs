//! Readers for Metal3 IPAM (`ipam.metal3.io` v1alpha1): `IPPool` (SPEC §5 table, MP1–MP3),
//! `IPClaim` and `IPAddress`.
//!
//! The pool is read the way ip-address-manager walks it (`GetIPAddress` in its `api/v1alpha1`):
//! an entry runs from `start` (else the subnet's network + 1) to `end` (else the subnet's last
//! address). The provider skips nothing on the way — not the gateway, not the IPv4 broadcast
//! address — so those are left out of the allocatable set like for every other pool (SPEC §5),
//! and a warning tells the author that the provider would hand them out.
//!
//! - `entry`: one `spec.pools[i]` on its own: its walk, prefix, gateway and DNS servers;
//! - `pool`: the whole pool: families across entries, pool-level defaults, the allocatable set and
//!   pre-allocations;
//! - `objects`: `IPClaim` and `IPAddress`.

mod entry;
mod objects;
mod pool;

pub use objects::{
    project_address, project_claim, read_address, read_claim, AddressReading, ClaimReading,
};
pub(crate) use pool::read_pool;

/// The annotation ip-address-manager reads on a claim to hand out one particular address
/// (`IPAddressAnnotation` in its `ipam` package).
pub const IP_ADDRESS_ANNOTATION: &str = "ipAddress";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::FieldError;
    use crate::kinds::Kind;
    use crate::model::test_support::fixture;
    use crate::model::written::Written;
    use crate::model::ObjKey;
    use serde_json::{json, Value};

    fn capture(name: &str) -> Value {
        fixture("eco", name)
    }

    fn pool(spec: Value) -> Value {
        json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
            "metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    fn texts(r: &[FieldError]) -> Vec<String> {
        r.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn capture_pool_reads_as_the_provider_walks_it() {
        let review = capture("metal3-ippool-create.json");
        let r = read_pool(&review["request"]["object"]);
        assert!(r.errors.is_empty(), "{:?}", texts(&r.errors));
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
        let w: Vec<String> = r.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            w,
            [
                "spec.pools[1]: ip-address-manager would hand out 192.168.1.1 (the gateway); set start or end to leave it out, or pre-allocate it",
                "spec.pools[2]: ip-address-manager would hand out 192.168.1.255 (the broadcast address); set start or end to leave it out, or pre-allocate it",
            ]
        );
        assert_eq!(r.entries[1].text, "192.168.1.0/26");
        assert_eq!(r.entries[0].text, "192.168.0.10-192.168.0.30");
    }

    #[test]
    fn mp1_missing_bounds_come_from_the_subnet() {
        let r = read_pool(&pool(json!({"prefix": 24, "pools": [
            {"start": "10.0.0.100", "subnet": "10.0.0.0/24"},
            {"end": "10.0.1.20", "subnet": "10.0.1.0/24", "prefix": 24},
        ]})));
        assert!(r.errors.is_empty(), "{:?}", texts(&r.errors));
        assert_eq!(
            r.declared.to_string(),
            "10.0.0.100-10.0.0.255, 10.0.1.1-10.0.1.20"
        );
        assert!(r
            .warnings
            .iter()
            .any(|w| w.path == "spec.pools[1].end" && w.message.contains("ignores end")));
    }

    #[test]
    fn mp1_entry_problems() {
        let r = read_pool(&pool(json!({"pools": [
            {},
            {"start": "10.0.0.9", "end": "10.0.0.1"},
            {"start": "10.0.0.1", "end": "fd00::1"},
            {"start": "10.0.1.1", "subnet": "10.0.0.0/24"},
            {"subnet": "10.0.0.0/33"},
            {"subnet": "fd00::/64"},
        ]})));
        assert_eq!(
            texts(&r.errors),
            [
                "spec.pools[0]: Required value: at least one of start, end or subnet is required",
                r#"spec.pools[1].end: Invalid value: "10.0.0.1": must not be before start 10.0.0.9"#,
                r#"spec.pools[2].end: Invalid value: "fd00::1": start, end and subnet must be of one IP family"#,
                r#"spec.pools[3].start: Invalid value: "10.0.1.1": must be inside subnet 10.0.0.0/24"#,
                r#"spec.pools[4].subnet: Invalid value: "10.0.0.0/33": prefix length must be a number between 0 and 32 for an IPv4 address"#,
                r#"spec.pools[5]: Invalid value: "fd00::/64": pool entries are of mixed IP families"#,
            ]
        );
    }

    #[test]
    fn mp2_prefixes_gateways_and_dns_servers() {
        let r = read_pool(&pool(json!({"prefix": 33, "gateway": "fd00::1",
            "dnsServers": ["8.8.8.8", "fd00::53", "8.8.8"],
            "pools": [{"start": "10.0.0.1", "end": "10.0.0.9", "prefix": 129, "gateway": "10.0.0.1",
                       "dnsServers": ["fd00::53"]}]})));
        assert_eq!(
            texts(&r.errors),
            [
                "spec.pools[0].prefix: Invalid value: 129: prefix is too large for an IPv4 address",
                r#"spec.pools[0].dnsServers[0]: Invalid value: "fd00::53": DNS server and addresses are of mixed IP families"#,
                "spec.prefix: Invalid value: 33: prefix is too large for an IPv4 address",
                r#"spec.gateway: Invalid value: "fd00::1": provided gateway and addresses are of mixed IP families"#,
                r#"spec.dnsServers[1]: Invalid value: "fd00::53": DNS server and addresses are of mixed IP families"#,
                r#"spec.dnsServers[2]: Invalid value: "8.8.8": not a valid IP address"#,
            ]
        );
        // IPv6 takes prefixes up to 128.
        let r = read_pool(&pool(
            json!({"prefix": 128, "pools": [{"subnet": "fd00::/120", "prefix": 64}]}),
        ));
        assert!(r.errors.is_empty(), "{:?}", texts(&r.errors));
    }

    #[test]
    fn mp3_pre_allocations() {
        let r = read_pool(&pool(
            json!({"prefix": 24, "pools": [{"start": "10.0.0.10", "end": "10.0.0.20"}],
            "preAllocations": {"a": "10.0.0.11", "b": "10.0.0.11", "c": "10.0.0.99", "d": "nope", "e": "fd00::1"}}),
        ));
        assert_eq!(
            texts(&r.errors),
            [
                r#"spec.preAllocations[b]: Duplicate value: "10.0.0.11": 10.0.0.11 is already pre-allocated to a"#,
                r#"spec.preAllocations[c]: Invalid value: "10.0.0.99": must be inside the pool's ranges (10.0.0.10-10.0.0.20)"#,
                r#"spec.preAllocations[d]: Invalid value: "nope": not a valid IP address"#,
                r#"spec.preAllocations[e]: Invalid value: "fd00::1": must be inside the pool's ranges (10.0.0.10-10.0.0.20)"#,
            ]
        );
    }

    #[test]
    fn pre_allocated_gateway_is_not_warned_about() {
        let r = read_pool(&pool(json!({"prefix": 24, "gateway": "10.0.0.1",
            "pools": [{"subnet": "10.0.0.0/25"}], "preAllocations": {"router": "10.0.0.1"}})));
        assert!(r.errors.is_empty());
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.2-10.0.0.127");
    }

    #[test]
    fn mp1_entry_running_past_its_network_is_warned_about() {
        let r = read_pool(&pool(json!({"prefix": 24, "gateway": "10.0.0.1",
            "pools": [{"start": "10.0.0.10", "end": "10.0.1.20"}]})));
        assert!(r.errors.is_empty());
        let w: Vec<String> = r.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            w,
            [
                "spec.pools[0]: runs past 10.0.0.255, the last address of its network 10.0.0.0/24",
                "spec.pools[0]: ip-address-manager would hand out 10.0.0.255 (the broadcast address); set start or end to leave it out, or pre-allocate it",
            ]
        );
    }

    #[test]
    fn start_only_and_end_only_entries() {
        let r = read_pool(&pool(
            json!({"pools": [{"start": "10.0.0.250"}, {"end": "10.0.1.5"}]}),
        ));
        assert!(r.errors.is_empty());
        assert_eq!(r.declared.to_string(), "10.0.0.250-255.255.255.255");
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
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
