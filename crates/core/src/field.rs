//! Field errors as Kubernetes writes them (`field.ErrorList`), warnings, and the verdict a rule run returns.

use std::fmt;

use serde_json::Value;

pub use crate::rule_id::RuleId;

/// A field's place in an object, written once and used both to find the field and to name it
/// in a cause (`field.NewPath("spec").Child("gateway")` in Kubernetes). Readers only take a
/// `FieldPath`, never a bare string, so a path is spelled in one place per kind (`model::paths`)
/// and a misspelling fails that module's test against the kinds' schemas instead of turning
/// into "Required value" for a field the user did write.
///
/// Dotted object keys from the root (`spec.poolRef.name`), or from a list entry for the fields
/// of one (`start` of `spec.pools[i]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldPath(&'static str);

/// The value under `key` of `v` when it is a map. An object's maps are small (a handful of keys
/// each), and an equality test compares lengths first, skipping the `memcmp` call that the map's
/// own ordered search makes for every key it passes: a quarter less per path. A map of more keys than a B-tree node holds is searched the map's own way, which
/// stays logarithmic.
fn child<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    let Value::Object(map) = v else {
        return None;
    };
    if map.len() > 11 {
        return map.get(key);
    }
    map.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

impl FieldPath {
    pub const fn new(dotted: &'static str) -> Self {
        FieldPath(dotted)
    }

    pub const fn as_str(self) -> &'static str {
        self.0
    }

    /// The value at this path in `obj`: None when a key is missing, a step is not an object,
    /// or the value is null (the API server treats an explicit null as absent).
    pub fn get(self, obj: &Value) -> Option<&Value> {
        // A byte scan rather than `str::split`, which sets up a searcher per call: about
        // two fifths of what a two-key lookup cost.
        let mut cur = obj;
        let mut rest = self.0;
        while let Some(dot) = rest.bytes().position(|b| b == b'.') {
            cur = child(cur, &rest[..dot])?;
            rest = &rest[dot + 1..];
        }
        cur = child(cur, rest)?;
        (!cur.is_null()).then_some(cur)
    }

    /// `spec.addresses[3]`: entry `i` of the list at this path.
    pub fn index(self, i: usize) -> String {
        // Not `format!`: a pool reading makes one per entry, and `format!` cost 1.1k
        // instructions each.
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(i);
        let mut out = String::with_capacity(self.0.len() + 2 + digits.len());
        out.push_str(self.0);
        out.push('[');
        out.push_str(digits);
        out.push(']');
        out
    }

    /// `metadata.labels[app]`: the value under `key` of the map at this path.
    pub fn key(self, key: &str) -> String {
        format!("{}[{key}]", self.0)
    }

    /// `spec.pools[2].start`: `field` of entry `i` of the list at this path.
    pub fn entry(self, i: usize, field: FieldPath) -> String {
        format!("{}[{i}].{}", self.0, field.0)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl AsRef<str> for FieldPath {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl From<FieldPath> for String {
    fn from(p: FieldPath) -> String {
        p.0.to_string()
    }
}

impl PartialEq<FieldPath> for String {
    fn eq(&self, other: &FieldPath) -> bool {
        self == other.0
    }
}

/// The types of `k8s.io/apimachinery/pkg/util/validation/field.ErrorType` that ipam-guard uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorType {
    Required,
    Invalid,
    Forbidden,
    Duplicate,
}

impl ErrorType {
    /// The `StatusCause.reason` Kubernetes sends for this type.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::Duplicate => "FieldValueDuplicate",
        }
    }
    fn label(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::Duplicate => "Duplicate value",
        }
    }
}

/// One problem with one field, tagged with the rule that found it.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub rule: RuleId,
    pub path: String,
    pub kind: ErrorType,
    /// The offending value (Invalid, Duplicate); printed as `field.Invalid` prints it.
    pub value: Option<Value>,
    pub detail: String,
}

/// Values longer than this are cut with `...`: a denial never echoes a whole object.
const MAX_VALUE_LEN: usize = 64;

impl FieldError {
    pub fn required(rule: RuleId, path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            rule,
            path: path.into(),
            kind: ErrorType::Required,
            value: None,
            detail: detail.into(),
        }
    }
    pub fn invalid(
        rule: RuleId,
        path: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            rule,
            path: path.into(),
            kind: ErrorType::Invalid,
            value: Some(value.into()),
            detail: detail.into(),
        }
    }
    pub fn forbidden(rule: RuleId, path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            rule,
            path: path.into(),
            kind: ErrorType::Forbidden,
            value: None,
            detail: detail.into(),
        }
    }
    pub fn duplicate(
        rule: RuleId,
        path: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            rule,
            path: path.into(),
            kind: ErrorType::Duplicate,
            value: Some(value.into()),
            detail: detail.into(),
        }
    }

    /// Kubernetes' `ValidateImmutableField` text, with the old value added so the user sees both.
    pub fn immutable(rule: RuleId, path: impl Into<String>, new: &Value, old: &Value) -> Self {
        let detail = if old.is_null() {
            "field is immutable (was not set)".to_string()
        } else {
            format!("field is immutable (was {})", format_value(old))
        };
        let new = if new.is_null() {
            Value::Null
        } else {
            new.clone()
        };
        FieldError::invalid(rule, path, new, detail)
    }

    /// `ErrorBody()`: what follows `<field>: ` in kubectl's output, and the cause's `message`.
    pub fn body(&self) -> String {
        let label = self.kind.label();
        let mut s = String::with_capacity(label.len() + self.detail.len() + 24);
        s.push_str(label);
        if let ErrorType::Invalid | ErrorType::Duplicate = self.kind {
            s.push_str(": ");
            push_value(&mut s, self.value.as_ref().unwrap_or(&Value::Null));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.body())
    }
}

/// Formats a value as `field.Invalid` does: strings quoted, numbers and booleans bare, long values cut.
pub fn format_value(v: &Value) -> String {
    let mut out = String::new();
    push_value(&mut out, v);
    out
}

/// `format_value`, appended to `out`.
fn push_value(out: &mut String, v: &Value) {
    match v {
        // A text no longer than the cut in bytes is no longer in characters either.
        Value::String(s) if s.len() <= MAX_VALUE_LEN => quote(out, s),
        Value::String(s) => quote(out, &truncate(s)),
        Value::Null => out.push_str("null"),
        Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_) => {
            out.push_str(&truncate(&v.to_string()))
        }
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() <= MAX_VALUE_LEN {
        return s.to_string();
    }
    let cut: String = s.chars().take(MAX_VALUE_LEN).collect();
    format!("{cut}...")
}

/// Go's `%q` for the strings we print: JSON escaping is close enough and always unambiguous.
fn quote(out: &mut String, s: &str) {
    // A string always serializes.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// A finding that allows the write; kubectl prints it as `Warning: <path>: <message> [ipam-guard <rule>]`
/// (admission adds the signature; `check` and `audit` print `[<rule>]` instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub rule: RuleId,
    /// The field it is about; empty for the object as a whole.
    pub path: String,
    pub message: String,
}

impl Warning {
    pub fn new(rule: RuleId, path: impl Into<String>, message: impl Into<String>) -> Self {
        Warning {
            rule,
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// How a denial is reported: 422 Invalid for bad objects, 403 Forbidden for blocked deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DenyReason {
    #[default]
    Invalid,
    Forbidden,
}

/// One JSON Patch operation (RFC 6902) the mutating webhook sends. Only `add` is ever needed:
/// mutations fill what is absent and never rewrite what the user wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchOp {
    pub rule: RuleId,
    /// JSON pointer, e.g. `/spec/poolRef/apiGroup`.
    pub path: String,
    pub value: Value,
}

/// Everything one run of the rules found about one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    pub errors: Vec<FieldError>,
    pub warnings: Vec<Warning>,
    pub reason: DenyReason,
    /// The view cannot answer yet (X3): the request is denied with 503 and this text.
    pub unavailable: Option<String>,
    /// Mutations (only from `rules::mutate`).
    pub patch: Vec<PatchOp>,
}

impl Verdict {
    /// A verdict that refuses with `e` alone.
    pub fn denied(e: FieldError) -> Self {
        let mut v = Verdict::default();
        v.deny(e);
        v
    }

    pub fn allowed(&self) -> bool {
        self.errors.is_empty() && self.unavailable.is_none()
    }
    pub fn deny(&mut self, e: FieldError) {
        self.errors.push(e);
    }
    pub fn warn(&mut self, rule: RuleId, path: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(Warning::new(rule, path, message));
    }
    /// Rule ids behind this verdict, sorted and unique (for logs and metrics).
    pub fn rules(&self) -> Vec<RuleId> {
        let mut ids: Vec<RuleId> = self
            .errors
            .iter()
            .map(|e| e.rule)
            .chain(self.warnings.iter().map(|w| w.rule))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_index_path_is_the_list_path_and_the_position() {
        let p = FieldPath::new("spec.addresses");
        for i in [0, 7, 10, 99, 100, 12_345, usize::MAX] {
            assert_eq!(p.index(i), format!("spec.addresses[{i}]"));
        }
    }

    #[test]
    fn a_path_finds_what_the_map_holds_in_small_and_large_maps() {
        for width in [1, 11, 12, 40] {
            let mut spec = serde_json::Map::new();
            for i in 0..width {
                spec.insert(format!("k{i:02}"), json!(i));
            }
            // Same length as the keys, and a prefix of one: neither may match another key.
            spec.insert("kx".into(), Value::Null);
            spec.insert("k0".into(), json!("short"));
            let obj = json!({ "spec": spec, "kind": "K" });
            for i in 0..width {
                let path: &'static str = Box::leak(format!("spec.k{i:02}").into_boxed_str());
                assert_eq!(FieldPath::new(path).get(&obj), Some(&json!(i)), "{path}");
            }
            assert_eq!(FieldPath::new("spec.k0").get(&obj), Some(&json!("short")));
            assert_eq!(FieldPath::new("spec.kx").get(&obj), None, "null is absent");
            assert_eq!(FieldPath::new("spec.k99").get(&obj), None);
            assert_eq!(FieldPath::new("spec.k").get(&obj), None);
            assert_eq!(FieldPath::new("kind.k00").get(&obj), None, "not a map");
            assert_eq!(FieldPath::new("kind").get(&obj), Some(&json!("K")));
        }
    }

    #[test]
    fn bodies_match_kubernetes_text() {
        let e = FieldError::invalid(
            RuleId::P2,
            "spec.addresses[0]",
            "10.0.0.0/33",
            "must be a valid CIDR or IP range",
        );
        assert_eq!(
            e.to_string(),
            r#"spec.addresses[0]: Invalid value: "10.0.0.0/33": must be a valid CIDR or IP range"#
        );
        let e = FieldError::required(RuleId::C1, "spec.poolRef.name", "");
        assert_eq!(e.to_string(), "spec.poolRef.name: Required value");
        let e = FieldError::required(RuleId::P1, "spec.addresses", "addresses is required");
        assert_eq!(
            e.to_string(),
            "spec.addresses: Required value: addresses is required"
        );
        let e = FieldError::forbidden(
            RuleId::C2,
            "spec.poolRef.namespace",
            "references must stay in the object's namespace",
        );
        assert_eq!(
            e.to_string(),
            "spec.poolRef.namespace: Forbidden: references must stay in the object's namespace"
        );
        let e = FieldError::invalid(
            RuleId::A2,
            "spec.prefix",
            33,
            "prefix is too large for an IPv4 address",
        );
        assert_eq!(
            e.to_string(),
            "spec.prefix: Invalid value: 33: prefix is too large for an IPv4 address"
        );
        let e = FieldError::duplicate(
            RuleId::A9,
            "spec.address",
            "10.0.0.5",
            "10.0.0.5 is already held by IPAddress ns/a",
        );
        assert_eq!(e.kind.reason(), "FieldValueDuplicate");
        assert_eq!(
            e.to_string(),
            r#"spec.address: Duplicate value: "10.0.0.5": 10.0.0.5 is already held by IPAddress ns/a"#
        );
    }

    #[test]
    fn immutable_names_the_old_value() {
        let e = FieldError::immutable(RuleId::C4, "spec.poolRef.name", &json!("b"), &json!("a"));
        assert_eq!(
            e.to_string(),
            r#"spec.poolRef.name: Invalid value: "b": field is immutable (was "a")"#
        );
    }

    #[test]
    fn long_values_are_cut() {
        let long = "x".repeat(100);
        let e = FieldError::invalid(RuleId::A1, "spec.address", long, "not a valid IP address");
        assert!(e.body().contains(&format!("\"{}...\"", "x".repeat(64))));
    }

    proptest::proptest! {
        /// A text is cut at 64 characters, not bytes, and quoted as JSON quotes it.
        #[test]
        fn a_text_value_is_cut_by_characters_and_quoted(s in "(.|[\"\\\\\n]){0,80}") {
            let chars: Vec<char> = s.chars().collect();
            let cut = if chars.len() <= MAX_VALUE_LEN {
                s.clone()
            } else {
                chars[..MAX_VALUE_LEN].iter().collect::<String>() + "..."
            };
            proptest::prop_assert_eq!(
                format_value(&Value::String(s)),
                serde_json::to_string(&cut).unwrap()
            );
        }
    }
}
