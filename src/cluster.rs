//! The `ClusterView` the rules read: what pools, claims and addresses exist (SPEC X1).
//! A static view is loaded from files (`serve --dev`, `check`, tests, benchmarks); the live view
//! is fed by kube-runtime watches.

use crate::kinds::Kind;

/// What the rules may ask of the cluster. Implementations answer from memory, never from the API server.
pub trait ClusterView: Send + Sync {
    /// True once every watched kind has finished its first list (SPEC X3). A static view is always synced.
    fn synced(&self) -> bool;
    /// Objects held per kind, for `ipam_guard_view_objects{kind}`.
    fn object_counts(&self) -> Vec<(Kind, usize)>;
}

/// A view that never changes: loaded once from files (or empty).
#[derive(Debug, Default)]
pub struct StaticView {}

impl StaticView {
    pub fn empty() -> Self {
        StaticView::default()
    }
}

impl ClusterView for StaticView {
    fn synced(&self) -> bool {
        true
    }
    fn object_counts(&self) -> Vec<(Kind, usize)> {
        Vec::new()
    }
}
