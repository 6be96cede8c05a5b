//! R1, the reuse grace, end to end inside one process: releases come from the view's delete
//! events (`Ledger::delete`, as the watch calls it), time from a `ManualClock`, verdicts from the
//! real admission handler. No sleeps: the clock is moved.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::cluster::{Ledger, ManualClock};
use crate::index::Index;
use crate::kinds::Kind;
use crate::model::{project, ObjKey};

const SECOND: Duration = Duration::from_secs(1);

fn pool(grace: Option<u64>) -> Value {
    let mut p = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": "nodes", "namespace": "ns"},
        "spec": {"addresses": ["10.0.0.10-10.0.0.50"], "prefix": 24, "gateway": "10.0.0.1"}});
    if let Some(g) = grace {
        p["spec"]["addressReuseGracePeriodSeconds"] = json!(g);
    }
    p
}

fn address(name: &str, ip: &str) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"address": ip, "prefix": 24, "gateway": "10.0.0.1", "claimRef": {"name": name},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "nodes"}}})
}

fn key(kind: Kind, name: &str) -> ObjKey {
    ObjKey::new(kind, Some("ns"), name)
}

fn kind_of(o: &Value) -> Kind {
    let group = o["apiVersion"].as_str().unwrap().split('/').next().unwrap();
    Kind::from_group_kind(group, o["kind"].as_str().unwrap()).unwrap()
}

/// A view holding `objects`, the reuse grace flag at `flag` seconds, time standing still.
fn view(objects: &[Value], flag: u64) -> (Arc<Ledger>, Arc<ManualClock>) {
    let mut index = Index::new();
    for o in objects {
        index.upsert(project(kind_of(o), o).unwrap());
    }
    let clock = ManualClock::new();
    let shared = Ledger::new(index)
        .with_clock(clock.clone())
        .with_reuse_grace(Duration::from_secs(flag));
    (Arc::new(shared), clock)
}

fn review(op: &str, object: &Value, dry_run: bool) -> Vec<u8> {
    let kind = kind_of(object);
    let version = object["apiVersion"]
        .as_str()
        .unwrap()
        .split('/')
        .nth(1)
        .unwrap();
    let (obj, old) = match op {
        "DELETE" => (Value::Null, object.clone()),
        _ => (object.clone(), Value::Null),
    };
    serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": kind.group(), "version": version, "kind": kind.name()},
            "operation": op, "name": object["metadata"]["name"], "namespace": "ns",
            "object": obj, "oldObject": old, "dryRun": dry_run}}))
    .unwrap()
}

/// (allowed, the causes' messages).
fn create(view: &Arc<Ledger>, object: &Value) -> (bool, Vec<String>) {
    let a = Admission::new(view.clone(), Options::default());
    let out: Value = serde_json::from_slice(
        &a.review_now(Endpoint::Validate, &review("CREATE", object, false))
            .body,
    )
    .unwrap();
    let r = &out["response"];
    let causes = r["status"]["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap(),
                c["message"].as_str().unwrap()
            )
        })
        .collect();
    (r["allowed"] == true, causes)
}

#[test]
fn r1_a_new_holder_is_refused_within_the_flags_grace_and_admitted_after_it() {
    let (view, clock) = view(&[pool(None), address("old", "10.0.0.15")], 60);
    view.delete(&key(Kind::IPAddress, "old"));
    clock.advance(12 * SECOND);
    let (allowed, causes) = create(&view, &address("new", "10.0.0.15"));
    assert!(!allowed);
    assert_eq!(
        causes,
        [
            r#"spec.address: Invalid value: "10.0.0.15": 10.0.0.15 was released by IPAddress ns/old 12s ago; the reuse grace is 60s (--reuse-grace): a new holder may take it in 48s [ipam-guard R1]"#
        ]
    );
    // Another address of the pool is untouched by that release.
    assert!(create(&view, &address("other", "10.0.0.16")).0);
    clock.advance(47 * SECOND);
    assert!(!create(&view, &address("new", "10.0.0.15")).0, "59 s after");
    clock.advance(SECOND);
    let (allowed, causes) = create(&view, &address("new", "10.0.0.15"));
    assert!(allowed, "{causes:?}");
    assert_eq!(
        view.read().releases().len(),
        0,
        "the ended release is forgotten"
    );
}

#[test]
fn r1_the_same_object_recreated_for_the_same_claim_is_not_a_new_holder() {
    let (view, _clock) = view(&[pool(None), address("web-0", "10.0.0.15")], 60);
    view.delete(&key(Kind::IPAddress, "web-0"));
    let (allowed, causes) = create(&view, &address("web-0", "10.0.0.15"));
    assert!(allowed, "a restore or a retried create: {causes:?}");
    // The same name for another claim is a new holder.
    let mut other = address("web-0", "10.0.0.15");
    other["spec"]["claimRef"]["name"] = json!("web-1");
    assert!(!create(&view, &other).0);
}

#[test]
fn r1_the_pools_own_grace_wins_over_the_flag_either_way() {
    // Shorter than the flag: free after the pool's 10 s.
    let (v, clock) = view(&[pool(Some(10)), address("old", "10.0.0.15")], 60);
    v.delete(&key(Kind::IPAddress, "old"));
    clock.advance(3 * SECOND);
    let (allowed, causes) = create(&v, &address("new", "10.0.0.15"));
    assert!(!allowed);
    assert!(
        causes[0].contains(
            "3s ago; the reuse grace of InClusterIPPool ns/nodes is 10s (addressReuseGracePeriodSeconds): a new holder may take it in 7s"
        ),
        "{causes:?}"
    );
    clock.advance(7 * SECOND);
    assert!(create(&v, &address("new", "10.0.0.15")).0);

    // Longer than the flag, and with the flag off.
    let (v, clock) = view(&[pool(Some(90)), address("old", "10.0.0.15")], 0);
    v.delete(&key(Kind::IPAddress, "old"));
    clock.advance(89 * SECOND);
    assert!(!create(&v, &address("new", "10.0.0.15")).0);
    clock.advance(SECOND);
    assert!(create(&v, &address("new", "10.0.0.15")).0);

    // Zero: the pool says its addresses are free at once, whatever the flag.
    let (v, _) = view(&[pool(Some(0)), address("old", "10.0.0.15")], 60);
    v.delete(&key(Kind::IPAddress, "old"));
    assert!(create(&v, &address("new", "10.0.0.15")).0);
}

#[test]
fn r1_a_pool_being_deleted_skips_its_own_grace_as_the_provider_does() {
    let mut deleting = pool(Some(90));
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let (v, _) = view(&[deleting.clone(), address("old", "10.0.0.15")], 0);
    v.delete(&key(Kind::IPAddress, "old"));
    assert_eq!(v.read().releases().len(), 0);
    // The flag still holds.
    let (v, _) = view(&[deleting, address("old", "10.0.0.15")], 30);
    v.delete(&key(Kind::IPAddress, "old"));
    assert!(!create(&v, &address("new", "10.0.0.15")).0);
}

#[test]
fn r1_the_release_begins_when_the_claim_or_the_address_began_to_go() {
    // The in-cluster provider holds the IPAddress for the pool's grace after its claim is
    // deleted, then deletes it: the grace must not start over when the IPAddress goes.
    let (v, clock) = view(&[pool(Some(60)), address("old", "10.0.0.15")], 0);
    let claim = key(Kind::IPAddressClaim, "old");
    v.deleting(&claim);
    clock.advance(50 * SECOND);
    v.delete(&claim);
    v.delete(&key(Kind::IPAddress, "old"));
    clock.advance(5 * SECOND);
    let (allowed, causes) = create(&v, &address("new", "10.0.0.15"));
    assert!(!allowed);
    assert!(causes[0].contains("55s ago"), "{causes:?}");
    clock.advance(5 * SECOND);
    assert!(create(&v, &address("new", "10.0.0.15")).0);

    // The address's own deletion (a finalizer held it) counts the same way.
    let (v, clock) = view(&[pool(None), address("old", "10.0.0.15")], 20);
    v.deleting(&key(Kind::IPAddress, "old"));
    clock.advance(15 * SECOND);
    v.delete(&key(Kind::IPAddress, "old"));
    clock.advance(5 * SECOND);
    assert!(create(&v, &address("new", "10.0.0.15")).0);
}

#[test]
fn r1_reviews_record_no_release_only_the_watch_does() {
    let (v, _) = view(&[pool(None), address("old", "10.0.0.15")], 60);
    let a = Admission::new(v.clone(), Options::default());
    for dry_run in [true, false] {
        let body = review("DELETE", &address("old", "10.0.0.15"), dry_run);
        let out = a.review_now(Endpoint::Validate, &body);
        assert!(out.summary.unwrap().allowed);
    }
    assert_eq!(v.read().releases().len(), 0);
    // Until the watch shows it gone, the old object still holds the address (A9).
    let (allowed, causes) = create(&v, &address("new", "10.0.0.15"));
    assert!(!allowed);
    assert!(causes[0].contains("[ipam-guard A9]"), "{causes:?}");
}

#[test]
fn r1_other_address_spaces_and_relisted_vanishings() {
    let (v, clock) = view(&[pool(None), address("old", "10.0.0.15")], 60);
    // Gone while the watch was down: the relist finds it missing, a release as of now.
    let seen = std::collections::HashSet::new();
    v.finish_relist(Kind::IPAddress, &seen);
    clock.advance(SECOND);
    assert!(!create(&v, &address("new", "10.0.0.15")).0);
    // An address in another space (a pool that names another space) is another address.
    let mut far = pool(None);
    far["metadata"]["name"] = json!("far");
    far["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
    far["spec"]["addresses"] = json!(["10.0.0.0/28"]);
    v.apply(
        &key(Kind::InClusterIPPool, "far"),
        project(Kind::InClusterIPPool, &far),
    );
    let mut there = address("there", "10.0.0.15");
    there["spec"]["poolRef"]["name"] = json!("far");
    let (allowed, causes) = create(&v, &there);
    assert!(allowed, "{causes:?}");
}

#[test]
fn r1_metal3_addresses_follow_the_same_grace() {
    let m3 = |name: &str| {
        json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPAddress",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"address": "192.168.0.7", "prefix": 24, "pool": {"name": "m3"}, "claim": {"name": name}}})
    };
    let (v, clock) = view(&[m3("old")], 30);
    v.delete(&key(Kind::Metal3IPAddress, "old"));
    clock.advance(SECOND);
    let (allowed, causes) = create(&v, &m3("new"));
    assert!(!allowed);
    assert!(
        causes[0].contains("released by IPAddress.ipam.metal3.io ns/old 1s ago"),
        "{causes:?}"
    );
    clock.advance(29 * SECOND);
    assert!(create(&v, &m3("new")).0);
}

#[test]
fn r1_the_decider_answers_from_its_own_view_for_a_forwarded_create() {
    // The follower never saw the release (or restarted); the decider did: its answer refuses.
    let (decider_view, _) = view(&[pool(None), address("old", "10.0.0.15")], 60);
    decider_view.delete(&key(Kind::IPAddress, "old"));
    let decider = Admission::new(decider_view, Options::default());
    let object = address("new", "10.0.0.15");
    let request = DecisionRequest {
        kind: Kind::IPAddress,
        version: "v1beta2".into(),
        operation: crate::model::Operation::Create,
        namespace: Some("ns".into()),
        name: "new".into(),
        object: Some(serde_json::value::RawValue::from_string(object.to_string()).unwrap()),
        old_object: None,
        dry_run: false,
        stranger: None,
        admitted_ms_ago: None,
    };
    let answer = decider.answer_forwarded(&request);
    assert_eq!(answer.errors.len(), 1, "{answer:?}");
    assert_eq!(answer.errors[0].rule, "R1");
    // Merged into a follower's verdict that found nothing, it is the denial.
    let mut local = crate::field::Verdict::default();
    answer.merge_into(&mut local);
    assert!(!local.allowed());
}

#[test]
fn r1_a_restarted_view_remembers_no_release_and_refuses_nothing() {
    // Before the restart: refused. After it, the view lists the cluster afresh (the old
    // IPAddress is gone) and knows of no release: fail-safe, the new holder is admitted.
    let (before, _) = view(&[pool(Some(60)), address("old", "10.0.0.15")], 0);
    before.delete(&key(Kind::IPAddress, "old"));
    assert!(!create(&before, &address("new", "10.0.0.15")).0);
    let (after, _) = view(&[pool(Some(60))], 0);
    let (allowed, causes) = create(&after, &address("new", "10.0.0.15"));
    assert!(allowed, "{causes:?}");
}

#[test]
fn r1_a_prefix_pools_sub_prefix_is_released_as_a_whole_under_the_flag() {
    let pool = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterPrefixPool",
        "metadata": {"name": "v6", "namespace": "ns"},
        "spec": {"prefixes": ["fd00:10::/48"], "allocationPrefixLength": 64}});
    let sub = |name: &str, address: &str| {
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"address": address, "prefix": 64, "claimRef": {"name": name},
                "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterPrefixPool", "name": "v6"}}})
    };
    let (v, clock) = view(&[pool, sub("old", "fd00:10:0:1::")], 30);
    v.delete(&key(Kind::IPAddress, "old"));
    let (allowed, causes) = create(&v, &sub("new", "fd00:10:0:1::"));
    assert!(!allowed);
    assert!(
        causes[0].contains("fd00:10:0:1:: was released by IPAddress ns/old 0s ago; the reuse grace is 30s (--reuse-grace)"),
        "{causes:?}"
    );
    let (allowed, causes) = create(&v, &sub("next", "fd00:10:0:2::"));
    assert!(allowed, "another sub-prefix: {causes:?}");
    clock.advance(30 * SECOND);
    assert!(create(&v, &sub("new", "fd00:10:0:1::")).0);
}
