//! `index::Index` against a brute-force model: a list of pools, addresses and claims that answers
//! every query by scanning. Universes are tiny (a few keys, 32 values per family including the
//! top of the range) so keys collide, pools overlap and runs end at the family's last address.

use std::sync::Arc;

use ipam_guard::address::{AddrSet, Family, Ip, IpRange};
use ipam_guard::index::{Index, Object};
use ipam_guard::kinds::Kind;
use ipam_guard::model::{AddressProj, ClaimProj, ObjKey, PoolProj, PoolRef};
use proptest::prelude::*;

const POOL_KINDS: [Kind; 3] = [
    Kind::GlobalInClusterIPPool,
    Kind::InClusterIPPool,
    Kind::SpiderIPPool,
];
const ADDRESS_KINDS: [Kind; 2] = [Kind::IPAddress, Kind::Metal3IPAddress];
const NAMESPACES: [&str; 2] = ["a", "b"];
const SPACES: [&str; 3] = ["default", "s1", "s2"];
const CLAIMS: [&str; 3] = ["c0", "c1", "c2"];
const FAMILIES: [Family; 2] = [Family::V4, Family::V6];

/// 0..16 stay small, 16..32 are the family's last 16 values, so runs reach `max()`.
fn value(family: Family, r: u8) -> u128 {
    let r = u128::from(r % 32);
    if r < 16 {
        r
    } else {
        family.max() - (31 - r)
    }
}

fn pool_key() -> impl Strategy<Value = ObjKey> {
    (0..POOL_KINDS.len(), 0..NAMESPACES.len(), 0..3u8)
        .prop_map(|(k, ns, n)| ObjKey::new(POOL_KINDS[k], Some(NAMESPACES[ns]), &format!("p{n}")))
}

fn address_key() -> impl Strategy<Value = ObjKey> {
    (0..ADDRESS_KINDS.len(), 0..NAMESPACES.len(), 0..5u8).prop_map(|(k, ns, n)| {
        ObjKey::new(ADDRESS_KINDS[k], Some(NAMESPACES[ns]), &format!("x{n}"))
    })
}

fn claim_key() -> impl Strategy<Value = ObjKey> {
    (0..NAMESPACES.len(), 0..CLAIMS.len())
        .prop_map(|(ns, n)| ObjKey::new(Kind::IPAddressClaim, Some(NAMESPACES[ns]), CLAIMS[n]))
}

fn family() -> impl Strategy<Value = Family> {
    (0..2usize).prop_map(|f| FAMILIES[f])
}

fn addr_set() -> impl Strategy<Value = AddrSet> {
    (family(), prop::collection::vec((0..32u8, 0..32u8), 0..4)).prop_map(|(f, runs)| {
        AddrSet::from_ranges(
            f,
            runs.into_iter().map(|(a, b)| {
                let (a, b) = (value(f, a), value(f, b));
                IpRange::new(a.min(b), a.max(b))
            }),
        )
    })
}

fn ip() -> impl Strategy<Value = Ip> {
    (family(), 0..32u8).prop_map(|(f, r)| Ip::new(f, value(f, r)))
}

fn space() -> impl Strategy<Value = Arc<str>> {
    (0..SPACES.len()).prop_map(|s| Arc::from(SPACES[s]))
}

fn pool_with(key: impl Strategy<Value = ObjKey>) -> impl Strategy<Value = PoolProj> {
    (key, space(), addr_set(), any::<bool>()).prop_map(|(key, space, allocatable, deleting)| {
        PoolProj {
            key,
            space,
            family: (!allocatable.is_empty()).then(|| allocatable.family()),
            allocatable,
            other_family: None,
            gateway: None,
            prefix: None,
            deleting,
            skip_delete_check: false,
            recorded: AddrSet::empty(Family::V4),
            declared_subnet: None,
            reuse_grace: None,
        }
    })
}

fn address_with(key: impl Strategy<Value = ObjKey>) -> impl Strategy<Value = AddressProj> {
    (
        key,
        prop::option::weighted(0.9, ip()),
        prop::option::weighted(0.8, pool_key()),
        prop::option::weighted(0.8, 0..CLAIMS.len()),
    )
        .prop_map(|(key, ip, pool, claim)| AddressProj {
            key,
            ip,
            pool,
            claim: claim.map(|c| Arc::from(CLAIMS[c])),
        })
}

fn claim() -> impl Strategy<Value = ClaimProj> {
    (claim_key(), 0..3u8).prop_map(|(key, n)| ClaimProj {
        key,
        pool_ref: PoolRef {
            api_group: "ipam.cluster.x-k8s.io".into(),
            kind: "InClusterIPPool".into(),
            name: format!("p{n}"),
        },
        created: None,
        bound: false,
        endpoint_of: None,
        cluster: None,
    })
}

#[derive(Debug, Clone)]
enum Op {
    UpsertPool(PoolProj),
    RemovePool(ObjKey),
    UpsertAddress(AddressProj),
    RemoveAddress(ObjKey),
    UpsertClaim(ClaimProj),
    RemoveClaim(ObjKey),
    /// A relist of one kind: these objects (keys of that kind), everything else of it vanished.
    Relist(Kind, Vec<Object>),
    ClearKind(Kind),
    /// Overlap query; checked against the model together with every other query after each op.
    Overlap(Arc<str>, AddrSet),
}

fn relist() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..POOL_KINDS.len()).prop_flat_map(|k| {
            let kind = POOL_KINDS[k];
            let key = (0..NAMESPACES.len(), 0..3u8)
                .prop_map(move |(ns, n)| ObjKey::new(kind, Some(NAMESPACES[ns]), &format!("p{n}")));
            prop::collection::vec(pool_with(key), 0..4).prop_map(move |ps| {
                Op::Relist(
                    kind,
                    ps.into_iter().map(|p| Object::Pool(Box::new(p))).collect(),
                )
            })
        }),
        (0..ADDRESS_KINDS.len()).prop_flat_map(|k| {
            let kind = ADDRESS_KINDS[k];
            let key = (0..NAMESPACES.len(), 0..5u8)
                .prop_map(move |(ns, n)| ObjKey::new(kind, Some(NAMESPACES[ns]), &format!("x{n}")));
            prop::collection::vec(address_with(key), 0..6)
                .prop_map(move |xs| Op::Relist(kind, xs.into_iter().map(Object::Address).collect()))
        }),
        prop::collection::vec(claim(), 0..4).prop_map(|cs| Op::Relist(
            Kind::IPAddressClaim,
            cs.into_iter().map(Object::Claim).collect()
        )),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => pool_with(pool_key()).prop_map(Op::UpsertPool),
        3 => pool_key().prop_map(Op::RemovePool),
        6 => address_with(address_key()).prop_map(Op::UpsertAddress),
        3 => address_key().prop_map(Op::RemoveAddress),
        2 => claim().prop_map(Op::UpsertClaim),
        1 => claim_key().prop_map(Op::RemoveClaim),
        1 => relist(),
        1 => prop_oneof![
            (0..POOL_KINDS.len()).prop_map(|k| Op::ClearKind(POOL_KINDS[k])),
            (0..ADDRESS_KINDS.len()).prop_map(|k| Op::ClearKind(ADDRESS_KINDS[k])),
        ],
        4 => (space(), addr_set()).prop_map(|(s, set)| Op::Overlap(s, set)),
    ]
}

// === the model ===

#[derive(Debug, Default)]
struct Model {
    pools: Vec<PoolProj>,
    addresses: Vec<AddressProj>,
    claims: Vec<ClaimProj>,
}

fn upsert<T>(list: &mut Vec<T>, item: T, key: impl Fn(&T) -> &ObjKey) {
    match list.iter().position(|x| key(x) == key(&item)) {
        Some(i) => list[i] = item,
        None => list.push(item),
    }
}

impl Model {
    fn apply(&mut self, op: &Op) {
        match op.clone() {
            Op::UpsertPool(p) => upsert(&mut self.pools, p, |p| &p.key),
            Op::RemovePool(k) => self.pools.retain(|p| p.key != k),
            Op::UpsertAddress(a) => upsert(&mut self.addresses, a, |a| &a.key),
            Op::RemoveAddress(k) => self.addresses.retain(|a| a.key != k),
            Op::UpsertClaim(c) => upsert(&mut self.claims, c, |c| &c.key),
            Op::RemoveClaim(k) => self.claims.retain(|c| c.key != k),
            Op::Relist(kind, objects) => {
                let seen: Vec<ObjKey> = objects.iter().map(|o| o.key().clone()).collect();
                for o in objects {
                    match o {
                        Object::Pool(p) => upsert(&mut self.pools, *p, |p| &p.key),
                        Object::Address(a) => upsert(&mut self.addresses, a, |a| &a.key),
                        Object::Claim(c) => upsert(&mut self.claims, c, |c| &c.key),
                        Object::Cluster(_) => unreachable!("no Cluster is generated"),
                        Object::Holder(_) => unreachable!("no holder is generated"),
                    }
                }
                let keep = |k: &ObjKey| k.kind != kind || seen.contains(k);
                self.pools.retain(|p| keep(&p.key));
                self.addresses.retain(|a| keep(&a.key));
                self.claims.retain(|c| keep(&c.key));
            }
            Op::ClearKind(kind) => {
                self.pools.retain(|p| p.key.kind != kind);
                self.addresses.retain(|a| a.key.kind != kind);
                self.claims.retain(|c| c.key.kind != kind);
            }
            Op::Overlap(..) => {}
        }
    }

    fn space_of(&self, a: &AddressProj) -> &str {
        a.pool
            .as_ref()
            .and_then(|k| self.pools.iter().find(|p| &p.key == k))
            .map_or("default", |p| &*p.space)
    }

    fn overlapping(&self, space: &str, set: &AddrSet) -> Vec<(ObjKey, AddrSet)> {
        let mut out: Vec<(ObjKey, AddrSet)> = self
            .pools
            .iter()
            .filter(|p| &*p.space == space && p.allocatable.family() == set.family())
            .map(|p| (p.key.clone(), p.allocatable.intersection(set)))
            .filter(|(_, shared)| !shared.is_empty())
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

fn sorted_keys<'a>(it: impl IntoIterator<Item = &'a AddressProj>) -> Vec<ObjKey> {
    let mut v: Vec<ObjKey> = it.into_iter().map(|a| a.key.clone()).collect();
    v.sort();
    v
}

/// Every query the index answers, over the whole universe, against the model.
fn check(index: &Index, model: &Model, op: &Op) {
    index.check_consistency();

    if let Op::Overlap(space, set) = op {
        let got: Vec<(ObjKey, AddrSet)> = index
            .overlapping_pools(space, set)
            .into_iter()
            .map(|(p, shared)| (p.key.clone(), shared))
            .collect();
        assert_eq!(got, model.overlapping(space, set), "overlap {space} {set}");
    }
    // Each pool's own set, and the whole family, in every space.
    for space in SPACES {
        for f in FAMILIES {
            let full = AddrSet::full(f);
            let got: Vec<(ObjKey, AddrSet)> = index
                .overlapping_pools(space, &full)
                .into_iter()
                .map(|(p, shared)| (p.key.clone(), shared))
                .collect();
            assert_eq!(got, model.overlapping(space, &full));
        }
    }
    for p in &model.pools {
        assert_eq!(index.pool(&p.key), Some(p));
        let got: Vec<ObjKey> = index
            .overlapping_pools(&p.space, &p.allocatable)
            .into_iter()
            .map(|(q, _)| q.key.clone())
            .collect();
        let want: Vec<ObjKey> = model
            .overlapping(&p.space, &p.allocatable)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(got, want, "pools meeting {}", p.key);
    }
    assert_eq!(index.pools().count(), model.pools.len());

    for a in &model.addresses {
        assert_eq!(index.address(&a.key), Some(a));
        assert_eq!(index.space_of_address(a), model.space_of(a), "{}", a.key);
    }
    assert_eq!(index.addresses().count(), model.addresses.len());

    for f in FAMILIES {
        for r in 0..32 {
            let at = Ip::new(f, value(f, r));
            let got: Vec<ObjKey> = index.holders(at).map(|a| a.key.clone()).collect();
            let want = sorted_keys(model.addresses.iter().filter(|a| a.ip == Some(at)));
            assert_eq!(got, want, "holders of {at}");
        }
    }
    for kind in ADDRESS_KINDS {
        for ns in NAMESPACES {
            for c in CLAIMS {
                let got: Vec<ObjKey> = index
                    .addresses_for_claim(kind, ns, c)
                    .into_iter()
                    .map(|a| a.key.clone())
                    .collect();
                let want = sorted_keys(model.addresses.iter().filter(|a| {
                    a.key.kind == kind
                        && a.key.namespace.as_deref() == Some(ns)
                        && a.claim.as_deref() == Some(c)
                }));
                assert_eq!(got, want, "claim {kind} {ns}/{c}");
            }
        }
    }
    for k in POOL_KINDS {
        for ns in NAMESPACES {
            for n in 0..3 {
                let pk = ObjKey::new(k, Some(ns), &format!("p{n}"));
                let got: Vec<ObjKey> = index
                    .addresses_for_pool(&pk)
                    .into_iter()
                    .map(|a| a.key.clone())
                    .collect();
                let want = sorted_keys(
                    model
                        .addresses
                        .iter()
                        .filter(|a| a.pool.as_ref() == Some(&pk)),
                );
                assert_eq!(index.address_count_for_pool(&pk), want.len());
                assert_eq!(got, want, "addresses of {pk}");
            }
        }
    }

    for c in &model.claims {
        assert_eq!(index.claim(&c.key), Some(c));
    }
    assert_eq!(index.claims().count(), model.claims.len());

    for (kind, n) in index.counts() {
        let want = model.pools.iter().filter(|p| p.key.kind == kind).count()
            + model
                .addresses
                .iter()
                .filter(|a| a.key.kind == kind)
                .count()
            + model.claims.iter().filter(|c| c.key.kind == kind).count();
        assert_eq!(n, want, "count of {kind}");
    }
}

fn apply(index: &mut Index, op: &Op) {
    match op.clone() {
        Op::UpsertPool(p) => {
            index.upsert_pool(p);
        }
        Op::RemovePool(k) => {
            index.remove_pool(&k);
        }
        Op::UpsertAddress(a) => {
            index.upsert_address(a);
        }
        Op::RemoveAddress(k) => {
            index.remove_address(&k);
        }
        Op::UpsertClaim(c) => {
            index.upsert_claim(c);
        }
        Op::RemoveClaim(k) => {
            index.remove_claim(&k);
        }
        Op::Relist(kind, objects) => index.replace_kind(kind, objects),
        Op::ClearKind(kind) => index.clear_kind(kind),
        Op::Overlap(..) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn index_matches_brute_force(ops in prop::collection::vec(op(), 1..60)) {
        let mut index = Index::new();
        let mut model = Model::default();
        for op in &ops {
            apply(&mut index, op);
            model.apply(op);
            check(&index, &model, op);
        }
        // A clone answers the same, and tearing everything down leaves nothing behind.
        let copy = index.clone();
        check(&copy, &model, &Op::ClearKind(Kind::VSphereMachine));
        for kind in Kind::ALL {
            index.clear_kind(kind);
        }
        prop_assert!(index.is_empty());
        prop_assert_eq!(index.pools().count(), 0);
        index.check_consistency();
    }

    /// Removing pools in any order gives the same segments as never having added them.
    #[test]
    fn removal_order_does_not_matter(
        pools in prop::collection::vec(pool_with(pool_key()), 1..12),
        order in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let mut index = Index::new();
        let mut model = Model::default();
        for p in &pools {
            let op = Op::UpsertPool(p.clone());
            apply(&mut index, &op);
            model.apply(&op);
        }
        for i in order {
            if model.pools.is_empty() {
                break;
            }
            let key = model.pools[i.index(model.pools.len())].key.clone();
            let op = Op::RemovePool(key);
            apply(&mut index, &op);
            model.apply(&op);
            check(&index, &model, &op);
        }
    }
}
