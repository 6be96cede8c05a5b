//! Metal3 rules (MP, MC, MA), each against objects that trigger it and objects that do not.

use super::*;
use crate::field::{DenyReason, ErrorType};
use crate::index::Index;
use crate::rules::test_support::{
    create, delete, eco_object as object, eco_old_object as old_object, errors as texts, index,
    judge, update, warnings, with_space,
};
use crate::rules::Options;
use crate::rules::OverlapScope;
use serde_json::json;

// === helpers ===

fn m3pool(ns: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec})
}

fn m3addr(ns: &str, name: &str, address: &str, pool: &str) -> Value {
    json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"address": address, "prefix": 24, "pool": {"name": pool, "namespace": ns},
            "claim": {"name": format!("claim-{name}"), "namespace": ns}}})
}

fn ipool(ns: &str, name: &str, addresses: &[&str]) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"addresses": addresses, "prefix": 24}})
}

fn spool(name: &str, subnet: &str, ips: &[&str]) -> Value {
    json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
        "metadata": {"name": name},
        "spec": {"subnet": subnet, "ips": ips}})
}

// === IPPool ===

#[test]
fn captures_pass_with_only_their_real_warnings() {
    let ix = Index::new();
    let v = create(
        Kind::Metal3IPPool,
        &object("metal3-ippool-create.json"),
        &ix,
    );
    assert!(v.allowed(), "{:?}", texts(&v));
    assert_eq!(v.rules(), ["MP1"]);
    let v = update(
        Kind::Metal3IPPool,
        &object("metal3-ippool-update-spec.json"),
        &old_object("metal3-ippool-update-spec.json"),
        &ix,
    );
    assert!(v.allowed(), "{:?}", texts(&v));
    let v = update(
        Kind::Metal3IPPool,
        &object("metal3-ippool-update-label.json"),
        &old_object("metal3-ippool-update-label.json"),
        &ix,
    );
    assert_eq!(v, Verdict::default());
    let v = delete(
        Kind::Metal3IPPool,
        &old_object("metal3-ippool-delete.json"),
        &ix,
    );
    assert!(v.allowed());
}

#[test]
fn mp1_start_after_end() {
    let obj = m3pool(
        "ns",
        "p",
        json!({"namePrefix": "p", "prefix": 24,
            "pools": [{"start": "10.0.0.20", "end": "10.0.0.10"}, {"subnet": "10.0.1.0/24", "start": "10.0.2.1"}]}),
    );
    let v = create(Kind::Metal3IPPool, &obj, &Index::new());
    assert_eq!(
        texts(&v),
        [
            r#"spec.pools[0].end: Invalid value: "10.0.0.10": must not be before start 10.0.0.20"#,
            r#"spec.pools[1].start: Invalid value: "10.0.2.1": must be inside subnet 10.0.1.0/24"#,
        ]
    );
    assert!(v.errors.iter().all(|e| e.rule == "MP1"));
}

#[test]
fn mp1_entry_needs_start_end_or_subnet() {
    let obj = m3pool(
        "ns",
        "p",
        json!({"namePrefix": "p", "pools": [{"prefix": 24}]}),
    );
    let v = create(Kind::Metal3IPPool, &obj, &Index::new());
    assert_eq!(
        texts(&v),
        ["spec.pools[0]: Required value: at least one of start, end or subnet is required"]
    );
}

#[test]
fn mp2_ipv4_prefix_above_32_is_denied() {
    // The CRD allows 128 for any family; an IPv4 pool with /40 would hand out nonsense.
    let obj = m3pool(
        "ns",
        "p",
        json!({"namePrefix": "p", "prefix": 40, "pools": [{"subnet": "10.0.0.0/24"}]}),
    );
    let v = create(Kind::Metal3IPPool, &obj, &Index::new());
    assert_eq!(
        texts(&v),
        ["spec.prefix: Invalid value: 40: prefix is too large for an IPv4 address"]
    );
    assert_eq!(v.errors[0].rule, "MP2");
}

#[test]
fn mp3_pre_allocation_outside_the_pools_is_denied() {
    let mut obj = object("metal3-ippool-create.json");
    obj["spec"]["preAllocations"]["claim2"] = json!("192.168.0.99");
    let v = create(Kind::Metal3IPPool, &obj, &Index::new());
    assert_eq!(v.rules(), ["MP1", "MP3"]);
    assert_eq!(
        v.errors[0].path,
        "spec.preAllocations[claim2]",
        "{:?}",
        texts(&v)
    );
}

#[test]
fn mp4_name_prefix_and_allocation_strategy_are_immutable() {
    let old = old_object("metal3-ippool-update-spec.json");
    let mut obj = object("metal3-ippool-update-spec.json");
    obj["spec"]["namePrefix"] = json!("other");
    obj["spec"]["allocationStrategy"] = json!("random");
    let v = update(Kind::Metal3IPPool, &obj, &old, &Index::new());
    assert_eq!(
        texts(&v),
        [
            r#"spec.namePrefix: Invalid value: "other": field is immutable (was "test1-prov")"#,
            r#"spec.allocationStrategy: Invalid value: "random": field is immutable (was "sequential")"#,
        ]
    );
}

#[test]
fn mp4_held_addresses_stay_inside_the_pools() {
    let old = old_object("metal3-ippool-update-spec.json");
    let held = m3addr("capture-eco", "a", "192.168.0.25", "provisioning-pool");
    // A CAPI IPAddress served from the same Metal3 pool holds too.
    let capi = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": "c", "namespace": "capture-eco"},
        "spec": {"address": "192.168.0.28", "prefix": 24, "claimRef": {"name": "c"},
            "poolRef": {"apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "provisioning-pool"}}});
    let ix = index(&[
        (Kind::Metal3IPPool, &old),
        (Kind::Metal3IPAddress, &held),
        (Kind::IPAddress, &capi),
    ]);
    let mut obj = old.clone();
    obj["spec"]["pools"][0]["end"] = json!("192.168.0.20");
    let v = update(Kind::Metal3IPPool, &obj, &old, &ix);
    assert_eq!(v.errors.len(), 1, "{:?}", texts(&v));
    assert_eq!(v.errors[0].rule, "MP4");
    assert_eq!(v.errors[0].path, "spec.pools");
    assert_eq!(
        v.errors[0].detail,
        "pool addresses do not contain allocated addresses: capture-eco/c 192.168.0.28, capture-eco/a 192.168.0.25"
    );
}

#[test]
fn mp4_ratchet_leaves_addresses_that_were_never_allocatable() {
    // ip-address-manager handed out the gateway before ipam-guard was installed; a later,
    // unrelated spec change is not held up by it.
    let old = object("metal3-ippool-create.json");
    let gw = m3addr("capture-eco", "gw", "192.168.1.1", "provisioning-pool");
    let ix = index(&[(Kind::Metal3IPPool, &old), (Kind::Metal3IPAddress, &gw)]);
    let mut obj = old.clone();
    obj["spec"]["preAllocations"]["claim9"] = json!("192.168.0.20");
    let v = update(Kind::Metal3IPPool, &obj, &old, &ix);
    assert!(v.allowed(), "{:?}", texts(&v));
}

#[test]
fn mp4_delete_is_forbidden_while_addresses_are_held() {
    let old = old_object("metal3-ippool-delete.json");
    let a = object("metal3-ipaddress-create.json");
    let ix = index(&[(Kind::Metal3IPPool, &old), (Kind::Metal3IPAddress, &a)]);
    let v = delete(Kind::Metal3IPPool, &old, &ix);
    assert_eq!(v.reason, DenyReason::Forbidden);
    assert_eq!(v.errors[0].rule, "MP4");
    assert_eq!(v.errors[0].kind, ErrorType::Forbidden);
    assert_eq!(
        v.errors[0].to_string(),
        "metadata.name: Forbidden: Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed. Held by: capture-eco/test1-prov-192-168-0-13 (192.168.0.13)"
    );
    // Same escape hatch as the in-cluster pools.
    let mut skip = old.clone();
    skip["metadata"]["annotations"] =
        json!({"ipam.cluster.x-k8s.io/skip-validate-delete-webhook": ""});
    assert!(delete(Kind::Metal3IPPool, &skip, &ix).allowed());
    // Another pool of the same name in another namespace holds nothing of this one.
    let mut elsewhere = old.clone();
    elsewhere["metadata"]["namespace"] = json!("other");
    assert!(delete(Kind::Metal3IPPool, &elsewhere, &ix).allowed());
}

#[test]
fn p11_deleting_metal3_pool_passes_every_update() {
    let old = old_object("metal3-ippool-update-spec.json");
    let mut obj = old.clone();
    obj["spec"]["namePrefix"] = json!("other");
    obj["metadata"]["deletionTimestamp"] = json!("2026-11-21T23:22:32Z");
    assert!(update(Kind::Metal3IPPool, &obj, &old, &Index::new()).allowed());
}

#[test]
fn x5_unchanged_metal3_pool_spec_is_never_denied() {
    let mut old = old_object("metal3-ippool-update-label.json");
    old["spec"]["pools"][0]["end"] = json!("192.168.0.1");
    let mut obj = old.clone();
    obj["metadata"]["labels"]["x"] = json!("y");
    assert_eq!(
        update(Kind::Metal3IPPool, &obj, &old, &Index::new()),
        Verdict::default()
    );
    // A spec change elsewhere is judged on what it adds, not on the old reversed range.
    obj["spec"]["dnsServers"] = json!(["8.8.8.8"]);
    let v = update(Kind::Metal3IPPool, &obj, &old, &Index::new());
    assert!(v.allowed(), "{:?}", texts(&v));
}

#[test]
fn p10_metal3_pool_overlaps_in_cluster_and_spiderpool_in_one_space() {
    let incluster = ipool("capture-eco", "nodes", &["192.168.0.0/28"]);
    let spider = spool("pods", "192.168.1.0/24", &["192.168.1.200-192.168.1.210"]);
    let ix = index(&[
        (Kind::InClusterIPPool, &incluster),
        (Kind::SpiderIPPool, &spider),
    ]);
    let v = create(
        Kind::Metal3IPPool,
        &object("metal3-ippool-create.json"),
        &ix,
    );
    assert_eq!(
        texts(&v),
        [
            r#"spec.pools[0]: Invalid value: "192.168.0.10-192.168.0.30": overlaps InClusterIPPool capture-eco/nodes (192.168.0.10-192.168.0.15)"#,
            r#"spec.pools[2]: Invalid value: "192.168.1.128/25": overlaps SpiderIPPool.spiderpool.spidernet.io pods (192.168.1.200-192.168.1.210)"#,
        ]
    );
    assert!(v.errors.iter().all(|e| e.rule == "P10"));
    // The other direction: an in-cluster pool meets the Metal3 pool the index holds.
    let m3 = object("metal3-ippool-create.json");
    let ix = index(&[(Kind::Metal3IPPool, &m3)]);
    let v = create(Kind::InClusterIPPool, &incluster, &ix);
    assert_eq!(v.rules(), ["P10"]);
    assert!(texts(&v)[0].contains("IPPool.ipam.metal3.io capture-eco/provisioning-pool"));
}

#[test]
fn p10_metal3_pool_in_another_address_space_overlaps_nothing() {
    let incluster = with_space(ipool("capture-eco", "nodes", &["192.168.0.0/28"]), "dc2");
    let spider = spool("pods", "192.168.1.0/24", &["192.168.1.200-192.168.1.210"]);
    let ix = index(&[
        (Kind::InClusterIPPool, &incluster),
        (Kind::SpiderIPPool, &with_space(spider, "dc2")),
    ]);
    let v = create(
        Kind::Metal3IPPool,
        &object("metal3-ippool-create.json"),
        &ix,
    );
    assert!(v.allowed(), "{:?}", texts(&v));
    // Moving the Metal3 pool into dc2 is judged as a whole.
    let old = object("metal3-ippool-create.json");
    let obj = with_space(old.clone(), "dc2");
    let v = update(Kind::Metal3IPPool, &obj, &old, &ix);
    assert_eq!(v.rules(), ["P10"]);
}

#[test]
fn p10_namespace_scope_keeps_metal3_pools_apart_but_not_from_spiderpool() {
    let incluster = ipool("elsewhere", "nodes", &["192.168.0.0/28"]);
    let spider = spool("pods", "192.168.1.0/24", &["192.168.1.200-192.168.1.210"]);
    let ix = index(&[
        (Kind::InClusterIPPool, &incluster),
        (Kind::SpiderIPPool, &spider),
    ]);
    let options = Options {
        overlap_scope: OverlapScope::Namespace,
        ..Options::default()
    };
    let obj = object("metal3-ippool-create.json");
    let v = judge(
        Kind::Metal3IPPool,
        Operation::Create,
        Some(&obj),
        None,
        &ix,
        options,
    );
    // The namespaced pool of another namespace is out of scope; the cluster-scoped one is not.
    assert_eq!(v.errors.len(), 1, "{:?}", texts(&v));
    assert!(texts(&v)[0].contains("SpiderIPPool.spiderpool.spidernet.io pods"));
    let off = Options {
        overlap_scope: OverlapScope::Off,
        ..Options::default()
    };
    let v = judge(
        Kind::Metal3IPPool,
        Operation::Create,
        Some(&obj),
        None,
        &ix,
        off,
    );
    assert!(v.allowed());
}

// === IPClaim ===

#[test]
fn mc_captures_pass() {
    let ix = Index::new();
    assert_eq!(
        create(
            Kind::Metal3IPClaim,
            &object("metal3-ipclaim-create.json"),
            &ix
        ),
        Verdict::default()
    );
    let v = update(
        Kind::Metal3IPClaim,
        &object("metal3-ipclaim-update-label.json"),
        &old_object("metal3-ipclaim-update-label.json"),
        &ix,
    );
    assert_eq!(v, Verdict::default());
}

#[test]
fn mc1_pool_name_is_required() {
    let mut obj = object("metal3-ipclaim-create.json");
    obj["spec"]["pool"] = json!({"namespace": "capture-eco"});
    let v = create(Kind::Metal3IPClaim, &obj, &Index::new());
    assert_eq!(texts(&v), ["spec.pool.name: Required value"]);
    assert_eq!(v.errors[0].kind.reason(), "FieldValueRequired");
}

#[test]
fn mc2_pool_namespace_must_be_the_claims() {
    let mut obj = object("metal3-ipclaim-create.json");
    obj["spec"]["pool"]["namespace"] = json!("elsewhere");
    let v = create(Kind::Metal3IPClaim, &obj, &Index::new());
    assert_eq!(
        texts(&v),
        [
            r#"spec.pool.namespace: Invalid value: "elsewhere": must be the object's own namespace "capture-eco""#
        ]
    );
}

#[test]
fn mc3_spec_is_immutable() {
    let v = update(
        Kind::Metal3IPClaim,
        &object("metal3-ipclaim-update-spec.json"),
        &old_object("metal3-ipclaim-update-spec.json"),
        &Index::new(),
    );
    assert_eq!(
        texts(&v),
        [
            r#"spec.pool.name: Invalid value: "provisioning-pool-b": field is immutable (was "provisioning-pool")"#
        ]
    );
}

#[test]
fn mc4_ip_address_annotation() {
    let pool = object("metal3-ippool-create.json");
    let ix = index(&[(Kind::Metal3IPPool, &pool)]);
    let mut obj = object("metal3-ipclaim-create.json");
    obj["metadata"]["annotations"] = json!({"ipAddress": "192.168.0.300"});
    let v = create(Kind::Metal3IPClaim, &obj, &ix);
    assert_eq!(
        texts(&v),
        [
            r#"metadata.annotations[ipAddress]: Invalid value: "192.168.0.300": IPv4 octets must be between 0 and 255"#
        ]
    );
    obj["metadata"]["annotations"] = json!({"ipAddress": "192.168.0.99"});
    let v = create(Kind::Metal3IPClaim, &obj, &ix);
    assert!(v.allowed());
    assert_eq!(
        warnings(&v),
        ["metadata.annotations[ipAddress]: 192.168.0.99 is not an allocatable address of IPPool.ipam.metal3.io capture-eco/provisioning-pool: 192.168.0.10-192.168.0.30, 192.168.1.2-192.168.1.63, 192.168.1.129-192.168.1.254"]
    );
    obj["metadata"]["annotations"] = json!({"ipAddress": "192.168.0.20"});
    assert_eq!(create(Kind::Metal3IPClaim, &obj, &ix), Verdict::default());
    // Empty is how the provider spells "no request".
    let mut empty = obj.clone();
    empty["metadata"]["annotations"] = json!({"ipAddress": ""});
    assert_eq!(create(Kind::Metal3IPClaim, &empty, &ix), Verdict::default());
    // Updates judge the annotation only when it changes.
    let mut old = obj.clone();
    old["metadata"]["annotations"] = json!({"ipAddress": "bad"});
    let mut same_bad = old.clone();
    same_bad["metadata"]["labels"]["x"] = json!("y");
    assert!(update(Kind::Metal3IPClaim, &same_bad, &old, &ix).allowed());
    let mut to_bad = obj.clone();
    to_bad["metadata"]["annotations"] = json!({"ipAddress": "10.0.0.01"});
    assert_eq!(
        update(Kind::Metal3IPClaim, &to_bad, &obj, &ix).rules(),
        ["MC4"]
    );
}

// === IPAddress ===

#[test]
fn ma_captures_pass() {
    let pool = object("metal3-ippool-create.json");
    let ix = index(&[(Kind::Metal3IPPool, &pool)]);
    let v = create(
        Kind::Metal3IPAddress,
        &object("metal3-ipaddress-create.json"),
        &ix,
    );
    assert_eq!(v, Verdict::default());
    for f in [
        "metal3-ipaddress-update-label.json",
        "metal3-ipaddress-update-finalizer.json",
    ] {
        let v = update(Kind::Metal3IPAddress, &object(f), &old_object(f), &ix);
        assert_eq!(v, Verdict::default(), "{f}");
    }
}

#[test]
fn ma1_address_prefix_and_gateway_as_a1_to_a3() {
    let mut obj = object("metal3-ipaddress-create.json");
    obj["spec"]["address"] = json!("192.168.0.013");
    obj["spec"]["prefix"] = json!(33);
    let v = create(Kind::Metal3IPAddress, &obj, &Index::new());
    assert_eq!(
        texts(&v),
        [
            r#"spec.address: Invalid value: "192.168.0.013": leading zeros are not allowed in an IPv4 octet"#,
            "spec.prefix: Invalid value: 33: prefix is too large for an IPv4 address",
        ]
    );
    let mut obj = object("metal3-ipaddress-create.json");
    obj["spec"]["gateway"] = json!("192.168.1.1");
    let v = create(Kind::Metal3IPAddress, &obj, &Index::new());
    assert_eq!(
        texts(&v),
        [
            r#"spec.gateway: Invalid value: "192.168.1.1": must be inside the address's subnet 192.168.0.0/25"#
        ]
    );
    obj["spec"]["gateway"] = json!("192.168.0.13");
    let v = create(Kind::Metal3IPAddress, &obj, &Index::new());
    assert_eq!(v.errors[0].detail, "must not be the same as the address");
    obj["spec"]["gateway"] = json!("fd00::1");
    let v = create(Kind::Metal3IPAddress, &obj, &Index::new());
    assert_eq!(v.rules(), ["MA1"]);
}

#[test]
fn ma2_refs_are_required_and_stay_in_the_namespace() {
    let mut obj = object("metal3-ipaddress-create.json");
    obj["spec"]["pool"] = json!({"namespace": "capture-eco"});
    obj["spec"]["claim"]["namespace"] = json!("other");
    let v = create(Kind::Metal3IPAddress, &obj, &Index::new());
    assert_eq!(
        texts(&v),
        [
            "spec.pool.name: Required value",
            r#"spec.claim.namespace: Invalid value: "other": must be the object's own namespace "capture-eco""#,
        ]
    );
}

#[test]
fn ma3_spec_is_immutable_but_finalizer_removal_passes() {
    let v = update(
        Kind::Metal3IPAddress,
        &object("metal3-ipaddress-update-spec.json"),
        &old_object("metal3-ipaddress-update-spec.json"),
        &Index::new(),
    );
    assert_eq!(
        texts(&v),
        [r#"spec.address: Invalid value: "192.168.0.14": field is immutable (was "192.168.0.13")"#]
    );
    let f = "metal3-ipaddress-update-finalizer.json";
    assert!(update(
        Kind::Metal3IPAddress,
        &object(f),
        &old_object(f),
        &Index::new()
    )
    .allowed());
}

#[test]
fn ma4_address_outside_the_pool_is_denied() {
    let pool = object("metal3-ippool-create.json");
    let ix = index(&[(Kind::Metal3IPPool, &pool)]);
    // The pool's gateway, which ip-address-manager would hand out from pools[1].
    let obj = m3addr("capture-eco", "gw", "192.168.1.1", "provisioning-pool");
    let v = create(Kind::Metal3IPAddress, &obj, &ix);
    assert_eq!(
        texts(&v),
        [
            r#"spec.address: Invalid value: "192.168.1.1": not an allocatable address of IPPool.ipam.metal3.io capture-eco/provisioning-pool: 192.168.0.10-192.168.0.30, 192.168.1.2-192.168.1.63, 192.168.1.129-192.168.1.254"#
        ]
    );
}

#[test]
fn ma4_duplicates_a_capi_address_in_the_same_space() {
    let m3 = object("metal3-ippool-create.json");
    let incl = ipool("capture-eco", "nodes", &["192.168.0.0/24"]);
    let capi = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": "c", "namespace": "capture-eco"},
        "spec": {"address": "192.168.0.13", "prefix": 24, "claimRef": {"name": "c"},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "nodes"}}});
    let ix = index(&[
        (Kind::Metal3IPPool, &m3),
        (Kind::InClusterIPPool, &incl),
        (Kind::IPAddress, &capi),
    ]);
    let v = create(
        Kind::Metal3IPAddress,
        &object("metal3-ipaddress-create.json"),
        &ix,
    );
    assert_eq!(
        texts(&v),
        [
            r#"spec.address: Duplicate value: "192.168.0.13": 192.168.0.13 is already held by IPAddress capture-eco/c"#
        ]
    );
    assert_eq!(v.errors[0].rule, "MA4");
    // The CAPI side sees the Metal3 holder too (A9).
    let m3a = object("metal3-ipaddress-create.json");
    let ix = index(&[
        (Kind::Metal3IPPool, &m3),
        (Kind::InClusterIPPool, &incl),
        (Kind::Metal3IPAddress, &m3a),
    ]);
    let v = create(Kind::IPAddress, &capi, &ix);
    assert_eq!(v.errors.len(), 1);
    assert_eq!(v.errors[0].rule, "A9");
    // Different spaces: no conflict.
    let incl = with_space(incl, "dc2");
    let ix = index(&[
        (Kind::Metal3IPPool, &m3),
        (Kind::InClusterIPPool, &incl),
        (Kind::IPAddress, &capi),
    ]);
    assert!(create(Kind::Metal3IPAddress, &m3a, &ix).allowed());
}

// === MP5: random allocation (ip-address-manager's own cases, in our words) ===

#[test]
fn mp5_random_needs_an_entry_the_provider_can_size() {
    let pool = |strategy: &str, pools: Value| {
        m3pool(
            "foo",
            "p",
            json!({"namePrefix": "p", "allocationStrategy": strategy, "pools": pools}),
        )
    };
    let ok = [
        json!([{"start": "192.168.0.1", "end": "192.168.0.10"}]),
        json!([{"subnet": "192.168.0.0/24"}]),
        json!([{"start": "192.168.0.1", "subnet": "192.168.0.0/24"}]),
        // 2^63-1 addresses after the network address: the largest a /65 offers.
        json!([{"subnet": "2001:db8::/65"}]),
    ];
    for pools in ok {
        let v = create(
            Kind::Metal3IPPool,
            &pool("random", pools.clone()),
            &Index::new(),
        );
        assert!(
            !v.rules().contains(&RuleId::MP5),
            "{pools}: {:?}",
            texts(&v)
        );
    }
    let refused = [
        (
            json!([{"start": "192.168.0.1"}]),
            "spec.pools[0]",
            "a start without an end or a subnet has no size to pick from",
        ),
        (
            json!([{"start": "192.168.0.1", "end": "192.168.0.10"}, {"start": "192.168.0.1"}]),
            "spec.pools[1]",
            "a start without",
        ),
        (
            json!([{"subnet": "2001:db8::/32"}]),
            "spec.pools[0]",
            "it holds 79228162514264337593543950335 addresses, more than the 9223372036854775807",
        ),
        (
            json!([{"subnet": "2001:db8::/64"}]),
            "spec.pools[0]",
            "it holds 18446744073709551615 addresses",
        ),
        (
            json!([{"end": "192.168.0.10"}]),
            "spec.pools[0]",
            "an end without a start or a subnet",
        ),
    ];
    for (pools, at, why) in refused {
        let v = create(
            Kind::Metal3IPPool,
            &pool("random", pools.clone()),
            &Index::new(),
        );
        let mp5: Vec<&FieldError> = v.errors.iter().filter(|e| e.rule == RuleId::MP5).collect();
        assert_eq!(mp5.len(), 1, "{pools}: {:?}", texts(&v));
        assert_eq!(mp5[0].path, at);
        assert!(
            mp5[0]
                .detail
                .starts_with("cannot be used with allocationStrategy \"random\": "),
            "{}",
            mp5[0].detail
        );
        assert!(mp5[0].detail.contains(why), "{}", mp5[0].detail);
        // The same pools are fine when handed out in order.
        let v = create(
            Kind::Metal3IPPool,
            &pool("sequential", pools.clone()),
            &Index::new(),
        );
        assert!(
            !v.rules().contains(&RuleId::MP5),
            "{pools}: {:?}",
            texts(&v)
        );
    }
    // An entry already broken (MP1) is not sized as well.
    let v = create(
        Kind::Metal3IPPool,
        &pool(
            "random",
            json!([{"start": "192.168.0.9", "end": "192.168.0.1"}]),
        ),
        &Index::new(),
    );
    assert_eq!(v.rules(), ["MP1"]);
}

#[test]
fn x5_mp5_an_unchanged_random_entry_is_never_denied() {
    let old = m3pool(
        "foo",
        "p",
        json!({"namePrefix": "p", "allocationStrategy": "random",
        "pools": [{"subnet": "2001:db8::/32"}]}),
    );
    let mut obj = old.clone();
    obj["spec"]["pools"] = json!([{"subnet": "2001:db8::/32"}, {"subnet": "2001:db9::/120"}]);
    let v = update(Kind::Metal3IPPool, &obj, &old, &Index::new());
    assert!(v.allowed(), "{:?}", texts(&v));
    obj["spec"]["pools"] = json!([{"subnet": "2001:db8::/32"}, {"subnet": "2001:db9::/48"}]);
    let v = update(Kind::Metal3IPPool, &obj, &old, &Index::new());
    assert_eq!(v.rules(), ["MP5"], "{:?}", texts(&v));
}

// === MA5: the ipAddress annotation on an IPAddress ===

#[test]
fn ma5_ip_address_annotation_must_be_an_ip_on_create_and_when_changed() {
    let mut base = m3addr("ns", "a-0", "10.0.0.11", "p");
    base["spec"]["prefix"] = json!(24);
    let with = |value: Value| {
        let mut o = base.clone();
        o["metadata"]["annotations"] = json!({"ipAddress": value});
        o
    };
    for (value, allowed) in [
        (json!("192.168.1.100"), true),
        (json!("2001:db8::1"), true),
        (json!(""), true),
        (json!("not-an-ip"), false),
        (json!("256.256.256.256"), false),
    ] {
        let obj = with(value.clone());
        let v = create(Kind::Metal3IPAddress, &obj, &Index::new());
        assert_eq!(v.allowed(), allowed, "{value}: {:?}", texts(&v));
        let u = update(Kind::Metal3IPAddress, &obj, &base, &Index::new());
        assert_eq!(u.allowed(), allowed, "{value}: {:?}", texts(&u));
        if !allowed {
            assert_eq!(v.rules(), ["MA5"]);
            assert!(texts(&v)[0].starts_with(&format!(
                "metadata.annotations[ipAddress]: Invalid value: {value}: "
            )));
        }
    }
    // X5: an annotation that was already there, unchanged, is the audit's to report.
    let bad = with(json!("not-an-ip"));
    let mut relabelled = bad.clone();
    relabelled["metadata"]["labels"] = json!({"x": "y"});
    assert!(update(Kind::Metal3IPAddress, &relabelled, &bad, &Index::new()).allowed());
}
