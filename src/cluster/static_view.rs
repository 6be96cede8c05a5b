//! A view that never changes: objects read once from files (`serve --dev`, `--state-from`,
//! `check`, tests, benchmarks), or none at all.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::PathBuf;

use super::load::{self, LoadError, Manifest};
use super::ClusterView;
use crate::index::{Index, Object};
use crate::kinds::Kind;
use crate::model::{self, Projection};

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

    /// Reads files and directories (see `load`); fails on the first input that cannot be read.
    /// `load::read_paths` gives every error at once, for callers that want to report them all.
    pub fn load(paths: &[PathBuf]) -> Result<StaticView, LoadError> {
        let loaded = load::read_paths(paths);
        if let Some(e) = loaded.errors.into_iter().next() {
            return Err(e);
        }
        let mut view = StaticView::from_manifests(loaded.manifests);
        view.skipped = loaded.skipped;
        Ok(view)
    }

    /// Builds the index from the objects as they are. When a key is defined more than once, the
    /// last definition is the one the index holds, as `kubectl apply` of the files in order
    /// would leave it.
    pub fn from_manifests(manifests: Vec<Manifest>) -> StaticView {
        let mut index = Index::new();
        for m in &manifests {
            if let Some(p) = model::project(m.kind, &m.object) {
                index.upsert(object(p));
            }
        }
        StaticView {
            index,
            manifests,
            skipped: BTreeMap::new(),
        }
    }

    pub fn index(&self) -> &Index {
        &self.index
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
    /// costs two index updates, not a copy of the index.
    pub fn each_as_create(&mut self, mut f: impl FnMut(usize, &Manifest, &Index)) {
        let StaticView {
            index, manifests, ..
        } = self;
        for (i, m) in manifests.iter().enumerate() {
            let own = take(index, m);
            f(i, m, index);
            if let Some(own) = own {
                index.upsert(own);
            }
        }
    }
}

/// Removes what the index holds under the manifest's key. With a key defined twice that is the
/// last definition, which is what the others are judged against and what goes back afterwards.
fn take(index: &mut Index, m: &Manifest) -> Option<Object> {
    let key = &m.key;
    match m.kind {
        k if k.is_pool() => index.remove_pool(key).map(Object::Pool),
        Kind::IPAddress | Kind::Metal3IPAddress => index.remove_address(key).map(Object::Address),
        Kind::IPAddressClaim => index.remove_claim(key).map(Object::Claim),
        _ => None,
    }
}

fn object(p: Projection) -> Object {
    match p {
        Projection::Pool(p) => Object::Pool(p),
        Projection::Address(a) => Object::Address(a),
        Projection::Claim(c) => Object::Claim(c),
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
}
