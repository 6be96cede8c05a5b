//! Objects judged the way the API server would judge them if each were created now, next to all
//! the others (X4), and what was found, as `Finding`s. `server` and `cli` only schedule it
//! and write what it finds; it reads a live cluster, so it sits above `cluster`.
//!
//! - `pipeline`: one object's way, shared by all of them: `hold` (the mutating webhook's patch,
//!   `patch`; the schema step on the patched object, `crd`; projected and packed), then
//!   `judge_held` (the index of every object, each validated as a CREATE against it).
//! - `files`: manifests on disk (`check`). `stored`: a cluster's listing, taken object by object
//!   as it streams in. `audit`: a listing judged (`ipam-guard audit`), or what a view already
//!   holds (the periodic audit). `cluster`: a cluster read only as what others count against
//!   (`check --kubeconfig`, `usage`).

pub mod audit;
pub mod cluster;
pub mod crd;
pub mod files;
mod finding;
mod patch;
pub mod phases;
mod pipeline;
mod round;
pub mod stored;

pub use finding::{Finding, OtherKey, Problem, Severity, Subject, Summary, Who};
pub use pipeline::judge;
