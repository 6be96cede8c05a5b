//! The X2 step as a message of its own, for replicas that send it to one elected decider.
//!
//! Wire format: a compact decision request, not the whole AdmissionReview. It carries what the
//! rules read (kind, version, operation, namespace, name, object, oldObject, dryRun) and nothing
//! else: no uid, no userInfo, no options. The decider judges it with the same `rules::validate`
//! every replica runs, under its decision lock, and records the admitted projection as a pending
//! entry. The object itself has to travel (the decider projects it into its pending entry, and the
//! view rules read its ranges and addresses); sending only a projection would need a second,
//! serialisable reading of every kind and a second place where rules are applied.
//!
//! The answer carries only the view-dependent findings (errors of any rule, in case the decider
//! runs a different version; warnings of the view rules only): the follower keeps its own answer
//! for everything else, so syntax, immutability and mutations never depend on the decider.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cluster::Caller;
use crate::field::{DenyReason, ErrorType, FieldError, Verdict, Warning};
use crate::kinds::Kind;
use crate::model::{Operation, Request};
use crate::rule_id::RuleId;

/// One decision sent to the decider.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRequest {
    pub group: String,
    pub kind: String,
    pub version: String,
    pub operation: String,
    #[serde(default)]
    pub namespace: Option<String>,
    pub name: String,
    #[serde(default)]
    pub object: Option<Value>,
    #[serde(default)]
    pub old_object: Option<Value>,
    #[serde(default)]
    pub dry_run: bool,
    /// The address of the unauthenticated caller the follower answered, so the decider bounds
    /// what it may reserve (`cluster::trust`); absent when the caller was authenticated. The
    /// follower is itself authenticated (mutual TLS), so its word on this is taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stranger: Option<std::net::IpAddr>,
}

impl DecisionRequest {
    pub(crate) fn from_request(req: &Request) -> Self {
        DecisionRequest {
            group: req.kind.group().to_string(),
            kind: req.kind.name().to_string(),
            version: req.version.to_string(),
            operation: req.operation.as_str().to_string(),
            namespace: req.namespace.map(str::to_string),
            name: req.name.to_string(),
            object: req.object.cloned(),
            old_object: req.old_object.cloned(),
            dry_run: req.dry_run,
            stranger: None,
        }
    }

    /// Tags the request with who asked the follower.
    pub(crate) fn from(mut self, caller: &Caller) -> Self {
        self.stranger = match caller {
            Caller::Trusted => None,
            Caller::Stranger(addr) => Some(*addr),
        };
        self
    }

    /// Who asked the follower that forwarded this.
    pub(crate) fn caller(&self) -> Caller {
        match self.stranger {
            Some(addr) => Caller::Stranger(addr),
            None => Caller::Trusted,
        }
    }

    /// The request the rules read, or why this is not one we decide.
    pub(crate) fn request(&self) -> Result<(Kind, Request<'_>), String> {
        let kind = Kind::from_group_kind(&self.group, &self.kind).ok_or_else(|| {
            format!(
                "{}/{} is not a kind ipam-guard decides",
                self.group, self.kind
            )
        })?;
        let operation = Operation::parse(&self.operation)
            .ok_or_else(|| format!("unknown operation {:?}", self.operation))?;
        Ok((
            kind,
            Request {
                operation,
                kind,
                version: &self.version,
                namespace: self.namespace.as_deref(),
                name: &self.name,
                object: self.object.as_ref(),
                old_object: self.old_object.as_ref(),
                dry_run: self.dry_run,
            },
        ))
    }
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
/// version) is kept as the decider wrote it, so the user still sees which rule spoke: each distinct
/// id is stored once, at most `FOREIGN_IDS` of them (the decider is an authenticated peer, and its
/// ids are a short catalogue), and any beyond that read as `unknown`.
fn foreign_rule(id: &str) -> &'static str {
    const FOREIGN_IDS: usize = 64;
    static SEEN: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = seen.iter().find(|s| **s == id) {
        return known;
    }
    if seen.len() >= FOREIGN_IDS || id.len() > 16 {
        return "unknown";
    }
    let stored: &'static str = Box::leak(id.to_string().into_boxed_str());
    seen.push(stored);
    stored
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
    /// The decider admitted `req` (a pending entry now exists for it). The route keeps it for
    /// the pending TTL, to hand it to the next decider when this one steps down.
    fn admitted(&self, req: DecisionRequest);
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
