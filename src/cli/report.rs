//! Findings of `check` and `audit` as text, JSON, SARIF or JUnit (X4). The findings
//! themselves, their one-line text and the summary on stderr are `judge`'s.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::Arc;

use serde::Serialize;

use super::OutputFormat;
use crate::judge::{Finding, Problem, Severity, Subject, Summary, Who};

/// The JSON shape of a finding, fields in that order, then where the object was read (`document`,
/// `line`; null for `audit`). An input that could not be judged is an entry with severity `error`,
/// null group/kind/name and rule.
#[derive(Serialize)]
struct Wire<'a> {
    /// `check`: the file. `audit` writes `source` instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    group: Option<&'a str>,
    kind: Option<&'a str>,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    field: &'a str,
    message: &'a str,
    rule: Option<&'static str>,
    severity: &'static str,
    document: Option<usize>,
    line: Option<usize>,
}

impl<'a> From<&'a Finding> for Wire<'a> {
    fn from(f: &'a Finding) -> Self {
        let key = &f.subject.key;
        Wire {
            file: f.subject.file.as_deref(),
            source: None,
            group: Some(key.group()),
            kind: Some(key.kind_name()),
            namespace: key.namespace(),
            name: Some(key.name()),
            field: &f.field,
            message: &f.message,
            rule: Some(f.rule),
            severity: f.severity.name(),
            document: f.subject.document,
            line: f.line(),
        }
    }
}

impl<'a> From<&'a Problem> for Wire<'a> {
    fn from(p: &'a Problem) -> Self {
        Wire {
            file: Some(&p.file),
            source: None,
            group: None,
            kind: None,
            namespace: None,
            name: None,
            field: "",
            message: &p.message,
            rule: None,
            severity: "error",
            document: p.document,
            line: p.line,
        }
    }
}

/// What a run reports: findings, inputs that could not be judged, and (for JUnit, which lists
/// passing cases too) every object judged.
#[derive(Debug, Clone, Copy, Default)]
pub struct Report<'a> {
    pub findings: &'a [Finding],
    pub problems: &'a [Problem],
    pub subjects: &'a [Subject],
    /// Where the objects came from when not from files (`audit`: `cluster`): JSON writes it as
    /// `source` in place of `file`.
    pub source: Option<&'static str>,
    /// With a summary (`check`), JSON is `{"findings": [...], "summary": {...}}`; without, the
    /// array of findings alone.
    pub summary: Option<&'a Summary>,
}

/// Writes findings in the chosen format: one line each (errors go to stderr in text mode, see
/// the callers), one JSON array (`[]` when none), SARIF 2.1.0 or JUnit XML.
pub fn write_findings(
    out: &mut dyn Write,
    format: OutputFormat,
    findings: &[Finding],
) -> io::Result<()> {
    write_report(
        out,
        format,
        &Report {
            findings,
            ..Report::default()
        },
    )
}

pub fn write_report(out: &mut dyn Write, format: OutputFormat, r: &Report) -> io::Result<()> {
    match format {
        OutputFormat::Text => {
            for f in r.findings {
                writeln!(out, "{f}")?;
            }
        }
        OutputFormat::Json => {
            let wire: Vec<Wire> = r
                .findings
                .iter()
                .map(|f| match r.source {
                    Some(source) => Wire {
                        file: None,
                        source: Some(source),
                        ..Wire::from(f)
                    },
                    None => Wire::from(f),
                })
                .chain(r.problems.iter().map(Wire::from))
                .collect();
            #[derive(Serialize)]
            struct WithSummary<'a> {
                findings: &'a [Wire<'a>],
                summary: SummaryWire<'a>,
            }
            match r.summary {
                Some(summary) => serde_json::to_writer_pretty(
                    &mut *out,
                    &WithSummary {
                        findings: &wire,
                        summary: summary_wire(summary),
                    },
                ),
                None => serde_json::to_writer_pretty(&mut *out, &wire),
            }
            .map_err(io::Error::other)?;
            writeln!(out)?;
        }
        OutputFormat::Sarif => {
            serde_json::to_writer_pretty(&mut *out, &sarif(r)).map_err(io::Error::other)?;
            writeln!(out)?;
        }
        OutputFormat::Junit => junit(out, r)?,
    }
    out.flush()
}

/// SARIF 2.1.0, the format GitHub code scanning reads: one result per finding or error, at the
/// file and the line its document starts on.
fn sarif(r: &Report) -> serde_json::Value {
    use serde_json::json;
    let location = |file: Option<&str>, line: Option<usize>| match file {
        Some(file) => {
            let mut physical = json!({"artifactLocation": {"uri": file}});
            if let Some(line) = line {
                physical["region"] = json!({"startLine": line});
            }
            json!([{"physicalLocation": physical}])
        }
        None => json!([]),
    };
    let mut rules: Vec<&str> = r.findings.iter().map(|f| f.rule).collect();
    if !r.problems.is_empty() {
        rules.push("LOAD");
    }
    rules.sort_unstable();
    rules.dedup();
    let mut results: Vec<serde_json::Value> = r
        .findings
        .iter()
        .map(|f| {
            let field = if f.field.is_empty() {
                String::new()
            } else {
                format!("{}: ", f.field)
            };
            json!({
                "ruleId": f.rule,
                "level": match f.severity {
                    Severity::Deny => "error",
                    Severity::Warn => "warning",
                    Severity::Info => "note",
                },
                "message": {"text": format!("{}: {field}{}", f.subject.key, f.message)},
                "locations": location(f.subject.file.as_deref(), f.line()),
            })
        })
        .collect();
    results.extend(r.problems.iter().map(|p| {
        json!({
            "ruleId": "LOAD",
            "level": "error",
            "message": {"text": p.message},
            "locations": location(Some(&p.file), p.line),
        })
    }));
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "ipam-guard",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules.iter().map(|id| json!({"id": id})).collect::<Vec<_>>(),
            }},
            "results": results,
        }],
    })
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 cannot carry most control characters, even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML (CI systems show it as a test report): one test case per object, failing when the
/// object would be denied, its warnings as output; one erroring case per input that could not
/// be judged.
fn junit(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let mut cases: Vec<(&Subject, Vec<&Finding>)> = Vec::new();
    let mut at: std::collections::HashMap<(&Option<Arc<str>>, &Who), usize> =
        std::collections::HashMap::new();
    for s in r.subjects {
        at.entry((&s.file, &s.key)).or_insert_with(|| {
            cases.push((s, Vec::new()));
            cases.len() - 1
        });
    }
    for f in r.findings {
        let i = *at
            .entry((&f.subject.file, &f.subject.key))
            .or_insert_with(|| {
                cases.push((&f.subject, Vec::new()));
                cases.len() - 1
            });
        cases[i].1.push(f);
    }
    let failures = cases
        .iter()
        .filter(|(_, fs)| fs.iter().any(|f| f.severity == Severity::Deny))
        .count();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="ipam-guard" tests="{}" failures="{failures}" errors="{}">"#,
        cases.len() + r.problems.len(),
        r.problems.len()
    )?;
    writeln!(
        out,
        r#"  <testsuite name="ipam-guard" tests="{}" failures="{failures}" errors="{}">"#,
        cases.len() + r.problems.len(),
        r.problems.len()
    )?;
    for (subject, found) in &cases {
        let file = subject.file.as_deref().unwrap_or("cluster");
        write!(
            out,
            r#"    <testcase classname="{}" name="{}""#,
            xml_escape(file),
            xml_escape(&subject.key.to_string())
        )?;
        if let Some(f) = &subject.file {
            write!(out, r#" file="{}""#, xml_escape(f))?;
        }
        if let Some(line) = subject.line {
            write!(out, r#" line="{line}""#)?;
        }
        if found.is_empty() {
            writeln!(out, "/>")?;
            continue;
        }
        writeln!(out, ">")?;
        let text = |fs: &[&&Finding]| {
            fs.iter()
                .map(|f| {
                    if f.field.is_empty() {
                        format!("{} [{}]", f.message, f.rule)
                    } else {
                        format!("{}: {} [{}]", f.field, f.message, f.rule)
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let denials: Vec<&&Finding> = found
            .iter()
            .filter(|f| f.severity == Severity::Deny)
            .collect();
        let warnings: Vec<&&Finding> = found
            .iter()
            .filter(|f| f.severity != Severity::Deny)
            .collect();
        if let Some(first) = denials.first() {
            writeln!(
                out,
                r#"      <failure type="{}" message="{}">{}</failure>"#,
                first.rule,
                xml_escape(&text(&denials[..1])),
                xml_escape(&text(&denials))
            )?;
        }
        if !warnings.is_empty() {
            writeln!(
                out,
                "      <system-out>{}</system-out>",
                xml_escape(&text(&warnings))
            )?;
        }
        writeln!(out, "    </testcase>")?;
    }
    for p in r.problems {
        write!(
            out,
            r#"    <testcase classname="{}" name="document {}" file="{}""#,
            xml_escape(&p.file),
            p.document.unwrap_or(0),
            xml_escape(&p.file)
        )?;
        if let Some(line) = p.line {
            write!(out, r#" line="{line}""#)?;
        }
        writeln!(
            out,
            r#"><error message="{}"/></testcase>"#,
            xml_escape(&p.message)
        )?;
    }
    writeln!(out, "  </testsuite>")?;
    writeln!(out, "</testsuites>")
}

/// `check -o json`'s `summary`: objects judged by kind, objects checked against their CRD only,
/// what was skipped and why, and the counts (`errors`: inputs that could not be judged).
#[derive(Serialize)]
struct SummaryWire<'a> {
    files: Option<usize>,
    objects: BTreeMap<String, usize>,
    schema_only: &'a BTreeMap<String, usize>,
    skipped: SkippedWire<'a>,
    not_judged: usize,
    denials: usize,
    warnings: usize,
    errors: usize,
}

/// Why objects were skipped: kinds ipam-guard does not judge with no CRD at hand (by
/// `Kind.group`), kinds that are not IPAM, documents that are not objects, excluded paths.
#[derive(Serialize)]
struct SkippedWire<'a> {
    no_crd: &'a BTreeMap<String, usize>,
    not_ipam: &'a BTreeMap<String, usize>,
    not_objects: usize,
    excluded: usize,
}
/// The JSON `summary` object of `check -o json`.
fn summary_wire(s: &Summary) -> SummaryWire<'_> {
    SummaryWire {
        files: s.files,
        objects: s
            .objects
            .iter()
            .map(|(k, n)| (k.display_name(), *n))
            .collect(),
        schema_only: &s.schema_only,
        skipped: SkippedWire {
            no_crd: &s.skipped,
            not_ipam: &s.not_ipam,
            not_objects: s.not_objects,
            excluded: s.excluded,
        },
        not_judged: s.not_judged,
        denials: s.denials,
        warnings: s.warnings,
        errors: s.unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::FieldError;
    use crate::kinds::Kind;
    use crate::model::ObjKey;
    use crate::rule_id::RuleId;

    fn subject(kind: Kind, ns: Option<&str>, name: &str) -> Subject {
        Subject::new(Some(Arc::from("a.yaml")), ObjKey::new(kind, ns, name))
    }

    #[test]
    fn json_shape() {
        let g = subject(Kind::SpiderIPPool, None, "g");
        let e = FieldError::required(RuleId::P1, "spec.ips", "");
        let mut out = Vec::new();
        write_findings(&mut out, OutputFormat::Json, &[Finding::deny(&g, &e)]).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            serde_json::json!([{
                "file": "a.yaml", "group": "spiderpool.spidernet.io", "kind": "SpiderIPPool",
                "namespace": null, "name": "g", "field": "spec.ips", "message": "Required value",
                "rule": "P1", "severity": "deny", "document": null, "line": null
            }])
        );
        let mut out = Vec::new();
        write_findings(&mut out, OutputFormat::Json, &[]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap().trim(), "[]");
    }
}
