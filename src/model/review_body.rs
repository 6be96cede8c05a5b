//! An AdmissionReview body parsed into the same `Value` tree `serde_json::from_slice` builds,
//! without the parts nothing reads: `request.{resource, subResource, requestKind,
//! requestResource, requestSubResource, options}` and `metadata.managedFields` of `object` and
//! `oldObject`. managedFields alone is a fifth of a create body and a third of an update's, and
//! building then freeing its tree was a third of a review's instructions (BENCHMARKS.md,
//! issue 14). Skipped parts are still checked as JSON, so a broken body is refused as before.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// `serde_json::from_slice::<Value>(body)`, less the skipped parts.
pub fn parse(body: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Level::Review.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Where in the review a map sits, which says what to skip in it.
#[derive(Clone, Copy)]
enum Level {
    Review,
    Request,
    Object,
    Metadata,
}

enum Key {
    Skip,
    Plain,
    Into(Level),
}

impl Level {
    fn key(self, key: &str) -> Key {
        match (self, key) {
            (Level::Review, "request") => Key::Into(Level::Request),
            (Level::Request, "object" | "oldObject") => Key::Into(Level::Object),
            (
                Level::Request,
                "resource" | "subResource" | "requestKind" | "requestResource"
                | "requestSubResource" | "options",
            ) => Key::Skip,
            (Level::Object, "metadata") => Key::Into(Level::Metadata),
            (Level::Metadata, "managedFields") => Key::Skip,
            _ => Key::Plain,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Level {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// A map at a level reads its keys by `Level::key`; anything else is the plain `Value`.
impl<'de> Visitor<'de> for Level {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match self.key(&key) {
                Key::Skip => {
                    map.next_value::<IgnoredAny>()?;
                }
                Key::Plain => {
                    out.insert(key, map.next_value::<Value>()?);
                }
                Key::Into(level) => {
                    out.insert(key, map.next_value_seed(level)?);
                }
            }
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review(object: Value) -> Value {
        json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "u", "kind": {"group": "g", "version": "v", "kind": "K"},
                "resource": {"group": "g", "version": "v", "resource": "ks"},
                "requestKind": {"group": "g", "version": "v", "kind": "K"},
                "requestResource": {"group": "g", "version": "v", "resource": "ks"},
                "operation": "UPDATE", "userInfo": {"username": "me", "groups": ["a"]},
                "options": {"kind": "UpdateOptions", "fieldManager": "kubectl"},
                "object": object.clone(), "oldObject": object, "dryRun": false
            }
        })
    }

    #[test]
    fn same_tree_less_the_unread_parts() {
        let object = json!({
            "apiVersion": "g/v", "kind": "K",
            "metadata": {"name": "n", "labels": {"a": "b"},
                         "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"addresses": ["10.0.0.1-10.0.0.9"], "prefix": 24, "big": 1.5e300, "neg": -3},
            "status": {"allocatedIPs": "{}"}
        });
        let body = serde_json::to_vec(&review(object)).unwrap();
        let mut want: Value = serde_json::from_slice(&body).unwrap();
        for k in ["resource", "requestKind", "requestResource", "options"] {
            want["request"].as_object_mut().unwrap().remove(k);
        }
        for o in ["object", "oldObject"] {
            want["request"][o]["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("managedFields");
        }
        assert_eq!(parse(&body).unwrap(), want);
    }

    #[test]
    fn shapes_that_are_not_a_review_parse_as_plain_json() {
        for body in [
            &br#"[1, "a", null]"#[..],
            br#""text""#,
            b"42",
            br#"{"request": "not an object", "x": [{}]}"#,
            br#"{"request": {"object": [1], "oldObject": {"metadata": 7}}}"#,
        ] {
            let plain: Value = serde_json::from_slice(body).unwrap();
            assert_eq!(parse(body).unwrap(), plain);
        }
    }

    #[test]
    fn broken_json_is_refused_with_the_same_error_even_in_skipped_parts() {
        for body in [
            &br#"{"request": {"options": {"a": }}}"#[..],
            br#"{"request": {"object": {"metadata": {"managedFields": [1,}}}}"#,
            br#"{"request": {"uid": "u"}} trailing"#,
            br#"{"request": {"uid": "u""#,
        ] {
            let plain = serde_json::from_slice::<Value>(body).unwrap_err();
            assert_eq!(parse(body).unwrap_err().to_string(), plain.to_string());
        }
    }

    #[test]
    fn nesting_past_the_limit_is_refused_where_it_is_read() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let body = format!(r#"{{"request": {{"object": {{"spec": {deep}}}}}}}"#);
        let err = parse(body.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("recursion limit"), "{err}");
    }
}
