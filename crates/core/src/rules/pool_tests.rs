//! Pool rules (P1–P11, X5), named after the ids they cover.

use serde_json::{json, Value};

use crate::field::{DenyReason, Verdict};
use crate::index::Index;
use crate::kinds::Kind;
use crate::rule_id::RuleId;
use crate::rules::test_support::*;
use crate::rules::Options;
use crate::rules::OverlapScope;

// === pools ===

fn pool_errors(spec: Value) -> Vec<String> {
    errors(&create(
        Kind::InClusterIPPool,
        &ipool(NS, "p", spec),
        &Index::new(),
    ))
}

fn pool_warnings(spec: Value) -> Vec<String> {
    warnings(&create(
        Kind::InClusterIPPool,
        &ipool(NS, "p", spec),
        &Index::new(),
    ))
}

#[test]
fn p1_addresses_are_required() {
    for spec in [
        json!({"prefix": 24}),
        json!({"addresses": [], "prefix": 24}),
    ] {
        let v = create(
            Kind::GlobalInClusterIPPool,
            &gpool("g", spec),
            &Index::new(),
        );
        assert_eq!(
            errors(&v),
            ["spec.addresses: Required value: addresses is required"]
        );
        assert_eq!(v.errors[0].kind.reason(), "FieldValueRequired");
    }
    // v1alpha1 may use `subnet` instead.
    let mut p = ipool(NS, "p", json!({"prefix": 24}));
    p["apiVersion"] = json!("ipam.cluster.x-k8s.io/v1alpha1");
    assert_eq!(
        errors(&create(Kind::InClusterIPPool, &p, &Index::new())),
        ["spec.addresses: Required value: addresses or subnet is required"]
    );
}

#[test]
fn p2_every_entry_parses() {
    const P2: &str = "provided address is not a valid IP, range, nor CIDR";
    let cases = [
        ("abc", P2.to_string()),
        (
            "10.0.0.0/33",
            format!("{P2}: prefix length must be a number between 0 and 32 for an IPv4 address"),
        ),
        (
            "10.0.0.9-10.0.0.1",
            format!("{P2}: range start 10.0.0.9 is after range end 10.0.0.1"),
        ),
        (
            "10.0.0.1 - 10.0.0.9",
            format!("{P2}: whitespace is not allowed inside an address"),
        ),
        (
            "fe80::1%eth0",
            format!("{P2}: zone ids are not allowed in an IP address"),
        ),
        (
            "::ffff:10.0.0.1",
            format!("{P2}: IPv4-mapped IPv6 addresses are not allowed, use 10.0.0.1"),
        ),
    ];
    for (text, detail) in cases {
        let got = pool_errors(json!({"addresses": ["10.0.0.1", text], "prefix": 24}));
        assert_eq!(
            got,
            [format!(
                r#"spec.addresses[1]: Invalid value: "{text}": {detail}"#
            )],
            "{text}"
        );
    }
    let got =
        pool_errors(json!({"addresses": ["10.0.0.1"], "excludedAddresses": ["x"], "prefix": 24}));
    assert_eq!(
        got,
        [format!(
            r#"spec.excludedAddresses[0]: Invalid value: "x": {P2}"#
        )]
    );
}

#[test]
fn p2_host_bits_and_non_canonical_ipv6_warn() {
    assert_eq!(
        pool_warnings(json!({"addresses": ["10.0.0.1/24"], "prefix": 24})),
        [r#"spec.addresses[0]: "10.0.0.1/24" has host bits set; it means 10.0.0.0/24"#]
    );
    assert_eq!(
        pool_warnings(json!({"addresses": ["2001:DB8::10-2001:db8::20"], "prefix": 64})),
        [
            r#"spec.addresses[0]: "2001:DB8::10-2001:db8::20" is not in canonical form, use "2001:db8::10-2001:db8::20""#
        ]
    );
}

#[test]
fn p3_families_never_mix() {
    assert_eq!(
        pool_errors(json!({"addresses": ["10.0.0.1", "fd00::1"], "prefix": 24})),
        [
            r#"spec.addresses: Invalid value: ["10.0.0.1","fd00::1"]: provided addresses are of mixed IP families"#
        ]
    );
    assert_eq!(
        pool_errors(json!({"addresses": ["10.0.0.1"], "gateway": "fd00::1", "prefix": 24})),
        [
            r#"spec.gateway: Invalid value: "fd00::1": provided gateway and addresses are of mixed IP families"#
        ]
    );
    assert_eq!(
        pool_errors(
            json!({"addresses": ["10.0.0.1"], "excludedAddresses": ["fd00::1"], "prefix": 24})
        ),
        [
            r#"spec.excludedAddresses: Invalid value: ["fd00::1"]: addresses and excluded addresses are of mixed IP families"#
        ]
    );
    assert_eq!(
        pool_errors(
            json!({"addresses": ["10.0.0.0/24"], "excludedAddresses": ["fd00::1", "10.0.0.9"], "prefix": 24})
        ),
        [
            r#"spec.excludedAddresses: Invalid value: ["fd00::1","10.0.0.9"]: provided addresses are of mixed IP families"#,
            r#"spec.excludedAddresses: Invalid value: ["fd00::1","10.0.0.9"]: addresses and excluded addresses are of mixed IP families"#,
        ]
    );
}

#[test]
fn p4_prefix_within_the_family_bound() {
    let cases = [
        (
            json!({"addresses": ["10.0.0.1"], "prefix": 33}),
            Some("spec.prefix: Invalid value: 33: prefix is too large for an IPv4 address"),
        ),
        (
            json!({"addresses": ["fd00::1"], "prefix": 129}),
            Some("spec.prefix: Invalid value: 129: prefix is too large for an IPv6 address"),
        ),
        (
            json!({"addresses": ["10.0.0.1"], "prefix": -1}),
            Some("spec.prefix: Invalid value: -1: prefix cannot be negative"),
        ),
        (
            json!({"addresses": ["10.0.0.1"], "prefix": 4294967320u64}),
            Some("spec.prefix: Invalid value: 4294967320: prefix is too large for an IPv4 address"),
        ),
        (
            json!({"addresses": ["10.0.0.1"]}),
            Some("spec.prefix: Required value: prefix is required"),
        ),
        (
            json!({"addresses": ["10.0.0.1"], "prefix": "24"}),
            Some(r#"spec.prefix: Invalid value: "24": must be an integer"#),
        ),
        (json!({"addresses": ["fd00::1"], "prefix": 128}), None),
        (json!({"addresses": ["10.0.0.1"], "prefix": 32}), None),
    ];
    for (spec, want) in cases {
        let got = pool_errors(spec.clone());
        match want {
            Some(w) => assert_eq!(got, [w], "{spec}"),
            None => assert!(got.is_empty(), "{spec}: {got:?}"),
        }
    }
}

#[test]
fn p5_entries_share_one_subnet() {
    assert_eq!(
        pool_errors(
            json!({"addresses": ["10.0.0.10-10.0.0.20", "10.0.1.5", "10.0.0.128/25"], "prefix": 24})
        ),
        [
            r#"spec.addresses[1]: Invalid value: "10.0.1.5": provided address belongs to a different subnet than others"#
        ]
    );
    // The subnet is the one of the lowest address, whatever the order of the entries.
    assert_eq!(
        pool_errors(json!({"addresses": ["2001:db8:0:1::5", "2001:db8::1"], "prefix": 64})),
        [
            r#"spec.addresses[0]: Invalid value: "2001:db8:0:1::5": provided address belongs to a different subnet than others"#
        ]
    );
    assert!(pool_errors(json!({"addresses": ["10.0.0.4/31"], "prefix": 31})).is_empty());
}

#[test]
fn p6_gateway_inside_the_subnet() {
    assert_eq!(
        pool_errors(
            json!({"addresses": ["10.0.0.10-10.0.0.20"], "gateway": "10.0.1.1", "prefix": 24})
        ),
        [
            r#"spec.gateway: Invalid value: "10.0.1.1": must be inside the pool's subnet 10.0.0.0/24"#
        ]
    );
    assert_eq!(
        pool_errors(json!({"addresses": ["10.0.0.10"], "gateway": "10.0.0.300", "prefix": 24})),
        [r#"spec.gateway: Invalid value: "10.0.0.300": IPv4 octets must be between 0 and 255"#]
    );
    // No room for a subnet at /31–/32 and /127–/128; link-local IPv6 gateways are exempt.
    assert!(pool_errors(json!({"addresses": ["10.0.0.4/31"], "gateway": "10.0.9.1", "prefix": 31, "allocateReservedIPAddresses": true})).is_empty());
    assert!(pool_errors(
        json!({"addresses": ["2001:db8::/127"], "gateway": "2001:db9::1", "prefix": 127})
    )
    .is_empty());
    assert!(pool_errors(
        json!({"addresses": ["2001:db8::/120"], "gateway": "fe80::1", "prefix": 64})
    )
    .is_empty());
    assert_eq!(
        pool_errors(
            json!({"addresses": ["2001:db8::/120"], "gateway": "2001:db9::1", "prefix": 64})
        ),
        [
            r#"spec.gateway: Invalid value: "2001:db9::1": must be inside the pool's subnet 2001:db8::/64"#
        ]
    );
}

#[test]
fn p7_pools_that_hand_out_less_than_expected_warn() {
    assert_eq!(
        pool_warnings(
            json!({"addresses": ["10.0.0.10-10.0.0.20"], "excludedAddresses": ["10.0.1.0/24"], "prefix": 16})
        ),
        ["spec.excludedAddresses[0]: excluded address is outside spec.addresses"]
    );
    assert_eq!(
        pool_warnings(json!({"addresses": ["10.0.0.1-10.0.0.2"], "excludedAddresses": ["10.0.0.2"], "gateway": "10.0.0.1", "prefix": 24})),
        ["spec.addresses: the pool has no allocatable address: every declared address is excluded, the gateway or reserved"]
    );
    assert_eq!(
        pool_warnings(json!({"addresses": ["10.0.0.4/31"], "prefix": 31})),
        ["spec.prefix: the in-cluster provider hands out no address from a /31 pool unless allocateReservedIPAddresses is true"]
    );
    assert_eq!(
        pool_warnings(json!({"addresses": ["10.0.0.4"], "prefix": 32})),
        ["spec.prefix: the in-cluster provider hands out no address from a /32 pool unless allocateReservedIPAddresses is true"]
    );
    assert!(pool_warnings(
        json!({"addresses": ["10.0.0.4/31"], "prefix": 31, "allocateReservedIPAddresses": true})
    )
    .is_empty());
    assert!(pool_warnings(json!({"addresses": ["2001:db8::/127"], "prefix": 127})).is_empty());
}

#[test]
fn p8_allocated_addresses_stay_in_the_pool() {
    // Capture: 10.10.0.10-20 + 10.10.0.32/28 shrinks to 10.10.0.10-30 (gateway .1 → .254).
    let (kind, op, obj, old) = review("inclusterippool-update-spec.json");
    let (obj, old) = (obj.unwrap(), old.unwrap());
    let inside = addr(
        "capture-ns",
        "kept",
        "10.10.0.15",
        24,
        "InClusterIPPool",
        "pool-a",
    );
    let outside = addr(
        "capture-ns",
        "lost",
        "10.10.0.40",
        24,
        "InClusterIPPool",
        "pool-a",
    );
    let ix = index(&[
        (kind, &old),
        (Kind::IPAddress, &inside),
        (Kind::IPAddress, &outside),
    ]);
    let v = judge(kind, op, Some(&obj), Some(&old), &ix, Options::default());
    assert_eq!(
        errors(&v),
        [
            r#"spec.addresses: Invalid value: ["10.10.0.10-10.10.0.30"]: pool addresses do not contain allocated addresses: capture-ns/lost 10.10.0.40"#
        ]
    );
    // Without the lost address the capture passes.
    let ix = index(&[(kind, &old), (Kind::IPAddress, &inside)]);
    assert!(judge(kind, op, Some(&obj), Some(&old), &ix, Options::default()).allowed());
}

#[test]
fn p8_only_addresses_the_update_takes_away_count() {
    let old = ipool(
        NS,
        "p",
        json!({"addresses": ["10.0.0.10-10.0.0.20"], "gateway": "10.0.0.1", "prefix": 24}),
    );
    // Restored before ipam-guard: an address on the gateway, outside the allocatable set.
    let stray = addr(NS, "stray", "10.0.0.1", 24, "InClusterIPPool", "p");
    let held = addr(NS, "held", "10.0.0.20", 24, "InClusterIPPool", "p");
    let ix = index(&[
        (Kind::InClusterIPPool, &old),
        (Kind::IPAddress, &stray),
        (Kind::IPAddress, &held),
    ]);
    let grown = ipool(
        NS,
        "p",
        json!({"addresses": ["10.0.0.10-10.0.0.30"], "gateway": "10.0.0.1", "prefix": 24}),
    );
    assert!(update(Kind::InClusterIPPool, &grown, &old, &ix).allowed());
    let shrunk = ipool(
        NS,
        "p",
        json!({"addresses": ["10.0.0.10-10.0.0.19"], "gateway": "10.0.0.1", "prefix": 24}),
    );
    assert_eq!(
        errors(&update(Kind::InClusterIPPool, &shrunk, &old, &ix)),
        [
            r#"spec.addresses: Invalid value: ["10.0.0.10-10.0.0.19"]: pool addresses do not contain allocated addresses: ns/held 10.0.0.20"#
        ]
    );
    // Changing the family takes every address away.
    let v6 = ipool(
        NS,
        "p",
        json!({"addresses": ["2001:db8::/120"], "prefix": 64}),
    );
    assert_eq!(
        update(Kind::InClusterIPPool, &v6, &old, &ix).rules(),
        ["P8"]
    );
}

#[test]
fn p8_offenders_stop_at_five() {
    let old = gpool("g", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let new = gpool("g", json!({"addresses": ["10.0.0.0/25"], "prefix": 24}));
    let addrs: Vec<Value> = (0..8)
        .map(|i| {
            addr(
                &format!("ns{i}"),
                "a",
                &format!("10.0.0.{}", 200 + i),
                24,
                "GlobalInClusterIPPool",
                "g",
            )
        })
        .collect();
    let mut objs: Vec<(Kind, &Value)> = vec![(Kind::GlobalInClusterIPPool, &old)];
    objs.extend(addrs.iter().map(|a| (Kind::IPAddress, a)));
    let v = update(Kind::GlobalInClusterIPPool, &new, &old, &index(&objs));
    assert_eq!(
        errors(&v),
        [
            r#"spec.addresses: Invalid value: ["10.0.0.0/25"]: pool addresses do not contain allocated addresses: ns0/a 10.0.0.200, ns1/a 10.0.0.201, ns2/a 10.0.0.202, ns3/a 10.0.0.203, ns4/a 10.0.0.204 and 3 more"#
        ]
    );
}

#[test]
fn p9_delete_denied_while_addresses_hold_the_pool() {
    let (kind, op, _, old) = review("globalinclusterippool-delete.json");
    let old = old.unwrap();
    // A global pool is held from any namespace.
    let a = addr(
        "ns-a",
        "a",
        "2001:db8::10",
        64,
        "GlobalInClusterIPPool",
        "global-pool-a",
    );
    let b = addr(
        "ns-b",
        "b",
        "2001:db8::11",
        64,
        "GlobalInClusterIPPool",
        "global-pool-a",
    );
    let ix = index(&[(kind, &old), (Kind::IPAddress, &a), (Kind::IPAddress, &b)]);
    let v = judge(kind, op, None, Some(&old), &ix, Options::default());
    assert_eq!(v.reason, DenyReason::Forbidden);
    assert_eq!(
        errors(&v),
        ["metadata.name: Forbidden: Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed. Held by: ns-a/a (2001:db8::10), ns-b/b (2001:db8::11)"]
    );
    assert_eq!(v.errors[0].kind.reason(), "FieldValueForbidden");
    // No holders: allowed.
    let v = judge(
        kind,
        op,
        None,
        Some(&old),
        &index(&[(kind, &old)]),
        Options::default(),
    );
    assert!(v.allowed());
}

#[test]
fn p9_namespaced_pool_is_held_only_from_its_namespace() {
    let (kind, op, _, old) = review("inclusterippool-delete.json");
    let old = old.unwrap();
    let name = old["metadata"]["name"].as_str().unwrap().to_string();
    let other = addr("elsewhere", "x", "10.10.0.15", 24, "InClusterIPPool", &name);
    let ix = index(&[(Kind::IPAddress, &other)]);
    assert!(judge(kind, op, None, Some(&old), &ix, Options::default()).allowed());
    let holders: Vec<Value> = (0..7)
        .map(|i| {
            addr(
                "capture-ns",
                &format!("a{i}"),
                &format!("10.10.0.{}", 10 + i),
                24,
                "InClusterIPPool",
                &name,
            )
        })
        .collect();
    let objs: Vec<(Kind, &Value)> = holders.iter().map(|a| (Kind::IPAddress, a)).collect();
    let v = delete(kind, &old, &index(&objs));
    assert_eq!(
        errors(&v),
        ["metadata.name: Forbidden: Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed. Held by: capture-ns/a0 (10.10.0.10), capture-ns/a1 (10.10.0.11), capture-ns/a2 (10.10.0.12), capture-ns/a3 (10.10.0.13), capture-ns/a4 (10.10.0.14) and 2 more"]
    );
}

#[test]
fn p9_skip_annotations() {
    let a = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p");
    let ix = index(&[(Kind::IPAddress, &a)]);
    for ann in [
        "ipam.cluster.x-k8s.io/skip-validate-delete-webhook",
        "clusterctl.cluster.x-k8s.io/delete-for-move",
    ] {
        let mut p = ipool(NS, "p", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
        p["metadata"]["annotations"] = json!({ ann: "" });
        assert!(delete(Kind::InClusterIPPool, &p, &ix).allowed(), "{ann}");
    }
    let p = ipool(NS, "p", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    assert_eq!(delete(Kind::InClusterIPPool, &p, &ix).rules(), ["P9"]);
}

#[test]
fn p10_overlap_across_namespaced_and_global_pools() {
    let shared = gpool(
        "shared",
        json!({"addresses": ["10.0.0.128-10.0.0.255"], "prefix": 24, "allocateReservedIPAddresses": true}),
    );
    let ix = index(&[(Kind::GlobalInClusterIPPool, &shared)]);
    let p = ipool(
        NS,
        "mine",
        json!({"addresses": ["10.0.0.5", "10.0.0.0/24"], "prefix": 16}),
    );
    let v = create(Kind::InClusterIPPool, &p, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.addresses[1]: Invalid value: "10.0.0.0/24": overlaps GlobalInClusterIPPool shared (10.0.0.128-10.0.0.255)"#
        ]
    );
    assert_eq!(v.rules(), ["P10"]);
}

#[test]
fn p10_names_every_pool_and_caps_the_list() {
    let pools: Vec<Value> = (0..7)
        .map(|i| {
            ipool(
                NS,
                &format!("p{i}"),
                json!({"addresses": [format!("10.0.{i}.10-10.0.{i}.11")], "prefix": 16}),
            )
        })
        .collect();
    let objs: Vec<(Kind, &Value)> = pools.iter().map(|p| (Kind::InClusterIPPool, p)).collect();
    let ix = index(&objs);
    let big = ipool(
        NS,
        "big",
        json!({"addresses": ["10.0.0.0/21", "10.0.200.1"], "prefix": 16}),
    );
    let v = create(Kind::InClusterIPPool, &big, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.addresses[0]: Invalid value: "10.0.0.0/21": overlaps InClusterIPPool ns/p0 (10.0.0.10-10.0.0.11), InClusterIPPool ns/p1 (10.0.1.10-10.0.1.11), InClusterIPPool ns/p2 (10.0.2.10-10.0.2.11), InClusterIPPool ns/p3 (10.0.3.10-10.0.3.11), InClusterIPPool ns/p4 (10.0.4.10-10.0.4.11) and 2 more"#
        ]
    );
}

#[test]
fn p10_ipv6_overlap_and_the_reserved_address() {
    let a = gpool("a", json!({"addresses": ["2001:db8::/120"], "prefix": 120}));
    let ix = index(&[(Kind::GlobalInClusterIPPool, &a)]);
    let b = gpool(
        "b",
        json!({"addresses": ["2001:db8::ff-2001:db8::1ff"], "prefix": 64}),
    );
    assert_eq!(
        errors(&create(Kind::GlobalInClusterIPPool, &b, &ix)),
        [
            r#"spec.addresses[0]: Invalid value: "2001:db8::ff-2001:db8::1ff": overlaps GlobalInClusterIPPool a (2001:db8::ff)"#
        ]
    );
    // 2001:db8:: is pool a's subnet-router anycast address: reserved, so touching it is no overlap.
    let c = gpool("c", json!({"addresses": ["2001:db8::"], "prefix": 128}));
    assert!(create(Kind::GlobalInClusterIPPool, &c, &ix).allowed());
}

#[test]
fn p10_address_spaces_and_scopes() {
    let a = ipool(
        "team-a",
        "a",
        json!({"addresses": ["10.0.0.0/24"], "prefix": 24}),
    );
    let g = gpool("g", json!({"addresses": ["10.1.0.0/24"], "prefix": 24}));
    let ix = index(&[
        (Kind::InClusterIPPool, &a),
        (Kind::GlobalInClusterIPPool, &g),
    ]);
    let b = ipool(
        "team-b",
        "b",
        json!({"addresses": ["10.0.0.0/24"], "prefix": 24}),
    );
    let denied =
        |o: Options, p: &Value, k: Kind| create_with(k, p, &ix, o).rules().contains(&RuleId::P10);
    assert!(denied(
        scope(OverlapScope::AddressSpace),
        &b,
        Kind::InClusterIPPool
    ));
    assert!(!denied(
        scope(OverlapScope::Namespace),
        &b,
        Kind::InClusterIPPool
    ));
    assert!(!denied(scope(OverlapScope::Off), &b, Kind::InClusterIPPool));
    // Another address space: no conflict.
    let b_dc2 = with_space(b.clone(), "dc2");
    assert!(!denied(Options::default(), &b_dc2, Kind::InClusterIPPool));
    // Cluster-scoped pools conflict with every namespace in namespace scope.
    let c = ipool(
        "team-b",
        "c",
        json!({"addresses": ["10.1.0.0/24"], "prefix": 24}),
    );
    assert!(denied(
        scope(OverlapScope::Namespace),
        &c,
        Kind::InClusterIPPool
    ));
    let g2 = gpool("g2", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    assert!(denied(
        scope(OverlapScope::Namespace),
        &g2,
        Kind::GlobalInClusterIPPool
    ));
}

#[test]
fn p10_update_excludes_itself_and_judges_only_added_addresses() {
    let other = ipool(
        NS,
        "other",
        json!({"addresses": ["10.0.0.50-10.0.0.60"], "prefix": 24}),
    );
    // Stored before ipam-guard: `mine` already overlaps `other` at .50-.60.
    let old = ipool(
        NS,
        "mine",
        json!({"addresses": ["10.0.0.10-10.0.0.60"], "prefix": 24}),
    );
    let ix = index(&[
        (Kind::InClusterIPPool, &other),
        (Kind::InClusterIPPool, &old),
    ]);
    // Growing away from `other`: allowed, the old overlap is the audit's to report.
    let grown = ipool(
        NS,
        "mine",
        json!({"addresses": ["10.0.0.10-10.0.0.60", "10.0.0.100"], "prefix": 24}),
    );
    assert!(update(Kind::InClusterIPPool, &grown, &old, &ix).allowed());
    // Growing into a third pool: denied for the new part only.
    let third = ipool(
        NS,
        "third",
        json!({"addresses": ["10.0.0.70-10.0.0.80"], "prefix": 24}),
    );
    let ix = index(&[
        (Kind::InClusterIPPool, &other),
        (Kind::InClusterIPPool, &old),
        (Kind::InClusterIPPool, &third),
    ]);
    let into = ipool(
        NS,
        "mine",
        json!({"addresses": ["10.0.0.10-10.0.0.75"], "prefix": 24}),
    );
    assert_eq!(
        errors(&update(Kind::InClusterIPPool, &into, &old, &ix)),
        [
            r#"spec.addresses[0]: Invalid value: "10.0.0.10-10.0.0.75": overlaps InClusterIPPool ns/third (10.0.0.70-10.0.0.75)"#
        ]
    );
}

#[test]
fn p10_moving_to_another_address_space_is_judged() {
    let there = with_space(
        gpool("there", json!({"addresses": ["10.0.0.0/24"], "prefix": 24})),
        "dc2",
    );
    let old = gpool("mine", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let ix = index(&[
        (Kind::GlobalInClusterIPPool, &there),
        (Kind::GlobalInClusterIPPool, &old),
    ]);
    let moved = with_space(old.clone(), "dc2");
    assert_eq!(
        errors(&update(Kind::GlobalInClusterIPPool, &moved, &old, &ix)),
        [
            r#"spec.addresses[0]: Invalid value: "10.0.0.0/24": overlaps GlobalInClusterIPPool there (10.0.0.1-10.0.0.254)"#
        ]
    );
    // A label update stays a label update.
    let mut labelled = old.clone();
    labelled["metadata"]["labels"] = json!({"x": "y"});
    assert!(update(Kind::GlobalInClusterIPPool, &labelled, &old, &ix).allowed());
}

#[test]
fn p10_v1alpha1_subnet_form_overlap_sits_on_the_subnet() {
    let a = gpool("a", json!({"addresses": ["10.20.0.15"], "prefix": 24}));
    let ix = index(&[(Kind::GlobalInClusterIPPool, &a)]);
    let p = review("inclusterippool-create-v1alpha1.json").2.unwrap();
    assert_eq!(
        errors(&create(Kind::InClusterIPPool, &p, &ix)),
        [
            r#"spec.subnet: Invalid value: "10.20.0.0/24": overlaps GlobalInClusterIPPool a (10.20.0.15)"#
        ]
    );
}

#[test]
fn p11_a_deleting_pool_passes_every_update() {
    let old = ipool(NS, "p", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let a = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p");
    let ix = index(&[(Kind::InClusterIPPool, &old), (Kind::IPAddress, &a)]);
    let mut new = ipool(NS, "p", json!({"addresses": ["bogus"], "prefix": 99}));
    new["metadata"]["deletionTimestamp"] = json!("2026-11-21T22:40:50Z");
    let mut old_deleting = old.clone();
    old_deleting["metadata"]["deletionTimestamp"] = json!("2026-11-21T22:40:50Z");
    assert_eq!(
        update(Kind::InClusterIPPool, &new, &old_deleting, &ix),
        Verdict::default()
    );
}

#[test]
fn x5_pool_update_judges_only_what_changed() {
    // Captures: label-only updates pass.
    for f in [
        "inclusterippool-update-label.json",
        "globalinclusterippool-update-label.json",
    ] {
        let (kind, op, obj, old) = review(f);
        let v = judge(
            kind,
            op,
            obj.as_ref(),
            old.as_ref(),
            &Index::new(),
            Options::default(),
        );
        assert_eq!(v, Verdict::default(), "{f}");
    }
    // Stored before ipam-guard with an entry in another subnet: adding a good entry is allowed.
    let old = ipool(
        NS,
        "p",
        json!({"addresses": ["10.0.0.10", "10.0.5.1"], "prefix": 24}),
    );
    let new = ipool(
        NS,
        "p",
        json!({"addresses": ["10.0.0.10", "10.0.5.1", "10.0.0.11"], "prefix": 24}),
    );
    assert!(update(Kind::InClusterIPPool, &new, &old, &Index::new()).allowed());
    // A new problem is still denied.
    let bad = ipool(
        NS,
        "p",
        json!({"addresses": ["10.0.0.10", "10.0.5.1", "10.0.0.11/40"], "prefix": 24}),
    );
    assert_eq!(
        update(Kind::InClusterIPPool, &bad, &old, &Index::new()).rules(),
        ["P2"]
    );
    // A prefix change that puts the gateway outside is new even though the gateway did not change.
    let old = ipool(
        NS,
        "p",
        json!({"addresses": ["10.0.0.10"], "gateway": "10.0.1.1", "prefix": 16}),
    );
    let new = ipool(
        NS,
        "p",
        json!({"addresses": ["10.0.0.10"], "gateway": "10.0.1.1", "prefix": 24}),
    );
    assert_eq!(
        update(Kind::InClusterIPPool, &new, &old, &Index::new()).rules(),
        ["P6"]
    );
}
