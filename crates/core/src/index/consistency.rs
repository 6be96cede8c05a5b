//! The index's self-check: every secondary index agrees with the objects held (tests; O(n)).

use super::slots::PENDING_BIT;
use super::{Ids, Index};
use crate::kinds::Kind;

impl Index {
    /// Panics when the secondary indexes disagree with the objects (tests; O(n)).
    #[doc(hidden)]
    pub fn check_consistency(&self) {
        // Pools: ids, and segment maps equal to a fresh build.
        assert_eq!(self.pool_ids.len(), self.pools.stored.len());
        let pending: usize = self.pending.values().map(Vec::len).sum();
        assert_eq!(
            pending,
            self.pools.pending.len()
                + self.addresses.pending.len()
                + self.pending_claims.len()
                + self.clusters.pending.len()
                + self.holders_held.pending.len()
        );
        for (key, ids) in &self.pending {
            assert!(!ids.is_empty());
            for &id in ids {
                assert_eq!(self.pending_key(id), key);
            }
        }
        for (key, &id) in &self.pool_ids {
            assert_eq!(&self.pools.get(id).key, key);
        }
        // Same ids, so owner lists compare equal.
        let mut fresh = Index {
            pools: self.pools.clone(),
            ..Index::default()
        };
        for id in self.pools.ids() {
            fresh.place_pool(id);
        }
        for (space, segs) in &self.spaces {
            segs.v4.check();
            segs.v6.check();
            assert!(
                !segs.v4.is_empty() || !segs.v6.is_empty(),
                "empty space {space}"
            );
        }
        assert_eq!(fresh.spaces, self.spaces);

        // Addresses: every link present exactly once, and nothing else.
        assert_eq!(self.address_ids.len(), self.addresses.stored.len());
        let (mut n_ip, mut n_claim, mut n_pool) = (0, 0, 0);
        for id in self.addresses.ids() {
            let e = self.addresses.get(id);
            let a = &e.proj;
            if id & PENDING_BIT == 0 {
                assert_eq!(self.address_ids.get(&a.key), Some(&id));
            }
            if let Some(ip) = a.ip {
                assert_eq!(self.holders(ip).filter(|h| h.key == a.key).count(), 1);
                n_ip += 1;
            }
            if let Some(claim) = &a.claim {
                let ns = a.key.namespace.as_deref().unwrap_or_default();
                let found = self.addresses_for_claim(a.key.kind, ns, claim);
                assert_eq!(found.iter().filter(|h| h.key == a.key).count(), 1);
                n_claim += 1;
            }
            if let Some(pool) = &a.pool {
                assert_eq!(self.by_pool[pool][e.pool_pos as usize], id);
                n_pool += 1;
            }
        }
        let ip_links: usize = self.by_ip4.values().map(Ids::len).sum::<usize>()
            + self.by_ip6.values().map(Ids::len).sum::<usize>();
        assert_eq!(ip_links, n_ip);
        assert_eq!(self.by_claim.values().map(Ids::len).sum::<usize>(), n_claim);
        assert_eq!(self.by_pool.values().map(Vec::len).sum::<usize>(), n_pool);
        assert!(self.by_pool.values().all(|l| !l.is_empty()));

        // Counts.
        let mut counts = [0usize; Kind::ALL.len()];
        let mut declared = vec![0usize; self.declared_counts.len()];
        for k in self
            .pool_ids
            .keys()
            .chain(self.address_ids.keys())
            .chain(self.claims.iter().map(|c| &c.0.key))
            .chain(self.cluster_ids.keys())
            .chain(self.holder_ids.keys())
        {
            match (k.kind, k.kind.built_in_index()) {
                (_, Some(i)) => counts[i] += 1,
                (Kind::Declared(n), None) => declared[usize::from(n)] += 1,
                (other, None) => panic!("{other:?} has no place in Kind::ALL"),
            }
        }
        assert_eq!(counts, self.counts);
        assert_eq!(declared, self.declared_counts);

        // Clusters: ids, and endpoint maps equal to a fresh build.
        assert_eq!(self.cluster_ids.len(), self.clusters.stored.len());
        for (key, &id) in &self.cluster_ids {
            assert_eq!(&self.clusters.get(id).key, key);
        }
        assert_eq!(self.fresh_endpoints(), self.endpoints);

        // Holders: ids, and held maps equal to a fresh build.
        assert_eq!(self.holder_ids.len(), self.holders_held.stored.len());
        for (key, &id) in &self.holder_ids {
            assert_eq!(&self.holders_held.get(id).key, key);
        }
        assert_eq!(self.fresh_held(), self.held);
    }
}
