//! Prefix pool rules (PP1–PP7) and the shared pool and address rules as they apply to prefix
//! pools (P8, P9, P10, A3, A4, A8, A9), named after the ids they cover.

use serde_json::{json, Value};

use crate::field::DenyReason;
use crate::index::Index;
use crate::kinds::Kind;
use crate::rules::test_support::*;

fn ppool(name: &str, spec: Value) -> Value {
    pool(Kind::InClusterPrefixPool, NS, name, spec)
}

fn gppool(name: &str, spec: Value) -> Value {
    pool(Kind::GlobalInClusterPrefixPool, "", name, spec)
}

/// An IPAddress as the provider writes it for a sub-prefix of a prefix pool.
fn sub(name: &str, address: &str, prefix: i64, pool: &str) -> Value {
    let mut a = addr(NS, name, address, prefix, "InClusterPrefixPool", pool);
    a["spec"]["gateway"] = json!("fd00::1");
    a
}

#[test]
fn pp1_to_pp5_on_create_and_a_valid_pool_passes() {
    let ok = ppool(
        "v6",
        json!({"prefixes": ["fd00::/48"], "allocationPrefixLength": 64, "gateway": "fd00::1"}),
    );
    let v = create(Kind::InClusterPrefixPool, &ok, &Index::new());
    assert!(v.allowed(), "{:?}", errors(&v));
    assert!(v.warnings.is_empty(), "{:?}", warnings(&v));

    let bad = gppool(
        "g",
        json!({"prefixes": ["10.0.0.0/8", "fd00::1/48", "fd01::/72"], "allocationPrefixLength": 64,
            "excludedPrefixes": ["fd02::/64"], "gateway": "10.0.0.1"}),
    );
    let v = create(Kind::GlobalInClusterPrefixPool, &bad, &Index::new());
    assert_eq!(
        errors(&v),
        [
            r#"spec.prefixes[0]: Invalid value: "10.0.0.0/8": only IPv6 prefixes are supported"#,
            r#"spec.prefixes[1]: Invalid value: "fd00::1/48": CIDR must be network-aligned (the network is fd00::/48)"#,
            r#"spec.prefixes[2]: Invalid value: "fd01::/72": CIDR prefix length must be <= allocationPrefixLength (64)"#,
            r#"spec.excludedPrefixes[0]: Invalid value: "fd02::/64": excluded entry must lie inside spec.prefixes"#,
            r#"spec.gateway: Invalid value: "10.0.0.1": provided gateway must be IPv6"#,
        ]
    );
    let ids: Vec<String> = v.errors.iter().map(|e| e.rule.to_string()).collect();
    assert_eq!(ids, ["PP2", "PP2", "PP3", "PP4", "PP5"]);
}

#[test]
fn pp7_allocation_length_is_immutable_and_x5_ratchets_the_rest() {
    let old = ppool(
        "v6",
        json!({"prefixes": ["fd00::/48"], "allocationPrefixLength": 64}),
    );
    let mut new = old.clone();
    new["spec"]["allocationPrefixLength"] = json!(56);
    let v = update(Kind::InClusterPrefixPool, &new, &old, &Index::new());
    assert_eq!(
        errors(&v),
        ["spec.allocationPrefixLength: Invalid value: 56: field is immutable (was 64)"]
    );
    // Absent means 64: writing the default out is no change.
    let mut implicit = old.clone();
    implicit["spec"]
        .as_object_mut()
        .unwrap()
        .remove("allocationPrefixLength");
    let mut grown = old.clone();
    grown["spec"]["prefixes"] = json!(["fd00::/48", "fd01::/48"]);
    assert!(update(Kind::InClusterPrefixPool, &grown, &implicit, &Index::new()).allowed());
    // A problem the stored pool already had does not block an unrelated change (X5).
    let mut stored = old.clone();
    stored["spec"]["gateway"] = json!("10.0.0.1");
    let mut changed = stored.clone();
    changed["spec"]["prefixes"] = json!(["fd00::/48", "fd01::/48"]);
    assert!(update(Kind::InClusterPrefixPool, &changed, &stored, &Index::new()).allowed());
}

#[test]
fn p10_prefix_pool_overlaps_an_ip_pool_of_the_same_range() {
    let ip_pool = ipool(
        NS,
        "v6-hosts",
        json!({"addresses": ["fd00::/64"], "prefix": 64}),
    );
    let ix = index(&[(Kind::InClusterIPPool, &ip_pool)]);
    let p = gppool(
        "v6",
        json!({"prefixes": ["fd00::/48"], "allocationPrefixLength": 64}),
    );
    let v = create(Kind::GlobalInClusterPrefixPool, &p, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.prefixes[0]: Invalid value: "fd00::/48": overlaps InClusterIPPool ns/v6-hosts (fd00::1-fd00::ffff:ffff:ffff:ffff)"#
        ]
    );
    assert_eq!(v.errors[0].rule, "P10");
    // And the other way round: the IP pool meets the prefix pool.
    let ix = index(&[(Kind::GlobalInClusterPrefixPool, &p)]);
    let v = create(Kind::InClusterIPPool, &ip_pool, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.addresses[0]: Invalid value: "fd00::/64": overlaps GlobalInClusterPrefixPool v6 (fd00::1-fd00::ffff:ffff:ffff:ffff)"#
        ]
    );
}

#[test]
fn p10_a_partly_excluded_sub_prefix_is_not_allocatable() {
    // The IP pool takes fd00::10-fd00::20 of fd00::/64; the prefix pool excludes fd00::5, which
    // takes the whole fd00::/64 out of what it hands out: no overlap.
    let ip_pool = ipool(
        NS,
        "hosts",
        json!({"addresses": ["fd00::10-fd00::20"], "prefix": 64}),
    );
    let ix = index(&[(Kind::InClusterIPPool, &ip_pool)]);
    let p = ppool(
        "v6",
        json!({"prefixes": ["fd00::/62"], "excludedPrefixes": ["fd00::5"]}),
    );
    let v = create(Kind::InClusterPrefixPool, &p, &ix);
    assert!(v.allowed(), "{:?}", errors(&v));
    // Two prefix pools: sub-prefixes are compared as ranges.
    let other = gppool(
        "wide",
        json!({"prefixes": ["fd00::/56"], "allocationPrefixLength": 60}),
    );
    let ix = index(&[(Kind::InClusterPrefixPool, &p)]);
    let v = create(Kind::GlobalInClusterPrefixPool, &other, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.prefixes[0]: Invalid value: "fd00::/56": overlaps InClusterPrefixPool ns/v6 (fd00:0:0:1::-fd00::3:ffff:ffff:ffff:ffff)"#
        ]
    );
}

#[test]
fn p8_an_update_never_strands_an_allocated_sub_prefix() {
    let old = ppool("v6", json!({"prefixes": ["fd00::/62"]}));
    let held = sub("a", "fd00:0:0:2::", 64, "v6");
    let ix = index(&[(Kind::InClusterPrefixPool, &old), (Kind::IPAddress, &held)]);
    // Excluding one address of the held /64 takes the whole /64 away.
    let mut new = old.clone();
    new["spec"]["excludedPrefixes"] = json!(["fd00:0:0:2::99"]);
    let v = update(Kind::InClusterPrefixPool, &new, &old, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.prefixes: Invalid value: ["fd00::/62"]: pool addresses do not contain allocated addresses: ns/a fd00:0:0:2::/64"#
        ]
    );
    assert_eq!(v.errors[0].rule, "P8");
    // Excluding another /64 is fine.
    new["spec"]["excludedPrefixes"] = json!(["fd00:0:0:1::/64"]);
    assert!(update(Kind::InClusterPrefixPool, &new, &old, &ix).allowed());
}

#[test]
fn p9_delete_refused_while_an_ipaddress_holds_a_sub_prefix() {
    let p = ppool("v6", json!({"prefixes": ["fd00::/62"]}));
    let held = sub("a", "fd00:0:0:2::", 64, "v6");
    let ix = index(&[(Kind::InClusterPrefixPool, &p), (Kind::IPAddress, &held)]);
    let v = delete(Kind::InClusterPrefixPool, &p, &ix);
    assert_eq!(v.reason, DenyReason::Forbidden);
    assert_eq!(
        errors(&v),
        ["metadata.name: Forbidden: Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed. Held by: ns/a (fd00:0:0:2::/64)"]
    );
    assert!(delete(
        Kind::InClusterPrefixPool,
        &p,
        &index(&[(Kind::InClusterPrefixPool, &p)])
    )
    .allowed());
    // The provider's escape hatch.
    let mut skip = p.clone();
    skip["metadata"]["annotations"] =
        json!({"ipam.cluster.x-k8s.io/skip-validate-delete-webhook": ""});
    assert!(delete(Kind::InClusterPrefixPool, &skip, &ix).allowed());
}

#[test]
fn a8_an_address_of_a_prefix_pool_is_one_whole_sub_prefix_of_its_length() {
    let p = ppool(
        "v6",
        json!({"prefixes": ["fd00::/62"], "excludedPrefixes": ["fd00:0:0:3::/64"], "gateway": "fd00::1"}),
    );
    let ix = index(&[(Kind::InClusterPrefixPool, &p)]);
    // What the provider writes: network address, the pool's length, the pool's gateway (outside
    // the sub-prefix: no A3, no A4).
    let v = create(Kind::IPAddress, &sub("a", "fd00:0:0:1::", 64, "v6"), &ix);
    assert!(v.allowed(), "{:?}", errors(&v));
    assert!(
        !warnings(&v)
            .iter()
            .any(|w| w.contains("network address") || w.contains("gateway")),
        "{:?}",
        warnings(&v)
    );
    let cases = [
        (
            "fd00:0:0:1::5",
            64,
            vec![r#"spec.address: Invalid value: "fd00:0:0:1::5": must be the network address of its /64 sub-prefix of InClusterPrefixPool ns/v6 (fd00:0:0:1::)"#],
        ),
        (
            "fd00:0:0:3::",
            64,
            vec![r#"spec.address: Invalid value: "fd00:0:0:3::": not inside an allocatable /64 of InClusterPrefixPool ns/v6: fd00::-fd00::2:ffff:ffff:ffff:ffff"#],
        ),
        (
            "fd00:0:0:1::",
            80,
            vec!["spec.prefix: Invalid value: 80: must be 64, the allocationPrefixLength of InClusterPrefixPool ns/v6"],
        ),
    ];
    for (address, prefix, want) in cases {
        let v = create(Kind::IPAddress, &sub("b", address, prefix, "v6"), &ix);
        assert_eq!(errors(&v), want, "{address}/{prefix}");
        assert!(v.errors.iter().all(|e| e.rule == "A8"));
    }
}

#[test]
fn a9_one_holder_per_sub_prefix() {
    let p = ppool("v6", json!({"prefixes": ["fd00::/62"]}));
    let held = sub("a", "fd00:0:0:1::", 64, "v6");
    let ix = index(&[(Kind::InClusterPrefixPool, &p), (Kind::IPAddress, &held)]);
    let v = create(Kind::IPAddress, &sub("b", "fd00:0:0:1::", 64, "v6"), &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.address: Duplicate value: "fd00:0:0:1::": fd00:0:0:1:: is already held by IPAddress ns/a"#
        ]
    );
}

#[test]
fn m1_fills_the_group_of_a_prefix_pool_reference() {
    assert_eq!(
        crate::kinds::default_pool_group("InClusterPrefixPool"),
        Some(crate::kinds::CAPI_IPAM)
    );
    assert_eq!(
        crate::kinds::default_pool_group("GlobalInClusterPrefixPool"),
        Some(crate::kinds::CAPI_IPAM)
    );
}
