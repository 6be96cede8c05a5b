//! A view that never changes: objects read once from files (`serve --dev`, `--state-from`,
//! `check`, tests, benchmarks), or none at all.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::PathBuf;

use super::{Caller, ClusterView};
use crate::index::{Index, Object};
use crate::kinds::Kind;
use globset::GlobSet;

use crate::manifests::{self, LoadError, Manifest};
use crate::model::{self, ObjKey, Projection};
use crate::par;

/// Objects read from files and the index built from their projections. Keeps the objects
/// themselves too: `check` judges them, the index alone could not.
#[derive(Debug, Default)]
pub struct StaticView {
    index: Index,
    manifests: Vec<Manifest>,
    skipped: BTreeMap<String, usize>,
}

impl StaticView {
    pub fn empty() -> Self {
        StaticView::default()
    }

    /// Reads files and directories (see `manifests`); fails on the first input that cannot be read.
    /// `manifests::read_paths` gives every error at once, for callers that want to report them all.
    pub fn load(paths: &[PathBuf]) -> Result<StaticView, LoadError> {
        let loaded = manifests::read_paths(paths);
        if let Some(e) = loaded.errors.into_iter().next() {
            return Err(e);
        }
        let mut view = StaticView::from_manifests(loaded.manifests);
        view.skipped = loaded.skipped;
        Ok(view)
    }

    /// The index alone, built while the files are read: each object is projected on the worker
    /// that parsed it and its document dropped there, so the documents are never all held at
    /// once (`serve --state-from`). Fails as `load` does.
    pub fn load_index(paths: &[PathBuf]) -> Result<Index, LoadError> {
        let loaded = manifests::read_paths_each(paths, &GlobSet::empty(), |m| {
            model::project(m.kind, &m.object)
        });
        if let Some(e) = loaded.errors.into_iter().next() {
            return Err(e);
        }
        Ok(index_of(loaded.manifests.into_iter().flatten()))
    }

    /// Builds the index from the objects as they are. When a key is defined more than once, the
    /// last definition is the one the index holds, as `kubectl apply` of the files in order
    /// would leave it.
    pub fn from_manifests(manifests: Vec<Manifest>) -> StaticView {
        // Reading a spec is the costly part and needs no index: spread it over the cores.
        let projections = par::map(&manifests, PER_THREAD, |m| {
            model::project(m.kind, &m.object)
        });
        let index = index_of(projections.into_iter().flatten());
        StaticView {
            index,
            manifests,
            skipped: BTreeMap::new(),
        }
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The index alone, the objects dropped: what a server needs to keep (`serve --state-from`).
    pub fn into_index(self) -> Index {
        self.index
    }

    /// Every object read, in file and document order.
    pub fn manifests(&self) -> &[Manifest] {
        &self.manifests
    }

    /// Objects of unknown kinds that were skipped, by `Kind.group`.
    pub fn skipped(&self) -> &BTreeMap<String, usize> {
        &self.skipped
    }

    /// Calls `f` for every object, in order, with the index as it would be if that object did
    /// not exist yet: the way a CREATE of it would be judged against all the others.
    ///
    /// The object's own projection is taken out and put back around the call, so each object
    /// costs two index updates, not a copy of the index. What `judge_as_create` does on every
    /// core is checked against it.
    #[cfg(test)]
    fn each_as_create(&mut self, mut f: impl FnMut(usize, &Manifest, &Index)) {
        let StaticView {
            index, manifests, ..
        } = self;
        for (i, m) in manifests.iter().enumerate() {
            judge_one(index, m, |m, index| f(i, m, index));
        }
    }

    #[cfg(test)]
    fn each_as_create_split<R: Send>(
        &mut self,
        per_thread: usize,
        f: impl Fn(&Manifest, &Index) -> R + Sync,
    ) -> Vec<R> {
        let StaticView {
            index, manifests, ..
        } = self;
        split_as_create(index, manifests, per_thread, f)
    }
}

/// What judging an object as a CREATE needs to know of it to take its own entry out of the
/// index: its kind and key. `check` judges objects it holds packed, not as `Manifest`s.
pub(crate) trait Identified {
    fn kind(&self) -> Kind;
    fn key(&self) -> &ObjKey;
}

impl Identified for Manifest {
    fn kind(&self) -> Kind {
        self.kind
    }
    fn key(&self) -> &ObjKey {
        &self.key
    }
}

/// Each of `items` judged as a CREATE against all the others, on every core: each thread takes a
/// contiguous share of the items and one copy of the index (one copy per thread, never one per
/// item); small sets stay on one thread, where a copy would cost more than it saves. `index`
/// must hold what they project to (and may hold more, to be judged against). Results come back
/// in order.
pub(crate) fn judge_as_create<T: Identified + Sync, R: Send>(
    index: &mut Index,
    items: &[T],
    f: impl Fn(&T, &Index) -> R + Sync,
) -> Vec<R> {
    split_as_create(index, items, PER_THREAD, f)
}

/// The index of `projections`, upserted in order: with a key given twice the last one stays, as
/// `kubectl apply` of the files in order would leave it.
pub fn index_of(projections: impl IntoIterator<Item = Projection>) -> Index {
    let mut index = Index::new();
    upsert_all(&mut index, projections);
    index
}

/// Adds `projections` to `index` in order, each replacing what the index held under its key.
pub(crate) fn upsert_all(index: &mut Index, projections: impl IntoIterator<Item = Projection>) {
    for p in projections {
        index.upsert(p);
    }
}

fn split_as_create<T: Identified + Sync, R: Send>(
    index: &mut Index,
    items: &[T],
    per_thread: usize,
    f: impl Fn(&T, &Index) -> R + Sync,
) -> Vec<R> {
    let threads = par::workers(items.len(), per_thread);
    let mut copies: Vec<Index> = (1..threads).map(|_| index.clone()).collect();
    let indexes: Vec<&mut Index> = std::iter::once(index).chain(copies.iter_mut()).collect();
    // Every copy is whole again between two objects, so any worker may judge any object.
    par::map_with(items, indexes, |index, m| judge_one(index, m, &f))
}

/// Below this many objects per thread, a thread (and an index copy) is not worth it.
const PER_THREAD: usize = 20_000;

fn judge_one<T: Identified, R>(index: &mut Index, m: &T, f: impl FnOnce(&T, &Index) -> R) -> R {
    let own = take(index, m.kind(), m.key());
    let r = f(m, index);
    if let Some(own) = own {
        index.upsert(own);
    }
    r
}

/// Removes what the index holds under the object's key. With a key defined twice that is the
/// last definition, which is what the others are judged against and what goes back afterwards.
fn take(index: &mut Index, kind: Kind, key: &ObjKey) -> Option<Object> {
    match kind {
        k if k.is_pool() => index.remove_pool(key).map(|p| Object::Pool(Box::new(p))),
        Kind::IPAddress | Kind::Metal3IPAddress => index.remove_address(key).map(Object::Address),
        Kind::IPAddressClaim | Kind::Metal3IPClaim => index.remove_claim(key).map(Object::Claim),
        Kind::Cluster | Kind::VSphereCluster | Kind::Metal3Cluster => index
            .remove_cluster(key)
            .map(|c| Object::Cluster(Box::new(c))),
        Kind::SpiderReservedIP | Kind::VSphereMachine => index
            .remove_holder(key)
            .map(|h| Object::Holder(Box::new(h))),
        _ => None,
    }
}

impl ClusterView for StaticView {
    fn synced(&self) -> bool {
        true
    }
    fn object_counts(&self) -> Vec<(Kind, usize)> {
        self.index.counts()
    }
    fn read(&self) -> Box<dyn Deref<Target = Index> + '_> {
        Box::new(&self.index)
    }
    /// Only reads, with nothing to serialise: `check` judges files and admits nothing, and a
    /// server never answers from a bare static view (`serve --state-from` wraps the index in
    /// `Ledger`, which keeps pending entries under its decision lock).
    fn reserve(&self, f: &mut dyn FnMut(&Index) -> Option<Projection>) {
        f(&self.index);
    }
    /// Records nothing, so there is nothing to bound: the caller changes nothing.
    fn reserve_as(
        &self,
        _caller: &Caller,
        _basis: &super::Basis,
        f: &mut dyn FnMut(&Index) -> Option<Projection>,
    ) {
        f(&self.index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests;

    /// Duplicates (A9) are found the same way whether the objects are judged on one thread or
    /// split across threads, each with its own copy of the index.
    #[test]
    fn a9_split_judging_matches_sequential() {
        let mut text = String::new();
        for i in 0..6 {
            // Pairs of addresses share an IP: m-0/m-1, m-2/m-3, m-4/m-5.
            text.push_str(&format!(
                "---\napiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\n\
                 metadata: {{name: m-{i}, namespace: ns}}\n\
                 spec: {{address: 10.0.0.{}, prefix: 24, claimRef: {{name: m-{i}}}, \
                 poolRef: {{apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: p}}}}\n",
                10 + i / 2
            ));
        }
        let loaded = manifests::read_str("x.yaml", &text);
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let holders = |m: &Manifest, index: &Index| -> usize {
            let ip = crate::address::parse_ip(m.object["spec"]["address"].as_str().unwrap())
                .unwrap()
                .value;
            index.holders(ip).count()
        };
        let mut view = StaticView::from_manifests(loaded.manifests.clone());
        let mut sequential = Vec::new();
        view.each_as_create(|_, m, index| sequential.push(holders(m, index)));
        assert_eq!(sequential, vec![1; 6], "each sees only its twin");
        for per_thread in [1, 2, 4] {
            let mut view = StaticView::from_manifests(loaded.manifests.clone());
            assert_eq!(view.each_as_create_split(per_thread, holders), sequential);
            // The index is whole again afterwards.
            assert_eq!(view.index().len(), 6);
        }
    }
}
