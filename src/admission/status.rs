//! The answer's `response`: allow, a fault, or a denial as Kubernetes writes it (Status with
//! one cause per problem), warnings and the base64 JSON Patch, all signed with their rule ids.

use base64::Engine as _;
use kube::core::response::{StatusCause, StatusDetails, StatusSummary};
use kube::core::Status;
use serde::Serialize;
use serde_json::{json, Value};

use crate::field::{DenyReason, Verdict};
use crate::kinds::Kind;
use crate::rule_id::RuleId;

/// The `response` of an AdmissionReview, in the order of Kubernetes' `AdmissionResponse`.
/// Serialized straight from this struct: an answer is written on every review, and building it
/// as a `Value` tree first cost a map per level and a copy of every string.
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
pub(super) struct ReviewOut<'a> {
    pub(super) api_version: &'a str,
    pub(super) kind: &'static str,
    pub(super) response: &'a Response<'a>,
}

/// The answer's body. An allowed review with nothing else to say is most of what is answered,
/// and serde's writer spent 2.6k instructions on its nine strings (BENCHMARKS.md, issue 25);
/// that shape is written here, in the bytes serde writes (a test holds the two together), and
/// every other answer goes through serde.
pub(super) fn body(api_version: &str, response: &Response) -> Vec<u8> {
    let bare = response.status.is_none()
        && response.patch.is_none()
        && response.patch_type.is_none()
        && response.warnings.is_empty();
    if !bare {
        return serde_json::to_vec(&ReviewOut {
            api_version,
            kind: "AdmissionReview",
            response,
        })
        .unwrap_or_default();
    }
    let mut out = Vec::with_capacity(80 + api_version.len() + response.uid.len());
    out.extend_from_slice(b"{\"apiVersion\":");
    json_string(&mut out, api_version);
    out.extend_from_slice(b",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    json_string(&mut out, response.uid);
    out.extend_from_slice(if response.allowed {
        b",\"allowed\":true}}"
    } else {
        b",\"allowed\":false}}"
    });
    out
}

/// A JSON string: copied when nothing in it needs escaping (a uid, an API version), else
/// escaped by serde_json.
fn json_string(out: &mut Vec<u8>, s: &str) {
    if super::scan::is_plain(s) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing a `str` into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
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

/// Builds the `response` of a review from a verdict (SPEC §8).
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

/// The one place that signs what a user reads through kubectl (SPEC §8): a cause, a warning or
/// a 403 message ends with ` [ipam-guard <ID>]`, so a reader knows which component and which
/// rule spoke (a bare `spec.addresses[0]: …` reads like a CRD schema error). A line that stands
/// for several findings (the count past the cap) names each of their rules once.
pub(super) fn signed(
    text: impl std::fmt::Display,
    rules: impl IntoIterator<Item = RuleId>,
) -> String {
    let mut ids: Vec<&str> = rules.into_iter().map(RuleId::as_str).collect();
    ids.sort_unstable();
    ids.dedup();
    format!("{text} [ipam-guard {}]", ids.join(", "))
}

/// The Status of a denial, as apimachinery's `NewInvalid` / `NewForbidden` write it, with one
/// cause per problem (up to `MAX_SHOWN`, then one `FieldValueTooMany` cause counting the rest).
/// Every text in it is signed (`signed`).
pub fn denial_status(name: &str, kind: Kind, v: &Verdict) -> Status {
    let shown = &v.errors[..v.errors.len().min(MAX_SHOWN)];
    let hidden = &v.errors[shown.len()..];
    let mut causes: Vec<StatusCause> = shown
        .iter()
        .map(|e| StatusCause {
            reason: e.kind.reason().to_string(),
            message: signed(e.body(), [e.rule]),
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
    let (code, reason, message) = match v.reason {
        DenyReason::Invalid => (
            422,
            "Invalid",
            format!(
                "{}.{} {:?} is invalid: {}",
                kind.name(),
                kind.group(),
                name,
                // `NewInvalid` joins `<field>: <body>` per error: the causes' own messages.
                aggregate(
                    shown
                        .iter()
                        .zip(&causes)
                        .map(|(e, c)| format!("{}: {}", e.path, c.message))
                        .chain(more.clone())
                )
            ),
        ),
        DenyReason::Forbidden => (
            403,
            "Forbidden",
            format!(
                "{}.{} {:?} is forbidden: {}",
                kind.plural(),
                kind.group(),
                name,
                aggregate(
                    shown
                        .iter()
                        .map(|e| signed(&e.detail, [e.rule]))
                        .chain(more)
                )
            ),
        ),
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

/// apimachinery's aggregate error text: one message bare, several as `[a, b]`, duplicates once.
fn aggregate(msgs: impl Iterator<Item = String>) -> String {
    // The set keeps this linear: a search of the list alone made a pool with 100k bad
    // entries take minutes (tests/hostile_regressions.rs).
    let mut unique = std::collections::HashSet::new();
    let mut seen: Vec<String> = Vec::new();
    for m in msgs {
        if unique.insert(m.clone()) {
            seen.push(m);
        }
    }
    match seen.len() {
        1 => seen.pop().unwrap_or_default(),
        _ => format!("[{}]", seen.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn by_serde(api_version: &str, response: &Response) -> Vec<u8> {
        serde_json::to_vec(&ReviewOut {
            api_version,
            kind: "AdmissionReview",
            response,
        })
        .unwrap()
    }

    #[test]
    fn a_bare_answer_is_written_as_serde_writes_it() {
        let texts = [
            "admission.k8s.io/v1",
            "",
            "270b64b0-aa9e-4bee-9d65-b65d43ce7070",
            "a\"b",
            "back\\slash",
            "line\nfeed\u{1}\u{1f}",
            "ünïcødé ✓ \u{7f}",
            "\u{10ffff}",
        ];
        for api_version in texts {
            for uid in texts {
                for allowed in [true, false] {
                    let response = Response {
                        allowed,
                        ..allow(uid)
                    };
                    assert_eq!(
                        body(api_version, &response),
                        by_serde(api_version, &response),
                        "{api_version:?} {uid:?} {allowed}"
                    );
                }
            }
        }
    }

    #[test]
    fn other_answers_are_written_by_serde() {
        let uid = "u-1";
        let mut warned = allow(uid);
        warned.warnings.push("careful [ipam-guard X3]".into());
        let mut patched = allow(uid);
        patched.patch = Some("W10=".into());
        patched.patch_type = Some("JSONPatch");
        for response in [
            warned,
            patched,
            fault(uid, 503, "ServiceUnavailable", "not yet"),
        ] {
            let written = body("admission.k8s.io/v1", &response);
            assert_eq!(written, by_serde("admission.k8s.io/v1", &response));
            let back: Value = serde_json::from_slice(&written).unwrap();
            assert_eq!(back["response"]["uid"], "u-1");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn any_bare_answer_is_serdes(api_version in any::<String>(), uid in any::<String>(), allowed in any::<bool>()) {
            let response = Response { allowed, ..allow(&uid) };
            prop_assert_eq!(body(&api_version, &response), by_serde(&api_version, &response));
        }
    }
}
