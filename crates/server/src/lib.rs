//! ipam-guard's serving layers, above the pure ones of `ipam-guard-core` (re-exported here under
//! the same names, so `crate::rules` reads as it does everywhere) and below the commands of the
//! `ipam-guard` binary, which the compiler keeps out of here. Module map, by layer (a module may
//! only use lower layers; `tests/layers.rs` checks the ranks inside each crate):
//!
//! - 5 `cluster`: the `ClusterView` the rules read (static from files, live from watches).
//! - 6 `admission`: AdmissionReview in (`envelope`, `object`), through the rules and the X2 step
//!   on its route (`dispatch`, `decision`), out (`status`); one entry, `Admission::review`.
//!   `judge`: objects judged as the API server would create them (schema → mutate → validate)
//!   into `Finding`s, from files (`check`), a cluster's listing or a view (`audit`, the periodic
//!   audit), and a cluster read as what others count against (`check --kubeconfig`, `usage`).
//! - 7 `server`: HTTPS, probes, metrics, certificate reload, shutdown; the periodic audit
//!   (`judge` on a timer, PolicyReports). Never decides a verdict.
//! - 8 `decider`: one decider across replicas (Lease, peer forwarding of the X2 step).
#![forbid(unsafe_code)]

pub use ipam_guard_core::{
    address, catalogue, declared, field, index, kinds, kube_version, manifests, model, par,
    rule_id, rules, schema,
};

pub mod admission;
pub mod cluster;
pub mod decider;
pub mod judge;
pub mod server;
