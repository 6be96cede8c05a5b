//! Path-aware, lenient reads from a JSON object: each returns the value or a field error at its path.

use serde_json::Value;

use crate::rules::field::FieldError;

/// Follows a dotted path of object keys (`spec.poolRef.name`). Missing or null → None.
pub fn get<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    (!cur.is_null()).then_some(cur)
}

/// A string field. Missing → Ok(None); another type → Invalid at the path.
pub fn string<'a>(
    rule: &'static str,
    obj: &'a Value,
    path: &str,
) -> Result<Option<&'a str>, FieldError> {
    match get(obj, path) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(FieldError::invalid(
            rule,
            path,
            v.clone(),
            "must be a string",
        )),
    }
}

/// An integer field, never truncated: `4294967320` stays that number and `"abc"` is an error.
pub fn integer(rule: &'static str, obj: &Value, path: &str) -> Result<Option<i64>, FieldError> {
    match get(obj, path) {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => Ok(Some(i)),
            None if n.as_u64().is_some() => Ok(Some(i64::MAX)),
            None => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
                _ => Err(FieldError::invalid(
                    rule,
                    path,
                    Value::Number(n.clone()),
                    "must be an integer",
                )),
            },
        },
        Some(v) => Err(FieldError::invalid(
            rule,
            path,
            v.clone(),
            "must be an integer",
        )),
    }
}

/// An array field. Missing → Ok(None); another type → Invalid.
pub fn array<'a>(
    rule: &'static str,
    obj: &'a Value,
    path: &str,
) -> Result<Option<&'a [Value]>, FieldError> {
    match get(obj, path) {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a.as_slice())),
        Some(v) => Err(FieldError::invalid(rule, path, short(v), "must be a list")),
    }
}

/// An object field. Missing → Ok(None); another type → Invalid.
pub fn object<'a>(
    rule: &'static str,
    obj: &'a Value,
    path: &str,
) -> Result<Option<&'a Value>, FieldError> {
    match get(obj, path) {
        None => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v)),
        Some(v) => Err(FieldError::invalid(
            rule,
            path,
            short(v),
            "must be an object",
        )),
    }
}

/// A boolean field. Missing → Ok(None); another type → Invalid.
pub fn boolean(rule: &'static str, obj: &Value, path: &str) -> Result<Option<bool>, FieldError> {
    match get(obj, path) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(FieldError::invalid(
            rule,
            path,
            short(v),
            "must be a boolean",
        )),
    }
}

/// Containers are echoed by their JSON text (cut at 64 characters by the formatter), not as whole objects.
fn short(v: &Value) -> Value {
    match v {
        Value::Array(_) | Value::Object(_) => Value::String(v.to_string()),
        _ => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_are_never_wrapped() {
        let o = json!({"spec": {"prefix": 4294967320u64, "bad": "abc", "huge": 18446744073709551615u64, "f": 24.0}});
        assert_eq!(integer("A2", &o, "spec.prefix").unwrap(), Some(4294967320));
        assert_eq!(integer("A2", &o, "spec.huge").unwrap(), Some(i64::MAX));
        assert_eq!(integer("A2", &o, "spec.f").unwrap(), Some(24));
        let e = integer("A2", &o, "spec.bad").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"spec.bad: Invalid value: "abc": must be an integer"#
        );
        assert_eq!(integer("A2", &o, "spec.missing").unwrap(), None);
    }

    #[test]
    fn wrong_types_are_field_errors() {
        let o = json!({"spec": {"poolRef": "x", "name": 5}});
        assert!(object("C1", &o, "spec.poolRef").is_err());
        assert!(string("C1", &o, "spec.name").is_err());
        assert_eq!(string("C1", &o, "spec.none").unwrap(), None);
    }
}
