//! Three replicas: the A9 and P10 cases of the one-replica tests, and a clean handover after
//! deletes.

use std::time::{Duration, Instant};

use ipam_guard::kinds::Kind;

use super::e2e::api::*;
use super::e2e::{self, eventually};
use super::replicas::{view_objects, Three};
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a9_three_replicas_an_already_exists_create_does_not_hide_the_stored_address() {
    e2e::each_server(
        "a9_three_replicas_an_already_exists_create_does_not_hide_the_stored_address",
        |assets| async move {
            let t = Target::Three(Three::start(&assets, TTL).await);
            a9_already_exists_then_duplicate(&t).await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p10_three_replicas_an_already_exists_create_does_not_hide_the_stored_pool() {
    e2e::each_server(
        "p10_three_replicas_an_already_exists_create_does_not_hide_the_stored_pool",
        |assets| async move {
            let t = Target::Three(Three::start(&assets, TTL).await);
            p10_already_exists_then_overlap(&t).await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a9_after_a_handover_deleted_addresses_are_free_and_kept_ones_held() {
    e2e::each_server(
        "a9_after_a_handover_deleted_addresses_are_free_and_kept_ones_held",
        a9_after_a_handover_against,
    )
    .await;
}

/// The pending TTL of the handover test: the deletes, the wait for the watches and the
/// shutdown must all fall within one TTL of the creates (the decider hands over the admissions
/// of the last TTL), and a next decider that got no handover waits this long before deciding,
/// which the test tells apart from a handover by the time decisions take to resume.
const HANDOVER_TTL: Duration = Duration::from_secs(30);

fn address_of(i: usize) -> String {
    format!("10.99.12.{}", 20 + i)
}

/// Creates `obj` through the API server until ipam-guard decides it: a 503 (no decider yet, or
/// the one asked stepped down) and a failed call (the replica behind the connection went away)
/// are retried. Returns the decided answer.
async fn decided(client: &kube::Client, obj: &Value, since: Instant) -> Resp {
    loop {
        let r = create(client, obj, false).await;
        let unavailable = r.status == 503 && r.message().contains("ipam-guard");
        let call_failed = r.status == 500 && r.message().contains("failed calling webhook");
        if !unavailable && !call_failed {
            return r;
        }
        assert!(
            since.elapsed() < WAIT,
            "no decision on {}: {}",
            obj["metadata"]["name"],
            said(&r)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a9_after_a_handover_against(assets: e2e::Server) {
    let mut s = Three::start(&assets, HANDOVER_TTL).await;
    let client = s.client.clone();
    let pool = in_cluster_pool(NS, "n-pool", "10.99.12.10-10.99.12.60", "10.99.12.1");
    create(&client, &pool, false).await.expect(201);
    let first_created = Instant::now();
    let n = |i: usize| {
        ip_address(
            NS,
            &format!("n{i}"),
            &format!("n{i}"),
            &address_of(i),
            "n-pool",
        )
    };
    for i in 0..10 {
        create(&client, &n(i), false).await.expect(201);
    }
    for i in 0..5 {
        delete(&client, &n(i)).await.expect(200);
    }
    // Every replica's watch shows the deletes, the decider's included: its count is stored
    // objects plus pending entries, and each create's entry went when the watch showed it.
    for r in &s.replicas {
        eventually(
            &format!("{} to show the 5 IPAddresses left", r.name),
            WAIT,
            || async { view_objects(r, Kind::IPAddress).await == Some(5.0) },
        )
        .await;
    }
    let d = s.decider().await.expect("a decider");
    // The decider hands over the admissions of the last TTL: the deleted ones must be among
    // them for this test to say anything.
    assert!(
        first_created.elapsed() < HANDOVER_TTL / 2,
        "too slow to test a handover: {:?} between the first create and the shutdown",
        first_created.elapsed()
    );
    s.replicas[d].signal("-TERM");
    let stopped = Instant::now();

    // The deleted addresses are free: each is given to a new IPAddress at its first decision.
    let m = |i: usize| {
        ip_address(
            NS,
            &format!("m{i}"),
            &format!("m{i}"),
            &address_of(i),
            "n-pool",
        )
    };
    let r = decided(&client, &m(0), stopped).await;
    let resumed = stopped.elapsed();
    let refusal = |r: &Resp| format!("{}\n{}", said(r), s.logs());
    assert_eq!(
        r.status,
        201,
        "m0 at the address of n0, deleted before the handover: {}",
        refusal(&r)
    );
    for i in 1..5 {
        let r = decided(&client, &m(i), stopped).await;
        assert_eq!(
            r.status,
            201,
            "m{i} at the address of n{i}, deleted before the handover: {}",
            refusal(&r)
        );
    }
    // A next decider without the handover waits out the pending TTL before deciding (and then
    // holds nothing of the old one's): had it, this test would not have tested a handover.
    assert!(
        resumed < HANDOVER_TTL / 2,
        "decisions resumed only after {resumed:?}: no handover took place\n{}",
        s.logs()
    );
    // The kept addresses are still held.
    for i in 5..10 {
        let dup = ip_address(
            NS,
            &format!("d{i}"),
            &format!("d{i}"),
            &address_of(i),
            "n-pool",
        );
        let r = decided(&client, &dup, stopped).await;
        assert_denied(
            &r,
            "A9",
            &format!("IPAddress {NS}/n{i}"),
            &format!("d{i} at the address of n{i}, kept, after the handover"),
        );
    }
    let new = s.decider().await.expect("a decider");
    assert_ne!(new, d, "the lease still names the replica that shut down");
    let exited = s.replicas[d].wait_exit(WAIT).await;
    assert!(
        exited.is_some_and(|e| e.success()),
        "{exited:?}\n{}",
        s.replicas[d].log_tail(30)
    );
    assert!(
        s.replicas[new]
            .log_text()
            .contains("took over the previous decider's admissions"),
        "the next decider got no handover:\n{}",
        s.logs()
    );
    assert_no_address_twice(&client).await;
    println!("decider shut down: decisions resumed after {resumed:?}, through the proxy's connections {:?}", s.proxy.handed());
}
