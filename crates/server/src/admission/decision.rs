//! The X2 step as a message of its own, for replicas that send it to one elected decider.
//!
//! Wire format: a compact decision request, not the whole AdmissionReview. It carries what the
//! rules read (kind, version, operation, namespace, name, object, oldObject, dryRun) and nothing
//! else: no uid, no userInfo, no options. The decider judges it with the same `rules::validate`
//! every replica runs, under its decision lock, and records the admitted projection as a pending
//! entry. The object itself has to travel (the decider projects it into its pending entry, and the
//! view rules read its ranges and addresses); sending only a projection would need a second,
//! serialisable reading of every kind and a second place where rules are applied. It travels as
//! raw JSON, decoded once on the decider.
//! Kind and operation are typed on both sides; only the wire spells them as text.
//!
//! The answer carries only the view-dependent findings (errors of any rule, in case the decider
//! runs a different version; warnings of the view rules only): the follower keeps its own answer
//! for everything else, so syntax, immutability and mutations never depend on the decider.

use std::net::IpAddr;
use std::sync::{Mutex, OnceLock};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::object;
use crate::cluster::Caller;
use crate::field::{DenyReason, ErrorType, FieldError, Verdict, Warning};
use crate::kinds::Kind;
use crate::model::{Operation, Request};
use crate::rule_id::RuleId;

/// One decision sent to the decider: typed where the rules need a type, the objects as raw JSON
/// (written once by the follower, decoded once on the decider). On the wire it is the same
/// JSON as before the types (`group`, `kind` and `operation` as text), so replicas of other
/// versions still understand each other.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "Wire", try_from = "Wire")]
pub struct DecisionRequest {
    pub kind: Kind,
    pub version: String,
    pub operation: Operation,
    pub namespace: Option<String>,
    pub name: String,
    pub object: Option<Box<RawValue>>,
    pub old_object: Option<Box<RawValue>>,
    pub dry_run: bool,
    /// The address of the unauthenticated caller the follower answered, so the decider bounds
    /// what it may reserve (`cluster::trust`); absent when the caller was authenticated. The
    /// follower is itself authenticated (mutual TLS), so its word on this is taken.
    pub stranger: Option<IpAddr>,
    /// In a hand-over: how long ago the previous decider admitted it, so the next one holds it
    /// only for what is left of its pending TTL (X2). None on a forwarded step.
    pub admitted_ms_ago: Option<u64>,
}

/// `DecisionRequest` as JSON text.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Wire {
    pub group: String,
    pub kind: String,
    pub version: String,
    pub operation: String,
    #[serde(default)]
    pub namespace: Option<String>,
    pub name: String,
    #[serde(default)]
    pub object: Option<Box<RawValue>>,
    #[serde(default)]
    pub old_object: Option<Box<RawValue>>,
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stranger: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_ms_ago: Option<u64>,
}

impl From<DecisionRequest> for Wire {
    fn from(r: DecisionRequest) -> Wire {
        Wire {
            group: r.kind.group().to_string(),
            kind: r.kind.name().to_string(),
            version: r.version,
            operation: r.operation.as_str().to_string(),
            namespace: r.namespace,
            name: r.name,
            object: r.object,
            old_object: r.old_object,
            dry_run: r.dry_run,
            stranger: r.stranger,
            admitted_ms_ago: r.admitted_ms_ago,
        }
    }
}

impl TryFrom<Wire> for DecisionRequest {
    type Error = String;

    /// A kind or operation this build does not decide (a follower of another version) is an
    /// answer the decider gives, not a broken request.
    fn try_from(w: Wire) -> Result<Self, String> {
        let kind = Kind::from_group_kind(&w.group, &w.kind)
            .ok_or_else(|| format!("{}/{} is not a kind ipam-guard decides", w.group, w.kind))?;
        let operation = Operation::parse(&w.operation)
            .ok_or_else(|| format!("unknown operation {:?}", w.operation))?;
        // JSON `null` is an absent object, as in a review.
        let present = |raw: Option<Box<RawValue>>| raw.filter(|r| r.get() != "null");
        Ok(DecisionRequest {
            kind,
            version: w.version,
            operation,
            namespace: w.namespace,
            name: w.name,
            object: present(w.object),
            old_object: present(w.old_object),
            dry_run: w.dry_run,
            stranger: w.stranger,
            admitted_ms_ago: w.admitted_ms_ago,
        })
    }
}

impl DecisionRequest {
    /// The step for `req`, from `caller`. Its objects are written as JSON once, here: only a
    /// follower that forwards (or a decider that keeps an admission for a handover) pays for it.
    pub(crate) fn new(req: &Request, caller: &Caller) -> Self {
        let raw = |v: Option<&Value>| serde_json::value::to_raw_value(v?).ok();
        DecisionRequest {
            kind: req.kind,
            version: req.version.to_string(),
            operation: req.operation,
            namespace: req.namespace.map(str::to_string),
            name: req.name.to_string(),
            object: raw(req.object),
            old_object: raw(req.old_object),
            dry_run: req.dry_run,
            stranger: match caller {
                Caller::Trusted => None,
                Caller::Stranger(addr) => Some(*addr),
            },
            admitted_ms_ago: None,
        }
    }

    /// Who asked the follower that forwarded this.
    pub(crate) fn caller(&self) -> Caller {
        match self.stranger {
            Some(addr) => Caller::Stranger(addr),
            None => Caller::Trusted,
        }
    }

    /// `f` of the request the rules read, its objects decoded once; or why they do not decode.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&Request) -> R) -> Result<R, String> {
        let decode = |raw: Option<&RawValue>| {
            raw.map(object::decode)
                .transpose()
                .map_err(|e| format!("the forwarded object is not valid JSON: {e}"))
        };
        let object = decode(self.object.as_deref())?;
        let old_object = decode(self.old_object.as_deref())?;
        Ok(f(&Request {
            operation: self.operation,
            kind: self.kind,
            version: &self.version,
            namespace: self.namespace.as_deref(),
            name: &self.name,
            object: object.as_ref(),
            old_object: old_object.as_ref(),
            dry_run: self.dry_run,
        }))
    }
}

/// The body of a forwarded decision: a request, or the answer it gets without being decided.
/// Public for the fuzz target `forward` only.
#[doc(hidden)]
pub enum Forwarded {
    Request(DecisionRequest),
    NotOurs(String),
}

/// Reads a forwarded decision's body; `Err` when it is not one (a 400 to the peer).
#[doc(hidden)]
pub fn forwarded(body: &[u8]) -> serde_json::Result<Forwarded> {
    let wire: Wire = serde_json::from_slice(body)?;
    Ok(match DecisionRequest::try_from(wire) {
        Ok(r) => Forwarded::Request(r),
        Err(why) => Forwarded::NotOurs(why),
    })
}

/// The entries of a handover this build can install; one it cannot (a kind of another version)
/// is passed over, not a reason to refuse the whole list.
pub(crate) fn known_entries<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<DecisionRequest>, D::Error> {
    let wire = Vec::<Wire>::deserialize(d)?;
    Ok(wire
        .into_iter()
        .filter_map(|w| DecisionRequest::try_from(w).ok())
        .collect())
}

/// The decider's answer.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DecisionAnswer {
    /// Set when the decider could not decide (not synced, not or no longer the decider): the
    /// request is refused with 503 and this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// The replica asked is not the decider (the lease moved): the asker should look again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_decider: bool,
    #[serde(default)]
    pub forbidden: bool,
    #[serde(default)]
    pub errors: Vec<WireError>,
    #[serde(default)]
    pub warnings: Vec<WireWarning>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WireError {
    pub rule: String,
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub value: Option<Value>,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WireWarning {
    pub rule: String,
    pub path: String,
    pub message: String,
}

impl DecisionAnswer {
    pub fn unavailable(why: impl Into<String>) -> Self {
        DecisionAnswer {
            unavailable: Some(why.into()),
            ..DecisionAnswer::default()
        }
    }

    /// The part of a verdict the decider owes: every error, the view rules' warnings.
    pub(crate) fn from_verdict(v: &Verdict) -> Self {
        DecisionAnswer {
            unavailable: v.unavailable.clone(),
            not_decider: false,
            forbidden: v.reason == DenyReason::Forbidden,
            errors: v
                .errors
                .iter()
                .map(|e| WireError {
                    rule: e.rule.to_string(),
                    path: e.path.clone(),
                    kind: e.kind.reason().to_string(),
                    value: e.value.clone(),
                    detail: e.detail.clone(),
                })
                .collect(),
            warnings: v
                .warnings
                .iter()
                .filter(|w| w.rule.reads_view())
                .map(|w| WireWarning {
                    rule: w.rule.to_string(),
                    path: w.path.clone(),
                    message: w.message.clone(),
                })
                .collect(),
        }
    }

    /// Puts the decider's findings into the follower's own verdict, in place of the follower's
    /// view-rule findings (the follower forwards only when it found no other error).
    pub(crate) fn merge_into(self, local: &mut Verdict) {
        let rule =
            |id: &str| RuleId::parse(id).unwrap_or_else(|| RuleId::Foreign(foreign_rule(id)));
        local.errors.retain(|e| !e.rule.reads_view());
        local.warnings.retain(|w| !w.rule.reads_view());
        if let Some(why) = self.unavailable {
            local.unavailable = Some(why);
        }
        if !self.errors.is_empty() && local.errors.is_empty() {
            local.reason = if self.forbidden {
                DenyReason::Forbidden
            } else {
                DenyReason::Invalid
            };
        }
        for e in self.errors {
            local.errors.push(FieldError {
                rule: rule(&e.rule),
                path: e.path,
                kind: error_type(&e.kind),
                value: e.value,
                detail: e.detail,
            });
        }
        for w in self.warnings {
            local
                .warnings
                .push(Warning::new(rule(&w.rule), w.path, w.message));
        }
    }
}

/// A verdict's ids are `Copy` (`RuleId`). An id this build does not know (a decider of another
/// version) is kept as the decider wrote it, so the user still sees which rule spoke: each
/// distinct id fills one of `FOREIGN_IDS` fixed slots (the decider is an authenticated peer, and
/// its ids are a short catalogue), and any beyond that read as `unknown`. The slots are the whole
/// of what foreign ids can ever hold: nothing is leaked per answer.
fn foreign_rule(id: &str) -> &'static str {
    const FOREIGN_IDS: usize = 64;
    static SLOTS: [OnceLock<Box<str>>; FOREIGN_IDS] = [const { OnceLock::new() }; FOREIGN_IDS];
    static FILLING: Mutex<()> = Mutex::new(());
    if id.len() > 16 {
        return "unknown";
    }
    // One filler at a time, so two answers naming a new id take one slot, not two.
    let _filling = FILLING.lock().unwrap_or_else(|p| p.into_inner());
    for slot in &SLOTS {
        match slot.get() {
            Some(known) if **known == *id => return known,
            Some(_) => {}
            None => return slot.get_or_init(|| id.into()),
        }
    }
    "unknown"
}

fn error_type(reason: &str) -> ErrorType {
    match reason {
        "FieldValueRequired" => ErrorType::Required,
        "FieldValueForbidden" => ErrorType::Forbidden,
        "FieldValueDuplicate" => ErrorType::Duplicate,
        _ => ErrorType::Invalid,
    }
}

/// Where the X2 step runs when replicas share one decider.
pub trait Route: Send + Sync {
    /// Whether this replica may decide right now. Checked before and after a local decision:
    /// a decision that ends after the fence closed is refused, whatever it found.
    fn standing(&self) -> Here;
    /// Sends the step to the decider within the budget. Never fails: no answer in time is an
    /// answer with `unavailable` set.
    fn forward(&self, req: DecisionRequest) -> BoxFuture<'_, DecisionAnswer>;
    /// The decider admitted `req` (a pending entry now exists for it). A route of several
    /// replicas keeps it for the pending TTL, to hand it to the next decider when this one steps
    /// down; a replica that decides alone has no one to hand it to.
    fn admitted(&self, req: &Request);
}

/// What `Route::standing` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Here {
    /// This replica is the decider: decide locally under the view's lock.
    Decide,
    /// Another replica is the decider: forward.
    Forward,
    /// This replica holds the lease but may not decide yet (or no longer); the text says why.
    Refuse(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deciders_ids_come_back_typed_and_an_unknown_one_as_written() {
        let wire = |rule: &str| WireError {
            rule: rule.into(),
            path: "spec.addresses[0]".into(),
            kind: "FieldValueInvalid".into(),
            value: None,
            detail: "d".into(),
        };
        let answer = DecisionAnswer {
            errors: vec![wire("P10"), wire("Q7")],
            warnings: vec![WireWarning {
                rule: "C3".into(),
                path: String::new(),
                message: "m".into(),
            }],
            ..DecisionAnswer::default()
        };
        let mut local = Verdict::default();
        local.warn(RuleId::C3, "", "from a partial view");
        local.warn(RuleId::P7, "spec.x", "stays");
        answer.merge_into(&mut local);
        assert_eq!(local.errors[0].rule, RuleId::P10);
        assert_eq!(local.errors[1].rule, "Q7");
        assert_eq!(local.errors[1].rule.to_string(), "Q7");
        assert_eq!(local.rules(), ["C3", "P10", "P7", "Q7"]);
        assert_eq!(
            local.warnings.len(),
            2,
            "the view rule's warning is the decider's"
        );
        assert_eq!(local.warnings[1].message, "m");
    }
}
