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
//!
//! `find` walks the paths, `parse` reads each file, `to_json` turns documents into values and
//! `identify` turns values into manifests; `packed` holds a document compactly until it is needed.

mod collect;
mod find;
mod identify;
pub mod lines;
mod packed;
mod parse;
mod read;
mod split_list;
pub mod template;
#[cfg(test)]
mod tests;
mod to_json;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use globset::GlobSet;
use serde_json::Value;

use crate::kinds::Kind;
use crate::model::ObjKey;

pub use packed::Packed;

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

/// An object of a kind ipam-guard does not judge, kept whole (see `read_paths_keeping`).
#[derive(Debug, Clone)]
pub struct Other {
    pub source: Source,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub object: Value,
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
    /// `apiVersion` names a group ipam-guard serves and, instead of one of its kinds, a near miss
    /// of one that no provider publishes: a typo the API server would refuse with "no matches
    /// for kind". The text is built once (`unknown_kind`).
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
#[derive(Debug)]
pub struct Loaded<T = Manifest> {
    /// Objects of known kinds, in path order, then file order (sorted within directories), then
    /// document order (as made by `read_paths_each`'s `each`, when read that way).
    pub manifests: Vec<T>,
    pub errors: Vec<LoadError>,
    /// Objects of kinds outside `kinds::KINDS` that are not Kubernetes' own (a provider's
    /// Metal3MachineTemplate, another CRD), by `Kind.group`, unless kept in `others`.
    pub skipped: BTreeMap<String, usize>,
    /// Where each of `skipped` was, with its `Kind.group` (for `check --strict`).
    pub skipped_at: Vec<(Source, String)>,
    /// Objects of Kubernetes' own kinds (Namespace, ConfigMap, Deployment.apps): not IPAM.
    pub not_ipam: BTreeMap<String, usize>,
    /// Objects of kinds ipam-guard does not judge that the reader asked to keep.
    pub others: Vec<Other>,
    /// Documents that are not Kubernetes objects (no `apiVersion` and `kind`: Helm values,
    /// Renovate or CI configuration next to the manifests), skipped.
    pub not_objects: usize,
    /// Files left out by an exclude pattern.
    pub excluded: usize,
    /// Files read (or attempted).
    pub files: usize,
    /// Their names, in the order they were read (what "file order" means in reports).
    pub file_names: Vec<Arc<str>>,
}

impl<T> Default for Loaded<T> {
    fn default() -> Self {
        Loaded {
            manifests: Vec::new(),
            errors: Vec::new(),
            skipped: BTreeMap::new(),
            skipped_at: Vec::new(),
            not_ipam: BTreeMap::new(),
            others: Vec::new(),
            not_objects: 0,
            excluded: 0,
            files: 0,
            file_names: Vec::new(),
        }
    }
}

impl<T> Loaded<T> {
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
pub(crate) fn read_paths_excluding(paths: &[PathBuf], exclude: &GlobSet) -> Loaded {
    read_paths_each(paths, exclude, |m| m)
}

/// As `read_paths_excluding`, handing each object to `each` on the worker that read it, as soon
/// as it is read: a caller that keeps less than the whole document (a projection, a verdict)
/// never holds more than the files being parsed.
pub fn read_paths_each<T: Send>(
    paths: &[PathBuf],
    exclude: &GlobSet,
    each: impl Fn(Manifest) -> T + Sync,
) -> Loaded<T> {
    read_paths_keeping(paths, exclude, each, |_, _| false)
}

/// As `read_paths_each`, keeping in `Loaded::others` the objects of kinds ipam-guard does not
/// judge for which `keep_other(group, kind)` holds (`check`: the kinds it has a CRD schema for).
pub(crate) fn read_paths_keeping<T: Send>(
    paths: &[PathBuf],
    exclude: &GlobSet,
    each: impl Fn(Manifest) -> T + Sync,
    keep_other: impl Fn(&str, &str) -> bool + Sync,
) -> Loaded<T> {
    read_paths_rendered(paths, exclude, None, each, keep_other)
}

/// As `read_paths_keeping`, with `vars` (when given) substituted into each file's text before
/// it is parsed, as `clusterctl generate` renders a template (see `template`).
pub fn read_paths_rendered<T: Send>(
    paths: &[PathBuf],
    exclude: &GlobSet,
    vars: Option<&template::Vars>,
    each: impl Fn(Manifest) -> T + Sync,
    keep_other: impl Fn(&str, &str) -> bool + Sync,
) -> Loaded<T> {
    let mut loaded = Loaded::default();
    let (inputs, excluded) = find::inputs(paths, exclude, &mut loaded.errors);
    loaded.files = inputs.len();
    loaded.file_names = inputs.iter().map(|i| i.name.clone()).collect();
    loaded.excluded = excluded;

    let each = collect::Each {
        manifest: &each,
        keep_other: &keep_other,
        vars,
    };
    let results = read::parse_all(&inputs, &each);
    for r in results {
        loaded.manifests.extend(r.manifests);
        loaded.errors.extend(r.errors);
        loaded.not_objects += r.not_objects;
        loaded.skipped_at.extend(r.skipped_at);
        loaded.others.extend(r.others);
        for (k, n) in r.skipped {
            *loaded.skipped.entry(k).or_default() += n;
        }
        for (k, n) in r.not_ipam {
            *loaded.not_ipam.entry(k).or_default() += n;
        }
    }
    loaded
}

/// The text read from standard input (`-`), once it has been read.
pub fn stdin_text() -> Option<&'static str> {
    read::STDIN.get().map(String::as_str)
}

/// Reads one string of YAML (or JSON) as if it were a file named `name`.
pub fn read_str(name: &str, text: &str) -> Loaded {
    let file: Arc<str> = Arc::from(name);
    let r = parse::parse_yaml(&file, text, &collect::Each::served(&|m| m));
    Loaded {
        manifests: r.manifests,
        errors: r.errors,
        skipped: r.skipped,
        skipped_at: r.skipped_at,
        not_ipam: r.not_ipam,
        others: r.others,
        not_objects: r.not_objects,
        excluded: 0,
        files: 1,
        file_names: vec![file],
    }
}
