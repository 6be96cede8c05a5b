use std::net::IpAddr;

use super::*;
use crate::address::parse_cidr;
use crate::model::cluster::ClusterProj;
use crate::model::PoolRef;

fn key(kind: Kind, ns: Option<&str>, name: &str) -> ObjKey {
    ObjKey::new(kind, ns, name)
}

fn ip(s: &str) -> Ip {
    Ip::from_std(s.parse::<IpAddr>().unwrap())
}

/// A set from CIDRs and `a-b` ranges of one family.
fn set(entries: &[&str]) -> AddrSet {
    let mut family = None;
    let runs: Vec<IpRange> = entries
        .iter()
        .map(|e| {
            let (f, r) = match e.split_once('-') {
                Some((a, b)) => (ip(a).family, IpRange::new(ip(a).value, ip(b).value)),
                None if e.contains('/') => {
                    let c = parse_cidr(e).unwrap().value;
                    (c.family(), c.network)
                }
                None => (ip(e).family, IpRange::single(ip(e).value)),
            };
            family = Some(f);
            r
        })
        .collect();
    AddrSet::from_ranges(family.unwrap_or(Family::V4), runs)
}

fn pool(kind: Kind, ns: Option<&str>, name: &str, space: &str, allocatable: AddrSet) -> PoolProj {
    PoolProj {
        key: key(kind, ns, name),
        space: Arc::from(space),
        family: (!allocatable.is_empty()).then(|| allocatable.family()),
        allocatable,
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

fn global(name: &str, space: &str, entries: &[&str]) -> PoolProj {
    pool(Kind::GlobalInClusterIPPool, None, name, space, set(entries))
}

fn address(
    kind: Kind,
    ns: &str,
    name: &str,
    at: Option<&str>,
    pool: Option<&ObjKey>,
    claim: Option<&str>,
) -> AddressProj {
    AddressProj {
        key: key(kind, Some(ns), name),
        ip: at.map(ip),
        pool: pool.cloned(),
        claim: claim.map(Arc::from),
    }
}

/// `(pool name, shared part as text)` of an overlap query.
fn overlaps(index: &Index, space: &str, entries: &[&str]) -> Vec<(String, String)> {
    index
        .overlapping_pools(space, &set(entries))
        .into_iter()
        .map(|(p, shared)| (p.key.name.to_string(), shared.to_string()))
        .collect()
}

fn names<'a>(it: impl IntoIterator<Item = &'a AddressProj>) -> Vec<String> {
    it.into_iter().map(|a| a.key.ns_name()).collect()
}

fn shared(s: &str) -> String {
    set(&s.split(", ").collect::<Vec<_>>()).to_string()
}

// === pools ===

#[test]
fn pool_upsert_get_remove_and_counts() {
    let mut index = Index::new();
    assert!(index.is_empty());
    let p = global("a", "default", &["10.0.0.0/24"]);
    assert_eq!(index.upsert_pool(p.clone()), None);
    assert_eq!(index.pool(&p.key), Some(&p));
    // Asked with a borrowed key, as the rules ask; a global pool named with a namespace too.
    let borrowed = crate::model::KeyRef::new(Kind::GlobalInClusterIPPool, Some("ns"), "a");
    assert_eq!(index.pool(&borrowed), Some(&p));
    let other = crate::model::KeyRef::new(Kind::InClusterIPPool, Some("ns"), "a");
    assert_eq!(index.pool(&other), None);
    assert_eq!(index.len(), 1);
    assert!(index.counts().contains(&(Kind::GlobalInClusterIPPool, 1)));
    assert_eq!(index.counts().len(), Kind::ALL.len());

    let mut changed = p.clone();
    changed.deleting = true;
    assert_eq!(index.upsert_pool(changed.clone()), Some(p.clone()));
    assert_eq!(index.pool(&p.key), Some(&changed));
    assert_eq!(index.len(), 1);
    index.check_consistency();

    assert_eq!(index.remove_pool(&p.key), Some(changed));
    assert_eq!(index.remove_pool(&p.key), None);
    assert!(index.is_empty());
    assert!(index.spaces.is_empty());
    assert!(overlaps(&index, "default", &["10.0.0.0/8"]).is_empty());
    index.check_consistency();
}

#[test]
fn p10_overlap_reports_shared_part_sorted_by_key() {
    let mut index = Index::new();
    index.upsert_pool(global("b", "default", &["10.0.0.0/25"]));
    index.upsert_pool(global("a", "default", &["10.0.0.128/25"]));
    index.upsert_pool(global("c", "default", &["10.0.1.0/24"]));
    index.check_consistency();
    assert_eq!(
        overlaps(&index, "default", &["10.0.0.100-10.0.0.200"]),
        vec![
            ("a".into(), shared("10.0.0.128-10.0.0.200")),
            ("b".into(), shared("10.0.0.100-10.0.0.127")),
        ]
    );
    assert!(overlaps(&index, "default", &["10.0.2.0/24"]).is_empty());
    assert!(overlaps(&index, "other", &["10.0.0.0/8"]).is_empty());
    // Families never meet.
    assert!(overlaps(&index, "default", &["::/0"]).is_empty());
    assert!(index
        .overlapping_pools("default", &AddrSet::empty(Family::V4))
        .is_empty());
}

#[test]
fn p10_overlap_across_namespaced_and_global_pools() {
    let mut index = Index::new();
    index.upsert_pool(pool(
        Kind::InClusterIPPool,
        Some("ns1"),
        "shared",
        "default",
        set(&["10.0.0.0/24"]),
    ));
    index.upsert_pool(pool(
        Kind::Metal3IPPool,
        Some("ns2"),
        "shared",
        "default",
        set(&["10.0.0.10-10.0.0.20"]),
    ));
    let found = index.overlapping_pools("default", &set(&["10.0.0.15"]));
    let kinds: Vec<Kind> = found.iter().map(|(p, _)| p.key.kind).collect();
    assert_eq!(kinds, vec![Kind::InClusterIPPool, Kind::Metal3IPPool]);
}

#[test]
fn overlapping_existing_pools_each_report_their_own_share() {
    // Stored before install: the index must hold them as they are.
    let mut index = Index::new();
    index.upsert_pool(global("big", "default", &["10.0.0.0/16"]));
    index.upsert_pool(global("mid", "default", &["10.0.1.0/24", "10.0.3.0/24"]));
    index.upsert_pool(global("small", "default", &["10.0.1.64/26"]));
    index.upsert_pool(global("twin", "default", &["10.0.1.64/26"]));
    index.check_consistency();
    assert_eq!(
        overlaps(&index, "default", &["10.0.1.0/24", "10.0.2.5"]),
        vec![
            // One merged run although the segments are cut by the smaller pools.
            ("big".into(), shared("10.0.1.0/24, 10.0.2.5")),
            ("mid".into(), shared("10.0.1.0/24")),
            ("small".into(), shared("10.0.1.64/26")),
            ("twin".into(), shared("10.0.1.64/26")),
        ]
    );
    assert_eq!(
        overlaps(&index, "default", &["10.0.1.100", "10.0.3.7"]),
        vec![
            ("big".into(), shared("10.0.1.100, 10.0.3.7")),
            ("mid".into(), shared("10.0.1.100, 10.0.3.7")),
            ("small".into(), shared("10.0.1.100")),
            ("twin".into(), shared("10.0.1.100")),
        ]
    );
}

#[test]
fn remove_restores_merged_segments() {
    let mut only_big = Index::new();
    only_big.upsert_pool(global("big", "default", &["10.0.0.0/16"]));

    let mut index = Index::new();
    index.upsert_pool(global("big", "default", &["10.0.0.0/16"]));
    index.upsert_pool(global(
        "x",
        "default",
        &["10.0.1.0/24", "10.0.5.0-10.1.0.0"],
    ));
    index.upsert_pool(global("y", "default", &["10.0.1.7"]));
    assert!(index.spaces["default"].v4.len() > 1);
    index.remove_pool(&key(Kind::GlobalInClusterIPPool, None, "y"));
    index.remove_pool(&key(Kind::GlobalInClusterIPPool, None, "x"));
    index.check_consistency();
    assert_eq!(index.spaces, only_big.spaces);
    assert_eq!(index.spaces["default"].v4.len(), 1);
}

#[test]
fn upsert_moves_pool_between_spaces_families_and_ranges() {
    let mut index = Index::new();
    let k = key(Kind::SpiderIPPool, None, "p");
    index.upsert_pool(global("other", "default", &["10.0.0.0/24"]));
    index.upsert_pool(pool(
        Kind::SpiderIPPool,
        None,
        "p",
        "default",
        set(&["10.0.0.0/24"]),
    ));
    assert_eq!(overlaps(&index, "default", &["10.0.0.1"]).len(), 2);

    // Space change: gone from default, present in dc2.
    index.upsert_pool(pool(
        Kind::SpiderIPPool,
        None,
        "p",
        "dc2",
        set(&["10.0.0.0/24"]),
    ));
    index.check_consistency();
    assert_eq!(
        overlaps(&index, "default", &["10.0.0.1"]),
        vec![("other".into(), shared("10.0.0.1"))]
    );
    assert_eq!(
        overlaps(&index, "dc2", &["10.0.0.0/8"]),
        vec![("p".into(), shared("10.0.0.0/24"))]
    );

    // Range change within the space.
    index.upsert_pool(pool(
        Kind::SpiderIPPool,
        None,
        "p",
        "dc2",
        set(&["10.9.0.0/24"]),
    ));
    assert!(overlaps(&index, "dc2", &["10.0.0.0/24"]).is_empty());
    assert_eq!(overlaps(&index, "dc2", &["10.9.0.5"]).len(), 1);

    // Family change.
    index.upsert_pool(pool(
        Kind::SpiderIPPool,
        None,
        "p",
        "dc2",
        set(&["fd00::/64"]),
    ));
    assert!(overlaps(&index, "dc2", &["10.0.0.0/8"]).is_empty());
    assert_eq!(
        overlaps(&index, "dc2", &["fd00::5"]),
        vec![("p".into(), shared("fd00::5"))]
    );

    // Emptied (nothing allocatable): kept as an object, absent from overlap answers.
    index.upsert_pool(pool(
        Kind::SpiderIPPool,
        None,
        "p",
        "dc2",
        AddrSet::empty(Family::V6),
    ));
    assert!(index.pool(&k).is_some());
    assert!(!index.spaces.contains_key("dc2"));
    index.check_consistency();
}

#[test]
fn ipv6_whole_space_and_ranges_ending_at_u128_max() {
    let mut index = Index::new();
    index.upsert_pool(global("all", "default", &["::/0"]));
    index.upsert_pool(global("top", "default", &["ffff::/16"]));
    index.upsert_pool(global(
        "last",
        "default",
        &["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    ));
    index.upsert_pool(global("low", "default", &["::-::ff"]));
    index.check_consistency();
    assert_eq!(
        overlaps(
            &index,
            "default",
            &["ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124"]
        ),
        vec![
            (
                "all".into(),
                shared("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124")
            ),
            (
                "last".into(),
                shared("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
            ),
            (
                "top".into(),
                shared("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124")
            ),
        ]
    );
    let whole = index.overlapping_pools("default", &set(&["::/0"]));
    assert_eq!(whole.len(), 4);
    assert_eq!(whole[0].1, AddrSet::full(Family::V6));
    assert_eq!(
        overlaps(&index, "default", &["::"]),
        vec![("all".into(), shared("::")), ("low".into(), shared("::"))]
    );
    for name in ["last", "top", "low"] {
        index.remove_pool(&key(Kind::GlobalInClusterIPPool, None, name));
    }
    index.check_consistency();
    assert_eq!(index.spaces["default"].v6.len(), 1);
    index.remove_pool(&key(Kind::GlobalInClusterIPPool, None, "all"));
    assert!(index.spaces.is_empty());

    // IPv4 whole space too.
    index.upsert_pool(global("v4all", "default", &["0.0.0.0/0"]));
    assert_eq!(
        overlaps(&index, "default", &["255.255.255.255"]),
        vec![("v4all".into(), shared("255.255.255.255"))]
    );
}

#[test]
fn big_pools_cost_what_small_ones_cost() {
    // Never enumerate: a /8 and an IPv6 /48 are one segment each.
    let mut index = Index::new();
    index.upsert_pool(global("eight", "default", &["10.0.0.0/8"]));
    index.upsert_pool(global("v6", "default", &["2001:db8::/48"]));
    assert_eq!(index.spaces["default"].v4.len(), 1);
    assert_eq!(index.spaces["default"].v6.len(), 1);
    let found = index.overlapping_pools("default", &set(&["::/0"]));
    assert_eq!(found[0].1, set(&["2001:db8::/48"]));
}

#[test]
fn slot_ids_are_reused_without_leaking_ownership() {
    let mut index = Index::new();
    index.upsert_pool(global("a", "default", &["10.0.0.0/24"]));
    index.remove_pool(&key(Kind::GlobalInClusterIPPool, None, "a"));
    index.upsert_pool(global("b", "default", &["10.0.1.0/24"]));
    assert_eq!(index.pools.stored.slots.len(), 1);
    assert!(overlaps(&index, "default", &["10.0.0.0/24"]).is_empty());
    assert_eq!(overlaps(&index, "default", &["10.0.1.0/24"]).len(), 1);
    index.check_consistency();
}

// === addresses ===

#[test]
fn a9_holders_by_ip_across_kinds_and_families() {
    let mut index = Index::new();
    let pk = key(Kind::InClusterIPPool, Some("ns"), "p");
    index.upsert_address(address(
        Kind::IPAddress,
        "ns",
        "a",
        Some("10.0.0.5"),
        Some(&pk),
        Some("c1"),
    ));
    index.upsert_address(address(
        Kind::Metal3IPAddress,
        "ns",
        "m",
        Some("10.0.0.5"),
        None,
        None,
    ));
    index.upsert_address(address(
        Kind::IPAddress,
        "ns",
        "b",
        Some("10.0.0.6"),
        Some(&pk),
        Some("c2"),
    ));
    index.upsert_address(address(
        Kind::IPAddress,
        "ns",
        "v6",
        Some("::a00:5"),
        None,
        None,
    ));
    index.upsert_address(address(Kind::IPAddress, "ns", "none", None, None, None));
    index.check_consistency();
    let held: Vec<(Kind, String)> = index
        .holders(ip("10.0.0.5"))
        .map(|a| (a.key.kind, a.key.ns_name()))
        .collect();
    assert_eq!(
        held,
        vec![
            (Kind::IPAddress, "ns/a".to_string()),
            (Kind::Metal3IPAddress, "ns/m".to_string())
        ]
    );
    // Same value, other family: a different address.
    assert_eq!(names(index.holders(ip("::a00:5"))), vec!["ns/v6"]);
    assert_eq!(index.holders(ip("10.0.0.7")).count(), 0);

    // Changing the address moves it.
    index.upsert_address(address(
        Kind::IPAddress,
        "ns",
        "a",
        Some("10.0.0.7"),
        Some(&pk),
        Some("c1"),
    ));
    assert_eq!(names(index.holders(ip("10.0.0.5"))), vec!["ns/m"]);
    assert_eq!(names(index.holders(ip("10.0.0.7"))), vec!["ns/a"]);
    index.remove_address(&key(Kind::Metal3IPAddress, Some("ns"), "m"));
    assert_eq!(index.holders(ip("10.0.0.5")).count(), 0);
    assert!(!index.by_ip4.contains_key(&0x0a00_0005));
    index.check_consistency();
}

#[test]
fn a9_space_of_address_follows_its_pool() {
    let mut index = Index::new();
    let pk = key(Kind::InClusterIPPool, Some("ns"), "p");
    let a = address(
        Kind::IPAddress,
        "ns",
        "a",
        Some("10.0.0.5"),
        Some(&pk),
        None,
    );
    index.upsert_address(a.clone());
    assert_eq!(index.space_of_address(&a), "default");
    index.upsert_pool(pool(
        Kind::InClusterIPPool,
        Some("ns"),
        "p",
        "dc2",
        set(&["10.0.0.0/24"]),
    ));
    assert_eq!(index.space_of_address(&a), "dc2");
    index.upsert_pool(pool(
        Kind::InClusterIPPool,
        Some("ns"),
        "p",
        "dc3",
        set(&["10.0.0.0/24"]),
    ));
    assert_eq!(index.space_of_address(&a), "dc3");
    index.remove_pool(&pk);
    assert_eq!(index.space_of_address(&a), "default");
    let no_pool = address(Kind::IPAddress, "ns", "b", Some("10.0.0.5"), None, None);
    assert_eq!(index.space_of_address(&no_pool), "default");
}

#[test]
fn a7_addresses_for_claim_match_kind_namespace_and_claim() {
    let mut index = Index::new();
    index.upsert_address(address(Kind::IPAddress, "ns", "a", None, None, Some("c")));
    index.upsert_address(address(
        Kind::IPAddress,
        "ns",
        "b",
        Some("10.0.0.1"),
        None,
        Some("c"),
    ));
    index.upsert_address(address(
        Kind::IPAddress,
        "other",
        "a",
        None,
        None,
        Some("c"),
    ));
    index.upsert_address(address(
        Kind::Metal3IPAddress,
        "ns",
        "m",
        None,
        None,
        Some("c"),
    ));
    index.upsert_address(address(Kind::IPAddress, "ns", "d", None, None, Some("d")));
    index.check_consistency();
    assert_eq!(
        names(index.addresses_for_claim(Kind::IPAddress, "ns", "c")),
        vec!["ns/a", "ns/b"]
    );
    assert_eq!(
        names(index.addresses_for_claim(Kind::Metal3IPAddress, "ns", "c")),
        vec!["ns/m"]
    );
    assert!(index
        .addresses_for_claim(Kind::IPAddress, "nope", "c")
        .is_empty());
    // Claim changes and removals unlink.
    index.upsert_address(address(Kind::IPAddress, "ns", "a", None, None, Some("d")));
    index.remove_address(&key(Kind::IPAddress, Some("ns"), "b"));
    assert!(index
        .addresses_for_claim(Kind::IPAddress, "ns", "c")
        .is_empty());
    assert_eq!(
        names(index.addresses_for_claim(Kind::IPAddress, "ns", "d")),
        vec!["ns/a", "ns/d"]
    );
    index.check_consistency();
}

#[test]
fn p9_addresses_for_pool_sorted_and_kept_on_removal_in_the_middle() {
    let mut index = Index::new();
    let p = key(Kind::InClusterIPPool, Some("ns"), "p");
    let q = key(Kind::GlobalInClusterIPPool, None, "q");
    for i in 0..10 {
        let at = format!("10.0.0.{i}");
        index.upsert_address(address(
            Kind::IPAddress,
            "ns",
            &format!("a{i}"),
            Some(&at),
            Some(&p),
            None,
        ));
    }
    index.upsert_address(address(Kind::IPAddress, "other", "g", None, Some(&q), None));
    index.check_consistency();
    assert_eq!(index.addresses_for_pool(&p).len(), 10);
    assert_eq!(index.address_count_for_pool(&p), 10);
    assert_eq!(names(index.addresses_for_pool(&q)), vec!["other/g"]);
    // Same name in another namespace is another pool.
    assert!(index
        .addresses_for_pool(&key(Kind::InClusterIPPool, Some("x"), "p"))
        .is_empty());

    index.remove_address(&key(Kind::IPAddress, Some("ns"), "a3"));
    index.remove_address(&key(Kind::IPAddress, Some("ns"), "a0"));
    // Re-pointing one address moves it to the other pool.
    index.upsert_address(address(
        Kind::IPAddress,
        "ns",
        "a5",
        Some("10.0.0.5"),
        Some(&q),
        None,
    ));
    index.check_consistency();
    assert_eq!(
        names(index.addresses_for_pool(&p)),
        vec!["ns/a1", "ns/a2", "ns/a4", "ns/a6", "ns/a7", "ns/a8", "ns/a9"]
    );
    assert_eq!(
        names(index.addresses_for_pool(&q)),
        vec!["ns/a5", "other/g"]
    );
    for a in ["a1", "a2", "a4", "a6", "a7", "a8", "a9"] {
        index.remove_address(&key(Kind::IPAddress, Some("ns"), a));
    }
    assert!(!index.by_pool.contains_key(&p));
    index.check_consistency();
}

#[test]
fn unchanged_address_upsert_is_a_no_op() {
    let mut index = Index::new();
    let a = address(
        Kind::IPAddress,
        "ns",
        "a",
        Some("10.0.0.1"),
        None,
        Some("c"),
    );
    assert_eq!(index.upsert_address(a.clone()), None);
    assert_eq!(index.upsert_address(a.clone()), Some(a.clone()));
    assert_eq!(index.address(&a.key), Some(&a));
    assert_eq!(index.len(), 1);
    index.check_consistency();
}

// === claims ===

#[test]
fn claims_by_key() {
    let mut index = Index::new();
    let c = ClaimProj {
        key: key(Kind::IPAddressClaim, Some("ns"), "c"),
        pool_ref: PoolRef {
            api_group: "ipam.cluster.x-k8s.io".into(),
            kind: "InClusterIPPool".into(),
            name: "p".into(),
        },
        created: None,
        bound: false,
        endpoint_of: None,
        cluster: None,
    };
    assert_eq!(index.upsert_claim(c.clone()), None);
    assert_eq!(index.claim(&c.key), Some(&c));
    let borrowed = crate::model::KeyRef::new(Kind::IPAddressClaim, Some("ns"), "c");
    assert_eq!(index.claim(&borrowed), Some(&c));
    let other_ns = crate::model::KeyRef::new(Kind::IPAddressClaim, Some("ns2"), "c");
    assert_eq!(index.claim(&other_ns), None);
    let mut c2 = c.clone();
    c2.pool_ref.name = "q".into();
    assert_eq!(index.upsert_claim(c2.clone()), Some(c.clone()));
    assert_eq!(index.claim(&c.key), Some(&c2));
    assert_eq!(index.claims().count(), 1);
    assert!(index.counts().contains(&(Kind::IPAddressClaim, 1)));
    assert_eq!(index.remove_claim(&c.key), Some(c2));
    assert_eq!(index.claim(&c.key), None);
    assert!(index.is_empty());
    index.check_consistency();
}

// === relists ===

#[test]
fn relist_drops_vanished_keys_of_that_kind_only() {
    let mut index = Index::new();
    index.upsert_pool(global("a", "default", &["10.0.0.0/24"]));
    index.upsert_pool(global("b", "default", &["10.0.1.0/24"]));
    index.upsert_pool(pool(
        Kind::InClusterIPPool,
        Some("ns"),
        "a",
        "default",
        set(&["10.0.2.0/24"]),
    ));
    index.upsert_address(address(
        Kind::IPAddress,
        "ns",
        "x",
        Some("10.0.0.1"),
        None,
        None,
    ));

    index.replace_kind(
        Kind::GlobalInClusterIPPool,
        [
            Object::Pool(Box::new(global("b", "default", &["10.0.5.0/24"]))),
            Object::Pool(Box::new(global("c", "default", &["10.0.6.0/24"]))),
        ],
    );
    index.check_consistency();
    let mut pools: Vec<String> = index.pools().map(|p| p.key.to_string()).collect();
    pools.sort();
    assert_eq!(
        pools,
        vec![
            "GlobalInClusterIPPool b",
            "GlobalInClusterIPPool c",
            "InClusterIPPool ns/a"
        ]
    );
    assert!(overlaps(&index, "default", &["10.0.1.0/24"]).is_empty());
    assert_eq!(index.addresses().count(), 1);

    index.retain_kind(Kind::InClusterIPPool, |_| false);
    index.clear_kind(Kind::IPAddress);
    assert_eq!(index.len(), 2);
    assert!(index.counts().contains(&(Kind::GlobalInClusterIPPool, 2)));
    assert!(index.counts().contains(&(Kind::IPAddress, 0)));
    assert!(index.remove(&key(Kind::GlobalInClusterIPPool, None, "b")));
    assert!(!index.remove(&key(Kind::GlobalInClusterIPPool, None, "b")));
    index.check_consistency();
}

#[test]
fn index_is_shareable() {
    fn assert_bounds<T: Clone + Send + Sync + Default + std::fmt::Debug + 'static>() {}
    assert_bounds::<Index>();
}

// === scale (structure, not timing) ===

/// 20k adjacent /30 pools under one /8 and 100k addresses in one pool: segment counts stay linear
/// and removing every address from one big pool takes O(1) each (a positional `Vec` scan would
/// make this test visibly slow long before any timing assertion could).
#[test]
fn scale_structure_is_linear() {
    let mut index = Index::new();
    let base = u128::from(u32::from(std::net::Ipv4Addr::new(10, 0, 0, 0)));
    index.upsert_pool(pool(
        Kind::GlobalInClusterIPPool,
        None,
        "eight",
        "default",
        set(&["10.0.0.0/8"]),
    ));
    let n = 20_000u128;
    for i in 0..n {
        let s = base + i * 4;
        index.upsert_pool(pool(
            Kind::InClusterIPPool,
            Some("ns"),
            &format!("p{i}"),
            "default",
            AddrSet::from_range(Family::V4, IpRange::new(s, s + 3)),
        ));
    }
    // n small segments (each owned by the /8 and one pool) plus the /8's tail.
    assert_eq!(index.spaces["default"].v4.len(), n as usize + 1);
    let one = index.overlapping_pools("default", &set(&["10.0.0.5"]));
    assert_eq!(one.len(), 2);

    let pk = key(Kind::InClusterIPPool, Some("ns"), "p0");
    for i in 0..100_000u32 {
        index.upsert_address(AddressProj {
            key: key(Kind::IPAddress, Some("ns"), &format!("a{i}")),
            ip: Some(Ip::new(Family::V4, base + u128::from(i))),
            pool: Some(pk.clone()),
            claim: None,
        });
    }
    assert_eq!(index.address_count_for_pool(&pk), 100_000);
    for i in 0..100_000u32 {
        index.remove_address(&key(Kind::IPAddress, Some("ns"), &format!("a{i}")));
    }
    assert!(index.by_pool.is_empty());
    for i in 0..n {
        index.remove_pool(&key(Kind::InClusterIPPool, Some("ns"), &format!("p{i}")));
    }
    assert_eq!(index.spaces["default"].v4.len(), 1);
}

// === memory ===

#[test]
fn repeated_strings_are_held_once() {
    let mut index = Index::new();
    let pk = key(Kind::InClusterIPPool, Some("ns"), "p");
    index.upsert_pool(pool(
        Kind::InClusterIPPool,
        Some("ns"),
        "p",
        "dc2",
        set(&["10.0.0.0/24"]),
    ));
    for name in ["a", "b"] {
        // Fresh Arcs everywhere, as the readers build them.
        index.upsert_address(address(
            Kind::IPAddress,
            "ns",
            name,
            Some("10.0.0.1"),
            Some(&pk),
            Some(name),
        ));
    }
    let a = index
        .address(&key(Kind::IPAddress, Some("ns"), "a"))
        .unwrap();
    let b = index
        .address(&key(Kind::IPAddress, Some("ns"), "b"))
        .unwrap();
    let p = index.pool(&pk).unwrap();
    let ns = |k: &ObjKey| k.namespace.clone().unwrap();
    assert!(Arc::ptr_eq(&ns(&a.key), &ns(&b.key)));
    assert!(Arc::ptr_eq(&ns(&a.key), &ns(&p.key)));
    assert!(Arc::ptr_eq(&a.claim.clone().unwrap(), &a.key.name));
    let (pa, pb) = (a.pool.clone().unwrap(), b.pool.clone().unwrap());
    assert!(Arc::ptr_eq(&pa.name, &pb.name) && Arc::ptr_eq(&pa.name, &p.key.name));
    // Values are untouched.
    assert_eq!(
        a,
        &address(
            Kind::IPAddress,
            "ns",
            "a",
            Some("10.0.0.1"),
            Some(&pk),
            Some("a")
        )
    );
}

#[test]
fn interned_strings_of_vanished_namespaces_are_swept() {
    let mut index = Index::new();
    for i in 0..1000 {
        let ns = format!("ns{i}");
        index.upsert_address(address(Kind::IPAddress, &ns, "a", None, None, None));
        index.remove_address(&key(Kind::IPAddress, Some(&ns), "a"));
    }
    assert!(
        index.strings.set.len() <= 128,
        "{}",
        index.strings.set.len()
    );
}

/// The brief's full scale: 100k pools and 1M addresses. No timing is asserted (benchmarks do
/// that); it is here to be run by hand in release: `cargo test --release --lib index -- --ignored`.
#[test]
#[ignore = "full scale; run in release by hand"]
fn scale_100k_pools_1m_addresses() {
    let mut index = Index::new();
    let base = u128::from(u32::from(std::net::Ipv4Addr::new(10, 0, 0, 0)));
    // Nested and overlapping too, as pools stored before install may be.
    index.upsert_pool(global("eight", "default", &["10.0.0.0/8"]));
    let n = 100_000u128;
    for i in 0..n {
        let s = base + i * 64;
        index.upsert_pool(pool(
            Kind::InClusterIPPool,
            Some(&format!("ns{}", i % 100)),
            &format!("p{i}"),
            "default",
            AddrSet::from_range(Family::V4, IpRange::new(s + 1, s + 62)),
        ));
    }
    assert_eq!(index.spaces["default"].v4.len(), 2 * n as usize + 1);
    for i in 0..1_000_000u128 {
        let p = i % n;
        let ns = format!("ns{}", p % 100);
        let pk = key(Kind::InClusterIPPool, Some(&ns), &format!("p{p}"));
        let name = format!("a{i}");
        index.upsert_address(AddressProj {
            key: key(Kind::IPAddress, Some(&ns), &name),
            ip: Some(Ip::new(Family::V4, base + p * 64 + 1 + i / n)),
            pool: Some(pk),
            claim: Some(Arc::from(name.as_str())),
        });
    }
    assert_eq!(index.len(), 1_100_001);
    let pk = key(Kind::InClusterIPPool, Some("ns7"), "p7");
    assert_eq!(index.addresses_for_pool(&pk).len(), 10);
    assert_eq!(
        index
            .holders(Ip::new(Family::V4, base + 7 * 64 + 1))
            .count(),
        1
    );
    let all = index.overlapping_pools("default", &set(&["10.0.0.0/8"]));
    assert_eq!(all.len(), n as usize + 1);
    index.clear_kind(Kind::IPAddress);
    index.clear_kind(Kind::InClusterIPPool);
    assert_eq!(index.spaces["default"].v4.len(), 1);
}

// === clusters ===

mod clusters;
