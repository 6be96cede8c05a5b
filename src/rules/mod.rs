//! The rule catalogue of SPEC as pure functions: `(request, old object, cluster view) -> findings`.
//! No HTTP and no kube client in here.

pub mod field;

use crate::cli::{OverlapScope, RuleArgs};

/// Settings that change verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    pub overlap_scope: OverlapScope,
    pub require_existing_pool: bool,
}

impl From<&RuleArgs> for Options {
    fn from(a: &RuleArgs) -> Self {
        Options {
            overlap_scope: a.overlap_scope,
            require_existing_pool: a.require_existing_pool,
        }
    }
}
