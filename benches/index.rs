//! The index the cross-object rules read (X1): pool upserts and overlap queries (P10), address
//! upserts and holder / claim / pool lookups (A7, A9, P8, P9), at three scales and both families.
//!
//! Scales tie pools to addresses as a cluster does (ten addresses per pool): 1k pools + 10k
//! addresses, 10k + 100k, 100k + 1M. Half the pools are CIDR-shaped (a /26 or /64 minus network
//! and broadcast), half arbitrary `a-b` ranges. The `huge`/`small` pairs put a /8 (IPv6 /48) and a
//! /30 (/126) into free space: the index never enumerates addresses, so both cost the same.
//!
//! `cargo bench --bench index` (all), `cargo bench --bench index -- index_v4_100k` (one scale),
//! `cargo bench --bench index -- e1_` (E1's question on one large pool).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ipam_guard::address::{AddrSet, Family, Ip, IpRange};
use ipam_guard::index::Index;
use ipam_guard::kinds::{Kind, DEFAULT_ADDRESS_SPACE};
use ipam_guard::model::{AddressProj, ObjKey, PoolProj};

const ADDRESSES_PER_POOL: u128 = 10;

/// Where the generated pools live, per family.
struct Layout {
    family: Family,
    /// First address of pool 0.
    base: u128,
    /// Distance between two pools (a /26 for IPv4, a /64 for IPv6).
    stride: u128,
    /// A /8 (IPv4) or /48 (IPv6) no generated pool touches.
    free_huge: IpRange,
    /// A /30 (IPv4) or /126 (IPv6) no generated pool touches.
    free_small: IpRange,
}

impl Layout {
    fn v4() -> Layout {
        let ip = |a: u32, b, c, d| u128::from(u32::from_be_bytes([a as u8, b, c, d]));
        Layout {
            family: Family::V4,
            base: ip(10, 0, 0, 0),
            stride: 64,
            free_huge: IpRange::new(ip(11, 0, 0, 0), ip(11, 255, 255, 255)),
            free_small: IpRange::new(ip(12, 0, 0, 0), ip(12, 0, 0, 3)),
        }
    }

    fn v6() -> Layout {
        let base: u128 = 0x2001_0db8 << 96;
        // 2001:db8:ffff::/48 and 2001:db8:fffe::/126: above every generated /64.
        let huge = base | (0xffff << 80);
        let small = base | (0xfffe << 80);
        Layout {
            family: Family::V6,
            base,
            stride: 1 << 64,
            free_huge: IpRange::new(huge, huge | ((1 << 80) - 1)),
            free_small: IpRange::new(small, small | 3),
        }
    }

    fn name(&self) -> &'static str {
        match self.family {
            Family::V4 => "v4",
            Family::V6 => "v6",
        }
    }

    /// Pool `i`'s allocatable run: even pools a whole CIDR minus its ends, odd pools an
    /// unaligned range.
    fn pool_range(&self, i: u128) -> IpRange {
        let s = self.base + i * self.stride;
        let last = s + self.stride - 1;
        if i.is_multiple_of(2) {
            IpRange::new(s + 1, last - 1)
        } else {
            IpRange::new(s + 3 + i % 5, last - 20 - i % 17)
        }
    }
}

fn pool_key(i: u128) -> ObjKey {
    ObjKey::new(
        Kind::InClusterIPPool,
        Some(&format!("ns{}", i % 100)),
        &format!("pool-{i}"),
    )
}

fn pool(layout: &Layout, key: ObjKey, range: IpRange) -> PoolProj {
    PoolProj {
        key,
        space: Arc::from(DEFAULT_ADDRESS_SPACE),
        family: Some(layout.family),
        allocatable: AddrSet::from_range(layout.family, range),
        other_family: None,
        gateway: None,
        prefix: None,
        deleting: false,
        skip_delete_check: false,
        recorded: AddrSet::empty(Family::V4),
        declared_subnet: None,
        reuse_grace: None,
    }
}

/// Address `a` of pool `p`, built the way the readers build it (fresh strings each time).
fn address(layout: &Layout, p: u128, a: u128) -> AddressProj {
    let name = format!("addr-{p}-{a}");
    let pk = pool_key(p);
    AddressProj {
        key: ObjKey::new(Kind::IPAddress, pk.namespace.as_deref(), &name),
        ip: Some(Ip::new(layout.family, layout.pool_range(p).start + a)),
        pool: Some(pk),
        claim: Some(Arc::from(name.as_str())),
    }
}

fn build(layout: &Layout, pools: u128) -> Index {
    let mut index = Index::new();
    for i in 0..pools {
        index.upsert_pool(pool(layout, pool_key(i), layout.pool_range(i)));
        for a in 0..ADDRESSES_PER_POOL {
            index.upsert_address(address(layout, i, a));
        }
    }
    index
}

fn scale_name(pools: u128) -> String {
    match pools {
        n if n >= 1000 => format!("{}k", n / 1000),
        n => n.to_string(),
    }
}

fn bench_scale(c: &mut Criterion, layout: &Layout, pools: u128) {
    let mut index = build(layout, pools);
    let fam = layout.name();
    let mut g = c.benchmark_group(format!("index_{fam}_{}", scale_name(pools)));

    // --- pools: insert a new one and take it out again, so every iteration sees the same index.
    let new_key = pool_key(pools);
    let inserts = [
        ("pool_insert_remove_cidr", layout.pool_range(pools)),
        ("pool_insert_remove_range", layout.pool_range(pools + 1)),
        ("pool_insert_remove_small", layout.free_small),
        ("pool_insert_remove_huge", layout.free_huge),
    ];
    // pool_range(pools) is CIDR-shaped only when `pools` is even; keep the labels honest.
    assert!(pools.is_multiple_of(2));
    for (name, range) in inserts {
        let p = pool(layout, new_key.clone(), range);
        g.bench_function(name, |b| {
            b.iter_batched(
                || p.clone(),
                |p| {
                    index.upsert_pool(p);
                    index.remove_pool(&new_key)
                },
                BatchSize::SmallInput,
            )
        });
    }

    // --- overlap queries (P10): a probe inside one pool, and probes in free space.
    let hit = {
        let r = layout.pool_range(pools / 2);
        AddrSet::from_range(layout.family, IpRange::new(r.start + 2, r.start + 5))
    };
    let probes = [
        ("overlap_hit_one", hit),
        (
            "overlap_miss_small",
            AddrSet::from_range(layout.family, layout.free_small),
        ),
        (
            "overlap_miss_huge",
            AddrSet::from_range(layout.family, layout.free_huge),
        ),
    ];
    for (name, probe) in probes {
        g.bench_function(name, |b| {
            b.iter(|| {
                index
                    .overlapping_pools(DEFAULT_ADDRESS_SPACE, black_box(&probe))
                    .len()
            })
        });
    }

    // --- addresses.
    let fresh = address(layout, pools / 2, ADDRESSES_PER_POOL + 1);
    let fresh_key = fresh.key.clone();
    g.bench_function("address_insert_remove", |b| {
        b.iter_batched(
            || fresh.clone(),
            |a| {
                index.upsert_address(a);
                index.remove_address(&fresh_key)
            },
            BatchSize::SmallInput,
        )
    });
    let held = address(layout, pools / 3, 4);
    let ip = held.ip.unwrap();
    g.bench_function("holders", |b| {
        b.iter(|| index.holders(black_box(ip)).count())
    });
    let ns = held.key.namespace.clone().unwrap();
    let claim = held.claim.clone().unwrap();
    g.bench_function("addresses_for_claim", |b| {
        b.iter(|| {
            index
                .addresses_for_claim(Kind::IPAddress, black_box(&ns), black_box(&claim))
                .len()
        })
    });
    let pk = held.pool.clone().unwrap();
    g.bench_function("addresses_for_pool", |b| {
        b.iter(|| index.addresses_for_pool(black_box(&pk)).len())
    });
    g.finish();
}

/// E1 on a claim CREATE into one large pool (a /16 holding 60,000 addresses): the exact usage,
/// which collects and sorts every held address, beside the floor E1 checks first
/// (`Index::free_at_least`), which answers for a pool far from full without touching them.
fn big_pool(c: &mut Criterion) {
    let layout = Layout::v4();
    let start = layout.base;
    let range = IpRange::new(start + 1, start + 65_534);
    let key = pool_key(0);
    let mut index = Index::new();
    index.upsert_pool(pool(&layout, key.clone(), range));
    for a in 0..60_000u128 {
        let mut addr = address(&layout, 0, a);
        addr.ip = Some(Ip::new(layout.family, start + 1 + a));
        index.upsert_address(addr);
    }
    let mut g = c.benchmark_group("e1_pool_v4_16_60k_held");
    g.bench_function("usage_of_pool", |b| {
        b.iter(|| index.usage_of_pool(black_box(&key)).map(|u| u.free()))
    });
    g.bench_function("free_at_least", |b| {
        b.iter(|| index.free_at_least(black_box(&key)))
    });
    g.finish();
}

fn index(c: &mut Criterion) {
    big_pool(c);
    for layout in [Layout::v4(), Layout::v6()] {
        for pools in [1_000, 10_000, 100_000] {
            bench_scale(c, &layout, pools);
        }
    }
}

criterion_group! {
    name = benches;
    // Each figure is microseconds or less; short runs keep the whole bench near two minutes.
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = index
}
criterion_main!(benches);
