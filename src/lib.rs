//! ipam-guard: an admission webhook that keeps Kubernetes IP address management honest.
//!
//! Module map (a path tells what a file may touch):
//! - `address`: address text → sets of inclusive ranges. Pure.
//! - `par`: one parallel map over a slice, results in order.
//! - `kinds`: the table of served kinds. `catalogue`: the table of rule ids.
//! - `model`: reading objects (any served version) into the projections the rules and the index use. Pure.
//! - `rules`: the rule catalogue of SPEC as pure functions returning field errors. Pure.
//! - `index`: the pool range index and address ownership index.
//! - `manifests`: reading objects from files (find, parse, identify), for `check` and `--state-from`.
//! - `cluster`: the `ClusterView` the rules read (static from files, live from watches).
//! - `admission`: AdmissionReview in and out.
//! - `server`: HTTPS, probes, metrics, certificate reload, shutdown. Never decides a verdict.
//! - `cli`: the `serve`, `check` and `audit` commands.
#![forbid(unsafe_code)]

pub mod address;
pub mod admission;
pub mod catalogue;
pub mod cli;
pub mod cluster;
pub mod decider;
pub mod index;
pub mod kinds;
pub mod manifests;
pub mod model;
pub mod par;
pub mod rules;
pub mod schema;
pub mod server;
