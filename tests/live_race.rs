//! X2 through the real admission handler: concurrent conflicting CREATEs admit exactly one, on the
//! live view (fake API server) and on the dev server's static view alike; dry runs never hold a
//! place; a pending entry expires; a retried CREATE does not conflict with itself.

mod live_support;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use ipam_guard::admission::{Admission, Endpoint};
use ipam_guard::cluster::live::{LiveOptions, LiveView};
use ipam_guard::cluster::{ClusterView, Ledger, ManualClock};
use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::rules::Options;
use live_support::*;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(20);

fn review(object: &Value, dry_run: bool) -> Vec<u8> {
    let (kind, version) = Kind::from_api_version(
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
    )
    .unwrap();
    let gvk = json!({"group": kind.group(), "version": version, "kind": kind.name()});
    let gvr = json!({"group": kind.group(), "version": version, "resource": kind.plural()});
    let name = object["metadata"]["name"].as_str().unwrap();
    let uid = format!("uid-{name}-{}", rand_suffix());
    let mut request = json!({
        "uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": name, "operation": "CREATE",
        "userInfo": {"username": "admin", "groups": ["system:masters", "system:authenticated"]},
        "object": object, "oldObject": null, "dryRun": dry_run,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    });
    if let Some(ns) = object["metadata"]["namespace"].as_str() {
        request["namespace"] = json!(ns);
    }
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request
    }))
    .unwrap()
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Validates a review; returns (allowed, response).
fn validate(admission: &Admission, object: &Value, dry_run: bool) -> (bool, Value) {
    let sent = review(object, dry_run);
    let answer = admission.review_now(Endpoint::Validate, &sent);
    assert_eq!(answer.http_status, 200);
    let body: Value = serde_json::from_slice(&answer.body).unwrap();
    let response = body["response"].clone();
    (response["allowed"].as_bool().unwrap(), response)
}

/// Sends every object at once, each from its own thread; returns each answer.
fn race(admission: &Admission, objects: Vec<Value>) -> Vec<(bool, Value)> {
    let barrier = Arc::new(Barrier::new(objects.len()));
    let handles: Vec<_> = objects
        .into_iter()
        .map(|o| {
            let admission = admission.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                validate(&admission, &o, false)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn overlapping_pools() -> Vec<Value> {
    // Each pool shares 10.0.0.123-10.0.0.130 with every other, and none touches pool-a.
    (0..64)
        .map(|i| {
            in_cluster_pool(
                "ns",
                &format!("p{i}"),
                &[&format!("10.0.0.{}-10.0.0.{}", 60 + i, 130 + i)],
            )
        })
        .collect()
}

fn same_address() -> Vec<Value> {
    (0..64)
        .map(|i| ip_address("ns", &format!("addr-{i}"), "10.0.0.50", "pool-a"))
        .collect()
}

/// A live view on a fake API server whose timers read `ManualClock`: time moves only when the
/// test says so.
async fn live_admission(
    pending_ttl: Duration,
) -> (FakeApi, Arc<LiveView>, Admission, Arc<ManualClock>) {
    let api = FakeApi::start().await;
    for k in [
        Kind::IPAddressClaim,
        Kind::IPAddress,
        Kind::InClusterIPPool,
        Kind::GlobalInClusterIPPool,
    ] {
        api.serve(k);
    }
    api.apply(in_cluster_pool(
        "ns",
        "pool-a",
        &["10.0.0.10-10.0.0.30", "10.0.0.50"],
    ));
    let clock = ManualClock::new();
    let view = LiveView::start_with_clock(
        api.client(),
        LiveOptions {
            discovery_interval: Duration::from_millis(200),
            pending_ttl,
            ..LiveOptions::default()
        },
        clock.clone(),
    );
    wait_for("synced", WAIT, || view.synced()).await;
    let admission = Admission::new(view.clone(), Options::default());
    (api, view, admission, clock)
}

fn allowed(results: &[(bool, Value)]) -> usize {
    results.iter().filter(|(ok, _)| *ok).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_p10_64_concurrent_overlapping_pools_admit_exactly_one() {
    let (_api, view, admission, _clock) = live_admission(Duration::from_secs(30)).await;
    let results = tokio::task::spawn_blocking(move || race(&admission, overlapping_pools()))
        .await
        .unwrap();
    assert_eq!(allowed(&results), 1);
    let denied = results.iter().find(|(ok, _)| !ok).unwrap();
    assert_eq!(denied.1["status"]["code"], 422, "{}", denied.1);
    let causes = denied.1["status"]["details"]["causes"].to_string();
    assert!(causes.contains("overlaps InClusterIPPool ns/p"), "{causes}");
    assert_eq!(view.ledger().pending_len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_a9_64_concurrent_ip_addresses_with_one_address_admit_exactly_one() {
    let (_api, _view, admission, _clock) = live_admission(Duration::from_secs(30)).await;
    let results = tokio::task::spawn_blocking(move || race(&admission, same_address()))
        .await
        .unwrap();
    assert_eq!(allowed(&results), 1);
    let denied = results.iter().find(|(ok, _)| !ok).unwrap();
    let causes = denied.1["status"]["details"]["causes"].to_string();
    assert!(causes.contains("FieldValueDuplicate"), "{causes}");
    assert!(causes.contains("spec.address"), "{causes}");
}

#[test]
fn x2_p10_dev_server_static_view_admits_exactly_one_too() {
    let view = Arc::new(Ledger::new(Index::new()));
    let admission = Admission::new(view, Options::default());
    assert_eq!(allowed(&race(&admission, overlapping_pools())), 1);
}

#[test]
fn x2_dry_run_does_not_block_the_real_create() {
    let view = Arc::new(Ledger::new(Index::new()));
    let admission = Admission::new(view.clone(), Options::default());
    let pool = in_cluster_pool("ns", "p", &["10.0.0.10-10.0.0.20"]);
    assert!(validate(&admission, &pool, true).0, "dry run allowed");
    assert_eq!(view.pending_len(), 0, "a dry run leaves no pending entry");
    assert!(
        validate(&admission, &pool, false).0,
        "the real create follows"
    );
    assert_eq!(view.pending_len(), 1);
    // The same CREATE retried (same kind/namespace/name) replaces its entry, no conflict.
    assert!(validate(&admission, &pool, false).0, "a retried create");
    assert_eq!(view.pending_len(), 1);
    // Another pool over the same range is refused while the first is pending.
    let other = in_cluster_pool("ns", "q", &["10.0.0.15-10.0.0.25"]);
    assert!(!validate(&admission, &other, false).0);
}

/// A retried CREATE keeps one expiry slot, and its reservation runs one TTL from its last
/// admission: memory follows pending objects, not admissions (wrk re-posting one review 28k times
/// a second grew the heap by 85 MiB within the TTL).
#[test]
fn x2_a_retried_create_keeps_one_slot_and_its_reservation_runs_from_the_last_admission() {
    let clock = ManualClock::new();
    let view =
        Arc::new(Ledger::with_ttl(Index::new(), Duration::from_secs(30)).with_clock(clock.clone()));
    let admission = Admission::new(view.clone(), Options::default());
    let pool = in_cluster_pool("ns", "p", &["10.0.0.10-10.0.0.20"]);
    let other = in_cluster_pool("ns", "q", &["10.0.0.15-10.0.0.25"]);
    // Admitted 1,000 times, 10 ms apart: the last at 9.99 s, so it is reserved until 39.99 s.
    for i in 0..1000 {
        if i > 0 {
            clock.advance(Duration::from_millis(10));
        }
        assert!(validate(&admission, &pool, false).0, "a retried create");
    }
    assert_eq!(view.pending_len(), 1);
    assert_eq!(view.expiry_slots(), 1, "one slot per pending object");
    // Past the first admission's TTL: its slot comes up, but the entry was renewed since.
    clock.advance(Duration::from_millis(20_500));
    assert!(!validate(&admission, &other, false).0, "p is still pending");
    assert_eq!((view.pending_len(), view.expiry_slots()), (1, 1));
    clock.advance(Duration::from_millis(9_490));
    assert!(
        !validate(&admission, &other, false).0,
        "p is pending until 39.99 s"
    );
    clock.advance(Duration::from_millis(20));
    assert!(validate(&admission, &other, false).0, "p expired");
    assert_eq!(view.expiry_slots(), 1, "only q's slot is left");
}

#[tokio::test]
async fn x2_pending_entry_expires_after_the_ttl() {
    let (api, view, admission, clock) = live_admission(Duration::from_millis(300)).await;
    let pool = in_cluster_pool("ns", "p", &["10.0.0.100-10.0.0.110"]);
    let other = in_cluster_pool("ns", "q", &["10.0.0.105-10.0.0.120"]);
    assert!(validate(&admission, &pool, false).0);
    assert!(!validate(&admission, &other, false).0, "p is pending");
    // p's write never reaches the API server: just before the TTL (300 ms here) q still
    // overlaps it, after it q fits.
    clock.advance(Duration::from_millis(299));
    assert!(!validate(&admission, &other, false).0, "p is still pending");
    clock.advance(Duration::from_millis(2));
    assert!(validate(&admission, &other, false).0);
    // q is stored: the watch shows it and its pending entry goes.
    api.apply(other);
    wait_for("the watch to show q", WAIT, || {
        view.ledger().pending_len() == 0
    })
    .await;
    assert!(
        !validate(&admission, &pool, false).0,
        "now p overlaps the stored q"
    );
}
