//! Path-aware, lenient reads from a JSON object: each returns the value or a field error at its path.
//! Address fields (IPs, CIDRs, entries, prefixes) are read here too, so every reader reports a
//! syntax problem, a non-canonical text and a prefix out of bounds the same way.

use std::fmt::Display;

use serde_json::Value;

use crate::address::{check_prefix, parse_ip, Family, Ip, Parsed};
use crate::field::{FieldError, FieldPath, Warning};
use crate::model::written;
use crate::rule_id::RuleId;

/// The value at `path` (`spec.poolRef.name`). Missing or null → None.
pub fn get(obj: &Value, path: FieldPath) -> Option<&Value> {
    path.get(obj)
}

/// The value under `key` of the map at `path` (`metadata.labels`, `metadata.annotations`), whose
/// keys hold the dots and slashes a dotted path cannot name.
pub fn entry<'a>(obj: &'a Value, path: FieldPath, key: &str) -> Option<&'a Value> {
    get(obj, path)?.get(key)
}

/// Per list, at most this many problems are collected: ten times the causes one answer shows,
/// so the count an answer gives stays exact for any mistake a person makes, while a list of 750k
/// bad entries costs a thousand causes instead of 750k of them (ROBUSTNESS O1).
pub const LIST_PROBLEMS: usize = 1_000;

/// Whether the reader of the list at `path` should stop: true once the list has added
/// `LIST_PROBLEMS` problems since `before` (what `errors` held when the list began). Then one
/// cause at the list says how many entries, `left`, were not read; the request is denied anyway.
pub fn list_full(
    rule: RuleId,
    path: impl AsRef<str>,
    errors: &mut Vec<FieldError>,
    before: usize,
    left: usize,
) -> bool {
    if errors.len() - before < LIST_PROBLEMS || left == 0 {
        return false;
    }
    errors.push(FieldError::forbidden(
        rule,
        path.as_ref(),
        format!("{left} more entries not checked after {LIST_PROBLEMS} problems in this list"),
    ));
    true
}

/// A string field. Missing → Ok(None); another type → Invalid at the path.
pub fn string(rule: RuleId, obj: &Value, path: FieldPath) -> Result<Option<&str>, FieldError> {
    written::string(obj, path).into_result(rule, path)
}

/// An integer field, never truncated: `4294967320` stays that number and `"abc"` is an error.
pub fn integer(rule: RuleId, obj: &Value, path: FieldPath) -> Result<Option<i64>, FieldError> {
    written::integer(obj, path).into_result(rule, path)
}

/// An array field. Missing → Ok(None); another type → Invalid.
pub fn array(rule: RuleId, obj: &Value, path: FieldPath) -> Result<Option<&[Value]>, FieldError> {
    written::list(obj, path).into_result(rule, path)
}

/// An object field. Missing → Ok(None); another type → Invalid.
pub fn object(rule: RuleId, obj: &Value, path: FieldPath) -> Result<Option<&Value>, FieldError> {
    written::object(obj, path).into_result(rule, path)
}

/// A boolean field. Missing → Ok(None); another type → Invalid.
pub fn boolean(rule: RuleId, obj: &Value, path: FieldPath) -> Result<Option<bool>, FieldError> {
    written::boolean(obj, path).into_result(rule, path)
}

/// The value of a lenient read, its error (if any) collected in `errors`: readers report every
/// problem of an object, not the first.
pub fn keep<T>(r: Result<Option<T>, FieldError>, errors: &mut Vec<FieldError>) -> Option<T> {
    r.unwrap_or_else(|e| {
        errors.push(e);
        None
    })
}

/// Reports a field error at `path`: the dotted readers know no list indexes, so a field of
/// `spec.pools[i]` is read from the entry itself and its error moved to the full path.
pub fn at<T>(r: Result<T, FieldError>, path: impl AsRef<str>) -> Result<T, FieldError> {
    r.map_err(|mut e| {
        e.path = path.as_ref().to_string();
        e
    })
}

/// An item of a list at `path` that must be a string; another type is an error under `rule`.
pub fn item_text<'a>(
    rule: RuleId,
    v: &'a Value,
    path: impl AsRef<str>,
    errors: &mut Vec<FieldError>,
) -> Option<&'a str> {
    let text = v.as_str();
    if text.is_none() {
        errors.push(FieldError::invalid(
            rule,
            path.as_ref(),
            v.clone(),
            "must be a string",
        ));
    }
    text
}

/// The value of `parse`, the reading of `text` written at `path`: its warnings (non-canonical
/// text) go to `warnings`, a syntax error to `errors` with the error as detail, both under `rule`.
pub fn parsed<T, E: Display>(
    rule: RuleId,
    path: impl AsRef<str>,
    text: &str,
    parse: Result<Parsed<T>, E>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) -> Option<T> {
    let path = path.as_ref();
    match parse {
        Ok(p) => {
            warnings.extend(p.warnings.into_iter().map(|w| Warning::new(rule, path, w)));
            Some(p.value)
        }
        Err(e) => {
            errors.push(FieldError::invalid(rule, path, text, e.to_string()));
            None
        }
    }
}

/// An IP field at `path`: the text as written, and the address when it parses. A wrong type or
/// bad syntax is an error, non-canonical text a warning.
pub fn ip<'a>(
    rule: RuleId,
    obj: &'a Value,
    path: FieldPath,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) -> (Option<&'a str>, Option<Ip>) {
    ip_at(rule, obj, path, path, errors, warnings)
}

/// [`ip`] for the field `field` of `base` (a list entry), reported at `path`.
pub fn ip_at<'a>(
    rule: RuleId,
    base: &'a Value,
    field: FieldPath,
    path: impl AsRef<str>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) -> (Option<&'a str>, Option<Ip>) {
    let path = path.as_ref();
    let Some(text) = keep(at(string(rule, base, field), path), errors) else {
        return (None, None);
    };
    let ip = parsed(rule, path, text, parse_ip(text), errors, warnings);
    (Some(text), ip)
}

/// The address at `path` when there is one that parses; nothing is reported. What the index keeps
/// of an address object: one that does not parse holds nothing.
pub fn ip_value(obj: &Value, path: FieldPath) -> Option<Ip> {
    get(obj, path)
        .and_then(Value::as_str)
        .and_then(|s| parse_ip(s).ok())
        .map(|p| p.value)
}

/// A prefix length within the bound of `family`, or of IPv6 when the family is unknown.
pub fn in_family(raw: i64, family: Option<Family>) -> Option<u8> {
    check_prefix(family.unwrap_or(Family::V6), raw).ok()
}

/// A prefix length `raw`, written at `path` as `value`, within the bound of `family`, or of IPv6
/// when the family is unknown (129 is wrong whatever the address turns out to be). Never
/// narrowed: a prefix that does not fit is an error showing the value as written.
pub fn prefix_in_family(
    rule: RuleId,
    path: impl AsRef<str>,
    raw: i64,
    value: Option<&Value>,
    family: Option<Family>,
) -> Result<u8, FieldError> {
    check_prefix(family.unwrap_or(Family::V6), raw).map_err(|e| {
        FieldError::invalid(
            rule,
            path.as_ref(),
            value.cloned().unwrap_or(Value::Null),
            e.to_string(),
        )
    })
}

/// An optional prefix field at `path` of an address object, within `family`'s bound (see
/// [`prefix_in_family`]); None when absent or wrong, the error in `errors`.
pub fn prefix(
    rule: RuleId,
    obj: &Value,
    path: FieldPath,
    family: Option<Family>,
    errors: &mut Vec<FieldError>,
) -> Option<u8> {
    let raw = keep(integer(rule, obj, path), errors)?;
    keep(
        prefix_in_family(rule, path, raw, get(obj, path), family).map(Some),
        errors,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_are_never_wrapped() {
        let o = json!({"spec": {"prefix": 4294967320u64, "bad": "abc", "huge": 18446744073709551615u64, "f": 24.0}});
        assert_eq!(
            integer(RuleId::A2, &o, FieldPath::new("spec.prefix")).unwrap(),
            Some(4294967320)
        );
        assert_eq!(
            integer(RuleId::A2, &o, FieldPath::new("spec.huge")).unwrap(),
            Some(i64::MAX)
        );
        assert_eq!(
            integer(RuleId::A2, &o, FieldPath::new("spec.f")).unwrap(),
            Some(24)
        );
        let e = integer(RuleId::A2, &o, FieldPath::new("spec.bad")).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"spec.bad: Invalid value: "abc": must be an integer"#
        );
        assert_eq!(
            integer(RuleId::A2, &o, FieldPath::new("spec.missing")).unwrap(),
            None
        );
    }

    #[test]
    fn wrong_types_are_field_errors() {
        let o = json!({"spec": {"poolRef": "x", "name": 5}});
        assert!(object(RuleId::C1, &o, FieldPath::new("spec.poolRef")).is_err());
        assert!(string(RuleId::C1, &o, FieldPath::new("spec.name")).is_err());
        assert_eq!(
            string(RuleId::C1, &o, FieldPath::new("spec.none")).unwrap(),
            None
        );
    }
}
