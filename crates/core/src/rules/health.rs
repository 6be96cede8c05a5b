//! What goes wrong after install, found in what the view holds: claims no provider serves and
//! addresses nobody releases. Never a verdict on a write (no request is judged here): `ipam-guard
//! audit` and the periodic audit of `serve` report these as warnings.
//!
//! - H1: a claim without an address for longer than `--stuck-after` while its pool has free
//!   addresses (the provider is not serving it: not running, not watching the namespace, or
//!   failing on it).
//! - E1: a claim without an address whose pool has none free (it waits until one is released;
//!   the same id and words as the warning at the claim's create, `rules::exhaustion`).
//! - H2: an address whose claim no longer exists (an orphan that holds its address forever).
//! - H3: an address whose pool no longer exists.
//!
//! "Without an address": neither `status.addressRef.name` (Metal3: `status.address.name`) is set
//! nor an address object names the claim. Pure: the time is passed in.

use std::collections::HashMap;
use std::time::Duration;

use crate::field::Warning;
use crate::index::usage::PoolUsage;
use crate::index::Index;
use crate::kinds::Kind;
use crate::model::paths::{address, claim, metal3};
use crate::model::{AddressProj, ClaimProj, ObjKey};
use crate::rule_id::RuleId;
use crate::rules::exhaustion;
use crate::rules::Options;

/// `--stuck-after`'s default: a provider serves a claim within seconds when it can.
pub(crate) const DEFAULT_STUCK_AFTER: Duration = Duration::from_secs(600);

/// Every H1, H2, H3 and E1 finding over `index` at `now` (Unix seconds), sorted by object.
pub fn judge(index: &Index, options: Options, now: i64) -> Vec<(ObjKey, Warning)> {
    let mut out = Vec::new();
    let mut usage = Usages::new();
    for c in index.claims() {
        claim_findings(index, c, options, now, &mut usage, &mut out);
    }
    for a in index.addresses() {
        address_findings(index, a, &mut out);
    }
    sort(&mut out);
    out
}

/// The usage of each pool a claim named, read once per pass.
pub type Usages = HashMap<ObjKey, Option<PoolUsage>>;

/// Findings in the order `judge` gives them: by object, rule and field.
pub fn sort(out: &mut [(ObjKey, Warning)]) {
    out.sort_by(|a, b| (&a.0, a.1.rule, &a.1.path).cmp(&(&b.0, b.1.rule, &b.1.path)));
}

/// H1 and E1 of one claim.
pub fn claim_findings(
    index: &Index,
    c: &ClaimProj,
    options: Options,
    now: i64,
    usage: &mut Usages,
    out: &mut Vec<(ObjKey, Warning)>,
) {
    let (address_kind, pool_field, status_field) = match c.key.kind {
        Kind::Metal3IPClaim => (
            Kind::Metal3IPAddress,
            metal3::POOL_NAME,
            metal3::STATUS_ADDRESS,
        ),
        _ => (Kind::IPAddress, claim::POOL_REF_NAME, claim::ADDRESS_REF),
    };
    let ns = c.key.namespace.as_deref();
    if c.bound
        || !index
            .addresses_for_claim(address_kind, ns.unwrap_or_default(), &c.key.name)
            .is_empty()
    {
        return;
    }
    let Some(pool) = c.pool_ref.key(ns) else {
        return;
    };
    // A pool that is not found is C3's to report (the one-shot audit judges it).
    let Some(u) = usage
        .entry(pool.clone())
        .or_insert_with(|| index.usage_of_pool(&pool))
    else {
        return;
    };
    if u.free() == 0 {
        out.push((
            c.key.clone(),
            Warning::new(RuleId::E1, pool_field, exhaustion::exhausted(u)),
        ));
        return;
    }
    let Some(created) = c.created else {
        return;
    };
    let waited = now.saturating_sub(created);
    if waited <= 0 || (waited as u64) <= options.stuck_after.as_secs() {
        return;
    }
    let free = u.free();
    let unit = match (u.sub_prefix, free) {
        (Some(len), 1) => format!("/{len} sub-prefix"),
        (Some(len), _) => format!("/{len} sub-prefixes"),
        (None, 1) => "address".to_string(),
        (None, _) => "addresses".to_string(),
    };
    out.push((
        c.key.clone(),
        Warning::new(
            RuleId::H1,
            status_field,
            format!(
                "no address since {} (longer than --stuck-after {}) while {} has {free} free {unit}: \
                 the provider is not serving this claim (is it running, does it watch this namespace, do its logs name the claim?)",
                rfc3339(created),
                duration_text(options.stuck_after),
                u.key,
            ),
        ),
    ));
}

/// H2 and H3 of one address object.
pub fn address_findings(index: &Index, a: &AddressProj, out: &mut Vec<(ObjKey, Warning)>) {
    let (claim_kind, claim_field, pool_field) = match a.key.kind {
        Kind::Metal3IPAddress => (Kind::Metal3IPClaim, metal3::CLAIM_NAME, metal3::POOL_NAME),
        _ => (
            Kind::IPAddressClaim,
            address::CLAIM_REF_NAME,
            claim::POOL_REF_NAME,
        ),
    };
    let holds =
        a.ip.map(|ip| format!("; it still holds {ip}"))
            .unwrap_or_default();
    let ns = a.key.namespace.as_deref();
    if let Some(claim) = a.claim.as_deref().filter(|c| !c.is_empty()) {
        let claim_key = ObjKey::new(claim_kind, ns, claim);
        if index.claim(&claim_key).is_none() {
            out.push((
                a.key.clone(),
                Warning::new(
                    RuleId::H2,
                    claim_field,
                    format!(
                        "{claim_key} not found: an orphaned address (its claim was deleted, or a restore has not brought it back yet){holds}"
                    ),
                ),
            ));
        }
    }
    if let Some(pool) = a.pool.as_ref().filter(|p| index.pool(p).is_none()) {
        out.push((
            a.key.clone(),
            Warning::new(
                RuleId::H3,
                pool_field,
                format!(
                    "{pool} not found: the address's pool is gone (deleted, or a restore has not brought it back yet){holds}, which no pool accounts for"
                ),
            ),
        ));
    }
}

/// Unix seconds as the API server writes timestamps: `2026-11-24T10:00:00Z`.
fn rfc3339(secs: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| secs.to_string())
}

/// `10m`, `1h30m`, `45s`: as `--stuck-after` is written.
pub(crate) fn duration_text(d: Duration) -> String {
    let s = d.as_secs();
    let (h, m, sec) = (s / 3600, s / 60 % 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if sec > 0 || out.is_empty() {
        out.push_str(&format!("{sec}s"));
    }
    out
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
