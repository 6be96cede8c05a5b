//! How full each pool is, from what the index already holds (no API calls): the question
//! platform teams ask most ("which pool is about to run out?"). `ipam-guard usage` prints it and
//! `serve` exports it as `ipam_guard_pool_addresses`.
//!
//! Sizes are `u128` and saturate, and the share is a float, so an IPv6 /64 (2^64 addresses) or
//! even `::/0` is counted without overflow. Nothing is enumerated but the addresses in use.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::address::{is_block_start, AddrSet, Family, Ip, IpRange};
use crate::kinds::Kind;
use crate::model::spider::carved;
use crate::model::{Keyed, ObjKey, PoolProj};

use super::Index;

/// One pool's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolUsage {
    pub key: ObjKey,
    pub space: Arc<str>,
    /// None when the spec names no valid address.
    pub family: Option<Family>,
    /// What the pool can hand out: declared − excluded − gateway − reserved.
    pub allocatable: u128,
    /// Distinct addresses of the allocatable set that are held: by an address object that
    /// references the pool, in the pool's own status record (Spiderpool), or as a Cluster's
    /// control-plane endpoint, a SpiderReservedIP's address or a machine's static address in the
    /// pool's address space (CP3, RI5, SA2: no machine may be given it).
    pub used: u128,
    /// Distinct addresses held by objects that reference the pool but lie outside what it can
    /// hand out (the gateway, an excluded or reserved address, or outside its ranges altogether:
    /// what slipped in before the webhook, A8 / P8).
    pub outside: u128,
    /// For a pool that hands out whole sub-prefixes (a prefix pool), their length: then every
    /// figure above counts sub-prefixes of that length, not addresses.
    pub sub_prefix: Option<u8>,
}

impl PoolUsage {
    /// Addresses left to hand out.
    pub fn free(&self) -> u128 {
        self.allocatable.saturating_sub(self.used)
    }

    /// The share of the allocatable set in use, 0.0 to 1.0. A pool that can hand out nothing
    /// counts as full: a claim on it will never be fulfilled.
    pub fn share_used(&self) -> f64 {
        if self.allocatable == 0 {
            return 1.0;
        }
        // Exact for every count below 2^53; above that the share is what matters, not the digits.
        (self.used as f64 / self.allocatable as f64).clamp(0.0, 1.0)
    }

    /// Fullest first (by share used, then by fewer free addresses), then by key: one order for
    /// the table, the JSON and the metrics cut.
    pub(crate) fn fullest_first(a: &PoolUsage, b: &PoolUsage) -> Ordering {
        b.share_used()
            .total_cmp(&a.share_used())
            .then_with(|| a.free().cmp(&b.free()))
            .then_with(|| a.key.cmp(&b.key))
    }
}

impl Index {
    /// Usage of every pool, fullest first (`PoolUsage::fullest_first`). O(pools + addresses).
    pub fn pool_usage(&self) -> Vec<PoolUsage> {
        let mut out: Vec<PoolUsage> = self.pools().map(|p| self.usage_of(p)).collect();
        out.sort_by(PoolUsage::fullest_first);
        out
    }

    /// Usage of one pool, the same figures `pool_usage` gives it; None when the view has no such
    /// pool. O(addresses that reference it).
    pub fn usage_of_pool(&self, key: &impl Keyed) -> Option<PoolUsage> {
        self.pool(key).map(|p| self.usage_of(p))
    }

    /// A floor under `usage_of_pool(key)`'s free count, with its allocatable count, without
    /// collecting and sorting the pool's addresses: every address object and status record naming
    /// the pool is counted as in use. O(ranges of the pool). None when the view has no such pool.
    ///
    /// E1 asks on every claim CREATE whether a pool is low; for a pool of 100k addresses the exact
    /// count sorts 100k values, while the answer for a pool far from full is already known here.
    pub fn free_at_least(&self, key: &impl Keyed) -> Option<(u128, u128)> {
        let pool = self.pool(key)?;
        if pool.key.kind == Kind::SpiderSubnet {
            let u = self.subnet_usage_of(pool);
            return Some((u.allocatable, u.free()));
        }
        let allocatable = match pool.prefix.filter(|_| pool.key.kind.is_prefix_pool()) {
            Some(len) => pool.allocatable.count_blocks(len),
            None => pool.allocatable.len(),
        };
        let held = self.address_count_for_pool(key) as u128;
        let endpoints = self.endpoints_in(&pool.space, &pool.allocatable).len() as u128;
        let outside = self.held_outside(pool).len();
        let used_at_most = held
            .saturating_add(pool.recorded.len())
            .saturating_add(endpoints)
            .saturating_add(outside);
        Some((allocatable, allocatable.saturating_sub(used_at_most)))
    }

    fn usage_of(&self, pool: &PoolProj) -> PoolUsage {
        if pool.key.kind == Kind::SpiderSubnet {
            return self.subnet_usage_of(pool);
        }
        if let Some(len) = pool.prefix.filter(|_| pool.key.kind.is_prefix_pool()) {
            return self.sub_prefix_usage_of(pool, len);
        }
        let family = pool.allocatable.family();
        let (mut inside, outside) = self.split_held(pool, |ip| {
            ip.family == family && pool.allocatable.contains(ip)
        });
        let endpoints = self.endpoints_in(&pool.space, &pool.allocatable);
        if !endpoints.is_empty() {
            inside.extend(
                endpoints
                    .iter()
                    .filter_map(|c| c.endpoint)
                    .map(|ip| ip.value),
            );
            inside.sort_unstable();
            inside.dedup();
        }
        let mut used = inside.len() as u128;
        // Addresses recorded in status and those held outside pools (ReservedIPs, static
        // addresses), less those an object holds too (counted already).
        let mut extra = self.held_outside(pool);
        if !pool.recorded.is_empty() && pool.recorded.family() == family {
            extra = extra.union(&pool.recorded.intersection(&pool.allocatable));
        }
        if !extra.is_empty() {
            let both = inside
                .iter()
                .filter(|&&v| extra.contains(Ip::new(family, v)))
                .count() as u128;
            used = used.saturating_add(extra.len()).saturating_sub(both);
        }
        PoolUsage {
            key: pool.key.clone(),
            space: pool.space.clone(),
            family: pool.family,
            allocatable: pool.allocatable.len(),
            used,
            outside: outside.len() as u128,
            sub_prefix: None,
        }
    }

    /// A SpiderSubnet is the container its SpiderIPPools are carved from, not a pool pods draw
    /// from: its addresses in use are those carved into its pools (their holders are counted in
    /// the pools' own rows, never twice), its free addresses those not carved yet, and outside
    /// what its pools carved beyond it (S11).
    fn subnet_usage_of(&self, subnet: &PoolProj) -> PoolUsage {
        let carved = self.carved_from(subnet);
        PoolUsage {
            key: subnet.key.clone(),
            space: subnet.space.clone(),
            family: subnet.family,
            allocatable: subnet.allocatable.len(),
            used: carved.intersection(&subnet.allocatable).len(),
            outside: carved.difference(&subnet.allocatable).len(),
            sub_prefix: None,
        }
    }

    /// The union of the allocatable sets of the SpiderIPPools carved from `subnet` (stored ones).
    /// O(pools): subnets are few, and only `usage` and the metrics ask.
    pub(super) fn carved_from(&self, subnet: &PoolProj) -> AddrSet {
        let family = subnet.allocatable.family();
        let runs: Vec<IpRange> = self
            .pools()
            .filter(|p| carved(p, subnet) && p.allocatable.family() == family)
            .flat_map(|p| p.allocatable.ranges().iter().copied())
            .collect();
        AddrSet::from_ranges(family, runs)
    }

    /// A prefix pool counted in its sub-prefixes of `len`: an address object holds the one whose
    /// network address it carries (what the provider writes); one at any other address, or at a
    /// sub-prefix the pool does not hand out, counts as outside.
    fn sub_prefix_usage_of(&self, pool: &PoolProj, len: u8) -> PoolUsage {
        let family = pool.allocatable.family();
        let (inside, outside) = self.split_held(pool, |ip| {
            ip.family == family && pool.allocatable.contains(ip) && is_block_start(ip, len)
        });
        PoolUsage {
            key: pool.key.clone(),
            space: pool.space.clone(),
            family: pool.family,
            allocatable: pool.allocatable.count_blocks(len),
            used: inside.len() as u128,
            outside: outside.len() as u128,
            sub_prefix: Some(len),
        }
    }

    /// What ReservedIPs and machines' static addresses hold of `pool`'s allocatable set, in its
    /// address space.
    pub(super) fn held_outside(&self, pool: &PoolProj) -> AddrSet {
        let family = pool.allocatable.family();
        let mut out = AddrSet::empty(family);
        for (_, part) in self.held_in(&pool.space, &pool.allocatable) {
            out = out.union(&part);
        }
        out
    }

    /// The addresses the address objects naming `pool` carry (duplicates included).
    pub(super) fn held_ips<'a>(&'a self, pool: &PoolProj) -> impl Iterator<Item = Ip> + 'a {
        self.by_pool
            .get(&pool.key)
            .into_iter()
            .flatten()
            .filter_map(|&id| self.addresses.get(id).proj.ip)
    }

    /// `held_ips` split by `inside`, each side sorted and without repeats: two objects holding
    /// one address (a duplicate A9 would deny) use it once.
    fn split_held(&self, pool: &PoolProj, inside: impl Fn(Ip) -> bool) -> (Vec<u128>, Vec<Ip>) {
        let mut values: Vec<u128> = Vec::new();
        let mut outside: Vec<Ip> = Vec::new();
        for ip in self.held_ips(pool) {
            if inside(ip) {
                values.push(ip.value);
            } else {
                outside.push(ip);
            }
        }
        values.sort_unstable();
        values.dedup();
        outside.sort_unstable();
        outside.dedup();
        (values, outside)
    }
}
