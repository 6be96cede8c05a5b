//! Metal3 IPAM (`ipam.metal3.io`): IPPool (MP1–MP4 with P9–P11), IPClaim (MC1–MC4) and
//! IPAddress (MA1–MA4).
//!
//! MP1–MP3 and MP5 judge the pool's spec on its own (`rules::metal3_pool`). MP4 is this kind's part of the
//! rules every pool kind shares (`rules::pool`: P8's and P9's checks under MP4's id, plus P10 and
//! P11). The address rules MA1 and MA4 are A3's, A8's and A9's code under their own ids. Holders of
//! a Metal3 pool are the address objects the index files under its key: Metal3 IPAddresses naming
//! it in `spec.pool.name`, and CAPI IPAddresses whose `poolRef` names it (ip-address-manager
//! serves CAPI claims from the same pool and counts both).

use serde_json::Value;

use crate::address::parse_ip;
use crate::field::{FieldError, FieldPath, Verdict, Warning};
use crate::kinds::Kind;
use crate::model::metal3::{read_address, read_claim, AddressReading, IP_ADDRESS_ANNOTATION};
use crate::model::paths::{self, meta, metal3};
use crate::model::{read, KeyRef, ObjKey, Operation};
use crate::rule_id::RuleId;
use crate::rules::cluster::{address_in_own_networks, address_is_endpoint};
use crate::rules::holders::address_is_held;
use crate::rules::ipaddress::{
    address_fields, gateway_findings, held_elsewhere, outside_pool, recently_released,
};
use crate::rules::pool::{PoolKind, Pools};
use crate::rules::util::{immutable_fields, ratchet, require, same, spec_changed, MAX_LISTED};
use crate::rules::{Call, Ctx, Options, Validator};

// === IPPool ===

/// Metal3 `IPPool`: MP4 on top of the shared pool rules, P8's and P9's checks under MP4's id;
/// held by the address objects the view files under it (see the module docs).
pub(crate) struct IPPool;

pub(crate) static POOL: Pools<IPPool> = Pools(std::marker::PhantomData);

impl PoolKind for IPPool {
    const KEEPS_HELD: RuleId = RuleId::MP4;
    const DELETE: RuleId = RuleId::MP4;
    const HOLDERS_IN_VIEW: bool = true;

    /// MP4: what names the addresses and how they are picked cannot change under live claims.
    fn immutable(obj: &Value, old: &Value, out: &mut Vec<FieldError>) {
        immutable_fields(
            RuleId::MP4,
            &[metal3::NAME_PREFIX, metal3::ALLOCATION_STRATEGY],
            obj,
            old,
            out,
        );
    }
}

// === IPClaim ===

/// Metal3 `IPClaim`: MC1–MC4.
pub(crate) struct Claim;

impl Validator for Claim {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let ns = call.namespace_of(obj);
        let r = read_claim(obj);
        v.errors
            .extend(r.pool_name.type_error(RuleId::MC1, metal3::POOL_NAME));
        v.errors.extend(
            r.pool_namespace
                .type_error(RuleId::MC2, metal3::POOL_NAMESPACE),
        );
        require(RuleId::MC1, metal3::POOL_NAME, &r.pool_name, &mut v.errors);
        mc2_namespace(
            RuleId::MC2,
            metal3::POOL_NAMESPACE,
            r.pool_namespace.get(),
            ns,
            &mut v,
        );
        mc4(obj, ns, ctx, &mut v);
        if let Some(name) = r.pool_name.get().filter(|n| !n.is_empty()) {
            let key = ObjKey::new(Kind::Metal3IPPool, ns, name);
            crate::rules::exhaustion::on_create(&key, metal3::POOL_NAME, ctx, &mut v);
        }
        v
    }

    fn update(&self, obj: &Value, old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let ns = call.namespace_of(obj);
        if spec_changed(obj, old) {
            immutable_fields(RuleId::MC3, &[paths::SPEC], obj, old, &mut v.errors);
        }
        let annotation = |o| read::entry(o, meta::ANNOTATIONS, IP_ADDRESS_ANNOTATION);
        if !same(annotation(obj), annotation(old)) {
            mc4(obj, ns, ctx, &mut v);
        }
        v
    }

    /// A claim may always go: its address is the provider's to release.
    fn delete(&self, _old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        Verdict::default()
    }

    /// MC4 reads the view only to warn; it denies on syntax alone.
    fn view_denials(&self, _op: Operation, _options: &Options) -> Vec<RuleId> {
        Vec::new()
    }
}

/// MC2 / MA2: a Metal3 reference may name a namespace, but only the object's own; the provider
/// ignores claims for pools elsewhere.
fn mc2_namespace(
    rule: RuleId,
    path: FieldPath,
    given: Option<&str>,
    own: Option<&str>,
    v: &mut Verdict,
) {
    if let (Some(given), Some(own)) = (given.filter(|g| !g.is_empty()), own) {
        if given != own {
            v.deny(FieldError::invalid(
                rule,
                path,
                given,
                format!("must be the object's own namespace {own:?}"),
            ));
        }
    }
}

/// MC4: the `ipAddress` annotation is an IP (deny), inside the pool's allocatable set (warn).
fn mc4(obj: &Value, ns: Option<&str>, ctx: &Ctx, v: &mut Verdict) {
    let r = read_claim(obj);
    // ip-address-manager treats an empty annotation as no request at all.
    let Some(text) = r.requested.filter(|t| !t.is_empty()) else {
        return;
    };
    let path = format!("metadata.annotations[{IP_ADDRESS_ANNOTATION}]");
    let ip = match parse_ip(text) {
        Ok(p) => {
            for w in p.warnings {
                v.warn(RuleId::MC4, path.clone(), w);
            }
            p.value
        }
        Err(e) => {
            v.deny(FieldError::invalid(RuleId::MC4, path, text, e.to_string()));
            return;
        }
    };
    let Some(name) = r.pool_name.get().filter(|n| !n.is_empty()) else {
        return;
    };
    let key = ObjKey::new(Kind::Metal3IPPool, ns, name);
    if let Some(pool) = ctx.index.pool(&key) {
        if !pool.allocatable.contains(ip) {
            v.warn(
                RuleId::MC4,
                path,
                format!(
                    "{ip} is not an allocatable address of {key}: {}",
                    pool.allocatable.display_limited(MAX_LISTED)
                ),
            );
        }
    }
}

// === IPAddress ===

/// Metal3 `IPAddress`: MA1–MA4.
pub(crate) struct Address;

impl Validator for Address {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let ns = call.namespace_of(obj);
        let r = read_address(obj);
        (v.errors, v.warnings) = findings(&r, ns);
        ma5(obj, &mut v);
        let own = KeyRef::new(Kind::Metal3IPAddress, ns, call.name);
        ma4(&r, own, ctx, &mut v);
        v
    }

    fn update(&self, obj: &Value, old: &Value, call: &Call, _ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let annotation = |o| read::entry(o, meta::ANNOTATIONS, IP_ADDRESS_ANNOTATION);
        if !same(annotation(obj), annotation(old)) {
            ma5(obj, &mut v);
        }
        // X5: the finalizer removal (both objects deleting, spec unchanged) and every other
        // metadata-only write pass whatever the spec holds.
        if !spec_changed(obj, old) {
            return v;
        }
        let ns = call.namespace_of(obj);
        immutable_fields(RuleId::MA3, &[paths::SPEC], obj, old, &mut v.errors);
        let (errors, warnings) = findings(&read_address(obj), ns);
        let old_ns = call.namespace_of(old);
        v.errors
            .extend(ratchet(errors, &findings(&read_address(old), old_ns).0));
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
                RuleId::MA4,
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

/// MA5: the `ipAddress` annotation on an IPAddress, when set, is an IP. ip-address-manager's
/// webhook refuses one that is not (it copies the annotation of the claim the address serves);
/// an empty annotation is no request at all.
fn ma5(obj: &Value, v: &mut Verdict) {
    let path = format!("metadata.annotations[{IP_ADDRESS_ANNOTATION}]");
    let Some(given) = read::entry(obj, meta::ANNOTATIONS, IP_ADDRESS_ANNOTATION) else {
        return;
    };
    let Some(text) = given.as_str() else {
        v.deny(FieldError::invalid(
            RuleId::MA5,
            path,
            given.clone(),
            "must be a string",
        ));
        return;
    };
    if text.is_empty() {
        return;
    }
    match parse_ip(text) {
        Ok(p) => {
            for w in p.warnings {
                v.warn(RuleId::MA5, path.clone(), w);
            }
        }
        Err(e) => v.deny(FieldError::invalid(RuleId::MA5, path, text, e.to_string())),
    }
}

/// MA1 and MA2: what the object says on its own. The gateway is held to A3's terms.
fn findings(r: &AddressReading, ns: Option<&str>) -> (Vec<FieldError>, Vec<Warning>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    // A Metal3 prefix, unlike CAPI's, is optional.
    address_fields([RuleId::MA1; 3], false, &r.spec, &mut errors, &mut warnings);
    let references = [
        (metal3::POOL_NAME, &r.pool_name),
        (metal3::POOL_NAMESPACE, &r.pool_namespace),
        (metal3::CLAIM_NAME, &r.claim_name),
        (metal3::CLAIM_NAMESPACE, &r.claim_namespace),
    ];
    for (path, field) in references {
        errors.extend(field.type_error(RuleId::MA2, path));
    }
    require(RuleId::MA2, metal3::POOL_NAME, &r.pool_name, &mut errors);
    require(RuleId::MA2, metal3::CLAIM_NAME, &r.claim_name, &mut errors);
    let mut v = Verdict::default();
    mc2_namespace(
        RuleId::MA2,
        metal3::POOL_NAMESPACE,
        r.pool_namespace.get(),
        ns,
        &mut v,
    );
    mc2_namespace(
        RuleId::MA2,
        metal3::CLAIM_NAMESPACE,
        r.claim_namespace.get(),
        ns,
        &mut v,
    );
    errors.append(&mut v.errors);

    if let Some(addr) = r.spec.ip() {
        errors.extend(gateway_findings(
            RuleId::MA1,
            addr,
            r.spec.prefix_len(),
            r.spec.gateway_ip(),
            r.spec.gateway_text(),
        ));
    }
    (errors, warnings)
}

/// MA4 (as A8–A9): inside the pool's allocatable set, and the only holder of the address in its
/// address space. Unlike A8, the prefix and gateway are not compared with the pool's: a Metal3
/// pool sets them per entry, and the index keeps only the pool-level ones.
fn ma4(r: &AddressReading, own: KeyRef<'_>, ctx: &Ctx, v: &mut Verdict) {
    let (Some(addr), Some(text)) = (r.spec.ip(), r.spec.ip_text()) else {
        return;
    };
    let pool_key = r
        .pool_name
        .get()
        .filter(|n| !n.is_empty())
        .map(|n| KeyRef::new(Kind::Metal3IPPool, own.namespace, n));
    if let Some(pool) = pool_key.and_then(|k| ctx.index.pool(&k)) {
        v.errors.extend(outside_pool(RuleId::MA4, pool, addr, text));
    }
    v.errors
        .extend(held_elsewhere(RuleId::MA4, addr, text, own, pool_key, ctx));
    v.errors.extend(address_is_endpoint(
        addr,
        text,
        own,
        r.claim_name.get(),
        pool_key,
        ctx,
    ));
    v.errors
        .extend(address_is_held(addr, text, own, pool_key, ctx));
    v.errors.extend(address_in_own_networks(
        addr,
        text,
        own,
        r.claim_name.get(),
        ctx,
    ));
    v.errors.extend(recently_released(
        addr,
        text,
        own,
        r.claim_name.get(),
        pool_key,
        ctx,
    ));
}

#[cfg(test)]
#[path = "metal3_tests.rs"]
mod tests;
