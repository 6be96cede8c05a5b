//! The ledger's pending versions (X2) against a model of what the API server stores.
//!
//! What X2 promises, whatever the order of admissions, stores, refusals and deletes:
//! - safety: every address a stored object holds, and every address an admitted write that has
//!   not ended would hold, is held in the index (a later conflicting write is refused);
//! - liveness: once every admitted write has landed, been refuted by what the watch shows, or
//!   outlived its TTL, the index holds exactly what is stored (no refusal of a write that
//!   conflicts with nothing).
//!
//! The model is IPAddresses of one pool-less space: enough to hold the ledger to both, since pools
//! and claims go through the same pending versions.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use ipam_guard::address::Ip;
use ipam_guard::cluster::{Basis, Caller, Ledger, ManualClock, Seen};
use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::model::{self, ObjKey, Projection};
use proptest::prelude::*;
use serde_json::json;

const TTL: Duration = Duration::from_secs(30);
const NAMES: [&str; 3] = ["a", "b", "c"];

fn key(name: &str) -> ObjKey {
    ObjKey::new(Kind::IPAddress, Some("ns"), name)
}

fn text(ip: u8) -> String {
    format!("10.0.0.{ip}")
}

fn address(name: &str, ip: u8) -> Projection {
    let v = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta1", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"address": text(ip), "prefix": 24,
                 "claimRef": {"name": name},
                 "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"}}
    });
    model::project(Kind::IPAddress, &v).unwrap()
}

fn holders(ledger: &Ledger, ip: u8) -> BTreeSet<String> {
    let ip = Ip::from_std(text(ip).parse().unwrap());
    ledger
        .read()
        .holders(ip)
        .map(|h| h.key.name.to_string())
        .collect()
}

fn seen(uid: u64, rv: u64) -> Seen {
    Seen {
        uid: Some(Arc::from(format!("uid-{uid}"))),
        resource_version: Some(rv),
        listed: false,
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// A CREATE of NAMES[name] at .ip admitted; the API server then stores it or refuses it
    /// (AlreadyExists when the name is taken, or a later webhook when `lands` is false).
    Create { name: usize, ip: u8, lands: bool },
    /// An UPDATE of NAMES[name] to .ip admitted against the stored version; stored or refused.
    Update { name: usize, ip: u8, lands: bool },
    /// A DELETE of NAMES[name], as the watch shows it.
    Delete { name: usize },
    /// The watch delivers the next `n` events it has not delivered yet.
    Catch { n: usize },
    /// Time passes.
    Wait { secs: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize, 1..6u8, any::<bool>()).prop_map(|(name, ip, lands)| Op::Create {
            name,
            ip,
            lands
        }),
        (0..3usize, 1..6u8, any::<bool>()).prop_map(|(name, ip, lands)| Op::Update {
            name,
            ip,
            lands
        }),
        (0..3usize).prop_map(|name| Op::Delete { name }),
        (1..4usize).prop_map(|n| Op::Catch { n }),
        (1..40u64).prop_map(|secs| Op::Wait { secs }),
    ]
}

/// What the API server stores and the events the watch has yet to deliver.
#[derive(Default)]
struct Cluster {
    rv: u64,
    uids: u64,
    /// name -> (uid, resourceVersion, ip)
    stored: BTreeMap<String, (u64, u64, u8)>,
    /// Events not yet delivered: (name, uid, rv, ip or None for a delete).
    queue: Vec<(String, u64, u64, Option<u8>)>,
}

/// A write admitted and stored whose event the watch has not delivered: its pending version
/// must hold its address meanwhile, for the TTL at least (safety).
struct Open {
    name: String,
    ip: u8,
    rv: u64,
    admitted_at: Duration,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_index_holds_what_is_stored_and_admitted_and_no_more_once_caught_up(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let clock = ManualClock::new();
        let ledger = Ledger::with_ttl(Index::new(), TTL).with_clock(clock.clone());
        let mut now = Duration::ZERO;
        let mut cluster = Cluster::default();
        let mut open: Vec<Open> = Vec::new();

        for op in ops {
            match op {
                Op::Create { name, ip, lands } => {
                    let name = NAMES[name].to_string();
                    cluster.uids += 1;
                    let uid = cluster.uids;
                    let basis = Basis { uid: Some(Arc::from(format!("uid-{uid}"))), ..Basis::default() };
                    ledger.admit_write(address(&name, ip), &Caller::Trusted, &basis);
                    if lands && !cluster.stored.contains_key(&name) {
                        cluster.rv += 1;
                        open.push(Open { name: name.clone(), ip, rv: cluster.rv, admitted_at: now });
                        cluster.stored.insert(name.clone(), (uid, cluster.rv, ip));
                        cluster.queue.push((name, uid, cluster.rv, Some(ip)));
                    }
                }
                Op::Update { name, ip, lands } => {
                    let name = NAMES[name].to_string();
                    let Some(&(uid, rv, _)) = cluster.stored.get(&name) else { continue };
                    let basis = Basis { uid: Some(Arc::from(format!("uid-{uid}"))), replaces: Some(rv), ..Basis::default() };
                    ledger.admit_write(address(&name, ip), &Caller::Trusted, &basis);
                    if lands {
                        cluster.rv += 1;
                        open.push(Open { name: name.clone(), ip, rv: cluster.rv, admitted_at: now });
                        cluster.stored.insert(name.clone(), (uid, cluster.rv, ip));
                        cluster.queue.push((name, uid, cluster.rv, Some(ip)));
                    }
                }
                Op::Delete { name } => {
                    let name = NAMES[name].to_string();
                    if let Some((uid, _, _)) = cluster.stored.remove(&name) {
                        cluster.rv += 1;
                        cluster.queue.push((name, uid, cluster.rv, None));
                    }
                }
                Op::Catch { n } => {
                    let n = n.min(cluster.queue.len());
                    for (name, uid, rv, ip) in cluster.queue.drain(..n) {
                        open.retain(|w| w.rv != rv);
                        let s = seen(uid, rv);
                        match ip {
                            Some(ip) => ledger.apply_seen(&key(&name), Some(address(&name, ip)), &s),
                            None => ledger.delete_seen(&key(&name), &s),
                        }
                    }
                }
                Op::Wait { secs } => {
                    let d = Duration::from_secs(secs);
                    clock.advance(d);
                    now += d;
                    ledger.sweep(ledger.now());
                    open.retain(|w| now - w.admitted_at < TTL);
                }
            }
            ledger.read().check_consistency();

            // Safety: what is stored and delivered is held; a stored write not yet delivered is
            // held by its admission for the TTL. (A later write of a name may have superseded an
            // undelivered one: only the newest write of each name must be held.)
            let delivered: BTreeMap<&str, u8> = {
                let mut m = BTreeMap::new();
                for (name, &(_, rv, ip)) in &cluster.stored {
                    let pending_event = cluster.queue.iter().any(|(n, _, r, _)| n == name && *r == rv);
                    if !pending_event { m.insert(name.as_str(), ip); }
                }
                m
            };
            for (name, ip) in &delivered {
                prop_assert!(holders(&ledger, *ip).contains(*name), "stored {name} at .{ip} not held");
            }
            let newest: BTreeMap<&str, &Open> = open.iter().map(|w| (w.name.as_str(), w)).collect();
            for w in newest.values() {
                prop_assert!(holders(&ledger, w.ip).contains(&w.name), "admitted {} at .{} not held", w.name, w.ip);
            }
        }

        // Liveness: the watch catches up and every TTL passes: the index is the stored state.
        for (name, uid, rv, ip) in cluster.queue.drain(..) {
            let s = seen(uid, rv);
            match ip {
                Some(ip) => ledger.apply_seen(&key(&name), Some(address(&name, ip)), &s),
                None => ledger.delete_seen(&key(&name), &s),
            }
        }
        clock.advance(TTL * 2);
        ledger.sweep(ledger.now());
        prop_assert_eq!(ledger.pending_len(), 0);
        for ip in 1..6u8 {
            let want: BTreeSet<String> = cluster
                .stored
                .iter()
                .filter(|(_, (_, _, at))| *at == ip)
                .map(|(n, _)| n.clone())
                .collect();
            prop_assert_eq!(holders(&ledger, ip), want, "at .{}", ip);
        }
        ledger.read().check_consistency();
    }
}

/// The path a controller's "create, and treat AlreadyExists as success" takes: a CREATE of a
/// stored name with other content is admitted, then refused by the API server. The stored object
/// still holds its address; the refused one holds its own only until the TTL.
#[test]
fn a_create_refused_as_already_exists_hides_nothing_stored() {
    let clock = ManualClock::new();
    let ledger = Ledger::with_ttl(Index::new(), TTL).with_clock(clock.clone());
    ledger.apply_seen(&key("a"), Some(address("a", 5)), &seen(1, 10));
    let again = Basis {
        uid: Some(Arc::from("uid-2")),
        replaces: None,
        ..Basis::default()
    };
    ledger.admit_write(address("a", 1), &Caller::Trusted, &again);
    assert_eq!(holders(&ledger, 5), BTreeSet::from(["a".to_string()]));
    assert_eq!(holders(&ledger, 1), BTreeSet::from(["a".to_string()]));
    // The stored object changes meanwhile: the refused create stays held (it is not its uid).
    ledger.apply_seen(&key("a"), Some(address("a", 5)), &seen(1, 11));
    assert_eq!(ledger.pending_len(), 1);
    clock.advance(TTL);
    ledger.sweep(ledger.now());
    assert!(
        holders(&ledger, 1).is_empty(),
        "a refused write costs at most the TTL"
    );
    assert_eq!(holders(&ledger, 5), BTreeSet::from(["a".to_string()]));
}

/// An UPDATE ends when the watch shows a later version of its object, whatever that version
/// holds; an older version (a watch behind the review) does not end it.
#[test]
fn an_update_ends_at_a_later_version_not_an_earlier_one() {
    let ledger = Ledger::default();
    ledger.apply_seen(&key("a"), Some(address("a", 5)), &seen(1, 10));
    let update = Basis {
        uid: Some(Arc::from("uid-1")),
        replaces: Some(12),
        ..Basis::default()
    };
    ledger.admit_write(address("a", 2), &Caller::Trusted, &update);
    ledger.apply_seen(&key("a"), Some(address("a", 5)), &seen(1, 12));
    assert_eq!(ledger.pending_len(), 1, "rv 12 is the version it replaces");
    assert_eq!(holders(&ledger, 2), BTreeSet::from(["a".to_string()]));
    ledger.apply_seen(&key("a"), Some(address("a", 4)), &seen(1, 13));
    assert_eq!(
        ledger.pending_len(),
        0,
        "another write won: this one never lands"
    );
    assert!(holders(&ledger, 2).is_empty());
    assert!(holders(&ledger, 5).is_empty());
}

/// A hand-over (or a review slower than the watch) carries writes the watch has already shown:
/// one whose object the watch showed deleted, or superseded, is not held again.
#[test]
fn an_admission_the_watch_has_already_shown_gone_is_not_held_again() {
    let ledger = Ledger::default();
    let create = Basis {
        uid: Some(Arc::from("uid-7")),
        replaces: None,
        ..Basis::default()
    };
    ledger.apply_seen(&key("a"), Some(address("a", 3)), &seen(7, 20));
    ledger.delete_seen(&key("a"), &seen(7, 21));
    assert!(ledger.shown_gone(&key("a"), &create));
    ledger.admit_write(address("a", 3), &Caller::Trusted, &create);
    assert_eq!(ledger.pending_len(), 0);
    assert!(
        holders(&ledger, 3).is_empty(),
        "a released address stays free"
    );

    let stale_update = Basis {
        uid: Some(Arc::from("uid-8")),
        replaces: Some(30),
        ..Basis::default()
    };
    ledger.apply_seen(&key("b"), Some(address("b", 4)), &seen(8, 31));
    ledger.admit_write(address("b", 2), &Caller::Trusted, &stale_update);
    assert_eq!(
        ledger.pending_len(),
        0,
        "the watch already shows a later version"
    );
}

/// A hand-over's admissions keep what is left of their TTL: the next decider does not give a
/// write refused long ago a whole new TTL.
#[test]
fn a_handed_over_admission_keeps_only_what_is_left_of_its_ttl() {
    let clock = ManualClock::new();
    let ledger = Ledger::with_ttl(Index::new(), TTL).with_clock(clock.clone());
    let old = Basis {
        uid: Some(Arc::from("uid-1")),
        admitted_ago: Duration::from_secs(25),
        ..Basis::default()
    };
    ledger.admit_write(address("a", 1), &Caller::Trusted, &old);
    assert_eq!(holders(&ledger, 1), BTreeSet::from(["a".to_string()]));
    clock.advance(Duration::from_secs(5));
    ledger.sweep(ledger.now());
    assert!(holders(&ledger, 1).is_empty());
    let expired = Basis {
        uid: Some(Arc::from("uid-2")),
        admitted_ago: TTL,
        ..Basis::default()
    };
    ledger.admit_write(address("b", 2), &Caller::Trusted, &expired);
    assert_eq!(ledger.pending_len(), 0, "past its TTL already");
}
