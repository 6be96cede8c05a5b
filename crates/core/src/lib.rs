//! ipam-guard's pure core: everything the rules need to judge an object, and nothing that talks
//! to a network, a runtime or a cluster. The `ipam-guard` crate builds the webhook, the cluster
//! views and the commands on top of it and re-exports these modules under the same names.
//!
//! Module map, by layer (a module may only use lower layers; `tests/layers.rs` checks the ranks
//! inside this crate, the crate boundary keeps the server side out):
//! - 0 `address`: address text → sets of inclusive ranges. `kinds`: the table of served kinds.
//!   `par`: one parallel map over a slice, results in order. `kube_version`: the Kubernetes
//!   release `check` speaks for, and what differs between releases.
//!   `rule_id`: `RuleId`, every id with its effect and whether it reads the view.
//! - 1 `declared`: kinds declared in an `AddressKinds` file (`--kinds`), their CEL compiled.
//!   `field`: field errors, warnings, verdicts, patches. `schema`: CRD structural schemas (for
//!   `check`). `catalogue`: the table of rules, rendered into docs/rules.md.
//! - 2 `model`: reading objects (any served version) into what the rules and the index use.
//! - 3 `index`: the pool range index and address ownership index.
//! - 4 `rules`: each kind's `Validator` and `Mutator` (one table), `shape`, `Options`.
//!   `manifests`: reading objects from files (find, parse, identify), for `check` and `--state-from`.
#![forbid(unsafe_code)]

pub mod address;
pub mod catalogue;
pub mod declared;
pub mod field;
pub mod index;
pub mod kinds;
pub mod kube_version;
pub mod manifests;
pub mod model;
pub mod par;
pub mod rule_id;
pub mod rules;
pub mod schema;
