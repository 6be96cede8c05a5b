//! YAML (or JSON) documents straight to `serde_json::Value`, refusing what JSON cannot hold.

use std::cell::RefCell;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_json::{Map, Value};

use super::Problem;
use crate::model::UNREAD_METADATA;

/// Builds a `serde_json::Value` from YAML events (or JSON) directly: half the work of going
/// through `serde_yaml_ng::Value`, which matters at 100k objects. Keeps what sigs.k8s.io/yaml
/// keeps: scalar keys become their text, tags are dropped for their value, `<<` merges (explicit
/// keys win, earlier merges win over later), and a key given twice is an error. Refuses what
/// JSON cannot hold faithfully: integers past 64 bits (parsers hand them over as u128 or as a
/// rounded float) and NaN or infinity.
///
/// Metadata that nothing reads (`UNREAD_METADATA`) is decoded, so it is checked as before, and
/// then dropped: at 100k objects the uids, timestamps and owner references would otherwise be
/// most of what a document keeps.
#[derive(Clone, Copy)]
pub(super) struct ToJson<'a> {
    /// What was refused, with its path filled in while the error travels up; so the error is
    /// reported at its field rather than as bad syntax.
    pub(super) refused: &'a RefCell<Option<ValueError>>,
    place: Place,
    /// Where the elements of a document's `items` go, one by one as they are read, instead of
    /// into the document (a `kind: List` of 200k objects is never held whole).
    items: Option<&'a RefCell<dyn ItemSink + 'a>>,
}

/// Takes the elements of a document's `items` sequence as they are read (`ToJson::streaming`).
pub(super) trait ItemSink {
    /// A sequence of `items` starts (it may be empty).
    fn sequence(&mut self);
    fn item(&mut self, element: Value);
}

/// Where in a document a value sits, as far as dropping unread metadata needs to know.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A whole document: maybe an object, maybe a `kind: List`.
    Document,
    /// An element of a bare list, or an item of a `kind: List`: maybe an object.
    Object,
    /// The `items` of a document.
    Items,
    /// The `metadata` of an object.
    Metadata,
    Other,
}

impl<'a> ToJson<'a> {
    /// Reads a whole document.
    pub(super) fn document(refused: &'a RefCell<Option<ValueError>>) -> Self {
        ToJson {
            refused,
            place: Place::Document,
            items: None,
        }
    }
    /// Reads one item of a `kind: List` read apart from its list (as `streaming` reads each).
    pub(super) fn list_item(refused: &'a RefCell<Option<ValueError>>) -> Self {
        ToJson {
            refused,
            place: Place::Object,
            items: None,
        }
    }
    /// Reads a whole document, handing the elements of a top-level `items` sequence to `items`
    /// as they are read: the value returned has no `items` then. Whether the document was a
    /// list is for the caller to tell from what is left (`kind`, `apiVersion`).
    pub(super) fn streaming(
        refused: &'a RefCell<Option<ValueError>>,
        items: &'a RefCell<dyn ItemSink + 'a>,
    ) -> Self {
        ToJson {
            refused,
            place: Place::Document,
            items: Some(items),
        }
    }
    fn at(self, place: Place) -> Self {
        ToJson { place, ..self }
    }
    /// Where the value of `key` sits, in a map at this place.
    fn member(self, key: &str) -> Self {
        self.at(match (self.place, key) {
            (Place::Object | Place::Document, "metadata") => Place::Metadata,
            (Place::Object | Place::Document, "items") => Place::Items,
            _ => Place::Other,
        })
    }
    /// Where an element sits, in a list at this place.
    fn element(self) -> Self {
        self.at(match self.place {
            Place::Object | Place::Document | Place::Items => Place::Object,
            _ => Place::Other,
        })
    }

    fn refuse<E: de::Error>(self, detail: String) -> E {
        let e = E::custom(&detail);
        *self.refused.borrow_mut() = Some(ValueError {
            rev_path: Vec::new(),
            detail,
        });
        e
    }
    /// Records one level of the refused value's path as the error passes through it.
    fn passing<E>(self, e: E, segment: impl FnOnce() -> Segment) -> E {
        if let Some(r) = self.refused.borrow_mut().as_mut() {
            r.rev_path.push(segment());
        }
        e
    }
}

impl<'de> DeserializeSeed<'de> for ToJson<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ToJson<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Err(self.refuse(format!("{v} does not fit in a 64-bit integer")))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        Err(self.refuse(format!("{v} does not fit in a 64-bit integer")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if let Some(detail) = float_problem(v) {
            return Err(self.refuse(detail));
        }
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        loop {
            match seq.next_element_seed(self.element()) {
                Ok(Some(v)) => out.push(v),
                Ok(None) => break,
                Err(e) => return Err(self.passing(e, || Segment::Index(out.len()))),
            }
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut merges: Vec<Value> = Vec::new();
        // Unread metadata left out, still counted for duplicates.
        let mut dropped: Vec<String> = Vec::new();
        // Whether a document's `items` sequence went to the sink (it is not in `out` then).
        let mut streamed = false;
        while let Some(key) = map.next_key_seed(KeyText)? {
            let sink = self
                .items
                .filter(|_| self.place == Place::Document && key == "items");
            let value = match sink {
                Some(sink) => match map.next_value_seed(Streamed {
                    to_json: self.member(&key),
                    sink,
                }) {
                    Ok(Some(v)) => v,
                    Ok(None) if streamed || out.contains_key(&key) => {
                        return Err(de::Error::custom(format!("duplicate key {key:?}")));
                    }
                    Ok(None) => {
                        streamed = true;
                        continue;
                    }
                    Err(e) => return Err(self.passing(e, || Segment::Key(key))),
                },
                None => match map.next_value_seed(self.member(&key)) {
                    Ok(v) => v,
                    Err(e) => return Err(self.passing(e, || Segment::Key(key))),
                },
            };
            if key == "<<" {
                match value {
                    Value::Array(list) => merges.extend(list),
                    v => merges.push(v),
                }
                continue;
            }
            if dropped.contains(&key) || (streamed && key == "items") {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            if self.place == Place::Metadata && UNREAD_METADATA.contains(&key.as_str()) {
                dropped.push(key);
                continue;
            }
            // One search of the map per key, for the duplicate check and the insert.
            match out.entry(key) {
                serde_json::map::Entry::Occupied(taken) => {
                    let key = taken.key();
                    return Err(de::Error::custom(format!("duplicate key {key:?}")));
                }
                serde_json::map::Entry::Vacant(free) => {
                    free.insert(value);
                }
            }
        }
        for merged in merges {
            let Value::Object(merged) = merged else {
                return Err(de::Error::custom("<< merges only mappings"));
            };
            for (k, v) in merged {
                // A streamed `items` is an explicit key: it wins over a merged one.
                if !(streamed && k == "items") {
                    out.entry(k).or_insert(v);
                }
            }
        }
        Ok(Value::Object(out))
    }
    fn visit_enum<A: EnumAccess<'de>>(self, tagged: A) -> Result<Value, A::Error> {
        // `!tag value`: Kubernetes gives custom tags no meaning; the value is what counts.
        let (_tag, value): (de::IgnoredAny, _) = tagged.variant()?;
        value.newtype_variant_seed(self)
    }
}

/// The value of a document's `items`: a sequence goes element by element to the sink (`None`
/// back), anything else is read as `ToJson` reads it.
struct Streamed<'a> {
    to_json: ToJson<'a>,
    sink: &'a RefCell<dyn ItemSink + 'a>,
}

impl<'de> DeserializeSeed<'de> for Streamed<'_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Streamed<'_> {
    type Value = Option<Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.to_json.visit_bool(v).map(Some)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.to_json.visit_i64(v).map(Some)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.to_json.visit_u64(v).map(Some)
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
        self.to_json.visit_i128(v).map(Some)
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
        self.to_json.visit_u128(v).map(Some)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.to_json.visit_f64(v).map(Some)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.to_json.visit_str(v).map(Some)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.to_json.visit_string(v).map(Some)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.to_json.visit_unit().map(Some)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.to_json.visit_none().map(Some)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.to_json.visit_map(map).map(Some)
    }
    fn visit_enum<A: EnumAccess<'de>>(self, tagged: A) -> Result<Self::Value, A::Error> {
        let (_tag, value): (de::IgnoredAny, _) = tagged.variant()?;
        value.newtype_variant_seed(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        self.sink.borrow_mut().sequence();
        let element = self.to_json.element();
        let mut i = 0;
        loop {
            match seq.next_element_seed(element) {
                Ok(Some(v)) => self.sink.borrow_mut().item(v),
                Ok(None) => break,
                Err(e) => return Err(self.to_json.passing(e, || Segment::Index(i))),
            }
            i += 1;
        }
        Ok(None)
    }
}

/// A mapping key as text (`1: a` → `"1"`), as sigs.k8s.io/yaml converts it.
struct KeyText;

impl<'de> DeserializeSeed<'de> for KeyText {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyText {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok("null".to_string())
    }
    fn visit_enum<A: EnumAccess<'de>>(self, tagged: A) -> Result<String, A::Error> {
        let (_tag, value): (de::IgnoredAny, _) = tagged.variant()?;
        value.newtype_variant_seed(self)
    }
}

/// A value JSON cannot hold as written, with its path built on the way back up (no cost when
/// nothing is wrong).
#[derive(Debug)]
pub(super) struct ValueError {
    /// Path segments, innermost first.
    rev_path: Vec<Segment>,
    detail: String,
}

#[derive(Debug)]
enum Segment {
    Key(String),
    Index(usize),
}

impl ValueError {
    pub(super) fn into_problem(self, at: Option<(usize, usize)>) -> Problem {
        let mut path = String::new();
        for s in self.rev_path.iter().rev() {
            match s {
                Segment::Key(k) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                }
                Segment::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        if path.is_empty() {
            path.push('.');
        }
        let at = at
            .map(|(line, column)| format!(" (line {line} column {column})"))
            .unwrap_or_default();
        Problem::Value {
            path,
            detail: format!("{}{at}", self.detail),
        }
    }
}

/// What is wrong with a float a parser handed over, if anything. Integers past u128 arrive as a
/// rounded float; keeping one would hand the rules a number nobody wrote.
fn float_problem(f: f64) -> Option<String> {
    if !f.is_finite() {
        return Some(format!("{f} is not a number JSON can hold"));
    }
    // -2^63 and 2^64: every integer inside is read as i64 or u64 before any float.
    let fits = (-9_223_372_036_854_775_808.0..18_446_744_073_709_551_616.0).contains(&f);
    (f.fract() == 0.0 && !fits).then(|| format!("{f:?} does not fit in a 64-bit integer"))
}
