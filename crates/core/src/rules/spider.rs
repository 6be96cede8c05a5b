//! Spiderpool `SpiderIPPool` and `SpiderSubnet`: S1–S4, S7 and S8 judge the spec on its own
//! (`rules::spider_spec`, on the review's reading; a SpiderSubnet's spec is a SpiderIPPool's
//! without podAffinity, so the same rules judge it); S5 and S6 are the SpiderIPPool's part of the
//! rules every pool kind shares (`rules::pool`, which adds P10 and P11); S9–S12 read the view:
//! how pools and subnets share `spec.subnet`.
//!
//! Who holds an address of a SpiderIPPool is recorded by Spiderpool itself in the pool's
//! `status.allocatedIPs`, not in objects the index watches, so S5 and S6 read the status of the
//! stored object (a main-resource update cannot change status, so old and new carry the same).
//! A SpiderSubnet holds nothing itself: pods draw from the SpiderIPPools carved from it (those in
//! its address space declaring its very `spec.subnet`, `model::spider::carved`), and S11 and S12
//! protect what those pools have.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::address::{AddrSet, Cidr};
use crate::field::{FieldError, Verdict};
use crate::kinds::Kind;
use crate::model::paths::spider;
use crate::model::pool::PoolReading;
use crate::model::spider::{allocation, same_subnet, Allocation};
use crate::model::{read_pool, Meta, ObjKey, PoolProj};
use crate::rule_id::RuleId;
use crate::rules::pool::{keeps_held, refuse_delete, PoolKind, Pools};
use crate::rules::util::{
    allocatable_added, immutable_fields, join_limited, join_shown, MAX_LISTED,
};
use crate::rules::OverlapScope;
use crate::rules::{Call, Ctx};

/// S6's text, in P9's words.
const HELD: &str = "Pool has IPs allocated. Cannot delete Pool until all IPs have been released.";

/// `SpiderIPPool`: S5 and S6 on top of the shared pool rules; held by what its status records.
pub(crate) struct SpiderIPPool;

pub(crate) static POOL: Pools<SpiderIPPool> = Pools(std::marker::PhantomData);

impl PoolKind for SpiderIPPool {
    const KEEPS_HELD: RuleId = RuleId::S5;
    const DELETE: RuleId = RuleId::S6;
    /// Its status records the holders: S5 and S6 read the stored object, not the view.
    const HOLDERS_IN_VIEW: bool = false;

    const VIEW_RULES: &'static [RuleId] = &[RuleId::S9, RuleId::S11];

    /// S9 against SpiderIPPools and SpiderSubnets; S11: a pool carved from a SpiderSubnet gains
    /// only addresses of the subnet.
    fn against_view(r: &PoolReading, before: Option<&PoolReading>, ctx: &Ctx, v: &mut Verdict) {
        if ctx.options.overlap_scope == OverlapScope::Off {
            return;
        }
        subnet_clashes(&r.proj, before.map(|b| &b.proj), ctx, v);
        carved_inside(r, before, ctx, v);
    }

    /// S5: Spiderpool keys everything it hands out by subnet and family.
    fn immutable(obj: &Value, old: &Value, out: &mut Vec<FieldError>) {
        immutable_fields(
            RuleId::S5,
            &[spider::SUBNET, spider::IP_VERSION],
            obj,
            old,
            out,
        );
    }

    /// S5: what pods hold stays allocatable.
    fn keeps_held(
        r: &PoolReading,
        before: &PoolReading,
        obj: &Value,
        old: &Value,
        _ctx: &Ctx,
        v: &mut Verdict,
    ) {
        let held = || {
            allocation(old).ips.into_iter().filter_map(|a| {
                let pod = a.pod;
                a.ip.map(|ip| (ip, || pod.unwrap_or_else(|| "(unknown pod)".to_string())))
            })
        };
        keeps_held(Self::KEEPS_HELD, r, before, obj, held, v);
    }

    /// S6: a pool whose status says it hands out addresses cannot be deleted. The skip
    /// annotations of P9 apply too: they are the documented escape hatch for any pool.
    fn delete(old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        refuse_delete(Self::DELETE, &Meta::read(old), || {
            let a = allocation(old);
            a.held().then(|| format!("{HELD} {}", holders(&a)))
        })
    }
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
        SpiderIPPool::immutable(obj, old, out);
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
fn carved_inside(r: &PoolReading, before: Option<&PoolReading>, ctx: &Ctx, v: &mut Verdict) {
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
fn subnet_clashes(own: &PoolProj, before: Option<&PoolProj>, ctx: &Ctx, v: &mut Verdict) {
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

/// Who holds the pool, as far as its status tells.
fn holders(a: &Allocation) -> String {
    if a.unreadable {
        return "status.allocatedIPs cannot be read, so the pool counts as held.".to_string();
    }
    if a.ips.is_empty() {
        return format!(
            "status.allocatedIPCount is {}.",
            a.count.unwrap_or_default()
        );
    }
    let shown: Vec<String> = a
        .ips
        .iter()
        .take(MAX_LISTED)
        .map(|ip| ip.holder_text())
        .collect();
    format!("Held by: {}", join_shown(&shown, a.ips.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{DenyReason, ErrorType};
    use crate::index::Index;
    use crate::kinds::Kind;
    use crate::model::Operation;
    use crate::rules::test_support::{
        self as ts, eco_object as object, eco_old_object as old_object, errors as texts, index,
    };
    use crate::rules::Options;
    use serde_json::json;

    fn create(obj: &Value, ix: &Index) -> Verdict {
        ts::create(Kind::SpiderIPPool, obj, ix)
    }

    fn update(obj: &Value, old: &Value, ix: &Index) -> Verdict {
        ts::update(Kind::SpiderIPPool, obj, old, ix)
    }

    fn delete(old: &Value) -> Verdict {
        ts::delete(Kind::SpiderIPPool, old, &Index::new())
    }

    #[test]
    fn captures_pass() {
        let ix = Index::new();
        for f in ["spiderippool-create.json", "spiderippool-create-ipv6.json"] {
            assert_eq!(create(&object(f), &ix), Verdict::default(), "{f}");
        }
        for f in [
            "spiderippool-update-label.json",
            "spiderippool-update-spec.json",
        ] {
            let v = update(&object(f), &old_object(f), &ix);
            assert!(v.allowed(), "{f}: {:?}", texts(&v));
        }
    }

    #[test]
    fn s1_unformatted_subnet_is_denied() {
        let mut obj = object("spiderippool-create.json");
        obj["spec"]["subnet"] = json!("172.18.41.7/24");
        let v = create(&obj, &Index::new());
        assert_eq!(
            texts(&v),
            [
                r#"spec.subnet: Invalid value: "172.18.41.7/24": unformatted subnet 172.18.41.7/24, please change it to 172.18.41.0/24"#
            ]
        );
    }

    #[test]
    fn s2_ip_version_of_the_other_family_is_denied() {
        let mut obj = object("spiderippool-create-ipv6.json");
        obj["spec"]["ipVersion"] = json!(4);
        assert_eq!(create(&obj, &Index::new()).rules(), ["S2"]);
    }

    #[test]
    fn s3_ip_outside_the_subnet_is_denied() {
        let mut obj = object("spiderippool-create.json");
        obj["spec"]["ips"][1] = json!("172.18.42.60");
        obj["spec"]["excludeIPs"][0] = json!("172.18.41.45-172.18.41.40");
        let v = create(&obj, &Index::new());
        assert_eq!(
            texts(&v),
            [
                r#"spec.ips[1]: Invalid value: "172.18.42.60": must be inside spec.subnet 172.18.41.0/24"#,
                r#"spec.excludeIPs[0]: Invalid value: "172.18.41.45-172.18.41.40": range start 172.18.41.45 is after range end 172.18.41.40"#,
            ]
        );
    }

    #[test]
    fn s4_allocatable_gateway_is_denied() {
        let mut obj = object("spiderippool-create.json");
        obj["spec"]["gateway"] = json!("172.18.41.41");
        let v = create(&obj, &Index::new());
        assert_eq!(v.rules(), ["S4"]);
        // Excluded, the same gateway is fine.
        obj["spec"]["excludeIPs"] = json!(["172.18.41.41"]);
        assert!(create(&obj, &Index::new()).allowed());
    }

    #[test]
    fn s5_subnet_and_ip_version_are_immutable() {
        let old = old_object("spiderippool-update-spec.json");
        let mut obj = object("spiderippool-update-spec.json");
        obj["spec"]["subnet"] = json!("172.18.0.0/16");
        obj["spec"]["ipVersion"] = json!(6);
        let v = update(&obj, &old, &Index::new());
        let texts = texts(&v);
        assert_eq!(
            texts[..2],
            [
                r#"spec.subnet: Invalid value: "172.18.0.0/16": field is immutable (was "172.18.41.0/24")"#,
                "spec.ipVersion: Invalid value: 6: field is immutable (was 4)",
            ]
        );
    }

    #[test]
    fn s5_allocated_ips_in_the_status_string_stay_allocatable() {
        let old = old_object("spiderippool-update-spec.json");
        let mut obj = object("spiderippool-update-spec.json");
        obj["spec"]["excludeIPs"] = json!(["172.18.41.40"]);
        let v = update(&obj, &old, &Index::new());
        assert_eq!(
            texts(&v),
            [
                r#"spec.ips: Invalid value: ["172.18.41.40-172.18.41.55","172.18.41.60"]: pool addresses do not contain allocated addresses: default/web-0 172.18.41.40"#
            ]
        );
        assert_eq!(v.errors[0].rule, "S5");
    }

    #[test]
    fn s6_delete_denied_while_allocated_ips_string_has_keys() {
        let v = delete(&old_object("spiderippool-delete.json"));
        assert_eq!(v.reason, DenyReason::Forbidden);
        assert_eq!(v.errors[0].kind, ErrorType::Forbidden);
        assert_eq!(
            texts(&v),
            ["metadata.name: Forbidden: Pool has IPs allocated. Cannot delete Pool until all IPs have been released. Held by: default/web-0 (172.18.41.40)"]
        );
    }

    #[test]
    fn s6_delete_denied_on_count_or_unreadable_allocations() {
        let mut old = old_object("spiderippool-delete.json");
        old["status"] = json!({"allocatedIPCount": 2, "allocatedIPs": "{}"});
        assert!(texts(&delete(&old))[0].ends_with("status.allocatedIPCount is 2."));
        old["status"] = json!({"allocatedIPCount": 0, "allocatedIPs": "{\"172.18.41.40\":"});
        assert!(texts(&delete(&old))[0].ends_with("cannot be read, so the pool counts as held."));
        old["status"] = json!({"allocatedIPCount": 0, "allocatedIPs": "{}"});
        assert!(delete(&old).allowed());
        old["status"] = Value::Null;
        assert!(delete(&old).allowed());
    }

    #[test]
    fn p11_deleting_spiderippool_passes_every_update() {
        let old = old_object("spiderippool-update-spec.json");
        let mut obj = object("spiderippool-update-spec.json");
        obj["spec"]["subnet"] = json!("10.0.0.0/8");
        obj["metadata"]["deletionTimestamp"] = json!("2026-11-21T23:22:32Z");
        assert!(update(&obj, &old, &Index::new()).allowed());
    }

    #[test]
    fn x5_unchanged_spiderippool_spec_is_never_denied() {
        let mut old = old_object("spiderippool-update-label.json");
        old["spec"]["gateway"] = json!("172.18.41.41");
        let mut obj = old.clone();
        obj["metadata"]["labels"]["x"] = json!("y");
        assert_eq!(update(&obj, &old, &Index::new()), Verdict::default());
    }

    #[test]
    fn p10_spiderippool_overlaps_other_kinds_only_in_its_space() {
        let incl = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
            "metadata": {"name": "shared"},
            "spec": {"addresses": ["172.18.41.48-172.18.41.70"], "prefix": 24}});
        let ix = index(&[(Kind::GlobalInClusterIPPool, &incl)]);
        let v = create(&object("spiderippool-create.json"), &ix);
        assert_eq!(
            texts(&v),
            [
                r#"spec.ips[0]: Invalid value: "172.18.41.40-172.18.41.50": overlaps GlobalInClusterIPPool shared (172.18.41.48-172.18.41.50)"#,
                r#"spec.ips[1]: Invalid value: "172.18.41.60": overlaps GlobalInClusterIPPool shared (172.18.41.60)"#,
            ]
        );
        let mut other = incl.clone();
        other["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
        let ix = index(&[(Kind::GlobalInClusterIPPool, &other)]);
        assert!(create(&object("spiderippool-create.json"), &ix).allowed());
        // A spec update is judged on the addresses it adds.
        let old = old_object("spiderippool-update-spec.json");
        let obj = object("spiderippool-update-spec.json");
        let narrow = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
            "metadata": {"name": "shared"},
            "spec": {"addresses": ["172.18.41.52"], "prefix": 24}});
        let ix = index(&[(Kind::GlobalInClusterIPPool, &narrow)]);
        assert_eq!(update(&obj, &old, &ix).rules(), ["P10"]);
    }

    // === S7: routes (Spiderpool's own webhook cases, in our words) ===

    /// A pool as Spiderpool's webhook tests write it: 172.18.40.0/24, a few IPs.
    fn spider(spec: Value) -> Value {
        let mut base = json!({"subnet": "172.18.40.0/24", "ipVersion": 4,
            "ips": ["172.18.40.2-172.18.40.3", "172.18.40.10"]});
        for (k, v) in spec.as_object().unwrap() {
            base[k] = v.clone();
        }
        json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
            "metadata": {"name": "ippool-1"}, "spec": base})
    }

    #[test]
    fn s7_routes_table_on_create_and_update() {
        let r = |dst: &str, gw: &str| json!({"dst": dst, "gw": gw});
        let cases: &[(&str, Value, Option<&str>)] = &[
            (
                "default route",
                json!([r("0.0.0.0/0", "172.18.40.1")]),
                Some(
                    r#"spec.routes[0].dst: Invalid value: "0.0.0.0/0": is a default route: set spec.gateway instead"#,
                ),
            ),
            (
                "same dst twice",
                json!([
                    r("192.168.40.0/24", "172.18.40.1"),
                    r("192.168.40.0/24", "172.18.40.2")
                ]),
                Some(
                    r#"spec.routes[1].dst: Duplicate value: "192.168.40.0/24": spec.routes[0] already routes 192.168.40.0/24"#,
                ),
            ),
            (
                "dst not a CIDR",
                json!([r("invalid CIDR", "172.18.40.1")]),
                Some(r#"spec.routes[0].dst: Invalid value: "invalid CIDR": "#),
            ),
            (
                "dst of the other family",
                json!([r("fd00:40::/120", "172.18.40.1")]),
                Some(
                    r#"spec.routes[0].dst: Invalid value: "fd00:40::/120": IP family does not match spec.subnet 172.18.40.0/24"#,
                ),
            ),
            (
                "gw not an IP",
                json!([r("192.168.40.0/24", "invalid IP")]),
                Some(r#"spec.routes[0].gw: Invalid value: "invalid IP": "#),
            ),
            (
                "gw outside the subnet",
                json!([r("192.168.40.0/24", "172.18.41.1")]),
                Some(
                    r#"spec.routes[0].gw: Invalid value: "172.18.41.1": must be inside spec.subnet 172.18.40.0/24"#,
                ),
            ),
            (
                "a route that is a number, shown as one",
                json!([5]),
                Some("spec.routes[0]: Invalid value: 5: must be an object"),
            ),
            (
                "a route that is a string, quoted once",
                json!(["192.168.40.0/24"]),
                Some(r#"spec.routes[0]: Invalid value: "192.168.40.0/24": must be an object"#),
            ),
            (
                "a valid route",
                json!([r("192.168.40.0/24", "172.18.40.40")]),
                None,
            ),
        ];
        for (what, routes, want) in cases {
            let obj = spider(json!({"routes": routes}));
            let old = spider(json!({}));
            for v in [
                create(&obj, &Index::new()),
                update(&obj, &old, &Index::new()),
            ] {
                match want {
                    Some(want) => {
                        let t = texts(&v);
                        assert_eq!(t.len(), 1, "{what}: {t:?}");
                        assert!(t[0].starts_with(want), "{what}: {t:?}");
                        assert_eq!(v.rules(), ["S7"], "{what}");
                    }
                    None => assert!(v.allowed(), "{what}: {:?}", texts(&v)),
                }
            }
        }
        // IPv6: a default route is `::/0`; a gw inside the subnet passes.
        let v6 = |routes: Value| {
            let mut o = spider(json!({"subnet": "abcd:1234::/120", "ipVersion": 6,
                "ips": ["abcd:1234::2-abcd:1234::3"], "routes": routes}));
            o["spec"]["gateway"] = json!("abcd:1234::1");
            o
        };
        assert_eq!(
            create(&v6(json!([r("::/0", "abcd:1234::1")])), &Index::new()).rules(),
            ["S7"]
        );
        assert!(create(
            &v6(json!([r("fd00:40::/120", "abcd:1234::28")])),
            &Index::new()
        )
        .allowed());
    }

    #[test]
    fn x5_s7_unchanged_routes_are_never_denied() {
        let bad = spider(json!({"routes": [{"dst": "0.0.0.0/0", "gw": "172.18.40.1"}]}));
        let mut relabelled = bad.clone();
        relabelled["metadata"]["labels"] = json!({"team": "a"});
        assert!(update(&relabelled, &bad, &Index::new()).allowed());
        // A spec change elsewhere leaves the old finding to the audit.
        let mut grown = bad.clone();
        grown["spec"]["ips"] = json!(["172.18.40.2-172.18.40.5", "172.18.40.10"]);
        assert!(update(&grown, &bad, &Index::new()).allowed());
    }

    // === S8: podAffinity ===

    #[test]
    fn s8_pod_affinity_table_on_create_and_update() {
        let cases: &[(&str, Value, Option<&str>)] = &[
            ("label value starting with a dot", json!({"matchLabels": {"key": ".starts.with.dot"}}),
                Some(r#"spec.podAffinity.matchLabels: Invalid value: ".starts.with.dot": a valid label must be"#)),
            ("empty selector", json!({"matchLabels": {}, "matchExpressions": []}),
                Some("spec.podAffinity: Invalid value: {\"matchExpressions\":[],\"matchLabels\":{}}: an empty selector")),
            ("no fields at all", json!({}),
                Some("spec.podAffinity: Invalid value: {}: an empty selector")),
            ("bad key", json!({"matchLabels": {"a/b/c": "x"}}),
                Some(r#"spec.podAffinity.matchLabels: Invalid value: "a/b/c": a valid label key"#)),
            ("In without values", json!({"matchExpressions": [{"key": "app", "operator": "In"}]}),
                Some("spec.podAffinity.matchExpressions[0].values: Required value")),
            ("Exists with values", json!({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]}),
                Some("spec.podAffinity.matchExpressions[0].values: Forbidden")),
            ("unknown operator", json!({"matchExpressions": [{"key": "app", "operator": "Near", "values": ["a"]}]}),
                Some(r#"spec.podAffinity.matchExpressions[0].operator: Invalid value: "Near""#)),
            ("bad value in an expression", json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["-x"]}]}),
                Some(r#"spec.podAffinity.matchExpressions[0].values[0]: Invalid value: "-x""#)),
            ("matchLabels not a map", json!({"matchLabels": ["a"], "matchExpressions": [{"key": "app", "operator": "Exists"}]}),
                Some(r#"spec.podAffinity.matchLabels: Invalid value: "[\"a\"]": must be an object"#)),
            ("an expression that is a number", json!({"matchExpressions": [7]}),
                Some("spec.podAffinity.matchExpressions[0]: Invalid value: 7: must be an object")),
            ("matchExpressions not a list", json!({"matchLabels": {"key": "value"}, "matchExpressions": "app"}),
                Some(r#"spec.podAffinity.matchExpressions: Invalid value: "app": must be a list"#)),
            ("a valid selector", json!({"matchLabels": {"key": "value"}}), None),
            ("a valid expression", json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a", "b"]}]}), None),
        ];
        for (what, affinity, want) in cases {
            let obj = spider(json!({"podAffinity": affinity}));
            let old = spider(json!({}));
            for v in [
                create(&obj, &Index::new()),
                update(&obj, &old, &Index::new()),
            ] {
                match want {
                    Some(want) => {
                        let t = texts(&v);
                        assert_eq!(t.len(), 1, "{what}: {t:?}");
                        assert!(t[0].starts_with(want), "{what}: {t:?}");
                        assert_eq!(v.rules(), ["S8"], "{what}");
                    }
                    None => assert!(v.allowed(), "{what}: {:?}", texts(&v)),
                }
            }
        }
    }

    #[test]
    fn s8_an_application_pool_keeps_the_affinity_spiderpool_derived() {
        let derived = json!({"matchLabels": {
            "ipam.spidernet.io/app-api-group": "apps", "ipam.spidernet.io/app-api-version": "v1",
            "ipam.spidernet.io/app-kind": "Deployment", "ipam.spidernet.io/app-namespace": "test-ns",
            "ipam.spidernet.io/app-name": "test-name"}});
        let mut auto = spider(json!({"ips": ["172.18.40.1"], "podAffinity": derived}));
        auto["metadata"]["labels"] = json!({
            "ipam.spidernet.io/owner-application-gv": "apps_v1",
            "ipam.spidernet.io/owner-application-kind": "Deployment",
            "ipam.spidernet.io/owner-application-namespace": "test-ns",
            "ipam.spidernet.io/owner-application-name": "test-name"});
        assert!(
            create(&auto, &Index::new()).allowed(),
            "{:?}",
            texts(&create(&auto, &Index::new()))
        );
        let mut changed = auto.clone();
        changed["spec"]["podAffinity"] = json!({"matchLabels": {"key": "value"},
            "matchExpressions": [{"key": "key", "operator": "In", "values": ["value"]}]});
        for v in [
            create(&changed, &Index::new()),
            update(&changed, &auto, &Index::new()),
        ] {
            assert_eq!(
                texts(&v),
                [
                    r#"spec.podAffinity.matchLabels: Invalid value: "key": a pool Spiderpool created for an application (ipam.spidernet.io/owner-application-name) selects its Pods by the ipam.spidernet.io/app-* keys only"#,
                    r#"spec.podAffinity.matchExpressions: Invalid value: [{"key":"key","operator":"In","values":["value"]}]: a pool Spiderpool created for an application (ipam.spidernet.io/owner-application-name) takes no matchExpressions"#,
                ]
            );
        }
    }

    #[test]
    fn x5_s8_an_unchanged_selector_is_never_denied() {
        let bad = spider(json!({"podAffinity": {"matchLabels": {"key": ".starts.with.dot"}}}));
        let mut grown = bad.clone();
        grown["spec"]["ips"] = json!(["172.18.40.2-172.18.40.5", "172.18.40.10"]);
        assert!(update(&grown, &bad, &Index::new()).allowed());
    }

    // === S9: overlapping subnets are the same subnet ===

    fn named(name: &str, subnet: &str, ips: &[&str]) -> Value {
        json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
            "metadata": {"name": name}, "spec": {"subnet": subnet, "ips": ips}})
    }

    #[test]
    fn s9_overlapping_subnets_must_be_identical() {
        // Spiderpool's case: a /25 exists, a /24 holding it is created (disjoint ips).
        let existing = named("z-exist", "172.18.40.0/25", &["172.18.40.40"]);
        let ix = index(&[(Kind::SpiderIPPool, &existing)]);
        let v = create(
            &named(
                "ippool-1",
                "172.18.40.0/24",
                &["172.18.40.1-172.18.40.2", "172.18.40.10"],
            ),
            &ix,
        );
        assert_eq!(
            texts(&v),
            [
                r#"spec.subnet: Invalid value: "172.18.40.0/24": overlaps the subnet of SpiderIPPool.spiderpool.spidernet.io z-exist (172.18.40.0/25); SpiderIPPools and SpiderSubnets whose subnets overlap must declare the same subnet"#
            ]
        );
        assert_eq!(v.rules(), ["S9"]);
        // The same subnet, disjoint ips: fine. A disjoint subnet: fine.
        assert!(create(&named("ippool-2", "172.18.40.0/25", &["172.18.40.10"]), &ix).allowed());
        assert!(create(&named("ippool-3", "172.18.41.0/24", &["172.18.41.10"]), &ix).allowed());
        // An empty pool still declares its subnet.
        assert_eq!(
            create(&named("ippool-4", "172.18.0.0/16", &[]), &ix).rules(),
            ["S9"]
        );
        // Another address space, or --overlap-scope off: not this pool's neighbour.
        let mut apart = named("ippool-5", "172.18.40.0/24", &["172.18.40.10"]);
        apart["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
        assert!(create(&apart, &ix).allowed());
        let off = Options {
            overlap_scope: OverlapScope::Off,
            ..Options::default()
        };
        let v = ts::judge(
            Kind::SpiderIPPool,
            Operation::Create,
            Some(&named("ippool-6", "172.18.40.0/24", &["172.18.40.10"])),
            None,
            &ix,
            off,
        );
        assert!(v.allowed(), "{:?}", texts(&v));
    }

    #[test]
    fn x5_s9_an_update_that_keeps_its_subnet_keeps_its_neighbours() {
        let a = named("a", "172.18.40.0/25", &["172.18.40.40"]);
        let b = named("b", "172.18.40.0/24", &["172.18.40.200"]);
        let ix = index(&[(Kind::SpiderIPPool, &a), (Kind::SpiderIPPool, &b)]);
        let mut grown = b.clone();
        grown["spec"]["ips"] = json!(["172.18.40.200-172.18.40.210"]);
        assert!(
            update(&grown, &b, &ix).allowed(),
            "{:?}",
            texts(&update(&grown, &b, &ix))
        );
        // Moving into the space of the other pool meets it.
        let mut moved = b.clone();
        moved["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
        let ix2 = index(&[(Kind::SpiderIPPool, &a), (Kind::SpiderIPPool, &moved)]);
        assert_eq!(update(&b, &moved, &ix2).rules(), ["S9"]);
    }

    // === SpiderSubnet: S1–S5 as for a pool, S9–S12 ===

    fn subnet(name: &str, cidr: &str, ips: &[&str]) -> Value {
        json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderSubnet",
            "metadata": {"name": name}, "spec": {"subnet": cidr, "ips": ips}})
    }

    fn held_pool(name: &str, cidr: &str, ips: &[&str], held: &str) -> Value {
        let mut p = named(name, cidr, ips);
        p["status"] = json!({"allocatedIPCount": 1,
            "allocatedIPs": format!("{{\"{held}\":{{\"pod\":\"default/web-0\"}}}}")});
        p
    }

    fn sub_create(obj: &Value, ix: &Index) -> Verdict {
        ts::create(Kind::SpiderSubnet, obj, ix)
    }

    #[test]
    fn the_spec_rules_of_a_pool_judge_a_subnet() {
        let ix = Index::new();
        assert!(sub_create(&subnet("s", "10.6.0.0/24", &["10.6.0.10-10.6.0.20"]), &ix).allowed());
        let mut bad = subnet("s", "10.6.0.7/24", &["10.6.1.10"]);
        bad["spec"]["gateway"] = json!("10.6.0.10");
        bad["spec"]["routes"] = json!([{"dst": "0.0.0.0/0", "gw": "10.6.0.1"}]);
        let v = sub_create(&bad, &ix);
        assert_eq!(v.rules(), ["S1", "S3", "S7"], "{:?}", texts(&v));
        let mut gw = subnet("s", "10.6.0.0/24", &["10.6.0.1-10.6.0.20"]);
        gw["spec"]["gateway"] = json!("10.6.0.1");
        assert_eq!(sub_create(&gw, &ix).rules(), ["S4"]);
        // S5: subnet and ipVersion are immutable.
        let old = subnet("s", "10.6.0.0/24", &["10.6.0.10"]);
        let moved = subnet("s", "10.6.1.0/24", &["10.6.1.10"]);
        let v = ts::update(Kind::SpiderSubnet, &moved, &old, &ix);
        assert_eq!(v.rules(), ["S5"], "{:?}", texts(&v));
    }

    #[test]
    fn s10_subnets_never_overlap_identical_ones_included() {
        let ix = index(&[(
            Kind::SpiderSubnet,
            &subnet("a", "10.6.0.0/24", &["10.6.0.10"]),
        )]);
        let v = sub_create(&subnet("b", "10.6.0.0/24", &["10.6.0.200"]), &ix);
        assert_eq!(
            texts(&v),
            [
                r#"spec.subnet: Invalid value: "10.6.0.0/24": overlaps the subnet of SpiderSubnet.spiderpool.spidernet.io a (10.6.0.0/24); SpiderSubnets never overlap, identical ones included"#
            ]
        );
        assert_eq!(
            sub_create(&subnet("c", "10.6.0.128/25", &["10.6.0.200"]), &ix).rules(),
            ["S10"]
        );
        assert!(sub_create(&subnet("d", "10.6.1.0/24", &["10.6.1.10"]), &ix).allowed());
        let mut apart = subnet("e", "10.6.0.0/24", &["10.6.0.200"]);
        apart["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
        assert!(sub_create(&apart, &ix).allowed());
    }

    #[test]
    fn s9_a_pool_and_a_subnet_that_overlap_declare_the_same_subnet() {
        let ix = index(&[(
            Kind::SpiderSubnet,
            &subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]),
        )]);
        let v = create(&named("p", "10.6.0.0/25", &["10.6.0.100"]), &ix);
        assert_eq!(v.rules(), ["S9"], "{:?}", texts(&v));
        let ix = index(&[(
            Kind::SpiderIPPool,
            &named("p", "10.6.0.0/25", &["10.6.0.100"]),
        )]);
        assert_eq!(
            sub_create(&subnet("a", "10.6.0.0/24", &["10.6.0.200"]), &ix).rules(),
            ["S9"]
        );
    }

    #[test]
    fn s11_a_carved_pool_lies_inside_its_subnet() {
        let ix = index(&[(
            Kind::SpiderSubnet,
            &subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]),
        )]);
        // Inside: admitted, and the subnet is no P10 overlap of its own pool.
        assert!(create(&named("in", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]), &ix).allowed());
        let v = create(&named("out", "10.6.0.0/24", &["10.6.0.45-10.6.0.60"]), &ix);
        assert_eq!(
            texts(&v),
            [
                r#"spec.ips[0]: Invalid value: "10.6.0.45-10.6.0.60": 10.6.0.51-10.6.0.60 outside SpiderSubnet.spiderpool.spidernet.io a: a SpiderIPPool declaring the subnet of a SpiderSubnet is carved from it and takes only addresses of its spec.ips, less its spec.excludeIPs and gateway"#
            ]
        );
        // X5: an update judges only what it adds.
        let stray = named("out", "10.6.0.0/24", &["10.6.0.45-10.6.0.60"]);
        let mut shrunk = stray.clone();
        shrunk["spec"]["ips"] = json!(["10.6.0.46-10.6.0.60"]);
        assert!(update(&shrunk, &stray, &ix).allowed());
        // Another address space: not carved from it.
        let mut apart = named("apart", "10.6.0.0/24", &["10.6.0.100"]);
        apart["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
        assert!(create(&apart, &ix).allowed());
    }

    #[test]
    fn s11_a_subnet_keeps_covering_its_pools() {
        let carved = named("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]);
        let old = subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]);
        let ix = index(&[(Kind::SpiderIPPool, &carved), (Kind::SpiderSubnet, &old)]);
        let mut narrowed = old.clone();
        narrowed["spec"]["ips"] = json!(["10.6.0.10-10.6.0.25"]);
        let v = ts::update(Kind::SpiderSubnet, &narrowed, &old, &ix);
        assert_eq!(
            texts(&v),
            [
                r#"spec.ips: Forbidden: does not cover 10.6.0.26-10.6.0.30 of SpiderIPPool.spiderpool.spidernet.io p, carved from this SpiderSubnet (the same spec.subnet): a SpiderSubnet's spec.ips, less its spec.excludeIPs and gateway, keep every address of its SpiderIPPools"#
            ]
        );
        // Excluding a carved address is taking it away too; growing is fine.
        let mut excluded = old.clone();
        excluded["spec"]["excludeIPs"] = json!(["10.6.0.20"]);
        assert_eq!(
            ts::update(Kind::SpiderSubnet, &excluded, &old, &ix).rules(),
            ["S11"]
        );
        let mut grown = old.clone();
        grown["spec"]["ips"] = json!(["10.6.0.10-10.6.0.90"]);
        assert!(ts::update(Kind::SpiderSubnet, &grown, &old, &ix).allowed());
        // A create that does not cover a pool of its subnet already there.
        let ix = index(&[(Kind::SpiderIPPool, &carved)]);
        assert_eq!(
            sub_create(&subnet("a", "10.6.0.0/24", &["10.6.0.25-10.6.0.50"]), &ix).rules(),
            ["S11"]
        );
        assert!(sub_create(&subnet("a", "10.6.0.0/24", &["10.6.0.0-10.6.0.255"]), &ix).allowed());
    }

    #[test]
    fn s12_a_subnet_whose_pools_hold_addresses_is_not_deleted() {
        let sub = subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]);
        let held = held_pool("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"], "10.6.0.21");
        let ix = index(&[(Kind::SpiderIPPool, &held), (Kind::SpiderSubnet, &sub)]);
        let v = ts::delete(Kind::SpiderSubnet, &sub, &ix);
        assert_eq!(v.reason, DenyReason::Forbidden);
        assert_eq!(
            texts(&v),
            [
                "metadata.name: Forbidden: SpiderIPPools carved from this SpiderSubnet hold addresses. Cannot delete the SpiderSubnet until they have been released. Held by: SpiderIPPool.spiderpool.spidernet.io p (10.6.0.21)"
            ]
        );
        // A carved pool holding nothing, or a held pool of another subnet: let go.
        let idle = named("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]);
        let ix = index(&[(Kind::SpiderIPPool, &idle), (Kind::SpiderSubnet, &sub)]);
        assert!(ts::delete(Kind::SpiderSubnet, &sub, &ix).allowed());
        let other = held_pool("q", "10.7.0.0/24", &["10.7.0.20"], "10.7.0.20");
        let ix = index(&[(Kind::SpiderIPPool, &other), (Kind::SpiderSubnet, &sub)]);
        assert!(ts::delete(Kind::SpiderSubnet, &sub, &ix).allowed());
    }

    #[test]
    fn p10_a_subnet_meets_other_kinds_but_not_its_carved_pools() {
        let incluster = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
            "metadata": {"name": "nodes"}, "spec": {"addresses": ["10.6.0.40-10.6.0.60"], "prefix": 24, "gateway": "10.6.0.1"}});
        let ix = index(&[(Kind::GlobalInClusterIPPool, &incluster)]);
        let v = sub_create(&subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.50"]), &ix);
        assert_eq!(v.rules(), ["P10"], "{:?}", texts(&v));
        // The audit agrees: carved pool and subnet are no overlap, the in-cluster pool is.
        let sub = subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.30"]);
        let carved = named("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]);
        let ix = index(&[(Kind::SpiderSubnet, &sub), (Kind::SpiderIPPool, &carved)]);
        let ctx = Ctx {
            index: &ix,
            options: Options::default(),
            now: std::time::Instant::now(),
        };
        let mut out = Vec::new();
        for p in ix.pools() {
            crate::rules::stored::pool_findings(&ctx, p, &mut out);
        }
        assert!(out.is_empty(), "{out:?}");
        // usage counts the subnet's carved share, not its pool's holders again.
        let u = ix
            .usage_of_pool(&ObjKey::new(Kind::SpiderSubnet, None, "a"))
            .unwrap();
        assert_eq!((u.allocatable, u.used, u.outside), (21, 11, 0));
        assert_eq!(
            ix.free_of(ix.pool(&u.key).unwrap()).to_string(),
            "10.6.0.10-10.6.0.19"
        );
    }

    #[test]
    fn the_audit_reports_stored_subnets_that_overlap_or_leave_a_pool_out() {
        let a = subnet("a", "10.6.0.0/24", &["10.6.0.10-10.6.0.25"]);
        let b = subnet("b", "10.6.0.0/25", &["10.6.0.100"]);
        let carved = named("p", "10.6.0.0/24", &["10.6.0.20-10.6.0.30"]);
        let ix = index(&[
            (Kind::SpiderSubnet, &a),
            (Kind::SpiderSubnet, &b),
            (Kind::SpiderIPPool, &carved),
        ]);
        let ctx = Ctx {
            index: &ix,
            options: Options::default(),
            now: std::time::Instant::now(),
        };
        let mut out = Vec::new();
        for p in ix.pools() {
            crate::rules::stored::pool_findings(&ctx, p, &mut out);
        }
        let mut found: Vec<String> = out
            .iter()
            .map(|(k, e)| format!("{} {}", k.name, e.rule))
            .collect();
        found.sort();
        // a and b overlap (S10, each side); p and b overlap without sharing a subnet (S9, each
        // side); a does not cover 10.6.0.26-10.6.0.30 of p (S11).
        assert_eq!(
            found,
            ["a S10", "a S11", "b S10", "b S9", "p S9"],
            "{out:?}"
        );
    }
}
