//! The rule catalogue (docs/rules.md) as pure functions: `(request, old object, cluster view) -> findings`.
//! No HTTP and no kube client in here.

pub mod backstop;
pub(crate) mod capv;
pub mod claim;
pub mod cluster;
pub mod conditions;
mod declared_pool;
pub mod exhaustion;
pub mod health;
pub mod holders;
pub mod in_cluster;
pub mod ipaddress;
pub mod metal3;
pub mod metal3_pool;
pub(crate) mod metal3_template;
pub mod mutate;
pub mod pool;
pub mod prefix_pool;
pub mod spider;
pub(crate) mod spider_spec;
pub(crate) mod spider_subnet;
pub mod stored;
mod table;
mod util;
pub mod validator;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod declared_tests;
#[cfg(test)]
mod holders_tests;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
#[cfg(test)]
mod tests;

use crate::field::Verdict;
use crate::index::Index;
use crate::kinds::Kind;
use crate::model::{Operation, Request};
use crate::rule_id::RuleId;
pub use mutate::Mutator;
pub use table::{for_kind, mutator_for};
pub use validator::{shape, Call, Readings, Review, Validator};

/// Settings that change verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub overlap_scope: OverlapScope,
    pub require_existing_pool: bool,
    /// The objects judged are already stored (`audit`): where the admission wording would
    /// mislead (a reason to allow a write that happened long ago), messages speak of what is stored.
    pub stored: bool,
    /// Below this many free addresses a claim's CREATE is warned about (E1).
    pub warn_free_below: exhaustion::FreeThreshold,
    /// A claim without an address for longer than this while its pool has free ones is stuck (H1).
    pub stuck_after: std::time::Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            overlap_scope: OverlapScope::default(),
            require_existing_pool: false,
            stored: false,
            warn_free_below: exhaustion::FreeThreshold::default(),
            stuck_after: health::DEFAULT_STUCK_AFTER,
        }
    }
}

/// How overlap (P10) and uniqueness (A9) are scoped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverlapScope {
    #[default]
    AddressSpace,
    Namespace,
    Off,
}

/// What the rules read besides the request: the view's index, the settings, and the time the
/// view's timers read (R1's reuse grace is judged against it).
pub struct Ctx<'a> {
    pub index: &'a Index,
    pub options: Options,
    pub now: std::time::Instant,
}

/// Validating webhook: every rule of the catalogue for the request's kind. Unknown kinds never reach here.
pub fn validate(req: &Request, ctx: &Ctx) -> Verdict {
    validate_reading(req, ctx, &Readings::default())
}

/// As `validate`, keeping what it reads of the request's objects in `readings`, where a second
/// validation of the same request and its X2 record find it (`readings` is this request's only).
pub fn validate_reading(req: &Request, ctx: &Ctx, readings: &Readings) -> Verdict {
    if req.operation == Operation::Connect {
        return Verdict::default();
    }
    if !req.kind.serves_version(req.version) {
        // A version we cannot decode is let through, but never silently.
        let mut v = Verdict::default();
        v.warn(
            RuleId::K1,
            "",
            format!(
                "{}/{} {} is not a version ipam-guard knows (serves {}); the object was not checked",
                req.kind.group(),
                req.version,
                req.kind.name(),
                req.kind.info().versions.join(", ")
            ),
        );
        return v;
    }
    let review = match shape(req) {
        Ok(review) => review,
        Err(broken) => return Verdict::denied(broken),
    };
    let call = Call::of(req, readings);
    let validator = for_kind(req.kind);
    match review {
        Review::Create(obj) => validator.create(obj, &call, ctx),
        Review::Update { obj, old } => validator.update(obj, old, &call, ctx),
        Review::Delete(old) => validator.delete(old, &call, ctx),
        Review::Connect => Verdict::default(),
    }
}

/// Whether a request of this kind and operation can be refused by a rule that reads the view
/// (its validator's `view_denials`): until the view has synced such requests get a 503 (X3).
pub fn denies_from_view(kind: Kind, op: Operation, options: &Options) -> bool {
    !for_kind(kind).view_denials(op, options).is_empty()
}

/// Mutating webhook: fills absent fields only; idempotent. A broken request is
/// refused by [`shape`], as validation refuses it; an unknown version is not ours to patch
/// (validation warns about it); otherwise the kind's mutator fills what is absent.
pub fn mutate(req: &Request) -> Verdict {
    let review = match shape(req) {
        Ok(review) => review,
        Err(broken) => return Verdict::denied(broken),
    };
    if !req.kind.serves_version(req.version) {
        return Verdict::default();
    }
    let mutator = mutator_for(req.kind);
    match review {
        Review::Create(obj) => mutator.create(obj),
        Review::Update { obj, old } => mutator.update(obj, old),
        Review::Delete(_) | Review::Connect => Verdict::default(),
    }
}
