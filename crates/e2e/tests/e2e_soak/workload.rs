//! The clients: each draws its operations from its own stream of the seed and sends them
//! through the API server, as users' writes go, on a universe small enough that most writes
//! meet another object: 8 namespaced pools (two of them in address space `blue`), 3 global
//! pools, 40 addresses and their 40 claims, all inside 10.50.0.0/24.
//!
//! Besides plain creates, updates (grow, shrink, move) and deletes, the mix holds the path that
//! once broke: a CREATE of a name that already exists, with other addresses (ipam-guard admits
//! it, the API server answers AlreadyExists), followed at once by a write that takes the stored
//! object's addresses ("chase"). And draining a pool: deleting its addresses, then the pool,
//! while other clients may be adding to it (P9).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::cluster::send;
use super::model::*;
use super::rng::Rng;

pub const POOLS: usize = 8;
/// Pools `pool-6` and `pool-7` are in address space `blue`: they may share addresses with the
/// others, never with each other.
const BLUE_FROM: usize = 6;
pub const GLOBAL_POOLS: usize = 3;
pub const ADDRESSES: usize = 40;
const NET: &str = "10.50.0";
/// Addresses are drawn in `.2`-`.254`: never the network, the gateway (`.1`) nor the broadcast
/// address, so what a pool can hand out is what it declares minus its exclusions.
const LOW: u64 = 2;
const HIGH: u64 = 254;

pub fn pool_key(i: usize) -> Key {
    Key::new(Kind::Pool, format!("pool-{i}"))
}

fn global_key(i: usize) -> Key {
    Key::new(Kind::GlobalPool, format!("gpool-{i}"))
}

fn space_of(key: &Key) -> &'static str {
    match key
        .name
        .strip_prefix("pool-")
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(n) if key.kind == Kind::Pool && n >= BLUE_FROM => "blue",
        _ => DEFAULT_SPACE,
    }
}

fn address_key(i: usize) -> Key {
    Key::new(Kind::Address, format!("addr-{i}"))
}

fn claim_of(address: &Key) -> String {
    address.name.replacen("addr-", "claim-", 1)
}

/// Everything the run shares: its clock, the history, and the clients' idea of what is stored
/// (only to aim their next writes; the checker never reads it).
pub struct Shared {
    pub epoch: Instant,
    pub history: Mutex<Vec<Record>>,
    known: Mutex<HashMap<Key, Spec>>,
    pub stop: AtomicBool,
}

impl Shared {
    pub fn new() -> Shared {
        Shared {
            epoch: Instant::now(),
            history: Mutex::default(),
            known: Mutex::default(),
            stop: AtomicBool::new(false),
        }
    }

    pub fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    fn learn(&self, r: &Record) {
        let mut known = self.known.lock().unwrap();
        match (&r.outcome, r.method) {
            (Outcome::Done, Method::Create | Method::Update) => {
                if let Some(spec) = &r.spec {
                    known.insert(r.key.clone(), spec.clone());
                }
            }
            (Outcome::Done | Outcome::NotFound, Method::Delete)
            | (Outcome::NotFound, Method::Update) => {
                known.remove(&r.key);
            }
            _ => {}
        }
    }

    fn known(&self) -> HashMap<Key, Spec> {
        self.known.lock().unwrap().clone()
    }
}

/// One call a client makes.
#[derive(Clone, Debug)]
pub struct Step {
    pub tag: &'static str,
    pub method: Method,
    pub key: Key,
    pub spec: Option<Spec>,
}

impl Step {
    fn create(tag: &'static str, key: Key, spec: Spec) -> Step {
        Step {
            tag,
            method: Method::Create,
            key,
            spec: Some(spec),
        }
    }

    fn delete(tag: &'static str, key: Key) -> Step {
        Step {
            tag,
            method: Method::Delete,
            key,
            spec: None,
        }
    }
}

fn ip(last: u64) -> String {
    format!("{NET}.{last}")
}

/// The last octet of `10.50.0.x`.
fn octet(text: &str) -> Option<u64> {
    text.strip_prefix(&format!("{NET}."))?.parse().ok()
}

/// The last octets a pool spec declares, minus its exclusions (its entries are all ours:
/// `a`, `a-b` or `a/29`).
fn octets(p: &PoolSpec) -> Vec<u64> {
    let expand = |entry: &String| -> Vec<u64> {
        if let Some((a, b)) = entry.split_once('-') {
            match (octet(a), octet(b)) {
                (Some(a), Some(b)) => (a..=b).collect(),
                _ => Vec::new(),
            }
        } else if let Some((a, len)) = entry.split_once('/') {
            match (octet(a), len.parse::<u32>()) {
                (Some(a), Ok(len)) if len >= 24 => (a..a + (1 << (32 - len))).collect(),
                _ => Vec::new(),
            }
        } else {
            octet(entry).into_iter().collect()
        }
    };
    let excluded: Vec<u64> = p.excluded.iter().flat_map(expand).collect();
    let mut all: Vec<u64> = p
        .addresses
        .iter()
        .flat_map(expand)
        .filter(|o| !excluded.contains(o) && (LOW..=HIGH).contains(o))
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

fn range_entry(lo: u64, hi: u64) -> String {
    match lo == hi {
        true => ip(lo),
        false => format!("{}-{}", ip(lo), ip(hi)),
    }
}

fn pool_spec(key: &Key, addresses: Vec<String>, excluded: Vec<String>) -> Spec {
    Spec::Pool(PoolSpec {
        addresses,
        excluded,
        gateway: Some(ip(1)),
        prefix: 24,
        allocate_reserved: false,
        space: space_of(key).to_string(),
    })
}

/// A client's operations, drawn from its own stream.
pub struct Planner {
    rng: Rng,
}

impl Planner {
    pub fn new(rng: Rng) -> Planner {
        Planner { rng }
    }

    /// A random pool: one range of 1-10 addresses, sometimes a /29 instead, sometimes one more
    /// single address, sometimes one exclusion.
    fn random_pool(&mut self, key: &Key) -> Spec {
        let mut addresses = Vec::new();
        let (lo, hi);
        if self.rng.chance(0.15) {
            lo = 8 * self.rng.between(1, 30);
            hi = lo + 7;
            addresses.push(format!("{}/29", ip(lo)));
        } else {
            let len = self.rng.between(1, 10);
            lo = self.rng.between(LOW, HIGH - len + 1);
            hi = lo + len - 1;
            addresses.push(range_entry(lo, hi));
        }
        if self.rng.chance(0.15) {
            let extra = self.rng.between(LOW, HIGH);
            if extra < lo || extra > hi {
                addresses.push(ip(extra));
            }
        }
        let mut excluded = Vec::new();
        if hi > lo && self.rng.chance(0.1) {
            excluded.push(ip(self.rng.between(lo, hi)));
        }
        pool_spec(key, addresses, excluded)
    }

    /// A pool of `key`'s kind and space with addresses overlapping `of` (the chase).
    fn overlapping_pool(&mut self, key: &Key, of: &PoolSpec) -> Spec {
        let taken = octets(of);
        let Some(&at) = taken.get(self.rng.below(taken.len().max(1) as u64) as usize) else {
            return self.random_pool(key);
        };
        let lo = at.saturating_sub(self.rng.below(3)).max(LOW);
        let hi = (at + self.rng.below(3)).min(HIGH);
        let entry = range_entry(lo, hi);
        pool_spec(key, vec![entry], Vec::new())
    }

    fn any_pool(&mut self) -> Key {
        match self.rng.chance(0.25) {
            true => global_key(self.rng.below(GLOBAL_POOLS as u64) as usize),
            false => pool_key(self.rng.below(POOLS as u64) as usize),
        }
    }

    /// A pool key, from those believed stored with probability `p_known`.
    fn pool(&mut self, known: &HashMap<Key, Spec>, p_known: f64) -> Key {
        let mut stored: Vec<&Key> = known.keys().filter(|k| k.kind.is_pool()).collect();
        stored.sort();
        if !stored.is_empty() && self.rng.chance(p_known) {
            return (*self.rng.pick(&stored)).clone();
        }
        self.any_pool()
    }

    fn address(&mut self, known: &HashMap<Key, Spec>, stored: bool) -> Key {
        let mut list: Vec<&Key> = known.keys().filter(|k| k.kind == Kind::Address).collect();
        list.sort();
        if stored && !list.is_empty() {
            return (*self.rng.pick(&list)).clone();
        }
        // A name believed free, when there is one.
        for _ in 0..8 {
            let k = address_key(self.rng.below(ADDRESSES as u64) as usize);
            if !known.contains_key(&k) || stored {
                return k;
            }
        }
        address_key(self.rng.below(ADDRESSES as u64) as usize)
    }

    fn address_spec(&mut self, key: &Key, known: &HashMap<Key, Spec>) -> Spec {
        // The pool of the address's claim when it is known, so that A6 rarely objects.
        let claim = Key::new(Kind::Claim, claim_of(key));
        let pool = match known.get(&claim) {
            Some(Spec::Claim { pool }) if self.rng.chance(0.9) => pool.clone(),
            _ => self.pool(known, 0.9),
        };
        let inside = known.get(&pool).and_then(Spec::pool).map(octets);
        let at = match inside {
            Some(o) if !o.is_empty() && self.rng.chance(0.85) => *self.rng.pick(&o),
            _ => self.rng.between(LOW, HIGH),
        };
        Spec::Address(AddressSpec {
            ip: ip(at),
            pool,
            claim: claim_of(key),
        })
    }

    /// The next operation: one or more calls.
    pub fn next(&mut self, known: &HashMap<Key, Spec>) -> Vec<Step> {
        const WEIGHTS: [u32; 10] = [8, 9, 10, 3, 3, 22, 14, 18, 6, 3];
        match self.rng.weighted(&WEIGHTS) {
            0 => {
                let key = self.pool(&HashMap::new(), 0.0);
                let spec = self.random_pool(&key);
                vec![Step::create("create-pool", key, spec)]
            }
            1 => self.recreate_pool(known),
            2 => self.update_pool(known),
            3 => vec![Step::delete("delete-pool", self.pool(known, 0.8))],
            4 => {
                let pool = self.pool(known, 1.0);
                let mut held: Vec<Key> = known
                    .iter()
                    .filter(|(_, s)| s.address().is_some_and(|a| a.pool == pool))
                    .map(|(k, _)| k.clone())
                    .collect();
                held.sort();
                let mut steps: Vec<Step> = held
                    .into_iter()
                    .map(|k| Step::delete("drain-address", k))
                    .collect();
                steps.push(Step::delete("drain-pool", pool));
                steps
            }
            5 => {
                let key = self.address(known, false);
                let spec = self.address_spec(&key, known);
                vec![Step::create("create-address", key, spec)]
            }
            6 => self.recreate_address(known),
            7 => vec![Step::delete("delete-address", self.address(known, true))],
            8 => {
                let n = self.rng.below(ADDRESSES as u64) as usize;
                let key = Key::new(Kind::Claim, claim_of(&address_key(n)));
                // The pool of the address the claim is for, when known, so A6 rarely objects.
                let pool = match known.get(&address_key(n)).and_then(Spec::address) {
                    Some(a) if self.rng.chance(0.8) => a.pool.clone(),
                    _ => self.pool(known, 0.9),
                };
                vec![Step::create("create-claim", key, Spec::Claim { pool })]
            }
            _ => {
                let n = self.rng.below(ADDRESSES as u64) as usize;
                let key = Key::new(Kind::Claim, claim_of(&address_key(n)));
                vec![Step::delete("delete-claim", key)]
            }
        }
    }

    /// A CREATE of a stored pool's name with other addresses (AlreadyExists), then, mostly, a
    /// write of the stored pool's addresses by another pool of its space.
    fn recreate_pool(&mut self, known: &HashMap<Key, Spec>) -> Vec<Step> {
        let key = self.pool(known, 1.0);
        let spec = self.random_pool(&key);
        let mut steps = vec![Step::create("recreate-pool", key.clone(), spec)];
        if let Some(stored) = known.get(&key).and_then(Spec::pool) {
            if self.rng.chance(0.7) {
                let other = self.same_space_pool(&key, known);
                let spec = self.overlapping_pool(&other, stored);
                let step = match known.contains_key(&other) && self.rng.chance(0.5) {
                    true => Step {
                        tag: "chase-pool-update",
                        method: Method::Update,
                        key: other,
                        spec: Some(spec),
                    },
                    false => Step::create("chase-pool", other, spec),
                };
                steps.push(step);
            }
        }
        steps
    }

    /// Another pool whose addresses count in `key`'s space.
    fn same_space_pool(&mut self, key: &Key, known: &HashMap<Key, Spec>) -> Key {
        for _ in 0..16 {
            let other = self.any_pool();
            if other != *key && space_of(&other) == space_of(key) {
                // Rather a name not stored, so the chase is a create that can succeed.
                if !known.contains_key(&other) || self.rng.chance(0.3) {
                    return other;
                }
            }
        }
        match space_of(key) {
            "blue" => pool_key(if key.name == "pool-6" { 7 } else { 6 }),
            _ => global_key(self.rng.below(GLOBAL_POOLS as u64) as usize),
        }
    }

    fn recreate_address(&mut self, known: &HashMap<Key, Spec>) -> Vec<Step> {
        let key = self.address(known, true);
        let spec = self.address_spec(&key, known);
        let mut steps = vec![Step::create("recreate-address", key.clone(), spec)];
        if let Some(stored) = known.get(&key).and_then(Spec::address) {
            if self.rng.chance(0.7) {
                let other = self.address(known, false);
                if other != key {
                    let spec = Spec::Address(AddressSpec {
                        ip: stored.ip.clone(),
                        pool: stored.pool.clone(),
                        claim: claim_of(&other),
                    });
                    steps.push(Step::create("chase-address", other, spec));
                }
            }
        }
        steps
    }

    /// Grows, shrinks or moves a pool (a merge patch of its addresses).
    fn update_pool(&mut self, known: &HashMap<Key, Spec>) -> Vec<Step> {
        let key = self.pool(known, 0.95);
        let spec = match known.get(&key).and_then(Spec::pool).map(octets) {
            Some(o) if !o.is_empty() => {
                let (lo, hi) = (o[0], o[o.len() - 1]);
                match self.rng.below(3) {
                    0 => {
                        let (down, up) = (self.rng.between(1, 3), self.rng.between(1, 3));
                        let entry =
                            range_entry(lo.saturating_sub(down).max(LOW), (hi + up).min(HIGH));
                        pool_spec(&key, vec![entry], Vec::new())
                    }
                    1 if hi > lo => {
                        let entry = match self.rng.chance(0.5) {
                            true => range_entry(lo + 1, hi),
                            false => range_entry(lo, hi - 1),
                        };
                        pool_spec(&key, vec![entry], Vec::new())
                    }
                    _ => self.random_pool(&key),
                }
            }
            _ => self.random_pool(&key),
        };
        vec![Step {
            tag: "update-pool",
            method: Method::Update,
            key,
            spec: Some(spec),
        }]
    }
}

/// Sends one step through the API server and records it.
pub async fn execute(client: &kube::Client, shared: &Shared, id: usize, step: Step) -> Record {
    let send_at = shared.now();
    let result = match step.method {
        Method::Create => {
            let body = step.spec.as_ref().unwrap().object(&step.key);
            super::cluster::send(
                client,
                http::Method::POST,
                &step.key.kind.collection(),
                Some(&body),
                "application/json",
            )
            .await
        }
        Method::Update => {
            let pool = step.spec.as_ref().and_then(Spec::pool).unwrap();
            let excluded = match pool.excluded.is_empty() {
                true => Value::Null,
                false => json!(pool.excluded),
            };
            let patch =
                json!({"spec": {"addresses": pool.addresses, "excludedAddresses": excluded}});
            send(
                client,
                http::Method::PATCH,
                &step.key.path(),
                Some(&patch),
                "application/merge-patch+json",
            )
            .await
        }
        Method::Delete => {
            send(
                client,
                http::Method::DELETE,
                &step.key.path(),
                None,
                "application/json",
            )
            .await
        }
    };
    let answer = shared.now();
    let uid = result
        .as_ref()
        .ok()
        .and_then(|(_, b)| b["metadata"]["uid"].as_str().map(str::to_string));
    let (outcome, status, message) = classify(&result);
    let record = Record {
        client: id,
        tag: step.tag,
        method: step.method,
        key: step.key,
        spec: step.spec,
        send: send_at,
        answer,
        outcome,
        status,
        message,
        uid,
    };
    shared.learn(&record);
    shared.history.lock().unwrap().push(record.clone());
    record
}

/// One client: operations one after another until `until` or `max_ops` calls.
pub async fn client(
    id: usize,
    client: kube::Client,
    shared: &Shared,
    rng: Rng,
    until: Duration,
    max_ops: usize,
) {
    let mut planner = Planner::new(rng);
    let mut calls = 0;
    while shared.epoch.elapsed() < until && calls < max_ops && !shared.stop.load(Ordering::Relaxed)
    {
        let steps = planner.next(&shared.known());
        for step in steps {
            let r = execute(&client, shared, id, step).await;
            calls += 1;
            // Back off as a controller does: without an API server, or while ipam-guard fails
            // closed, a retry at once only adds load.
            match r.outcome {
                Outcome::NoAnswer => tokio::time::sleep(Duration::from_millis(200)).await,
                Outcome::Unavailable | Outcome::WebhookFailed | Outcome::WebhookTimeout => {
                    let pause = planner.rng.millis(50, 250);
                    tokio::time::sleep(pause).await;
                }
                _ => {}
            }
        }
        let pause = planner.rng.millis(0, 20);
        tokio::time::sleep(pause).await;
    }
}

/// One LIST of a kind, as the API server stored it at `at`.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub kind: Kind,
    pub at: f64,
    /// (name, uid, spec)
    pub items: Vec<(String, String, Spec)>,
}

pub async fn list(client: &kube::Client, shared: &Shared, kind: Kind) -> Option<Snapshot> {
    let at = shared.now();
    let (status, body) = send(
        client,
        http::Method::GET,
        &kind.collection(),
        None,
        "application/json",
    )
    .await
    .ok()?;
    if status != 200 {
        return None;
    }
    let items = body["items"]
        .as_array()?
        .iter()
        .filter_map(|o| {
            Some((
                o["metadata"]["name"].as_str()?.to_string(),
                o["metadata"]["uid"].as_str()?.to_string(),
                Spec::from_object(kind, o)?,
            ))
        })
        .collect();
    Some(Snapshot { kind, at, items })
}

/// LISTs of the pools and addresses every `every` until the run stops.
pub async fn snapshots(
    client: kube::Client,
    shared: &Shared,
    every: Duration,
    until: Duration,
) -> Vec<Snapshot> {
    let mut out = Vec::new();
    while shared.epoch.elapsed() < until && !shared.stop.load(Ordering::Relaxed) {
        tokio::time::sleep(every).await;
        for kind in [Kind::Pool, Kind::GlobalPool, Kind::Address] {
            if let Some(s) = list(&client, shared, kind).await {
                out.push(s);
            }
        }
    }
    out
}
