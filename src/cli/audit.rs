//! `ipam-guard audit`: one pass over a live cluster that reports every stored object that would be
//! denied if it were created now (X4): what slipped in before the webhook was installed, while
//! it failed open, or across replicas. Judging is `judge::audit`'s; output is `check`'s, with file
//! `cluster`, after a table of the findings per rule and namespace. The periodic audit of `serve
//! --audit-interval` is `server::audit`.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use super::report::{self, Report};
use super::{AuditArgs, OutputFormat, OverlapScope, SeverityFilter};
use crate::cluster::live::{self};
use crate::judge::audit::audit_at;
use crate::judge::stored::{Judged, FILE};
use crate::judge::{Finding, Severity, Summary};

/// Runs `audit` and returns the exit code: 2 when the cluster (or a kind) could not be read, else
/// 1 when a stored object would be denied, else 0. Findings go to stdout, the rest to stderr.
pub async fn run(args: &AuditArgs) -> i32 {
    let options = args.rules.audit_options(&args.health);
    // Not locked for the run: the progress bar writes to stderr from its own thread meanwhile.
    let mut err = io::stderr();
    if options.overlap_scope == OverlapScope::Off {
        let _ = writeln!(
            err,
            "note: --overlap-scope off: pool overlaps (P10) and duplicate addresses (A9) are not checked"
        );
    }
    let (client, server) =
        match live::client_and_server(args.kubeconfig.as_deref(), args.context.as_deref()).await {
            Ok(c) => c,
            Err(e) => {
                let _ = writeln!(err, "error: {}", live::describe(&e));
                return 2;
            }
        };
    let judged = match &args.namespace {
        Some(ns) => Judged::Namespace(ns.clone()),
        None => Judged::All,
    };
    let progress = super::progress::for_stderr(args.quiet);
    let outcome = audit_at(&client, &server, options, judged, progress).await;
    for e in &outcome.errors {
        let _ = writeln!(err, "error: {e}");
    }
    // Moved, never copied: at 100k findings a copy is tens of MiB, against the Deployment's 256 MiB.
    let selected = select(outcome.findings, args);
    let table = Table::of(&selected, limit_of(args));
    let mut summary = Summary {
        objects: outcome.summary.objects,
        unreadable: outcome.summary.unreadable,
        ..Summary::default()
    };
    summary.count(&selected);
    let shown = table.shown(selected);
    let mut out = BufWriter::new(io::stdout().lock());
    // A closed pipe (`audit … | head`) is the reader's choice, not a failure of the audit.
    if args.output == OutputFormat::Text {
        let _ = write!(out, "{table}");
    } else {
        let _ = write!(err, "{table}");
    }
    let _ = report::write_report(
        &mut out,
        args.output,
        &Report {
            findings: &shown,
            source: Some(FILE),
            ..Report::default()
        },
    );
    let _ = write!(err, "{summary}");
    summary.exit_code()
}

/// What `audit --rule ID` prints in text for `findings` (the table, then the lines).
pub(crate) fn text(findings: &[Finding], rule: &str) -> String {
    let selected: Vec<Finding> = findings
        .iter()
        .filter(|f| f.rule == rule)
        .cloned()
        .collect();
    let mut out = Table::of(&selected, Limit::None).to_string().into_bytes();
    let _ = report::write_report(
        &mut out,
        OutputFormat::Text,
        &Report {
            findings: &selected,
            source: Some(FILE),
            ..Report::default()
        },
    );
    String::from_utf8_lossy(&out).into_owned()
}

/// The findings `-n`, `--rule` and `--severity` ask for, in audit order.
fn select(findings: Vec<Finding>, args: &AuditArgs) -> Vec<Finding> {
    findings
        .into_iter()
        .filter(|f| match &args.namespace {
            Some(ns) => f.subject.key.namespace() == Some(ns.as_str()),
            None => true,
        })
        .filter(|f| args.rules_only.is_empty() || args.rules_only.iter().any(|r| r == f.rule))
        .filter(|f| match args.severity {
            Some(SeverityFilter::Deny) => f.severity == Severity::Deny,
            Some(SeverityFilter::Warn) => f.severity == Severity::Warn,
            None => true,
        })
        .collect()
}

/// Finding lines per rule a text audit prints unless `--limit` says otherwise: a screenful.
pub const SCREENFUL: usize = 20;

/// Namespaces named per row of the summary; the rest are counted.
const TOP_NAMESPACES: usize = 3;

/// The `--limit` in force: as given (0: none), else a screenful per rule in text and every
/// finding in the machine formats (a tool reads them all).
fn limit_of(args: &AuditArgs) -> Limit {
    match (args.limit, args.output) {
        (Some(0), _) => Limit::None,
        (Some(n), _) => Limit::Given(n),
        (None, OutputFormat::Text) => Limit::Screenful(SCREENFUL),
        (None, _) => Limit::None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Limit {
    #[default]
    None,
    Given(usize),
    Screenful(usize),
}

impl Limit {
    fn get(self) -> Option<usize> {
        match self {
            Limit::None => None,
            Limit::Given(n) | Limit::Screenful(n) => Some(n),
        }
    }
}

/// Findings of one rule and severity, in all and per namespace (or `(cluster)`).
type Row = (usize, BTreeMap<String, usize>);

/// Findings per rule and severity, with the namespaces that have most of them, printed before
/// the findings: with 100k findings in 100 namespaces the table is what a person reads, and the
/// limit keeps the lines below it to a sample.
#[derive(Debug, Default)]
struct Table {
    /// (rule, severity) → (findings, namespace or `(cluster)` → findings).
    rows: BTreeMap<(&'static str, Severity), Row>,
    per_rule: BTreeMap<&'static str, usize>,
    limit: Limit,
}

impl Table {
    fn of(findings: &[Finding], limit: Limit) -> Table {
        let mut t = Table {
            limit,
            ..Table::default()
        };
        for f in findings {
            let row = t.rows.entry((f.rule, f.severity)).or_default();
            row.0 += 1;
            let ns = f.subject.key.namespace().unwrap_or("(cluster)");
            match row.1.get_mut(ns) {
                Some(n) => *n += 1,
                None => {
                    row.1.insert(ns.to_string(), 1);
                }
            }
            *t.per_rule.entry(f.rule).or_default() += 1;
        }
        t
    }

    /// The first `limit` findings of each rule.
    fn shown(&self, mut findings: Vec<Finding>) -> Vec<Finding> {
        let Some(limit) = self.limit.get() else {
            return findings;
        };
        let mut seen: BTreeMap<&'static str, usize> = BTreeMap::new();
        findings.retain(|f| {
            let n = seen.entry(f.rule).or_default();
            *n += 1;
            *n <= limit
        });
        findings.shrink_to_fit();
        findings
    }
}

/// `team-a 2, team-b 1`, the fullest first, then `… and 97 more namespaces`.
fn top_namespaces(per_ns: &BTreeMap<String, usize>) -> String {
    let mut fullest: Vec<(&String, &usize)> = per_ns.iter().collect();
    fullest.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut text: Vec<String> = fullest
        .iter()
        .take(TOP_NAMESPACES)
        .map(|(ns, n)| format!("{ns} {n}"))
        .collect();
    let more = fullest.len().saturating_sub(TOP_NAMESPACES);
    if more > 0 {
        let noun = if more == 1 { "namespace" } else { "namespaces" };
        text.push(format!("… and {more} more {noun}"));
    }
    text.join(", ")
}

impl std::fmt::Display for Table {
    /// ```text
    /// RULE    SEVERITY  FINDINGS  NAMESPACES
    /// A6      warn      100000    scale-0 1000, scale-1 1000, scale-2 1000, … and 97 more namespaces
    /// P10     deny      2         cluster-a 2
    /// (showing 20 of 100000 A6 findings: --limit 0 shows all)
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.rows.is_empty() {
            return Ok(());
        }
        writeln!(
            f,
            "{:<6}  {:<8}  {:<8}  NAMESPACES",
            "RULE", "SEVERITY", "FINDINGS"
        )?;
        for ((rule, severity), (n, per_ns)) in &self.rows {
            writeln!(
                f,
                "{rule:<6}  {:<8}  {n:<8}  {}",
                severity.name(),
                top_namespaces(per_ns)
            )?;
        }
        for (rule, n) in &self.per_rule {
            match self.limit {
                Limit::Given(limit) if *n > limit => writeln!(
                    f,
                    "(showing {limit} of {n} {rule} findings: --limit {limit})"
                )?,
                Limit::Screenful(limit) if *n > limit => writeln!(
                    f,
                    "(showing {limit} of {n} {rule} findings: --limit 0 shows all)"
                )?,
                _ => {}
            }
        }
        writeln!(f)
    }
}

#[cfg(test)]
mod tests {
    /// The summary table and `--limit` (what fits a screen).
    mod screen {
        use super::super::*;
        use crate::field::{FieldError, Warning};
        use crate::judge::Subject;
        use crate::kinds::Kind;
        use crate::model::ObjKey;
        use crate::rule_id::RuleId;
        use std::sync::Arc;

        fn args(output: OutputFormat, limit: Option<usize>) -> AuditArgs {
            use clap::Parser;
            let mut args = match crate::cli::Cli::parse_from(["ipam-guard", "audit"]).command {
                crate::cli::Command::Audit(a) => a,
                _ => unreachable!("parsed as audit"),
            };
            args.output = output;
            args.limit = limit;
            args
        }

        /// `per_ns` A6 warnings in each namespace, and one P10 denial of a cluster-scoped pool.
        fn findings(per_ns: &[(&str, usize)]) -> Vec<Finding> {
            let file: Arc<str> = Arc::from(FILE);
            let mut out = Vec::new();
            for (ns, n) in per_ns {
                for i in 0..*n {
                    let key = ObjKey::new(Kind::IPAddress, Some(ns), &format!("a-{i}"));
                    let subject = Subject::new(Some(file.clone()), key);
                    out.push(Finding::warn(
                        &subject,
                        &Warning::new(RuleId::A6, "spec.claimRef.name", "not found"),
                    ));
                }
            }
            let pool = ObjKey::new(Kind::GlobalInClusterIPPool, None, "g");
            out.push(Finding::deny(
                &Subject::new(Some(file), pool),
                &FieldError::forbidden(RuleId::P10, "spec.addresses", "overlaps"),
            ));
            out
        }

        #[test]
        fn the_summary_is_one_row_per_rule_and_severity_with_the_top_namespaces() {
            let per_ns: Vec<(String, usize)> = (0..100)
                .map(|i| (format!("scale-{i:02}"), 1000 - i))
                .collect();
            let per_ns: Vec<(&str, usize)> = per_ns.iter().map(|(n, c)| (n.as_str(), *c)).collect();
            let all = findings(&per_ns);
            let table = Table::of(&all, limit_of(&args(OutputFormat::Text, None)));
            let text = table.to_string();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(
                lines[0].split_whitespace().collect::<Vec<_>>(),
                ["RULE", "SEVERITY", "FINDINGS", "NAMESPACES"]
            );
            assert_eq!(
                lines[1].split_whitespace().collect::<Vec<_>>().join(" "),
                "A6 warn 95050 scale-00 1000, scale-01 999, scale-02 998, … and 97 more namespaces"
            );
            assert_eq!(
                lines[2].split_whitespace().collect::<Vec<_>>().join(" "),
                "P10 deny 1 (cluster) 1"
            );
            assert_eq!(
                lines[3],
                format!("(showing {SCREENFUL} of 95050 A6 findings: --limit 0 shows all)")
            );
            assert_eq!(lines.len(), 5, "{text}");
            let shown = table.shown(all.clone());
            assert_eq!(shown.iter().filter(|f| f.rule == "A6").count(), SCREENFUL);
            assert_eq!(shown.iter().filter(|f| f.rule == "P10").count(), 1);
        }

        #[test]
        fn the_limit_is_a_screenful_in_text_and_everything_for_tools() {
            use OutputFormat::*;
            assert_eq!(limit_of(&args(Text, None)), Limit::Screenful(SCREENFUL));
            for format in [Json, Sarif, Junit] {
                assert_eq!(limit_of(&args(format, None)), Limit::None);
                assert_eq!(limit_of(&args(format, Some(3))), Limit::Given(3));
            }
            assert_eq!(limit_of(&args(Text, Some(0))), Limit::None);
            let all = findings(&[("a", 30), ("b", 2)]);
            let table = Table::of(&all, limit_of(&args(Text, Some(0))));
            assert_eq!(table.shown(all.clone()).len(), all.len());
            let text = table.to_string();
            assert!(!text.contains("showing"), "{text}");
            assert!(text.contains("a 30, b 2\n"), "{text}");
            let table = Table::of(&all, limit_of(&args(Text, Some(5))));
            assert!(
                table
                    .to_string()
                    .contains("(showing 5 of 32 A6 findings: --limit 5)"),
                "{table}"
            );
        }
    }
}
