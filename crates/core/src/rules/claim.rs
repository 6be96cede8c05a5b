//! `IPAddressClaim`: C1–C5, and E1 (`rules::exhaustion`) on create.

use serde_json::Value;

use crate::field::{FieldError, FieldPath, Verdict};
use crate::kinds::{Kind, KINDS};
use crate::model::capi::{project_claim_reading, read_claim, ClaimReading, RefReading};
use crate::model::paths::{self, claim, meta};
use crate::model::written::Written;
use crate::model::{read, record_key, KeyRef, Operation, Projection};
use crate::rule_id::RuleId;
use crate::rules::mutate::CLUSTER_NAME_LABEL;
use crate::rules::util::{
    dns1123_subdomain_errors, immutable_fields, reference_types, require, spec_changed,
};
use crate::rules::{Call, Ctx, Options, Validator};

/// C2's detail, shared with IPAddress references.
pub(crate) const NO_REF_NAMESPACE: &str = "references must stay in the object's namespace";

/// `IPAddressClaim`: C1–C5.
pub(crate) struct Claim;

impl Validator for Claim {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let namespace = call.namespace_of(obj);
        let r = read_claim(obj);
        types(&r, &mut v);
        c1_c2(&r, &mut v);
        c3(&r, namespace, ctx, &mut v);
        c5(obj, &r, &mut v);
        call.keep_projection(|| {
            let key = record_key(Kind::IPAddressClaim, obj)?;
            Some(Projection::Claim(project_claim_reading(
                &r.pool_ref,
                obj,
                key,
            )))
        });
        v
    }

    fn update(&self, obj: &Value, old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        // X5: the spec is immutable, so a changed spec is judged by C4 alone and an unchanged
        // one never fails for a problem it already had.
        if spec_changed(obj, old) {
            immutable_fields(RuleId::C4, &[paths::SPEC], obj, old, &mut v.errors);
        }
        let touched = |p: FieldPath| read::get(obj, p) != read::get(old, p);
        if touched(claim::CLUSTER_NAME) || label(obj) != label(old) {
            c5(obj, &read_claim(obj), &mut v);
        }
        v
    }

    /// A claim may always go: its address is the provider's to release.
    fn delete(&self, _old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        Verdict::default()
    }

    fn view_denials(&self, op: Operation, options: &Options) -> Vec<RuleId> {
        match op {
            Operation::Create if options.require_existing_pool => vec![RuleId::C3],
            _ => Vec::new(),
        }
    }
}

fn label(obj: &Value) -> Option<&Value> {
    read::entry(obj, meta::LABELS, CLUSTER_NAME_LABEL)
}

/// C1 and C5: the reference and `clusterName` are of their schema's types.
fn types(r: &ClaimReading, v: &mut Verdict) {
    reference_types(RuleId::C1, &r.pool_ref, claim::POOL_REF, &mut v.errors);
    v.errors
        .extend(r.cluster_name.type_error(RuleId::C5, claim::CLUSTER_NAME));
}

/// C1: every poolRef field present and non-empty, the name a DNS-1123 subdomain; C2: no namespace.
fn c1_c2(r: &ClaimReading, v: &mut Verdict) {
    pool_ref_required(RuleId::C1, &r.pool_ref, &mut v.errors);
    if r.pool_ref.raw.get().is_none() {
        return;
    }
    let p = &r.pool_ref;
    if let Some(name) = p.name.get().filter(|n| !n.is_empty()) {
        for detail in dns1123_subdomain_errors(name) {
            v.deny(FieldError::invalid(
                RuleId::C1,
                claim::POOL_REF_NAME,
                name,
                detail,
            ));
        }
    }
    if p.has_namespace {
        v.deny(FieldError::forbidden(
            RuleId::C2,
            claim::POOL_REF_NAMESPACE,
            NO_REF_NAMESPACE,
        ));
    }
}

/// C1, and A5 for an IPAddress: `spec.poolRef` and its apiGroup, kind and name are set and
/// non-empty. A field of the wrong type has its own cause (`reference_types`), not this one.
pub(crate) fn pool_ref_required(rule: RuleId, p: &RefReading, errors: &mut Vec<FieldError>) {
    match p.raw {
        Written::Absent => errors.push(FieldError::required(rule, claim::POOL_REF, "")),
        Written::Wrong(_) => {}
        Written::Ok(_) => {
            for (path, value) in [
                (claim::POOL_REF_API_GROUP, &p.api_group),
                (claim::POOL_REF_KIND, &p.kind),
                (claim::POOL_REF_NAME, &p.name),
            ] {
                require(rule, path, value, errors);
            }
        }
    }
}

/// C3: a known pool kind names a pool the view holds; a known pool group names a pool kind.
fn c3(r: &ClaimReading, namespace: Option<&str>, ctx: &Ctx, v: &mut Verdict) {
    let p = &r.pool_ref;
    let (Some(kind), Some(name)) = (
        p.kind.get().filter(|k| !k.is_empty()),
        p.name.get().filter(|n| !n.is_empty()),
    ) else {
        return;
    };
    let group = p.effective_group();
    match Kind::from_group_kind(group, kind).filter(|k| k.is_pool()) {
        Some(k) => {
            let key = KeyRef::new(k, namespace, name);
            if ctx.index.pool(&key).is_some() {
                crate::rules::exhaustion::on_create(&key, claim::POOL_REF_NAME, ctx, v);
            } else {
                let detail = format!("{key} not found");
                if ctx.options.require_existing_pool {
                    v.deny(FieldError::invalid(
                        RuleId::C3,
                        claim::POOL_REF_NAME,
                        name,
                        detail,
                    ));
                } else {
                    v.warn(RuleId::C3, claim::POOL_REF_NAME, detail);
                }
            }
        }
        None => {
            if let Some(message) = not_a_pool_kind_of(group, kind) {
                v.warn(RuleId::C3, claim::POOL_REF_KIND, message);
            }
        }
    }
}

/// C3 and V1: why `kind` of a group that has pool kinds is not one of them, naming those it has;
/// None for a group without pool kinds.
pub(crate) fn not_a_pool_kind_of(group: &str, kind: &str) -> Option<String> {
    let known: Vec<&str> = KINDS
        .iter()
        .filter(|k| k.pool && k.group == group)
        .map(|k| k.name)
        .collect();
    (!known.is_empty()).then(|| {
        format!(
            "{kind} is not a pool kind of {group} (pool kinds: {})",
            known.join(", ")
        )
    })
}

/// C5: `spec.clusterName` and the cluster-name label, when both are set, agree.
fn c5(obj: &Value, r: &ClaimReading, v: &mut Verdict) {
    let (Some(cluster), Some(Value::String(l))) = (r.cluster_name.get(), label(obj)) else {
        return;
    };
    if cluster != l {
        v.deny(FieldError::invalid(
            RuleId::C5,
            meta::LABELS,
            l.as_str(),
            format!("label {CLUSTER_NAME_LABEL} must equal spec.clusterName {cluster:?}"),
        ));
    }
}

#[cfg(test)]
#[path = "claim_tests.rs"]
mod tests;
