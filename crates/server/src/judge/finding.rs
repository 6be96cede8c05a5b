//! What a judged object is found to be: `Finding`s about `Subject`s, inputs that could not be
//! judged (`Problem`s) and the `Summary` of a run. `check`, `audit` and the periodic audit all
//! describe objects this way, so a finding reads the same whichever found it; the formats they
//! are written in (JSON, SARIF, JUnit) are the commands' (`cli::report`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::field::{FieldError, Warning};
use crate::kinds::Kind;
use crate::manifests::{LoadError, Source};
use crate::model::ObjKey;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Deny,
    Warn,
    /// Not a problem: what was not judged and why (`check`: unresolved template placeholders).
    Info,
}

/// The object a finding is about, and where it was read (`check`; None for `audit`): file,
/// document (1-based) and the line its document starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub file: Option<Arc<str>>,
    pub document: Option<usize>,
    /// Inside a list document: the item (0-based).
    pub item: Option<usize>,
    pub line: Option<usize>,
    pub key: Who,
}

/// Which object: one of a kind ipam-guard judges, or one of another kind `check` validated
/// against its CRD only.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Who {
    Served(ObjKey),
    Other(Arc<OtherKey>),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OtherKey {
    pub group: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl Who {
    pub fn namespace(&self) -> Option<&str> {
        match self {
            Who::Served(k) => k.namespace.as_deref(),
            Who::Other(o) => o.namespace.as_deref(),
        }
    }
    pub fn name(&self) -> &str {
        match self {
            Who::Served(k) => &k.name,
            Who::Other(o) => &o.name,
        }
    }
    pub fn group(&self) -> &str {
        match self {
            Who::Served(k) => k.kind.group(),
            Who::Other(o) => &o.group,
        }
    }
    pub fn kind_name(&self) -> &str {
        match self {
            Who::Served(k) => k.kind.name(),
            Who::Other(o) => &o.kind,
        }
    }
}

impl fmt::Display for Who {
    /// As `ObjKey` reads: `Kind.group ns/name` outside the CAPI IPAM group.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Who::Served(k) => k.fmt(f),
            Who::Other(o) => {
                write!(f, "{}", o.kind)?;
                if !o.group.is_empty() {
                    write!(f, ".{}", o.group)?;
                }
                match &o.namespace {
                    Some(ns) => write!(f, " {ns}/{}", o.name),
                    None => write!(f, " {}", o.name),
                }
            }
        }
    }
}

impl Subject {
    pub fn new(file: Option<Arc<str>>, key: ObjKey) -> Self {
        Subject {
            file,
            document: None,
            item: None,
            line: None,
            key: Who::Served(key),
        }
    }

    pub fn at(source: &Source, key: ObjKey) -> Self {
        Self::at_who(source, Who::Served(key))
    }

    pub(crate) fn at_who(source: &Source, key: Who) -> Self {
        Subject {
            file: Some(source.file.clone()),
            document: source.document,
            item: source.item,
            line: source.line,
            key,
        }
    }
}

/// An input that could not be judged (unreadable, not a kind ipam-guard knows): reported with
/// severity `error` in every output format, so a machine reader sees it too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: Arc<str>,
    pub document: Option<usize>,
    pub line: Option<usize>,
    pub message: String,
}

impl From<&LoadError> for Problem {
    fn from(e: &LoadError) -> Self {
        Problem {
            file: e.at.file.clone(),
            document: e.at.document,
            line: e.at.line,
            // The location is carried apart; the text keeps the item of a list.
            message: match e.at.item {
                Some(i) => format!("items[{i}]: {}", e.problem),
                None => e.problem.to_string(),
            },
        }
    }
}

impl fmt::Display for Problem {
    /// `error: <file>: document 2: <message>`, as `LoadError` reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(d) = self.document {
            write!(f, ": document {d}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// One denial or warning about one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub subject: Subject,
    /// The field path, empty when the finding is about the object as a whole.
    pub field: String,
    /// For a denial the Kubernetes cause body (`Invalid value: "x": detail`), for a warning its text.
    pub message: String,
    pub rule: &'static str,
    pub severity: Severity,
    /// The line (1-based) of `field` in its file, when `check` could find it; else the
    /// document's line (`subject.line`) stands.
    pub field_line: Option<usize>,
}

impl Finding {
    pub fn deny(subject: &Subject, e: &FieldError) -> Self {
        Finding {
            subject: subject.clone(),
            field: e.path.clone(),
            message: e.body(),
            rule: e.rule.as_str(),
            severity: Severity::Deny,
            field_line: None,
        }
    }

    pub fn warn(subject: &Subject, w: &Warning) -> Self {
        Finding {
            subject: subject.clone(),
            field: w.path.clone(),
            message: w.message.clone(),
            rule: w.rule.as_str(),
            severity: Severity::Warn,
            field_line: None,
        }
    }

    /// A finding that is not a rule's field error (schema validation).
    pub fn new(
        subject: &Subject,
        field: impl Into<String>,
        message: impl Into<String>,
        rule: &'static str,
        severity: Severity,
    ) -> Self {
        Finding {
            subject: subject.clone(),
            field: field.into(),
            message: message.into(),
            rule,
            severity,
            field_line: None,
        }
    }

    /// Where to point a reader: the field's line, else its document's.
    pub fn line(&self) -> Option<usize> {
        self.field_line.or(self.subject.line)
    }

    /// The kind, when ipam-guard judges it.
    pub fn kind(&self) -> Option<Kind> {
        match &self.subject.key {
            Who::Served(k) => Some(k.kind),
            Who::Other(_) => None,
        }
    }
}

impl fmt::Display for Finding {
    /// `[warning: |info: ]<file>:<line>: <Kind> <namespace>/<name>: <field>: <message> [<id>]`
    /// (the field's line when known, else the document's; no line when not read from a file).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.severity {
            Severity::Warn => f.write_str("warning: ")?,
            Severity::Info => f.write_str("info: ")?,
            Severity::Deny => {}
        }
        if let Some(file) = &self.subject.file {
            match self.line() {
                Some(line) => write!(f, "{file}:{line}: ")?,
                None => write!(f, "{file}: ")?,
            }
        }
        write!(f, "{}: ", self.subject.key)?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(f, "{} [{}]", self.message, self.rule)
    }
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Deny => "deny",
            Severity::Warn => "warn",
            Severity::Info => "info",
        }
    }
}

/// What was read and found, for stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Files read (`check`); None when objects came from elsewhere (`audit`).
    pub files: Option<usize>,
    /// Objects judged, per kind.
    pub objects: BTreeMap<Kind, usize>,
    /// Objects of kinds ipam-guard does not judge and has no CRD for, skipped, by `Kind.group`.
    pub skipped: BTreeMap<String, usize>,
    /// Objects of Kubernetes' own kinds (Namespace, Deployment.apps), skipped: not IPAM.
    pub not_ipam: BTreeMap<String, usize>,
    /// Objects of kinds ipam-guard does not judge, checked against their CRD's schema only.
    pub schema_only: BTreeMap<String, usize>,
    /// Documents that are not Kubernetes objects, skipped.
    pub not_objects: usize,
    /// Files left out by `--exclude`.
    pub excluded: usize,
    pub denials: usize,
    pub warnings: usize,
    /// Objects with fields not judged: unresolved template placeholders (`check`).
    pub not_judged: usize,
    /// Inputs that could not be read (files, documents).
    pub unreadable: usize,
}
impl Summary {
    pub fn count(&mut self, findings: &[Finding]) {
        for f in findings {
            match f.severity {
                Severity::Deny => self.denials += 1,
                Severity::Warn => self.warnings += 1,
                Severity::Info => self.not_judged += 1,
            }
        }
    }

    /// Exit code of `check` and `audit`: 2 (unreadable input) wins over 1 (a denial) over 0.
    pub fn exit_code(&self) -> i32 {
        if self.unreadable > 0 {
            2
        } else if self.denials > 0 {
            1
        } else {
            0
        }
    }
}

impl fmt::Display for Summary {
    /// ```text
    /// read 7 objects from 3 files: 1 InClusterIPPool, 2 IPAddressClaim, …
    /// 1 object checked against their CRD's schema only: 1 Metal3DataTemplate.infrastructure…
    /// 1 object skipped: kinds ipam-guard does not judge, no CRD at hand: 1 Cluster.cluster.x-k8s.io
    /// 1 object skipped: not IPAM: 1 ConfigMap
    /// 1 denial, 2 warnings
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: usize = self.objects.values().sum();
        write!(f, "read {}", plural(total, "object"))?;
        if let Some(files) = self.files {
            write!(f, " from {}", plural(files, "file"))?;
        }
        if total > 0 {
            let by_kind: Vec<String> = self
                .objects
                .iter()
                .map(|(k, n)| format!("{n} {}", k.display_name()))
                .collect();
            write!(f, ": {}", by_kind.join(", "))?;
        }
        writeln!(f)?;
        let counted = |f: &mut fmt::Formatter<'_>, what: &str, map: &BTreeMap<String, usize>| {
            let n: usize = map.values().sum();
            if n == 0 {
                return Ok(());
            }
            let by_kind: Vec<String> = map.iter().map(|(k, n)| format!("{n} {k}")).collect();
            writeln!(f, "{} {what}: {}", plural(n, "object"), by_kind.join(", "))
        };
        counted(
            f,
            "checked against their CRD's schema only",
            &self.schema_only,
        )?;
        counted(
            f,
            "skipped: kinds ipam-guard does not judge, no CRD at hand",
            &self.skipped,
        )?;
        counted(f, "skipped: not IPAM", &self.not_ipam)?;
        if self.not_objects > 0 {
            writeln!(
                f,
                "skipped {} that {}",
                plural(self.not_objects, "document"),
                if self.not_objects == 1 {
                    "is not a Kubernetes object"
                } else {
                    "are not Kubernetes objects"
                }
            )?;
        }
        if self.excluded > 0 {
            writeln!(f, "excluded {}", plural(self.excluded, "path"))?;
        }
        if self.not_judged > 0 {
            writeln!(
                f,
                "{} with unresolved ${{…}} placeholders: those fields not judged (give values with --var NAME=VALUE or --env)",
                plural(self.not_judged, "object")
            )?;
        }
        if self.unreadable > 0 {
            writeln!(f, "{} could not be read", plural(self.unreadable, "input"))?;
        }
        writeln!(
            f,
            "{}, {}",
            plural(self.denials, "denial"),
            plural(self.warnings, "warning")
        )
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule_id::RuleId;

    fn subject(kind: Kind, ns: Option<&str>, name: &str) -> Subject {
        Subject::new(Some(Arc::from("a.yaml")), ObjKey::new(kind, ns, name))
    }

    #[test]
    fn text_lines() {
        let s = subject(Kind::IPAddress, Some("ns"), "a");
        let e = FieldError::invalid(RuleId::A1, "spec.address", "x", "not a valid IP address");
        assert_eq!(
            Finding::deny(&s, &e).to_string(),
            r#"a.yaml: IPAddress ns/a: spec.address: Invalid value: "x": not a valid IP address [A1]"#
        );
        let g = subject(Kind::GlobalInClusterIPPool, None, "g");
        let w = Warning::new(
            RuleId::P7,
            "spec.addresses",
            "the pool has no allocatable address",
        );
        assert_eq!(
            Finding::warn(&g, &w).to_string(),
            "warning: a.yaml: GlobalInClusterIPPool g: spec.addresses: the pool has no allocatable address [P7]"
        );
        let m = subject(Kind::Metal3IPPool, Some("ns"), "p");
        let w = Warning::new(RuleId::K1, "", "not checked");
        assert_eq!(
            Finding::warn(&m, &w).to_string(),
            "warning: a.yaml: IPPool.ipam.metal3.io ns/p: not checked [K1]"
        );
    }

    #[test]
    fn summary_and_exit_codes() {
        let mut s = Summary {
            files: Some(2),
            ..Summary::default()
        };
        s.objects.insert(Kind::IPAddress, 3);
        s.objects.insert(Kind::Metal3IPPool, 1);
        s.not_ipam.insert("ConfigMap".into(), 1);
        s.skipped.insert("Cluster.cluster.x-k8s.io".into(), 2);
        s.warnings = 1;
        assert_eq!(
            s.to_string(),
            "read 4 objects from 2 files: 3 IPAddress, 1 IPPool.ipam.metal3.io\n\
             2 objects skipped: kinds ipam-guard does not judge, no CRD at hand: 2 Cluster.cluster.x-k8s.io\n\
             1 object skipped: not IPAM: 1 ConfigMap\n\
             0 denials, 1 warning\n"
        );
        assert_eq!(s.exit_code(), 0);
        s.denials = 1;
        assert_eq!(s.exit_code(), 1);
        s.unreadable = 1;
        assert_eq!(s.exit_code(), 2);
    }
}
