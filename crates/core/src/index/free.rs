//! What each pool can still hand out, as address ranges (`ipam-guard usage --free`): its
//! allocatable set less every address held by an object that references it and every address
//! its own status records (Spiderpool). A prefix pool's free set is the union of the whole
//! sub-prefixes nobody holds.
//!
//! Everything is range arithmetic on `AddrSet` (u128 values), so a `/64` or `::/0` costs what
//! its number of runs costs; nothing is enumerated but the addresses in use. The figures agree
//! with `Index::pool_usage` by construction of the same sets (checked in tests/pool_free.rs).

use crate::address::{block_mask, is_block_start, AddrSet, Family, Ip, IpRange};
use crate::model::PoolProj;

use super::usage::PoolUsage;
use super::Index;

/// One pool's free set with its usage figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolFree {
    pub usage: PoolUsage,
    /// The addresses nobody holds among those the pool hands out; for a prefix pool, the union
    /// of its free sub-prefixes. Empty (IPv4) for a pool whose spec names no valid address.
    pub free: AddrSet,
}

/// One free run as shown: its bounds, its size in the pool's unit (addresses, or sub-prefixes
/// for a prefix pool), and the fewest CIDR blocks covering it exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeRun {
    pub family: Family,
    pub range: IpRange,
    pub size: u128,
    pub cidrs: Vec<(Ip, u8)>,
}

impl PoolFree {
    /// The free runs, largest first (then lowest address first). A prefix pool's free set is cut
    /// into CIDR blocks first, each its own entry: what an operator hands to a provider is a
    /// sub-prefix, not a range.
    pub fn runs_largest_first(&self) -> Vec<FreeRun> {
        let family = self.free.family();
        let mut runs: Vec<FreeRun> = match self.usage.sub_prefix {
            Some(len) => {
                let shift = block_mask(family, len).count_ones();
                self.free
                    .ranges()
                    .iter()
                    .flat_map(|r| cidrs(family, *r))
                    .map(|(ip, prefix)| {
                        let range = IpRange::new(ip.value, ip.value | block_mask(family, prefix));
                        FreeRun {
                            family,
                            range,
                            size: sub_prefixes(range, shift),
                            cidrs: vec![(ip, prefix)],
                        }
                    })
                    .collect()
            }
            None => self
                .free
                .ranges()
                .iter()
                .map(|r| FreeRun {
                    family,
                    range: *r,
                    size: r.size(),
                    cidrs: cidrs(family, *r),
                })
                .collect(),
        };
        runs.sort_by(|a, b| {
            b.size
                .cmp(&a.size)
                .then_with(|| a.range.start.cmp(&b.range.start))
        });
        runs
    }
}

/// How many blocks of `2^shift` addresses an aligned run holds, saturating.
fn sub_prefixes(r: IpRange, shift: u32) -> u128 {
    if shift >= 128 {
        1
    } else {
        ((r.end - r.start) >> shift).saturating_add(1)
    }
}

/// The fewest CIDR blocks whose union is exactly `r` (at most two per bit of the family), in
/// address order. Each block is the largest aligned one starting where the previous ended.
pub fn cidrs(family: Family, r: IpRange) -> Vec<(Ip, u8)> {
    let bits = u32::from(family.bits());
    let mut out = Vec::new();
    let mut start = r.start;
    loop {
        // The largest block aligned at `start` that ends inside the run.
        let mut host = start.trailing_zeros().min(bits);
        let mask = loop {
            let mask = if host >= 128 {
                u128::MAX
            } else {
                (1u128 << host) - 1
            };
            if start | mask <= r.end || host == 0 {
                break mask;
            }
            host -= 1;
        };
        out.push((Ip::new(family, start), (bits - host) as u8));
        let end = start | mask;
        match end.checked_add(1) {
            Some(next) if end < r.end => start = next,
            _ => return out,
        }
    }
}

impl Index {
    /// The free set of every pool, in `pool_usage`'s order (fullest first).
    pub fn pool_free(&self) -> Vec<PoolFree> {
        self.pool_usage()
            .into_iter()
            .filter_map(|usage| {
                let pool = self.pool(&usage.key)?;
                Some(PoolFree {
                    free: self.free_of(pool),
                    usage,
                })
            })
            .collect()
    }

    /// What `pool` hands out and nobody holds (for a SpiderSubnet: what no pool has carved). Mirrors `usage_of`: an address object holds its
    /// address when it lies in the pool's allocatable set (for a prefix pool: the whole
    /// sub-prefix whose network address it carries), a status record holds what it names, and a
    /// Cluster's control-plane endpoint, a SpiderReservedIP or a machine's static address in the
    /// pool's space holds its address.
    pub fn free_of(&self, pool: &PoolProj) -> AddrSet {
        let family = pool.allocatable.family();
        // A SpiderSubnet's free addresses are those no pool has carved yet (`usage`).
        if pool.key.kind == crate::kinds::Kind::SpiderSubnet {
            return pool.allocatable.difference(&self.carved_from(pool));
        }
        let held = self
            .held_ips(pool)
            .filter(|ip| ip.family == family && pool.allocatable.contains(*ip));
        let taken: Vec<IpRange> = match pool.prefix.filter(|_| pool.key.kind.is_prefix_pool()) {
            Some(len) => held
                .filter(|ip| is_block_start(*ip, len))
                .map(|ip| IpRange::new(ip.value, ip.value | block_mask(family, len)))
                .collect(),
            None => {
                let mut taken: Vec<IpRange> = held.map(|ip| IpRange::single(ip.value)).collect();
                if !pool.recorded.is_empty() && pool.recorded.family() == family {
                    taken.extend(pool.recorded.ranges().iter().copied());
                }
                let endpoints = self.endpoints_in(&pool.space, &pool.allocatable);
                taken.extend(
                    endpoints
                        .iter()
                        .filter_map(|c| c.endpoint)
                        .map(|ip| IpRange::single(ip.value)),
                );
                taken.extend(self.held_outside(pool).ranges().iter().copied());
                taken
            }
        };
        pool.allocatable
            .difference(&AddrSet::from_ranges(family, taken))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> u128 {
        u128::from(u32::from(s.parse::<std::net::Ipv4Addr>().unwrap()))
    }

    fn shown(family: Family, r: IpRange) -> Vec<String> {
        cidrs(family, r)
            .into_iter()
            .map(|(ip, p)| format!("{ip}/{p}"))
            .collect()
    }

    #[test]
    fn cidrs_cover_a_run_exactly_with_the_fewest_blocks() {
        let r = IpRange::new(v4("10.0.0.1"), v4("10.0.0.10"));
        assert_eq!(
            shown(Family::V4, r),
            [
                "10.0.0.1/32",
                "10.0.0.2/31",
                "10.0.0.4/30",
                "10.0.0.8/31",
                "10.0.0.10/32"
            ]
        );
        assert_eq!(
            shown(Family::V4, IpRange::new(0, u128::from(u32::MAX))),
            ["0.0.0.0/0"]
        );
        assert_eq!(shown(Family::V6, IpRange::new(0, u128::MAX)), ["::/0"]);
        assert_eq!(
            shown(Family::V6, IpRange::new(u128::MAX, u128::MAX)),
            ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"]
        );
        assert_eq!(
            shown(Family::V6, IpRange::new(1, u128::MAX)).len(),
            128,
            "::1 to the end takes one block per bit"
        );
    }
}
