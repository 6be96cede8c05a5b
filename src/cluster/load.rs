//! Reading manifests from files and directories: what `check` judges and what `--state-from` serves.
//!
//! - Directories are walked recursively in sorted order (`.yaml`, `.yml`, `.json`; hidden entries
//!   skipped), so two runs over the same tree report in the same order. A file named on the
//!   command line is read whatever its extension; `-` is standard input.
//! - A file holds YAML documents (`---`) or a stream of JSON values; a document is an object, a
//!   `kind: List` (or `…List`) with `items`, or a bare list of objects.
//! - Objects of kinds outside `kinds::KINDS` are counted and skipped, unread beyond their type.
//! - Values stay as YAML gives them (`yes` is a string, `0x1F` is 31), but a number is never
//!   truncated: one that fits neither i64 nor u64 (in any object: it is caught while parsing) is an
//!   error naming the file, the document, the field and the line, as is a document that is not an
//!   object, or an object of a known kind that lacks `apiVersion`, `kind` or a name.
//!
//! Files are parsed on every core: 100k objects are mostly YAML scanning.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_json::{Map, Value};

use globset::GlobSet;

use crate::kinds::{Kind, KINDS};
use crate::model::ObjKey;

/// Where an object was read: file, document (1-based) and, inside a list, the item (0-based, as
/// in `items[3]`), plus the line (1-based) where its document starts, for editors and code
/// scanning (an item of a list carries its list's line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub file: Arc<str>,
    pub document: Option<usize>,
    pub item: Option<usize>,
    pub line: Option<usize>,
}

impl Source {
    fn file(file: &Arc<str>) -> Self {
        Source {
            file: file.clone(),
            document: None,
            item: None,
            line: None,
        }
    }
    fn document(file: &Arc<str>, document: usize, line: Option<usize>) -> Self {
        Source {
            file: file.clone(),
            document: Some(document),
            item: None,
            line,
        }
    }
    fn with_item(&self, item: usize) -> Self {
        Source {
            item: Some(item),
            ..self.clone()
        }
    }
}

impl fmt::Display for Source {
    /// `file`, `file: document 2`, `file: document 2: items[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(d) = self.document {
            write!(f, ": document {d}")?;
        }
        if let Some(i) = self.item {
            write!(f, ": items[{i}]")?;
        }
        Ok(())
    }
}

/// One object of a known kind, as read.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub source: Source,
    pub kind: Kind,
    /// The version of `apiVersion`, as written (it may be one the kind does not serve).
    pub version: String,
    pub key: ObjKey,
    /// The object. A namespaced object written without a namespace gets `default`, as `kubectl
    /// create` without `-n` would place it, so every rule sees the namespace it will live in.
    pub object: Value,
}

impl Manifest {
    /// The namespace (None when the kind is cluster-scoped).
    pub fn namespace(&self) -> Option<&str> {
        self.key.namespace.as_deref()
    }
    pub fn name(&self) -> &str {
        &self.key.name
    }
}

/// What is wrong with an input, without where (see `LoadError`).
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("cannot read: {0}")]
    Read(#[from] std::io::Error),
    #[error("not valid YAML: {0}")]
    Yaml(String),
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("expected an object, found {0}")]
    NotAnObject(&'static str),
    /// `apiVersion` names a group ipam-guard serves, but not this kind: a typo the API server
    /// would refuse with "no matches for kind". The text is built once (`unknown_kind`).
    #[error("{0}")]
    UnknownKind(Box<str>),
    #[error("{0} is missing")]
    Missing(&'static str),
    #[error("{field} must be {expected}, found {found}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    /// A value inside the object that JSON cannot hold faithfully (an oversized number, NaN).
    #[error("{path}: {detail}")]
    Value { path: String, detail: String },
}

impl Problem {
    /// A short stable name, for logs and metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Problem::Read(_) => "read",
            Problem::Yaml(_) => "yaml",
            Problem::Json(_) => "json",
            Problem::NotAnObject(_) => "not_an_object",
            Problem::UnknownKind(_) => "unknown_kind",
            Problem::Missing(_) => "missing_field",
            Problem::WrongType { .. } => "wrong_type",
            Problem::Value { .. } => "value",
        }
    }
}

/// An input that cannot be read as manifests: where, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {problem}")]
pub struct LoadError {
    pub at: Source,
    pub problem: Problem,
}

impl LoadError {
    fn new(source: Source, problem: impl Into<Problem>) -> Self {
        LoadError {
            at: source,
            problem: problem.into(),
        }
    }
}

/// Everything read from a set of paths. Errors do not stop the reading: every bad file is named,
/// and the readable objects are still there for a caller that wants to judge them.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Objects of known kinds, in path order, then file order (sorted within directories), then
    /// document order.
    pub manifests: Vec<Manifest>,
    pub errors: Vec<LoadError>,
    /// Objects of kinds outside `kinds::KINDS`, by `Kind.group` (`Kind` for the core group).
    pub skipped: BTreeMap<String, usize>,
    /// Where each skipped object was, with its `Kind.group` (for `check --strict`).
    pub skipped_at: Vec<(Source, String)>,
    /// Documents that are not Kubernetes objects (no `apiVersion` and `kind`: Helm values,
    /// Renovate or CI configuration next to the manifests), skipped.
    pub not_objects: usize,
    /// Files left out by an exclude pattern.
    pub excluded: usize,
    /// Files read (or attempted).
    pub files: usize,
}

impl Loaded {
    pub fn skipped_total(&self) -> usize {
        self.skipped.values().sum()
    }
}

/// Reads every path (files, directories, `-`). Never fails as a whole: see `Loaded::errors`.
pub fn read_paths(paths: &[PathBuf]) -> Loaded {
    read_paths_excluding(paths, &GlobSet::empty())
}

/// As `read_paths`, leaving out every file or directory whose path as shown (`dir/sub/x.yaml`)
/// or whose name matches one of `exclude`.
pub fn read_paths_excluding(paths: &[PathBuf], exclude: &GlobSet) -> Loaded {
    let mut loaded = Loaded::default();
    let mut walk = Walk {
        inputs: Vec::new(),
        seen: HashSet::new(),
        errors: &mut loaded.errors,
        exclude,
        excluded: 0,
    };
    for path in paths {
        walk.collect(path, true);
    }
    let (inputs, excluded) = (walk.inputs, walk.excluded);
    loaded.files = inputs.len();
    loaded.excluded = excluded;

    let results = parse_all(&inputs);
    for r in results {
        loaded.manifests.extend(r.manifests);
        loaded.errors.extend(r.errors);
        loaded.not_objects += r.not_objects;
        loaded.skipped_at.extend(r.skipped_at);
        for (k, n) in r.skipped {
            *loaded.skipped.entry(k).or_default() += n;
        }
    }
    loaded
}

/// Reads one string of YAML (or JSON) as if it were a file named `name`.
pub fn read_str(name: &str, text: &str) -> Loaded {
    let file: Arc<str> = Arc::from(name);
    let r = parse_yaml(&file, text);
    Loaded {
        manifests: r.manifests,
        errors: r.errors,
        skipped: r.skipped,
        skipped_at: r.skipped_at,
        not_objects: r.not_objects,
        excluded: 0,
        files: 1,
    }
}

// === Finding files ===

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Yaml,
    Json,
}

#[derive(Debug)]
struct Input {
    /// As shown in messages: the path as given, joined with the entries walked below it.
    name: Arc<str>,
    path: Option<PathBuf>,
    format: Format,
}

fn format_of(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "yaml" | "yml" => Some(Format::Yaml),
        "json" => Some(Format::Json),
        _ => None,
    }
}

struct Walk<'a> {
    inputs: Vec<Input>,
    seen: HashSet<PathBuf>,
    errors: &'a mut Vec<LoadError>,
    exclude: &'a GlobSet,
    excluded: usize,
}

impl Walk<'_> {
    fn excluded(&self, path: &Path) -> bool {
        !self.exclude.is_empty()
            && (self.exclude.is_match(path)
                || path
                    .file_name()
                    .is_some_and(|n| self.exclude.is_match(Path::new(n))))
    }

    fn collect(&mut self, path: &Path, explicit: bool) {
        if path.as_os_str() != "-" && self.excluded(path) {
            self.excluded += 1;
            return;
        }
        collect(
            path,
            explicit,
            &mut self.inputs,
            &mut self.seen,
            self.errors,
            &mut |child| {
                if self.exclude.is_empty() {
                    return false;
                }
                let hit = self.exclude.is_match(child)
                    || child
                        .file_name()
                        .is_some_and(|n| self.exclude.is_match(Path::new(n)));
                if hit {
                    self.excluded += 1;
                }
                hit
            },
        );
    }
}

fn collect(
    path: &Path,
    explicit: bool,
    inputs: &mut Vec<Input>,
    seen: &mut HashSet<PathBuf>,
    errors: &mut Vec<LoadError>,
    skip: &mut dyn FnMut(&Path) -> bool,
) {
    let name: Arc<str> = Arc::from(path.to_string_lossy().as_ref());
    if explicit && path.as_os_str() == "-" {
        inputs.push(Input {
            name: Arc::from("-"),
            path: None,
            format: Format::Yaml,
        });
        return;
    }
    // Following symlinks is what a user expects; the canonical path both dedups a file named
    // twice and stops a symlink loop.
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            errors.push(LoadError::new(Source::file(&name), e));
            return;
        }
    };
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if !seen.insert(canonical) {
        return;
    }
    if meta.is_dir() {
        let entries = match std::fs::read_dir(path) {
            Ok(rd) => rd,
            Err(e) => {
                errors.push(LoadError::new(Source::file(&name), e));
                return;
            }
        };
        let mut children: Vec<PathBuf> = Vec::new();
        for entry in entries {
            match entry {
                Ok(e) => {
                    if !e.file_name().to_string_lossy().starts_with('.') {
                        children.push(e.path());
                    }
                }
                Err(e) => errors.push(LoadError::new(Source::file(&name), e)),
            }
        }
        children.sort();
        for child in children {
            // Only manifests inside a directory: READMEs and scripts next to them are not errors.
            let is_dir = std::fs::metadata(&child).is_ok_and(|m| m.is_dir());
            if (is_dir || format_of(&child).is_some()) && !skip(&child) {
                collect(&child, false, inputs, seen, errors, skip);
            }
        }
    } else {
        inputs.push(Input {
            name,
            path: Some(path.to_path_buf()),
            format: format_of(path).unwrap_or(Format::Yaml),
        });
    }
}

// === Parsing ===

#[derive(Debug, Default)]
struct FileResult {
    manifests: Vec<Manifest>,
    errors: Vec<LoadError>,
    skipped: BTreeMap<String, usize>,
    skipped_at: Vec<(Source, String)>,
    not_objects: usize,
}

/// Parses inputs on up to `available_parallelism` threads; results come back in input order.
fn parse_all(inputs: &[Input]) -> Vec<FileResult> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(inputs.len());
    if workers <= 1 {
        return inputs.iter().map(parse_input).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<FileResult>>> = inputs.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(input) = inputs.get(i) else { break };
                let r = parse_input(input);
                *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or_default()
        })
        .collect()
}

fn parse_input(input: &Input) -> FileResult {
    let bytes = match &input.path {
        Some(p) => std::fs::read(p),
        None => {
            let mut buf = Vec::new();
            std::io::stdin().lock().read_to_end(&mut buf).map(|_| buf)
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
    match input.format {
        Format::Yaml => parse_yaml(&input.name, &text),
        Format::Json => parse_json(&input.name, &text),
    }
}

fn parse_yaml(file: &Arc<str>, text: &str) -> FileResult {
    let mut out = FileResult::default();
    let lines = yaml_document_lines(text);
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let source = Source::document(file, i + 1, lines.get(i).copied());
        let refused = RefCell::new(None);
        match (ToJson { refused: &refused }).deserialize(doc) {
            Ok(v) => dispatch(&source, v, &mut out),
            Err(e) => {
                let at = e.location().map(|l| (l.line(), l.column()));
                let problem = match refused.into_inner() {
                    Some(r) => r.into_problem(at),
                    None => Problem::Yaml(e.to_string()),
                };
                out.errors.push(LoadError::new(source, problem));
                // The parser cannot resynchronise: later documents would repeat this error forever.
                break;
            }
        }
    }
    out
}

fn parse_json(file: &Arc<str>, text: &str) -> FileResult {
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
        match (ToJson { refused: &refused }).deserialize(&mut de) {
            Ok(v) => dispatch(&source, v, &mut out),
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

// === Documents straight to JSON values ===

/// Builds a `serde_json::Value` from YAML events (or JSON) directly: half the work of going
/// through `serde_yaml_ng::Value`, which matters at 100k objects. Keeps what sigs.k8s.io/yaml
/// keeps: scalar keys become their text, tags are dropped for their value, `<<` merges (explicit
/// keys win, earlier merges win over later), and a key given twice is an error. Refuses what
/// JSON cannot hold faithfully: integers past 64 bits (parsers hand them over as u128 or as a
/// rounded float) and NaN or infinity.
#[derive(Clone, Copy)]
struct ToJson<'a> {
    /// What was refused, with its path filled in while the error travels up; so the error is
    /// reported at its field rather than as bad syntax.
    refused: &'a RefCell<Option<ValueError>>,
}

impl ToJson<'_> {
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
            match seq.next_element_seed(self) {
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
        while let Some(key) = map.next_key_seed(KeyText)? {
            let value = match map.next_value_seed(self) {
                Ok(v) => v,
                Err(e) => return Err(self.passing(e, || Segment::Key(key))),
            };
            if key == "<<" {
                match value {
                    Value::Array(list) => merges.extend(list),
                    v => merges.push(v),
                }
                continue;
            }
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            out.insert(key, value);
        }
        for merged in merges {
            let Value::Object(merged) = merged else {
                return Err(de::Error::custom("<< merges only mappings"));
            };
            for (k, v) in merged {
                out.entry(k).or_insert(v);
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

// === From documents to manifests ===

fn dispatch(source: &Source, doc: Value, out: &mut FileResult) {
    let doc = match doc {
        // An empty document (`---` twice, a trailing `---`) holds nothing.
        Value::Null => return,
        // A bare list of objects (what some tools write); a list of anything else is not
        // manifests (an Ansible playbook, a list of strings).
        Value::Array(elements) => {
            for (i, e) in elements.into_iter().enumerate() {
                if e.is_object() {
                    object(source.with_item(i), e, out, false);
                } else {
                    out.not_objects += 1;
                }
            }
            return;
        }
        Value::Object(o) => o,
        // A string that mentions apiVersion is a manifest gone wrong (a heredoc that lost its
        // newlines); any other scalar document is not a Kubernetes object.
        Value::String(text) if text.contains("apiVersion") => {
            out.errors.push(LoadError::new(
                source.clone(),
                Problem::NotAnObject("a string"),
            ));
            return;
        }
        _ => {
            out.not_objects += 1;
            return;
        }
    };
    let is_list = matches!(doc.get("kind"), Some(Value::String(k)) if k.ends_with("List"))
        && doc.contains_key("apiVersion");
    if !is_list {
        object(source.clone(), Value::Object(doc), out, false);
        return;
    }
    let mut doc = doc;
    match doc.remove("items") {
        // `kind: List` without items is an empty list.
        None | Some(Value::Null) => {}
        Some(Value::Array(elements)) => {
            for (i, e) in elements.into_iter().enumerate() {
                object(source.with_item(i), e, out, true);
            }
        }
        Some(other) => out.errors.push(LoadError::new(
            source.clone(),
            Problem::WrongType {
                field: "items",
                expected: "a list",
                found: json_type_name(&other),
            },
        )),
    }
}

/// One object: of a known kind (a manifest), of another kind (counted), or not a Kubernetes
/// object at all (counted). `in_list`: an item of a `kind: List`, which must be an object.
fn object(source: Source, mut object: Value, out: &mut FileResult, in_list: bool) {
    if !object.is_object() {
        let found = json_type_name(&object);
        out.errors
            .push(LoadError::new(source, Problem::NotAnObject(found)));
        return;
    }
    let field = |name: &'static str| -> Result<&str, Problem> {
        match object.get(name) {
            None | Some(Value::Null) => Err(Problem::Missing(name)),
            Some(Value::String(s)) if s.is_empty() => Err(Problem::Missing(name)),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(Problem::WrongType {
                field: name,
                expected: "a string",
                found: json_type_name(other),
            }),
        }
    };
    let (kind, version) = match (field("apiVersion"), field("kind")) {
        (Ok(api_version), Ok(kind)) => match Kind::from_api_version(api_version, kind) {
            Some(known) => known,
            None => {
                let group = api_version.rsplit_once('/').map(|(g, _)| g);
                let served: Vec<&'static str> = KINDS
                    .iter()
                    .filter(|k| Some(k.group) == group)
                    .map(|k| k.name)
                    .collect();
                if !served.is_empty() {
                    let hint = crate::schema::closest(kind, &served);
                    out.errors.push(LoadError::new(
                        source,
                        unknown_kind(api_version, kind, hint),
                    ));
                    return;
                }
                let label = match group {
                    Some(group) => format!("{kind}.{group}"),
                    None => kind.to_string(),
                };
                *out.skipped.entry(label.clone()).or_default() += 1;
                out.skipped_at.push((source, label));
                return;
            }
        },
        // Neither apiVersion nor kind, or one of them without anything that names a kind we
        // serve: not a Kubernetes object (Helm values, renovate.json). Inside a `kind: List`
        // every item must be one.
        (Err(_), Err(_)) if !in_list => {
            out.not_objects += 1;
            return;
        }
        (Err(_), Ok(kind)) if !in_list && !KINDS.iter().any(|k| k.name == kind) => {
            out.not_objects += 1;
            return;
        }
        (Ok(api_version), Err(_))
            if !in_list
                && !KINDS
                    .iter()
                    .any(|k| api_version.starts_with(&format!("{}/", k.group))) =>
        {
            out.not_objects += 1;
            return;
        }
        (Err(p), _) | (_, Err(p)) => {
            out.errors.push(LoadError::new(source, p));
            return;
        }
    };
    match identify(kind, &mut object) {
        Ok(key) => out.manifests.push(Manifest {
            source,
            kind,
            version,
            key,
            object,
        }),
        Err(p) => out.errors.push(LoadError::new(source, p)),
    }
}

fn unknown_kind(api_version: &str, kind: &str, hint: Option<&str>) -> Problem {
    let mut text = format!("no matches for kind {kind:?} in version {api_version:?}");
    if let Some(h) = hint {
        text.push_str(&format!(" (did you mean {h:?}?)"));
    }
    Problem::UnknownKind(text.into())
}

/// Reads name and namespace; fills in `default` for a namespaced object written without one.
fn identify(kind: Kind, object: &mut Value) -> Result<ObjKey, Problem> {
    let Some(meta) = object.get_mut("metadata") else {
        return Err(Problem::Missing("metadata.name"));
    };
    let found = json_type_name(meta);
    let Some(meta) = meta.as_object_mut() else {
        return Err(Problem::WrongType {
            field: "metadata",
            expected: "an object",
            found,
        });
    };
    let name = match meta.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        None | Some(Value::Null) | Some(Value::String(_)) => {
            return Err(Problem::Missing("metadata.name"))
        }
        Some(v) => {
            return Err(Problem::WrongType {
                field: "metadata.name",
                expected: "a string",
                found: json_type_name(v),
            })
        }
    };
    let namespace = match meta.get("namespace") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        None | Some(Value::Null) | Some(Value::String(_)) => None,
        Some(v) => {
            return Err(Problem::WrongType {
                field: "metadata.namespace",
                expected: "a string",
                found: json_type_name(v),
            })
        }
    };
    let namespace = match (kind.namespaced(), namespace) {
        (true, None) => {
            meta.insert("namespace".into(), Value::String("default".into()));
            Some("default".to_string())
        }
        (_, ns) => ns,
    };
    Ok(ObjKey::new(kind, namespace.as_deref(), &name))
}

fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A value JSON cannot hold as written, with its path built on the way back up (no cost when
/// nothing is wrong).
#[derive(Debug)]
struct ValueError {
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
    fn into_problem(self, at: Option<(usize, usize)>) -> Problem {
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

// === Where documents start ===

/// The line (1-based) where each YAML document's content starts, in the order the parser yields
/// documents: after each `---` marker, or at the first line of content of a stream that starts
/// without one. Comments, blank lines and directives before content do not start a document.
fn yaml_document_lines(text: &str) -> Vec<usize> {
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
fn json_value_lines(text: &str) -> Vec<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(l: &Loaded) -> Vec<String> {
        l.errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn multi_document_lists_and_unknown_kinds() {
        let l = read_str(
            "x.yaml",
            r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
---
apiVersion: v1
kind: List
items:
- apiVersion: ipam.cluster.x-k8s.io/v1beta2
  kind: IPAddressClaim
  metadata: {name: a, namespace: ns}
- apiVersion: cluster.x-k8s.io/v1beta1
  kind: Cluster
  metadata: {name: c}
---
---
- apiVersion: ipam.cluster.x-k8s.io/v1alpha2
  kind: GlobalInClusterIPPool
  metadata: {name: g, namespace: ignored}
"#,
        );
        assert_eq!(errors(&l), Vec::<String>::new());
        assert_eq!(l.manifests.len(), 2);
        assert_eq!(
            l.manifests[0].source.to_string(),
            "x.yaml: document 2: items[0]"
        );
        assert_eq!(l.manifests[0].key.ns_name(), "ns/a");
        assert_eq!(l.manifests[1].key.ns_name(), "g");
        assert_eq!(
            l.manifests[1].source.to_string(),
            "x.yaml: document 4: items[0]"
        );
        assert_eq!(l.skipped.get("ConfigMap"), Some(&1));
        assert_eq!(l.skipped.get("Cluster.cluster.x-k8s.io"), Some(&1));
    }

    #[test]
    fn namespace_defaults_for_namespaced_kinds() {
        let l = read_str(
            "x.yaml",
            "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\n",
        );
        assert_eq!(l.manifests[0].namespace(), Some("default"));
        assert_eq!(l.manifests[0].object["metadata"]["namespace"], "default");
    }

    #[test]
    fn bad_documents_name_file_and_document() {
        let cases = [
            ("foo: [", "x.yaml: document 1: not valid YAML: "),
            ("kind: IPAddress\nmetadata: {name: a}\n", "x.yaml: document 1: apiVersion is missing"),
            ("apiVersion: ipam.cluster.x-k8s.io/v1beta2\n", "x.yaml: document 1: kind is missing"),
            ("apiVersion: 5\nkind: IPPool\n", "x.yaml: document 1: apiVersion must be a string, found a number"),
            (
                "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAdress\nmetadata: {name: a}\n",
                "x.yaml: document 1: no matches for kind \"IPAdress\" in version \"ipam.cluster.x-k8s.io/v1beta2\" (did you mean \"IPAddress\"?)",
            ),
            (
                "apiVersion: ipam.metal3.io/v1alpha1\nkind: Whatever\nmetadata: {name: a}\n",
                "x.yaml: document 1: no matches for kind \"Whatever\" in version \"ipam.metal3.io/v1alpha1\"\n",
            ),
            (
                "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {namespace: n}\n",
                "x.yaml: document 1: metadata.name is missing",
            ),
            (
                "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: foo\n",
                "x.yaml: document 1: metadata must be an object, found a string",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\nspec: {prefix: 99999999999999999999}\n",
                "x.yaml: document 2: spec.prefix: 99999999999999999999 does not fit in a 64-bit integer",
            ),
            (
                "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\nspec: {prefix: 9999999999999999999999999999999999999999999}\n",
                "x.yaml: document 1: spec.prefix: 1e43 does not fit in a 64-bit integer",
            ),
            (
                "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\nspec: {prefix: .nan}\n",
                "x.yaml: document 1: spec.prefix: NaN is not a number JSON can hold (line 4",
            ),
            (
                "apiVersion: v1\nkind: List\nitems: [5]\n",
                "x.yaml: document 1: items[0]: expected an object, found a number",
            ),
        ];
        for (text, want) in cases {
            let l = read_str("x.yaml", text);
            let got = errors(&l);
            assert_eq!(got.len(), 1, "{text:?}: {got:?}");
            // A want ending in a newline is the whole message.
            let (got_text, want) = match want.strip_suffix('\n') {
                Some(w) => (got[0].clone() + "\n", format!("{w}\n")),
                None => (got[0].clone(), want.to_string()),
            };
            assert!(
                got_text.starts_with(&want),
                "{text:?}: {got:?} does not start with {want:?}"
            );
        }
    }

    #[test]
    fn documents_that_are_not_kubernetes_objects_are_counted_not_errors() {
        // Helm values, Renovate and CI files, scalars, an Ansible-style list, a kind of ours
        // nowhere in sight.
        let cases = [
            "replicaCount: 2\nimage: {repository: foo}\n",
            "--- just text\n",
            "---\n42\n",
            "- hosts: all\n  tasks: []\n- 5\n",
            "apiVersion: 5\nkind: X\n",
            "kind: Pipeline\nsteps: []\n",
            "apiVersion: tekton.dev/v1\nsteps: []\n",
        ];
        for text in cases {
            let l = read_str("x.yaml", text);
            assert!(l.errors.is_empty(), "{text:?}: {:?}", errors(&l));
            assert!(l.manifests.is_empty());
            assert!(l.not_objects >= 1, "{text:?}");
        }
    }

    #[test]
    fn every_object_knows_the_line_its_document_starts_on() {
        let text = "# pools\n\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n\
                    apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\n\
                    --- # next\nfoo: bar\n...\n---\napiVersion: v1\nkind: List\n\
                    items:\n- apiVersion: ipam.cluster.x-k8s.io/v1beta2\n  kind: IPAddress\n  metadata: {name: b}\n";
        let l = read_str("x.yaml", text);
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        let at: Vec<(Option<usize>, Option<usize>)> = l
            .manifests
            .iter()
            .map(|m| (m.source.document, m.source.line))
            .collect();
        assert_eq!(at, [(Some(2), Some(7)), (Some(4), Some(14))]);
        assert_eq!(l.skipped_at.len(), 1);
        assert_eq!(l.skipped_at[0].0.line, Some(3));
        assert_eq!(yaml_document_lines("--- {a: 1}\n---\nb: 2\n"), [1, 3]);
        assert_eq!(
            json_value_lines("\n{\"a\": 1}\n{\n\"b\": 2}\n  [1]"),
            [2, 3, 5]
        );
        assert_eq!(json_value_lines("{}"), [1]);
    }

    #[test]
    fn yaml_values_stay_as_written_and_numbers_whole() {
        let l = read_str(
            "x.yaml",
            "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\nspec: {prefix: 4294967320, address: yes, gateway: 012, big: 18446744073709551615, neg: -5, f: 24.5}\n",
        );
        assert_eq!(errors(&l), Vec::<String>::new());
        let spec = &l.manifests[0].object["spec"];
        assert_eq!(spec["prefix"].as_u64(), Some(4294967320));
        assert_eq!(spec["address"], "yes");
        assert_eq!(spec["gateway"], "012");
        assert_eq!(spec["big"].as_u64(), Some(u64::MAX));
        assert_eq!(spec["neg"].as_i64(), Some(-5));
        assert_eq!(spec["f"].as_f64(), Some(24.5));
    }

    #[test]
    fn yaml_merges_tags_scalar_keys_and_duplicates() {
        let l = read_str(
            "x.yaml",
            "base: &ref {address: 10.0.0.1, prefix: 24}\n\
             apiVersion: !custom ipam.cluster.x-k8s.io/v1beta2\n\
             kind: IPAddress\n\
             metadata: {name: a, labels: {1: one, true: yes}}\n\
             spec:\n  <<: *ref\n  prefix: 25\n",
        );
        assert_eq!(errors(&l), Vec::<String>::new());
        let o = &l.manifests[0].object;
        assert_eq!(o["spec"]["address"], "10.0.0.1");
        assert_eq!(
            o["spec"]["prefix"], 25,
            "explicit keys win over merged ones"
        );
        assert_eq!(o["metadata"]["labels"]["1"], "one");
        assert_eq!(o["metadata"]["labels"]["true"], "yes");

        let l = read_str("x.yaml", "apiVersion: v1\nkind: ConfigMap\nkind: Secret\n");
        assert_eq!(errors(&l).len(), 1);
        assert!(
            errors(&l)[0].contains("duplicate key \"kind\""),
            "{:?}",
            errors(&l)
        );
    }

    #[test]
    fn json_numbers_are_checked_and_streams_read() {
        let file: Arc<str> = Arc::from("x.json");
        let r = parse_json(
            &file,
            r#"{"apiVersion":"ipam.cluster.x-k8s.io/v1beta2","kind":"IPAddress","metadata":{"name":"a"},"spec":{"prefix":99999999999999999999}}"#,
        );
        assert_eq!(r.errors.len(), 1);
        assert_eq!(
            r.errors[0].to_string(),
            "x.json: document 1: spec.prefix: 1e20 does not fit in a 64-bit integer (line 1 column 126)"
        );
        let r = parse_json(
            &file,
            r#"[{"apiVersion":"v1","kind":"ConfigMap","data":{"x":[1, 1e400]}}]"#,
        );
        assert_eq!(r.errors.len(), 1);
        assert!(
            r.errors[0]
                .to_string()
                .starts_with("x.json: document 1: not valid JSON: number out of range"),
            "{}",
            r.errors[0]
        );
        // Values one after another, as `kubectl get -o json` of several objects prints them.
        let r = parse_json(
            &file,
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}\n\n{\"apiVersion\":\"v1\",\"kind\":\"Secret\"}\n  ",
        );
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.skipped.len(), 2);
        let r = parse_json(&file, "");
        assert!(r.errors.is_empty() && r.skipped.is_empty());
        let r = parse_json(&file, "{\"apiVersion\": \"v1\", \"kind\": \"Secret\"} x");
        assert_eq!(r.errors.len(), 1);
        assert!(
            r.errors[0]
                .to_string()
                .starts_with("x.json: document 2: not valid JSON"),
            "{}",
            r.errors[0]
        );
    }
}
