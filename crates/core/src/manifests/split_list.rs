//! One large JSON `kind: List` (what `kubectl get -o json` writes) read on several cores: a byte
//! scan finds where each item starts and ends, and each core parses and judges a run of items
//! on its own (a value is freed on the thread that made it). Anything unusual (not one object,
//! not a `List`, a malformed item, a value JSON cannot hold) gives `None`, and the caller reads
//! the file the ordinary way, which then says what is wrong exactly as it always did.

use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

use serde::de::DeserializeSeed;

use super::collect::{Each, FileResult};
use super::identify::list_item;
use super::parse::{json_value_lines, parse_json};
use super::to_json::ToJson;
use super::Source;

/// Below this size one thread reads a file faster than several could be started.
pub(super) const MIN_BYTES: usize = 4 << 20;

/// The file's objects as `parse_json` gives them, read on `cores` threads; None when the file is
/// not one well-formed `kind: List` whose items are all readable.
pub(super) fn parse<T: Send>(
    file: &Arc<str>,
    text: &str,
    each: &Each<T>,
    cores: usize,
) -> Option<FileResult<T>> {
    let items = items_of(text.as_bytes())?;
    // The list without its items: what is left must read as a `kind: List`, as it would whole.
    let rest = format!(
        "{}[]{}",
        &text[..items.array.start],
        &text[items.array.end..]
    );
    let shell = parse_json(file, &rest, each);
    if !(shell.errors.is_empty()
        && shell.manifests.is_empty()
        && shell.not_objects == 0
        && shell.skipped.is_empty()
        && shell.not_ipam.is_empty()
        && shell.others.is_empty()
        && is_list(&rest))
    {
        return None;
    }
    let source = Source::document(file, 1, json_value_lines(text).first().copied());
    let elements = &items.elements;
    let per = elements.len().div_ceil(cores.max(1)).max(1);
    let parts: Vec<Option<FileResult<T>>> = std::thread::scope(|s| {
        let handles: Vec<_> = elements
            .chunks(per)
            .enumerate()
            .map(|(c, chunk)| {
                let source = &source;
                s.spawn(move || {
                    let mut out = FileResult::default();
                    for (j, range) in chunk.iter().enumerate() {
                        let refused = RefCell::new(None);
                        let mut de = serde_json::Deserializer::from_str(&text[range.clone()]);
                        let value = ToJson::list_item(&refused).deserialize(&mut de).ok()?;
                        de.end().ok()?;
                        list_item(source.with_item(c * per + j), value, &mut out, each);
                    }
                    Some(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut out = FileResult::default();
    for part in parts {
        out.append(part?);
    }
    Some(out)
}

/// Whether `text` (one JSON object) says `"kind": "List"` or `"…List"` at its top level.
fn is_list(text: &str) -> bool {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text) else {
        return false;
    };
    super::identify::is_list(&map)
}

/// Where a top-level `items` array sits in one JSON object, and each of its elements.
#[derive(Debug, PartialEq)]
struct Items {
    /// From `[` to past `]`.
    array: Range<usize>,
    elements: Vec<Range<usize>>,
}

/// Scans one JSON object for its top-level `items` array. None unless the text is exactly one
/// object (whitespace around it) with one `items` key whose value is an array. Not a validator:
/// whatever it lets through is parsed afterwards, and any error there falls back.
fn items_of(b: &[u8]) -> Option<Items> {
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut found = None;
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b'}' => {
                i += 1;
                break;
            }
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key = i;
        i = skip_string(b, i)?;
        let is_items = &b[key..i] == b"\"items\"";
        i = skip_ws(b, i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        if is_items {
            if found.is_some() || b.get(i) != Some(&b'[') {
                return None;
            }
            let start = i;
            let mut elements = Vec::new();
            i += 1;
            loop {
                i = skip_ws(b, i);
                match b.get(i)? {
                    b']' => {
                        i += 1;
                        break;
                    }
                    b',' => {
                        i += 1;
                        continue;
                    }
                    _ => {}
                }
                let e = i;
                i = skip_value(b, i)?;
                elements.push(e..i);
            }
            found = Some(Items {
                array: start..i,
                elements,
            });
        } else {
            i = skip_value(b, i)?;
        }
    }
    (skip_ws(b, i) == b.len()).then_some(())?;
    found
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Past the string that starts at `i` (a `"`).
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// Past the value that starts at `i`: a string, or anything up to the `,`, `]` or `}` that ends
/// it at its own depth.
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match b.get(i) {
            Some(b'"') => i = skip_string(b, i)?,
            Some(b'{' | b'[') => {
                depth += 1;
                i += 1;
            }
            Some(b'}' | b']') if depth == 0 => return Some(i),
            Some(b'}' | b']') => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            Some(b',') if depth == 0 => return Some(i),
            Some(_) => i += 1,
            None => return (depth == 0).then_some(i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests::Manifest;

    #[test]
    fn finds_the_items_and_nothing_else() {
        let text = r#" {"apiVersion": "v1", "items": [{"a": "x]}\"y"}, [1, {"b": 2}], "s", 3 ], "kind": "List"} "#;
        let found = items_of(text.as_bytes()).expect("one list");
        let elements: Vec<&str> = found.elements.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(
            elements,
            [r#"{"a": "x]}\"y"}"#, r#"[1, {"b": 2}]"#, r#""s""#, "3 "]
        );
        assert_eq!(
            &text[found.array.clone()],
            r#"[{"a": "x]}\"y"}, [1, {"b": 2}], "s", 3 ]"#
        );
        for not_one in [
            r#"{"items": [1], "items": [2]}"#,
            r#"{"items": {}}"#,
            r#"{"kind": "List"} {"items": []}"#,
            r#"[{"items": []}]"#,
            r#"{"items": [1, "#,
            r#"{"kind": "List"}"#,
        ] {
            assert_eq!(items_of(not_one.as_bytes()), None, "{not_one}");
        }
    }

    /// Split across threads or not, a List reads the same, in the same order; what is not one
    /// clean List is left to the ordinary reader.
    #[test]
    fn a_split_list_reads_as_a_whole_one() {
        let address = |i: usize| {
            format!(
                r#"{{"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress", "metadata": {{"name": "a-{i}", "namespace": "ns", "uid": "u"}}, "spec": {{"address": "10.0.0.{i}"}}}}"#
            )
        };
        let mut items: Vec<String> = (0..301).map(address).collect();
        items.insert(7, "5".to_string());
        items.insert(
            9,
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}"#.to_string(),
        );
        items.insert(
            11,
            r#"{"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}"#
                .to_string(),
        );
        let list = format!(
            "{{\n  \"apiVersion\": \"v1\",\n  \"items\": [{}],\n  \"kind\": \"List\", \"metadata\": {{}}}}\n",
            items.join(",\n")
        );
        let file: Arc<str> = Arc::from("l.json");
        let each = |m: Manifest| m;
        let whole = parse_json(&file, &list, &Each::served(&each));
        assert_eq!(whole.manifests.len(), 301);
        for cores in [2, 3, 400] {
            let split = parse(&file, &list, &Each::served(&each), cores).expect("a clean list");
            assert_eq!(format!("{whole:?}"), format!("{split:?}"), "{cores} cores");
        }
        for falls_back in [
            list.replace("\"List\"", "\"Thing\""),
            list.replace("10.0.0.5\"", "10.0.0.5\", \"n\": 1e400"),
            list.replace("\"a-3\"", "\"a-3\" \"oops\""),
            format!("{list}{list}"),
        ] {
            assert!(parse(&file, &falls_back, &Each::served(&each), 2).is_none());
        }
    }
}
