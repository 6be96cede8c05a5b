//! Declared pool kinds (docs/kinds.md) judged as pools: P10 across kinds, both ways, both
//! families; an object its expression cannot read is not judged; P9 when the declaration asks.

use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::declared::Registry;
use crate::kinds::Kind;
use crate::model::{project, Operation};
use crate::rules::stored::pool_findings;
use crate::rules::test_support::*;
use crate::rules::{Ctx, Options};

/// Installed once for every test here: the table of declared kinds is the process's, and tests
/// run side by side (a kind installed again with another declaration would change under them).
const KINDS: &str = r#"apiVersion: ipam-guard.io/v1alpha1
kind: AddressKinds
kinds:
- group: ipam.cluster.x-k8s.io
  kind: InfobloxIPPool
  versions: [v1alpha1]
  role: pool
  addresses: "object.spec.subnets.map(s, s.cidr)"
  excluded: "has(object.spec.excluded) ? object.spec.excluded : []"
  protectDelete: true
- group: metallb.io
  kind: IPAddressPool
  versions: [v1beta1]
  role: pool
  addresses: "object.spec.addresses"
"#;

fn kinds() -> (Kind, Kind) {
    static INSTALLED: OnceLock<(Kind, Kind)> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let registry = Registry::load(&[("kinds.yaml".to_owned(), KINDS.to_owned())]).unwrap();
        let kinds = registry.install().unwrap();
        (kinds[0], kinds[1])
    })
}

fn ib_pool(ns: &str, name: &str, cidrs: &[&str]) -> Value {
    let subnets: Vec<Value> = cidrs.iter().map(|c| json!({"cidr": c})).collect();
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha1", "kind": "InfobloxIPPool",
        "metadata": meta(Some(ns), name), "spec": {"subnets": subnets}})
}

fn lb_pool(ns: &str, name: &str, addresses: &[&str]) -> Value {
    json!({"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
        "metadata": meta(Some(ns), name), "spec": {"addresses": addresses}})
}

#[test]
fn declared_kinds_are_known_by_group_and_kind_and_named_as_kubectl_does() {
    let (infoblox, metallb) = kinds();
    assert_eq!(
        Kind::from_group_kind("ipam.cluster.x-k8s.io", "InfobloxIPPool"),
        Some(infoblox)
    );
    assert_eq!(
        Kind::from_api_version("metallb.io/v1beta1", "IPAddressPool"),
        Some((metallb, "v1beta1".to_owned()))
    );
    assert_eq!(Kind::built_in("metallb.io", "IPAddressPool"), None);
    assert!(infoblox.is_pool() && infoblox.namespaced() && infoblox.serves_version("v1alpha1"));
    assert_eq!(infoblox.plural(), "infobloxippools");
    assert_eq!(metallb.to_string(), "IPAddressPool");
    assert_eq!(infoblox.built_in_index(), None);
    // Installing the same file again (a second `--kinds` read) keeps the numbers.
    let again = Registry::load(&[("kinds.yaml".to_owned(), KINDS.to_owned())])
        .unwrap()
        .install()
        .unwrap();
    assert_eq!(again, [infoblox, metallb]);
}

#[test]
fn a_declared_pool_overlapping_an_in_cluster_pool_is_found_from_both_sides() {
    let (infoblox, _) = kinds();
    let incluster = ipool(
        NS,
        "a",
        json!({"addresses": ["10.0.0.0/24"], "prefix": 24, "gateway": "10.0.0.1"}),
    );
    let declared = infoblox_pool_a();
    let ix = index(&[(Kind::InClusterIPPool, &incluster)]);
    assert_eq!(
        errors(&create(infoblox, &declared, &ix)),
        [
            r#"spec.subnets[1].cidr: Invalid value: "10.0.0.128/25": overlaps InClusterIPPool ns/a (10.0.0.128-10.0.0.254)"#
        ]
    );
    let ix = index(&[(infoblox, &declared)]);
    assert_eq!(
        errors(&create(Kind::InClusterIPPool, &incluster, &ix)),
        [
            r#"spec.addresses[0]: Invalid value: "10.0.0.0/24": overlaps InfobloxIPPool infra/pool-a (10.0.0.128-10.0.0.254)"#
        ]
    );
    // What `excluded` takes out is not the pool's: excluding the shared half clears both sides.
    let mut narrowed = declared.clone();
    narrowed["spec"]["excluded"] = json!(["10.0.0.128/25"]);
    let ix = index(&[(Kind::InClusterIPPool, &incluster)]);
    assert!(create(infoblox, &narrowed, &ix).allowed());
    let ix = index(&[(infoblox, &narrowed)]);
    assert!(create(Kind::InClusterIPPool, &incluster, &ix).allowed());
}

fn infoblox_pool_a() -> Value {
    ib_pool("infra", "pool-a", &["192.168.0.0/24", "10.0.0.128/25"])
}

#[test]
fn two_declared_kinds_overlap_each_other_in_either_family() {
    let (infoblox, metallb) = kinds();
    // MetalLB's pools mix families: the IPv6 half meets the Infoblox pool, the IPv4 half does not.
    let lb = lb_pool(
        "metallb-system",
        "lb",
        &["172.16.0.10-172.16.0.20", "fd00::/120"],
    );
    let ib = ib_pool("infra", "v6", &["fd00::80/121"]);
    let ix = index(&[(metallb, &lb)]);
    assert_eq!(
        errors(&create(infoblox, &ib, &ix)),
        [
            r#"spec.subnets[0].cidr: Invalid value: "fd00::80/121": overlaps IPAddressPool metallb-system/lb (fd00::80-fd00::ff)"#
        ]
    );
    let ix = index(&[(infoblox, &ib)]);
    assert_eq!(
        errors(&create(metallb, &lb, &ix)),
        [
            r#"spec.addresses[1]: Invalid value: "fd00::/120": overlaps InfobloxIPPool infra/v6 (fd00::80-fd00::ff)"#
        ]
    );
    // The periodic audit's reading of the view sees both families as well.
    let ix = index(&[(infoblox, &ib), (metallb, &lb)]);
    ix.check_consistency();
    let ctx = Ctx {
        index: &ix,
        options: Options::default(),
        now: std::time::Instant::now(),
    };
    let mut found = Vec::new();
    for pool in ix.pools() {
        pool_findings(&ctx, pool, &mut found);
    }
    let mut found: Vec<String> = found.iter().map(|(k, e)| format!("{k}: {e}")).collect();
    found.sort();
    assert_eq!(
        found,
        [
            r#"IPAddressPool metallb-system/lb: spec: Invalid value: "172.16.0.10-172.16.0.20, fd00::-fd00::ff": overlaps InfobloxIPPool infra/v6 (fd00::80-fd00::ff)"#,
            r#"InfobloxIPPool infra/v6: spec: Invalid value: "fd00::80-fd00::ff": overlaps IPAddressPool metallb-system/lb (fd00::80-fd00::ff)"#,
        ]
    );
}

#[test]
fn a_declared_pool_in_another_space_does_not_overlap() {
    let (infoblox, metallb) = kinds();
    let incluster = ipool(NS, "a", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let declared = with_space(infoblox_pool_a(), "lab");
    let ix = index(&[(Kind::InClusterIPPool, &incluster)]);
    assert!(create(infoblox, &declared, &ix).allowed());
    let ix = index(&[(infoblox, &declared)]);
    assert!(create(Kind::InClusterIPPool, &incluster, &ix).allowed());
    // In the space it names, it meets what is there.
    let lb = with_space(lb_pool("metallb-system", "lab", &["10.0.0.200/29"]), "lab");
    assert_eq!(
        errors(&create(metallb, &lb, &ix)),
        [
            r#"spec.addresses[0]: Invalid value: "10.0.0.200/29": overlaps InfobloxIPPool infra/pool-a (10.0.0.200-10.0.0.207)"#
        ]
    );
}

#[test]
fn the_index_holds_declared_pools_of_both_families_consistently() {
    let (infoblox, metallb) = kinds();
    let lb = lb_pool("metallb-system", "lb", &["10.1.0.0/24", "fd00::/120"]);
    let mut ix = index(&[(metallb, &lb), (infoblox, &infoblox_pool_a())]);
    ix.check_consistency();
    let counts: Vec<(Kind, usize)> = ix
        .counts()
        .into_iter()
        .filter(|(k, _)| k.is_declared())
        .filter(|(_, n)| *n > 0)
        .collect();
    let mut want = vec![(infoblox, 1), (metallb, 1)];
    want.sort();
    assert_eq!(counts, want);
    assert_eq!(ix.len(), 2);
    // The IPv6 part alone moves to another space; then the pool goes.
    let Some(crate::model::Projection::Pool(p)) = project(metallb, &lb) else {
        panic!("a declared pool projects as a pool");
    };
    assert_eq!(p.allocatable.to_string(), "10.1.0.0-10.1.0.255");
    assert_eq!(
        p.other_family.as_deref().map(ToString::to_string),
        Some("fd00::-fd00::ff".to_owned())
    );
    ix.upsert(project(metallb, &with_space(lb.clone(), "lab")).unwrap());
    ix.check_consistency();
    assert!(ix.remove_pool(&p.key).is_some());
    ix.check_consistency();
    assert_eq!(ix.len(), 1);
}

#[test]
fn an_object_its_expression_cannot_read_is_not_judged() {
    let (infoblox, _) = kinds();
    let incluster = ipool(NS, "a", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let ix = index(&[(Kind::InClusterIPPool, &incluster)]);
    for (spec, problem) in [
        (
            json!({"cidrs": ["10.0.0.0/24"]}),
            "addresses (object.spec.subnets.map(s, s.cidr)): evaluation failed: No such key: subnets",
        ),
        (
            json!({"subnets": [{"cidr": "10.0.0.300/24"}]}),
            r#"addresses (object.spec.subnets.map(s, s.cidr)): [0]: Invalid value: "10.0.0.300/24": IPv4 octets must be between 0 and 255"#,
        ),
    ] {
        let obj = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha1", "kind": "InfobloxIPPool",
            "metadata": meta(Some("infra"), "broken"), "spec": spec});
        let v = create(infoblox, &obj, &ix);
        assert!(!v.allowed(), "{spec}");
        assert_eq!(
            v.unavailable.as_deref(),
            Some(format!("InfobloxIPPool infra/broken not judged: {problem}").as_str())
        );
        // In the view it hands out nothing, so it is not said to overlap anything.
        let Some(crate::model::Projection::Pool(p)) = project(infoblox, &obj) else {
            panic!("projected as a pool");
        };
        assert!(p.allocatable_sets().all(|s| s.is_empty()));
    }
}

#[test]
fn an_update_is_judged_on_what_it_adds_to_a_declared_pool() {
    let (infoblox, _) = kinds();
    let incluster = ipool(NS, "a", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let old = infoblox_pool_a();
    let ix = index(&[(Kind::InClusterIPPool, &incluster), (infoblox, &old)]);
    // A label and an unchanged overlap: nothing to say (X5).
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"team": "net"});
    assert!(update(infoblox, &relabelled, &old, &ix).allowed());
    // A new subnet overlapping: denied, naming only the new overlap's entry.
    let grown = ib_pool(
        "infra",
        "pool-a",
        &["192.168.0.0/24", "10.0.0.128/25", "10.0.0.8/29"],
    );
    assert_eq!(
        errors(&update(infoblox, &grown, &old, &ix)),
        [
            r#"spec.subnets[2].cidr: Invalid value: "10.0.0.8/29": overlaps InClusterIPPool ns/a (10.0.0.8-10.0.0.15)"#
        ]
    );
}

#[test]
fn p9_refuses_the_delete_of_a_held_declared_pool_when_the_declaration_asks() {
    let (infoblox, metallb) = kinds();
    let ib = infoblox_pool_a();
    let held = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": meta(Some("infra"), "ip-1"),
        "spec": {"address": "192.168.0.10", "prefix": 24, "claimRef": {"name": "c"},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InfobloxIPPool", "name": "pool-a"}}});
    let ix = index(&[(infoblox, &ib), (Kind::IPAddress, &held)]);
    let v = judge(
        infoblox,
        Operation::Delete,
        None,
        Some(&ib),
        &ix,
        Options::default(),
    );
    assert_eq!(
        errors(&v),
        ["metadata.name: Forbidden: Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed. Held by: infra/ip-1 (192.168.0.10)"]
    );
    // MetalLB's declaration does not ask (protectDelete unset).
    let lb = lb_pool("infra", "pool-a", &["192.168.0.0/24"]);
    let ix = index(&[(metallb, &lb), (Kind::IPAddress, &held)]);
    assert!(delete(metallb, &lb, &ix).allowed());
}

fn address_in(name: &str, ip: &str, prefix: i64, group: &str, kind: &str, pool: &str) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": meta(Some("metallb-system"), name),
        "spec": {"address": ip, "prefix": prefix, "claimRef": {"name": format!("claim-{name}")},
            "poolRef": {"apiGroup": group, "kind": kind, "name": pool}}})
}

#[test]
fn a8_a9_judge_an_ipaddress_whose_pool_ref_names_a_declared_kind() {
    let (_, metallb) = kinds();
    let lb = lb_pool("metallb-system", "lb", &["10.1.0.0/28", "fd00::/120"]);
    let ix = index(&[(metallb, &lb)]);
    let named =
        |name, ip, prefix| address_in(name, ip, prefix, "metallb.io", "IPAddressPool", "lb");
    // Inside either family of the pool: allowed.
    for (ip, prefix) in [("10.1.0.5", 24), ("fd00::17", 64)] {
        let v = create(Kind::IPAddress, &named("in", ip, prefix), &ix);
        assert!(v.allowed(), "{ip}: {:?}", errors(&v));
    }
    // Outside: A8, showing the pool's set of the address's family.
    assert_eq!(
        errors(&create(
            Kind::IPAddress,
            &named("out", "fd00::1:1", 64),
            &ix
        )),
        [
            r#"spec.address: Invalid value: "fd00::1:1": not an allocatable address of IPAddressPool metallb-system/lb: fd00::-fd00::ff"#
        ]
    );
    assert_eq!(
        errors(&create(
            Kind::IPAddress,
            &named("out", "10.1.0.16", 24),
            &ix
        )),
        [
            r#"spec.address: Invalid value: "10.1.0.16": not an allocatable address of IPAddressPool metallb-system/lb: 10.1.0.0-10.1.0.15"#
        ]
    );
    // A second holder of one address in the pool's space: A9.
    let first = named("first", "10.1.0.5", 24);
    let ix = index(&[(metallb, &lb), (Kind::IPAddress, &first)]);
    assert_eq!(
        errors(&create(
            Kind::IPAddress,
            &named("second", "10.1.0.5", 24),
            &ix
        )),
        [
            r#"spec.address: Duplicate value: "10.1.0.5": 10.1.0.5 is already held by IPAddress metallb-system/first"#
        ]
    );
}

#[test]
fn cp3_sees_the_second_family_of_a_declared_pool() {
    let (_, metallb) = kinds();
    let prod = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "prod", "namespace": "team-a"},
        "spec": {"controlPlaneEndpoint": {"host": "fd00::20", "port": 6443}}
    });
    let lb = lb_pool("metallb-system", "lb", &["10.1.0.0/28", "fd00::/120"]);
    let ix = index(&[(Kind::Cluster, &prod)]);
    assert_eq!(
        errors(&create(metallb, &lb, &ix)),
        [
            r#"spec.addresses[1]: Invalid value: "fd00::/120": can hand out fd00::20, the control-plane endpoint of Cluster team-a/prod: exclude it (narrow the pool's ranges around it)"#
        ]
    );
}
