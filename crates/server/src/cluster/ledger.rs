//! What every view holds: the index the rules read, the pending entries of X2, and the lock that
//! serialises decisions. The live view feeds it from watches; the static view (`--dev`,
//! `--state-from`) from files; both let admission go through `reserve`, so a dev server also refuses
//! the second of two overlapping creates.
//!
//! A pending entry is one version of an object: what an admitted CREATE or UPDATE would store. The
//! index holds it beside what is stored under the same name (so every rule sees both without
//! knowing about them), never in its place: the API server may still refuse the write
//! (AlreadyExists, another webhook), and the stored object must keep holding its addresses
//! meanwhile. Each version carries its `Basis` (the review's uid and the resourceVersion it
//! replaces), so the watch's events end exactly the versions they decide; the rest end at the TTL.
//! docs/rules.md (X2) says this for users.
//!
//! Why one decision lock rather than one per address space: a decision takes microseconds, and an
//! IPAddress's space is only known after reading its pool from the index, so a per-space lock would
//! need a read before the lock and a re-check after it. One lock serialises every space at once,
//! which is what X2 asks and more.
//!
//! Lock order: `decisions`, then `state`, then whatever `PendingHold` locks. Watch events take
//! only `state`.
//!
//! Each version's lifetime is chosen by who admitted it (`trust.rs`): a stranger's is short, is not
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
use crate::index::{FastMap, Index, PendingId};
use crate::kinds::Kind;
use crate::model::{ObjKey, Projection};

/// Tells `sweep` which kinds' pending entries must not expire now: the live view holds those of a
/// kind whose watch is sick, since only that watch could confirm or refute them. A stranger's
/// entry is not held: a forged review must not block writes for as long as a watch is sick.
pub(crate) trait PendingHold: Send + Sync + std::fmt::Debug {
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
    /// The pending versions of each key (X2), oldest first; the index holds their projections
    /// beside what is stored (`Index::add_pending`).
    pending: FastMap<ObjKey, Vec<Pending>>,
    /// Admissions by expiry, earliest first: a sweep looks only at the top instead of scanning
    /// every pending version (a busy dev server or load test can hold tens of thousands). A
    /// version has one live slot (`Pending::slot`, named by its `seq`); a re-admission that moves
    /// its expiry later does not add one (the sweep moves the slot when it comes up), else the
    /// heap grew by one slot per admission: 28k admissions/s of one object under wrk held 840k
    /// slots, 85 MiB, for the TTL. Slots of versions since ended are skipped when they come up.
    expiries: BinaryHeap<Reverse<(Instant, ObjKey, u64)>>,
    /// Names each pending version for its slots.
    next_seq: u64,
    strikes: Strikes,
    /// Address objects and claims the watch has shown marked for deletion, with when it first
    /// did: an address's release begins when it or its claim began to go (the in-cluster provider
    /// measures its grace from the claim's deletion and holds the IPAddress meanwhile). Only
    /// objects that still exist are here, so it is bounded by the view.
    deleting: FastMap<ObjKey, Instant>,
    /// What the watch showed of each key in the last TTL: an admission it has already seen
    /// superseded (a hand-over's, or a review slower than the watch) is not held (`Recent`).
    recent: Recent,
}

/// One admitted write the watch has not shown yet (X2).
#[derive(Debug)]
struct Pending {
    id: PendingId,
    seq: u64,
    basis: Basis,
    expires: Instant,
    /// When this version's slot in `State::expiries` comes up: never later than `expires`.
    slot: Instant,
    /// The address of the stranger who admitted it; None when trusted.
    stranger: Option<IpAddr>,
}

/// Which stored version an admitted write builds on, as its review shows it: what tells the
/// watch's later events for the key apart (X2, docs/rules.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Basis {
    /// The object's uid. The API server gives a new object its uid before it asks validating
    /// webhooks, so a CREATE's uid names the one object that write would store.
    pub uid: Option<Arc<str>>,
    /// For an UPDATE: the resourceVersion of the stored object it replaces. The API server stores
    /// an update only on top of the version it was admitted against (a conflict sends it through
    /// admission again), so any later version of the key means this write landed or never will.
    pub replaces: Option<u64>,
    /// How long before this decision the write was admitted: zero, but for the admissions a
    /// previous decider hands over, which keep only what is left of their TTL.
    pub admitted_ago: Duration,
}

/// What a watch event shows of its object, beside the projection.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub uid: Option<Arc<str>>,
    pub resource_version: Option<u64>,
    /// Read in a (re)list rather than as a watch event: not remembered in `Recent`, whose memory
    /// is then bounded by the write rate, not by the size of the cluster.
    pub listed: bool,
}

impl Basis {
    /// Nothing tells this write's version apart (files, tests): only content can end it.
    fn unknown(&self) -> bool {
        self.uid.is_none() && self.replaces.is_none()
    }

    /// Whether `other` names the same write (its age aside).
    fn same_write(&self, other: &Basis) -> bool {
        self.uid == other.uid && self.replaces == other.replaces
    }

    /// Whether the watch showing `seen` for the key means this write has landed or never will.
    /// An event of an older version (a watch behind the review) ends nothing.
    fn ended_by(&self, seen: &Seen) -> bool {
        match (self.replaces, &self.uid) {
            // An UPDATE: any later version of the key is this write or makes it fail.
            (Some(mine), _) => seen.resource_version.is_some_and(|theirs| theirs > mine),
            // A CREATE: its object is the one with its uid.
            (None, Some(mine)) => seen.uid.as_ref() == Some(mine),
            (None, None) => false,
        }
    }
}

/// The newest version and the uids the watch showed under each key in the last TTL.
#[derive(Debug, Default)]
struct Recent {
    keys: FastMap<ObjKey, Shown>,
    /// Keys by when they were last shown, oldest first; entries whose time moved on are stale.
    order: std::collections::VecDeque<(Instant, ObjKey)>,
}

#[derive(Debug, Default)]
struct Shown {
    at: Option<Instant>,
    resource_version: Option<u64>,
    /// Each uid shown under the key, and whether its object was shown deleted.
    uids: Vec<(Arc<str>, bool)>,
}

impl Recent {
    fn record(&mut self, key: &ObjKey, seen: &Seen, deleted: bool, now: Instant) {
        if seen.listed || (seen.uid.is_none() && seen.resource_version.is_none()) {
            return;
        }
        let shown = self.keys.entry(key.clone()).or_default();
        shown.at = Some(now);
        shown.resource_version = shown.resource_version.max(seen.resource_version);
        if let Some(uid) = &seen.uid {
            match shown.uids.iter_mut().find(|(u, _)| u == uid) {
                Some((_, gone)) => *gone |= deleted,
                None => shown.uids.push((uid.clone(), deleted)),
            }
        }
        self.order.push_back((now, key.clone()));
    }

    /// Whether the watch has already shown the write of `basis` under `key` landed or refuted.
    fn ended(&self, key: &ObjKey, basis: &Basis) -> bool {
        let Some(shown) = self.keys.get(key) else {
            return false;
        };
        let newer = matches!((basis.replaces, shown.resource_version), (Some(m), Some(t)) if t > m);
        let created = basis.replaces.is_none()
            && basis
                .uid
                .as_ref()
                .is_some_and(|u| shown.uids.iter().any(|(s, _)| s == u));
        newer || created
    }

    /// Whether the watch has shown the object of `basis` deleted: nothing it wrote is held
    /// anywhere any more.
    fn gone(&self, key: &ObjKey, basis: &Basis) -> bool {
        let (Some(shown), Some(uid)) = (self.keys.get(key), &basis.uid) else {
            return false;
        };
        shown.uids.iter().any(|(s, gone)| *gone && s == uid)
    }

    fn prune(&mut self, now: Instant, ttl: Duration) {
        while let Some((at, key)) = self.order.front() {
            if now.saturating_duration_since(*at) < ttl {
                break;
            }
            if self.keys.get(key).is_some_and(|s| s.at == Some(*at)) {
                self.keys.remove(key);
            }
            self.order.pop_front();
        }
    }
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
                next_seq: 0,
                strikes: Strikes::default(),
                deleting: FastMap::default(),
                recent: Recent::default(),
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
    pub(crate) fn with_hold(mut self, hold: Arc<dyn PendingHold>) -> Self {
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

    /// Runs one admission decision that reads other objects (X2).
    ///
    /// `f` gets the index (expired pending versions already dropped) and returns the answer plus
    /// what the request admits: the projection of the new object when the request is allowed and
    /// not a dry run, else `None`. That projection becomes a pending version before the next
    /// decision starts, so the second of two overlapping creates sees the first. It is held beside
    /// what is stored under its key, never in its place (`admit_write`).
    ///
    /// Decisions run one at a time; keep `f` free of I/O.
    pub fn reserve<R>(&self, f: impl FnOnce(&Index) -> (R, Option<Projection>)) -> R {
        self.reserve_as(&Caller::Trusted, &Basis::default(), f)
    }

    /// As `reserve`, for a request from `caller` whose write builds on `basis`: a stranger's
    /// admission reserves within the bounds of `StrangerPolicy`, or not at all once its address
    /// is barred.
    pub fn reserve_as<R>(
        &self,
        caller: &Caller,
        basis: &Basis,
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
            self.admit_write(object, caller, basis);
        }
        answer
    }

    /// Records an object admitted outside `reserve` (same rules as its `admitted` result).
    pub fn admit(&self, projection: Projection) {
        self.admit_write(projection, &Caller::Trusted, &Basis::default());
    }

    /// As `admit`, for `caller`.
    pub fn admit_as(&self, projection: Projection, caller: &Caller) {
        self.admit_write(projection, caller, &Basis::default());
    }

    /// Holds `projection`, admitted for `caller` on top of `basis`, as a pending version until
    /// the watch shows it landed or refuted (`apply`, `delete`) or its TTL passes.
    ///
    /// Nothing is held for a write that adds nothing: what is stored reads the same (a GitOps
    /// re-apply, a CREATE refused as AlreadyExists with the stored content), or the watch has
    /// already shown the key past `basis`. The same write admitted again (same basis, or
    /// content when the basis is unknown) renews its version instead of adding one.
    pub fn admit_write(&self, projection: Projection, caller: &Caller, basis: &Basis) {
        let object = projection;
        let now = self.clock.now();
        let mut state = self.state_write();
        let State {
            index,
            pending,
            expiries,
            next_seq,
            strikes,
            recent,
            ..
        } = &mut *state;
        let (ttl, stranger) = match *caller {
            Caller::Trusted => (self.ttl, None),
            Caller::Stranger(addr) => {
                if !strikes.may_reserve(&self.strangers, addr, now) {
                    return;
                }
                (self.strangers.ttl, Some(addr))
            }
        };
        let Some(left) = ttl.checked_sub(basis.admitted_ago).filter(|d| !d.is_zero()) else {
            return;
        };
        let expires = now + left;
        let key = object.key().clone();
        // A write whose basis is known is held even when what the view stores reads the same:
        // the view may be behind (that stored object already deleted, or changed and changed
        // back), and the write may land after it. Without a basis (files, tests), and for a
        // stranger, whose unconfirmed versions count as strikes, what the view stores unchanged
        // needs no reservation, unless other versions are pending: one of them may land first.
        let known = !basis.unknown();
        let unchanged = (!known || stranger.is_some())
            && !pending.contains_key(&key)
            && index.stored_is(&object);
        if unchanged || recent.ended(&key, basis) {
            return;
        }
        let versions = pending.entry(key.clone()).or_default();
        let same = versions.iter_mut().find(|v| {
            if known {
                v.basis.same_write(basis)
            } else {
                v.basis.unknown() && index.pending_is(v.id, &object)
            }
        });
        match same {
            Some(version) => {
                // A stranger re-posting the same review must not keep its reservation alive.
                if stranger.is_some() {
                    version.expires = version.expires.min(expires);
                } else {
                    version.expires = expires;
                }
                version.stranger = stranger;
                if version.expires < version.slot {
                    version.slot = version.expires;
                    expiries.push(Reverse((version.expires, key.clone(), version.seq)));
                }
                if !index.pending_is(version.id, &object) {
                    index.remove_pending(version.id);
                    version.id = index.add_pending(object);
                }
            }
            None => {
                *next_seq += 1;
                let seq = *next_seq;
                versions.push(Pending {
                    id: index.add_pending(object),
                    seq,
                    basis: basis.clone(),
                    expires,
                    slot: expires,
                    stranger,
                });
                expiries.push(Reverse((expires, key, seq)));
            }
        }
    }

    /// Drops pending versions older than the TTL. Cheap when nothing is due (a read lock).
    pub fn sweep(&self, now: Instant) {
        let due = |state: &State| {
            state
                .expiries
                .peek()
                .is_some_and(|Reverse((at, _, _))| *at <= now)
                || state
                    .index
                    .releases()
                    .next_end()
                    .is_some_and(|at| at <= now)
                || state
                    .recent
                    .order
                    .front()
                    .is_some_and(|(at, _)| now.saturating_duration_since(*at) >= self.ttl)
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
            recent,
            ..
        } = &mut *state;
        index.expire_releases(now);
        recent.prune(now, self.ttl);
        let mut barred = Vec::new();
        while let Some(Reverse((at, key, seq))) = expiries.peek() {
            if *at > now {
                break;
            }
            // Only a version's live slot counts: a slot of a version the watch has since ended
            // (or that was renewed) is stale.
            let live = pending
                .get(key)
                .and_then(|vs| vs.iter().find(|v| v.seq == *seq))
                .filter(|v| v.slot == *at);
            let Some(version) = live else {
                expiries.pop();
                continue;
            };
            let rescheduled = version.expires > now;
            let held = !rescheduled
                && version.stranger.is_none()
                && self.hold.as_ref().is_some_and(|h| h.holds(key.kind, now));
            let (key, seq) = (key.clone(), *seq);
            expiries.pop();
            if rescheduled || held {
                // Renewed since the slot was made: the slot moves to the new expiry. Held (a sick
                // watch): due again one TTL from now, so the version gets a full TTL once the
                // watch is back.
                if let Some(version) = version_mut(pending, &key, seq) {
                    if held {
                        version.expires = now + self.ttl.max(Duration::from_millis(1));
                    }
                    version.slot = version.expires;
                    expiries.push(Reverse((version.expires, key, seq)));
                }
                continue;
            }
            if let Some(version) = end_version(index, pending, &key, |v| v.seq == seq) {
                tracing::debug!(object = %key, "pending version expired: the watch never showed it");
                if let Some(addr) = version.stranger {
                    if strikes.strike(&self.strangers, addr, now) {
                        barred.push(addr);
                    }
                }
            }
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
                .filter(|(_, vs)| vs.iter().any(|v| v.stranger == Some(addr)))
                .map(|(k, _)| k.clone())
                .collect();
            for key in keys {
                while end_version(index, pending, &key, |v| v.stranger == Some(addr)).is_some() {}
            }
        }
    }

    /// Whether the watch has shown, within the TTL, the object a write of `basis` under `key`
    /// made or changed deleted: a hand-over leaves such a write out (`decider::handover`).
    pub fn shown_gone(&self, key: &ObjKey, basis: &Basis) -> bool {
        self.state_read().recent.gone(key, basis)
    }

    /// Pending versions now, all keys (tests and metrics).
    pub fn pending_len(&self) -> usize {
        self.state_read().pending.values().map(Vec::len).sum()
    }

    /// Whether `key` has a pending version now.
    pub fn is_pending(&self, key: &ObjKey) -> bool {
        self.state_read().pending.contains_key(key)
    }

    /// Slots in the expiry heap, live or stale (tests: memory follows pending objects, not
    /// admissions).
    pub fn expiry_slots(&self) -> usize {
        self.state_read().expiries.len()
    }

    // --- what the watches (or a loader) report ---

    /// Something shows `key` stored as `projection` (None: the object exists but projects to
    /// nothing), without saying which version it is (a loader, tests): as `apply_seen`.
    pub fn apply(&self, key: &ObjKey, projection: Option<Projection>) {
        self.apply_seen(key, projection, &Seen::default());
    }

    /// The watch shows `key` stored as `projection`, the version `seen`. The pending versions of
    /// the key that it ends (`Basis`) are dropped, and those of unknown basis whose content it
    /// now stores; the others stay held beside it.
    pub fn apply_seen(&self, key: &ObjKey, projection: Option<Projection>, seen: &Seen) {
        let now = self.clock.now();
        let mut state = self.state_write();
        let State {
            index,
            pending,
            recent,
            ..
        } = &mut *state;
        match projection {
            Some(p) => index.upsert(p),
            None => {
                index.remove(key);
            }
        }
        recent.record(key, seen, false, now);
        let ended: Vec<u64> = pending.get(key).map_or_else(Vec::new, |versions| {
            versions
                .iter()
                .filter(|v| v.basis.ended_by(seen) || v.basis.unknown() && index.stored_alike(v.id))
                .map(|v| v.seq)
                .collect()
        });
        for seq in ended {
            end_version(index, pending, key, |v| v.seq == seq);
        }
    }

    /// Something shows `key` deleted, without saying which version (a loader, tests).
    pub fn delete(&self, key: &ObjKey) {
        self.delete_seen(key, &Seen::default());
    }

    /// The watch shows `key` deleted, in the version `seen`. An address object's release is
    /// remembered (R1). Pending versions the delete ends (an update of it, its own create) go
    /// with it; a create of the name that may land after the delete stays held.
    pub fn delete_seen(&self, key: &ObjKey, seen: &Seen) {
        let now = self.clock.now();
        let mut state = self.state_write();
        self.gone(&mut state, key, now);
        let State {
            index,
            pending,
            recent,
            ..
        } = &mut *state;
        recent.record(key, seen, true, now);
        if pending.contains_key(key) {
            while end_version(index, pending, key, |v| v.basis.ended_by(seen)).is_some() {}
        }
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

    /// End of a relist of `kind`: objects of that kind stored but not in `seen` are gone
    /// (address objects as releases, as `delete`). Pending versions stay: a list says nothing of
    /// which admitted writes it predates.
    pub(crate) fn finish_relist(&self, kind: Kind, seen: &HashSet<ObjKey>) {
        let now = self.clock.now();
        let mut state = self.state_write();
        let vanished: Vec<ObjKey> = state
            .index
            .addresses()
            .map(|a| &a.key)
            .filter(|k| k.kind == kind && !seen.contains(*k))
            .cloned()
            .collect();
        for key in &vanished {
            self.gone(&mut state, key, now);
        }
        let State {
            index, deleting, ..
        } = &mut *state;
        index.retain_kind(kind, |k| seen.contains(k));
        deleting.retain(|k, _| k.kind != kind || seen.contains(k));
    }

    /// The kind is no longer served (its CRD was removed): forget its objects and pending
    /// versions. Its addresses are not releases: nothing can hold one until the kind is back.
    pub fn clear_kind(&self, kind: Kind) {
        let mut state = self.state_write();
        let State {
            index,
            pending,
            deleting,
            ..
        } = &mut *state;
        pending.retain(|k, versions| {
            if k.kind != kind {
                return true;
            }
            for v in versions.drain(..) {
                index.remove_pending(v.id);
            }
            false
        });
        deleting.retain(|k, _| k.kind != kind);
        index.clear_kind(kind);
    }

    /// Replaces the whole index (a static view reloading its files); pending versions are
    /// dropped.
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
    fn reserve_as(
        &self,
        caller: &Caller,
        basis: &Basis,
        f: &mut dyn FnMut(&Index) -> Option<Projection>,
    ) {
        Ledger::reserve_as(self, caller, basis, |index| ((), f(index)));
    }
    fn is_pending(&self, key: &ObjKey) -> bool {
        Ledger::is_pending(self, key)
    }
    fn shown_gone(&self, key: &ObjKey, basis: &Basis) -> bool {
        Ledger::shown_gone(self, key, basis)
    }
}

/// Kinds whose objects hold addresses (CAPI and Metal3 IPAddress): their deletion is a release.
fn releases_of(kind: Kind) -> bool {
    matches!(kind, Kind::IPAddress | Kind::Metal3IPAddress)
}

/// The pending version of `key` matching `which`, if any, taken out of `pending` and the index.
fn end_version(
    index: &mut Index,
    pending: &mut FastMap<ObjKey, Vec<Pending>>,
    key: &ObjKey,
    mut which: impl FnMut(&Pending) -> bool,
) -> Option<Pending> {
    let versions = pending.get_mut(key)?;
    let at = versions.iter().position(&mut which)?;
    let version = versions.remove(at);
    if versions.is_empty() {
        pending.remove(key);
    }
    index.remove_pending(version.id);
    Some(version)
}

fn version_mut<'a>(
    pending: &'a mut FastMap<ObjKey, Vec<Pending>>,
    key: &ObjKey,
    seq: u64,
) -> Option<&'a mut Pending> {
    pending.get_mut(key)?.iter_mut().find(|v| v.seq == seq)
}
