//! What every view holds: the index the rules read, the pending entries of SPEC X2, and the lock
//! that serialises decisions. The live view feeds it from watches; the static view (`--dev`,
//! `--state-from`) from files; both let admission go through `reserve`, so a dev server also refuses
//! the second of two overlapping creates.
//!
//! Pending entries live inside the index (so every rule sees them without knowing about them) and
//! in a side table that remembers what each one displaced, so an entry that expires (the write
//! failed after we admitted it) gives back the real object it covered, not a hole.
//!
//! Why one decision lock rather than one per address space: a decision takes microseconds, and an
//! IPAddress's space is only known after reading its pool from the index, so a per-space lock would
//! need a read before the lock and a re-check after it. One lock serialises every space at once,
//! which is what X2 asks and more.
//!
//! Lock order: `decisions`, then `state`, then whatever `PendingHold` locks. Watch events take
//! only `state`.
//!
//! Each entry's lifetime is chosen by who admitted it (`trust.rs`): a stranger's is short, is not
//! extended by retries, and its unconfirmed expiries count against the caller's address.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::net::IpAddr;
use std::ops::Deref;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use super::clock::{self, Clock};
use super::trust::{Caller, StrangerPolicy, Strikes, PENDING_TTL};
use super::ClusterView;
use crate::index::{FastMap, Index, Object};
use crate::kinds::Kind;
use crate::model::{ObjKey, Projection};

/// Tells `sweep` which kinds' pending entries must not expire now: the live view holds those of a
/// kind whose watch is sick, since only that watch could confirm or refute them. A stranger's
/// entry is not held: a forged review must not block writes for as long as a watch is sick.
pub trait PendingHold: Send + Sync + std::fmt::Debug {
    fn holds(&self, kind: Kind, now: Instant) -> bool;
}

/// The index plus pending entries and the decision lock: a ledger of what the cluster holds, with
/// admitted writes entered before the watch confirms them. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Ledger {
    state: RwLock<State>,
    decisions: Mutex<()>,
    ttl: Duration,
    strangers: StrangerPolicy,
    hold: Option<Arc<dyn PendingHold>>,
    clock: Arc<dyn Clock>,
    /// `--reuse-grace`: how long an address released from a pool that sets no grace of its own
    /// stays unavailable to a new holder (R1). Zero: off.
    reuse_grace: Duration,
}

#[derive(Debug, Default)]
struct State {
    index: Index,
    pending: FastMap<ObjKey, Pending>,
    /// Admissions by expiry, earliest first: a sweep looks only at the top instead of scanning
    /// every pending entry (a busy dev server or load test can hold tens of thousands). A pending
    /// entry has one live slot (`Pending::slot`); a re-admission that moves its expiry later does
    /// not add one (the sweep moves the slot when it comes up), else the heap grew by one slot
    /// per admission: 28k admissions/s of one object under wrk held 840k slots, 85 MiB, for the
    /// TTL. Slots of entries since confirmed by the watch are skipped when they come up.
    expiries: BinaryHeap<Reverse<(Instant, ObjKey)>>,
    strikes: Strikes,
    /// Address objects and claims the watch has shown marked for deletion, with when it first
    /// did: an address's release begins when it or its claim began to go (the in-cluster provider
    /// measures its grace from the claim's deletion and holds the IPAddress meanwhile). Only
    /// objects that still exist are here, so it is bounded by the view.
    deleting: FastMap<ObjKey, Instant>,
}

#[derive(Debug)]
struct Pending {
    expires: Instant,
    /// When this entry's slot in `State::expiries` comes up: never later than `expires`.
    slot: Instant,
    /// What the index held under this key before the first admission (an UPDATE's stored object),
    /// restored when the entry expires.
    displaced: Option<Object>,
    /// The address of the stranger who admitted it; None when trusted.
    stranger: Option<IpAddr>,
}

/// A read lock on the index. Rules read through it; it must not be held across an `await`.
pub struct IndexGuard<'a>(RwLockReadGuard<'a, State>);

impl Deref for IndexGuard<'_> {
    type Target = Index;
    fn deref(&self) -> &Index {
        &self.0.index
    }
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger::new(Index::new())
    }
}

impl Ledger {
    pub fn new(index: Index) -> Self {
        Ledger::with_ttl(index, PENDING_TTL)
    }

    /// As `new`, with another pending TTL (tests).
    pub fn with_ttl(index: Index, ttl: Duration) -> Self {
        Ledger {
            state: RwLock::new(State {
                index,
                pending: FastMap::default(),
                expiries: BinaryHeap::new(),
                strikes: Strikes::default(),
                deleting: FastMap::default(),
            }),
            decisions: Mutex::new(()),
            ttl,
            strangers: StrangerPolicy::default(),
            hold: None,
            clock: clock::system(),
            reuse_grace: Duration::ZERO,
        }
    }

    /// As given, remembering released addresses for `grace` when their pool sets no grace of its
    /// own (`--reuse-grace`, R1; zero is off).
    pub fn with_reuse_grace(mut self, grace: Duration) -> Self {
        self.reuse_grace = grace;
        self
    }

    /// As given, reading the time from `clock` (tests move a `ManualClock` instead of sleeping).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The time the pending entries are judged against.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// As given, asking `hold` before any trusted pending entry expires.
    pub fn with_hold(mut self, hold: Arc<dyn PendingHold>) -> Self {
        self.hold = Some(hold);
        self
    }

    /// As given, with another bound on strangers' pending entries (tests, measurements).
    pub fn with_strangers(mut self, policy: StrangerPolicy) -> Self {
        self.strangers = policy;
        self
    }

    /// The index as it is now, pending entries included.
    pub fn read(&self) -> IndexGuard<'_> {
        IndexGuard(self.state_read())
    }

    /// Runs one admission decision that reads other objects (SPEC X2).
    ///
    /// `f` gets the index (expired pending entries already dropped) and returns the answer plus
    /// what the request admits: the projection of the new object when the request is allowed and
    /// not a dry run, else `None`. That projection becomes a pending entry before the next decision
    /// starts, so the second of two overlapping creates sees the first. A pending entry for the
    /// same key is replaced (a retried CREATE does not conflict with itself).
    ///
    /// Decisions run one at a time; keep `f` free of I/O.
    pub fn reserve<R>(&self, f: impl FnOnce(&Index) -> (R, Option<Projection>)) -> R {
        self.reserve_as(&Caller::Trusted, f)
    }

    /// As `reserve`, for a request from `caller`: a stranger's admission reserves within the
    /// bounds of `StrangerPolicy`, or not at all once its address is barred.
    pub fn reserve_as<R>(
        &self,
        caller: &Caller,
        f: impl FnOnce(&Index) -> (R, Option<Projection>),
    ) -> R {
        let _turn = self
            .decisions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.sweep(self.clock.now());
        let (answer, admitted) = {
            let state = self.state_read();
            f(&state.index)
        };
        if let Some(object) = admitted {
            self.admit_as(object, caller);
        }
        answer
    }

    /// Records an object admitted outside `reserve` (same rules as its `admitted` result).
    pub fn admit(&self, projection: Projection) {
        self.admit_as(projection, &Caller::Trusted);
    }

    /// As `admit`, for `caller`.
    pub fn admit_as(&self, projection: Projection, caller: &Caller) {
        let object = projection;
        let now = self.clock.now();
        let mut state = self.state_write();
        let State {
            index,
            pending,
            expiries,
            strikes,
            ..
        } = &mut *state;
        let (expires, stranger) = match *caller {
            Caller::Trusted => (now + self.ttl, None),
            Caller::Stranger(addr) => {
                if !strikes.may_reserve(&self.strangers, addr, now) {
                    return;
                }
                (now + self.strangers.ttl, Some(addr))
            }
        };
        let key = object.key().clone();
        // What the watch already shows, unchanged, needs no reservation: a GitOps tool
        // re-applying an object (an UPDATE the API server then skips as a no-op) or a CREATE
        // that will fail with AlreadyExists admits exactly the stored object. Recording it would
        // leave an entry no watch event ever confirms, and for a caller without a client
        // certificate each such expiry would count as a strike against its address.
        if !pending.contains_key(&key) && lookup(index, &key).as_ref() == Some(&object) {
            return;
        }
        match pending.get_mut(&key) {
            Some(entry) => {
                // A stranger re-posting the same review must not keep its reservation alive.
                if stranger.is_some() {
                    entry.expires = entry.expires.min(expires);
                } else {
                    entry.expires = expires;
                }
                entry.stranger = stranger;
                if entry.expires < entry.slot {
                    entry.slot = entry.expires;
                    expiries.push(Reverse((entry.expires, key.clone())));
                }
            }
            None => {
                let displaced = lookup(index, &key);
                pending.insert(
                    key.clone(),
                    Pending {
                        expires,
                        slot: expires,
                        displaced,
                        stranger,
                    },
                );
                expiries.push(Reverse((expires, key.clone())));
            }
        }
        index.upsert(object);
    }

    /// Drops pending entries older than the TTL, giving back what each displaced.
    /// Cheap when nothing is pending (a read lock).
    pub fn sweep(&self, now: Instant) {
        let due = |state: &State| {
            state
                .expiries
                .peek()
                .is_some_and(|Reverse((at, _))| *at <= now)
                || state
                    .index
                    .releases()
                    .next_end()
                    .is_some_and(|at| at <= now)
        };
        if !due(&self.state_read()) {
            return;
        }
        let mut state = self.state_write();
        let State {
            index,
            pending,
            expiries,
            strikes,
            ..
        } = &mut *state;
        index.expire_releases(now);
        let mut barred = Vec::new();
        while let Some(Reverse((at, key))) = expiries.peek() {
            if *at > now {
                break;
            }
            // Only an entry's live slot counts: a slot of a key the watch has since shown (or
            // that expired and was admitted again) is stale.
            let live = pending.get(key).filter(|p| p.slot == *at);
            let Some(entry) = live else {
                expiries.pop();
                continue;
            };
            let rescheduled = entry.expires > now;
            let held = !rescheduled
                && entry.stranger.is_none()
                && self.hold.as_ref().is_some_and(|h| h.holds(key.kind, now));
            if rescheduled || held {
                // Re-admitted since the slot was made: the slot moves to the new expiry. Held
                // (a sick watch): due again one TTL from now, so the entry gets a full TTL once
                // the watch is back.
                let key = key.clone();
                expiries.pop();
                if let Some(entry) = pending.get_mut(&key) {
                    if held {
                        entry.expires = now + self.ttl.max(Duration::from_millis(1));
                    }
                    entry.slot = entry.expires;
                    expiries.push(Reverse((entry.expires, key)));
                }
                continue;
            }
            if let Some(entry) = pending.remove(key) {
                tracing::debug!(object = %key, "pending entry expired: the watch never showed it");
                give_back(index, key, entry.displaced);
                if let Some(addr) = entry.stranger {
                    if strikes.strike(&self.strangers, addr, now) {
                        barred.push(addr);
                    }
                }
            }
            expiries.pop();
        }
        for addr in barred {
            tracing::warn!(
                caller = %addr,
                strikes = self.strangers.strikes,
                window = ?self.strangers.window,
                "unauthenticated caller's admitted writes never showed up; its reviews no longer reserve (set --client-ca-file to authenticate the API server)"
            );
            let keys: Vec<ObjKey> = pending
                .iter()
                .filter(|(_, p)| p.stranger == Some(addr))
                .map(|(k, _)| k.clone())
                .collect();
            for key in keys {
                if let Some(entry) = pending.remove(&key) {
                    give_back(index, &key, entry.displaced);
                }
            }
        }
    }

    /// Pending entries now (tests and metrics).
    pub fn pending_len(&self) -> usize {
        self.state_read().pending.len()
    }

    /// Whether `key` has a pending entry now.
    pub fn is_pending(&self, key: &ObjKey) -> bool {
        self.state_read().pending.contains_key(key)
    }

    /// Slots in the expiry heap, live or stale (tests: memory follows pending objects, not
    /// admissions).
    pub fn expiry_slots(&self) -> usize {
        self.state_read().expiries.len()
    }

    // --- what the watches (or a loader) report ---

    /// The watch shows `key` as `object` (None: the object exists but projects to nothing).
    /// A pending entry for the key is dropped: the real object supersedes it.
    pub fn apply(&self, key: &ObjKey, projection: Option<Projection>) {
        let mut state = self.state_write();
        state.pending.remove(key);
        match projection {
            Some(p) => state.index.upsert(p),
            None => {
                state.index.remove(key);
            }
        }
    }

    /// The watch shows `key` deleted. An address object's release is remembered (R1).
    pub fn delete(&self, key: &ObjKey) {
        let now = self.clock.now();
        let mut state = self.state_write();
        state.pending.remove(key);
        self.gone(&mut state, key, now);
    }

    /// The watch shows `key` marked for deletion (a `deletionTimestamp`): for an address object
    /// or a claim, the release of what it holds begins now, or when first seen so.
    pub fn deleting(&self, key: &ObjKey) {
        if !releases_of(key.kind) && key.kind != Kind::IPAddressClaim {
            return;
        }
        let now = self.clock.now();
        let mut state = self.state_write();
        state.deleting.entry(key.clone()).or_insert(now);
    }

    /// Removes `key` from the index as gone from the cluster: an address object as a release
    /// that began when it or its claim first showed a deletion, else now; a claim hands the time
    /// its deletion began to its addresses, which the provider deletes after it.
    fn gone(&self, state: &mut State, key: &ObjKey, now: Instant) {
        let State {
            index, deleting, ..
        } = state;
        let since = deleting.remove(key);
        if releases_of(key.kind) {
            let claim_since = index
                .address(key)
                .and_then(|a| a.claim.as_deref())
                .and_then(|c| {
                    let claim = ObjKey::new(Kind::IPAddressClaim, key.namespace.as_deref(), c);
                    deleting.get(&claim).copied()
                })
                .filter(|_| key.kind == Kind::IPAddress);
            let began = [since, claim_since]
                .into_iter()
                .flatten()
                .fold(now, Instant::min);
            index.release_address(key, began, self.reuse_grace);
            return;
        }
        if let (Some(since), Kind::IPAddressClaim) = (since, key.kind) {
            let ns = key.namespace.as_deref().unwrap_or_default();
            let addresses: Vec<ObjKey> = index
                .addresses_for_claim(Kind::IPAddress, ns, &key.name)
                .into_iter()
                .map(|a| a.key.clone())
                .collect();
            for a in addresses {
                let at = deleting.entry(a).or_insert(since);
                *at = (*at).min(since);
            }
        }
        index.remove(key);
    }

    /// End of a relist of `kind`: objects of that kind not in `seen` are gone (address objects
    /// as releases, as `delete`). Pending entries stay (admitted writes the list may predate),
    /// but no longer cover a real object.
    pub fn finish_relist(&self, kind: Kind, seen: &HashSet<ObjKey>) {
        let now = self.clock.now();
        let mut state = self.state_write();
        let vanished: Vec<ObjKey> = {
            let State { index, pending, .. } = &mut *state;
            for (key, entry) in pending.iter_mut() {
                if key.kind == kind && !seen.contains(key) {
                    entry.displaced = None;
                }
            }
            index
                .addresses()
                .map(|a| &a.key)
                .filter(|k| k.kind == kind && !seen.contains(*k) && !pending.contains_key(*k))
                .cloned()
                .collect()
        };
        for key in &vanished {
            self.gone(&mut state, key, now);
        }
        let State {
            index,
            pending,
            deleting,
            ..
        } = &mut *state;
        index.retain_kind(kind, |k| seen.contains(k) || pending.contains_key(k));
        deleting.retain(|k, _| k.kind != kind || seen.contains(k));
    }

    /// The kind is no longer served (its CRD was removed): forget its objects and pending
    /// entries. Its addresses are not releases: nothing can hold one until the kind is back.
    pub fn clear_kind(&self, kind: Kind) {
        let mut state = self.state_write();
        state.pending.retain(|k, _| k.kind != kind);
        state.deleting.retain(|k, _| k.kind != kind);
        state.index.clear_kind(kind);
    }

    /// Replaces the whole index (a static view reloading its files); pending entries are dropped.
    pub fn replace(&self, index: Index) {
        let mut state = self.state_write();
        state.pending.clear();
        state.expiries.clear();
        state.index = index;
    }

    // A panic while holding a lock leaves a consistent index (every mutation is one index call),
    // so a poisoned lock is used as is rather than taking the whole webhook down.
    fn state_read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }
    fn state_write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// A view that is only its index: `serve --dev` / `--state-from` serve files through it, so the
/// pending entries of X2 hold there too.
impl ClusterView for Ledger {
    fn synced(&self) -> bool {
        true
    }
    fn now(&self) -> Instant {
        self.clock.now()
    }
    fn object_counts(&self) -> Vec<(Kind, usize)> {
        self.read().counts()
    }
    fn read(&self) -> Box<dyn Deref<Target = Index> + '_> {
        // Admission judges on this reading outside the decision lock: what expired must be gone
        // here as it is in `reserve`, or a denial for an expired entry would never end.
        self.sweep(self.clock.now());
        Box::new(Ledger::read(self))
    }
    fn reserve(&self, f: &mut dyn FnMut(&Index) -> Option<Projection>) {
        Ledger::reserve(self, |index| ((), f(index)));
    }
    fn reserve_as(&self, caller: &Caller, f: &mut dyn FnMut(&Index) -> Option<Projection>) {
        Ledger::reserve_as(self, caller, |index| ((), f(index)));
    }
    fn is_pending(&self, key: &ObjKey) -> bool {
        Ledger::is_pending(self, key)
    }
}

/// Kinds whose objects hold addresses (CAPI and Metal3 IPAddress): their deletion is a release.
fn releases_of(kind: Kind) -> bool {
    matches!(kind, Kind::IPAddress | Kind::Metal3IPAddress)
}

/// Drops a pending entry's object from the index and restores what it covered.
fn give_back(index: &mut Index, key: &ObjKey, displaced: Option<Object>) {
    index.remove(key);
    if let Some(real) = displaced {
        index.upsert(real);
    }
}

fn lookup(index: &Index, key: &ObjKey) -> Option<Object> {
    if let Some(p) = index.pool(key) {
        return Some(Object::Pool(Box::new(p.clone())));
    }
    if let Some(a) = index.address(key) {
        return Some(Object::Address(a.clone()));
    }
    index.claim(key).map(|c| Object::Claim(c.clone()))
}
