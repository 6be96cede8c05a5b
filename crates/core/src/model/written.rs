//! A spec field as written: absent, of the type its schema gives, or of another type,
//! kept so a rule can show it. A reader decodes an object into these once and judges nothing;
//! the rules (`rules`) say what is wrong, under their own ids.

use serde_json::Value;

use crate::address::{check_prefix, parse_ip, AddrError, Family, Ip, Parsed};
use crate::field::{FieldError, FieldPath};
use crate::rule_id::RuleId;

/// One field of a typed spec.
#[derive(Debug, Clone, PartialEq)]
pub enum Written<'a, T> {
    /// Missing, or null (the API server treats an explicit null as absent).
    Absent,
    Ok(T),
    /// Present, of another JSON type than the schema gives.
    Wrong(Wrong<'a>),
}

/// A value of the wrong JSON type, and the type that was expected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wrong<'a> {
    pub value: &'a Value,
    pub expected: Expected,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    String,
    Integer,
    Object,
    List,
    Boolean,
}

impl Wrong<'_> {
    /// `path: Invalid value: …: must be a string`, under `rule`. Containers are shown by their
    /// JSON text (cut at 64 characters by the formatter), not as whole objects; a wrong scalar
    /// and a non-string where a string belongs are shown as they are.
    pub fn error(&self, rule: RuleId, path: impl Into<String>) -> FieldError {
        let (detail, shown) = match self.expected {
            Expected::String => ("must be a string", self.value.clone()),
            Expected::Integer => ("must be an integer", self.value.clone()),
            Expected::Object => ("must be an object", short(self.value)),
            Expected::List => ("must be a list", short(self.value)),
            Expected::Boolean => ("must be a boolean", short(self.value)),
        };
        FieldError::invalid(rule, path, shown, detail)
    }
}

fn short(v: &Value) -> Value {
    match v {
        Value::Array(_) | Value::Object(_) => Value::String(v.to_string()),
        _ => v.clone(),
    }
}

impl<'a, T> Written<'a, T> {
    /// The value when it is of the right type.
    pub fn ok(&self) -> Option<&T> {
        match self {
            Written::Ok(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the value is there and of the right type, the value itself set aside: for a
    /// map whose keys were read on their own (a reference).
    pub fn present(&self) -> Written<'a, ()> {
        match self {
            Written::Absent => Written::Absent,
            Written::Ok(_) => Written::Ok(()),
            Written::Wrong(w) => Written::Wrong(*w),
        }
    }

    pub(crate) fn is_absent(&self) -> bool {
        matches!(self, Written::Absent)
    }

    /// The cause for a value of the wrong type, under `rule`; None otherwise.
    pub(crate) fn type_error(&self, rule: RuleId, path: impl Into<String>) -> Option<FieldError> {
        match self {
            Written::Wrong(w) => Some(w.error(rule, path)),
            _ => None,
        }
    }

    fn pick(
        v: Option<&'a Value>,
        expected: Expected,
        f: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Self {
        match v {
            None => Written::Absent,
            Some(v) => match f(v) {
                Some(t) => Written::Ok(t),
                None => Written::Wrong(Wrong { value: v, expected }),
            },
        }
    }
}

impl<T: Copy> Written<'_, T> {
    /// The value when it is of the right type, copied.
    pub fn get(&self) -> Option<T> {
        self.ok().copied()
    }
}

/// The string at `path` in `obj`.
pub fn string(obj: &Value, path: FieldPath) -> Written<'_, &str> {
    string_of(path.get(obj))
}

/// As [`string`], of a value already found; null is absent, as [`FieldPath::get`] has it.
pub(crate) fn string_of(value: Option<&Value>) -> Written<'_, &str> {
    Written::pick(
        value.filter(|v| !v.is_null()),
        Expected::String,
        Value::as_str,
    )
}

/// The object at `path` in `obj`.
pub fn object(obj: &Value, path: FieldPath) -> Written<'_, &Value> {
    Written::pick(path.get(obj), Expected::Object, |v| {
        v.is_object().then_some(v)
    })
}

/// The list at `path` in `obj`.
pub fn list(obj: &Value, path: FieldPath) -> Written<'_, &[Value]> {
    Written::pick(path.get(obj), Expected::List, |v| {
        v.as_array().map(Vec::as_slice)
    })
}

/// The boolean at `path` in `obj`.
pub fn boolean(obj: &Value, path: FieldPath) -> Written<'_, bool> {
    Written::pick(path.get(obj), Expected::Boolean, Value::as_bool)
}

/// The integer at `path` in `obj`, never truncated: `4294967320` stays that number, a number
/// past `i64` is `i64::MAX` (too large for any bound), `24.0` is 24, and `"abc"` or `2.5` are of
/// the wrong type.
pub fn integer(obj: &Value, path: FieldPath) -> Written<'_, i64> {
    integer_of(path.get(obj))
}

/// As [`integer`], of a value already found (a reader that also keeps the raw value for a
/// cause looks it up once); null is absent, as in [`string_of`].
pub(crate) fn integer_of(value: Option<&Value>) -> Written<'_, i64> {
    Written::pick(value.filter(|v| !v.is_null()), Expected::Integer, |v| {
        let n = v.as_number()?;
        if let Some(i) = n.as_i64() {
            return Some(i);
        }
        if n.as_u64().is_some() {
            return Some(i64::MAX);
        }
        let f = n.as_f64()?;
        (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
    })
}

/// An address field as written (an IP, a CIDR, a pool entry): its text and what parsing made
/// of it (the value with any non-canonical-text warnings, or the syntax error).
#[derive(Debug, Clone, PartialEq)]
pub struct Text<'a, T> {
    pub text: &'a str,
    pub parsed: Result<Parsed<T>, AddrError>,
}

pub(crate) type IpText<'a> = Text<'a, Ip>;

impl<T: Copy> Text<'_, T> {
    /// The value, when the text parses.
    pub fn value(&self) -> Option<T> {
        self.parsed.as_ref().ok().map(|p| p.value)
    }
}

/// An entry of a list of address texts, parsed by `parse`: a string, or a value of the wrong
/// type.
pub fn item<'a, T>(
    v: &'a Value,
    parse: impl FnOnce(&str) -> Result<Parsed<T>, AddrError>,
) -> Written<'a, Text<'a, T>> {
    match v.as_str() {
        Some(text) => Written::Ok(Text {
            text,
            parsed: parse(text),
        }),
        None => Written::Wrong(Wrong {
            value: v,
            expected: Expected::String,
        }),
    }
}

/// The IP address at `path` in `obj`, parsed.
pub fn ip(obj: &Value, path: FieldPath) -> Written<'_, IpText<'_>> {
    text(obj, path, parse_ip)
}

/// The string at `path` in `obj`, parsed by `parse`.
pub fn text<'a, T>(
    obj: &'a Value,
    path: FieldPath,
    parse: impl FnOnce(&str) -> Result<Parsed<T>, AddrError>,
) -> Written<'a, Text<'a, T>> {
    match string(obj, path) {
        Written::Absent => Written::Absent,
        Written::Wrong(w) => Written::Wrong(w),
        Written::Ok(text) => Written::Ok(Text {
            text,
            parsed: parse(text),
        }),
    }
}

/// The address, prefix and gateway of an address object (CAPI and Metal3 `IPAddress`), with
/// where each was read.
#[derive(Debug, Clone)]
pub struct AddressFields<'a> {
    pub address: Written<'a, IpText<'a>>,
    /// Never narrowed: checked against the address's family by [`AddressFields::prefix_len`].
    pub prefix: Written<'a, i64>,
    /// The prefix as written, for a cause's value.
    pub prefix_value: Option<&'a Value>,
    pub gateway: Written<'a, IpText<'a>>,
    pub paths: AddressPaths,
}

/// Where an address object keeps its address, prefix and gateway.
#[derive(Debug, Clone, Copy)]
pub struct AddressPaths {
    pub address: FieldPath,
    pub prefix: FieldPath,
    pub gateway: FieldPath,
}

impl<'a> AddressFields<'a> {
    pub fn read(obj: &'a Value, paths: AddressPaths) -> Self {
        let prefix_value = paths.prefix.get(obj);
        AddressFields {
            address: ip(obj, paths.address),
            prefix: integer_of(prefix_value),
            prefix_value,
            gateway: ip(obj, paths.gateway),
            paths,
        }
    }

    /// The address, when it parses.
    pub fn ip(&self) -> Option<Ip> {
        self.address.ok().and_then(Text::value)
    }

    /// The address as written, when it is a string.
    pub(crate) fn ip_text(&self) -> Option<&'a str> {
        self.address.ok().map(|t| t.text)
    }

    /// The gateway, when it parses.
    pub(crate) fn gateway_ip(&self) -> Option<Ip> {
        self.gateway.ok().and_then(Text::value)
    }

    /// The gateway as written, when it is a string.
    pub(crate) fn gateway_text(&self) -> Option<&'a str> {
        self.gateway.ok().map(|t| t.text)
    }

    /// The family the object is about: the address's, else the gateway's.
    pub fn family(&self) -> Option<Family> {
        self.ip().or(self.gateway_ip()).map(|ip| ip.family)
    }

    /// The prefix length when it is an integer within the bound of the object's family (of
    /// IPv6 when the family is unknown: 129 is wrong whatever the address turns out to be).
    pub fn prefix_len(&self) -> Option<u8> {
        let raw = self.prefix.get()?;
        check_prefix(self.family().unwrap_or(Family::V6), raw).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_are_never_wrapped() {
        let o = json!({"spec": {"prefix": 4294967320u64, "bad": "abc", "huge": 18446744073709551615u64, "f": 24.0, "half": 2.5}});
        let at = |p| integer(&o, FieldPath::new(p));
        assert_eq!(at("spec.prefix"), Written::Ok(4294967320));
        assert_eq!(at("spec.huge"), Written::Ok(i64::MAX));
        assert_eq!(at("spec.f"), Written::Ok(24));
        assert!(at("spec.missing").is_absent());
        let e = at("spec.bad").type_error(RuleId::A2, "spec.bad").unwrap();
        assert_eq!(
            e.to_string(),
            r#"spec.bad: Invalid value: "abc": must be an integer"#
        );
        let e = at("spec.half").type_error(RuleId::A2, "spec.half").unwrap();
        assert_eq!(
            e.to_string(),
            "spec.half: Invalid value: 2.5: must be an integer"
        );
    }

    #[test]
    fn null_is_absent_and_containers_are_shown_as_text() {
        let o = json!({"spec": {"gateway": null, "poolRef": ["a"], "name": {"x": 1}}});
        assert!(string(&o, FieldPath::new("spec.gateway")).is_absent());
        let e = object(&o, FieldPath::new("spec.poolRef"))
            .type_error(RuleId::C1, "spec.poolRef")
            .unwrap();
        assert_eq!(
            e.to_string(),
            r#"spec.poolRef: Invalid value: "[\"a\"]": must be an object"#
        );
        let e = string(&o, FieldPath::new("spec.name"))
            .type_error(RuleId::C1, "spec.name")
            .unwrap();
        assert_eq!(
            e.to_string(),
            r#"spec.name: Invalid value: {"x":1}: must be a string"#
        );
    }
}
