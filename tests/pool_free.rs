//! `usage --free` against a brute-force count: every address (or sub-prefix) of a
//! small random pool is enumerated, judged by the allocatable-set definition written out here a second time (declared −
//! excluded − gateway − reserved; for prefix pools, the whole sub-prefixes no exclusion touches),
//! less what address objects hold; the free runs `usage --free` lists must be exactly that set,
//! merged, largest first, each covered exactly by its CIDR blocks. IPv4 and IPv6, in-cluster and
//! prefix pools; Metal3 and Spiderpool pools by hand; a /64 and `::/0` by sizes worked out by hand.

use std::collections::BTreeSet;

use ipam_guard::address::{Family, Ip};
use ipam_guard::cli::usage_free;
use ipam_guard::index::free::{FreeRun, PoolFree};
use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::model::ObjKey;
use proptest::prelude::*;
use serde_json::{json, Value};

mod pool_support;
use pool_support::*;

fn ip_address(name: &str, v6: bool, offset: u128, kind: &str, pool: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "address": text(v6, base(v6) + offset), "prefix": if v6 { 64 } else { 24 },
            "claimRef": {"name": name},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": kind, "name": pool},
        },
    })
}

fn free_of(index: &Index, kind: Kind, ns: Option<&str>, name: &str) -> PoolFree {
    let key = ObjKey::new(kind, ns, name);
    index
        .pool_free()
        .into_iter()
        .find(|p| p.usage.key == key)
        .unwrap_or_else(|| panic!("no free set for {key}"))
}

/// What every listing must be, whatever the pool: runs largest first, disjoint and, for an
/// address pool, not touching (merged; a prefix pool's entries are the CIDR blocks of merged
/// runs, so they may touch), each covered exactly by its CIDR blocks, each block aligned.
fn check_shape(runs: &[FreeRun], merged: bool) -> Result<(), TestCaseError> {
    for pair in runs.windows(2) {
        prop_assert!(pair[0].size >= pair[1].size, "largest first: {runs:?}");
    }
    let mut sorted: Vec<_> = runs.iter().map(|r| r.range).collect();
    sorted.sort();
    for pair in sorted.windows(2) {
        let gap = if merged { 1 } else { 0 };
        prop_assert!(
            pair[0].end + gap < pair[1].start,
            "disjoint, merged: {sorted:?}"
        );
    }
    for r in runs {
        let mut next = r.range.start;
        for (ip, len) in &r.cidrs {
            let host = u32::from(r.family.bits() - len);
            let mask = if host >= 128 {
                u128::MAX
            } else {
                (1u128 << host) - 1
            };
            prop_assert_eq!(ip.value, next, "blocks in order, no gap: {:?}", r);
            prop_assert_eq!(ip.value & mask, 0, "aligned: {:?}", r);
            next = (ip.value | mask).wrapping_add(1);
        }
        prop_assert_eq!(
            next,
            r.range.end.wrapping_add(1),
            "blocks end at the run's end: {:?}",
            r
        );
    }
    Ok(())
}

/// Offsets (from `base`) of every address the listed runs hold.
fn listed(runs: &[FreeRun], v6: bool) -> BTreeSet<u128> {
    runs.iter()
        .flat_map(|r| r.range.start..=r.range.end)
        .map(|v| v - base(v6))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The free ranges of an in-cluster pool are exactly its allocatable addresses less those
    /// held by address objects referencing it (held twice, outside it, or in another pool too).
    #[test]
    fn free_ranges_agree_with_a_brute_force_count(
        p in any::<bool>().prop_flat_map(pool),
        held in prop::collection::vec((0..80u128, 0..3u8), 0..40),
    ) {
        let v6 = p.v6;
        let mut objects = vec![(Kind::InClusterIPPool, p.object("p"))];
        for (i, (offset, owner)) in held.iter().enumerate() {
            let pool_name = if *owner == 2 { "elsewhere" } else { "p" };
            objects.push((
                Kind::IPAddress,
                ip_address(&format!("a{i}"), v6, *offset, "InClusterIPPool", pool_name),
            ));
        }
        let index = index_of(&objects);
        let f = free_of(&index, Kind::InClusterIPPool, Some(NS), "p");
        let held: BTreeSet<u128> =
            held.iter().filter(|(_, o)| *o != 2).map(|(off, _)| *off).collect();
        let expected: BTreeSet<u128> = p.allocatable().difference(&held).copied().collect();

        let runs = f.runs_largest_first();
        check_shape(&runs, true)?;
        prop_assert_eq!(listed(&runs, v6), expected.clone(), "pool {:?}", p);
        prop_assert_eq!(runs.iter().map(|r| r.size).sum::<u128>(), expected.len() as u128);
        prop_assert_eq!(f.usage.free(), expected.len() as u128);
        prop_assert_eq!(
            f.free.family(),
            if v6 { Family::V6 } else { Family::V4 }
        );
    }

    /// A prefix pool lists its free sub-prefixes: those wholly inside `spec.prefixes`, touched by
    /// no excluded entry, and not held (an address object holds the sub-prefix whose network
    /// address it carries; one at another address of it holds nothing).
    #[test]
    fn free_sub_prefixes_agree_with_a_brute_force_count(
        block_bits in 0..=3u32,
        prefixes in prop::collection::vec((0..=3u32, 0..16u128), 1..4),
        excluded in prop::collection::vec(entry(), 0..3),
        held in prop::collection::vec(0..80u128, 0..30),
    ) {
        let block = 1u128 << block_bits;
        // Entries at least one sub-prefix long, aligned to their own size.
        let entries: Vec<E> = prefixes
            .iter()
            .map(|&(extra, i)| {
                let bits = block_bits + extra;
                E::Cidr((i << bits) % 64, bits)
            })
            .collect();
        let pool = json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterPrefixPool",
            "metadata": {"name": "pp", "namespace": NS},
            "spec": {
                "prefixes": entries.iter().map(|e| e.text(true)).collect::<Vec<_>>(),
                "excludedPrefixes": excluded.iter().map(|e| e.text(true)).collect::<Vec<_>>(),
                "allocationPrefixLength": 128 - block_bits,
            },
        });
        let mut objects = vec![(Kind::InClusterPrefixPool, pool)];
        for (i, offset) in held.iter().enumerate() {
            objects.push((
                Kind::IPAddress,
                ip_address(&format!("a{i}"), true, *offset, "InClusterPrefixPool", "pp"),
            ));
        }
        let index = index_of(&objects);
        let f = free_of(&index, Kind::InClusterPrefixPool, Some(NS), "pp");

        let declared: BTreeSet<u128> = entries.iter().flat_map(E::offsets).collect();
        let touched: BTreeSet<u128> = excluded.iter().flat_map(E::offsets).collect();
        let held: BTreeSet<u128> = held.into_iter().collect();
        // Sub-prefixes by their first offset.
        let free: BTreeSet<u128> = declared
            .iter()
            .copied()
            .filter(|o| o % block == 0)
            .filter(|&s| (s..s + block).all(|o| declared.contains(&o) && !touched.contains(&o)))
            .filter(|s| !held.contains(s))
            .collect();

        let runs = f.runs_largest_first();
        check_shape(&runs, false)?;
        // Each entry is one CIDR block of whole sub-prefixes, its size counted in sub-prefixes.
        for r in &runs {
            prop_assert_eq!(r.cidrs.len(), 1, "{:?}", r);
            prop_assert!(r.cidrs[0].1 <= 128 - block_bits as u8, "{:?}", r);
            prop_assert_eq!(r.size, (r.range.end - r.range.start + 1) / block);
        }
        let starts: BTreeSet<u128> = listed(&runs, true).into_iter().filter(|o| o % block == 0).collect();
        prop_assert_eq!(starts.clone(), free.clone());
        prop_assert_eq!(listed(&runs, true).len() as u128, free.len() as u128 * block);
        prop_assert_eq!(f.usage.free(), free.len() as u128);
        // The cheap floor E1 checks first counts the same sub-prefixes and never more free.
        let (allocatable, floor) = index.free_at_least(&f.usage.key).expect("the pool is in the view");
        prop_assert_eq!(allocatable, f.usage.allocatable);
        prop_assert!(floor <= f.usage.free(), "floor {} > free {}", floor, f.usage.free());
    }
}

fn render(index: &Index, filter: &str, json: bool) -> String {
    let mut out = Vec::new();
    usage_free::write(&mut out, &usage_free::select(index, filter), json).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_slash_64_lists_its_free_runs_exactly() {
    let pool = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": "v6", "namespace": NS},
        "spec": {"addresses": ["2001:db8::/64"], "prefix": 64, "gateway": "2001:db8::1",
            "excludedAddresses": ["2001:db8::10-2001:db8::1f"]},
    });
    let index = index_of(&[
        (Kind::InClusterIPPool, pool),
        (
            Kind::IPAddress,
            ip_address("a", true, 2, "InClusterIPPool", "v6"),
        ),
        (
            Kind::IPAddress,
            ip_address("b", true, 3, "InClusterIPPool", "v6"),
        ),
    ]);
    // ::0 reserved, ::1 the gateway, ::2 and ::3 held, ::10-::1f excluded.
    assert_eq!(
        render(&index, "v6", false),
        "\
InClusterIPPool ns/v6 (IPv6, address space default): 18446744073709551596 of 18446744073709551598 addresses free
  18446744073709551584  2001:db8::20-2001:db8::ffff:ffff:ffff:ffff
                    12  2001:db8::4-2001:db8::f
"
    );
    let json: Value = serde_json::from_str(&render(&index, "ns/v6", true)).unwrap();
    let runs = json[0]["free_ranges"].as_array().unwrap();
    assert_eq!(runs[0]["first"], "2001:db8::20");
    assert_eq!(runs[0]["size"].as_u64(), Some(u64::MAX - 31));
    assert_eq!(
        runs[1]["cidrs"],
        json!(["2001:db8::4/126", "2001:db8::8/125"])
    );
    assert_eq!(json[0]["free"].as_u64(), Some(u64::MAX - 19));
}

#[test]
fn the_whole_ipv6_space_is_one_free_block() {
    let pool = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
        "metadata": {"name": "everything"},
        "spec": {"addresses": ["::/0"], "prefix": 0, "allocateReservedIPAddresses": true},
    });
    let index = index_of(&[(Kind::GlobalInClusterIPPool, pool)]);
    let f = free_of(&index, Kind::GlobalInClusterIPPool, None, "everything");
    let runs = f.runs_largest_first();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].cidrs, [(Ip::new(Family::V6, 0), 0)]);
    // 2^128 addresses saturate at 2^128 − 1, as `usage` counts them.
    assert_eq!(runs[0].size, u128::MAX);
    let json: Value = serde_json::from_str(&render(&index, "everything", true)).unwrap();
    assert_eq!(json[0]["free_ranges"][0]["cidrs"], json!(["::/0"]));
}

#[test]
fn metal3_spiderpool_and_prefix_pools_are_listed_with_the_rest() {
    let m3 = metal3_pool();
    let m3_address = metal3_address("192.168.0.15");
    let spider = json!({
        "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
        "metadata": {"name": "sp"},
        "spec": {"subnet": "172.18.41.0/24", "ips": ["172.18.41.40-172.18.41.49"],
            "excludeIPs": ["172.18.41.49"], "gateway": "172.18.41.1"},
        "status": {"allocatedIPCount": 2,
            "allocatedIPs": "{\"172.18.41.42\":{\"pod\":\"default/web-0\"},\"172.18.41.43\":{\"pod\":\"default/web-1\"}}"},
    });
    let prefix = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterPrefixPool",
        "metadata": {"name": "nodes-v6"},
        "spec": {"prefixes": ["fd00:10::/48"], "gateway": "fd00:10::1"},
    });
    let held = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": "n0", "namespace": NS},
        "spec": {"address": "fd00:10::", "prefix": 64, "claimRef": {"name": "n0"},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "GlobalInClusterPrefixPool", "name": "nodes-v6"}},
    });
    let index = index_of(&[
        (Kind::Metal3IPPool, m3),
        (Kind::Metal3IPAddress, m3_address),
        (Kind::SpiderIPPool, spider),
        (Kind::GlobalInClusterPrefixPool, prefix),
        (Kind::IPAddress, held),
    ]);
    let text = render(&index, "", false);
    assert!(
        text.contains(
            "IPPool.ipam.metal3.io ns/m3 (IPv4, address space default): 8 of 9 addresses free\n  \
             4  192.168.0.16-192.168.0.19\n  3  192.168.0.12-192.168.0.14\n  1  192.168.0.10\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "SpiderIPPool.spiderpool.spidernet.io sp (IPv4, address space default): 7 of 9 addresses free\n  \
             5  172.18.41.44-172.18.41.48\n  2  172.18.41.40-172.18.41.41\n"
        ),
        "{text}"
    );
    // A /48 less its first /64: one block of each length from /49 to /64.
    assert!(
        text.contains(
            "GlobalInClusterPrefixPool nodes-v6 (IPv6, address space default): 65535 of 65536 /64 sub-prefixes free\n  \
             32768  fd00:10:0:8000::/49\n  16384  fd00:10:0:4000::/50\n"
        ),
        "{text}"
    );
    assert!(text.ends_with("      1  fd00:10:0:1::/64\n"), "{text}");
    // Selecting one pool, by any of its names.
    for filter in [
        "sp",
        "SpiderIPPool sp",
        "spiderippool sp",
        "SpiderIPPool.spiderpool.spidernet.io sp",
    ] {
        assert!(
            render(&index, filter, false).starts_with("SpiderIPPool.spiderpool.spidernet.io sp "),
            "{filter}"
        );
    }
    assert_eq!(render(&index, "ns/m3", false).lines().count(), 4);
    assert_eq!(render(&index, "nothing-by-that-name", false), "");
}

fn usage(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("usage")
        .args(args)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .expect("run ipam-guard")
}

const POOLS: &str = "tests/fixtures/usage/pools.yaml";

/// The command on files: the fixture's pools in `usage`'s order (fullest first), worked out by
/// hand from tests/fixtures/usage/pools.yaml.
#[test]
fn usage_free_on_files() {
    let o = usage(&[POOLS, "--free"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "\
InClusterIPPool team-a/link6 (IPv6, address space default): 0 of 2 addresses free
  (none free)
InClusterIPPool team-a/nodes (IPv4, address space default): 1 of 9 addresses free
  1  10.20.0.14
InClusterIPPool team-a/p2p (IPv4, address space default): 1 of 2 addresses free
  1  10.20.1.0
GlobalInClusterIPPool v6-nodes (IPv6, address space default): 18446744073709551612 of 18446744073709551614 addresses free
  18446744073709551604  2001:db8:20::c-2001:db8:20:0:ffff:ffff:ffff:ffff
                     8  2001:db8:20::2-2001:db8:20::9
"
    );
    assert_eq!(
        String::from_utf8(o.stderr).unwrap(),
        "4 pools, 4 free ranges\n"
    );

    // One pool, as JSON: `usage -o json`'s fields and the ranges.
    let o = usage(&[POOLS, "-o", "json", "--free", "team-a/nodes"]);
    assert_eq!(o.status.code(), Some(0));
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 1);
    assert_eq!((&json[0]["used"], &json[0]["free"]), (&json!(8), &json!(1)));
    assert_eq!(
        json[0]["free_ranges"],
        json!([{"first": "10.20.0.14", "last": "10.20.0.14", "size": 1, "cidrs": ["10.20.0.14/32"]}])
    );

    // A name no pool has: exit 2, said on stderr.
    let o = usage(&[POOLS, "--free", "team-b/nodes"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no pool is named \"team-b/nodes\""));

    // A path right after --free is its POOL: refused before any cluster is read, with the order
    // that works.
    let o = usage(&["--free", POOLS]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!(
            "put paths before the flag (`ipam-guard usage {POOLS} --free`)"
        )),
        "{stderr}"
    );
    assert!(o.stdout.is_empty());
}
