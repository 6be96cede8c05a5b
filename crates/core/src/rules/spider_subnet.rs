//! Spiderpool `SpiderSubnet`: the set SpiderIPPools are carved from, judged by the SpiderIPPool's
//! spec rules (`rules::spider_spec`, S1–S4, S7) and S5, and here by S9–S12: how pools and
//! subnets share `spec.subnet`. A SpiderSubnet holds nothing itself: pods draw from the
//! SpiderIPPools carved from it (those in its address space declaring its very `spec.subnet`,
//! `model::spider::carved`), and S11 and S12 protect what those pools have. The SpiderIPPool's
//! side of S9 and S11 is here too, called from `rules::spider`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::address::{AddrSet, Cidr};
use crate::field::{FieldError, Verdict};
use crate::kinds::Kind;
use crate::model::paths::spider;
use crate::model::pool::PoolReading;
use crate::model::spider::same_subnet;
use crate::model::{read_pool, Meta, ObjKey, PoolProj};
use crate::rule_id::RuleId;
use crate::rules::pool::{refuse_delete, PoolKind, Pools};
use crate::rules::util::{
    allocatable_added, immutable_fields, join_limited, join_shown, MAX_LISTED,
};
use crate::rules::OverlapScope;
use crate::rules::{Call, Ctx};

/// S5: Spiderpool keys everything it hands out by subnet and family, in pools and subnets alike.
pub(crate) fn s5_immutable(obj: &Value, old: &Value, out: &mut Vec<FieldError>) {
    immutable_fields(
        RuleId::S5,
        &[spider::SUBNET, spider::IP_VERSION],
        obj,
        old,
        out,
    );
}

/// `SpiderSubnet`: the set SpiderIPPools are carved from. S5 keeps its subnet and ipVersion;
/// S9 and S10 keep subnets apart; S11 keeps it covering its pools; S12 keeps it while they hold
/// addresses. Its holders are the carved pools the view has.
pub(crate) struct SpiderSubnet;

pub(crate) static SUBNET: Pools<SpiderSubnet> = Pools(std::marker::PhantomData);

impl PoolKind for SpiderSubnet {
    const KEEPS_HELD: RuleId = RuleId::S11;
    const DELETE: RuleId = RuleId::S12;
    const HOLDERS_IN_VIEW: bool = true;

    const VIEW_RULES: &'static [RuleId] = &[RuleId::S9, RuleId::S10, RuleId::S11];

    /// S9 against SpiderIPPools, S10 against other SpiderSubnets; on a create (or a move to
    /// another space) S11: every pool carved from it here lies inside it.
    fn against_view(r: &PoolReading, before: Option<&PoolReading>, ctx: &Ctx, v: &mut Verdict) {
        if ctx.options.overlap_scope == OverlapScope::Off {
            return;
        }
        subnet_clashes(&r.proj, before.map(|b| &b.proj), ctx, v);
        if before.is_none() {
            covers_carved(&r.proj, ctx, v, |pool| pool.difference(&r.proj.allocatable));
        }
    }

    /// S5, as for a SpiderIPPool: Spiderpool refuses the change too.
    fn immutable(obj: &Value, old: &Value, out: &mut Vec<FieldError>) {
        s5_immutable(obj, old, out);
    }

    /// S11: an update takes from the subnet no address a carved pool has (X5: only what the
    /// update takes away is asked about).
    fn keeps_held(
        r: &PoolReading,
        before: &PoolReading,
        _obj: &Value,
        _old: &Value,
        ctx: &Ctx,
        v: &mut Verdict,
    ) {
        let removed = before.proj.allocatable.difference(&r.proj.allocatable);
        if !removed.is_empty() {
            covers_carved(&r.proj, ctx, v, |pool| pool.intersection(&removed));
        }
    }

    /// S12: a subnet whose carved pools hold addresses (their `status.allocatedIPs`, as S6
    /// reads them) is not deleted. P9's skip annotations apply, as for every pool.
    fn delete(old: &Value, _call: &Call, ctx: &Ctx) -> Verdict {
        refuse_delete(Self::DELETE, &Meta::read(old), || {
            let subnet = read_pool(Kind::SpiderSubnet, old).proj;
            let held: Vec<(ObjKey, AddrSet)> = carved_pools(&subnet, ctx)
                .into_iter()
                .filter(|(_, p)| !p.recorded.is_empty())
                .map(|(k, p)| (k, p.recorded.clone()))
                .collect();
            if held.is_empty() {
                return None;
            }
            let shown: Vec<String> = held
                .iter()
                .map(|(k, set)| format!("{k} ({})", set.display_limited(MAX_LISTED)))
                .collect();
            Some(format!(
                "SpiderIPPools carved from this SpiderSubnet hold addresses. Cannot delete the SpiderSubnet until they have been released. Held by: {}",
                join_limited(&shown)
            ))
        })
    }
}

/// The SpiderIPPools carved from `subnet` that the view holds, by key (each pool once; its
/// versions admitted but not yet stored, X2, are read as the first one met).
fn carved_pools<'a>(subnet: &PoolProj, ctx: &Ctx<'a>) -> BTreeMap<ObjKey, &'a PoolProj> {
    let mut out = BTreeMap::new();
    if subnet.declared_subnet.is_none() {
        return out;
    }
    for p in ctx.index.pools_and_pending() {
        if crate::model::spider::carved(p, subnet) {
            out.entry(p.key.clone()).or_insert(p);
        }
    }
    out
}

/// S11, the subnet's side: every address of its carved pools lies in its allocatable set.
/// `outside` gives what of a pool's allocatable set the write leaves out: on a create all that
/// is not in the subnet, on an update what the update takes away (X5). The cause names each
/// pool and the addresses it would lose.
fn covers_carved(
    subnet: &PoolProj,
    ctx: &Ctx,
    v: &mut Verdict,
    outside: impl Fn(&AddrSet) -> AddrSet,
) {
    let lost: Vec<String> = carved_pools(subnet, ctx)
        .into_iter()
        .filter_map(|(key, p)| {
            let outside = outside(&p.allocatable);
            (!outside.is_empty())
                .then(|| format!("{} of {key}", outside.display_limited(MAX_LISTED)))
        })
        .collect();
    if lost.is_empty() {
        return;
    }
    v.deny(FieldError::forbidden(
        RuleId::S11,
        spider::IPS,
        format!(
            "does not cover {}, carved from this SpiderSubnet (the same spec.subnet): a SpiderSubnet's spec.ips, less its spec.excludeIPs and gateway, keep every address of its SpiderIPPools",
            join_limited(&lost)
        ),
    ));
}

/// S11, the pool's side: a SpiderIPPool that declares the subnet of a SpiderSubnet of its address
/// space is carved from it, and what it gains lies in the subnet's allocatable set. The cause
/// sits on each entry holding addresses outside it.
pub(crate) fn carved_inside(
    r: &PoolReading,
    before: Option<&PoolReading>,
    ctx: &Ctx,
    v: &mut Verdict,
) {
    if r.proj.declared_subnet.is_none() {
        return;
    }
    let added = allocatable_added(r, before);
    if added.is_empty() {
        return;
    }
    let subnets = ctx
        .index
        .pools_and_pending()
        .filter(|s| crate::model::spider::carved(&r.proj, s));
    let mut outside: Vec<(&ObjKey, AddrSet)> = Vec::new();
    for s in subnets {
        let off = added.difference(&s.allocatable);
        if !off.is_empty() && !outside.iter().any(|(k, _)| **k == s.key) {
            outside.push((&s.key, off));
        }
    }
    for e in &r.entries {
        let parts: Vec<String> = outside
            .iter()
            .filter_map(|(key, off)| {
                let here = off.intersection(&e.set);
                (!here.is_empty())
                    .then(|| format!("{} outside {key}", here.display_limited(MAX_LISTED)))
            })
            .collect();
        if !parts.is_empty() {
            v.deny(FieldError::invalid(
                RuleId::S11,
                e.path.clone(),
                e.text.as_str(),
                format!(
                    "{}: a SpiderIPPool declaring the subnet of a SpiderSubnet is carved from it and takes only addresses of its spec.ips, less its spec.excludeIPs and gateway",
                    join_limited(&parts)
                ),
            ));
        }
    }
}

/// S9 and S10: Spiderpool groups pools by their subnet (its `ipam.spidernet.io/ippool-cidr`
/// label) and carves them from the SpiderSubnet of that subnet, so two subnets that overlap
/// must be the very same subnet (S9: a /25 inside another pool's or subnet's /24 is refused
/// whatever their `ips`), and two SpiderSubnets never overlap, identical ones included (S10).
/// Within one address space, like P10.
pub(crate) fn subnet_clashes(
    own: &PoolProj,
    before: Option<&PoolProj>,
    ctx: &Ctx,
    v: &mut Verdict,
) {
    let Some(mine) = own.declared_subnet else {
        return;
    };
    // X5: an update that keeps its subnet keeps the neighbours it already had.
    if before.is_some_and(|b| b.declared_subnet == Some(mine)) {
        return;
    }
    let own_kind = own.key.kind;
    let mut s9: Vec<(&ObjKey, Cidr)> = Vec::new();
    let mut s10: Vec<(&ObjKey, Cidr)> = Vec::new();
    for p in ctx.index.pools_and_pending() {
        if !p.key.kind.is_spider() || p.key == own.key || *p.space != *own.space {
            continue;
        }
        let Some(c) = p.declared_subnet else {
            continue;
        };
        let meets = c.family() == mine.family()
            && c.network.start <= mine.network.end
            && mine.network.start <= c.network.end;
        if !meets {
            continue;
        }
        if own_kind == Kind::SpiderSubnet && p.key.kind == Kind::SpiderSubnet {
            s10.push((&p.key, c));
        } else if !same_subnet(&c, &mine) {
            s9.push((&p.key, c));
        }
    }
    let written = mine.to_string();
    for (rule, mut clashes, why) in [
        (
            RuleId::S9,
            s9,
            "SpiderIPPools and SpiderSubnets whose subnets overlap must declare the same subnet",
        ),
        (
            RuleId::S10,
            s10,
            "SpiderSubnets never overlap, identical ones included",
        ),
    ] {
        if clashes.is_empty() {
            continue;
        }
        clashes.sort_by(|a, b| a.0.cmp(b.0));
        clashes.dedup_by(|a, b| a.0 == b.0);
        let total = clashes.len();
        let shown: Vec<String> = clashes
            .iter()
            .take(MAX_LISTED)
            .map(|(key, c)| format!("{key} ({c})"))
            .collect();
        v.deny(FieldError::invalid(
            rule,
            spider::SUBNET,
            written.as_str(),
            format!(
                "overlaps the subnet of {}; {why}",
                join_shown(&shown, total)
            ),
        ));
    }
}

/// S9, S10 and S11 of a stored SpiderIPPool or SpiderSubnet, for the periodic audit
/// (`rules::stored`): the admission code on the projection. A pool's own S11 cause sits on
/// entries the projection does not keep, so the subnet's S11 names the pools reaching outside
/// it.
pub(crate) fn stored_findings(pool: &PoolProj, ctx: &Ctx, v: &mut Verdict) {
    subnet_clashes(pool, None, ctx, v);
    if pool.key.kind == Kind::SpiderSubnet {
        covers_carved(pool, ctx, v, |carved| carved.difference(&pool.allocatable));
    }
}

#[cfg(test)]
#[path = "spider_subnet_tests.rs"]
mod tests;
