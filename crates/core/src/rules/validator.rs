//! One validator per kind, in the shape Cluster API's webhooks use: `create(obj)`,
//! `update(obj, old)`, `delete(old)`, with objects that are never optional. [`shape`] is the one
//! place a request's objects are checked: a broken request is denied there, so no rule has an
//! allow-when-missing path. The table from a kind to its validator and mutator is `table.rs`:
//! every rule file implements the trait here, so the table cannot live beside it without each
//! rule file and this one importing each other.

use std::cell::OnceCell;

use serde_json::Value;

use crate::field::{FieldError, Verdict};
use crate::kinds::Kind;
use crate::model::paths::meta;
use crate::model::pool::PoolReading;
use crate::model::{
    incluster, metal3, prefix, read, read_pool, spider, Operation, Projection, Request,
};
use crate::rule_id::RuleId;
use crate::rules::{in_cluster, metal3_pool, prefix_pool, spider_spec};
use crate::rules::{Ctx, Options};

/// A request's objects, as its operation needs them.
#[derive(Debug, Clone, Copy)]
pub enum Review<'a> {
    Create(&'a Value),
    Update {
        obj: &'a Value,
        old: &'a Value,
    },
    Delete(&'a Value),
    /// Nothing ipam-guard judges.
    Connect,
}

/// Who and what a review is about, besides its objects.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub kind: Kind,
    pub version: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub dry_run: bool,
    /// What was read of the request's objects so far (kept for the review, `Readings`).
    readings: &'a Readings,
}

impl<'a> Call<'a> {
    /// The call of `req`, whose objects' readings are kept in `readings` (which must be kept for
    /// this request only).
    pub fn of(req: &Request<'a>, readings: &'a Readings) -> Self {
        Call {
            kind: req.kind,
            version: req.version,
            namespace: req.namespace,
            name: req.name,
            dry_run: req.dry_run,
            readings,
        }
    }

    /// The pool reading of the request's new object, `obj`, with its kind's own findings
    /// (`read_judged`): read and judged once per review, however many times the
    /// review is validated.
    pub(crate) fn read_object(&self, obj: &Value) -> &'a PoolReading {
        self.readings
            .object
            .get_or_init(|| read_judged(self.kind, obj))
    }

    /// As `read_object`, for a declared kind's new object (`model::declared::read`): the
    /// expression's problem when it cannot read the object, which is then not judged.
    pub(crate) fn read_declared(&self, obj: &Value) -> Result<&'a PoolReading, String> {
        if let Some(r) = self.readings.object.get() {
            return Ok(r);
        }
        let r = crate::model::declared::read(self.kind, obj)?;
        Ok(self.readings.object.get_or_init(|| r))
    }

    /// As `read_object`, for the request's stored object (`oldObject`).
    pub(crate) fn read_old(&self, old: &Value) -> &'a PoolReading {
        self.readings
            .old
            .get_or_init(|| read_judged(self.kind, old))
    }

    /// Keeps what the index would keep of the new address or claim (`model::project_read`),
    /// from the reading the validator took, for the X2 record: computed once per review.
    pub(crate) fn keep_projection(&self, project: impl FnOnce() -> Option<Projection>) {
        if self.readings.projection.get().is_none() {
            if let Some(p) = project() {
                let _ = self.readings.projection.set(p);
            }
        }
    }

    /// The request's namespace, else the one `obj` names in its metadata.
    pub fn namespace_of<'o>(&'o self, obj: &'o Value) -> Option<&'o str> {
        self.namespace
            .or_else(|| read::get(obj, meta::NAMESPACE).and_then(Value::as_str))
    }
}

/// A pool's reading (`model::read_pool`) with its kind's own findings: each pool kind is decoded
/// into a typed spec that its rules judge: `rules::in_cluster` (P1–P7), `rules::prefix_pool`
/// (PP1–PP6), `rules::metal3_pool` (MP1–MP3, MP5) and `rules::spider_spec` (S1–S4, S7, S8).
pub(crate) fn read_judged(kind: Kind, obj: &Value) -> PoolReading {
    match kind {
        Kind::InClusterIPPool | Kind::GlobalInClusterIPPool => {
            let (spec, mut r) = incluster::read_spec(kind, obj);
            (r.errors, r.warnings) = in_cluster::findings(&spec, &r);
            r
        }
        Kind::InClusterPrefixPool | Kind::GlobalInClusterPrefixPool => {
            let (spec, mut r) = prefix::read_spec(kind, obj);
            (r.errors, r.warnings) = prefix_pool::findings(&spec, &r);
            r
        }
        Kind::Metal3IPPool => {
            let (spec, layout, mut r) = metal3::read_spec(obj);
            (r.errors, r.warnings) = metal3_pool::findings(&spec, &layout, &r);
            r
        }
        Kind::SpiderIPPool | Kind::SpiderSubnet => {
            let (spec, mut r) = spider::read_spec(kind, obj);
            (r.errors, r.warnings) = spider_spec::findings(&spec, &r);
            r
        }
        _ => read_pool(kind, obj),
    }
}

/// What was read of one request's pools (`read_judged`), kept for the review: the
/// validation outside the decision lock, a second one under it, and the X2 record of the
/// admitted object read each object once between them. A reading depends on the
/// object and its kind alone, so it stays right while the view changes; it must not be kept
/// across requests.
#[derive(Debug, Default)]
pub struct Readings {
    object: OnceCell<PoolReading>,
    old: OnceCell<PoolReading>,
    projection: OnceCell<Projection>,
}

impl Readings {
    /// The new object's reading, when a validator took it.
    pub fn object(&self) -> Option<&PoolReading> {
        self.object.get()
    }

    /// What the index keeps of the new address or claim, when its validator read it.
    pub fn projection(&self) -> Option<&Projection> {
        self.projection.get()
    }

    /// As `projection`, taken out for the X2 record.
    pub fn take_projection(&mut self) -> Option<Projection> {
        self.projection.take()
    }
}

/// The rules of one kind. Every method is written out for every kind: a kind with nothing to
/// check on an operation says so, rather than inheriting an allow.
pub trait Validator: Sync {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict;
    fn update(&self, obj: &Value, old: &Value, call: &Call, ctx: &Ctx) -> Verdict;
    fn delete(&self, old: &Value, call: &Call, ctx: &Ctx) -> Verdict;
    /// The view-reading rules (`RuleId::reads_view`) that can refuse `op` under `options`. Until
    /// the view has synced, such a request gets a 503 (X3): a partial view would let a
    /// duplicate or an overlap through.
    fn view_denials(&self, op: Operation, options: &Options) -> Vec<RuleId>;
}

/// Checks the request carries the objects its operation needs, in a shape the rules can read.
/// A broken request is denied with a cause at the offending field, never allowed.
pub fn shape<'a>(req: &Request<'a>) -> Result<Review<'a>, FieldError> {
    let need = |v: Option<&'a Value>, field: &str| -> Result<&'a Value, FieldError> {
        match v {
            None => Err(FieldError::required(
                RuleId::REQ,
                field,
                format!("a {} request must carry {field}", req.operation.as_str()),
            )),
            Some(v) if v.is_object() => Ok(v),
            Some(_) => Err(FieldError::invalid(
                RuleId::REQ,
                field,
                "(not an object)",
                "must be a JSON object",
            )),
        }
    };
    Ok(match req.operation {
        Operation::Create => Review::Create(need(req.object, "object")?),
        Operation::Update => {
            let obj = need(req.object, "object")?;
            let old = need(req.old_object, "oldObject")?;
            Review::Update { obj, old }
        }
        Operation::Delete => Review::Delete(need(req.old_object, "oldObject")?),
        Operation::Connect => Review::Connect,
    })
}
