//! The answer's `response`: allow, a fault, or a denial as Kubernetes writes it (Status with
//! one cause per problem), warnings and the base64 JSON Patch, all signed with their rule ids.

use std::fmt::Write as _;

use base64::Engine as _;
use kube::core::response::{StatusCause, StatusDetails, StatusSummary};
use kube::core::Status;
use serde::Serialize;
use serde_json::{json, Value};

use crate::field::{DenyReason, Verdict};
use crate::kinds::Kind;
use crate::rule_id::RuleId;

/// The `response` of an AdmissionReview, in the order of Kubernetes' `AdmissionResponse`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Response<'a> {
    pub(super) uid: &'a str,
    pub(super) allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) status: Option<Status>,
    /// Base64 of the JSON Patch, as the API documents it (a string, not an array of bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) warnings: Vec<String>,
}

/// The whole answer body around a `Response`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'a str,
    kind: &'static str,
    response: &'a Response<'a>,
}

/// The answer's body: the AdmissionReview around `response`, in the `apiVersion` it was asked in.
pub(super) fn body(api_version: &str, response: &Response) -> Vec<u8> {
    let review = ReviewOut {
        api_version,
        kind: "AdmissionReview",
        response,
    };
    // Serializing strings, numbers and kube-core's Status into a Vec cannot fail.
    serde_json::to_vec(&review).unwrap_or_default()
}

pub(super) fn allow(uid: &str) -> Response<'_> {
    Response {
        uid,
        allowed: true,
        status: None,
        patch: None,
        patch_type: None,
        warnings: Vec::new(),
    }
}

pub(super) fn fault<'a>(uid: &'a str, code: u16, reason: &str, message: &str) -> Response<'a> {
    Response {
        allowed: false,
        status: Some(Status {
            status: Some(StatusSummary::Failure),
            code,
            message: message.to_string(),
            reason: reason.to_string(),
            metadata: None,
            details: None,
        }),
        ..allow(uid)
    }
}

/// Builds the `response` of a review from a verdict.
pub(super) fn respond<'a>(uid: &'a str, name: &str, kind: Kind, v: &Verdict) -> Response<'a> {
    let mut response = if let Some(why) = &v.unavailable {
        fault(uid, 503, "ServiceUnavailable", why)
    } else if v.errors.is_empty() {
        allow(uid)
    } else {
        Response {
            allowed: false,
            status: Some(denial_status(name, kind, v)),
            ..allow(uid)
        }
    };
    if !v.warnings.is_empty() {
        let mut warnings: Vec<String> = v
            .warnings
            .iter()
            .take(MAX_SHOWN)
            .map(|w| signed(w, [w.rule]))
            .collect();
        if let Some(hidden) = v.warnings.get(MAX_SHOWN..) {
            warnings.push(signed(
                format_args!("and {} more warnings not shown", hidden.len()),
                hidden.iter().map(|w| w.rule),
            ));
        }
        response.warnings = warnings;
    }
    if v.allowed() && !v.patch.is_empty() {
        let ops: Vec<Value> = v
            .patch
            .iter()
            .map(|op| json!({ "op": "add", "path": op.path, "value": op.value }))
            .collect();
        let bytes = serde_json::to_vec(&ops).unwrap_or_default();
        response.patch_type = Some("JSONPatch");
        response.patch = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
    }
    response
}

/// At most this many causes, and warnings, go into one answer; the rest are counted. A 400 KiB
/// pool of 100k bad entries made a 24 MB answer and 250 MB of transient memory, so a few such
/// requests could get the webhook OOM-killed (tests/hostile_regressions.rs). `ipam-guard check`
/// still lists every problem.
pub(super) const MAX_SHOWN: usize = 100;

/// The one place that signs what a user reads through kubectl: a cause, a warning or
/// a 403 message ends with ` [ipam-guard <ID>]`, so a reader knows which component and which
/// rule spoke (a bare `spec.addresses[0]: …` reads like a CRD schema error). A line that stands
/// for several findings (the count past the cap) names each of their rules once.
pub(super) fn signed(
    text: impl std::fmt::Display,
    rules: impl IntoIterator<Item = RuleId>,
) -> String {
    sign(text.to_string(), rules)
}

/// `signed` on a text of its own, appended to in place.
fn sign(mut text: String, rules: impl IntoIterator<Item = RuleId>) -> String {
    let mut rules = rules.into_iter();
    let (first, second) = (rules.next(), rules.next());
    text.push_str(" [ipam-guard ");
    match (first, second) {
        (Some(only), None) => text.push_str(only.as_str()),
        _ => {
            let mut ids: Vec<&str> = first
                .into_iter()
                .chain(second)
                .chain(rules)
                .map(RuleId::as_str)
                .collect();
            ids.sort_unstable();
            ids.dedup();
            text.push_str(&ids.join(", "));
        }
    }
    text.push(']');
    text
}

/// The Status of a denial, as apimachinery's `NewInvalid` / `NewForbidden` write it, with one
/// cause per problem (up to `MAX_SHOWN`, then one `FieldValueTooMany` cause counting the rest).
/// Every text in it is signed (`signed`).
pub(crate) fn denial_status(name: &str, kind: Kind, v: &Verdict) -> Status {
    let shown = &v.errors[..v.errors.len().min(MAX_SHOWN)];
    let hidden = &v.errors[shown.len()..];
    let mut causes: Vec<StatusCause> = shown
        .iter()
        .map(|e| StatusCause {
            reason: e.kind.reason().to_string(),
            message: sign(e.body(), [e.rule]),
            field: e.path.clone(),
        })
        .collect();
    let hidden_rules = || hidden.iter().map(|e| e.rule);
    let more = (!hidden.is_empty()).then(|| {
        signed(
            format_args!("and {} more problems not shown", hidden.len()),
            hidden_rules(),
        )
    });
    if let Some(first_hidden) = hidden.first() {
        causes.push(StatusCause {
            reason: "FieldValueTooMany".to_string(),
            message: signed(
                format_args!(
                    "Too many: {} more problems not shown; `ipam-guard check` lists them all",
                    hidden.len()
                ),
                hidden_rules(),
            ),
            field: first_hidden.path.clone(),
        });
    }
    // `<Kind>.<group> "<name>" is invalid: ...`, `<plural>.<group> "<name>" is forbidden: ...`
    let opening = |what: &str, said: &str| {
        let mut m = String::with_capacity(160);
        m.push_str(what);
        m.push('.');
        m.push_str(kind.group());
        m.push(' ');
        let _ = write!(m, "{name:?}");
        m.push_str(said);
        m
    };
    let (code, reason, message) = match v.reason {
        DenyReason::Invalid => {
            let mut m = opening(kind.name(), " is invalid: ");
            // `NewInvalid` joins `<field>: <body>` per error: the causes' own messages.
            aggregate(
                &mut m,
                shown
                    .iter()
                    .zip(&causes)
                    .map(|(e, c)| {
                        let mut line = String::with_capacity(e.path.len() + 2 + c.message.len());
                        line.push_str(&e.path);
                        line.push_str(": ");
                        line.push_str(&c.message);
                        line
                    })
                    .chain(more.clone()),
            );
            (422, "Invalid", m)
        }
        DenyReason::Forbidden => {
            let mut m = opening(kind.plural(), " is forbidden: ");
            aggregate(
                &mut m,
                shown
                    .iter()
                    .map(|e| sign(e.detail.clone(), [e.rule]))
                    .chain(more),
            );
            (403, "Forbidden", m)
        }
    };
    Status {
        status: Some(StatusSummary::Failure),
        code,
        message,
        reason: reason.to_string(),
        metadata: None,
        details: Some(StatusDetails {
            name: name.to_string(),
            group: kind.group().to_string(),
            kind: kind.name().to_string(),
            uid: String::new(),
            causes,
            retry_after_seconds: 0,
        }),
    }
}

/// apimachinery's aggregate error text, appended to `out`: one message bare, several as
/// `[a, b]`, duplicates once.
fn aggregate(out: &mut String, msgs: impl Iterator<Item = String>) {
    let msgs: Vec<String> = msgs.collect();
    if let [only] = msgs.as_slice() {
        out.push_str(only);
        return;
    }
    // The set keeps this linear: a search of the list alone made a pool with 100k bad
    // entries take minutes (tests/hostile_regressions.rs).
    let mut unique = std::collections::HashSet::new();
    let seen: Vec<&str> = msgs
        .iter()
        .map(String::as_str)
        .filter(|m| unique.insert(*m))
        .collect();
    if let [only] = seen.as_slice() {
        out.push_str(only);
        return;
    }
    out.push('[');
    out.push_str(&seen.join(", "));
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::FieldError;

    fn text(api_version: &str, response: &Response) -> String {
        String::from_utf8(body(api_version, response)).unwrap()
    }

    #[test]
    fn an_allowed_answer_is_the_review_with_uid_and_allowed_only() {
        assert_eq!(
            text("admission.k8s.io/v1", &allow("u-1")),
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}}"#
        );
    }

    /// The Status as apimachinery writes one: empty fields (the details' uid, a zero
    /// retryAfterSeconds, list metadata) left out, texts escaped, the name quoted in the message.
    #[test]
    fn a_denial_is_a_status_with_one_cause_per_problem() {
        let v = Verdict {
            errors: vec![
                FieldError::invalid(RuleId::A6, "spec.address", "10.0.0.1", "held by \"other\""),
                FieldError::required(RuleId::A5, "spec.claimRef.name", "a name"),
            ],
            ..Verdict::default()
        };
        let response = respond("u-1", "m-\"1\"", Kind::IPAddress, &v);
        let back: Value = serde_json::from_slice(&body("admission.k8s.io/v1", &response)).unwrap();
        assert_eq!(
            back,
            json!({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {
                    "uid": "u-1",
                    "allowed": false,
                    "status": {
                        "status": "Failure",
                        "code": 422,
                        "message": "IPAddress.ipam.cluster.x-k8s.io \"m-\\\"1\\\"\" is invalid: [\
                            spec.address: Invalid value: \"10.0.0.1\": held by \"other\" [ipam-guard A6], \
                            spec.claimRef.name: Required value: a name [ipam-guard A5]]",
                        "reason": "Invalid",
                        "details": {
                            "name": "m-\"1\"",
                            "group": "ipam.cluster.x-k8s.io",
                            "kind": "IPAddress",
                            "causes": [
                                {
                                    "reason": "FieldValueInvalid",
                                    "message": "Invalid value: \"10.0.0.1\": held by \"other\" [ipam-guard A6]",
                                    "field": "spec.address",
                                },
                                {
                                    "reason": "FieldValueRequired",
                                    "message": "Required value: a name [ipam-guard A5]",
                                    "field": "spec.claimRef.name",
                                },
                            ],
                        },
                    },
                },
            })
        );
    }

    #[test]
    fn warnings_and_a_patch_ride_along_an_allowed_answer() {
        let mut response = allow("u-1");
        response.warnings = vec!["careful [ipam-guard X3]".into()];
        response.patch = Some("W10=".into());
        response.patch_type = Some("JSONPatch");
        let back: Value = serde_json::from_slice(&body("admission.k8s.io/v1", &response)).unwrap();
        assert_eq!(
            back["response"],
            json!({
                "uid": "u-1",
                "allowed": true,
                "patch": "W10=",
                "patchType": "JSONPatch",
                "warnings": ["careful [ipam-guard X3]"],
            })
        );
    }

    #[test]
    fn a_fault_is_a_failure_status_with_its_code() {
        let back: Value = serde_json::from_slice(&body(
            "admission.k8s.io/v1beta1",
            &fault("u-1", 503, "ServiceUnavailable", "not yet"),
        ))
        .unwrap();
        assert_eq!(back["apiVersion"], "admission.k8s.io/v1beta1");
        assert_eq!(
            back["response"],
            json!({
                "uid": "u-1",
                "allowed": false,
                "status": {
                    "status": "Failure",
                    "code": 503,
                    "message": "not yet",
                    "reason": "ServiceUnavailable",
                },
            })
        );
    }
}
