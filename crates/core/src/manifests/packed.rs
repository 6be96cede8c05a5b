//! A document held between reading and judging in as little memory as it takes: compact JSON
//! text (a few hundred bytes for an IPAM object), where a `serde_json::Value` holds several
//! kilobytes of map nodes. `check` keeps 100k objects this way and reads each back only when its
//! turn to be judged comes.

use serde_json::Value;

/// One document, packed. Reading it back gives a value equal to the one packed.
#[derive(Debug, Clone)]
pub struct Packed(Repr);

#[derive(Debug, Clone)]
enum Repr {
    Text(Box<[u8]>),
    /// A document with a fractional number stays a value: serde_json parses a float back to the
    /// nearest double only on a best effort, and a rule's message may print it. So does one
    /// nested deeper than serde_json reads back (128 levels).
    Whole(Box<Value>),
}

impl Packed {
    pub fn new(value: &Value) -> Packed {
        if !packs(value, MAX_DEPTH) {
            return Packed(Repr::Whole(Box::new(value.clone())));
        }
        match serde_json::to_vec(value) {
            Ok(text) => Packed(Repr::Text(text.into_boxed_slice())),
            Err(_) => Packed(Repr::Whole(Box::new(value.clone()))),
        }
    }

    /// The document again.
    pub fn unpack(&self) -> Value {
        match &self.0 {
            // Written by serde_json from a value just above: it reads back.
            Repr::Text(text) => serde_json::from_slice(text).unwrap_or(Value::Null),
            Repr::Whole(value) => (**value).clone(),
        }
    }
}

/// Below serde_json's recursion limit, with room to spare.
const MAX_DEPTH: usize = 100;

/// Whether `value` reads back from JSON text exactly: no float, and no deeper than `depth`.
fn packs(value: &Value, depth: usize) -> bool {
    match value {
        Value::Number(n) => !n.is_f64(),
        Value::Array(a) => depth > 0 && a.iter().all(|v| packs(v, depth - 1)),
        Value::Object(o) => depth > 0 && o.values().all(|v| packs(v, depth - 1)),
        Value::Null | Value::Bool(_) | Value::String(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_back_what_was_packed() {
        for v in [
            json!({"a": [1, -2, 18446744073709551615u64, "x", null, true], "b": {"c": "é"}}),
            json!({"prefix": 24.5, "tiny": 0.30000000000000004, "neg": -0.0}),
            json!([]),
            (0..200).fold(json!(1), |v, _| json!([v])),
        ] {
            let back = Packed::new(&v).unpack();
            assert_eq!(back, v);
            assert_eq!(back.to_string(), v.to_string());
        }
    }
}
