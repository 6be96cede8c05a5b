//! S1–S5 on a SpiderSubnet, S9–S12, P10 between subnets and other pools, the audit and usage
//! of subnets.

use serde_json::{json, Value};

use crate::field::{DenyReason, Verdict};
use crate::index::Index;
use crate::kinds::Kind;
use crate::model::ObjKey;
use crate::rules::test_support::{self as ts, errors as texts, index};
use crate::rules::{Ctx, Options};

fn create(obj: &Value, ix: &Index) -> Verdict {
    ts::create(Kind::SpiderIPPool, obj, ix)
}

fn update(obj: &Value, old: &Value, ix: &Index) -> Verdict {
    ts::update(Kind::SpiderIPPool, obj, old, ix)
}

fn named(name: &str, subnet: &str, ips: &[&str]) -> Value {
    json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
        "metadata": {"name": name}, "spec": {"subnet": subnet, "ips": ips}})
}

fn subnet(name: &str, cidr: &str, ips: &[&str]) -> Value {
    json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderSubnet",
        "metadata": {"name": name}, "spec": {"subnet": cidr, "ips": ips}})
}

fn held_pool(name: &str, cidr: &str, ips: &[&str], held: &str) -> Value {
    let mut p = named(name, cidr, ips);
    p["status"] = json!({"allocatedIPCount": 1,
        "allocatedIPs": format!("{{\"{held}\":{{\"pod\":\"default/web-0\"}}}}")});
    p
}

fn sub_create(obj: &Value, ix: &Index) -> Verdict {
    ts::create(Kind::SpiderSubnet, obj, ix)
}

#[test]
fn the_spec_rules_of_a_pool_judge_a_subnet() {
    let ix = Index::new();
    assert!(sub_create(&subnet("s", "10.6.0.0/24", &["10.6.0.10-10.6.0.20"]), &ix).allowed());
    let mut bad = subnet("s", "10.6.0.7/24", &["10.6.1.10"]);
    bad["spec"]["gateway"] = json!("10.6.0.10");
    bad["spec"]["routes"] = json!([{"dst": "0.0.0.0/0", "gw": "10.6.0.1"}]);
    let v = sub_create(&bad, &ix);
    assert_eq!(v.rules(), ["S1", "S3", "S7"], "{:?}", texts(&v));
    let mut gw = subnet("s", "10.6.0.0/24", &["10.6.0.1-10.6.0.20"]);
    gw["spec"]["gateway"] = json!("10.6.0.1");
    assert_eq!(sub_create(&gw, &ix).rules(), ["S4"]);
    // S5: subnet and ipVersion are immutable.
    let old = subnet("s", "10.6.0.0/24", &["10.6.0.10"]);
    let moved = subnet("s", "10.6.1.0/24", &["10.6.1.10"]);
    let v = ts::update(Kind::SpiderSubnet, &moved, &old, &ix);
    assert_eq!(v.rules(), ["S5"], "{:?}", texts(&v));
}

#[test]
fn s10_subnets_never_overlap_identical_ones_included() {
    let ix = index(&[(
        Kind::SpiderSubnet,
        &subnet("a", "10.6.0.0/24", &["10.6.0.10"]),
    )]);
    let v = sub_create(&subnet("b", "10.6.0.0/24", &["10.6.0.200"]), &ix);
    assert_eq!(
        texts(&v),
        [
            r#"spec.subnet: Invalid value: "10.6.0.0/24": overlaps the subnet of SpiderSubnet.spiderpool.spidernet.io a (10.6.0.0/24); SpiderSubnets never overlap, identical ones included"#
        ]
    );
    assert_eq!(
        sub_create(&subnet("c", "10.6.0.128/25", &["10.6.0.200"]), &ix).rules(),
        ["S10"]
    );
    assert!(sub_create(&subnet("d", "10.6.1.0/24", &["10.6.1.10"]), &ix).allowed());
    let mut apart = subnet("e", "10.6.0.0/24", &["10.6.0.200"]);
    apart["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
    assert!(sub_create(&apart, &ix).allowed());
}

#[test]
fn s9_a_pool_and_a_subnet_that_overlap_declare_the_same_subnet() {
    let ix = index(&[(
        Kind::SpiderSubnet,
        &subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]),
    )]);
    let v = create(&named("p", "10.6.0.0/25", &["10.6.0.100"]), &ix);
    assert_eq!(v.rules(), ["S9"], "{:?}", texts(&v));
    let ix = index(&[(
        Kind::SpiderIPPool,
        &named("p", "10.6.0.0/25", &["10.6.0.100"]),
    )]);
    assert_eq!(
        sub_create(&subnet("a", "10.6.0.0/24", &["10.6.0.200"]), &ix).rules(),
        ["S9"]
    );
}

#[test]
fn s11_a_carved_pool_lies_inside_its_subnet() {
    let ix = index(&[(
        Kind::SpiderSubnet,
        &subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]),
    )]);
    // Inside: admitted, and the subnet is no P10 overlap of its own pool.
    assert!(create(&named("in", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]), &ix).allowed());
    let v = create(&named("out", "10.6.0.0/24", &["10.6.0.45-10.6.0.60"]), &ix);
    assert_eq!(
        texts(&v),
        [
            r#"spec.ips[0]: Invalid value: "10.6.0.45-10.6.0.60": 10.6.0.51-10.6.0.60 outside SpiderSubnet.spiderpool.spidernet.io a: a SpiderIPPool declaring the subnet of a SpiderSubnet is carved from it and takes only addresses of its spec.ips, less its spec.excludeIPs and gateway"#
        ]
    );
    // X5: an update judges only what it adds.
    let stray = named("out", "10.6.0.0/24", &["10.6.0.45-10.6.0.60"]);
    let mut shrunk = stray.clone();
    shrunk["spec"]["ips"] = json!(["10.6.0.46-10.6.0.60"]);
    assert!(update(&shrunk, &stray, &ix).allowed());
    // Another address space: not carved from it.
    let mut apart = named("apart", "10.6.0.0/24", &["10.6.0.100"]);
    apart["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
    assert!(create(&apart, &ix).allowed());
}

#[test]
fn s11_a_subnet_keeps_covering_its_pools() {
    let carved = named("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]);
    let old = subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]);
    let ix = index(&[(Kind::SpiderIPPool, &carved), (Kind::SpiderSubnet, &old)]);
    let mut narrowed = old.clone();
    narrowed["spec"]["ips"] = json!(["10.6.0.10-10.6.0.25"]);
    let v = ts::update(Kind::SpiderSubnet, &narrowed, &old, &ix);
    assert_eq!(
        texts(&v),
        [
            r#"spec.ips: Forbidden: does not cover 10.6.0.26-10.6.0.30 of SpiderIPPool.spiderpool.spidernet.io p, carved from this SpiderSubnet (the same spec.subnet): a SpiderSubnet's spec.ips, less its spec.excludeIPs and gateway, keep every address of its SpiderIPPools"#
        ]
    );
    // Excluding a carved address is taking it away too; growing is fine.
    let mut excluded = old.clone();
    excluded["spec"]["excludeIPs"] = json!(["10.6.0.20"]);
    assert_eq!(
        ts::update(Kind::SpiderSubnet, &excluded, &old, &ix).rules(),
        ["S11"]
    );
    let mut grown = old.clone();
    grown["spec"]["ips"] = json!(["10.6.0.10-10.6.0.90"]);
    assert!(ts::update(Kind::SpiderSubnet, &grown, &old, &ix).allowed());
    // A create that does not cover a pool of its subnet already there.
    let ix = index(&[(Kind::SpiderIPPool, &carved)]);
    assert_eq!(
        sub_create(&subnet("a", "10.6.0.0/24", &["10.6.0.25-10.6.0.50"]), &ix).rules(),
        ["S11"]
    );
    assert!(sub_create(&subnet("a", "10.6.0.0/24", &["10.6.0.0-10.6.0.255"]), &ix).allowed());
}

#[test]
fn s12_a_subnet_whose_pools_hold_addresses_is_not_deleted() {
    let sub = subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]);
    let held = held_pool("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"], "10.6.0.21");
    let ix = index(&[(Kind::SpiderIPPool, &held), (Kind::SpiderSubnet, &sub)]);
    let v = ts::delete(Kind::SpiderSubnet, &sub, &ix);
    assert_eq!(v.reason, DenyReason::Forbidden);
    assert_eq!(
        texts(&v),
        [
            "metadata.name: Forbidden: SpiderIPPools carved from this SpiderSubnet hold addresses. Cannot delete the SpiderSubnet until they have been released. Held by: SpiderIPPool.spiderpool.spidernet.io p (10.6.0.21)"
        ]
    );
    // A carved pool holding nothing, or a held pool of another subnet: let go.
    let idle = named("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]);
    let ix = index(&[(Kind::SpiderIPPool, &idle), (Kind::SpiderSubnet, &sub)]);
    assert!(ts::delete(Kind::SpiderSubnet, &sub, &ix).allowed());
    let other = held_pool("q", "10.7.0.0/24", &["10.7.0.20"], "10.7.0.20");
    let ix = index(&[(Kind::SpiderIPPool, &other), (Kind::SpiderSubnet, &sub)]);
    assert!(ts::delete(Kind::SpiderSubnet, &sub, &ix).allowed());
}

#[test]
fn p10_a_subnet_meets_other_kinds_but_not_its_carved_pools() {
    let incluster = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
        "metadata": {"name": "nodes"}, "spec": {"addresses": ["10.6.0.40-10.6.0.60"], "prefix": 24, "gateway": "10.6.0.1"}});
    let ix = index(&[(Kind::GlobalInClusterIPPool, &incluster)]);
    let v = sub_create(&subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]), &ix);
    assert_eq!(v.rules(), ["P10"], "{:?}", texts(&v));
    // The audit agrees: carved pool and subnet are no overlap, the in-cluster pool is.
    let sub = subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.30"]);
    let carved = named("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]);
    let ix = index(&[(Kind::SpiderSubnet, &sub), (Kind::SpiderIPPool, &carved)]);
    let ctx = Ctx {
        index: &ix,
        options: Options::default(),
        now: std::time::Instant::now(),
    };
    let mut out = Vec::new();
    for p in ix.pools() {
        crate::rules::stored::pool_findings(&ctx, p, &mut out);
    }
    assert!(out.is_empty(), "{out:?}");
    // usage counts the subnet's carved share, not its pool's holders again.
    let u = ix
        .usage_of_pool(&ObjKey::new(Kind::SpiderSubnet, None, "a"))
        .unwrap();
    assert_eq!((u.allocatable, u.used, u.outside), (21, 11, 0));
    assert_eq!(
        ix.free_of(ix.pool(&u.key).unwrap()).to_string(),
        "10.6.0.10-10.6.0.19"
    );
}

#[test]
fn the_audit_reports_stored_subnets_that_overlap_or_leave_a_pool_out() {
    let a = subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.25"]);
    let b = subnet("b", "10.6.0.0/25", &["10.6.0.100"]);
    let carved = named("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]);
    let ix = index(&[
        (Kind::SpiderSubnet, &a),
        (Kind::SpiderSubnet, &b),
        (Kind::SpiderIPPool, &carved),
    ]);
    let ctx = Ctx {
        index: &ix,
        options: Options::default(),
        now: std::time::Instant::now(),
    };
    let mut out = Vec::new();
    for p in ix.pools() {
        crate::rules::stored::pool_findings(&ctx, p, &mut out);
    }
    let mut found: Vec<String> = out
        .iter()
        .map(|(k, e)| format!("{} {}", k.name, e.rule))
        .collect();
    found.sort();
    // a and b overlap (S10, each side); p and b overlap without sharing a subnet (S9, each
    // side); a does not cover 10.6.0.26-10.6.0.30 of p (S11).
    assert_eq!(
        found,
        ["a S10", "a S11", "b S10", "b S9", "p S9"],
        "{out:?}"
    );
}
