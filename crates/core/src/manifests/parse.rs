//! Text to objects: documents turned into JSON values, and each value handed to `identify`.

use std::cell::RefCell;
use std::sync::Arc;

use serde::de::DeserializeSeed;
use serde_json::Value;

use super::collect::{Each, FileResult};
use super::identify::{dispatch, is_list, list_item};
use super::to_json::{ItemSink, ToJson};
use super::{LoadError, Problem, Source};

/// The items of one document's top-level `items` sequence, each through `each` as it is read:
/// what they give is kept apart until the document is known to be a `kind: List`.
struct ListItems<'s, 'e, T> {
    source: &'s Source,
    each: &'s Each<'e, T>,
    out: FileResult<T>,
    next: usize,
    /// Whether a sequence of `items` was read at all.
    seen: bool,
}

impl<'s, 'e, T> ListItems<'s, 'e, T> {
    fn new(source: &'s Source, each: &'s Each<'e, T>) -> Self {
        ListItems {
            source,
            each,
            out: FileResult::default(),
            next: 0,
            seen: false,
        }
    }
}

impl<T> ItemSink for ListItems<'_, '_, T> {
    fn sequence(&mut self) {
        self.seen = true;
    }
    fn item(&mut self, element: Value) {
        list_item(
            self.source.with_item(self.next),
            element,
            &mut self.out,
            self.each,
        );
        self.next += 1;
    }
}

/// A document read with its `items` streamed (`doc`, without them, and what the items gave):
/// a `kind: List` keeps what its items gave; any other document with an `items` sequence is
/// read again whole by `again` and dispatched as it always was (rare: the items are part of the
/// object then).
fn settle<T>(
    source: &Source,
    doc: Value,
    items: ListItems<'_, '_, T>,
    out: &mut FileResult<T>,
    each: &Each<T>,
    again: impl FnOnce() -> Option<Value>,
) {
    let listed = items.seen;
    match &doc {
        Value::Object(map) if listed && is_list(map) => out.append(items.out),
        _ if !listed => dispatch(source, doc, out, each),
        _ => match again() {
            Some(whole) => dispatch(source, whole, out, each),
            None => dispatch(source, doc, out, each),
        },
    }
}

pub(super) fn parse_yaml<T>(file: &Arc<str>, text: &str, each: &Each<T>) -> FileResult<T> {
    let mut out = FileResult::default();
    let lines = yaml_document_lines(text);
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let source = Source::document(file, i + 1, lines.get(i).copied());
        let refused = RefCell::new(None);
        let items = RefCell::new(ListItems::new(&source, each));
        let read = ToJson::streaming(&refused, &items).deserialize(doc);
        match read {
            Ok(v) => settle(&source, v, items.into_inner(), &mut out, each, || {
                let doc = serde_yaml_ng::Deserializer::from_str(text).nth(i)?;
                ToJson::document(&RefCell::new(None)).deserialize(doc).ok()
            }),
            Err(e) => {
                let at = e.location().map(|l| (l.line(), l.column()));
                let problem = match refused.into_inner() {
                    Some(r) => r.into_problem(at),
                    None => Problem::Yaml(with_template_hint(e.to_string(), text)),
                };
                out.errors.push(LoadError::new(source, problem));
                // The parser cannot resynchronise: later documents would repeat this error forever.
                break;
            }
        }
    }
    out
}

pub(super) fn parse_json<T>(file: &Arc<str>, text: &str, each: &Each<T>) -> FileResult<T> {
    let mut out = FileResult::default();
    let mut de = serde_json::Deserializer::from_str(text);
    // A file may hold several JSON values one after another (`kubectl get -o json` per object).
    let lines = json_value_lines(text);
    for i in 0.. {
        if de.end().is_ok() {
            break;
        }
        let source = Source::document(file, i + 1, lines.get(i).copied());
        let refused = RefCell::new(None);
        let items = RefCell::new(ListItems::new(&source, each));
        let read = ToJson::streaming(&refused, &items).deserialize(&mut de);
        match read {
            Ok(v) => settle(&source, v, items.into_inner(), &mut out, each, || {
                json_value(text, i)
            }),
            Err(e) => {
                let problem = match refused.into_inner() {
                    Some(r) => r.into_problem(Some((e.line(), e.column()))),
                    None => Problem::Json(e.to_string()),
                };
                out.errors.push(LoadError::new(source, problem));
                break;
            }
        }
    }
    out
}

/// The `i`th (0-based) top-level JSON value of `text`, read whole.
fn json_value(text: &str, i: usize) -> Option<Value> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    let mut start = 0;
    for _ in 0..i {
        values.next()?.ok()?;
        start = values.byte_offset();
    }
    let mut de = serde_json::Deserializer::from_str(&text[start..]);
    ToJson::document(&RefCell::new(None))
        .deserialize(&mut de)
        .ok()
}

/// The line (1-based) where each YAML document's content starts, in the order the parser yields
/// documents: after each `---` marker, or at the first line of content of a stream that starts
/// without one. Comments, blank lines and directives before content do not start a document.
pub(super) fn yaml_document_lines(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut in_document = false;
    for (i, line) in text.lines().enumerate() {
        let marker =
            line.starts_with("---") && line[3..].chars().next().is_none_or(char::is_whitespace);
        if marker {
            // Content may follow the marker on its own line (`--- !tag` or `--- {a: 1}`).
            let same_line = !line[3..].trim().is_empty() && !line[3..].trim().starts_with('#');
            starts.push(if same_line { i + 1 } else { i + 2 });
            in_document = true;
        } else if line.starts_with("...") {
            in_document = false;
        } else if !in_document {
            let t = line.trim_start();
            if !(t.is_empty() || t.starts_with('#') || line.starts_with('%')) {
                starts.push(i + 1);
                in_document = true;
            }
        }
    }
    starts
}

/// The line (1-based) where each top-level JSON value starts. Most files hold one value, which
/// starts at its first non-blank character; a stream of several is scanned once more, cheaply.
pub(super) fn json_value_lines(text: &str) -> Vec<usize> {
    let line_at = |offset: usize| text[..offset].bytes().filter(|b| *b == b'\n').count() + 1;
    let first = text.len() - text.trim_start().len();
    let mut lines = vec![line_at(first)];
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    // The first value's end tells whether another follows; only then is the rest scanned.
    if values.next().is_some_and(|v| v.is_ok()) {
        let mut end = values.byte_offset();
        if !text[end..].trim().is_empty() {
            while let Some(Ok(_)) = values.next() {
                let start = end + (text[end..].len() - text[end..].trim_start().len());
                lines.push(line_at(start));
                end = values.byte_offset();
            }
        }
    }
    lines
}

/// A cluster template may be YAML only once rendered (a whole block as one `${VAR}` line): the
/// error says so.
fn with_template_hint(error: String, text: &str) -> String {
    match super::template::placeholder_in(text) {
        Some(p) => format!(
            "{error} (the file holds placeholders such as {p}: render it first, or give their values with --var NAME=VALUE or --env)"
        ),
        None => error,
    }
}
