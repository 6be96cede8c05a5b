//! Pool usage against a brute-force count: every address of a small pool is
//! enumerated and judged by the allocatable-set definition written out here a second time (declared −
//! excluded − gateway − reserved), and the addresses in use are counted one by one. Large pools
//! (a /64, `::/0`) are checked against sizes worked out by hand. The pool metrics are checked
//! against the same brute-force count.

use std::collections::BTreeSet;
use std::sync::Arc;

use ipam_guard::cluster::Ledger;
use ipam_guard::index::usage::PoolUsage;
use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::model::ObjKey;
use ipam_guard::server::pool_metrics;
use proptest::prelude::*;
use serde_json::{json, Value};

mod pool_support;
use pool_support::*;

fn ip_address(name: &str, v6: bool, offset: u128, pool: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "address": text(v6, base(v6) + offset), "prefix": if v6 { 64 } else { 24 },
            "claimRef": {"name": name},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": pool},
        },
    })
}

/// The metrics text of a registry holding only the pool usage collector over `index`.
fn scrape(index: Index) -> String {
    let mut registry = prometheus_client::registry::Registry::default();
    pool_metrics::register(
        &mut registry,
        Arc::new(Ledger::new(index)),
        pool_metrics::POOL_SERIES_LIMIT,
    );
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    text
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

fn usage_of(index: &Index, kind: Kind, ns: Option<&str>, name: &str) -> PoolUsage {
    let key = ObjKey::new(kind, ns, name);
    index
        .pool_usage()
        .into_iter()
        .find(|u| u.key == key)
        .unwrap_or_else(|| panic!("no usage for {key}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Usage agrees with counting address by address, for IPv4 and IPv6 pools with excluded
    /// ranges, gateways, reserved addresses and /31, /32, /127, /128 prefixes; addresses held
    /// twice, outside the pool, or in another pool.
    #[test]
    fn usage_agrees_with_a_brute_force_count(
        p in any::<bool>().prop_flat_map(pool),
        held in prop::collection::vec((0..80u128, 0..3u8), 0..40),
    ) {
        let v6 = p.v6;
        let mut objects = vec![(Kind::InClusterIPPool, p.object("p"))];
        for (i, (offset, owner)) in held.iter().enumerate() {
            // owner 2 references a pool that does not exist: never counted for `p`.
            let pool_name = if *owner == 2 { "elsewhere" } else { "p" };
            objects.push((Kind::IPAddress, ip_address(&format!("a{i}"), v6, *offset, pool_name)));
        }
        let index = index_of(&objects);
        let u = usage_of(&index, Kind::InClusterIPPool, Some(NS), "p");

        let allocatable = p.allocatable();
        let referenced: BTreeSet<u128> = held
            .iter()
            .filter(|(_, owner)| *owner != 2)
            .map(|(o, _)| *o)
            .collect();
        let used = referenced.iter().filter(|o| allocatable.contains(o)).count() as u128;
        let outside = referenced.len() as u128 - used;

        prop_assert_eq!(u.allocatable, allocatable.len() as u128, "pool {:?}", p);
        prop_assert_eq!(u.used, used);
        prop_assert_eq!(u.outside, outside);
        prop_assert_eq!(u.free(), allocatable.len() as u128 - used);
        let share = if allocatable.is_empty() { 1.0 } else { used as f64 / allocatable.len() as f64 };
        prop_assert!((u.share_used() - share).abs() < 1e-12);
        // The cheap floor E1 checks first: the same allocatable count, never more free than the
        // exact count, and exact when every address object holds a distinct inside address.
        let (floor_allocatable, floor) = index.free_at_least(&u.key).expect("the pool is in the view");
        prop_assert_eq!(floor_allocatable, u.allocatable);
        prop_assert!(floor <= u.free(), "floor {} > free {}", floor, u.free());
        let naming_p = held.iter().filter(|(_, owner)| *owner != 2).count() as u128;
        if naming_p == used {
            prop_assert_eq!(floor, u.free());
        }

        // The metrics `serve` exports say the same.
        let text = scrape(index);
        let series = |state: &str| {
            sample(&text, &format!(
                r#"ipam_guard_pool_addresses{{kind="InClusterIPPool",namespace="{NS}",pool="p",state="{state}"}}"#
            ))
        };
        prop_assert_eq!(series("allocatable"), Some(allocatable.len() as f64));
        prop_assert_eq!(series("used"), Some(used as f64));
    }
}

#[test]
fn ipv6_slash_64_counts_two_to_the_64_without_overflow() {
    let pool = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": "v6", "namespace": NS},
        "spec": {"addresses": ["2001:db8::/64"], "prefix": 64, "gateway": "2001:db8::1",
            "excludedAddresses": ["2001:db8::10-2001:db8::1f"]},
    });
    let index = index_of(&[
        (Kind::InClusterIPPool, pool),
        (Kind::IPAddress, ip_address("a", true, 2, "v6")),
        (Kind::IPAddress, ip_address("b", true, 3, "v6")),
        // Excluded, so outside what the pool hands out.
        (Kind::IPAddress, ip_address("c", true, 0x11, "v6")),
    ]);
    let u = usage_of(&index, Kind::InClusterIPPool, Some(NS), "v6");
    // 2^64, less the subnet-router anycast address, the gateway and 16 excluded.
    let allocatable = (1u128 << 64) - 1 - 1 - 16;
    assert_eq!(u.allocatable, allocatable);
    assert_eq!(u.used, 2);
    assert_eq!(u.outside, 1);
    assert_eq!(u.free(), allocatable - 2);
    assert!(
        u.share_used() > 0.0 && u.share_used() < 1e-18,
        "{}",
        u.share_used()
    );
}

#[test]
fn the_whole_ipv6_space_saturates() {
    let pool = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
        "metadata": {"name": "everything"},
        "spec": {"addresses": ["::/0"], "prefix": 0, "allocateReservedIPAddresses": true},
    });
    let index = index_of(&[(Kind::GlobalInClusterIPPool, pool)]);
    let u = usage_of(&index, Kind::GlobalInClusterIPPool, None, "everything");
    assert_eq!(u.allocatable, u128::MAX, "2^128 saturates");
    assert_eq!(u.used, 0);
    assert_eq!(u.share_used(), 0.0);
}

#[test]
fn slash_31_and_slash_127_hand_out_both_addresses() {
    for (v6, prefix, entry) in [(false, 31, "10.1.0.4/31"), (true, 127, "2001:db8::4/127")] {
        let pool = json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": {"name": "p2p", "namespace": NS},
            "spec": {"addresses": [entry], "prefix": prefix},
        });
        let index = index_of(&[
            (Kind::InClusterIPPool, pool),
            (Kind::IPAddress, ip_address("a", v6, 4, "p2p")),
        ]);
        let u = usage_of(&index, Kind::InClusterIPPool, Some(NS), "p2p");
        assert_eq!((u.allocatable, u.used, u.free()), (2, 1, 1), "{entry}");
        assert_eq!(u.share_used(), 0.5);
    }
}

#[test]
fn metal3_pool_counts_its_own_and_capi_addresses_and_skips_the_gateway() {
    let pool = metal3_pool();
    let m3_address = metal3_address("192.168.0.10");
    let capi_address = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": "capi-0", "namespace": NS},
        "spec": {"address": "192.168.0.12", "prefix": 24, "claimRef": {"name": "c1"},
            "poolRef": {"apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "m3"}},
    });
    let index = index_of(&[
        (Kind::Metal3IPPool, pool),
        (Kind::Metal3IPAddress, m3_address),
        (Kind::IPAddress, capi_address),
    ]);
    let u = usage_of(&index, Kind::Metal3IPPool, Some(NS), "m3");
    // 10 declared, less the gateway.
    assert_eq!((u.allocatable, u.used, u.free()), (9, 2, 7));
}

#[test]
fn spiderpool_counts_what_its_status_records() {
    let pool = json!({
        "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
        "metadata": {"name": "sp"},
        "spec": {"subnet": "172.18.41.0/24", "ips": ["172.18.41.40-172.18.41.49"],
            "excludeIPs": ["172.18.41.49"], "gateway": "172.18.41.1"},
        "status": {"allocatedIPCount": 3,
            "allocatedIPs": "{\"172.18.41.40\":{\"pod\":\"default/web-0\"},\"172.18.41.41\":{\"pod\":\"default/web-1\"},\"172.18.41.49\":{\"pod\":\"default/old\"}}"},
    });
    let index = index_of(&[(Kind::SpiderIPPool, pool)]);
    let u = usage_of(&index, Kind::SpiderIPPool, None, "sp");
    // .49 is excluded: recorded, but not part of what the pool hands out.
    assert_eq!((u.allocatable, u.used, u.free()), (9, 2, 7));
    // The floor counts every recorded address as in use, the excluded one too.
    assert_eq!(index.free_at_least(&u.key), Some((9, 6)));
}

#[test]
fn pools_come_fullest_first() {
    let pool = |name: &str, range: &str| {
        json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"addresses": [range], "prefix": 24},
        })
    };
    let index = index_of(&[
        (Kind::InClusterIPPool, pool("half", "10.1.0.10-10.1.0.11")),
        (Kind::InClusterIPPool, pool("empty", "10.1.0.20-10.1.0.29")),
        (Kind::InClusterIPPool, pool("full", "10.1.0.30")),
        (Kind::IPAddress, ip_address("a", false, 10, "half")),
        (Kind::IPAddress, ip_address("b", false, 30, "full")),
    ]);
    let names: Vec<String> = index
        .pool_usage()
        .iter()
        .map(|u| u.key.name.to_string())
        .collect();
    assert_eq!(names, ["full", "half", "empty"]);
}
