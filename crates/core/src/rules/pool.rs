//! Pools: the admission every pool kind shares, and the in-cluster kinds'
//! (`InClusterIPPool`, `GlobalInClusterIPPool`). P1–P7 are `rules::in_cluster`'s, on the same
//! reading the index uses; P8–P11 are judged here. Metal3 and Spiderpool pools run the same code as
//! [`PoolKind`]s that name their own immutable fields, rule ids and record of holders.

use std::marker::PhantomData;

use serde_json::Value;

use crate::address::{AddrSet, Ip};
use crate::field::{DenyReason, FieldError, Verdict};
use crate::model::paths::{meta, prefix_pool};
use crate::model::pool::PoolReading;
use crate::model::prefix::allocation_length;
use crate::model::read_pool;
use crate::model::spider::carved_pair;
use crate::model::{read, Meta, ObjKey, Operation, PoolProj};
use crate::rule_id::RuleId;
use crate::rules::cluster::pool_holds_endpoint;
use crate::rules::holders::pool_holds_held;
use crate::rules::util::{
    allocatable_added_sets, in_scope, join_limited, join_shown, ratchet, spec_changed, MAX_LISTED,
};
use crate::rules::OverlapScope;
use crate::rules::{Call, Ctx, Options, Validator};

/// The start of P8's text, which MP4 and S5 share: the same complaint about other pool kinds.
const RELEASES_HELD: &str = "pool addresses do not contain allocated addresses";

/// P9's text (the in-cluster provider's own), followed by who holds the pool.
const HELD: &str =
    "Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed.";

/// What one pool kind adds to the rules every pool kind shares. The review's reading carries the
/// kind's own findings (P1–P7, PP1–PP6, MP1–MP3, S1–S4: `validator::read_judged`); [`validate`]
/// adds P10 and P11 and the X5 ratchet for all.
/// Unless a kind says otherwise, its holders are the address objects the view files under it.
pub(crate) trait PoolKind {
    /// The rule that keeps held addresses allocatable on a spec update (P8, MP4, S5).
    const KEEPS_HELD: RuleId;
    /// The rule that refuses the DELETE of a held pool (P9, MP4, S6).
    const DELETE: RuleId;
    /// Whether its holders are found in the view (address objects), so that `KEEPS_HELD` and
    /// `DELETE` deny from the view; false when the pool records them itself (Spiderpool).
    const HOLDERS_IN_VIEW: bool;

    /// The kind's own view-reading rules beyond P10 (S9), judged on CREATE and on UPDATE through
    /// [`PoolKind::against_view`] while overlap checks are on; none by default.
    const VIEW_RULES: &'static [RuleId] = &[];

    /// The kind's own view-reading checks (S9). `before` is the stored reading on an update within
    /// one address space (X5: judge what the update changes), None on a create or a move.
    fn against_view(_r: &PoolReading, _before: Option<&PoolReading>, _ctx: &Ctx, _v: &mut Verdict) {
    }

    /// Whether an update changed what the kind's rules read (X5: an unchanged object is never
    /// denied): the spec, for the built-in kinds.
    fn changed(obj: &Value, old: &Value) -> bool {
        spec_changed(obj, old)
    }

    /// Spec fields the kind never lets an update change (MP4, S5); none by default.
    fn immutable(_obj: &Value, _old: &Value, _out: &mut Vec<FieldError>) {}

    /// [`keeps_held`] under the kind's rule, with the kind's record of holders.
    fn keeps_held(
        r: &PoolReading,
        before: &PoolReading,
        obj: &Value,
        _old: &Value,
        ctx: &Ctx,
        v: &mut Verdict,
    ) {
        keeps_held(Self::KEEPS_HELD, r, before, obj, || held_in_view(r, ctx), v);
    }

    /// Delete protection under the kind's rule, with the kind's record of holders.
    fn delete(old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        delete_held_in_view(Self::DELETE, call, old, ctx)
    }
}

/// `InClusterIPPool` and `GlobalInClusterIPPool`: held by the IPAddresses referencing them.
pub(crate) struct InCluster;

impl PoolKind for InCluster {
    const KEEPS_HELD: RuleId = RuleId::P8;
    const DELETE: RuleId = RuleId::P9;
    const HOLDERS_IN_VIEW: bool = true;
}

/// The validator of a pool kind: the rules every pool kind shares, with `K`'s own part.
pub(crate) struct Pools<K>(pub(crate) PhantomData<K>);

pub(crate) static IN_CLUSTER: Pools<InCluster> = Pools(PhantomData);

/// `InClusterPrefixPool` and `GlobalInClusterPrefixPool`: held, like the in-cluster IP pools, by
/// the IPAddresses referencing them (each holding one sub-prefix at its network address), so
/// P8 and P9 apply as they are. The allocation length never changes (PP7): every sub-prefix
/// handed out has it, and the provider refuses the change too.
pub(crate) struct InClusterPrefix;

impl PoolKind for InClusterPrefix {
    const KEEPS_HELD: RuleId = RuleId::P8;
    const DELETE: RuleId = RuleId::P9;
    const HOLDERS_IN_VIEW: bool = true;

    fn immutable(obj: &Value, old: &Value, out: &mut Vec<FieldError>) {
        let (new_len, old_len) = (allocation_length(obj), allocation_length(old));
        if new_len != old_len {
            let shown = |v: Option<i64>, o: &Value| match v {
                Some(n) => Value::from(n),
                None => read::get(o, prefix_pool::ALLOCATION_PREFIX_LENGTH)
                    .cloned()
                    .unwrap_or(Value::Null),
            };
            out.push(FieldError::immutable(
                RuleId::PP7,
                prefix_pool::ALLOCATION_PREFIX_LENGTH,
                &shown(new_len, obj),
                &shown(old_len, old),
            ));
        }
    }
}

pub(crate) static IN_CLUSTER_PREFIX: Pools<InClusterPrefix> = Pools(PhantomData);

// === impl validate ===

/// Every pool kind's admission: CREATE is the kind's own findings and P10; UPDATE adds P11, X5, the
/// kind's immutable fields and held addresses; DELETE is the kind's delete protection.
impl<K: PoolKind + Sync> Validator for Pools<K> {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let r = call.read_object(obj);
        let mut v = Verdict {
            errors: r.errors.clone(),
            warnings: r.warnings.clone(),
            ..Verdict::default()
        };
        overlap(r, None, ctx, &mut v);
        pool_holds_endpoint(r, None, ctx, &mut v);
        pool_holds_held(r, None, ctx, &mut v);
        K::against_view(r, None, ctx, &mut v);
        v
    }

    fn update(&self, obj: &Value, old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        update::<K>(call, obj, old, ctx)
    }

    fn delete(&self, old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        K::delete(old, call, ctx)
    }

    fn view_denials(&self, op: Operation, options: &Options) -> Vec<RuleId> {
        let on = options.overlap_scope != OverlapScope::Off;
        let overlap = on
            .then_some(RuleId::P10)
            .into_iter()
            .chain(on.then_some(RuleId::CP3))
            .chain(on.then_some(RuleId::RI5))
            .chain(on.then_some(RuleId::SA2))
            .chain(K::VIEW_RULES.iter().copied().filter(|_| on));
        let held = |rule| K::HOLDERS_IN_VIEW.then_some(rule);
        match op {
            Operation::Create => overlap.collect(),
            Operation::Update => held(K::KEEPS_HELD).into_iter().chain(overlap).collect(),
            Operation::Delete => held(K::DELETE).into_iter().collect(),
            Operation::Connect => Vec::new(),
        }
    }
}

fn update<K: PoolKind>(call: &Call, obj: &Value, old: &Value, ctx: &Ctx) -> Verdict {
    let mut v = Verdict::default();
    let (meta, old_meta) = (Meta::read(obj), Meta::read(old));
    // P11: a pool on its way out (finalizers being removed) is never held up.
    if meta.deleting || old_meta.deleting {
        return v;
    }
    let changed = K::changed(obj, old);
    let space_changed = meta.address_space() != old_meta.address_space();
    if !changed && !space_changed {
        return v;
    }
    let r = call.read_object(obj);
    if !changed {
        // Only the address space moved: the whole pool meets new neighbours.
        overlap(r, None, ctx, &mut v);
        pool_holds_endpoint(r, None, ctx, &mut v);
        pool_holds_held(r, None, ctx, &mut v);
        K::against_view(r, None, ctx, &mut v);
        return v;
    }
    let before = call.read_old(old);
    K::immutable(obj, old, &mut v.errors);
    v.errors.extend(ratchet(r.errors.clone(), &before.errors));
    v.warnings.clone_from(&r.warnings);
    K::keeps_held(r, before, obj, old, ctx, &mut v);
    overlap(r, (!space_changed).then_some(before), ctx, &mut v);
    pool_holds_endpoint(r, (!space_changed).then_some(before), ctx, &mut v);
    pool_holds_held(r, (!space_changed).then_some(before), ctx, &mut v);
    K::against_view(r, (!space_changed).then_some(before), ctx, &mut v);
    v
}

/// P8, MP4 and S5: every address the pool's holders have stays allocatable, in P8's words, at
/// the field declaring the addresses; findings carry `rule`. `held` lists each held address with
/// a label for its holder, made only for those shown. Only addresses the update takes away count
/// (X5): one that was already outside the pool (a gateway handed out before ipam-guard was
/// installed) is the audit's to report, and a pool that only grows never asks for its holders.
pub(crate) fn keeps_held<I, F>(
    rule: RuleId,
    r: &PoolReading,
    before: &PoolReading,
    obj: &Value,
    held: impl FnOnce() -> I,
    v: &mut Verdict,
) where
    I: IntoIterator<Item = (Ip, F)>,
    F: FnOnce() -> String,
{
    let removed = before.proj.allocatable.difference(&r.proj.allocatable);
    if removed.is_empty() {
        return;
    }
    let mut total = 0;
    let mut shown = Vec::new();
    for (ip, label) in held() {
        if removed.contains(ip) {
            total += 1;
            if shown.len() < MAX_LISTED {
                shown.push(format!(
                    "{} {}",
                    label(),
                    held_text(shown_prefix(&r.proj), ip)
                ));
            }
        }
    }
    if total > 0 {
        let value = read::get(obj, r.declared_path)
            .cloned()
            .unwrap_or(Value::Null);
        v.deny(FieldError::invalid(
            rule,
            r.declared_path,
            value,
            format!("{RELEASES_HELD}: {}", join_shown(&shown, total)),
        ));
    }
}

/// What an address object holds of `pool`: the address, or for a prefix pool the sub-prefix
/// (`fd00:0:0:1::/64`) whose network address it carries.
fn held_text(prefix: Option<u8>, ip: Ip) -> String {
    match prefix {
        Some(len) => format!("{ip}/{len}"),
        None => ip.to_string(),
    }
}

/// The prefix `pool`'s held addresses are shown with: a prefix pool's own, none for another.
fn shown_prefix(pool: &PoolProj) -> Option<u8> {
    pool.prefix.filter(|_| pool.key.kind.is_prefix_pool())
}

/// The address objects the view files under the pool, for [`keeps_held`]. An address that does
/// not parse holds nothing (the index never placed it).
fn held_in_view<'a>(
    r: &PoolReading,
    ctx: &Ctx<'a>,
) -> impl Iterator<Item = (Ip, impl FnOnce() -> String + 'a)> {
    ctx.index
        .addresses_for_pool(&r.proj.key)
        .into_iter()
        .filter_map(|a| a.ip.map(|ip| (ip, move || a.key.ns_name())))
}

/// P10: the allocatable set meets no other pool's in the same address space. On an update within
/// one space, `before` limits the question to the addresses the update adds (X5): an overlap the
/// pool already had is the audit's to report, not this update's fault.
fn overlap(r: &PoolReading, before: Option<&PoolReading>, ctx: &Ctx, v: &mut Verdict) {
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off {
        return;
    }
    // One probe per family the pool hands out of (a declared pool may hand out both).
    let probes = allocatable_added_sets(r, before);
    let own = &r.proj.key;
    let others: Vec<(&ObjKey, AddrSet)> = probes
        .iter()
        .filter(|probe| !probe.is_empty())
        .flat_map(|probe| ctx.index.overlapping_pools(&r.proj.space, probe))
        .filter(|(p, _)| p.key != *own && in_scope(scope, own, &p.key))
        .filter(|(p, _)| !carved_pair(&r.proj, p))
        .map(|(p, shared)| (&p.key, shared))
        .collect();
    if others.is_empty() {
        return;
    }
    // The cause sits on each entry that overlaps and names every pool it meets there.
    for e in &r.entries {
        let parts: Vec<String> = others
            .iter()
            .filter_map(|(key, shared)| {
                let here = shared.intersection(&e.set);
                (!here.is_empty()).then(|| format!("{key} ({})", here.display_limited(MAX_LISTED)))
            })
            .collect();
        if !parts.is_empty() {
            v.deny(FieldError::invalid(
                RuleId::P10,
                e.path.clone(),
                e.text.as_str(),
                format!("overlaps {}", join_limited(&parts)),
            ));
        }
    }
}

/// P9, and MP4 for Metal3 pools: a pool that address objects in the view still reference cannot
/// be deleted. The finding carries `rule`.
pub(crate) fn delete_held_in_view(rule: RuleId, call: &Call, old: &Value, ctx: &Ctx) -> Verdict {
    let meta = Meta::read(old);
    refuse_delete(rule, &meta, || {
        let namespace = call.namespace.or(meta.namespace);
        let name = if call.name.is_empty() {
            meta.name
        } else {
            call.name
        };
        let key = ObjKey::new(call.kind, namespace, name);
        let holders = ctx.index.addresses_for_pool(&key);
        if holders.is_empty() {
            return None;
        }
        // Only a prefix pool shows its prefix beside each holder: another pool is not read (an
        // in-cluster pool's reading was half of what its refused delete cost).
        let prefix = call
            .kind
            .is_prefix_pool()
            .then(|| read_pool(call.kind, old).proj.prefix)
            .flatten();
        let shown: Vec<String> = holders
            .iter()
            .take(MAX_LISTED)
            .map(|a| match a.ip {
                Some(ip) => format!("{} ({})", a.key.ns_name(), held_text(prefix, ip)),
                None => a.key.ns_name(),
            })
            .collect();
        Some(format!(
            "{HELD} Held by: {}",
            join_shown(&shown, holders.len())
        ))
    })
}

/// P9, MP4 and S6: the delete of a pool that `held` finds held is refused (403 Forbidden)
/// at `metadata.name`, with `held`'s text saying who holds it. A pool carrying a skip annotation
/// is let go without asking.
pub(crate) fn refuse_delete(
    rule: RuleId,
    meta: &Meta,
    held: impl FnOnce() -> Option<String>,
) -> Verdict {
    let mut v = Verdict::default();
    if meta.skips_delete_check() {
        return v;
    }
    if let Some(detail) = held() {
        v.reason = DenyReason::Forbidden;
        v.deny(FieldError::forbidden(rule, meta::NAME, detail));
    }
    v
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "prefix_tests.rs"]
mod prefix_tests;
