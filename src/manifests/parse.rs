//! Files to objects: every file parsed on its own worker, documents turned into JSON values, and
//! each value handed to `identify`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use serde::de::DeserializeSeed;
use serde_json::Value;

use super::find::{Format, Input};
use super::identify::{dispatch, is_list, list_item};
use super::template::Vars;
use super::to_json::{ItemSink, ToJson};
use super::{LoadError, Manifest, Other, Problem, Source};

/// Standard input as read (see `super::stdin_text`).
pub(super) static STDIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// What one file gave: its objects, each already through the caller's `each`.
#[derive(Debug)]
pub(super) struct FileResult<T = Manifest> {
    pub(super) manifests: Vec<T>,
    pub(super) errors: Vec<LoadError>,
    pub(super) skipped: BTreeMap<String, usize>,
    pub(super) skipped_at: Vec<(Source, String)>,
    pub(super) not_ipam: BTreeMap<String, usize>,
    pub(super) others: Vec<Other>,
    pub(super) not_objects: usize,
}

impl<T> Default for FileResult<T> {
    fn default() -> Self {
        FileResult {
            manifests: Vec::new(),
            errors: Vec::new(),
            skipped: BTreeMap::new(),
            skipped_at: Vec::new(),
            not_ipam: BTreeMap::new(),
            others: Vec::new(),
            not_objects: 0,
        }
    }
}

/// What a caller makes of each object, on the worker that read it, and which objects of kinds
/// ipam-guard does not judge it wants kept (by group and kind: those it has a CRD schema for).
pub(super) struct Each<'a, T> {
    pub(super) manifest: &'a (dyn Fn(Manifest) -> T + Sync + 'a),
    pub(super) keep_other: &'a (dyn Fn(&str, &str) -> bool + Sync + 'a),
    /// Template variables substituted into each file's text before it is parsed (`check --var`).
    pub(super) vars: Option<&'a Vars>,
}

impl<'a, T> Each<'a, T> {
    /// Every object of a served kind through `manifest`; no other object kept.
    pub(super) fn served(manifest: &'a (dyn Fn(Manifest) -> T + Sync + 'a)) -> Self {
        Each {
            manifest,
            keep_other: &|_, _| false,
            vars: None,
        }
    }
}

/// Parses inputs on every core (one file at a time per worker); results come back in input order.
/// With fewer files than cores, a large file's objects are handed to a second thread as they are
/// parsed, on a helper thread: one 163 MB `kind: List` would otherwise leave a core idle.
pub(super) fn parse_all<T: Send>(inputs: &[Input], each: &Each<T>) -> Vec<FileResult<T>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let helped = inputs.len() < cores;
    crate::par::map(inputs, 1, |input| parse_input(input, each, helped))
}

/// Below this size a file's objects are not worth a second thread.
const HELPED_BYTES: usize = 4 << 20;

/// Objects handed to the helper thread at a time, and batches in flight: enough that handing
/// over costs nothing next to the work, few enough that little waits in memory.
const BATCH: usize = 64;
const BATCHES_IN_FLIGHT: usize = 16;

fn parse_input<T: Send>(input: &Input, each: &Each<T>, helped: bool) -> FileResult<T> {
    let bytes = match &input.path {
        Some(p) => std::fs::read(p),
        None => {
            let mut buf = Vec::new();
            std::io::stdin().lock().read_to_end(&mut buf).map(|_| {
                // Kept for whoever points at lines later (`check`): stdin cannot be read twice.
                let _ = STDIN.set(String::from_utf8_lossy(&buf).into_owned());
                buf
            })
        }
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            return FileResult {
                errors: vec![LoadError::new(Source::file(&input.name), e)],
                ..FileResult::default()
            }
        }
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let problem = match input.format {
                Format::Yaml => Problem::Yaml(format!("not UTF-8 text ({e})")),
                Format::Json => Problem::Json(format!("not UTF-8 text ({e})")),
            };
            return FileResult {
                errors: vec![LoadError::new(Source::file(&input.name), problem)],
                ..FileResult::default()
            };
        }
    };
    // As clusterctl does, on the text: a value without line breaks leaves every line in place.
    let text = match each.vars {
        Some(vars) if text.contains('$') => super::template::substitute(&text, vars),
        _ => text,
    };
    let helped = helped && text.len() >= HELPED_BYTES;
    parse_text(&input.name, input.format, &text, each, helped)
}

/// Parses one file's text; `helped`: with the objects made on a second thread while the parser
/// goes on (same result, in the same order).
pub(super) fn parse_text<T: Send>(
    name: &Arc<str>,
    format: Format,
    text: &str,
    each: &Each<T>,
    helped: bool,
) -> FileResult<T> {
    let parse = |out: &mut dyn FnMut(Msg)| match format {
        Format::Yaml => parse_yaml_into(name, text, out),
        Format::Json => parse_json_into(name, text, out),
    };
    let mut taken = Taken::new(each);
    if !helped {
        parse(&mut |m| taken.take(m));
        return taken.out;
    }
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Msg>>(BATCHES_IN_FLIGHT);
        let helper = s.spawn(move || {
            for batch in rx {
                for m in batch {
                    taken.take(m);
                }
            }
            taken.out
        });
        let mut batch = Vec::with_capacity(BATCH);
        parse(&mut |m| {
            batch.push(m);
            if batch.len() >= BATCH {
                // The helper stops early only by panicking, which `join` raises below.
                let _ = tx.send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
            }
        });
        let _ = tx.send(batch);
        // Hangs up: the helper drains what is left and hands its result back.
        drop(tx);
        helper
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// What the parser tells whoever makes objects of its documents, in document order: on the
/// parser's own thread, or on a helper's.
enum Msg {
    /// An element of the current document's `items`, kept apart until the document is settled.
    Item(Source, Value),
    /// The current document was a `kind: List`: its items count.
    KeepItems,
    /// It was not (or could not be read): its items do not.
    DropItems,
    /// A whole document.
    Doc(Source, Value),
    Error(LoadError),
}

/// Documents made into objects through `each`, in the order the parser sent them.
struct Taken<'a, 'e, T> {
    each: &'a Each<'e, T>,
    out: FileResult<T>,
    /// What the current document's items gave, until it is settled.
    pending: FileResult<T>,
}

impl<'a, 'e, T> Taken<'a, 'e, T> {
    fn new(each: &'a Each<'e, T>) -> Self {
        Taken {
            each,
            out: FileResult::default(),
            pending: FileResult::default(),
        }
    }

    fn take(&mut self, m: Msg) {
        match m {
            Msg::Item(source, v) => list_item(source, v, &mut self.pending, self.each),
            Msg::KeepItems => self.out.append(std::mem::take(&mut self.pending)),
            Msg::DropItems => self.pending = FileResult::default(),
            Msg::Doc(source, v) => dispatch(&source, v, &mut self.out, self.each),
            Msg::Error(e) => self.out.errors.push(e),
        }
    }
}

impl<T> FileResult<T> {
    fn append(&mut self, other: FileResult<T>) {
        self.manifests.extend(other.manifests);
        self.errors.extend(other.errors);
        self.skipped_at.extend(other.skipped_at);
        self.others.extend(other.others);
        self.not_objects += other.not_objects;
        for (k, n) in other.skipped {
            *self.skipped.entry(k).or_default() += n;
        }
        for (k, n) in other.not_ipam {
            *self.not_ipam.entry(k).or_default() += n;
        }
    }
}

/// The items of one document's top-level `items` sequence, each sent on as it is read: what
/// they give is kept apart until the document is known to be a `kind: List`.
struct ListItems<'s, 'o> {
    source: &'s Source,
    out: &'o mut dyn FnMut(Msg),
    next: usize,
    /// Whether a sequence of `items` was read at all.
    seen: bool,
}

impl<'s, 'o> ListItems<'s, 'o> {
    fn new(source: &'s Source, out: &'o mut dyn FnMut(Msg)) -> Self {
        ListItems {
            source,
            out,
            next: 0,
            seen: false,
        }
    }
}

impl ItemSink for ListItems<'_, '_> {
    fn sequence(&mut self) {
        self.seen = true;
    }
    fn item(&mut self, element: Value) {
        (self.out)(Msg::Item(self.source.with_item(self.next), element));
        self.next += 1;
    }
}

/// A document read with its `items` streamed (`doc`, without them; `listed`: whether there was
/// an `items` sequence): a `kind: List` keeps what its items gave; any other document with an
/// `items` sequence is read again whole by `again` and dispatched as it always was (rare: the
/// items are part of the object then).
fn settle(
    source: &Source,
    doc: Value,
    listed: bool,
    out: &mut dyn FnMut(Msg),
    again: impl FnOnce() -> Option<Value>,
) {
    match &doc {
        Value::Object(map) if listed && is_list(map) => out(Msg::KeepItems),
        _ if !listed => out(Msg::Doc(source.clone(), doc)),
        _ => {
            out(Msg::DropItems);
            let whole = again().unwrap_or(doc);
            out(Msg::Doc(source.clone(), whole));
        }
    }
}

pub(super) fn parse_yaml<T>(file: &Arc<str>, text: &str, each: &Each<T>) -> FileResult<T> {
    let mut taken = Taken::new(each);
    parse_yaml_into(file, text, &mut |m| taken.take(m));
    taken.out
}

fn parse_yaml_into(file: &Arc<str>, text: &str, out: &mut dyn FnMut(Msg)) {
    let lines = yaml_document_lines(text);
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let source = Source::document(file, i + 1, lines.get(i).copied());
        let refused = RefCell::new(None);
        let items = RefCell::new(ListItems::new(&source, &mut *out));
        let read = ToJson::streaming(&refused, &items).deserialize(doc);
        let listed = items.into_inner().seen;
        match read {
            Ok(v) => settle(&source, v, listed, out, || {
                let doc = serde_yaml_ng::Deserializer::from_str(text).nth(i)?;
                ToJson::document(&RefCell::new(None)).deserialize(doc).ok()
            }),
            Err(e) => {
                let at = e.location().map(|l| (l.line(), l.column()));
                let problem = match refused.into_inner() {
                    Some(r) => r.into_problem(at),
                    None => Problem::Yaml(with_template_hint(e.to_string(), text)),
                };
                out(Msg::DropItems);
                out(Msg::Error(LoadError::new(source, problem)));
                // The parser cannot resynchronise: later documents would repeat this error forever.
                break;
            }
        }
    }
}

pub(super) fn parse_json<T>(file: &Arc<str>, text: &str, each: &Each<T>) -> FileResult<T> {
    let mut taken = Taken::new(each);
    parse_json_into(file, text, &mut |m| taken.take(m));
    taken.out
}

fn parse_json_into(file: &Arc<str>, text: &str, out: &mut dyn FnMut(Msg)) {
    let mut de = serde_json::Deserializer::from_str(text);
    // A file may hold several JSON values one after another (`kubectl get -o json` per object).
    let lines = json_value_lines(text);
    for i in 0.. {
        if de.end().is_ok() {
            break;
        }
        let source = Source::document(file, i + 1, lines.get(i).copied());
        let refused = RefCell::new(None);
        let items = RefCell::new(ListItems::new(&source, &mut *out));
        let read = ToJson::streaming(&refused, &items).deserialize(&mut de);
        let listed = items.into_inner().seen;
        match read {
            Ok(v) => settle(&source, v, listed, out, || json_value(text, i)),
            Err(e) => {
                let problem = match refused.into_inner() {
                    Some(r) => r.into_problem(Some((e.line(), e.column()))),
                    None => Problem::Json(e.to_string()),
                };
                out(Msg::DropItems);
                out(Msg::Error(LoadError::new(source, problem)));
                break;
            }
        }
    }
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
