//! Plain lookups in a JSON object by field path. Reading a field as its schema's type, and
//! keeping a value of the wrong type for a rule to show, is `written`'s; nothing here judges.

use serde_json::Value;

use crate::address::{check_prefix, parse_ip, Family, Ip};
use crate::field::FieldPath;

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
/// bad entries costs a thousand causes instead of 750k of them (docs/robustness.md, O1). A reader stops
/// decoding a list after this many entries the rules will surely find wrong.
pub const LIST_PROBLEMS: usize = 1_000;

/// The address at `path` when there is one that parses; nothing is reported. What the index keeps
/// of an address object: one that does not parse holds nothing.
pub(crate) fn ip_value(obj: &Value, path: FieldPath) -> Option<Ip> {
    get(obj, path)
        .and_then(Value::as_str)
        .and_then(|s| parse_ip(s).ok())
        .map(|p| p.value)
}

/// A prefix length within the bound of `family`, or of IPv6 when the family is unknown.
pub(crate) fn in_family(raw: i64, family: Option<Family>) -> Option<u8> {
    check_prefix(family.unwrap_or(Family::V6), raw).ok()
}
