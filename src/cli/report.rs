//! Findings of `check` and `audit` as text or JSON (SPEC §8, X4), plus the summary on stderr.
//! Both commands describe objects the same way, so a finding reads the same whichever found it.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

use serde::Serialize;

use super::OutputFormat;
use crate::kinds::Kind;
use crate::model::ObjKey;
use crate::rules::field::{FieldError, Warning};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Deny,
    Warn,
}

/// The object a finding is about, and the file it came from (`check`; None for `audit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub file: Option<Arc<str>>,
    pub key: ObjKey,
}

impl Subject {
    pub fn new(file: Option<Arc<str>>, key: ObjKey) -> Self {
        Subject { file, key }
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
}

impl Finding {
    pub fn deny(subject: &Subject, e: &FieldError) -> Self {
        Finding {
            subject: subject.clone(),
            field: e.path.clone(),
            message: e.body(),
            rule: e.rule,
            severity: Severity::Deny,
        }
    }

    pub fn warn(subject: &Subject, w: &Warning) -> Self {
        Finding {
            subject: subject.clone(),
            field: w.path.clone(),
            message: w.message.clone(),
            rule: w.rule,
            severity: Severity::Warn,
        }
    }

    pub fn kind(&self) -> Kind {
        self.subject.key.kind
    }
}

impl fmt::Display for Finding {
    /// `[warning: ]<file>: <Kind> <namespace>/<name>: <field>: <message> [<id>]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.severity == Severity::Warn {
            f.write_str("warning: ")?;
        }
        if let Some(file) = &self.subject.file {
            write!(f, "{file}: ")?;
        }
        write!(f, "{}: ", self.subject.key)?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(f, "{} [{}]", self.message, self.rule)
    }
}

/// The JSON shape of SPEC §8, fields in that order.
#[derive(Serialize)]
struct Wire<'a> {
    file: Option<&'a str>,
    group: &'static str,
    kind: &'static str,
    namespace: Option<&'a str>,
    name: &'a str,
    field: &'a str,
    message: &'a str,
    rule: &'static str,
    severity: Severity,
}

impl<'a> From<&'a Finding> for Wire<'a> {
    fn from(f: &'a Finding) -> Self {
        let key = &f.subject.key;
        Wire {
            file: f.subject.file.as_deref(),
            group: key.kind.group(),
            kind: key.kind.name(),
            namespace: key.namespace.as_deref(),
            name: &key.name,
            field: &f.field,
            message: &f.message,
            rule: f.rule,
            severity: f.severity,
        }
    }
}

/// Writes findings in the chosen format: one line each, or one JSON array (`[]` when none).
pub fn write_findings(
    out: &mut dyn Write,
    format: OutputFormat,
    findings: &[Finding],
) -> io::Result<()> {
    match format {
        OutputFormat::Text => {
            for f in findings {
                writeln!(out, "{f}")?;
            }
        }
        OutputFormat::Json => {
            let wire: Vec<Wire> = findings.iter().map(Wire::from).collect();
            serde_json::to_writer_pretty(&mut *out, &wire).map_err(io::Error::other)?;
            writeln!(out)?;
        }
    }
    out.flush()
}

/// What was read and found, for stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Files read (`check`); None when objects came from elsewhere (`audit`).
    pub files: Option<usize>,
    /// Objects judged, per kind.
    pub objects: BTreeMap<Kind, usize>,
    /// Objects of unknown kinds skipped, by `Kind.group`.
    pub skipped: BTreeMap<String, usize>,
    pub denials: usize,
    pub warnings: usize,
    /// Inputs that could not be read (files, documents).
    pub unreadable: usize,
}

impl Summary {
    pub fn count(&mut self, findings: &[Finding]) {
        for f in findings {
            match f.severity {
                Severity::Deny => self.denials += 1,
                Severity::Warn => self.warnings += 1,
            }
        }
    }

    /// Exit code of SPEC §8: 2 (unreadable input) wins over 1 (a denial) over 0.
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
    /// skipped 2 objects of unknown kinds: 1 ConfigMap, 1 Cluster.cluster.x-k8s.io
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
        let skipped: usize = self.skipped.values().sum();
        if skipped > 0 {
            let by_kind: Vec<String> = self
                .skipped
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect();
            writeln!(
                f,
                "skipped {} of unknown kinds: {}",
                plural(skipped, "object"),
                by_kind.join(", ")
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

    fn subject(kind: Kind, ns: Option<&str>, name: &str) -> Subject {
        Subject::new(Some(Arc::from("a.yaml")), ObjKey::new(kind, ns, name))
    }

    #[test]
    fn text_lines() {
        let s = subject(Kind::IPAddress, Some("ns"), "a");
        let e = FieldError::invalid("A1", "spec.address", "x", "not a valid IP address");
        assert_eq!(
            Finding::deny(&s, &e).to_string(),
            r#"a.yaml: IPAddress ns/a: spec.address: Invalid value: "x": not a valid IP address [A1]"#
        );
        let g = subject(Kind::GlobalInClusterIPPool, None, "g");
        let w = Warning::new(
            "P7",
            "spec.addresses",
            "the pool has no allocatable address",
        );
        assert_eq!(
            Finding::warn(&g, &w).to_string(),
            "warning: a.yaml: GlobalInClusterIPPool g: spec.addresses: the pool has no allocatable address [P7]"
        );
        let m = subject(Kind::Metal3IPPool, Some("ns"), "p");
        let w = Warning::new("K1", "", "not checked");
        assert_eq!(
            Finding::warn(&m, &w).to_string(),
            "warning: a.yaml: IPPool.ipam.metal3.io ns/p: not checked [K1]"
        );
    }

    #[test]
    fn json_shape() {
        let g = subject(Kind::SpiderIPPool, None, "g");
        let e = FieldError::required("P1", "spec.ips", "");
        let mut out = Vec::new();
        write_findings(&mut out, OutputFormat::Json, &[Finding::deny(&g, &e)]).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            serde_json::json!([{
                "file": "a.yaml", "group": "spiderpool.spidernet.io", "kind": "SpiderIPPool",
                "namespace": null, "name": "g", "field": "spec.ips", "message": "Required value",
                "rule": "P1", "severity": "deny"
            }])
        );
        let mut out = Vec::new();
        write_findings(&mut out, OutputFormat::Json, &[]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap().trim(), "[]");
    }

    #[test]
    fn summary_and_exit_codes() {
        let mut s = Summary {
            files: Some(2),
            ..Summary::default()
        };
        s.objects.insert(Kind::IPAddress, 3);
        s.objects.insert(Kind::Metal3IPPool, 1);
        s.skipped.insert("ConfigMap".into(), 1);
        s.warnings = 1;
        assert_eq!(
            s.to_string(),
            "read 4 objects from 2 files: 3 IPAddress, 1 IPPool.ipam.metal3.io\n\
             skipped 1 object of unknown kinds: 1 ConfigMap\n\
             0 denials, 1 warning\n"
        );
        assert_eq!(s.exit_code(), 0);
        s.denials = 1;
        assert_eq!(s.exit_code(), 1);
        s.unreadable = 1;
        assert_eq!(s.exit_code(), 2);
    }
}
