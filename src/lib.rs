//! ipam-guard: an admission webhook that keeps Kubernetes IP address management honest.
//!
//! Three crates, each a band of layers the compiler holds apart (docs/layout.md); this one
//! re-exports both below it under the same names (`ipam_guard::rules`, `ipam_guard::server`):
//!
//! - `ipam-guard-core` (crates/core), layers 0-4, pure: `address`, `kinds`, `par`,
//!   `kube_version`, `rule_id` (0); `field`, `schema`, `catalogue`, `declared` (1); `model` (2);
//!   `index` (3); `rules`, `manifests` (4).
//! - `ipam-guard-server` (crates/server), layers 5-8: `cluster` (5); `admission`, `judge` (6);
//!   `server` (7); `decider` (8).
//! - here, layer 9: `cli`, the commands (flags, output formats, progress); maps its flags onto
//!   `rules::Options`.
#![forbid(unsafe_code)]

pub use ipam_guard_core::{
    address, catalogue, declared, field, index, kinds, kube_version, manifests, model, par,
    rule_id, rules, schema,
};
pub use ipam_guard_server::{admission, cluster, decider, judge, server};

pub mod cli;
