//! ipam-guard: an admission webhook that keeps Kubernetes IP address management honest.
//!
//! Module map, by layer (a module may only use lower layers). Layers 0-4 are pure and live in
//! the `ipam-guard-core` crate (crates/core), re-exported here under the same names: the compiler
//! keeps tokio, hyper, kube and layers 5-9 out of them, and `tests/layers.rs` checks the ranks
//! inside each crate.
//!
//! In `ipam-guard-core`:
//! - 0 `address`: address text → sets of inclusive ranges. `kinds`: the table of served kinds.
//!   `par`: one parallel map over a slice, results in order. `kube_version`: the Kubernetes
//!   release `check` speaks for, and what differs between releases.
//!   `rule_id`: `RuleId`, every id with its effect and whether it reads the view.
//! - 1 `field`: field errors, warnings, verdicts, patches. `schema`: CRD structural schemas (for
//!   `check`). `catalogue`: the table of rules, rendered into docs/rules.md.
//! - 2 `model`: reading objects (any served version) into what the rules and the index use. Pure.
//! - 3 `index`: the pool range index and address ownership index.
//! - 4 `rules`: each kind's `Validator` and `Mutator` (one table), `shape`, `Options`. Pure.
//!   `manifests`: reading objects from files (find, parse, identify), for `check` and `--state-from`.
//!
//! In this crate:
//! - 5 `cluster`: the `ClusterView` the rules read (static from files, live from watches).
//! - 6 `admission`: AdmissionReview in (`envelope`, `object`), through the rules and the X2 step
//!   on its route (`dispatch`, `decision`), out (`status`); one entry, `Admission::review`.
//!   `judge`: objects judged as the API server would create them (schema → mutate → validate)
//!   into `Finding`s, from files (`check`), a cluster's listing or a view (`audit`, the periodic
//!   audit), and a cluster read as what others count against (`check --kubeconfig`, `usage`).
//! - 7 `server`: HTTPS, probes, metrics, certificate reload, shutdown; the periodic audit
//!   (`judge` on a timer, PolicyReports). Never decides a verdict.
//! - 8 `decider`: one decider across replicas (Lease, peer forwarding of the X2 step).
//! - 9 `cli`: the commands (flags, output formats, progress); maps its flags onto
//!   `rules::Options`.
#![forbid(unsafe_code)]

pub use ipam_guard_core::{
    address, catalogue, declared, field, index, kinds, kube_version, manifests, model, par,
    rule_id, rules, schema,
};

pub mod admission;
pub mod cli;
pub mod cluster;
pub mod decider;
pub mod judge;
pub mod server;
