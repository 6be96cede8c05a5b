//! The `ClusterView` the rules read: what pools, claims and addresses exist (SPEC X1).
//! A static view is loaded from files (`serve --dev`, `check`, tests, benchmarks); the live view
//! is fed by kube-runtime watches.

pub mod live;
pub mod load;
mod object;
pub mod shared;
mod static_view;

use std::ops::Deref;

use crate::index::Index;
use crate::kinds::Kind;
use crate::model::Projection;

pub use object::WatchedObject;
pub use shared::{IndexGuard, Shared};
pub use static_view::StaticView;

/// What the rules may ask of the cluster. Implementations answer from memory, never from the API server.
pub trait ClusterView: Send + Sync {
    /// True once every watched kind has finished its first list (SPEC X3). A static view is always synced.
    fn synced(&self) -> bool;
    /// Objects held per kind, for `ipam_guard_view_objects{kind}`.
    fn object_counts(&self) -> Vec<(Kind, usize)>;
    /// The index the rules read. A static view lends a plain reference; a live view a read guard,
    /// so hold it only for one decision and never across an `await`.
    fn read(&self) -> Box<dyn Deref<Target = Index> + '_>;
    /// Runs one admission decision that reads other objects (SPEC X2): `f` judges against the
    /// index and returns the projection of what it admits (None for a denial or a dry run), which
    /// then counts as existing until the watch shows it or 30 s pass. Decisions run one at a time.
    ///
    /// No default: every view says how it serialises. Across replicas only the elected decider
    /// calls this for admissions (`crate::decider`); the others forward the step to it.
    fn decide(&self, f: &mut dyn FnMut(&Index) -> Option<Projection>);
}
