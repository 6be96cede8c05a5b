//! RI1-RI6 and SA1-SA3: addresses held outside pools by SpiderReservedIPs and VSphereMachines'
//! static addresses, against pools, address objects and each other.

use serde_json::{json, Value};

use crate::field::Verdict;
use crate::kinds::Kind;
use crate::rules::test_support::{
    create, create_with, errors, index, update, warnings, with_space,
};
use crate::rules::{Options, OverlapScope};

fn reserved(name: &str, version: Value, ips: Value) -> Value {
    json!({
        "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderReservedIP",
        "metadata": {"name": name},
        "spec": {"ipVersion": version, "ips": ips}
    })
}

fn machine(name: &str, addrs: &[&str]) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "VSphereMachine",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"template": "t", "network": {"devices": [{"networkName": "n", "ipAddrs": addrs}]}}
    })
}

fn pool(name: &str, range: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"addresses": [range], "prefix": 24, "gateway": "10.0.0.1"}
    })
}

fn spider_pool(name: &str, ips: &str) -> Value {
    json!({
        "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
        "metadata": {"name": name},
        "spec": {"subnet": "10.0.0.0/24", "ips": [ips]}
    })
}

fn address(name: &str, ip: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"address": ip, "prefix": 24, "gateway": "10.0.0.1", "claimRef": {"name": name},
                 "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "nodes"}}
    })
}

fn rules(v: &Verdict) -> Vec<String> {
    v.errors.iter().map(|e| e.rule.to_string()).collect()
}

#[test]
fn ri1_ri2_the_spec_as_spiderpool_reads_it() {
    let ix = index(&[]);
    let v = create(
        Kind::SpiderReservedIP,
        &reserved("r", json!(4), json!([])),
        &ix,
    );
    assert_eq!(
        errors(&v),
        ["spec.ips: Required value: requires at least one item"]
    );
    let v = create(
        Kind::SpiderReservedIP,
        &reserved(
            "r",
            json!(4),
            json!(["10.0.0.1", "10.0.0.0/24", "fd00::1", 7]),
        ),
        &ix,
    );
    assert_eq!(rules(&v), ["RI1", "RI1", "RI1"]);
    assert!(
        errors(&v)[1].contains("is not an IPv4 IP or range"),
        "{v:?}"
    );
    let v = create(
        Kind::SpiderReservedIP,
        &reserved("r", json!(5), json!(["10.0.0.1"])),
        &ix,
    );
    assert_eq!(rules(&v), ["RI2"]);
    // No ipVersion: the first entry's family, as Spiderpool's mutating webhook would fill in.
    let mut no_version = reserved("r", json!(6), json!(["fd00::1", "10.0.0.1"]));
    no_version["spec"]
        .as_object_mut()
        .unwrap()
        .remove("ipVersion");
    let v = create(Kind::SpiderReservedIP, &no_version, &ix);
    assert_eq!(errors(&v), ["spec.ips[1]: Invalid value: \"10.0.0.1\": is not an IPv6 IP or range: the ReservedIP's ipVersion is 6"]);
    // ipVersion never changes; a broken spec stored already is not refused again (X5).
    let old = reserved("r", json!(4), json!(["10.0.0.1"]));
    let v = update(
        Kind::SpiderReservedIP,
        &reserved("r", json!(6), json!(["fd00::1"])),
        &old,
        &ix,
    );
    assert_eq!(
        errors(&v),
        ["spec.ipVersion: Forbidden: is not changeable (was 4)"]
    );
    // Left out, it is the first entry's family: the same family passes, another does not.
    let mut unset = reserved("r", json!(4), json!(["10.0.0.2"]));
    unset["spec"].as_object_mut().unwrap().remove("ipVersion");
    assert!(errors(&update(Kind::SpiderReservedIP, &unset, &old, &ix)).is_empty());
    unset["spec"]["ips"] = json!(["fd00::2"]);
    assert_eq!(
        errors(&update(Kind::SpiderReservedIP, &unset, &old, &ix)),
        ["spec.ipVersion: Forbidden: is not changeable (was 4)"]
    );
    let broken = reserved("r", json!(4), json!(["10.0.0.1", "x"]));
    let mut relabelled = broken.clone();
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    assert!(errors(&update(Kind::SpiderReservedIP, &relabelled, &broken, &ix)).is_empty());
}

#[test]
fn ri3_reserved_ips_of_one_family_do_not_overlap_in_their_space() {
    let r1 = reserved("r1", json!(4), json!(["10.0.0.20-10.0.0.22"]));
    let r6 = reserved("r6", json!(6), json!(["fd00::1"]));
    let ix = index(&[(Kind::SpiderReservedIP, &r1), (Kind::SpiderReservedIP, &r6)]);
    let v = create(
        Kind::SpiderReservedIP,
        &reserved("r2", json!(4), json!(["10.0.0.22-10.0.0.30"])),
        &ix,
    );
    assert_eq!(
        errors(&v),
        ["spec.ips: Forbidden: overlaps with ReservedIP r1 (10.0.0.22)"]
    );
    assert!(errors(&create(
        Kind::SpiderReservedIP,
        &reserved("r2", json!(4), json!(["10.0.0.23"])),
        &ix
    ))
    .is_empty());
    // Itself, on an update that adds nothing new against others, is no overlap (X5).
    let grown = reserved("r1", json!(4), json!(["10.0.0.20-10.0.0.23"]));
    // In another address space the same addresses are no overlap.
    let east = with_space(reserved("r2", json!(4), json!(["10.0.0.22"])), "east");
    assert!(errors(&create(Kind::SpiderReservedIP, &east, &ix)).is_empty());
    assert!(errors(&update(Kind::SpiderReservedIP, &grown, &r1, &ix)).is_empty());
    let off = Options {
        overlap_scope: OverlapScope::Off,
        ..Options::default()
    };
    let v = create_with(
        Kind::SpiderReservedIP,
        &reserved("r2", json!(4), json!(["10.0.0.22"])),
        &ix,
        off,
    );
    assert!(errors(&v).is_empty());
}

#[test]
fn ri4_sa1_an_address_reserved_or_static_is_refused_in_its_space() {
    let r = reserved("vip", json!(4), json!(["10.0.0.20"]));
    let m = machine("db-0", &["10.0.0.30/24"]);
    let ix = index(&[(Kind::SpiderReservedIP, &r), (Kind::VSphereMachine, &m)]);
    let v = create(Kind::IPAddress, &address("web-1", "10.0.0.20"), &ix);
    assert!(errors(&v).contains(&"spec.address: Invalid value: \"10.0.0.20\": 10.0.0.20 is reserved by SpiderReservedIP vip: no pool may hand it out; release it from the ReservedIP first".to_string()), "{v:?}");
    let v = create(Kind::IPAddress, &address("web-1", "10.0.0.30"), &ix);
    assert!(errors(&v).contains(&"spec.address: Invalid value: \"10.0.0.30\": 10.0.0.30 is the static address of VSphereMachine.infrastructure.cluster.x-k8s.io team-a/db-0: two machines would share it".to_string()), "{v:?}");
    assert!(!rules(&create(
        Kind::IPAddress,
        &address("web-1", "10.0.0.31"),
        &ix
    ))
    .contains(&"SA1".to_string()));
    // In another address space (the pool's), neither holds the address.
    let east = with_space(pool("nodes", "10.0.0.10-10.0.0.50"), "east");
    let ix = index(&[
        (Kind::SpiderReservedIP, &r),
        (Kind::VSphereMachine, &m),
        (Kind::InClusterIPPool, &east),
    ]);
    let v = create(Kind::IPAddress, &address("web-1", "10.0.0.20"), &ix);
    assert!(!rules(&v).contains(&"RI4".to_string()), "{v:?}");
}

#[test]
fn ri5_sa2_a_pool_gaining_a_held_address_is_refused_but_a_spider_pool_may_list_reserved_ones() {
    let r = reserved("vip", json!(4), json!(["10.0.0.20"]));
    let m = machine("db-0", &["10.0.0.30/24"]);
    let ix = index(&[(Kind::SpiderReservedIP, &r), (Kind::VSphereMachine, &m)]);
    let v = create(
        Kind::InClusterIPPool,
        &pool("nodes", "10.0.0.10-10.0.0.50"),
        &ix,
    );
    assert_eq!(rules(&v), ["RI5", "SA2"]);
    assert!(errors(&v)[0].ends_with("can hand out 10.0.0.20, reserved by SpiderReservedIP vip: exclude it (spec.excludedAddresses)"), "{v:?}");
    // X5: an update that gains nothing held is not refused for what it had.
    let old = pool("nodes", "10.0.0.10-10.0.0.50");
    let v = update(
        Kind::InClusterIPPool,
        &pool("nodes", "10.0.0.10-10.0.0.51"),
        &old,
        &ix,
    );
    assert!(errors(&v).is_empty(), "{v:?}");
    // Spiderpool never hands out a ReservedIP's address: only the static address is refused.
    let v = create(
        Kind::SpiderIPPool,
        &spider_pool("pods", "10.0.0.10-10.0.0.50"),
        &ix,
    );
    assert_eq!(rules(&v), ["SA2"]);
    assert!(errors(&create(
        Kind::SpiderIPPool,
        &spider_pool("pods", "10.0.0.10-10.0.0.25"),
        &ix
    ))
    .is_empty());
}

#[test]
fn ri6_reserving_an_address_in_use_is_a_warning() {
    let nodes = pool("nodes", "10.0.0.10-10.0.0.50");
    let a = address("web-1", "10.0.0.20");
    let ix = index(&[(Kind::InClusterIPPool, &nodes), (Kind::IPAddress, &a)]);
    let v = create(
        Kind::SpiderReservedIP,
        &reserved("vip", json!(4), json!(["10.0.0.20"])),
        &ix,
    );
    assert!(v.errors.is_empty(), "{v:?}");
    assert_eq!(warnings(&v).len(), 2, "{v:?}");
    assert!(warnings(&v)[0].contains("10.0.0.20 (IPAddress team-a/web-1)"));
    // A large range finds the holder through the pools of its space.
    let v = create(
        Kind::SpiderReservedIP,
        &reserved("vip", json!(4), json!(["10.0.0.0-10.0.255.255"])),
        &ix,
    );
    assert!(
        warnings(&v)[0].contains("10.0.0.20 (IPAddress team-a/web-1)"),
        "{v:?}"
    );
}

#[test]
fn sa3_a_static_address_in_use_in_a_pool_or_on_another_machine_is_refused() {
    let nodes = pool("nodes", "10.0.0.10-10.0.0.50");
    let a = address("web-1", "10.0.0.60");
    let other = machine("db-1", &["10.0.0.70/24"]);
    let ix = index(&[
        (Kind::InClusterIPPool, &nodes),
        (Kind::IPAddress, &a),
        (Kind::VSphereMachine, &other),
    ]);
    let v = create(
        Kind::VSphereMachine,
        &machine(
            "db-0",
            &[
                "10.0.0.30/24",
                "10.0.0.60/24",
                "10.0.0.70/24",
                "10.0.0.80/24",
            ],
        ),
        &ix,
    );
    assert_eq!(
        errors(&v),
        [
            "spec.network.devices[0].ipAddrs[0]: Invalid value: \"10.0.0.30/24\": 10.0.0.30 is allocatable in InClusterIPPool team-a/nodes: two machines would share it",
            "spec.network.devices[0].ipAddrs[1]: Invalid value: \"10.0.0.60/24\": 10.0.0.60 is held by IPAddress team-a/web-1: two machines would share it",
            "spec.network.devices[0].ipAddrs[2]: Invalid value: \"10.0.0.70/24\": 10.0.0.70 is the static address of VSphereMachine.infrastructure.cluster.x-k8s.io team-a/db-1: two machines would share it",
        ]
    );
    // X5: the machine keeps its address; a template holds none.
    let old = machine("db-1", &["10.0.0.70/24"]);
    let mut edited = old.clone();
    edited["spec"]["template"] = json!("t2");
    assert!(errors(&update(Kind::VSphereMachine, &edited, &old, &ix)).is_empty());
    let template = json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "VSphereMachineTemplate",
        "metadata": {"name": "t", "namespace": "team-a"},
        "spec": {"template": {"spec": {"template": "t", "network": {"devices": [{"networkName": "n", "ipAddrs": ["10.0.0.30/24"]}]}}}}
    });
    assert!(errors(&create(Kind::VSphereMachineTemplate, &template, &ix)).is_empty());
}

#[test]
fn the_audit_reports_stored_conflicts_and_usage_counts_held_addresses() {
    let nodes = pool("nodes", "10.0.0.10-10.0.0.19");
    let r = reserved("vip", json!(4), json!(["10.0.0.15-10.0.0.16"]));
    let r2 = reserved("vip2", json!(4), json!(["10.0.0.16"]));
    let m = machine("db-0", &["10.0.0.18/24"]);
    let ix = index(&[
        (Kind::InClusterIPPool, &nodes),
        (Kind::SpiderReservedIP, &r),
        (Kind::SpiderReservedIP, &r2),
        (Kind::VSphereMachine, &m),
    ]);
    let ctx = crate::rules::Ctx {
        index: &ix,
        options: Options::default(),
        now: std::time::Instant::now(),
    };
    let mut out = Vec::new();
    for h in ix.outside_holders() {
        crate::rules::stored::holder_findings(&ctx, h, &mut out);
    }
    let found: Vec<String> = out
        .into_iter()
        .map(|(k, e)| format!("{k}: {} {}", e.rule, e))
        .collect();
    for rule in ["RI3", "RI5", "SA3"] {
        assert!(found.iter().any(|f| f.contains(rule)), "{rule}: {found:?}");
    }
    let usage = ix.pool_usage();
    assert_eq!((usage[0].allocatable, usage[0].used), (10, 3));
    let free = ix.free_of(ix.pools().next().unwrap());
    assert_eq!(free.len(), 7);
}
