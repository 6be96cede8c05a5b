//! Table tests of the rule catalogue, named after the rule ids they cover. Each builds its cluster
//! view the way the server does: objects → `model::project` → `Index`.

use serde_json::{json, Value};

use crate::field::{DenyReason, ErrorType, Verdict};
use crate::index::Index;
use crate::kinds::{Kind, CAPI_IPAM};
use crate::model::{project, Operation, Projection};
use crate::rule_id::RuleId;
use crate::rules::test_support::{
    create, create_with, delete, errors, fixture, index, judge, update, warnings, with_space,
};
use crate::rules::Options;
use crate::rules::OverlapScope;

// === helpers ===

fn capture(name: &str) -> Value {
    fixture("rules", name)
}

fn meta(ns: Option<&str>, name: &str) -> Value {
    match ns {
        Some(ns) => json!({"name": name, "namespace": ns}),
        None => json!({"name": name}),
    }
}

/// A v1alpha2 pool; `kind` decides whether `ns` is kept.
fn pool(kind: Kind, ns: &str, name: &str, spec: Value) -> Value {
    let ns = kind.namespaced().then_some(ns);
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": kind.name(),
        "metadata": meta(ns, name), "spec": spec})
}

fn ipool(ns: &str, name: &str, spec: Value) -> Value {
    pool(Kind::InClusterIPPool, ns, name, spec)
}

fn gpool(name: &str, spec: Value) -> Value {
    pool(Kind::GlobalInClusterIPPool, "", name, spec)
}

/// A v1beta2 IPAddress referencing an in-cluster pool.
fn addr(ns: &str, name: &str, address: &str, prefix: i64, pool_kind: &str, pool: &str) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": meta(Some(ns), name),
        "spec": {"address": address, "prefix": prefix, "claimRef": {"name": format!("claim-{name}")},
            "poolRef": {"apiGroup": CAPI_IPAM, "kind": pool_kind, "name": pool}}})
}

fn claim(ns: &str, name: &str, pool_kind: &str, pool: &str) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
        "metadata": meta(Some(ns), name),
        "spec": {"poolRef": {"apiGroup": CAPI_IPAM, "kind": pool_kind, "name": pool}}})
}

/// A review's request parts: (kind, operation, object, oldObject).
fn review(name: &str) -> (Kind, Operation, Option<Value>, Option<Value>) {
    let r = capture(name);
    let req = &r["request"];
    let kind = Kind::from_group_kind(
        req["kind"]["group"].as_str().unwrap(),
        req["kind"]["kind"].as_str().unwrap(),
    )
    .unwrap();
    let op = Operation::parse(req["operation"].as_str().unwrap()).unwrap();
    let obj = Some(req["object"].clone()).filter(|v| !v.is_null());
    let old = Some(req["oldObject"].clone()).filter(|v| !v.is_null());
    (kind, op, obj, old)
}

fn scope(s: OverlapScope) -> Options {
    Options {
        overlap_scope: s,
        ..Options::default()
    }
}

const NS: &str = "ns";

// === dispatch ===

#[test]
fn k1_unserved_version_allowed_with_warning() {
    let mut obj = claim(NS, "c", "InClusterIPPool", "p");
    obj["apiVersion"] = json!("ipam.cluster.x-k8s.io/v1alpha9");
    obj["spec"] = json!({});
    let v = create(Kind::IPAddressClaim, &obj, &Index::new());
    assert!(v.allowed());
    assert_eq!(
        warnings(&v),
        ["ipam.cluster.x-k8s.io/v1alpha9 IPAddressClaim is not a version ipam-guard knows (serves v1alpha1, v1beta1, v1beta2); the object was not checked"]
    );
    assert_eq!(v.rules(), ["K1"]);
}

#[test]
fn connect_is_allowed_untouched() {
    let obj = claim(NS, "c", "InClusterIPPool", "p");
    let v = judge(
        Kind::IPAddressClaim,
        Operation::Connect,
        Some(&obj),
        None,
        &Index::new(),
        Options::default(),
    );
    assert_eq!(v, Verdict::default());
    // DELETE of a kind that is not a pool is not judged either.
    let v = judge(
        Kind::IPAddress,
        Operation::Delete,
        None,
        Some(&addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p")),
        &Index::new(),
        Options::default(),
    );
    assert_eq!(v, Verdict::default());
}

#[test]
fn captured_creates_pass_against_a_consistent_view() {
    let pool_a = review("inclusterippool-create.json").2.unwrap();
    let ix = index(&[(Kind::InClusterIPPool, &pool_a)]);
    for f in [
        "ipaddressclaim-create.json",
        "ipaddressclaim-create-v1beta1.json",
        "ipaddressclaim-create-v1alpha1.json",
        "inclusterippool-create.json",
        "inclusterippool-create-v1alpha1.json",
        "globalinclusterippool-create.json",
        "globalinclusterippool-create-v1alpha1.json",
    ] {
        let (kind, op, obj, old) = review(f);
        let v = judge(
            kind,
            op,
            obj.as_ref(),
            old.as_ref(),
            &ix,
            Options::default(),
        );
        assert!(v.allowed(), "{f}: {:?}", errors(&v));
        assert!(v.warnings.is_empty(), "{f}: {:?}", warnings(&v));
    }
}

// === IPAddressClaim ===

#[test]
fn c1_pool_ref_fields_required_in_every_version() {
    for version in ["v1alpha1", "v1beta1", "v1beta2"] {
        let cases: [(Value, &[&str]); 4] = [
            (
                json!({"poolRef": {"kind": "InClusterIPPool", "name": "p"}}),
                &["spec.poolRef.apiGroup: Required value"],
            ),
            (
                json!({"poolRef": {"apiGroup": "", "kind": "", "name": ""}}),
                &[
                    "spec.poolRef.apiGroup: Required value",
                    "spec.poolRef.kind: Required value",
                    "spec.poolRef.name: Required value",
                ],
            ),
            (json!({}), &["spec.poolRef: Required value"]),
            (
                json!({"poolRef": "pool-a"}),
                &[r#"spec.poolRef: Invalid value: "pool-a": must be an object"#],
            ),
        ];
        for (spec, want) in cases {
            let obj = json!({"apiVersion": format!("ipam.cluster.x-k8s.io/{version}"),
                "kind": "IPAddressClaim", "metadata": {"name": "c", "namespace": NS}, "spec": spec});
            let v = create(Kind::IPAddressClaim, &obj, &Index::new());
            assert_eq!(errors(&v), want, "{version} {spec}");
            if want[0].contains("Required") {
                assert!(v.errors.iter().all(|e| e.kind == ErrorType::Required));
            }
        }
    }
}

#[test]
fn c1_pool_ref_name_must_be_a_dns1123_subdomain() {
    let obj = claim(NS, "c", "InClusterIPPool", "Pool_A");
    let v = create(Kind::IPAddressClaim, &obj, &Index::new());
    assert_eq!(
        errors(&v),
        [
            r#"spec.poolRef.name: Invalid value: "Pool_A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
        ]
    );
}

#[test]
fn c2_namespace_in_a_reference_is_forbidden() {
    let mut obj = claim(NS, "c", "InClusterIPPool", "p");
    obj["spec"]["poolRef"]["namespace"] = json!("other");
    let p = ipool(NS, "p", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let v = create(
        Kind::IPAddressClaim,
        &obj,
        &index(&[(Kind::InClusterIPPool, &p)]),
    );
    assert_eq!(
        errors(&v),
        ["spec.poolRef.namespace: Forbidden: references must stay in the object's namespace"]
    );
    assert_eq!(v.errors[0].kind.reason(), "FieldValueForbidden");
    // IPAddress references too.
    let mut a = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p");
    a["spec"]["claimRef"]["namespace"] = json!("other");
    let v = create(Kind::IPAddress, &a, &index(&[(Kind::InClusterIPPool, &p)]));
    assert_eq!(
        errors(&v),
        ["spec.claimRef.namespace: Forbidden: references must stay in the object's namespace"]
    );
}

#[test]
fn c3_missing_pool_warns_by_default_and_denies_when_required() {
    let obj = claim(NS, "c", "InClusterIPPool", "pool-a");
    // A pool of that name in another namespace is not the claim's pool.
    let elsewhere = ipool(
        "other",
        "pool-a",
        json!({"addresses": ["10.0.0.0/24"], "prefix": 24}),
    );
    let ix = index(&[(Kind::InClusterIPPool, &elsewhere)]);
    let v = create(Kind::IPAddressClaim, &obj, &ix);
    assert!(v.allowed());
    assert_eq!(
        warnings(&v),
        ["spec.poolRef.name: InClusterIPPool ns/pool-a not found"]
    );
    let strict = Options {
        require_existing_pool: true,
        ..Options::default()
    };
    let v = create_with(Kind::IPAddressClaim, &obj, &ix, strict);
    assert_eq!(
        errors(&v),
        [r#"spec.poolRef.name: Invalid value: "pool-a": InClusterIPPool ns/pool-a not found"#]
    );
    // A global pool is found from any namespace.
    let g = gpool("g", json!({"addresses": ["10.1.0.0/24"], "prefix": 24}));
    let obj = claim(NS, "c", "GlobalInClusterIPPool", "g");
    let v = create_with(
        Kind::IPAddressClaim,
        &obj,
        &index(&[(Kind::GlobalInClusterIPPool, &g)]),
        strict,
    );
    assert!(v.allowed() && v.warnings.is_empty(), "{:?}", warnings(&v));
}

#[test]
fn c3_known_group_with_unknown_kind_warns() {
    let obj = claim(NS, "c", "InClusterPool", "p");
    let v = create(Kind::IPAddressClaim, &obj, &Index::new());
    assert_eq!(
        warnings(&v),
        ["spec.poolRef.kind: InClusterPool is not a pool kind of ipam.cluster.x-k8s.io (pool kinds: InClusterIPPool, GlobalInClusterIPPool)"]
    );
    // Another provider's group is none of our business.
    let mut obj = claim(NS, "c", "InfobloxIPPool", "p");
    obj["spec"]["poolRef"]["apiGroup"] = json!("ipam.cluster.x-k8s.io.infoblox.com");
    let v = create(Kind::IPAddressClaim, &obj, &Index::new());
    assert!(v.allowed() && v.warnings.is_empty());
}

#[test]
fn c4_each_changed_field_is_its_own_cause() {
    let (kind, op, obj, old) = review("ipaddressclaim-update-spec.json");
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
        [
            r#"spec.poolRef.kind: Invalid value: "GlobalInClusterIPPool": field is immutable (was "InClusterIPPool")"#,
            r#"spec.poolRef.name: Invalid value: "global-pool-a": field is immutable (was "pool-a")"#,
        ]
    );
    assert!(v.errors.iter().all(|e| e.rule == "C4"));
}

#[test]
fn c4_metadata_updates_pass_even_with_an_old_invalid_spec() {
    let (kind, op, obj, old) = review("ipaddressclaim-update-label.json");
    let v = judge(
        kind,
        op,
        obj.as_ref(),
        old.as_ref(),
        &Index::new(),
        Options::default(),
    );
    assert_eq!(v, Verdict::default());
    // X5: a claim stored without apiGroup (v1beta1) is not denied for it on a label update.
    let mut old = claim(NS, "c", "InClusterIPPool", "p");
    old["apiVersion"] = json!("ipam.cluster.x-k8s.io/v1beta1");
    old["spec"]["poolRef"]
        .as_object_mut()
        .unwrap()
        .remove("apiGroup");
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"tier": "gold"});
    assert_eq!(
        update(Kind::IPAddressClaim, &new, &old, &Index::new()),
        Verdict::default()
    );
}

#[test]
fn c5_cluster_name_and_label_agree() {
    let mut obj = claim(NS, "c", "InClusterIPPool", "p");
    obj["spec"]["clusterName"] = json!("workload-1");
    obj["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": "workload-2"});
    let p = ipool(NS, "p", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let ix = index(&[(Kind::InClusterIPPool, &p)]);
    let v = create(Kind::IPAddressClaim, &obj, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"metadata.labels: Invalid value: "workload-2": label cluster.x-k8s.io/cluster-name must equal spec.clusterName "workload-1""#
        ]
    );

    // UPDATE: judged when the label changes …
    let mut old = obj.clone();
    old["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": "workload-1"});
    let v = update(Kind::IPAddressClaim, &obj, &old, &ix);
    assert_eq!(v.rules(), ["C5"]);
    // … not when an old disagreement is carried along by an unrelated change.
    let mut new = obj.clone();
    new["metadata"]["annotations"] = json!({"note": "x"});
    assert!(update(Kind::IPAddressClaim, &new, &obj, &ix).allowed());
}

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
    // In an audit the address is stored already: it is an orphan, not a write to allow.
    let stored = Options {
        stored: true,
        ..Options::default()
    };
    let v = create_with(Kind::IPAddress, &a, &Index::new(), stored);
    assert_eq!(
        warnings(&v),
        ["spec.claimRef.name: IPAddressClaim ns/claim-a not found: an orphaned address (its claim was deleted, or a restore has not brought it back yet)"]
    );
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

#[test]
fn projections_of_captures() {
    for (f, want) in [
        (
            "inclusterippool-create.json",
            "10.10.0.10-10.10.0.20, 10.10.0.32-10.10.0.47",
        ),
        (
            "globalinclusterippool-create.json",
            "2001:db8::10-2001:db8::14, 2001:db8::16-2001:db8::20",
        ),
        (
            "globalinclusterippool-create-v1alpha1.json",
            "192.0.2.2-192.0.2.15",
        ),
    ] {
        let (kind, _, obj, _) = review(f);
        let Some(Projection::Pool(p)) = project(kind, obj.as_ref().unwrap()) else {
            panic!("{f}");
        };
        assert_eq!(p.allocatable.to_string(), want, "{f}");
    }
    let (kind, _, obj, _) = review("ipaddressclaim-create.json");
    assert!(matches!(
        project(kind, obj.as_ref().unwrap()),
        Some(Projection::Claim(_))
    ));
    let (kind, _, obj, _) = review("ipaddress-create.json");
    let Some(Projection::Address(a)) = project(kind, obj.as_ref().unwrap()) else {
        panic!()
    };
    assert_eq!(a.claim.as_deref(), Some("claim-a"));
}
