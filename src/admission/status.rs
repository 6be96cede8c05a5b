//! The answer's `response`: allow, a fault, or a denial as Kubernetes writes it (Status with
//! one cause per problem), warnings and the base64 JSON Patch, all signed with their rule ids.

use std::fmt::Write as _;

use base64::Engine as _;
use kube::core::response::{StatusCause, StatusDetails, StatusSummary};
use kube::core::Status;
use serde::Serialize;
use serde_json::{json, Value};

use crate::field::{DenyReason, Verdict};
use crate::json_text;
use crate::kinds::Kind;
use crate::rule_id::RuleId;

/// The `response` of an AdmissionReview, in the order of Kubernetes' `AdmissionResponse`.
/// `body` writes it; its `Serialize` is the definition `body` is held to (tests), and what writes
/// the rare answer `body` leaves to serde.
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

/// The answer's body, in exactly the bytes serde writes for a `ReviewOut` (tests hold the two
/// together on any answer). serde's writer spent 2.6k instructions on an allowed answer's nine
/// strings and about 8k on a denial's Status, escaping its messages a byte at a time;
/// this writes the strings through `json_text`. A Status with list
/// metadata, which no answer carries, is left to serde.
pub(super) fn body(api_version: &str, response: &Response) -> Vec<u8> {
    if response
        .status
        .as_ref()
        .is_some_and(|s| s.metadata.is_some())
    {
        return serde_json::to_vec(&ReviewOut {
            api_version,
            kind: "AdmissionReview",
            response,
        })
        .unwrap_or_default();
    }
    let mut out = Vec::with_capacity(80 + api_version.len() + response.uid.len());
    out.extend_from_slice(b"{\"apiVersion\":");
    json_text::write(&mut out, api_version);
    out.extend_from_slice(b",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    json_text::write(&mut out, response.uid);
    out.extend_from_slice(if response.allowed {
        b",\"allowed\":true"
    } else {
        b",\"allowed\":false"
    });
    if let Some(status) = &response.status {
        out.extend_from_slice(b",\"status\":");
        write_status(&mut out, status);
    }
    if let Some(patch) = &response.patch {
        out.extend_from_slice(b",\"patch\":");
        json_text::write(&mut out, patch);
    }
    if let Some(patch_type) = response.patch_type {
        out.extend_from_slice(b",\"patchType\":");
        json_text::write(&mut out, patch_type);
    }
    if !response.warnings.is_empty() {
        out.extend_from_slice(b",\"warnings\":[");
        for (i, w) in response.warnings.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json_text::write(&mut out, w);
        }
        out.push(b']');
    }
    out.extend_from_slice(b"}}");
    out
}

/// A Status as kube-core's derived `Serialize` writes it: its fields in declaration order, the
/// empty ones left out (`skip_serializing_if`). Its `metadata` is the caller's to rule out.
fn write_status(out: &mut Vec<u8>, s: &Status) {
    let mut o = Obj::open(out);
    if let Some(summary) = &s.status {
        o.key("status").extend_from_slice(match summary {
            StatusSummary::Success => b"\"Success\"",
            StatusSummary::Failure => b"\"Failure\"",
        });
    }
    if s.code != 0 {
        o.number("code", u64::from(s.code));
    }
    o.text("message", &s.message);
    o.text("reason", &s.reason);
    if let Some(d) = &s.details {
        let out = o.key("details");
        let mut d_o = Obj::open(out);
        d_o.text("name", &d.name);
        d_o.text("group", &d.group);
        d_o.text("kind", &d.kind);
        d_o.text("uid", &d.uid);
        if !d.causes.is_empty() {
            let out = d_o.key("causes");
            out.push(b'[');
            for (i, c) in d.causes.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let mut c_o = Obj::open(out);
                c_o.text("reason", &c.reason);
                c_o.text("message", &c.message);
                c_o.text("field", &c.field);
                c_o.close();
            }
            out.push(b']');
        }
        if d.retry_after_seconds != 0 {
            d_o.number("retryAfterSeconds", u64::from(d.retry_after_seconds));
        }
        d_o.close();
    }
    o.close();
}

/// A JSON object being written: the comma before every key but the first.
struct Obj<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    /// `"name":`, for the value to follow.
    fn key(&mut self, name: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// A string field, left out when empty.
    fn text(&mut self, name: &str, value: &str) {
        if !value.is_empty() {
            json_text::write(self.key(name), value);
        }
    }

    fn number(&mut self, name: &str, value: u64) {
        let out = self.key(name);
        let _ = write!(json_text::Bytes(out), "{value}");
    }

    fn close(self) {
        self.out.push(b'}');
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
pub fn denial_status(name: &str, kind: Kind, v: &Verdict) -> Status {
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
        push_debug(&mut m, name);
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

/// `{:?}` of a name: an object's name is printable ASCII without quotes or backslashes, which
/// Debug writes as it is; anything else goes through Debug.
fn push_debug(out: &mut String, name: &str) {
    if name
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push('"');
        out.push_str(name);
        out.push('"');
    } else {
        let _ = write!(out, "{name:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::FieldError;
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

    #[test]
    fn a_denial_is_written_as_serde_writes_it() {
        let v = Verdict {
            errors: vec![
                FieldError::invalid(
                    RuleId::A6,
                    "spec.address",
                    "10.0.0.1",
                    "already held by \"other\"\tclaim\n",
                ),
                FieldError::required(RuleId::A5, "spec.claimRef.name", "a \\ name"),
            ],
            ..Verdict::default()
        };
        for reason in [DenyReason::Invalid, DenyReason::Forbidden] {
            let v = Verdict {
                reason,
                ..v.clone()
            };
            let mut response = respond("u-1", "m-\"1\"", Kind::IPAddress, &v);
            response.warnings = vec!["w \"1\"".into(), String::new()];
            assert_eq!(
                body("admission.k8s.io/v1", &response),
                by_serde("admission.k8s.io/v1", &response)
            );
        }
    }

    #[test]
    fn a_status_with_list_metadata_goes_through_serde() {
        let mut response = fault("u-1", 500, "InternalError", "a \"fault\"");
        if let Some(status) = &mut response.status {
            status.metadata = Some(Default::default());
        }
        let written = body("admission.k8s.io/v1", &response);
        assert_eq!(written, by_serde("admission.k8s.io/v1", &response));
        assert!(String::from_utf8(written)
            .unwrap()
            .contains("\"metadata\":{}"));
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            any::<String>(),
            "[a-z\"\\\\\n\t .:-]{1,30}"
        ]
    }

    fn status() -> impl Strategy<Value = Status> {
        let cause = (text(), text(), text()).prop_map(|(reason, message, field)| StatusCause {
            reason,
            message,
            field,
        });
        let details = (
            (text(), text(), text(), text()),
            proptest::collection::vec(cause, 0..3),
            prop_oneof![Just(0u32), any::<u32>()],
        )
            .prop_map(
                |((name, group, kind, uid), causes, retry_after_seconds)| StatusDetails {
                    name,
                    group,
                    kind,
                    uid,
                    causes,
                    retry_after_seconds,
                },
            );
        (
            proptest::option::of(prop_oneof![
                Just(StatusSummary::Success),
                Just(StatusSummary::Failure)
            ]),
            prop_oneof![Just(0u16), any::<u16>()],
            text(),
            text(),
            proptest::option::of(details),
        )
            .prop_map(|(status, code, message, reason, details)| Status {
                status,
                code,
                message,
                reason,
                metadata: None,
                details,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn any_bare_answer_is_serdes(api_version in any::<String>(), uid in any::<String>(), allowed in any::<bool>()) {
            let response = Response { allowed, ..allow(&uid) };
            prop_assert_eq!(body(&api_version, &response), by_serde(&api_version, &response));
        }

        #[test]
        fn a_name_is_quoted_as_debug_quotes_it(name in prop_oneof![any::<String>(), "[ -~]{0,20}"]) {
            let mut out = String::new();
            push_debug(&mut out, &name);
            prop_assert_eq!(out, format!("{name:?}"));
        }

        #[test]
        fn any_answer_is_serdes(
            uid in text(),
            allowed in any::<bool>(),
            status in proptest::option::of(status()),
            patch in proptest::option::of(text()),
            patch_type in proptest::option::of(Just("JSONPatch")),
            warnings in proptest::collection::vec(text(), 0..3),
        ) {
            let response = Response { uid: &uid, allowed, status, patch, patch_type, warnings };
            prop_assert_eq!(body("admission.k8s.io/v1", &response), by_serde("admission.k8s.io/v1", &response));
        }
    }
}
