//! CAPI `IPAddress`: A1–A10.

use serde_json::Value;

use crate::address::{is_block_start, subnet_of, Family, Ip};
use crate::field::{FieldError, Verdict, Warning};
use crate::kinds::{Kind, DEFAULT_ADDRESS_SPACE};
use crate::model::capi::{project_reading, read_address, AddressReading};
use crate::model::paths::{self, address};
use crate::model::pool::{has_room_for_subnet, is_link_local_gateway, subnet_text};
use crate::model::written::{AddressFields, Written};
use crate::model::{record_key, AddressProj, KeyRef, Operation, PoolProj, Projection};
use crate::rule_id::RuleId;
use crate::rules::claim::{pool_ref_required, NO_REF_NAMESPACE};
use crate::rules::cluster::{address_in_own_networks, address_is_endpoint};
use crate::rules::holders::address_is_held;
use crate::rules::util::{
    immutable_fields, ip_findings, join_limited, join_shown, prefix_in_family, ratchet,
    reference_types, require, spec_changed, MAX_LISTED,
};
use crate::rules::OverlapScope;
use crate::rules::{Call, Ctx, Options, Validator};

const OTHER_POOL: &str =
    "the referenced pool is different from the pool referenced by the claim this address should fulfill";

/// CAPI `IPAddress`: A1–A10.
pub(crate) struct Address;

impl Validator for Address {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let r = read_address(obj);
        let mut v = Verdict::default();
        (v.errors, v.warnings) = findings(&r);
        let own = KeyRef::new(Kind::IPAddress, call.namespace_of(obj), call.name);
        cross_object(&r, own, ctx, &mut v);
        call.keep_projection(|| {
            let key = record_key(Kind::IPAddress, obj)?;
            Some(Projection::Address(project_reading(&r, key)))
        });
        v
    }

    fn update(&self, obj: &Value, old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        // X5: metadata-only updates pass whatever the spec looks like.
        if !spec_changed(obj, old) {
            return v;
        }
        immutable_fields(RuleId::A10, &[paths::SPEC], obj, old, &mut v.errors);
        let (errors, warnings) = findings(&read_address(obj));
        let (old_errors, _) = findings(&read_address(old));
        v.errors.extend(ratchet(errors, &old_errors));
        v.warnings = warnings;
        v
    }

    /// An address may always go: deleting it releases what it held.
    fn delete(&self, _old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        Verdict::default()
    }

    fn view_denials(&self, op: Operation, _options: &Options) -> Vec<RuleId> {
        match op {
            Operation::Create => vec![
                RuleId::A6,
                RuleId::A7,
                RuleId::A8,
                RuleId::A9,
                RuleId::R1,
                RuleId::CP4,
                RuleId::CP5,
                RuleId::RI4,
                RuleId::SA1,
            ],
            _ => Vec::new(),
        }
    }
}

/// A1–A5 and C2: what the object says on its own.
fn findings(r: &AddressReading) -> (Vec<FieldError>, Vec<Warning>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    address_fields(
        [RuleId::A1, RuleId::A2, RuleId::A3],
        true,
        &r.spec,
        &mut errors,
        &mut warnings,
    );
    errors.extend(r.claim_ref.type_error(RuleId::A5, address::CLAIM_REF));
    errors.extend(r.claim_name.type_error(RuleId::A5, address::CLAIM_REF_NAME));
    reference_types(RuleId::A5, &r.pool_ref, address::POOL_REF, &mut errors);

    // A5: the references are required (a reference of the wrong type has its cause already).
    if !matches!(r.claim_ref, Written::Wrong(_)) {
        require(
            RuleId::A5,
            address::CLAIM_REF_NAME,
            &r.claim_name,
            &mut errors,
        );
    }
    pool_ref_required(RuleId::A5, &r.pool_ref, &mut errors);
    // C2: references never leave the namespace.
    if r.pool_ref.has_namespace {
        errors.push(FieldError::forbidden(
            RuleId::C2,
            address::POOL_REF_NAMESPACE,
            NO_REF_NAMESPACE,
        ));
    }
    if r.claim_ref_has_namespace {
        errors.push(FieldError::forbidden(
            RuleId::C2,
            address::CLAIM_REF_NAMESPACE,
            NO_REF_NAMESPACE,
        ));
    }

    let Some(addr) = r.spec.ip() else {
        return (errors, warnings);
    };
    let family = addr.family;
    let subnet = r.spec.prefix_len().map(|p| (p, subnet_of(addr, p)));
    // A sub-prefix of a prefix pool is handed out at its network address, with the pool's one
    // gateway (informational, usually outside the sub-prefix): A3's subnet check and A4 would
    // refuse or flag every address the provider writes.
    let sub_prefix = r.pool_ref.names_prefix_pool();

    // A3: the gateway against the address.
    errors.extend(gateway_findings(
        RuleId::A3,
        addr,
        r.spec.prefix_len().filter(|_| !sub_prefix),
        r.spec.gateway_ip(),
        r.spec.gateway_text(),
    ));

    // A4: network and broadcast addresses are legal but almost never meant.
    if let Some((p, net)) = subnet
        .filter(|(p, _)| has_room_for_subnet(family, *p))
        .filter(|_| !sub_prefix)
    {
        // The subnet's text only when a warning prints it: formatting it cost 1.2k instructions
        // on every address create.
        let cidr = || subnet_text(family, net, p);
        if addr.value == net.start {
            warnings.push(Warning::new(
                RuleId::A4,
                address::ADDRESS,
                format!("{addr} is the network address of {}", cidr()),
            ));
        } else if family == Family::V4 && addr.value == net.end {
            warnings.push(Warning::new(
                RuleId::A4,
                address::ADDRESS,
                format!("{addr} is the broadcast address of {}", cidr()),
            ));
        }
    }
    (errors, warnings)
}

/// A1–A3 for CAPI addresses, MA1 for Metal3 ones (`rules`: address, prefix, gateway): the
/// address is set and an IP address, the gateway an IP address (canonical text, or a warning
/// says), the prefix an integer within the bound of the family (of IPv6 when the family is
/// unknown), never narrowed: 2^32 + 24 is not 24. CAPI requires the prefix, Metal3 does not.
pub(crate) fn address_fields(
    rules: [RuleId; 3],
    prefix_required: bool,
    f: &AddressFields,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    let [address_rule, prefix_rule, gateway_rule] = rules;
    let at = f.paths;
    if f.address.is_absent() {
        errors.push(FieldError::required(address_rule, at.address, ""));
    }
    ip_findings(address_rule, at.address, &f.address, errors, warnings);
    ip_findings(gateway_rule, at.gateway, &f.gateway, errors, warnings);
    match &f.prefix {
        Written::Absent if prefix_required => {
            errors.push(FieldError::required(prefix_rule, at.prefix, ""));
        }
        Written::Absent => {}
        Written::Wrong(w) => errors.push(w.error(prefix_rule, at.prefix)),
        Written::Ok(raw) => errors.extend(
            prefix_in_family(prefix_rule, at.prefix, *raw, f.prefix_value, f.family()).err(),
        ),
    }
}

/// A3, and MA1 for Metal3 addresses: the gateway (`text`, parsed as `gateway`) is of the address's
/// family, is not the address itself and, when the prefix leaves room for a subnet, lies inside
/// `address/prefix` (link-local IPv6 gateways exempt). The finding carries `rule`.
pub(crate) fn gateway_findings(
    rule: RuleId,
    addr: Ip,
    prefix: Option<u8>,
    gateway: Option<Ip>,
    text: Option<&str>,
) -> Option<FieldError> {
    let (gw, text) = (gateway?, text?);
    let family = addr.family;
    let detail = if gw.family != family {
        "must be of the same IP family as the address".to_string()
    } else if gw == addr {
        "must not be the same as the address".to_string()
    } else {
        let p = prefix.filter(|p| has_room_for_subnet(family, *p))?;
        let net = subnet_of(addr, p);
        if is_link_local_gateway(gw) || net.contains(gw.value) {
            return None;
        }
        format!(
            "must be inside the address's subnet {}",
            subnet_text(family, net, p)
        )
    };
    Some(FieldError::invalid(rule, address::GATEWAY, text, detail))
}

/// A6–A9: the address against the claim, the pool and the other addresses the view holds.
fn cross_object(r: &AddressReading, own: KeyRef<'_>, ctx: &Ctx, v: &mut Verdict) {
    let index = ctx.index;
    let namespace = own.namespace;

    if let Some(claim) = r.claim().filter(|c| !c.is_empty()) {
        // A6: the address fulfils its claim with the claim's pool.
        let claim_key = KeyRef::new(Kind::IPAddressClaim, namespace, claim);
        match index.claim(&claim_key) {
            Some(c) => {
                if r.pool_ref.raw.get().is_some() && !r.pool_ref.refers_to(&c.pool_ref) {
                    let mine = r.pool_ref.pool_ref();
                    // `Kind.group/name` rather than the JSON object, which the 64-character cut
                    // would end before the name, the part that usually differs.
                    let value = format!("{}.{}/{}", mine.kind, mine.api_group, mine.name);
                    v.deny(FieldError::invalid(RuleId::A6, address::POOL_REF, value, OTHER_POOL));
                }
            }
            // Stored already, it is an orphan rather than a write to allow: H2 (`health`).
            None if ctx.options.stored => {}
            None => v.warn(
                RuleId::A6,
                address::CLAIM_REF_NAME,
                format!(
                    "{claim_key} not found; allowed because restores may create addresses before their claims"
                ),
            ),
        }
        // A7: one address per claim.
        let others: Vec<String> = index
            .addresses_for_claim(Kind::IPAddress, namespace.unwrap_or_default(), claim)
            .into_iter()
            .filter(|a| a.key.key_ref() != own)
            .map(|a| a.key.to_string())
            .collect();
        if !others.is_empty() {
            v.deny(FieldError::duplicate(
                RuleId::A7,
                address::CLAIM_REF_NAME,
                claim,
                format!(
                    "{claim_key} is already fulfilled by {}",
                    join_limited(&others)
                ),
            ));
        }
    }

    let pool_key = r.pool_ref.pool_key_ref(namespace);
    let (Some(addr), Some(text)) = (r.spec.ip(), r.spec.ip_text()) else {
        return;
    };

    // A8: inside what the pool can hand out; the pool's prefix and gateway are expected. Every
    // version of the pool counts (stored and pending, X2): either may be the one stored.
    let mut versions = pool_key
        .into_iter()
        .flat_map(|k| index.pool_versions(&k).collect::<Vec<_>>());
    if let Some(pool) = versions.next() {
        let outside = outside_pool(RuleId::A8, pool, addr, text)
            .or_else(|| versions.find_map(|p| outside_pool(RuleId::A8, p, addr, text)));
        v.errors.extend(outside);
        // A pool on its way out (a deletionTimestamp, or a delete admitted and not yet shown by
        // the watch) gives out no new address: the delete would leave it without a pool. Its
        // stored addresses are not judged so (the audit).
        let going = pool_key.is_some_and(|k| index.pool_versions(&k).any(|p| p.deleting));
        if going && !ctx.options.stored {
            v.deny(FieldError::invalid(
                RuleId::A8,
                address::POOL_REF,
                pool.key.to_string(),
                format!("{} is being deleted: it gives out no new address", pool.key),
            ));
        }
        if pool.key.kind.is_prefix_pool() {
            sub_prefix_length(pool, r, v);
        }
        if let (Some(pp), Some(ap), false) = (
            pool.prefix,
            r.spec.prefix_len(),
            pool.key.kind.is_prefix_pool(),
        ) {
            if pp != ap {
                v.warn(
                    RuleId::A8,
                    address::PREFIX,
                    format!("prefix {ap} differs from the prefix {pp} of {}", pool.key),
                );
            }
        }
        match (pool.gateway, r.spec.gateway_ip()) {
            (Some(pg), Some(ag)) if pg != ag => v.warn(
                RuleId::A8,
                address::GATEWAY,
                format!("gateway {ag} differs from the gateway {pg} of {}", pool.key),
            ),
            (Some(pg), None) if r.spec.gateway_text().is_none() => v.warn(
                RuleId::A8,
                address::GATEWAY,
                format!("not set, while {} has gateway {pg}", pool.key),
            ),
            (None, Some(ag)) => v.warn(
                RuleId::A8,
                address::GATEWAY,
                format!("gateway {ag} is set, while {} has none", pool.key),
            ),
            _ => {}
        }
    }

    // A9: one holder per address and address space.
    v.errors
        .extend(held_elsewhere(RuleId::A9, addr, text, own, pool_key, ctx));
    // CP4: no Cluster's control-plane endpoint, unless claimed for it.
    v.errors.extend(address_is_endpoint(
        addr,
        text,
        own,
        r.claim(),
        pool_key,
        ctx,
    ));
    // RI4, SA1: no reserved or static machine address of its space.
    v.errors
        .extend(address_is_held(addr, text, own, pool_key, ctx));
    // CP5: not inside the networks of the address's own cluster.
    v.errors
        .extend(address_in_own_networks(addr, text, own, r.claim(), ctx));
    // R1: not a new holder before the reuse grace of the last one is over.
    v.errors
        .extend(recently_released(addr, text, own, r.claim(), pool_key, ctx));
}

/// A8 for an address of a prefix pool: `prefix` is the pool's allocation length (what the
/// provider writes), a denial rather than the warning other pools get.
fn sub_prefix_length(pool: &PoolProj, r: &AddressReading, v: &mut Verdict) {
    let Some(len) = pool.prefix else {
        // The pool's length is broken: nothing can be said about its sub-prefixes.
        return;
    };
    match r.spec.prefix_len() {
        Some(p) if p == len => {}
        Some(p) => v.deny(FieldError::invalid(
            RuleId::A8,
            address::PREFIX,
            p,
            format!("must be {len}, the allocationPrefixLength of {}", pool.key),
        )),
        // A prefix that is missing or wrong has its own cause (A2).
        None => {}
    }
}

/// A8, and MA4 for Metal3 addresses: the address is one the pool can hand out; for a prefix
/// pool, the network address of one whole allocatable sub-prefix. The finding carries `rule`.
pub(crate) fn outside_pool(
    rule: RuleId,
    pool: &PoolProj,
    addr: Ip,
    text: &str,
) -> Option<FieldError> {
    if let Some(len) = pool.prefix.filter(|_| pool.key.kind.is_prefix_pool()) {
        let detail = if !pool.allocatable.contains(addr) {
            format!(
                "not inside an allocatable /{len} of {}: {}",
                pool.key,
                pool.allocatable.display_limited(MAX_LISTED)
            )
        } else if !is_block_start(addr, len) {
            let net = Ip::new(addr.family, subnet_of(addr, len).start);
            format!(
                "must be the network address of its /{len} sub-prefix of {} ({net})",
                pool.key
            )
        } else {
            return None;
        };
        return Some(FieldError::invalid(rule, address::ADDRESS, text, detail));
    }
    // The set of the address's family: a declared pool may hand out both
    // (`PoolProj::other_family`); of another family, the pool's own is shown.
    let set = pool
        .allocatable_sets()
        .find(|s| s.family() == addr.family && !s.is_empty())
        .unwrap_or(&pool.allocatable);
    (!set.contains(addr)).then(|| {
        FieldError::invalid(
            rule,
            address::ADDRESS,
            text,
            format!(
                "not an allocatable address of {}: {}",
                pool.key,
                set.display_limited(MAX_LISTED)
            ),
        )
    })
}

/// A9, and MA4 for Metal3 addresses: no other address object the view holds (`own` aside) has
/// `addr` in the address space of the pool `pool_key` names (`default` without one), within
/// `--overlap-scope`. The finding carries `rule`.
pub(crate) fn held_elsewhere(
    rule: RuleId,
    addr: Ip,
    text: &str,
    own: KeyRef<'_>,
    pool_key: Option<KeyRef<'_>>,
    ctx: &Ctx,
) -> Option<FieldError> {
    let index = ctx.index;
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off {
        return None;
    }
    let space = pool_key.map_or(DEFAULT_ADDRESS_SPACE, |k| index.space_of_pool(&k));
    let cluster_wide = |k: Option<Kind>| k.is_some_and(|k| !k.namespaced());
    let in_scope = |h: &AddressProj| match scope {
        OverlapScope::Namespace => {
            h.key.namespace.as_deref() == own.namespace
                || cluster_wide(pool_key.map(|k| k.kind))
                || cluster_wide(h.pool.as_ref().map(|k| k.kind))
        }
        _ => true,
    };
    let mut total = 0;
    let mut shown = Vec::new();
    for h in index.holders(addr) {
        if h.key.key_ref() != own && index.space_of_address(h) == space && in_scope(h) {
            total += 1;
            if shown.len() < MAX_LISTED {
                shown.push(h.key.to_string());
            }
        }
    }
    (total > 0).then(|| {
        FieldError::duplicate(
            rule,
            address::ADDRESS,
            text,
            format!("{addr} is already held by {}", join_shown(&shown, total)),
        )
    })
}

/// R1, for CAPI and Metal3 addresses: `addr` was not released in the address space of the pool
/// `pool_key` names less than that release's reuse grace ago (`Index::release_address` says which
/// grace applies). The same object re-created for the same claim (a restore, a retried create)
/// is not a new holder and passes; a release the view does not remember (a restart, the cap) is
/// not refused. Scoped as A9 (`--overlap-scope`; `off` switches it off with A9).
pub(crate) fn recently_released(
    addr: Ip,
    text: &str,
    own: KeyRef<'_>,
    claim: Option<&str>,
    pool_key: Option<KeyRef<'_>>,
    ctx: &Ctx,
) -> Option<FieldError> {
    let index = ctx.index;
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off || index.releases().is_empty() {
        return None;
    }
    let space = pool_key.map_or(DEFAULT_ADDRESS_SPACE, |k| index.space_of_pool(&k));
    let cluster_wide = |k: Option<Kind>| k.is_some_and(|k| !k.namespaced());
    let release = index
        .releases()
        .of(addr)
        .filter(|r| *r.space == *space && ctx.now < r.until())
        .filter(|r| !(r.holder.key_ref() == own && r.claim.as_deref() == claim))
        .filter(|r| match scope {
            OverlapScope::Namespace => {
                r.holder.namespace.as_deref() == own.namespace
                    || cluster_wide(pool_key.map(|k| k.kind))
                    || cluster_wide(r.pool.as_ref().map(|k| k.kind))
            }
            _ => true,
        })
        .max_by_key(|r| r.until())?;
    let ago = ctx.now.saturating_duration_since(release.at);
    let left = release.until().saturating_duration_since(ctx.now);
    let grace = match (&release.pool, release.from_pool) {
        (Some(pool), true) => format!(
            "the reuse grace of {pool} is {} (addressReuseGracePeriodSeconds)",
            duration_text(release.grace, false)
        ),
        _ => format!(
            "the reuse grace is {} (--reuse-grace)",
            duration_text(release.grace, false)
        ),
    };
    Some(FieldError::invalid(
        RuleId::R1,
        address::ADDRESS,
        text,
        format!(
            "{addr} was released by {} {} ago; {grace}: a new holder may take it in {}",
            release.holder,
            duration_text(ago, false),
            duration_text(left, true)
        ),
    ))
}

/// `12s`, `90s`, `12m30s`, `2h5m`: whole seconds (the unit of addressReuseGracePeriodSeconds)
/// below ten minutes, rounded down, or up with `up` (a wait is never announced shorter than it is).
fn duration_text(d: std::time::Duration, up: bool) -> String {
    let mut secs = d.as_secs();
    if up && d.subsec_nanos() > 0 {
        secs += 1;
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m, s) {
        _ if secs < 600 => format!("{secs}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, 0, _) => format!("{h}h"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

#[cfg(test)]
#[path = "ipaddress_tests.rs"]
mod tests;
