//! X2 without client authentication: what an unauthenticated caller's admitted write may
//! reserve is bounded (`crates/server/src/cluster/trust.rs`). Time is driven through `Ledger::sweep(now)` on a
//! view whose clock stands still (admissions are stamped with its time); the flood over HTTPS
//! polls for the legitimate create to be allowed.

mod server_support;

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ipam_guard::cluster::{Caller, Ledger, ManualClock, StrangerPolicy};
use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::model::{self, ObjKey, Projection};
use serde_json::{json, Value};
use server_support::*;

fn pool(name: &str, range: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"addresses": [range], "prefix": 24, "gateway": "10.0.0.1"}
    })
}

fn projection(v: &Value) -> Projection {
    model::project(Kind::InClusterIPPool, v).unwrap()
}

fn key(name: &str) -> ObjKey {
    ObjKey::new(Kind::InClusterIPPool, Some("ns"), name)
}

fn stranger(last: u8) -> Caller {
    Caller::Stranger(IpAddr::from([10, 0, 0, last]))
}

const POLICY: StrangerPolicy = StrangerPolicy {
    ttl: Duration::from_secs(5),
    strikes: 3,
    window: Duration::from_secs(600),
};

fn shared() -> Ledger {
    Ledger::with_ttl(Index::new(), Duration::from_secs(30))
        .with_strangers(POLICY)
        .with_clock(ManualClock::new())
}

fn holds(shared: &Ledger, name: &str) -> bool {
    shared.read().pool(&key(name)).is_some()
}

#[test]
fn x2_a_strangers_pending_entry_lasts_its_short_bound_and_a_trusted_one_the_ttl() {
    let shared = shared();
    let t0 = shared.now();
    shared.admit_as(
        projection(&pool("forged", "10.0.0.10-10.0.0.20")),
        &stranger(1),
    );
    shared.admit_as(
        projection(&pool("real", "10.0.1.10-10.0.1.20")),
        &Caller::Trusted,
    );
    shared.sweep(t0 + Duration::from_secs(4));
    assert!(holds(&shared, "forged"));
    shared.sweep(t0 + Duration::from_secs(6));
    assert!(!holds(&shared, "forged"), "a stranger reserves for 5 s");
    assert!(holds(&shared, "real"), "a trusted caller for 30 s");
    shared.sweep(t0 + Duration::from_secs(31));
    assert!(!holds(&shared, "real"));
}

#[test]
fn x2_a_stranger_reposting_the_same_review_does_not_extend_its_reservation() {
    let shared = shared();
    let t0 = shared.now();
    let forged = projection(&pool("forged", "10.0.0.10-10.0.0.20"));
    shared.admit_as(forged.clone(), &stranger(1));
    for _ in 0..10 {
        shared.admit_as(forged.clone(), &stranger(1));
    }
    shared.sweep(t0 + Duration::from_secs(6));
    assert!(!holds(&shared, "forged"));
}

#[test]
fn x2_an_address_whose_reservations_never_show_up_stops_reserving() {
    let shared = shared();
    let mut now = shared.now();
    // Two forged reservations expire unconfirmed: two strikes, still reserving.
    for i in 0..2 {
        shared.admit_as(
            projection(&pool(&format!("f{i}"), "10.0.0.10-10.0.0.20")),
            &stranger(1),
        );
        now += Duration::from_secs(6);
        shared.sweep(now);
    }
    // The third strike bars the address and drops what it still holds at once.
    shared.admit_as(projection(&pool("f2", "10.0.0.10-10.0.0.20")), &stranger(1));
    shared.admit_as(projection(&pool("f3", "10.0.2.10-10.0.2.20")), &stranger(1));
    assert!(holds(&shared, "f3"));
    // f2 and f3 were admitted together, at the clock's time (only `now` moved on).
    now += Duration::from_secs(6);
    shared.sweep(now);
    assert!(!holds(&shared, "f2") && !holds(&shared, "f3"));
    assert_eq!(shared.pending_len(), 0);
    // Barred: its reviews are still judged but reserve nothing.
    shared.admit_as(projection(&pool("f4", "10.0.0.10-10.0.0.20")), &stranger(1));
    assert!(!holds(&shared, "f4"));
    // Another address, and a trusted caller, are not affected.
    shared.admit_as(
        projection(&pool("other", "10.0.3.10-10.0.3.20")),
        &stranger(2),
    );
    shared.admit_as(
        projection(&pool("api", "10.0.4.10-10.0.4.20")),
        &Caller::Trusted,
    );
    assert!(holds(&shared, "other") && holds(&shared, "api"));
}

#[test]
fn x2_a_strangers_reservation_confirmed_by_the_watch_is_no_strike() {
    let shared = shared();
    let mut now = shared.now();
    for i in 0..5 {
        let p = pool(&format!("real{i}"), &format!("10.0.{i}.10-10.0.{i}.20"));
        shared.admit_as(projection(&p), &stranger(1));
        // The watch shows the write: the real object replaces the pending entry.
        shared.apply(&key(&format!("real{i}")), Some(projection(&p)));
        now += Duration::from_secs(6);
        shared.sweep(now);
    }
    shared.admit_as(
        projection(&pool("next", "10.0.9.10-10.0.9.20")),
        &stranger(1),
    );
    assert!(
        holds(&shared, "next"),
        "an API server whose writes land keeps reserving"
    );
}

#[test]
fn x2_a_static_view_keeps_strangers_reservations_for_the_ttl_and_never_bars() {
    // serve --dev / --state-from: no watch confirms anything, so strikes would bar everyone.
    let shared = Ledger::with_ttl(Index::new(), Duration::from_secs(30))
        .with_strangers(StrangerPolicy::unbounded())
        .with_clock(ManualClock::new());
    for i in 0..5 {
        let name = format!("p{i}");
        let p = projection(&pool(&name, "10.0.0.10-10.0.0.20"));
        shared.admit_as(p, &stranger(1));
        let admitted = shared.now();
        shared.sweep(admitted + Duration::from_secs(6));
        assert!(holds(&shared, &name), "round {i}: held for the 30 s TTL");
        shared.sweep(admitted + Duration::from_secs(31));
        assert!(!holds(&shared, &name), "round {i}: expired unconfirmed");
    }
}

// === over HTTPS ===

fn review(object: &Value) -> Vec<u8> {
    static N: AtomicU64 = AtomicU64::new(0);
    let name = object["metadata"]["name"].as_str().unwrap();
    let gvk =
        json!({"group": "ipam.cluster.x-k8s.io", "version": "v1alpha2", "kind": "InClusterIPPool"});
    let gvr = json!({"group": "ipam.cluster.x-k8s.io", "version": "v1alpha2", "resource": "inclusterippools"});
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{name}-{}", N.fetch_add(1, Ordering::Relaxed)),
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": name, "namespace": "ns", "operation": "CREATE",
            "userInfo": {"username": "someone"}, "object": object, "oldObject": null,
            "dryRun": false, "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        }
    }))
    .unwrap()
}

async fn allowed(conn: &mut Conn, object: &Value) -> bool {
    let reply = conn
        .send(post("/validate", Some("application/json"), review(object)))
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["response"]["allowed"].as_bool().unwrap()
}

/// What a flood of forged reviews from 127.0.0.2 did to a legitimate create from 127.0.0.1.
struct Flood {
    /// How long the legitimate create was held back (None: still held when `give_up` passed).
    held: Option<Duration>,
    /// Forged reviews allowed (a reservation each, until the address is barred).
    forged_admitted: u64,
    forged_sent: u64,
    /// Pending entries left when the legitimate create got through.
    pending_after: usize,
}

async fn flood(policy: StrangerPolicy, give_up: Duration) -> Flood {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let view = Arc::new(Ledger::default().with_strangers(policy));
    let server = TestServer::start_with_view(
        loopback_config(ipam_guard::server::CertFiles::in_dir(dir.path())),
        view.clone(),
    )
    .await;
    let addr = server.addrs.webhook;
    let config = client_config(&ca.der, &[b"http/1.1"]);
    let attacker_ip: IpAddr = [127, 0, 0, 2].into();
    let mut attacker = Conn::open_from(addr, Some(attacker_ip), config.clone(), Proto::H1)
        .await
        .unwrap();
    let mut user = Conn::open_from(addr, Some([127, 0, 0, 1].into()), config, Proto::H1)
        .await
        .unwrap();

    // The first forged review reserves the range; the legitimate create is refused for it.
    assert!(allowed(&mut attacker, &pool("forged-0", "10.0.0.1-10.0.0.200")).await);
    let legit = pool("legit", "10.0.0.50-10.0.0.60");
    assert!(
        !allowed(&mut user, &legit).await,
        "the forged reservation holds"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let (mut sent, mut admitted) = (1u64, 1u64);
            while !stop.load(Ordering::Relaxed) {
                sent += 1;
                let forged = pool(&format!("forged-{sent}"), "10.0.0.1-10.0.0.200");
                // No pause: the flood re-reserves the moment a reservation expires, well before
                // the legitimate client's next try.
                if allowed(&mut attacker, &forged).await {
                    admitted += 1;
                }
                tokio::task::yield_now().await;
            }
            (sent, admitted)
        })
    };
    let start = std::time::Instant::now();
    let held = loop {
        if allowed(&mut user, &legit).await {
            break Some(start.elapsed());
        }
        if start.elapsed() > give_up {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let pending_after = view.pending_len();
    stop.store(true, Ordering::Relaxed);
    let (forged_sent, forged_admitted) = flood.await.unwrap();
    server.stop().await;
    Flood {
        held,
        forged_admitted,
        forged_sent,
        pending_after,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_a_forged_review_flood_holds_a_legitimate_create_back_only_for_the_bound() {
    // The default policy with a shorter TTL, so the test takes about strikes × ttl.
    let policy = StrangerPolicy {
        ttl: Duration::from_millis(300),
        ..StrangerPolicy::default()
    };
    let result = flood(policy, WAIT).await;
    eprintln!(
        "held back {:?}; forged reviews sent {}, admitted {}",
        result.held, result.forged_sent, result.forged_admitted
    );
    assert!(
        result.held.is_some(),
        "the flood held the create past {WAIT:?}"
    );
    // The flood goes on, its reviews are allowed, but the barred address holds nothing: the only
    // pending entry is the legitimate create's.
    assert!(result.forged_admitted > u64::from(policy.strikes));
    assert_eq!(result.pending_after, 1);
}

/// The figures of docs/robustness.md (F4): `cargo test --test pending_strangers -- --ignored --nocapture`.
/// "Before" is the old behaviour (every pending entry lasts 30 s, retries and floods unbounded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "takes about a minute; run for the docs/robustness.md figures"]
async fn measure_forged_review_flood() {
    let before = StrangerPolicy {
        ttl: Duration::from_secs(30),
        strikes: u32::MAX,
        window: Duration::from_secs(600),
    };
    let give_up = Duration::from_secs(45);
    for (what, policy) in [("before", before), ("after", StrangerPolicy::default())] {
        let r = flood(policy, give_up).await;
        println!(
            "{what}: legitimate create held back {}; forged reviews sent {}, admitted {}",
            match r.held {
                Some(d) => format!("{:.1} s", d.as_secs_f64()),
                None => format!("more than {} s (gave up)", give_up.as_secs()),
            },
            r.forged_sent,
            r.forged_admitted
        );
    }
}

#[test]
fn x2_readmitting_what_the_watch_already_shows_reserves_nothing_and_is_no_strike() {
    let shared = shared();
    let stored = projection(&pool("stored", "10.0.5.10-10.0.5.20"));
    // The watch shows the object; then a GitOps tool re-applies it unchanged, again and again.
    shared.apply(&key("stored"), Some(stored.clone()));
    let mut now = shared.now();
    for _ in 0..5 {
        shared.admit_as(stored.clone(), &stranger(1));
        assert_eq!(shared.pending_len(), 0);
        now += Duration::from_secs(6);
        shared.sweep(now);
    }
    assert!(holds(&shared, "stored"));
    // The address was never struck: its next real create still reserves.
    shared.admit_as(
        projection(&pool("new", "10.0.6.10-10.0.6.20")),
        &stranger(1),
    );
    assert!(holds(&shared, "new"));
    assert_eq!(shared.pending_len(), 1);
    // A changed object is a real reservation, as before.
    let changed = projection(&pool("stored", "10.0.5.10-10.0.5.30"));
    shared.admit_as(changed, &stranger(1));
    assert_eq!(shared.pending_len(), 2);
}
