//! The live view's event stream against a model of what the events say is stored (X1, X2).
//!
//! Input: a sequence of steps over a tiny universe (one namespace, three names, InClusterIPPool
//! and IPAddress, a handful of addresses, uids and resourceVersions from small ranges), each
//! step one of: a watch event through `KindFeed::apply` (Apply, Delete, and relists as Init,
//! InitApply…, InitDone), a write admitted through `Ledger::admit_write` (trusted or a stranger,
//! with or without a basis), or time passing on a `ManualClock` followed by a sweep. The model
//! knows only what the events stored: an Apply or an InitApply stores its object, a Delete
//! removes it, and an InitDone leaves exactly the objects listed since its Init for that kind.
//!
//! After every step: the index is consistent; what it stores is exactly the model; every stored
//! address is among the holders of its IP and every stored pool is found whole by
//! `overlapping_pools` (a pending version is held beside what is stored, never in its place, so
//! it can never hide it). At the end, past every TTL and grace with no admission since, nothing is
//! pending and the holders and overlapping pools of each address of the universe are exactly the
//! model's.
//!
//! The event order is one a watcher can produce: while a kind is relisting its only events are
//! InitApply and InitDone (an Apply drawn then is sent as an InitApply; a Delete is dropped).
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ipam_guard::address::{AddrSet, Ip, IpRange};
use ipam_guard::cluster::live::KindFeed;
use ipam_guard::cluster::{Basis, Caller, Ledger, ManualClock, WatchedObject, PENDING_TTL};
use ipam_guard::index::Index;
use ipam_guard::kinds::{Kind, ADDRESS_SPACE_ANNOTATION, DEFAULT_ADDRESS_SPACE};
use ipam_guard::model::{self, ObjKey, Projection};
use kube::runtime::watcher::Event;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const NS: &str = "ns";
const NAMES: [&str; 3] = ["a", "b", "c"];
const KINDS: [(Kind, &str); 2] = [
    (Kind::InClusterIPPool, "v1alpha2"),
    (Kind::IPAddress, "v1beta2"),
];
const SPACES: [&str; 2] = [DEFAULT_ADDRESS_SPACE, "blue"];
/// Every address the universe can hold; the final check asks about each.
const IPS: [&str; 6] = [
    "10.0.0.10",
    "10.0.0.11",
    "10.0.0.12",
    "10.0.0.13",
    "fd00::10",
    "fd00::11",
];
/// What an IPAddress's `spec.address` may say: the universe, and one that holds nothing.
const ADDRESS_VALUES: [&str; 7] = [
    "10.0.0.10",
    "10.0.0.11",
    "10.0.0.12",
    "10.0.0.13",
    "fd00::10",
    "fd00::11",
    "10.0.0.300",
];
/// Pool entries, overlapping one another; the last one is refused by the pool's reader.
const V4_ENTRIES: [&str; 6] = [
    "10.0.0.10",
    "10.0.0.11",
    "10.0.0.10-10.0.0.12",
    "10.0.0.12/31",
    "10.0.0.13",
    "not-an-address",
];
const V6_ENTRIES: [&str; 3] = ["fd00::10-fd00::11", "fd00::11", "fd00::10/127"];
/// How far the clock moves in one step: around the stranger TTL (5 s), the reuse grace given to
/// the ledger (10 s) and the pending TTL (30 s).
const STEPS: [Duration; 8] = [
    Duration::from_millis(1),
    Duration::from_secs(1),
    Duration::from_secs(4),
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(29),
    Duration::from_secs(30),
    Duration::from_secs(31),
];
const MAX_STEPS: usize = 64;

/// What the events stored, per kind and name: the object and its projection.
#[derive(Default)]
struct Model {
    stored: BTreeMap<(usize, &'static str), Projection>,
    /// Names listed since the kind's Init, while it relists.
    relisting: [Option<BTreeSet<&'static str>>; 2],
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured) -> Result<()> {
    let clock = ManualClock::at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000));
    let ledger = Ledger::with_ttl(Index::new(), PENDING_TTL)
        .with_clock(clock.clone())
        .with_reuse_grace(Duration::from_secs(10));
    let mut feeds = KINDS.map(|(kind, version)| KindFeed::new(kind, version));
    let mut model = Model::default();
    let mut steps = 0;
    // Whatever happens inside, the end state is checked: a step that ran out of input ends the
    // sequence, not the check.
    let outcome = (|| -> Result<()> {
        while !u.is_empty() && steps < MAX_STEPS {
            steps += 1;
            step(u, &ledger, &clock, &mut feeds, &mut model)?;
            check(&ledger, &model);
        }
        Ok(())
    })();
    clock.advance(Duration::from_secs(3600));
    ledger.sweep(ledger.now());
    check(&ledger, &model);
    check_settled(&ledger, &model);
    outcome
}

fn step(
    u: &mut Unstructured,
    ledger: &Ledger,
    clock: &ManualClock,
    feeds: &mut [KindFeed; 2],
    model: &mut Model,
) -> Result<()> {
    let what = u.int_in_range(0..=7u8)?;
    let k = u.int_in_range(0..=1usize)?;
    let name = *u.choose(&NAMES)?;
    let feed = &mut feeds[k];
    match what {
        // A watch event showing the object stored.
        0 | 1 => {
            let obj = object(u, k, name)?;
            let projection = project(k, &obj);
            let event = match &mut model.relisting[k] {
                Some(listed) => {
                    listed.insert(name);
                    Event::InitApply(watched(obj))
                }
                None => Event::Apply(watched(obj)),
            };
            feed.apply(ledger, event);
            store(model, k, name, projection);
        }
        // A watch event showing it deleted (in whatever version the event carries).
        2 => {
            if model.relisting[k].is_none() {
                let obj = object(u, k, name)?;
                feed.apply(ledger, Event::Delete(watched(obj)));
                model.stored.remove(&(k, name));
            }
        }
        // A relist begins (again, if one was under way: the watcher restarts it).
        3 => {
            feed.apply(ledger, Event::Init);
            model.relisting[k] = Some(BTreeSet::new());
        }
        // A relist ends: what it did not list is gone. Without an Init this is an empty list.
        4 => {
            if model.relisting[k].is_none() {
                feed.apply(ledger, Event::Init);
            }
            assert!(feed.apply(ledger, Event::InitDone), "InitDone ends a list");
            let listed = model.relisting[k].take().unwrap_or_default();
            model
                .stored
                .retain(|(kk, n), _| *kk != k || listed.contains(n));
        }
        // An admitted write, held until the watch shows it landed or refuted or its TTL passes.
        5 | 6 => {
            let obj = object(u, k, name)?;
            let caller = if u.ratio(1, 4)? {
                let last = u.int_in_range(1..=2u8)?;
                Caller::Stranger(IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)))
            } else {
                Caller::Trusted
            };
            let basis = Basis {
                uid: uid(u)?,
                replaces: if u.arbitrary()? {
                    Some(u.int_in_range(1..=6u64)?)
                } else {
                    None
                },
                // A handed-over admission keeps only what is left of its TTL.
                admitted_ago: if u.ratio(1, 4)? {
                    std::time::Duration::from_millis(u.int_in_range(0..=6_000u64)?)
                } else {
                    std::time::Duration::ZERO
                },
            };
            if let Some(p) = project(k, &obj) {
                ledger.admit_write(p, &caller, &basis);
            }
        }
        // Time passes; a sweep drops what expired.
        _ => {
            clock.advance(*u.choose(&STEPS)?);
            ledger.sweep(ledger.now());
        }
    }
    Ok(())
}

fn store(model: &mut Model, k: usize, name: &'static str, projection: Option<Projection>) {
    match projection {
        Some(p) => {
            model.stored.insert((k, name), p);
        }
        // An object that projects to nothing is not in the index.
        None => {
            model.stored.remove(&(k, name));
        }
    }
}

fn watched(v: Value) -> WatchedObject {
    WatchedObject::from_value(v).expect("the universe's objects are valid watch objects")
}

fn project(k: usize, v: &Value) -> Option<Projection> {
    model::project(KINDS[k].0, v)
}

fn uid(u: &mut Unstructured) -> Result<Option<Arc<str>>> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => None,
        n => Some(Arc::from(format!("uid-{n}"))),
    })
}

/// An object of kind `k` named `name`, as the watch or a review shows it.
fn object(u: &mut Unstructured, k: usize, name: &str) -> Result<Value> {
    let mut metadata = json!({"name": name, "namespace": NS});
    if let Some(uid) = uid(u)? {
        metadata["uid"] = json!(&*uid);
    }
    if u.ratio(3, 4)? {
        metadata["resourceVersion"] = json!(u.int_in_range(1..=6u64)?.to_string());
    }
    if u.ratio(1, 8)? {
        metadata["deletionTimestamp"] = json!("2023-11-14T22:13:20Z");
    }
    let kind = KINDS[k].0;
    let v = if kind == Kind::InClusterIPPool {
        if u.ratio(1, 4)? {
            metadata["annotations"] = json!({ ADDRESS_SPACE_ANNOTATION: SPACES[1] });
        }
        let v6 = u.ratio(1, 4)?;
        let entries: &[&str] = if v6 { &V6_ENTRIES } else { &V4_ENTRIES };
        let mut addresses = Vec::new();
        for _ in 0..u.int_in_range(0..=3u8)? {
            addresses.push(*u.choose(entries)?);
        }
        let mut spec = if v6 {
            json!({"addresses": addresses, "prefix": 64, "gateway": "fd00::1"})
        } else {
            json!({"addresses": addresses, "prefix": 24, "gateway": "10.0.0.1"})
        };
        if u.ratio(1, 4)? {
            spec["addressReuseGracePeriodSeconds"] = json!(u.int_in_range(0..=20u8)?);
        }
        json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": metadata, "spec": spec
        })
    } else {
        let address = *u.choose(&ADDRESS_VALUES)?;
        let pool = *u.choose(&NAMES)?;
        json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
            "metadata": metadata,
            "spec": {
                "address": address, "prefix": 24, "gateway": "10.0.0.1",
                "claimRef": {"name": name},
                "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": pool}
            }
        })
    };
    Ok(v)
}

fn key(k: usize, name: &str) -> ObjKey {
    ObjKey::new(KINDS[k].0, Some(NS), name)
}

fn ip(text: &str) -> Ip {
    Ip::from_std(text.parse().expect("the universe's addresses parse"))
}

fn single(ip: Ip) -> AddrSet {
    AddrSet::from_ranges(ip.family, [IpRange::new(ip.value, ip.value)])
}

/// After every step: the index is consistent, stores exactly the model, and hides none of it.
fn check(ledger: &Ledger, model: &Model) {
    let index = ledger.read();
    index.check_consistency();
    let pools: BTreeMap<String, _> = index
        .pools()
        .map(|p| (p.key.ns_name(), p.clone()))
        .collect();
    let addresses: BTreeMap<String, _> = index
        .addresses()
        .map(|a| (a.key.ns_name(), a.clone()))
        .collect();
    let (mut want_pools, mut want_addresses) = (BTreeMap::new(), BTreeMap::new());
    for ((k, name), p) in &model.stored {
        let ns_name = key(*k, name).ns_name();
        match p {
            Projection::Pool(p) => {
                want_pools.insert(ns_name, (**p).clone());
            }
            Projection::Address(a) => {
                want_addresses.insert(ns_name, a.clone());
            }
            Projection::Claim(_) | Projection::Cluster(_) | Projection::Holder(_) => {
                unreachable!("the universe has no claims, clusters or holders")
            }
        }
    }
    assert_eq!(
        pools, want_pools,
        "the stored pools are not what the watch showed"
    );
    assert_eq!(
        addresses, want_addresses,
        "the stored addresses are not what the watch showed"
    );
    for a in want_addresses.values() {
        if let Some(ip) = a.ip {
            assert!(
                index.holders(ip).any(|h| h.key == a.key),
                "stored {} is not among the holders of {ip}",
                a.key
            );
        }
    }
    for p in want_pools.values() {
        if p.allocatable.is_empty() {
            continue;
        }
        let found = index.overlapping_pools(&p.space, &p.allocatable);
        let shared = found
            .iter()
            .find(|(q, _)| q.key == p.key)
            .map(|(_, s)| s)
            .unwrap_or_else(|| panic!("stored {} is not found over its own addresses", p.key));
        assert!(
            shared.contains_set(&p.allocatable),
            "stored {} is found over {shared} only, not all of {}",
            p.key,
            p.allocatable
        );
    }
}

/// Past every TTL with no admission since: only what the watch showed holds anything.
fn check_settled(ledger: &Ledger, model: &Model) {
    assert_eq!(
        ledger.pending_len(),
        0,
        "pending versions outlived their TTL"
    );
    let index = ledger.read();
    for text in IPS {
        let ip = ip(text);
        let holders: BTreeSet<String> = index.holders(ip).map(|a| a.key.ns_name()).collect();
        let want: BTreeSet<String> = model
            .stored
            .values()
            .filter_map(|p| match p {
                Projection::Address(a) if a.ip == Some(ip) => Some(a.key.ns_name()),
                _ => None,
            })
            .collect();
        assert_eq!(holders, want, "holders of {ip}");
        for space in SPACES {
            let found: BTreeSet<String> = index
                .overlapping_pools(space, &single(ip))
                .into_iter()
                .map(|(p, _)| p.key.ns_name())
                .collect();
            let want: BTreeSet<String> = model
                .stored
                .values()
                .filter_map(|p| match p {
                    Projection::Pool(p) if &*p.space == space && p.allocatable.contains(ip) => {
                        Some(p.key.ns_name())
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(found, want, "pools over {ip} in space {space}");
        }
    }
}
