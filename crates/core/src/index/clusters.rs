//! Clusters in the index: each Cluster by its key, and the control-plane endpoints of every
//! address space in one segment map per family, the pools' structure (CP1, CP3, CP4). An
//! endpoint is one address, so a pool asks which endpoints its allocatable set holds in
//! O(runs · log E + k), and an address asks whether it is one in O(log E).

use crate::address::{AddrSet, Ip, IpRange};
use crate::model::cluster::ClusterProj;
use crate::model::{Keyed, ObjKey};

use super::{FamilySegments, FastMap, Index, PendingId};

impl Index {
    /// Adds or replaces the Cluster with `cluster.key`. Returns the one it replaced.
    pub fn upsert_cluster(&mut self, mut cluster: ClusterProj) -> Option<ClusterProj> {
        self.changed();
        self.strings.key(&mut cluster.key);
        cluster.space = self.strings.get(&cluster.space);
        match self.cluster_ids.get(&cluster.key) {
            Some(&id) => {
                self.unplace_endpoint(id);
                let old = std::mem::replace(self.clusters.get_mut(id), cluster);
                self.place_endpoint(id);
                Some(old)
            }
            None => {
                self.count(cluster.key.kind, true);
                let key = cluster.key.clone();
                let id = self.clusters.insert(cluster, false);
                self.cluster_ids.insert(key, id);
                self.place_endpoint(id);
                None
            }
        }
    }

    pub fn remove_cluster(&mut self, key: &ObjKey) -> Option<ClusterProj> {
        let id = self.cluster_ids.remove(key)?;
        self.changed();
        self.unplace_endpoint(id);
        let cluster = self.clusters.remove(id);
        self.count(cluster.key.kind, false);
        Some(cluster)
    }

    /// Every version of the Cluster under `key`: the stored one first, then those pending (X2),
    /// newest first.
    pub fn cluster_versions<'a>(
        &'a self,
        key: &dyn Keyed,
    ) -> impl Iterator<Item = &'a ClusterProj> + use<'a> {
        let stored = self.cluster_ids.get(key).copied();
        let pending = self.pending_ids(key).iter().rev().filter_map(|p| match *p {
            PendingId::Cluster(id) => Some(id),
            _ => None,
        });
        stored
            .into_iter()
            .chain(pending)
            .map(|id| self.clusters.get(id))
    }

    /// Every stored Cluster, in no particular order.
    pub fn clusters(&self) -> impl Iterator<Item = &ClusterProj> + '_ {
        self.clusters.stored.iter().map(|(_, c)| c)
    }

    /// Clusters (stored and pending versions, X2) whose control-plane endpoint in `space` lies
    /// in `set`, sorted by key and endpoint, each pair once.
    pub fn endpoints_in(&self, space: &str, set: &AddrSet) -> Vec<&ClusterProj> {
        let Some(segs) = self.endpoints.get(space).map(|s| s.get(set.family())) else {
            return Vec::new();
        };
        let mut out: Vec<&ClusterProj> = set
            .ranges()
            .iter()
            .flat_map(|r| segs.query(r.start, r.end))
            .flat_map(|(_, _, owners)| owners.iter().map(|&id| self.clusters.get(id)))
            .collect();
        out.sort_by(|a, b| (&a.key, a.endpoint).cmp(&(&b.key, b.endpoint)));
        out.dedup_by(|a, b| a.key == b.key && a.endpoint == b.endpoint);
        out
    }

    /// Clusters whose control-plane endpoint in `space` is `ip` (`endpoints_in` for one address).
    pub fn endpoints_at(&self, space: &str, ip: Ip) -> Vec<&ClusterProj> {
        self.endpoints_in(
            space,
            &AddrSet::from_range(ip.family, IpRange::single(ip.value)),
        )
    }

    pub(super) fn place_endpoint(&mut self, id: u32) {
        let cluster = self.clusters.get(id);
        let Some(ip) = cluster.endpoint else { return };
        self.endpoints
            .entry(cluster.space.clone())
            .or_default()
            .get_mut(ip.family)
            .insert(ip.value, ip.value, id);
    }

    pub(super) fn unplace_endpoint(&mut self, id: u32) {
        let cluster = self.clusters.get(id);
        let Some(ip) = cluster.endpoint else { return };
        let Some(space) = self.endpoints.get_mut(&*cluster.space) else {
            return;
        };
        space.get_mut(ip.family).remove(ip.value, ip.value, id);
        if space.v4.is_empty() && space.v6.is_empty() {
            self.endpoints.remove(&*cluster.space);
        }
    }

    /// Endpoint maps built afresh from the Clusters held (the consistency check).
    pub(super) fn fresh_endpoints(&self) -> FastMap<std::sync::Arc<str>, FamilySegments> {
        let mut fresh = Index {
            clusters: self.clusters.clone(),
            ..Index::default()
        };
        for id in self.clusters.ids() {
            fresh.place_endpoint(id);
        }
        fresh.endpoints
    }
}
