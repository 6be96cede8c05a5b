//! The in-memory state the cross-object rules read (X1): pools, addresses and claims, each
//! indexed for the questions the rules ask. The static view (files) and the live view (watches)
//! both fill one `Index`; it never talks to the API server.
//!
//! Layout, chosen for ≈100k cached objects:
//! - pools and addresses live in slabs (`Vec<Option<T>>` plus a free list) and are named elsewhere
//!   by a `u32` slot id, so secondary indexes cost 4 bytes per entry rather than a key each. The
//!   `HashMap<ObjKey, u32>` clones the key, but an `ObjKey` only holds `Arc`s, and the index
//!   points repeated namespaces, referenced pool keys and claim names at one copy (readers build
//!   a fresh `Arc` per object). Measured at 100k addresses + 100k claims + 1k pools: ≈ 390 B per
//!   address, 260 B per claim, 430 B per pool (bytes requested from the allocator).
//! - pool allocatable sets go into one `SegmentMap` per (address space, family) (see `segments`).
//! - an address's space is never stored: it is read through its pool at query time, so a pool that
//!   appears, vanishes or changes space later is reflected without touching any address.
//! - claims need no secondary index: a set keyed by the claim's own key holds them once.
//!
//! Costs (n objects, S segments): pool upsert/remove O(runs · log S + segments touched); overlap
//! query O(runs · log S + k) for k segments met, plus sorting the answer; address upsert/remove
//! O(1) expected; `holders`, `addresses_for_claim`, `addresses_for_pool` O(h log h) in the size of
//! the answer (sorted so answers do not depend on insertion history); relists O(n).

mod claims;
mod clusters;
mod consistency;
pub mod free;
mod holders;
pub mod releases;
mod segments;
mod slots;
pub mod usage;

use std::borrow::Borrow;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use foldhash::fast::RandomState;

use crate::address::{AddrSet, Family, Ip, IpRange};
use crate::kinds::{Kind, DEFAULT_ADDRESS_SPACE};
use crate::model::cluster::ClusterProj;
use crate::model::holder::HolderProj;
use crate::model::{AddressProj, ClaimProj, Keyed, ObjKey, PoolProj};

use releases::{Release, Releases};
use segments::SegmentMap;
use slots::{Slab, Slots};

/// The index's maps, hashed with foldhash instead of std's SipHash: a review looks keys up about
/// 45 times, and SipHash took about 3k of its 145k instructions. Each
/// map is seeded at random, as std's are; foldhash resists crafted collisions less, and these
/// keys are names that only someone allowed to write the objects can choose.
pub type FastMap<K, V> = HashMap<K, V, RandomState>;
pub(crate) type FastSet<T> = HashSet<T, RandomState>;

/// What the index holds, one variant per projection: the same type `model::project` returns,
/// so a watched or loaded object goes into the index without conversion.
pub use crate::model::Projection as Object;

/// Pools, addresses and claims with the lookups the rules need. See the module docs for layout.
#[derive(Debug, Clone, Default)]
pub struct Index {
    pools: Slots<PoolProj>,
    pool_ids: FastMap<ObjKey, u32>,
    /// Allocatable sets per address space, one segment map per family.
    spaces: FastMap<Arc<str>, FamilySegments>,

    addresses: Slots<AddrEntry>,
    address_ids: FastMap<ObjKey, u32>,
    /// Who holds an address. Split by family so an IPv4 key costs 4 bytes, not 32.
    by_ip4: FastMap<u32, Ids>,
    by_ip6: FastMap<u128, Ids>,
    /// Addresses per (kind, namespace, claim), keyed by a hash so a lookup needs no allocation and
    /// an entry no strings; collisions are sorted out by comparing the addresses themselves.
    by_claim: FastMap<u64, Ids>,
    claim_hasher: RandomState,
    /// Addresses per referenced pool key (the pool need not exist). Each address records its
    /// position here (`AddrEntry::pool_pos`) so removal is O(1) even under a 100k-address pool.
    by_pool: FastMap<ObjKey, Vec<u32>>,

    claims: FastSet<ClaimEntry>,
    pending_claims: Slab<ClaimProj>,

    /// Clusters (`clusters`): stored and pending versions, and their control-plane endpoints
    /// per address space.
    clusters: Slots<ClusterProj>,
    cluster_ids: FastMap<ObjKey, u32>,
    endpoints: FastMap<Arc<str>, FamilySegments>,

    /// Objects holding addresses outside pools (`holders`): stored and pending versions, and
    /// what they hold per address space.
    holders_held: Slots<HolderProj>,
    holder_ids: FastMap<ObjKey, u32>,
    held: FastMap<Arc<str>, FamilySegments>,

    /// Versions admitted but not yet shown by the watch (X2), per key, oldest first. They are
    /// held beside what is stored under the same key, never in its place: the query methods see
    /// every version, so a write refused after admission (AlreadyExists, another webhook) costs
    /// at most a conservative refusal, never an admission against an object that is not stored.
    pending: FastMap<ObjKey, Vec<PendingId>>,

    /// Addresses given back recently, for the reuse grace (R1).
    releases: Releases,

    /// Namespaces and space names, held once: readers build a fresh `Arc` per object.
    strings: Interner,

    /// Objects per kind, in `Kind::ALL` order, kept up to date so a metrics scrape is O(1).
    counts: [usize; Kind::ALL.len()],
    /// Objects per declared kind, by its number (`Kind::Declared`), grown as kinds appear.
    declared_counts: Vec<usize>,

    /// Stamped afresh (process-wide) by every change, so two readings with the same stamp saw
    /// the same objects (`Index::version`).
    version: u64,
}

/// Source of `Index::version` stamps: process-wide, so an index swapped in whole (a static view
/// reloading its files) never repeats the stamp of the one it replaced.
static VERSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

// === impl Index: pools ===

impl Index {
    pub fn new() -> Self {
        Self::default()
    }

    /// Which state of the objects this is: equal versions mean equal contents (a clone keeps
    /// the version of what it copied), so a verdict reached on one reading still holds on a
    /// later one with the same version. The X2 step judges outside the decision lock and, under
    /// it, redoes the work only when the version moved.
    pub fn version(&self) -> u64 {
        self.version
    }

    fn changed(&mut self) {
        self.version = VERSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Adds or replaces the pool with `pool.key`; space, family and ranges may all change.
    /// Returns the pool it replaced.
    pub fn upsert_pool(&mut self, mut pool: PoolProj) -> Option<PoolProj> {
        self.changed();
        self.strings.key(&mut pool.key);
        pool.space = self.strings.get(&pool.space);
        match self.pool_ids.get(&pool.key) {
            Some(&id) => {
                let old = self.pools.get(id);
                // Status-only updates are the common case: skip the segment work.
                let same_ranges = old.space == pool.space
                    && old.allocatable == pool.allocatable
                    && old.other_family == pool.other_family;
                if !same_ranges {
                    self.unplace_pool(id);
                }
                let old = std::mem::replace(self.pools.get_mut(id), pool);
                if !same_ranges {
                    self.place_pool(id);
                }
                Some(old)
            }
            None => {
                self.count(pool.key.kind, true);
                let key = pool.key.clone();
                let id = self.pools.insert(pool, false);
                self.pool_ids.insert(key, id);
                self.place_pool(id);
                None
            }
        }
    }

    /// Removes the pool with `key`; addresses that reference it stay and now fall in `default`.
    pub fn remove_pool(&mut self, key: &ObjKey) -> Option<PoolProj> {
        let id = self.pool_ids.remove(key)?;
        self.changed();
        self.unplace_pool(id);
        let pool = self.pools.remove(id);
        self.count(pool.key.kind, false);
        Some(pool)
    }

    /// The pool under `key`: the stored one, else the newest version admitted and not yet
    /// stored (X2).
    pub fn pool(&self, key: &impl Keyed) -> Option<&PoolProj> {
        let key: &dyn Keyed = key;
        self.pool_versions(key).next()
    }

    /// Every version of the pool under `key`: the stored one first, then those pending (X2),
    /// newest first. A rule that a later write must pass against whichever version lands (A8)
    /// asks each.
    pub(crate) fn pool_versions<'a>(
        &'a self,
        key: &dyn Keyed,
    ) -> impl Iterator<Item = &'a PoolProj> + use<'a> {
        let stored = self.pool_ids.get(key).copied();
        let pending = self.pending_ids(key).iter().rev().filter_map(|p| match *p {
            PendingId::Pool(id) => Some(id),
            _ => None,
        });
        stored
            .into_iter()
            .chain(pending)
            .map(|id| self.pools.get(id))
    }

    /// Every stored pool, in no particular order.
    pub fn pools(&self) -> impl Iterator<Item = &PoolProj> + '_ {
        self.pools.stored.iter().map(|(_, p)| p)
    }

    /// Every pool the view holds: stored and pending versions (X2), a key once per version.
    pub fn pools_and_pending(&self) -> impl Iterator<Item = &PoolProj> + '_ {
        self.pools
            .stored
            .iter()
            .chain(self.pools.pending.iter())
            .map(|(_, p)| p)
    }

    /// Slots that hold pools or held one (`pools` goes through them in order). With `pool_at`,
    /// a pass over the pools can stop and go on under another read without copying their keys
    /// (the periodic audit's steps): a slot emptied meanwhile holds nothing, one filled
    /// meanwhile holds the new pool.
    pub fn pool_slots(&self) -> usize {
        self.pools.stored.slots.len()
    }

    pub fn pool_at(&self, slot: usize) -> Option<&PoolProj> {
        self.pools.stored.slots.get(slot)?.as_ref()
    }

    /// Pools in `space` whose allocatable set intersects `set`, each with the part it shares with
    /// `set`, sorted by key, each key once: the versions of one pool (stored and pending, X2)
    /// share their parts. The asking pool itself is included when it is in the index: callers
    /// judging an update skip their own key. O(log n + k) per run of `set`, k the segments met.
    pub fn overlapping_pools(&self, space: &str, set: &AddrSet) -> Vec<(&PoolProj, AddrSet)> {
        let family = set.family();
        let Some(segs) = self.spaces.get(space).map(|s| s.get(family)) else {
            return Vec::new();
        };
        // Owners come out of the scan in ascending value order, so each list stays sorted.
        let mut shared: FastMap<u32, Vec<IpRange>> = FastMap::default();
        for run in set.ranges() {
            let (start, end) = bounds(run);
            for (s, e, owners) in segs.query(start, end) {
                for &id in owners {
                    shared.entry(id).or_default().push(IpRange::new(s, e));
                }
            }
        }
        let mut found: Vec<(u32, Vec<IpRange>)> = shared.into_iter().collect();
        // By key, the stored version (ids without the pending bit) first.
        found.sort_by(|a, b| (&self.pools.get(a.0).key, a.0).cmp(&(&self.pools.get(b.0).key, b.0)));
        let mut out: Vec<(&PoolProj, Vec<IpRange>)> = Vec::with_capacity(found.len());
        for (id, runs) in found {
            let pool = self.pools.get(id);
            match out.last_mut() {
                Some((first, all)) if first.key == pool.key => all.extend(runs),
                _ => out.push((pool, runs)),
            }
        }
        out.into_iter()
            .map(|(pool, runs)| (pool, AddrSet::from_ranges(family, runs)))
            .collect()
    }

    /// The address space of the pool with `key`: `default` when the pool is unknown.
    pub(crate) fn space_of_pool(&self, key: &impl Keyed) -> &str {
        self.pool(key)
            .map(|p| &*p.space)
            .unwrap_or(DEFAULT_ADDRESS_SPACE)
    }

    fn place_pool(&mut self, id: u32) {
        let pool = self.pools.get(id);
        if pool.allocatable_sets().all(AddrSet::is_empty) {
            return;
        }
        let space = self.spaces.entry(pool.space.clone()).or_default();
        for set in pool.allocatable_sets() {
            let segs = space.get_mut(set.family());
            for run in set.ranges() {
                let (s, e) = bounds(run);
                segs.insert(s, e, id);
            }
        }
    }

    fn unplace_pool(&mut self, id: u32) {
        let pool = self.pools.get(id);
        if pool.allocatable_sets().all(AddrSet::is_empty) {
            return;
        }
        let Some(space) = self.spaces.get_mut(&*pool.space) else {
            return;
        };
        for set in pool.allocatable_sets() {
            let segs = space.get_mut(set.family());
            for run in set.ranges() {
                let (s, e) = bounds(run);
                segs.remove(s, e, id);
            }
        }
        // Spaces come and go with annotations; do not keep empty ones around.
        if space.v4.is_empty() && space.v6.is_empty() {
            self.spaces.remove(&*pool.space);
        }
    }
}

// === impl Index: addresses ===

impl Index {
    /// Adds or replaces the address object with `address.key` (CAPI or Metal3 IPAddress).
    /// Returns the one it replaced.
    pub fn upsert_address(&mut self, mut address: AddressProj) -> Option<AddressProj> {
        self.changed();
        self.share_strings(&mut address);
        match self.address_ids.get(&address.key) {
            Some(&id) => {
                let old = &self.addresses.get(id).proj;
                if *old == address {
                    return Some(address);
                }
                self.unlink_address(id);
                let old = std::mem::replace(&mut self.addresses.get_mut(id).proj, address);
                self.link_address(id);
                Some(old)
            }
            None => {
                self.count(address.key.kind, true);
                let key = address.key.clone();
                let id = self.addresses.insert(
                    AddrEntry {
                        proj: address,
                        pool_pos: 0,
                    },
                    false,
                );
                self.address_ids.insert(key, id);
                self.link_address(id);
                None
            }
        }
    }

    pub fn remove_address(&mut self, key: &ObjKey) -> Option<AddressProj> {
        let id = self.address_ids.remove(key)?;
        self.changed();
        self.unlink_address(id);
        let entry = self.addresses.remove(id);
        self.count(entry.proj.key.kind, false);
        Some(entry.proj)
    }

    /// The address object under `key`: the stored one, else the newest version admitted and not
    /// yet stored (X2).
    pub fn address(&self, key: &impl Keyed) -> Option<&AddressProj> {
        let key: &dyn Keyed = key;
        let stored = self.address_ids.get(key).copied();
        let pending = || {
            self.pending_ids(key).iter().rev().find_map(|p| match *p {
                PendingId::Address(id) => Some(id),
                _ => None,
            })
        };
        stored
            .or_else(pending)
            .map(|id| &self.addresses.get(id).proj)
    }

    /// Every stored address object, in no particular order.
    pub fn addresses(&self) -> impl Iterator<Item = &AddressProj> + '_ {
        self.addresses.stored.iter().map(|(_, e)| &e.proj)
    }

    /// As `pool_slots`, for address objects.
    pub fn address_slots(&self) -> usize {
        self.addresses.stored.slots.len()
    }

    pub fn address_at(&self, slot: usize) -> Option<&AddressProj> {
        Some(&self.addresses.stored.slots.get(slot)?.as_ref()?.proj)
    }

    /// Address objects of any kind and space holding `ip`, sorted by key, each key once though
    /// a stored and a pending version (X2) both hold it (A9, MA4: filter by
    /// `space_of_address`).
    pub fn holders(&self, ip: Ip) -> impl Iterator<Item = &AddressProj> + '_ {
        let ids = match ip_key(ip) {
            Some(IpKey::V4(v)) => self.by_ip4.get(&v),
            Some(IpKey::V6(v)) => self.by_ip6.get(&v),
            None => None,
        };
        let mut out: Vec<&AddressProj> = ids
            .into_iter()
            .flat_map(Ids::iter)
            .map(|id| &self.addresses.get(id).proj)
            .filter(|a| a.ip == Some(ip))
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out.dedup_by(|a, b| a.key == b.key);
        out.into_iter()
    }

    /// The address space an address belongs to: its pool's, `default` when the pool is unknown
    /// or missing. Read now, so it follows the pool's current annotation.
    pub fn space_of_address(&self, address: &AddressProj) -> &str {
        match &address.pool {
            Some(key) => self.space_of_pool(key),
            None => DEFAULT_ADDRESS_SPACE,
        }
    }

    /// Address objects of `kind` in `namespace` whose claim is `claim`, sorted by key, each key
    /// once (A7).
    pub fn addresses_for_claim(
        &self,
        kind: Kind,
        namespace: &str,
        claim: &str,
    ) -> Vec<&AddressProj> {
        let h = self.claim_hash(kind, namespace, claim);
        let mut out: Vec<&AddressProj> = self
            .by_claim
            .get(&h)
            .into_iter()
            .flat_map(Ids::iter)
            .map(|id| &self.addresses.get(id).proj)
            .filter(|a| {
                a.key.kind == kind
                    && a.key.namespace.as_deref().unwrap_or_default() == namespace
                    && a.claim.as_deref() == Some(claim)
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out.dedup_by(|a, b| a.key == b.key);
        out
    }

    /// Address objects whose `pool` is `pool`, sorted by key (P8, P9, MP4). The pool need not
    /// exist. A key whose stored and pending versions (X2) hold different addresses is there
    /// once per address: either may be what ends up stored.
    pub fn addresses_for_pool(&self, pool: &ObjKey) -> Vec<&AddressProj> {
        let mut out: Vec<&AddressProj> = self
            .by_pool
            .get(pool)
            .into_iter()
            .flatten()
            .map(|&id| &self.addresses.get(id).proj)
            .collect();
        out.sort_by(|a, b| (&a.key, a.ip).cmp(&(&b.key, b.ip)));
        out.dedup_by(|a, b| a.key == b.key && a.ip == b.ip);
        out
    }

    /// How many address objects reference `pool`, without sorting them.
    pub fn address_count_for_pool(&self, pool: &impl Keyed) -> usize {
        let pool: &dyn Keyed = pool;
        self.by_pool.get(pool).map_or(0, Vec::len)
    }

    fn claim_hash(&self, kind: Kind, namespace: &str, claim: &str) -> u64 {
        self.claim_hasher.hash_one((kind, namespace, claim))
    }

    /// Points the address's strings at copies the index already holds: at 100k addresses the
    /// per-object copies of namespace, pool name and claim name are a third of the memory.
    fn share_strings(&mut self, address: &mut AddressProj) {
        self.strings.key(&mut address.key);
        if let Some(claim) = &address.claim {
            // The CAPI in-cluster provider names an address after its claim.
            if **claim == *address.key.name {
                address.claim = Some(address.key.name.clone());
            }
        }
        if let Some(pool) = &mut address.pool {
            let known = self
                .by_pool
                .get_key_value(pool)
                .map(|(k, _)| k)
                .or_else(|| self.pool_ids.get_key_value(pool).map(|(k, _)| k));
            match known {
                Some(k) => *pool = k.clone(),
                None => self.strings.key(pool),
            }
        }
    }

    fn link_address(&mut self, id: u32) {
        let proj = &self.addresses.get(id).proj;
        match proj.ip.and_then(ip_key) {
            Some(IpKey::V4(v)) => Ids::push(self.by_ip4.entry(v), id),
            Some(IpKey::V6(v)) => Ids::push(self.by_ip6.entry(v), id),
            None => {}
        }
        if let Some(claim) = &proj.claim {
            let ns = proj.key.namespace.as_deref().unwrap_or_default();
            let h = self.claim_hash(proj.key.kind, ns, claim);
            Ids::push(self.by_claim.entry(h), id);
        }
        if let Some(pool) = &proj.pool {
            let list = self.by_pool.entry(pool.clone()).or_default();
            let pos = list.len() as u32;
            list.push(id);
            self.addresses.get_mut(id).pool_pos = pos;
        }
    }

    fn unlink_address(&mut self, id: u32) {
        let entry = self.addresses.get(id);
        let proj = &entry.proj;
        match proj.ip.and_then(ip_key) {
            Some(IpKey::V4(v)) => Ids::remove(&mut self.by_ip4, v, id),
            Some(IpKey::V6(v)) => Ids::remove(&mut self.by_ip6, v, id),
            None => {}
        }
        if let Some(claim) = &proj.claim {
            let ns = proj.key.namespace.as_deref().unwrap_or_default();
            let h = self.claim_hash(proj.key.kind, ns, claim);
            Ids::remove(&mut self.by_claim, h, id);
        }
        if let Some(pool) = proj.pool.clone() {
            let pos = entry.pool_pos as usize;
            let Some(list) = self.by_pool.get_mut(&pool) else {
                debug_assert!(false, "address {id} missing from by_pool");
                return;
            };
            debug_assert_eq!(list.get(pos), Some(&id));
            list.swap_remove(pos);
            if let Some(&moved) = list.get(pos) {
                self.addresses.get_mut(moved).pool_pos = pos as u32;
            }
            if list.is_empty() {
                self.by_pool.remove(&pool);
            }
        }
    }
}

// === impl Index: releases ===

impl Index {
    /// Removes the address object with `key`, as a release that began at `began`: remembered
    /// (R1) for the reuse grace of the pool it references when that pool is in the index, not
    /// being deleted and sets one (`addressReuseGracePeriodSeconds`, 0 included), else for
    /// `default_grace` (`--reuse-grace`). The in-cluster provider skips its grace for a pool
    /// being deleted (a teardown); so does this. Returns the address removed.
    pub fn release_address(
        &mut self,
        key: &ObjKey,
        began: Instant,
        default_grace: Duration,
    ) -> Option<AddressProj> {
        let address = &self.addresses.get(*self.address_ids.get(key)?).proj;
        if let Some(ip) = address.ip {
            let pool = address.pool.as_ref().and_then(|k| self.pool(k));
            let own = pool.filter(|p| !p.deleting).and_then(|p| p.reuse_grace);
            let release = Release {
                ip,
                holder: address.key.clone(),
                claim: address.claim.clone(),
                pool: address.pool.clone(),
                space: pool.map_or_else(
                    || self.strings_get(crate::kinds::DEFAULT_ADDRESS_SPACE),
                    |p| p.space.clone(),
                ),
                at: began,
                grace: own.unwrap_or(default_grace),
                from_pool: own.is_some(),
            };
            self.releases.record(release);
        }
        self.remove_address(key)
    }

    /// Forgets the releases whose grace has ended by `now`.
    pub fn expire_releases(&mut self, now: Instant) {
        let before = self.releases.len();
        self.releases.expire(now);
        if self.releases.len() != before {
            self.changed();
        }
    }

    /// The releases still remembered (R1 reads them; `expire_releases` keeps them current).
    pub fn releases(&self) -> &Releases {
        &self.releases
    }

    /// The `default` space name, held once.
    fn strings_get(&self, s: &str) -> Arc<str> {
        self.strings
            .set
            .get(s)
            .cloned()
            .unwrap_or_else(|| Arc::from(s))
    }
}

// === impl Index: all kinds ===

impl Index {
    /// Adds or replaces any projection.
    pub fn upsert(&mut self, object: Object) {
        match object {
            Object::Pool(p) => {
                self.upsert_pool(*p);
            }
            Object::Address(a) => {
                self.upsert_address(a);
            }
            Object::Claim(c) => {
                self.upsert_claim(c);
            }
            Object::Cluster(c) => {
                self.upsert_cluster(*c);
            }
            Object::Holder(h) => {
                self.upsert_holder(*h);
            }
        }
    }

    /// Holds `object` as a version admitted and not yet stored (X2), beside whatever is stored
    /// under its key and the other pending versions: every query sees it until
    /// `remove_pending`. Not counted among the objects held (`counts`).
    pub fn add_pending(&mut self, object: Object) -> PendingId {
        self.changed();
        let before = self.lent_space(object.key());
        let id = match object {
            Object::Pool(mut p) => {
                self.strings.key(&mut p.key);
                p.space = self.strings.get(&p.space);
                let id = self.pools.insert(*p, true);
                self.place_pool(id);
                PendingId::Pool(id)
            }
            Object::Address(mut a) => {
                self.share_strings(&mut a);
                let entry = AddrEntry {
                    proj: a,
                    pool_pos: 0,
                };
                let id = self.addresses.insert(entry, true);
                self.link_address(id);
                PendingId::Address(id)
            }
            Object::Claim(mut c) => {
                self.share_claim_strings(&mut c);
                PendingId::Claim(self.pending_claims.insert(c))
            }
            Object::Cluster(mut c) => {
                self.strings.key(&mut c.key);
                c.space = self.strings.get(&c.space);
                let id = self.clusters.insert(*c, true);
                self.place_endpoint(id);
                PendingId::Cluster(id)
            }
            Object::Holder(mut h) => {
                self.strings.key(&mut h.key);
                h.space = self.strings.get(&h.space);
                let id = self.holders_held.insert(*h, true);
                self.place_held(id);
                PendingId::Holder(id)
            }
        };
        let key = self.pending_key(id).clone();
        self.pending.entry(key.clone()).or_default().push(id);
        self.follow_owner(&key, before);
        id
    }

    /// Drops the pending version `id` (confirmed, refuted or expired); what is stored under its
    /// key stays as it is.
    pub fn remove_pending(&mut self, id: PendingId) {
        self.changed();
        let key = self.pending_key(id).clone();
        let before = self.lent_space(&key);
        if let Entry::Occupied(mut o) = self.pending.entry(key.clone()) {
            o.get_mut().retain(|p| *p != id);
            if o.get().is_empty() {
                o.remove();
            }
        }
        match id {
            PendingId::Pool(id) => {
                self.unplace_pool(id);
                self.pools.remove(id);
            }
            PendingId::Address(id) => {
                self.unlink_address(id);
                self.addresses.remove(id);
            }
            PendingId::Claim(id) => {
                self.pending_claims.remove(id);
            }
            PendingId::Cluster(id) => {
                self.unplace_endpoint(id);
                self.clusters.remove(id);
            }
            PendingId::Holder(id) => {
                self.unplace_held(id);
                self.holders_held.remove(id);
            }
        }
        self.follow_owner(&key, before);
    }

    /// Whether the pending version `id` reads exactly as `object`.
    pub fn pending_is(&self, id: PendingId, object: &Object) -> bool {
        match (id, object) {
            (PendingId::Pool(id), Object::Pool(p)) => self.pools.get(id) == &**p,
            (PendingId::Address(id), Object::Address(a)) => self.addresses.get(id).proj == *a,
            (PendingId::Claim(id), Object::Claim(c)) => self.pending_claims.get(id) == c,
            (PendingId::Cluster(id), Object::Cluster(c)) => self.clusters.get(id) == &**c,
            (PendingId::Holder(id), Object::Holder(h)) => self.holders_held.get(id) == &**h,
            _ => false,
        }
    }

    /// Whether what is stored under `object`'s key reads exactly as `object`.
    pub fn stored_is(&self, object: &Object) -> bool {
        let key = object.key();
        match object {
            Object::Pool(p) => self
                .pool_ids
                .get(key)
                .is_some_and(|&id| self.pools.get(id) == &**p),
            Object::Address(a) => self
                .address_ids
                .get(key)
                .is_some_and(|&id| self.addresses.get(id).proj == *a),
            Object::Claim(c) => self.claims.get(key).is_some_and(|e| e.0 == *c),
            Object::Cluster(c) => self
                .cluster_ids
                .get(key)
                .is_some_and(|&id| self.clusters.get(id) == &**c),
            Object::Holder(h) => self
                .holder_ids
                .get(key)
                .is_some_and(|&id| self.holders_held.get(id) == &**h),
        }
    }

    /// Whether what is stored under the key of the pending version `id` reads as that version
    /// does: holding the version adds nothing then.
    pub fn stored_alike(&self, id: PendingId) -> bool {
        match id {
            PendingId::Pool(id) => {
                let p = self.pools.get(id);
                self.pool_ids
                    .get(&p.key)
                    .is_some_and(|&s| self.pools.get(s) == p)
            }
            PendingId::Address(id) => {
                let a = &self.addresses.get(id).proj;
                self.address_ids
                    .get(&a.key)
                    .is_some_and(|&s| self.addresses.get(s).proj == *a)
            }
            PendingId::Claim(id) => {
                let c = self.pending_claims.get(id);
                self.claims.get(&c.key).is_some_and(|e| e.0 == *c)
            }
            PendingId::Cluster(id) => {
                let c = self.clusters.get(id);
                self.cluster_ids
                    .get(&c.key)
                    .is_some_and(|&s| self.clusters.get(s) == c)
            }
            PendingId::Holder(id) => {
                let h = self.holders_held.get(id);
                self.holder_ids
                    .get(&h.key)
                    .is_some_and(|&s| self.holders_held.get(s) == h)
            }
        }
    }

    /// Pending versions held now, all keys.
    pub fn pending_len(&self) -> usize {
        self.pending.values().map(Vec::len).sum()
    }

    fn pending_ids(&self, key: &dyn Keyed) -> &[PendingId] {
        if self.pending.is_empty() {
            return &[];
        }
        self.pending.get(key).map_or(&[], Vec::as_slice)
    }

    fn pending_key(&self, id: PendingId) -> &ObjKey {
        match id {
            PendingId::Pool(id) => &self.pools.get(id).key,
            PendingId::Address(id) => &self.addresses.get(id).proj.key,
            PendingId::Claim(id) => &self.pending_claims.get(id).key,
            PendingId::Cluster(id) => &self.clusters.get(id).key,
            PendingId::Holder(id) => &self.holders_held.get(id).key,
        }
    }

    /// Removes what is stored under `key` (pending versions stay). True when something was
    /// removed.
    pub fn remove(&mut self, key: &ObjKey) -> bool {
        self.remove_pool(key).is_some()
            || self.remove_address(key).is_some()
            || self.remove_claim(key).is_some()
            || self.remove_cluster(key).is_some()
            || self.remove_holder(key).is_some()
    }

    /// Objects held per kind, every kind of `Kind::ALL` in that order (zero included, so metric
    /// series do not vanish), then each declared kind the index has held an object of.
    pub fn counts(&self) -> Vec<(Kind, usize)> {
        let declared = (0..self.declared_counts.len())
            .filter_map(|n| u16::try_from(n).ok())
            .map(Kind::Declared)
            .zip(self.declared_counts.iter().copied());
        Kind::ALL
            .iter()
            .copied()
            .zip(self.counts)
            .chain(declared)
            .collect()
    }

    /// Total objects held.
    pub fn len(&self) -> usize {
        self.counts.iter().sum::<usize>() + self.declared_counts.iter().sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps only the objects of `kind` for which `keep` says true; other kinds are untouched.
    /// A live view applies a relist (kube-runtime `Init`, `InitApply`…, `InitDone`) by upserting
    /// each `InitApply` and, at `InitDone`, retaining the keys it saw.
    pub fn retain_kind(&mut self, kind: Kind, mut keep: impl FnMut(&ObjKey) -> bool) {
        let pools: Vec<ObjKey> = self
            .pool_ids
            .keys()
            .filter(|k| k.kind == kind && !keep(k))
            .cloned()
            .collect();
        let addresses: Vec<ObjKey> = self
            .address_ids
            .keys()
            .filter(|k| k.kind == kind && !keep(k))
            .cloned()
            .collect();
        let claims: Vec<ObjKey> = self
            .claims
            .iter()
            .map(|c| &c.0.key)
            .filter(|k| k.kind == kind && !keep(k))
            .cloned()
            .collect();
        for k in &pools {
            self.remove_pool(k);
        }
        for k in &addresses {
            self.remove_address(k);
        }
        for k in &claims {
            self.remove_claim(k);
        }
        let clusters: Vec<ObjKey> = self
            .cluster_ids
            .keys()
            .filter(|k| k.kind == kind && !keep(k))
            .cloned()
            .collect();
        for k in &clusters {
            self.remove_cluster(k);
        }
        let holders: Vec<ObjKey> = self
            .holder_ids
            .keys()
            .filter(|k| k.kind == kind && !keep(k))
            .cloned()
            .collect();
        for k in &holders {
            self.remove_holder(k);
        }
    }

    /// Drops every object of `kind`.
    pub fn clear_kind(&mut self, kind: Kind) {
        self.retain_kind(kind, |_| false);
    }

    /// Makes the objects of `kind` exactly `objects` (a full relist): upserts each, then drops the
    /// keys of `kind` that did not come back. Objects of another kind are upserted as well.
    pub fn replace_kind(&mut self, kind: Kind, objects: impl IntoIterator<Item = Object>) {
        let mut seen = FastSet::default();
        for object in objects {
            if object.key().kind == kind {
                seen.insert(object.key().clone());
            }
            self.upsert(object);
        }
        self.retain_kind(kind, |k| seen.contains(k));
    }

    fn count(&mut self, kind: Kind, add: bool) {
        let c = match (kind, kind.built_in_index()) {
            (_, Some(i)) => &mut self.counts[i],
            (Kind::Declared(n), None) => {
                let n = usize::from(n);
                if self.declared_counts.len() <= n {
                    self.declared_counts.resize(n + 1, 0);
                }
                &mut self.declared_counts[n]
            }
            // Every kind but a declared one has a place in `Kind::ALL`.
            (_, None) => return,
        };
        if add {
            *c += 1;
        } else {
            *c -= 1;
        }
    }
}

// === helpers ===

/// Strings many objects repeat, held once. Strings no object uses any more are dropped when the
/// table has doubled since the last sweep, so namespace churn cannot grow it without bound.
#[derive(Debug, Clone, Default)]
struct Interner {
    set: FastSet<Arc<str>>,
    sweep_at: usize,
}

impl Interner {
    fn get(&mut self, s: &Arc<str>) -> Arc<str> {
        if let Some(held) = self.set.get(&**s) {
            return held.clone();
        }
        if self.set.len() >= self.sweep_at {
            self.set.retain(|held| Arc::strong_count(held) > 1);
            self.sweep_at = (self.set.len() * 2).max(64);
        }
        self.set.insert(s.clone());
        s.clone()
    }

    fn key(&mut self, key: &mut ObjKey) {
        if let Some(ns) = &key.namespace {
            key.namespace = Some(self.get(ns));
        }
    }
}

/// Segment maps of one address space.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct FamilySegments {
    v4: SegmentMap,
    v6: SegmentMap,
}

impl FamilySegments {
    fn get(&self, family: Family) -> &SegmentMap {
        match family {
            Family::V4 => &self.v4,
            Family::V6 => &self.v6,
        }
    }
    fn get_mut(&mut self, family: Family) -> &mut SegmentMap {
        match family {
            Family::V4 => &mut self.v4,
            Family::V6 => &mut self.v6,
        }
    }
}

fn bounds(r: &IpRange) -> (u128, u128) {
    (r.start, r.end)
}

enum IpKey {
    V4(u32),
    V6(u128),
}

/// None for an IPv4 value past 32 bits, which the address module never builds.
fn ip_key(ip: Ip) -> Option<IpKey> {
    match ip.family {
        Family::V4 => u32::try_from(ip.value).ok().map(IpKey::V4),
        Family::V6 => Some(IpKey::V6(ip.value)),
    }
}

/// An address object and its position in `by_pool[proj.pool]`.
#[derive(Debug, Clone)]
struct AddrEntry {
    proj: AddressProj,
    pool_pos: u32,
}

/// A claim stored under its own key (`Borrow<ObjKey>`), so the key is not held twice.
#[derive(Debug, Clone)]
struct ClaimEntry(ClaimProj);

impl PartialEq for ClaimEntry {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}
impl Eq for ClaimEntry {}
impl Hash for ClaimEntry {
    // Must hash exactly as `ObjKey` does for `Borrow` lookups to work.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.key.hash(state);
    }
}
impl Borrow<ObjKey> for ClaimEntry {
    fn borrow(&self) -> &ObjKey {
        &self.0.key
    }
}
impl<'a> Borrow<dyn Keyed + 'a> for ClaimEntry {
    fn borrow(&self) -> &(dyn Keyed + 'a) {
        &self.0.key
    }
}

/// A few slot ids; one id (the overwhelmingly common case) needs no allocation.
#[derive(Debug, Clone)]
enum Ids {
    One(u32),
    Many(Vec<u32>),
}

impl Ids {
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (one, many) = match self {
            Ids::One(id) => (Some(*id), &[][..]),
            Ids::Many(v) => (None, v.as_slice()),
        };
        one.into_iter().chain(many.iter().copied())
    }

    fn len(&self) -> usize {
        match self {
            Ids::One(_) => 1,
            Ids::Many(v) => v.len(),
        }
    }

    fn push<K>(entry: Entry<'_, K, Ids>, id: u32) {
        match entry {
            Entry::Vacant(v) => {
                v.insert(Ids::One(id));
            }
            Entry::Occupied(mut o) => {
                let ids = o.get_mut();
                match ids {
                    Ids::One(first) => *ids = Ids::Many(vec![*first, id]),
                    Ids::Many(v) => v.push(id),
                }
            }
        }
    }

    /// Removes `id` under `key`, dropping the entry when it empties. Lists are short (holders of
    /// one address, addresses of one claim), so a linear scan is fine.
    fn remove<K: Hash + Eq>(map: &mut FastMap<K, Ids>, key: K, id: u32) {
        let Entry::Occupied(mut o) = map.entry(key) else {
            return;
        };
        match o.get_mut() {
            Ids::One(x) if *x == id => {
                o.remove();
            }
            Ids::One(_) => {}
            Ids::Many(v) => {
                if let Some(pos) = v.iter().position(|&x| x == id) {
                    v.swap_remove(pos);
                }
                if let [only] = v[..] {
                    o.insert(Ids::One(only));
                }
            }
        }
    }
}

/// Which pending version (X2) of an object the index holds: named by `Index::add_pending`,
/// dropped by `Index::remove_pending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PendingId {
    Pool(u32),
    Address(u32),
    Claim(u32),
    Cluster(u32),
    Holder(u32),
}

#[cfg(test)]
mod tests;
