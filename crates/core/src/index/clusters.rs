//! Clusters in the index: each Cluster by its key, and the control-plane endpoints of every
//! address space in one segment map per family, the pools' structure (CP1, CP3, CP4). An
//! endpoint is one address, so a pool asks which endpoints its allocatable set holds in
//! O(runs · log E + k), and an address asks whether it is one in O(log E).

use std::sync::Arc;

use crate::address::{AddrSet, Ip, IpRange};
use crate::kinds::Kind;
use crate::model::cluster::ClusterProj;
use crate::model::{KeyRef, Keyed, ObjKey};

use super::{FamilySegments, FastMap, Index, PendingId};

impl Index {
    /// Adds or replaces the Cluster with `cluster.key`. Returns the one it replaced.
    pub(crate) fn upsert_cluster(&mut self, mut cluster: ClusterProj) -> Option<ClusterProj> {
        self.changed();
        self.strings.key(&mut cluster.key);
        cluster.space = self.strings.get(&cluster.space);
        let key = cluster.key.clone();
        let before = self.lent_space(&key);
        let old = match self.cluster_ids.get(&cluster.key) {
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
        };
        self.follow_owner(&key, before);
        old
    }

    pub fn remove_cluster(&mut self, key: &ObjKey) -> Option<ClusterProj> {
        let id = *self.cluster_ids.get(key)?;
        self.changed();
        let before = self.lent_space(key);
        self.cluster_ids.remove(key);
        self.unplace_endpoint(id);
        let cluster = self.clusters.remove(id);
        self.count(cluster.key.kind, false);
        self.follow_owner(key, before);
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
    pub(crate) fn endpoints_in(&self, space: &str, set: &AddrSet) -> Vec<&ClusterProj> {
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
    pub(crate) fn endpoints_at(&self, space: &str, ip: Ip) -> Vec<&ClusterProj> {
        self.endpoints_in(
            space,
            &AddrSet::from_range(ip.family, IpRange::single(ip.value)),
        )
    }

    /// The address space of `c`'s endpoint: its own, or, for an infrastructure cluster that
    /// names none, that of its Cluster (stored, else the newest pending version; `default` while
    /// neither is held).
    pub(crate) fn space_of_cluster<'a>(&'a self, c: &'a ClusterProj) -> &'a str {
        if !c.inherits {
            return &c.space;
        }
        let key = KeyRef::new(Kind::Cluster, c.key.namespace.as_deref(), &c.cluster);
        self.cluster_versions(&key)
            .next()
            .map_or(&*c.space, |owner| &*owner.space)
    }

    /// The address space the Cluster `key` lends the infrastructure clusters that inherit it
    /// (`space_of_cluster`), read before a change to it: `Some(None)` while no version of it is
    /// held (each keeps its own then); None unless `key` is a Cluster.
    pub(super) fn lent_space(&self, key: &ObjKey) -> Option<Option<Arc<str>>> {
        (key.kind == Kind::Cluster)
            .then(|| self.cluster_versions(key).next().map(|c| c.space.clone()))
    }

    /// After a change to the Cluster `key` that lent `before` (`lent_space`): moves the endpoints
    /// of the infrastructure clusters that inherit its space, when that space moved. Only then are
    /// the clusters held scanned for them, so a Cluster's status update costs no pass over them.
    pub(super) fn follow_owner(&mut self, key: &ObjKey, before: Option<Option<Arc<str>>>) {
        let Some(before) = before else { return };
        if self.lent_space(key).as_ref() == Some(&before) {
            return;
        }
        let members: Vec<u32> = self
            .clusters
            .ids()
            .filter(|&id| {
                let c = self.clusters.get(id);
                c.inherits && c.key.namespace == key.namespace && *c.cluster == *key.name
            })
            .collect();
        for id in members {
            let old = before
                .clone()
                .unwrap_or_else(|| self.clusters.get(id).space.clone());
            self.unplace_endpoint_in(id, &old);
            self.place_endpoint(id);
        }
    }

    pub(super) fn place_endpoint(&mut self, id: u32) {
        let cluster = self.clusters.get(id);
        let Some(ip) = cluster.endpoint else { return };
        let space = self.strings_get(self.space_of_cluster(cluster));
        self.endpoints
            .entry(space)
            .or_default()
            .get_mut(ip.family)
            .insert(ip.value, ip.value, id);
    }

    pub(super) fn unplace_endpoint(&mut self, id: u32) {
        let space = self.strings_get(self.space_of_cluster(self.clusters.get(id)));
        self.unplace_endpoint_in(id, &space);
    }

    /// Takes the endpoint of cluster `id` out of `space`, where it was placed.
    fn unplace_endpoint_in(&mut self, id: u32, space: &str) {
        let Some(ip) = self.clusters.get(id).endpoint else {
            return;
        };
        let Some(segs) = self.endpoints.get_mut(space) else {
            return;
        };
        segs.get_mut(ip.family).remove(ip.value, ip.value, id);
        if segs.v4.is_empty() && segs.v6.is_empty() {
            self.endpoints.remove(space);
        }
    }

    /// Endpoint maps built afresh from the Clusters held (the consistency check).
    pub(super) fn fresh_endpoints(&self) -> FastMap<std::sync::Arc<str>, FamilySegments> {
        let mut fresh = Index {
            clusters: self.clusters.clone(),
            cluster_ids: self.cluster_ids.clone(),
            pending: self.pending.clone(),
            ..Index::default()
        };
        for id in self.clusters.ids() {
            fresh.place_endpoint(id);
        }
        fresh.endpoints
    }
}
