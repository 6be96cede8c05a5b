//! Bytes the view holds per remembered release (R1, the reuse grace), counted by a global
//! allocator: the figure in docs/performance.md ("Memory") comes from this test's output
//! (`cargo test --release --test release_memory -- --nocapture`), and the test fails if one
//! release grows past the budget the cap is sized by.

mod counting_alloc;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ipam_guard::address::{Family, Ip};
use ipam_guard::index::releases::{Release, Releases, MAX_RELEASES};
use ipam_guard::kinds::Kind;
use ipam_guard::model::ObjKey;

/// What `MAX_RELEASES` is sized by (its doc: about 25 MiB for the cap), and the budget of 512 B
/// per cached object the index keeps to (docs/performance.md).
const BUDGET_PER_RELEASE: usize = 512;

/// `n` releases as the view records them: the holder's name is its own string (the address
/// object's, kept alive by the release once the object is gone), namespace, space and pool key
/// shared, as the index interns them.
fn releases(n: u32, family: Family) -> Vec<Release> {
    let ns: Arc<str> = Arc::from("team-a");
    let space: Arc<str> = Arc::from("default");
    let pool = ObjKey::new(Kind::InClusterIPPool, Some("team-a"), "nodes");
    let at = Instant::now();
    (0..n)
        .map(|i| {
            let name: Arc<str> = Arc::from(format!("cluster-a-md-0-x7k2p-{i:06}"));
            let holder = ObjKey {
                kind: Kind::IPAddress,
                namespace: Some(ns.clone()),
                name: name.clone(),
            };
            let value = match family {
                Family::V4 => 0x0a00_0000 + u128::from(i),
                Family::V6 => 0x2001_0db8_u128 << 96 | u128::from(i) << 64,
            };
            Release {
                ip: Ip::new(family, value),
                holder,
                claim: Some(name),
                pool: Some(pool.clone()),
                space: space.clone(),
                at,
                grace: Duration::from_secs(60),
                from_pool: true,
            }
        })
        .collect()
}

#[test]
fn r1_bytes_per_remembered_release() {
    for family in [Family::V4, Family::V6] {
        for n in [10_000u32, 50_000] {
            let made = releases(n, family);
            let names_bytes: usize = made
                .iter()
                .map(|r| std::mem::size_of::<usize>() * 2 + r.holder.name.len())
                .sum();
            // The list being drained stays allocated until the count is taken.
            let mut made = made.into_iter();
            let base = counting_alloc::reset_peak();
            let mut held = Releases::default();
            for r in made.by_ref() {
                held.record(r);
            }
            let live = counting_alloc::live() - base;
            drop(made);
            assert_eq!(held.len(), (n as usize).min(MAX_RELEASES));
            // The names were allocated before the count began; the release keeps them alive
            // once the address object is gone, so they are part of its cost.
            let per = (live + names_bytes) as f64 / f64::from(n);
            println!(
                "{family:?} {n} releases: {per:.0} B per release ({} B structure + {} B names)",
                live / n as usize,
                names_bytes / n as usize
            );
            assert!(
                per <= BUDGET_PER_RELEASE as f64,
                "{per:.0} B per release is past the {BUDGET_PER_RELEASE} B the cap is sized by"
            );
            drop(held);
        }
    }
}
