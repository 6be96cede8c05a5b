//! The live view's index fed by kube-runtime `watcher::Event`s with no API server (X1), and the
//! pending entries of X2 around it: admitted objects count until the watch shows them or the TTL
//! passes, a relist keeps them, a retried request replaces its own entry.

mod live_support;

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use ipam_guard::cluster::live::KindFeed;
use ipam_guard::cluster::{Ledger, ManualClock, WatchedObject};
use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::model::{self, ObjKey, Projection};
use kube::runtime::watcher::Event;
use live_support::{global_pool, in_cluster_pool, ip_address};
use serde_json::Value;

fn obj(v: Value) -> WatchedObject {
    WatchedObject::from_value(v).unwrap()
}

fn pool_key(ns: &str, name: &str) -> ObjKey {
    ObjKey::new(Kind::InClusterIPPool, Some(ns), name)
}

fn projection(v: &Value) -> Projection {
    let (kind, _) = Kind::from_api_version(
        v["apiVersion"].as_str().unwrap(),
        v["kind"].as_str().unwrap(),
    )
    .unwrap();
    model::project(kind, v).unwrap()
}

/// Every pool the view holds, stored or pending.
fn pools(shared: &Ledger) -> HashSet<String> {
    shared
        .read()
        .pools_and_pending()
        .map(|p| p.key.ns_name())
        .collect()
}

/// The stored pools only.
fn stored_pools(shared: &Ledger) -> HashSet<String> {
    shared.read().pools().map(|p| p.key.ns_name()).collect()
}

/// The pools whose allocatable sets hold `ip`, stored or pending, by key.
fn holding(shared: &Ledger, ip: &str) -> HashSet<String> {
    let ip = ipam_guard::address::Ip::from_std(ip.parse().unwrap());
    let set = ipam_guard::address::AddrSet::from_ranges(
        ip.family,
        [ipam_guard::address::IpRange::new(ip.value, ip.value)],
    );
    shared
        .read()
        .overlapping_pools("default", &set)
        .into_iter()
        .map(|(p, _)| p.key.ns_name())
        .collect()
}

fn set(names: &[&str]) -> HashSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn allocatable(shared: &Ledger, key: &ObjKey) -> String {
    shared.read().pool(key).unwrap().allocatable.to_string()
}

#[test]
fn x1_events_apply_delete_and_relist_removes_vanished_keys() {
    let shared = Ledger::default();
    let mut feed = KindFeed::new(Kind::InClusterIPPool, "v1alpha2");
    let a = in_cluster_pool("ns", "a", &["10.0.0.10-10.0.0.20"]);
    let b = in_cluster_pool("ns", "b", &["10.0.1.10-10.0.1.20"]);
    let c = in_cluster_pool("ns", "c", &["10.0.2.10-10.0.2.20"]);

    assert!(!feed.apply(&shared, Event::Init));
    feed.apply(&shared, Event::InitApply(obj(a.clone())));
    feed.apply(&shared, Event::InitApply(obj(b.clone())));
    assert!(
        feed.apply(&shared, Event::InitDone),
        "InitDone ends the first list"
    );
    assert_eq!(pools(&shared), set(&["ns/a", "ns/b"]));

    feed.apply(&shared, Event::Apply(obj(c.clone())));
    feed.apply(&shared, Event::Delete(obj(a.clone())));
    assert_eq!(pools(&shared), set(&["ns/b", "ns/c"]));

    // A relist that no longer has c: c stays until InitDone.
    feed.apply(&shared, Event::Init);
    let b2 = in_cluster_pool("ns", "b", &["10.0.1.10-10.0.1.30"]);
    feed.apply(&shared, Event::InitApply(obj(b2)));
    assert_eq!(pools(&shared), set(&["ns/b", "ns/c"]));
    assert!(allocatable(&shared, &pool_key("ns", "b")).contains("10.0.1.30"));
    feed.apply(&shared, Event::InitDone);
    assert_eq!(pools(&shared), set(&["ns/b"]));
    shared.read().check_consistency();
}

#[test]
fn x1_relist_of_one_kind_leaves_other_kinds_alone() {
    let shared = Ledger::default();
    let mut pools_feed = KindFeed::new(Kind::InClusterIPPool, "v1alpha2");
    let mut globals = KindFeed::new(Kind::GlobalInClusterIPPool, "v1alpha2");
    let mut addresses = KindFeed::new(Kind::IPAddress, "v1beta2");
    globals.apply(&shared, Event::Init);
    globals.apply(
        &shared,
        Event::InitApply(obj(global_pool("g", &["10.5.0.0/24"]))),
    );
    globals.apply(&shared, Event::InitDone);
    addresses.apply(&shared, Event::Init);
    addresses.apply(
        &shared,
        Event::InitApply(obj(ip_address("ns", "x", "10.0.0.11", "a"))),
    );
    addresses.apply(&shared, Event::InitDone);
    pools_feed.apply(&shared, Event::Init);
    pools_feed.apply(&shared, Event::InitDone);
    let index = shared.read();
    assert!(index
        .pool(&ObjKey::new(Kind::GlobalInClusterIPPool, None, "g"))
        .is_some());
    assert!(index
        .address(&ObjKey::new(Kind::IPAddress, Some("ns"), "x"))
        .is_some());
}

#[test]
fn x1_objects_are_kept_as_projections_only() {
    let shared = Ledger::default();
    let mut feed = KindFeed::new(Kind::IPAddress, "v1beta2");
    feed.apply(
        &shared,
        Event::Apply(obj(ip_address("ns", "x", "10.0.0.11", "a"))),
    );
    let index = shared.read();
    let a = index
        .address(&ObjKey::new(Kind::IPAddress, Some("ns"), "x"))
        .unwrap();
    assert_eq!(a.ip.unwrap().to_string(), "10.0.0.11");
    assert_eq!(a.claim.as_deref(), Some("x"));
}

#[test]
fn x2_pending_entry_counts_until_the_watch_shows_the_object() {
    let shared = Ledger::default();
    let mut feed = KindFeed::new(Kind::InClusterIPPool, "v1alpha2");
    let p = in_cluster_pool("ns", "p", &["10.0.0.10-10.0.0.20"]);
    shared.admit(projection(&p));
    assert_eq!(shared.pending_len(), 1);
    assert_eq!(pools(&shared), set(&["ns/p"]));
    feed.apply(&shared, Event::Apply(obj(p)));
    assert_eq!(
        shared.pending_len(),
        0,
        "the watch showed it: no longer pending"
    );
    assert_eq!(pools(&shared), set(&["ns/p"]));
}

#[test]
fn x2_pending_version_is_held_beside_the_stored_one_and_expires_alone() {
    let ttl = Duration::from_millis(50);
    let shared = Ledger::with_ttl(Index::new(), ttl);
    let mut feed = KindFeed::new(Kind::InClusterIPPool, "v1alpha2");
    let p1 = in_cluster_pool("ns", "p", &["10.0.0.10-10.0.0.20"]);
    let p2 = in_cluster_pool("ns", "p", &["10.0.0.30-10.0.0.40"]);
    let q = in_cluster_pool("ns", "q", &["10.0.9.10-10.0.9.20"]);
    feed.apply(&shared, Event::Apply(obj(p1)));
    let before = allocatable(&shared, &pool_key("ns", "p"));

    // An admitted UPDATE of p that moves it, and a CREATE of q, whose writes never show up.
    shared.admit(projection(&p2));
    shared.admit(projection(&q));
    assert_eq!(
        allocatable(&shared, &pool_key("ns", "p")),
        before,
        "the stored p is what a lookup reads"
    );
    assert_eq!(
        holding(&shared, "10.0.0.15"),
        set(&["ns/p"]),
        "stored p holds its addresses"
    );
    assert_eq!(
        holding(&shared, "10.0.0.35"),
        set(&["ns/p"]),
        "admitted p holds its own"
    );
    assert_eq!(pools(&shared), set(&["ns/p", "ns/q"]));
    assert_eq!(stored_pools(&shared), set(&["ns/p"]));
    shared.read().check_consistency();

    shared.sweep(Instant::now());
    assert_eq!(shared.pending_len(), 2, "not yet expired");
    shared.sweep(Instant::now() + ttl + Duration::from_millis(1));
    assert_eq!(shared.pending_len(), 0);
    assert_eq!(pools(&shared), set(&["ns/p"]));
    assert!(holding(&shared, "10.0.0.35").is_empty());
    assert_eq!(allocatable(&shared, &pool_key("ns", "p")), before);
    shared.read().check_consistency();
}

#[test]
fn x2_decide_sweeps_expired_entries_first() {
    let ttl = Duration::from_millis(30);
    let clock = ManualClock::new();
    let shared = Ledger::with_ttl(Index::new(), ttl).with_clock(clock.clone());
    shared.admit(projection(&in_cluster_pool(
        "ns",
        "q",
        &["10.0.9.10-10.0.9.20"],
    )));
    clock.advance(ttl);
    let seen = shared.reserve(|index| (index.pools_and_pending().count(), None));
    assert_eq!(seen, 0);
}

#[test]
fn x2_the_same_write_renews_its_version_another_is_held_beside_it() {
    let ttl = Duration::from_millis(50);
    let shared = Ledger::with_ttl(Index::new(), ttl);
    let first = in_cluster_pool("ns", "p", &["10.0.0.10-10.0.0.20"]);
    let other = in_cluster_pool("ns", "p", &["10.0.0.10-10.0.0.30"]);
    shared.admit(projection(&first));
    shared.admit(projection(&first));
    assert_eq!(shared.pending_len(), 1, "a retry is the same version");
    shared.admit(projection(&other));
    assert_eq!(
        shared.pending_len(),
        2,
        "either write may be the one stored"
    );
    assert_eq!(holding(&shared, "10.0.0.15"), set(&["ns/p"]));
    assert_eq!(holding(&shared, "10.0.0.25"), set(&["ns/p"]));
    shared.read().check_consistency();
    // Nothing was stored before either: expiry leaves nothing behind.
    shared.sweep(Instant::now() + ttl * 2);
    assert!(pools(&shared).is_empty());
    shared.read().check_consistency();
}

#[test]
fn x2_relist_keeps_pending_entries_it_does_not_list() {
    let shared = Ledger::default();
    let mut feed = KindFeed::new(Kind::InClusterIPPool, "v1alpha2");
    let p = in_cluster_pool("ns", "p", &["10.0.0.10-10.0.0.20"]);
    let q = in_cluster_pool("ns", "q", &["10.0.9.10-10.0.9.20"]);
    feed.apply(&shared, Event::Apply(obj(p.clone())));
    shared.admit(projection(&q));

    // The list predates q's write.
    feed.apply(&shared, Event::Init);
    feed.apply(&shared, Event::InitApply(obj(p.clone())));
    feed.apply(&shared, Event::InitDone);
    assert_eq!(pools(&shared), set(&["ns/p", "ns/q"]));
    assert_eq!(shared.pending_len(), 1);

    // A later list shows q: the pending entry is done.
    feed.apply(&shared, Event::Init);
    feed.apply(&shared, Event::InitApply(obj(p)));
    feed.apply(&shared, Event::InitApply(obj(q)));
    feed.apply(&shared, Event::InitDone);
    assert_eq!(shared.pending_len(), 0);
    assert_eq!(pools(&shared), set(&["ns/p", "ns/q"]));
}

#[test]
fn x2_removed_kind_drops_its_pending_entries() {
    let shared = Ledger::default();
    shared.admit(projection(&in_cluster_pool(
        "ns",
        "q",
        &["10.0.9.10-10.0.9.20"],
    )));
    shared.admit(projection(&ip_address("ns", "x", "10.0.9.11", "q")));
    shared.clear_kind(Kind::InClusterIPPool);
    assert_eq!(shared.pending_len(), 1);
    assert!(pools(&shared).is_empty());
    let x = ObjKey::new(Kind::IPAddress, Some("ns"), "x");
    assert!(shared.read().address(&x).is_some());
    shared.read().check_consistency();
}

#[test]
fn x2_decisions_are_serialised_and_see_what_was_admitted_before() {
    // 64 threads race to create the same range; each decision sees the earlier admissions.
    let shared = Arc::new(Ledger::default());
    let barrier = Arc::new(Barrier::new(64));
    let handles: Vec<_> = (0..64)
        .map(|i| {
            let shared = shared.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let me = in_cluster_pool("ns", &format!("p{i}"), &["10.0.0.10-10.0.0.20"]);
                let proj = projection(&me);
                let Projection::Pool(pool) = &proj else {
                    unreachable!()
                };
                let set = pool.allocatable.clone();
                barrier.wait();
                shared.reserve(|index| {
                    let free = index.overlapping_pools("default", &set).is_empty();
                    (free, free.then_some(proj))
                })
            })
        })
        .collect();
    let allowed = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|ok| *ok)
        .count();
    assert_eq!(allowed, 1);
    assert_eq!(shared.pending_len(), 1);
}
