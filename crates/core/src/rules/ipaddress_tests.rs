//! `IPAddress` rules (A1–A10, X5), named after the ids they cover.

use serde_json::{json, Value};

use crate::field::{ErrorType, Verdict};
use crate::index::Index;
use crate::kinds::Kind;
use crate::rule_id::RuleId;
use crate::rules::test_support::*;
use crate::rules::Options;
use crate::rules::OverlapScope;

// === IPAddress ===

#[test]
fn a1_address_must_be_a_valid_ip() {
    let cases = [
        ("abc", "not a valid IP address"),
        ("10.0.0.256", "IPv4 octets must be between 0 and 255"),
        (
            "010.0.0.1",
            "leading zeros are not allowed in an IPv4 octet",
        ),
        ("fe80::1%eth0", "zone ids are not allowed in an IP address"),
        (
            "::ffff:10.0.0.1",
            "IPv4-mapped IPv6 addresses are not allowed, use 10.0.0.1",
        ),
        (
            "10.0.0.0/24",
            "a CIDR is not allowed here, expected an IP address",
        ),
    ];
    for (text, detail) in cases {
        let a = addr(NS, "a", text, 24, "InClusterIPPool", "p");
        let v = create(Kind::IPAddress, &a, &Index::new());
        assert_eq!(
            errors(&v),
            [format!(
                r#"spec.address: Invalid value: "{text}": {detail}"#
            )],
            "{text}"
        );
        assert_eq!(v.errors[0].rule, "A1");
    }
}

#[test]
fn a1_non_canonical_ipv6_is_a_warning() {
    let a = addr(NS, "a", "2001:DB8::5", 64, "InClusterIPPool", "p");
    let v = create(Kind::IPAddress, &a, &Index::new());
    assert!(v.allowed());
    assert!(warnings(&v).contains(
        &r#"spec.address: "2001:DB8::5" is not in canonical form, use "2001:db8::5""#.to_string()
    ));
    assert!(v.warnings.iter().any(|w| w.rule == "A1"));
}

#[test]
fn a2_prefix_bounds_every_version() {
    let cases: [(&str, &str, Value, Option<&str>); 8] = [
        (
            "v1beta2",
            "10.0.0.5",
            json!(-1),
            Some("-1: prefix cannot be negative"),
        ),
        (
            "v1beta2",
            "10.0.0.5",
            json!(33),
            Some("33: prefix is too large for an IPv4 address"),
        ),
        (
            "v1beta2",
            "2001:db8::5",
            json!(129),
            Some("129: prefix is too large for an IPv6 address"),
        ),
        ("v1beta2", "10.0.0.5", json!(32), None),
        ("v1beta2", "2001:db8::5", json!(128), None),
        // v1beta1 prefixes are unbounded integers: 2^32 + 24 must not wrap to 24.
        (
            "v1beta1",
            "10.0.0.5",
            json!(4294967320u64),
            Some("4294967320: prefix is too large for an IPv4 address"),
        ),
        (
            "v1alpha1",
            "10.0.0.5",
            json!(18446744073709551615u64),
            Some("18446744073709551615: prefix is too large for an IPv4 address"),
        ),
        (
            "v1beta2",
            "10.0.0.5",
            json!("abc"),
            Some(r#""abc": must be an integer"#),
        ),
    ];
    for (version, address, prefix, want) in cases {
        let mut a = addr(NS, "a", address, 0, "InClusterIPPool", "p");
        a["apiVersion"] = json!(format!("ipam.cluster.x-k8s.io/{version}"));
        a["spec"]["prefix"] = prefix.clone();
        let v = create(Kind::IPAddress, &a, &Index::new());
        let got: Vec<String> = v
            .errors
            .iter()
            .filter(|e| e.rule == "A2")
            .map(ToString::to_string)
            .collect();
        match want {
            Some(w) => assert_eq!(
                got,
                [format!("spec.prefix: Invalid value: {w}")],
                "{prefix}"
            ),
            None => assert!(got.is_empty(), "{prefix}: {got:?}"),
        }
    }
}

#[test]
fn a3_gateway_of_the_family_inside_the_subnet() {
    let cases: [(&str, i64, &str, Option<&str>); 9] = [
        ("10.0.0.5", 24, "10.0.0.1", None),
        (
            "10.0.0.5",
            24,
            "2001:db8::1",
            Some("must be of the same IP family as the address"),
        ),
        (
            "10.0.0.5",
            24,
            "10.0.0.5",
            Some("must not be the same as the address"),
        ),
        (
            "10.0.0.5",
            24,
            "10.0.1.1",
            Some("must be inside the address's subnet 10.0.0.0/24"),
        ),
        ("10.0.0.5", 24, "not-an-ip", Some("not a valid IP address")),
        // /31 and /32 leave no room for a subnet: the gateway may be anywhere.
        ("10.0.0.5", 31, "10.0.9.1", None),
        ("10.0.0.5", 32, "10.0.9.1", None),
        (
            "2001:db8::5",
            64,
            "2001:db9::1",
            Some("must be inside the address's subnet 2001:db8::/64"),
        ),
        // Link-local IPv6 gateways (router advertisements) are exempt.
        ("2001:db8::5", 64, "fe80::1", None),
    ];
    for (address, prefix, gateway, want) in cases {
        let mut a = addr(NS, "a", address, prefix, "InClusterIPPool", "p");
        a["spec"]["gateway"] = json!(gateway);
        let v = create(Kind::IPAddress, &a, &Index::new());
        match want {
            Some(w) => assert_eq!(
                errors(&v),
                [format!(r#"spec.gateway: Invalid value: "{gateway}": {w}"#)]
            ),
            None => assert!(v.allowed(), "{gateway}: {:?}", errors(&v)),
        }
    }
}

#[test]
fn a4_network_and_broadcast_addresses_warn() {
    let cases: [(&str, i64, Option<&str>); 8] = [
        (
            "10.0.0.0",
            24,
            Some("10.0.0.0 is the network address of 10.0.0.0/24"),
        ),
        (
            "10.0.0.255",
            24,
            Some("10.0.0.255 is the broadcast address of 10.0.0.0/24"),
        ),
        (
            "10.0.0.4",
            30,
            Some("10.0.0.4 is the network address of 10.0.0.4/30"),
        ),
        ("10.0.0.4", 31, None),
        ("10.0.0.4", 32, None),
        (
            "2001:db8::",
            64,
            Some("2001:db8:: is the network address of 2001:db8::/64"),
        ),
        ("2001:db8::ffff:ffff:ffff:ffff", 64, None),
        ("2001:db8::", 127, None),
    ];
    for (address, prefix, want) in cases {
        let a = addr(NS, "a", address, prefix, "InClusterIPPool", "p");
        let v = create(Kind::IPAddress, &a, &Index::new());
        assert!(v.allowed(), "{address}");
        let got: Vec<String> = v
            .warnings
            .iter()
            .filter(|w| w.rule == "A4")
            .map(ToString::to_string)
            .collect();
        match want {
            Some(w) => assert_eq!(got, [format!("spec.address: {w}")]),
            None => assert!(got.is_empty(), "{address}/{prefix}: {got:?}"),
        }
    }
}

#[test]
fn a5_references_are_required() {
    let mut a = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p");
    // v1beta1 defaults claimRef.name to "".
    a["spec"]["claimRef"] = json!({"name": ""});
    a["spec"]["poolRef"] = json!({"kind": "InClusterIPPool", "name": "p"});
    let v = create(Kind::IPAddress, &a, &Index::new());
    assert_eq!(
        errors(&v),
        [
            "spec.claimRef.name: Required value",
            "spec.poolRef.apiGroup: Required value"
        ]
    );
    assert!(v
        .errors
        .iter()
        .all(|e| e.rule == "A5" && e.kind == ErrorType::Required));
    a["spec"].as_object_mut().unwrap().remove("poolRef");
    a["spec"].as_object_mut().unwrap().remove("claimRef");
    a["spec"].as_object_mut().unwrap().remove("address");
    let v = create(Kind::IPAddress, &a, &Index::new());
    assert_eq!(
        errors(&v),
        [
            "spec.address: Required value",
            "spec.claimRef.name: Required value",
            "spec.poolRef: Required value"
        ]
    );
}

#[test]
fn a6_pool_ref_must_be_the_claims() {
    let c = claim(NS, "claim-a", "InClusterIPPool", "pool-a");
    let ix = index(&[(Kind::IPAddressClaim, &c)]);
    let a = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "pool-b");
    let v = create(Kind::IPAddress, &a, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.poolRef: Invalid value: "InClusterIPPool.ipam.cluster.x-k8s.io/pool-b": the referenced pool is different from the pool referenced by the claim this address should fulfill"#
        ]
    );
    // The same pool, written by a v1beta1 claim without apiGroup, is the same pool.
    let mut c = c.clone();
    c["spec"]["poolRef"]
        .as_object_mut()
        .unwrap()
        .remove("apiGroup");
    let ix = index(&[(Kind::IPAddressClaim, &c)]);
    let a = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "pool-a");
    assert!(create(Kind::IPAddress, &a, &ix).allowed());
}

#[test]
fn a6_missing_claim_warns() {
    let a = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "pool-a");
    let v = create(Kind::IPAddress, &a, &Index::new());
    assert!(v.allowed());
    assert_eq!(
        warnings(&v),
        ["spec.claimRef.name: IPAddressClaim ns/claim-a not found; allowed because restores may create addresses before their claims"]
    );
    // In an audit the address is stored already: it is an orphan, not a write to allow, and
    // `rules::health` reports it as H2.
    let stored = Options {
        stored: true,
        ..Options::default()
    };
    let v = create_with(Kind::IPAddress, &a, &Index::new(), stored);
    assert!(warnings(&v).is_empty(), "{v:?}");
}

#[test]
fn a7_one_address_per_claim() {
    let mut first = addr(NS, "first", "10.0.0.5", 24, "InClusterIPPool", "p");
    first["spec"]["claimRef"]["name"] = json!("claim-x");
    let mut elsewhere = addr("other", "e", "10.0.0.9", 24, "InClusterIPPool", "p");
    elsewhere["spec"]["claimRef"]["name"] = json!("claim-x");
    let ix = index(&[(Kind::IPAddress, &first), (Kind::IPAddress, &elsewhere)]);
    let mut second = addr(NS, "second", "10.0.0.6", 24, "InClusterIPPool", "p");
    second["spec"]["claimRef"]["name"] = json!("claim-x");
    let v = create(Kind::IPAddress, &second, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.claimRef.name: Duplicate value: "claim-x": IPAddressClaim ns/claim-x is already fulfilled by IPAddress ns/first"#
        ]
    );
    assert_eq!(v.errors[0].kind.reason(), "FieldValueDuplicate");
    // A retried CREATE of the same object does not conflict with itself.
    assert!(!create(Kind::IPAddress, &first, &ix)
        .errors
        .iter()
        .any(|e| e.rule == "A7"));
}

#[test]
fn a8_address_must_be_allocatable_from_its_pool() {
    let p = ipool(
        NS,
        "pool-a",
        json!({"addresses": ["10.0.0.0/24"], "excludedAddresses": ["10.0.0.100-10.0.0.199"],
            "gateway": "10.0.0.1", "prefix": 24}),
    );
    let ix = index(&[(Kind::InClusterIPPool, &p)]);
    let denied = "not an allocatable address of InClusterIPPool ns/pool-a: 10.0.0.2-10.0.0.99, 10.0.0.200-10.0.0.254";
    let cases = [
        ("10.0.0.50", None),
        ("10.0.0.150", Some(denied)), // excluded
        ("10.0.0.1", Some(denied)),   // the gateway
        ("10.0.0.255", Some(denied)), // broadcast
        ("10.0.1.5", Some(denied)),   // outside
    ];
    for (address, want) in cases {
        let mut a = addr(NS, "a", address, 24, "InClusterIPPool", "pool-a");
        a["spec"]["gateway"] = json!("10.0.0.1");
        if address == "10.0.0.1" {
            a["spec"]["gateway"] = json!("10.0.0.254");
        }
        let v = create(Kind::IPAddress, &a, &ix);
        let got: Vec<String> = v
            .errors
            .iter()
            .filter(|e| e.rule == "A8")
            .map(ToString::to_string)
            .collect();
        match want {
            Some(w) => assert_eq!(
                got,
                [format!(r#"spec.address: Invalid value: "{address}": {w}"#)]
            ),
            None => assert!(got.is_empty(), "{address}: {got:?}"),
        }
    }
}

#[test]
fn a8_point_to_point_and_host_pools_hand_out_every_address() {
    let pools = [
        (
            "p31",
            json!({"addresses": ["10.0.0.4/31"], "prefix": 31}),
            ["10.0.0.4", "10.0.0.5"],
            31,
        ),
        (
            "p32",
            json!({"addresses": ["10.0.0.9"], "prefix": 32}),
            ["10.0.0.9", "10.0.0.9"],
            32,
        ),
        (
            "p127",
            json!({"addresses": ["2001:db8::/127"], "prefix": 127}),
            ["2001:db8::", "2001:db8::1"],
            127,
        ),
        (
            "p128",
            json!({"addresses": ["2001:db8::9"], "prefix": 128}),
            ["2001:db8::9", "2001:db8::9"],
            128,
        ),
    ];
    for (name, spec, ips, prefix) in pools {
        let p = ipool(NS, name, spec);
        let ix = index(&[(Kind::InClusterIPPool, &p)]);
        for ip in ips {
            let a = addr(NS, "a", ip, prefix, "InClusterIPPool", name);
            let v = create(Kind::IPAddress, &a, &ix);
            assert!(v.allowed(), "{name} {ip}: {:?}", errors(&v));
        }
    }
    // IPv6 /64: only the subnet-router anycast address is reserved.
    let p = ipool(
        NS,
        "v6",
        json!({"addresses": ["2001:db8::/120"], "prefix": 64}),
    );
    let ix = index(&[(Kind::InClusterIPPool, &p)]);
    assert!(create(
        Kind::IPAddress,
        &addr(NS, "a", "2001:db8::ff", 64, "InClusterIPPool", "v6"),
        &ix
    )
    .allowed());
    let v = create(
        Kind::IPAddress,
        &addr(NS, "a", "2001:db8::", 64, "InClusterIPPool", "v6"),
        &ix,
    );
    assert_eq!(v.rules(), ["A4", "A6", "A8"]);
}

#[test]
fn a8_other_prefix_or_gateway_warns() {
    let p = ipool(
        NS,
        "pool-a",
        json!({"addresses": ["10.0.0.10-10.0.0.20"], "gateway": "10.0.0.1", "prefix": 24}),
    );
    let ix = index(&[(Kind::InClusterIPPool, &p)]);
    let mut a = addr(NS, "a", "10.0.0.10", 25, "InClusterIPPool", "pool-a");
    a["spec"]["gateway"] = json!("10.0.0.2");
    let v = create(Kind::IPAddress, &a, &ix);
    assert!(v.allowed());
    let got: Vec<String> = v
        .warnings
        .iter()
        .filter(|w| w.rule == "A8")
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        [
            "spec.prefix: prefix 25 differs from the prefix 24 of InClusterIPPool ns/pool-a",
            "spec.gateway: gateway 10.0.0.2 differs from the gateway 10.0.0.1 of InClusterIPPool ns/pool-a",
        ]
    );
    a["spec"].as_object_mut().unwrap().remove("gateway");
    let v = create(Kind::IPAddress, &a, &ix);
    assert!(warnings(&v).contains(
        &"spec.gateway: not set, while InClusterIPPool ns/pool-a has gateway 10.0.0.1".to_string()
    ));
}

#[test]
fn a8_unknown_or_missing_pool_is_not_judged() {
    let a = addr(NS, "a", "192.0.2.1", 24, "InClusterIPPool", "nowhere");
    let v = create(Kind::IPAddress, &a, &Index::new());
    assert!(v.allowed());
    assert!(!v.rules().contains(&RuleId::A8));
}

#[test]
fn a8_captured_address_against_captured_pool() {
    let pool_a = review("inclusterippool-create.json").2.unwrap();
    let ix = index(&[(Kind::InClusterIPPool, &pool_a)]);
    for f in [
        "ipaddress-create.json",
        "ipaddress-create-v1beta1.json",
        "ipaddress-create-v1alpha1.json",
    ] {
        let (kind, op, obj, _) = review(f);
        let v = judge(kind, op, obj.as_ref(), None, &ix, Options::default());
        assert!(v.allowed(), "{f}: {:?}", errors(&v));
        assert_eq!(v.rules(), ["A6"], "{f}: only the claim is missing");
    }
}

#[test]
fn a9_address_held_twice_in_one_space() {
    let held = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p1");
    let ix = index(&[(Kind::IPAddress, &held)]);
    let again = addr(NS, "b", "10.0.0.5", 24, "InClusterIPPool", "p2");
    let v = create(Kind::IPAddress, &again, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.address: Duplicate value: "10.0.0.5": 10.0.0.5 is already held by IPAddress ns/a"#
        ]
    );
    assert_eq!(v.errors[0].kind, ErrorType::Duplicate);
}

#[test]
fn a9_duplicate_written_in_different_forms() {
    let held = addr(NS, "a", "2001:db8::1", 64, "InClusterIPPool", "p");
    let ix = index(&[(Kind::IPAddress, &held)]);
    let again = addr("other", "b", "2001:DB8:0::1", 64, "InClusterIPPool", "p");
    let v = create(Kind::IPAddress, &again, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"spec.address: Duplicate value: "2001:DB8:0::1": 2001:db8::1 is already held by IPAddress ns/a"#
        ]
    );
}

#[test]
fn a9_address_spaces_separate_networks() {
    let dc1 = with_space(
        gpool("dc1", json!({"addresses": ["10.0.0.0/24"], "prefix": 24})),
        "dc1",
    );
    let dc2 = with_space(
        gpool("dc2", json!({"addresses": ["10.0.0.0/24"], "prefix": 24})),
        "dc2",
    );
    let held = addr(NS, "a", "10.0.0.5", 24, "GlobalInClusterIPPool", "dc1");
    let ix = index(&[
        (Kind::GlobalInClusterIPPool, &dc1),
        (Kind::GlobalInClusterIPPool, &dc2),
        (Kind::IPAddress, &held),
    ]);
    let other_space = addr(NS, "b", "10.0.0.5", 24, "GlobalInClusterIPPool", "dc2");
    assert!(create(Kind::IPAddress, &other_space, &ix).allowed());
    let same_space = addr(NS, "c", "10.0.0.5", 24, "GlobalInClusterIPPool", "dc1");
    assert_eq!(
        create(Kind::IPAddress, &same_space, &ix).rules(),
        ["A6", "A9"]
    );
    // An unknown pool puts the address in `default`, where dc1's address is not.
    let unknown = addr(NS, "d", "10.0.0.5", 24, "InClusterIPPool", "gone");
    assert!(create(Kind::IPAddress, &unknown, &ix).allowed());
}

#[test]
fn a9_overlap_scope_namespace_and_off() {
    let held = addr("team-a", "a", "10.0.0.5", 24, "InClusterIPPool", "p");
    let g = gpool("g", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let held_global = addr("team-c", "c", "10.0.0.6", 24, "GlobalInClusterIPPool", "g");
    let ix = index(&[
        (Kind::GlobalInClusterIPPool, &g),
        (Kind::IPAddress, &held),
        (Kind::IPAddress, &held_global),
    ]);
    let other_ns = addr("team-b", "b", "10.0.0.5", 24, "InClusterIPPool", "p");
    let dup = |o: Options, a: &Value| {
        create_with(Kind::IPAddress, a, &ix, o)
            .rules()
            .contains(&RuleId::A9)
    };
    assert!(dup(scope(OverlapScope::AddressSpace), &other_ns));
    assert!(!dup(scope(OverlapScope::Namespace), &other_ns));
    assert!(!dup(scope(OverlapScope::Off), &other_ns));
    // A cluster-scoped pool's address conflicts across namespaces even in namespace scope.
    let vs_global = addr("team-b", "b", "10.0.0.6", 24, "InClusterIPPool", "p");
    assert!(dup(scope(OverlapScope::Namespace), &vs_global));
}

#[test]
fn a10_spec_is_immutable() {
    let (kind, op, obj, old) = review("ipaddress-update-spec.json");
    let v = judge(
        kind,
        op,
        obj.as_ref(),
        old.as_ref(),
        &Index::new(),
        Options::default(),
    );
    assert_eq!(
        errors(&v),
        [r#"spec.address: Invalid value: "10.10.0.11": field is immutable (was "10.10.0.10")"#]
    );
    assert_eq!(v.rules(), ["A10"]);
    let (kind, op, obj, old) = review("ipaddress-update-label.json");
    let v = judge(
        kind,
        op,
        obj.as_ref(),
        old.as_ref(),
        &Index::new(),
        Options::default(),
    );
    assert_eq!(v, Verdict::default());
}

#[test]
fn a10_same_number_written_differently_is_no_change() {
    let old = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p");
    let mut new = old.clone();
    new["spec"]["prefix"] = json!(24.0);
    assert_eq!(
        update(Kind::IPAddress, &new, &old, &Index::new()),
        Verdict::default()
    );
}

#[test]
fn x5_address_update_judges_only_what_changed() {
    // Stored before ipam-guard: the gateway is outside the subnet.
    let mut old = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p");
    old["spec"]["gateway"] = json!("10.9.9.9");
    let mut labelled = old.clone();
    labelled["metadata"]["labels"] = json!({"tier": "gold"});
    assert!(update(Kind::IPAddress, &labelled, &old, &Index::new()).allowed());
    // A spec change is denied for the change, not for the old gateway.
    let mut moved = old.clone();
    moved["spec"]["address"] = json!("10.0.0.6");
    let v = update(Kind::IPAddress, &moved, &old, &Index::new());
    assert_eq!(v.rules(), ["A10"]);
}

#[test]
fn r1_durations_read_as_seconds_then_minutes_then_hours() {
    let d = |ms: u64| std::time::Duration::from_millis(ms);
    assert_eq!(super::duration_text(d(12_400), false), "12s");
    assert_eq!(
        super::duration_text(d(12_400), true),
        "13s",
        "a wait rounds up"
    );
    assert_eq!(super::duration_text(d(12_000), true), "12s");
    assert_eq!(super::duration_text(d(599_000), false), "599s");
    assert_eq!(super::duration_text(d(600_000), false), "10m");
    assert_eq!(super::duration_text(d(750_000), false), "12m30s");
    assert_eq!(super::duration_text(d(7_200_000), false), "2h");
    assert_eq!(super::duration_text(d(7_500_000), false), "2h5m");
}
