//! The `ClusterView` the rules read: what pools, claims and addresses exist (X1).
//! A static view is loaded from files (`serve --dev`, `check`, tests, benchmarks); the live view
//! is fed by list-then-watch loops on the API server.

pub mod clock;
pub mod ledger;
pub mod live;
mod object;
mod static_view;
pub mod trust;

use std::ops::Deref;
use std::time::{Duration, Instant};

use crate::index::Index;
use crate::kinds::Kind;
use crate::model::{ObjKey, Projection};

pub use clock::{Clock, ManualClock};
pub use ledger::{Basis, Ledger, Seen};
pub use object::WatchedObject;
pub use static_view::{index_of, StaticView};
pub(crate) use static_view::{judge_as_create, upsert_all, Identified};
pub use trust::{Caller, StrangerPolicy, PENDING_TTL};

/// What the rules may ask of the cluster. Implementations answer from memory, never from the API server.
pub trait ClusterView: Send + Sync {
    /// True once every watched kind has finished its first list (X3). A static view is always synced.
    fn synced(&self) -> bool;
    /// Objects held per kind, for `ipam_guard_view_objects{kind}`.
    fn object_counts(&self) -> Vec<(Kind, usize)>;
    /// The index the rules read. A static view lends a plain reference; a live view a read guard,
    /// so hold it only for one decision and never across an `await`.
    fn read(&self) -> Box<dyn Deref<Target = Index> + '_>;
    /// Runs one admission decision that reads other objects (X2) and reserves what it
    /// admits: `f` judges against the index and returns the projection of what it admits (None
    /// for a denial or a dry run), which then counts as existing (a pending entry) until the watch
    /// shows it or 30 s pass. Decisions run one at a time. (Named for what it leaves behind: the
    /// replica that runs it is "the decider", the peer call is `send`.)
    ///
    /// No default: every view says how it serialises. Across replicas only the elected decider
    /// calls this for admissions (`crate::decider`); the others forward the step to it.
    fn reserve(&self, f: &mut dyn FnMut(&Index) -> Option<Projection>);
    /// As `reserve`, for a request from `caller` (the webhook passes who connected) whose write
    /// builds on `basis` (what tells the watch's later events for the key apart). A view that
    /// records pending versions bounds what strangers reserve here (`trust.rs`). No default: a
    /// wrapper that forwarded only `reserve` would silently drop those bounds.
    fn reserve_as(
        &self,
        caller: &Caller,
        basis: &Basis,
        f: &mut dyn FnMut(&Index) -> Option<Projection>,
    );
    /// Whether the object under `key` counts as existing by a pending entry (admitted, not yet
    /// shown by the watch). A view that records none has none; a wrapper around one that does
    /// forwards it, or a relabel would stop replacing pending entries (X2).
    fn is_pending(&self, _key: &ObjKey) -> bool {
        false
    }
    /// Whether the view's watch has shown, within the pending TTL, the object that a write of
    /// `basis` under `key` made or changed deleted (X2 hand-over). A view without watches has
    /// seen nothing go.
    fn shown_gone(&self, _key: &ObjKey, _basis: &Basis) -> bool {
        false
    }
    /// The time the view's timers read (the reuse grace of R1 is judged against it): a view
    /// with an injected clock answers from it, so tests move time instead of sleeping.
    fn now(&self) -> Instant {
        Instant::now()
    }
    /// Health of each watch feeding the view (metrics). Views fed from files have none.
    fn watch_health(&self) -> Vec<WatchHealth> {
        Vec::new()
    }
}

/// One watch of a live view, as `/metrics` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchHealth {
    /// The watched kind (`InClusterIPPool`, or `CustomResourceDefinition` for the CRD watch).
    pub kind: String,
    pub healthy: bool,
    /// Time since the last list, watch start, event or bookmark (None: never).
    pub last_event_age: Option<Duration>,
    /// Lists made so far, by cause (`initial`, `expired`, `error`).
    pub lists: Vec<(&'static str, u64)>,
}
