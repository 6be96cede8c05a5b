//! An object of a review (`request.object`, `request.oldObject`), decoded into the `Value` tree
//! the rules read in the envelope's own pass, without `metadata.managedFields`: a fifth of a
//! create body and a third of an update's, read by nothing, and building then freeing its tree
//! was a third of a review's instructions. It is still checked as JSON.
//!
//! Nor does the tree hold the rest of the metadata nothing reads
//! ([`crate::model::UNREAD_METADATA`]: generation, owners, finalizers,
//! ...); those are read through as a tree would read them (`Skip`), so a body is refused or
//! judged as a plain `Value` would have it.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::numbers::quote_overflowing_numbers;
use super::skip::{Key, Skip};
use crate::model::UNREAD_METADATA;

/// The seed of one object, for `MapAccess::next_value_seed`.
pub(super) struct ObjectSeed;

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Level::Object.deserialize(d)
    }
}

/// An object sent as raw JSON (a forwarded X2 step), decoded as a review's objects are. A number
/// past an f64 is quoted for its field to judge, as in a review (docs/robustness.md, O5). It is
/// read as text: a `RawValue` is UTF-8 already, so its strings are not checked again.
pub(super) fn decode(raw: &RawValue) -> serde_json::Result<Value> {
    let text = raw.get();
    parse(serde_json::Deserializer::from_str(text)).or_else(|e| {
        match quote_overflowing_numbers(text.as_bytes()) {
            Some(quoted) if e.to_string().starts_with("number out of range") => {
                parse(serde_json::Deserializer::from_slice(&quoted))
            }
            _ => Err(e),
        }
    })
}

fn parse<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
) -> serde_json::Result<Value> {
    let value = ObjectSeed.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Where in the object a map sits, which says what to skip in it.
#[derive(Clone, Copy)]
enum Level {
    Object,
    Metadata,
}

/// What is done with the value of a key.
enum Take {
    /// Not checked beyond being JSON (`IgnoredAny`): `managedFields`, large and read by nothing.
    Ignore,
    /// Read through as a tree would read it, and not kept.
    Skip,
    Plain,
    Into(Level),
}

impl Level {
    fn take(self, key: &str) -> Take {
        match (self, key) {
            (Level::Object, "metadata") => Take::Into(Level::Metadata),
            (Level::Metadata, "managedFields") => Take::Ignore,
            (Level::Metadata, k) if UNREAD_METADATA.contains(&k) => Take::Skip,
            _ => Take::Plain,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Level {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// A map at a level reads its keys by `Level::take`; anything else is the plain `Value`.
impl<'de> Visitor<'de> for Level {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        // Keys are borrowed, and copied only when kept: the skipped ones (`managedFields`, `uid`,
        // ...) cost no allocation.
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match self.take(&key) {
                Take::Ignore => {
                    map.next_value::<IgnoredAny>()?;
                }
                Take::Skip => {
                    map.next_value::<Skip>()?;
                }
                Take::Plain => {
                    out.insert(key.into_owned(), map.next_value::<Value>()?);
                }
                Take::Into(level) => {
                    out.insert(key.into_owned(), map.next_value_seed(level)?);
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
    use crate::model::UNREAD_METADATA;
    use serde_json::json;

    #[test]
    fn same_tree_less_managed_fields_and_unread_metadata() {
        let object = json!({
            "apiVersion": "g/v", "kind": "K",
            "metadata": {"name": "n", "namespace": "ns", "labels": {"a": "b"},
                         "annotations": {"c": "d"}, "creationTimestamp": "2026-01-01T00:00:00Z",
                         "deletionTimestamp": "2026-01-02T00:00:00Z",
                         "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
                         "uid": "u", "resourceVersion": "7", "generation": 2, "generateName": "n-",
                         "selfLink": "/x", "finalizers": ["f"], "deletionGracePeriodSeconds": 30,
                         "ownerReferences": [{"kind": "Machine", "name": "m", "uid": "v"}]},
            "spec": {"addresses": ["10.0.0.1-10.0.0.9"], "prefix": 24, "big": 1.5e300, "neg": -3,
                     "uid": "spec keys are not metadata", "finalizers": ["kept"]},
            "status": {"allocatedIPs": "{}"}
        });
        let mut want = object.clone();
        let meta = want["metadata"].as_object_mut().unwrap();
        for &key in UNREAD_METADATA {
            assert!(meta.remove(key).is_some(), "{key} is in the test object");
        }
        assert_eq!(meta.len(), 8, "what the readers use stays: {meta:?}");
        assert_eq!(parse_text(&object.to_string()).unwrap(), want);
    }

    #[test]
    fn keys_with_escapes_are_read_as_their_text() {
        // Keys are borrowed from the body unless an escape makes them a copy; either way the
        // key is its text, kept or skipped as the plain key would be.
        let text = r#"{"metadata": {"n\u0061me": "x", "man\u0061gedFields": [1], "\u0075id": "u",
                       "labels": {"\u00e9t\u00e9": "y"}}, "sp\u0065c": {"k\"q": 1}}"#;
        assert_eq!(
            parse_text(text).unwrap(),
            json!({"metadata": {"name": "x", "uid": "u", "labels": {"été": "y"}}, "spec": {"k\"q": 1}})
        );
    }

    #[test]
    fn unread_metadata_is_refused_as_the_tree_refuses_it() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        for text in [
            format!(r#"{{"metadata": {{"ownerReferences": {deep}}}}}"#),
            r#"{"metadata": {"uid": "bad \x escape"}}"#.to_string(),
            r#"{"metadata": {"finalizers": ["a",]}}"#.to_string(),
            r#"{"metadata": {"generation": 1e400}}"#.to_string(),
        ] {
            let plain = serde_json::from_str::<Value>(&text).unwrap_err();
            assert_eq!(
                parse_text(&text).unwrap_err().to_string(),
                plain.to_string()
            );
        }
        // As in a review, a number past an f64 is quoted and read again (docs/robustness.md, O5).
        let r = RawValue::from_string(r#"{"metadata": {"generation": 1e400, "name": "n"}}"#.into())
            .unwrap();
        assert_eq!(decode(&r).unwrap(), json!({"metadata": {"name": "n"}}));
    }

    fn parse_text(text: &str) -> serde_json::Result<Value> {
        parse(serde_json::Deserializer::from_str(text))
    }

    #[test]
    fn shapes_that_are_not_an_object_decode_as_plain_json() {
        for text in [r#"[1, "a", null]"#, r#""text""#, "42", r#"{"metadata": 7}"#] {
            let plain: Value = serde_json::from_str(text).unwrap();
            let r = RawValue::from_string(text.to_string()).unwrap();
            assert_eq!(decode(&r).unwrap(), plain);
        }
    }

    #[test]
    fn overflowing_numbers_are_quoted_for_their_field_to_judge() {
        let r = RawValue::from_string(r#"{"spec": {"prefix": 1e400}}"#.to_string()).unwrap();
        assert_eq!(decode(&r).unwrap(), json!({"spec": {"prefix": "1e400"}}));
    }

    #[test]
    fn broken_json_in_managed_fields_is_refused_as_plain_json_refuses_it() {
        for text in [
            r#"{"metadata": {"managedFields": [1,}}"#,
            r#"{"metadata": {"managedFields": [1]}} trailing"#,
        ] {
            let plain = serde_json::from_str::<Value>(text).unwrap_err();
            assert_eq!(parse_text(text).unwrap_err().to_string(), plain.to_string());
        }
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let text = format!(r#"{{"spec": {deep}}}"#);
        let err = parse_text(&text).unwrap_err().to_string();
        assert!(err.contains("recursion limit"), "{err}");
    }
}
