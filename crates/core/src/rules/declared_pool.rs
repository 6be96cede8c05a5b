//! Pools of a declared kind (docs/kinds.md): read by their declaration's expressions
//! (`model::declared`) and judged by the rules every pool kind shares (`rules::pool`): P10
//! against every pool of every kind in their address space, CP3, RI5 and SA2, P8 for the
//! addresses that reference them, P9 when the declaration asks for it (`protectDelete`), P11 and
//! the X5 ratchet. A declared kind has no rules of its own on the spec: what the expression
//! returns is its whole reading.
//!
//! An object the expression cannot read (it fails, exceeds a bound, returns what is not a list
//! of addresses) is not judged: the verdict says so as unavailable, naming the object and the
//! expression's problem, and never allows it unseen.

use std::marker::PhantomData;

use serde_json::Value;

use crate::field::Verdict;
use crate::model::{Meta, ObjKey, Operation};
use crate::rule_id::RuleId;
use crate::rules::pool::{delete_held_in_view, PoolKind, Pools};
use crate::rules::util::object_changed;
use crate::rules::{Call, Ctx, Options, Validator};

/// The pool rules' part for a declared kind.
pub(crate) struct Declared;

impl PoolKind for Declared {
    const KEEPS_HELD: RuleId = RuleId::P8;
    const DELETE: RuleId = RuleId::P9;
    const HOLDERS_IN_VIEW: bool = true;

    /// The expressions see the whole object, not only its spec.
    fn changed(obj: &Value, old: &Value) -> bool {
        object_changed(obj, old)
    }

    fn delete(old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        match crate::declared::declaration(call.kind) {
            Some(d) if d.protect_delete => delete_held_in_view(RuleId::P9, call, old, ctx),
            _ => Verdict::default(),
        }
    }
}

/// The validator of every declared pool kind.
pub(crate) struct DeclaredPools;

pub(crate) static DECLARED: DeclaredPools = DeclaredPools;

const POOLS: Pools<Declared> = Pools(PhantomData);

impl Validator for DeclaredPools {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        match not_judged(obj, call) {
            Some(v) => v,
            None => POOLS.create(obj, call, ctx),
        }
    }

    fn update(&self, obj: &Value, old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        // An update the rules pass without reading (P11, nothing changed) needs no reading.
        let deleting = Meta::read(obj).deleting || Meta::read(old).deleting;
        if deleting || !object_changed(obj, old) {
            return POOLS.update(obj, old, call, ctx);
        }
        match not_judged(obj, call) {
            Some(v) => v,
            None => POOLS.update(obj, old, call, ctx),
        }
    }

    fn delete(&self, old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        POOLS.delete(old, call, ctx)
    }

    fn view_denials(&self, op: Operation, options: &Options) -> Vec<RuleId> {
        POOLS.view_denials(op, options)
    }
}

/// Reads the new object by its declaration (kept for the review, `Call::read_declared`); when
/// the expression cannot read it, the verdict that says it was not judged.
fn not_judged(obj: &Value, call: &Call) -> Option<Verdict> {
    let problem = call.read_declared(obj).err()?;
    let meta = Meta::read(obj);
    let key = ObjKey::new(call.kind, call.namespace_of(obj), meta.name);
    Some(Verdict {
        unavailable: Some(format!("{key} not judged: {problem}")),
        ..Verdict::default()
    })
}
