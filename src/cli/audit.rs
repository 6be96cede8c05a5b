//! `ipam-guard audit`: one pass over a live cluster that reports every stored object that would be
//! denied if it were created now (SPEC X4): what slipped in before the webhook was installed, while
//! it failed open, or across replicas. Judging and output are `check`'s, with file `cluster`.
//!
//! Also the periodic audit of `serve --audit-interval` (`periodic_view`): on a timer, the rules
//! that compare objects judged over what the view already holds (`rules::stored`), feeding the
//! `ipam_guard_violations{rule}` gauge and logging each finding once. `periodic` is the listing
//! pass on a timer, kept for callers that have a client but no view.

use std::collections::{BTreeMap, HashSet};
use std::io::{self, BufWriter, Write};
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

pub use super::check::Judged;
use super::check::Judging;
use super::report::{self, Finding, Report, Severity, Summary};
use super::{AuditArgs, OutputFormat, OverlapScope, SeverityFilter};
use crate::cluster::live::read::{Progress, Silent};
use crate::cluster::live::{self};
use crate::cluster::ClusterView;
use crate::rules::Options;

/// What findings name as their file.
pub const FILE: &str = "cluster";

/// What one audit pass found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub findings: Vec<Finding>,
    /// Kinds that could not be listed (or discovery itself): each makes the exit code 2.
    pub errors: Vec<String>,
    pub summary: Summary,
}

/// Runs `audit` and returns the exit code: 2 when the cluster (or a kind) could not be read, else
/// 1 when a stored object would be denied, else 0. Findings go to stdout, the rest to stderr.
pub async fn run(args: &AuditArgs) -> i32 {
    let options = Options::from(&args.rules);
    let mut err = io::stderr().lock();
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
                let _ = writeln!(err, "error: {e:#}");
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
    let selected = select(&outcome.findings, args);
    let table = Table::of(&selected, args.limit);
    let shown = table.shown(&selected);
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
    let mut summary = Summary {
        objects: outcome.summary.objects.clone(),
        unreadable: outcome.summary.unreadable,
        ..Summary::default()
    };
    summary.count(&selected);
    let _ = write!(err, "{summary}");
    summary.exit_code()
}

/// The findings `-n`, `--rule` and `--severity` ask for, in audit order.
fn select(findings: &[Finding], args: &AuditArgs) -> Vec<Finding> {
    findings
        .iter()
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
        .cloned()
        .collect()
}

/// Findings per rule, severity and namespace, printed before the findings: with 100k findings
/// the table is what a person reads, and `--limit` keeps the lines below it to a sample.
#[derive(Debug, Default)]
struct Table {
    /// (rule, severity, namespace or `(cluster)`) → count.
    rows: BTreeMap<(&'static str, Severity, String), usize>,
    per_rule: BTreeMap<&'static str, usize>,
    limit: Option<usize>,
}

impl Table {
    fn of(findings: &[Finding], limit: Option<usize>) -> Table {
        let mut t = Table {
            limit,
            ..Table::default()
        };
        for f in findings {
            let ns = f.subject.key.namespace().unwrap_or("(cluster)").to_string();
            *t.rows.entry((f.rule, f.severity, ns)).or_default() += 1;
            *t.per_rule.entry(f.rule).or_default() += 1;
        }
        t
    }

    /// The first `limit` findings of each rule.
    fn shown(&self, findings: &[Finding]) -> Vec<Finding> {
        let Some(limit) = self.limit else {
            return findings.to_vec();
        };
        let mut seen: BTreeMap<&'static str, usize> = BTreeMap::new();
        findings
            .iter()
            .filter(|f| {
                let n = seen.entry(f.rule).or_default();
                *n += 1;
                *n <= limit
            })
            .cloned()
            .collect()
    }
}

impl std::fmt::Display for Table {
    /// ```text
    /// RULE  SEVERITY  NAMESPACE   FINDINGS
    /// P10   deny      cluster-a   2
    /// (showing 10 of 100000 A9 findings: --limit 10)
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.rows.is_empty() {
            return Ok(());
        }
        let width = self
            .rows
            .keys()
            .map(|(_, _, ns)| ns.len())
            .max()
            .unwrap_or(0)
            .max("NAMESPACE".len());
        writeln!(
            f,
            "{:<6}  {:<8}  {:<width$}  FINDINGS",
            "RULE", "SEVERITY", "NAMESPACE"
        )?;
        for ((rule, severity, ns), n) in &self.rows {
            writeln!(f, "{rule:<6}  {:<8}  {ns:<width$}  {n}", severity.name())?;
        }
        if let Some(limit) = self.limit {
            for (rule, n) in &self.per_rule {
                if *n > limit {
                    writeln!(
                        f,
                        "(showing {limit} of {n} {rule} findings: --limit {limit})"
                    )?;
                }
            }
        }
        writeln!(f)
    }
}

/// Lists every served kind of the table (one `resourceVersion=0` list each, decoded item by
/// item) and judges each object as a CREATE against all the others.
pub async fn audit(client: &Client, options: Options) -> Outcome {
    audit_at(client, "", options, Judged::All, Arc::new(Silent)).await
}

/// `audit` judging only the objects `judged` selects (`-n`): the others count for them, as
/// projections.
pub async fn audit_judging(client: &Client, options: Options, judged: Judged) -> Outcome {
    audit_at(client, "", options, judged, Arc::new(Silent)).await
}

/// `audit`, naming `server` (its URL) in what could not be read, judging the objects `judged`
/// selects (the others are kept only as projections).
async fn audit_at(
    client: &Client,
    server: &str,
    options: Options,
    judged: Judged,
    progress: Arc<dyn Progress>,
) -> Outcome {
    let options = Options {
        stored: true,
        ..options
    };
    let (read, errors) = live::read::read(
        client,
        server,
        |_| true,
        Judging::new(judged, FILE),
        progress,
    )
    .await;
    // Judging is CPU work on 100k objects: off the runtime's threads.
    let (objects, findings) = match tokio::task::spawn_blocking(move || read.finish(options)).await
    {
        Ok(judged) => judged,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => {
            return Outcome {
                errors: vec![format!("judging the cluster stopped: {e}")],
                ..Outcome::default()
            }
        }
    };
    let mut summary = Summary {
        objects,
        unreadable: errors.len(),
        ..Summary::default()
    };
    summary.count(&findings);
    Outcome {
        findings,
        errors,
        summary,
    }
}

// === Periodic audit (serve --audit-interval) ===

/// Label set of `ipam_guard_violations`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ViolationLabels {
    pub rule: String,
}

/// `ipam_guard_violations{rule}`: stored objects the last audit found denied, per rule id.
pub type Violations = Family<ViolationLabels, Gauge>;

/// Registers `ipam_guard_violations` and returns the family to hand to `periodic`.
pub fn register_violations(registry: &mut Registry) -> Violations {
    let family = Violations::default();
    registry.register(
        "ipam_guard_violations",
        "Denials the last periodic audit found among stored objects, per rule id",
        family.clone(),
    );
    family
}

/// Audits the cluster now and then every `interval`, forever (abort the task to stop it). Sets
/// `violations` to the denials of the last pass that succeeded, and logs each finding once: a
/// finding is logged again only after a pass where it was gone.
pub async fn periodic(
    client: Client,
    options: Options,
    interval: Duration,
    violations: Violations,
) {
    let mut recorder = Recorder::new(violations);
    loop {
        let outcome = audit(&client, options).await;
        for e in &outcome.errors {
            tracing::warn!(error = %e, "periodic audit could not read the cluster");
        }
        if outcome.errors.is_empty() {
            recorder.record(&outcome);
        }
        tokio::time::sleep(interval).await;
    }
}

/// `serve --audit-interval`: judges what the view already holds (`rules::stored`) every
/// `interval`, instead of listing the cluster again: no API server load, no copy of the cluster.
/// Waits for the view to sync first, so a half-read view reports nothing.
pub async fn periodic_view(
    view: Arc<dyn ClusterView>,
    options: Options,
    interval: Duration,
    violations: Violations,
) {
    let mut recorder = Recorder::new(violations);
    loop {
        if view.synced() {
            let outcome = judge_view(view.as_ref(), options);
            recorder.record(&outcome);
        } else {
            tracing::info!("periodic audit skipped: the cluster view has not synced yet");
        }
        tokio::time::sleep(interval).await;
    }
}

/// One pass of `periodic_view`, as an `Outcome` with file `cluster`.
pub fn judge_view(view: &dyn ClusterView, options: Options) -> Outcome {
    let file: Arc<str> = Arc::from(FILE);
    let (found, objects) = {
        let index = view.read();
        (crate::rules::stored::judge(&index, options), index.counts())
    };
    let findings: Vec<Finding> = found
        .into_iter()
        .map(|(key, e)| Finding::deny(&report::Subject::new(Some(file.clone()), key), &e))
        .collect();
    let mut summary = Summary {
        objects: objects.into_iter().collect(),
        ..Summary::default()
    };
    summary.count(&findings);
    Outcome {
        findings,
        errors: Vec::new(),
        summary,
    }
}

/// Keeps `ipam_guard_violations` and the log in step with the passes.
struct Recorder {
    violations: Violations,
    rules_seen: HashSet<&'static str>,
}

impl Recorder {
    fn new(violations: Violations) -> Recorder {
        Recorder {
            violations,
            rules_seen: HashSet::new(),
        }
    }

    fn record(&mut self, outcome: &Outcome) {
        let mut per_rule: BTreeMap<&'static str, i64> = BTreeMap::new();
        let mut warned: BTreeMap<&'static str, i64> = BTreeMap::new();
        for f in &outcome.findings {
            match f.severity {
                Severity::Deny => *per_rule.entry(f.rule).or_default() += 1,
                Severity::Warn => *warned.entry(f.rule).or_default() += 1,
            }
        }
        // Rules that had violations and have none now read 0 rather than vanishing.
        self.rules_seen.extend(per_rule.keys().copied());
        for rule in &self.rules_seen {
            let n = per_rule.get(rule).copied().unwrap_or(0);
            self.violations
                .get_or_create(&ViolationLabels {
                    rule: rule.to_string(),
                })
                .set(n);
        }
        // One line per round, however many findings (as Gatekeeper caps what it records):
        // `ipam-guard audit` lists them. A line per finding would flood the logs every round.
        let counts = |m: &BTreeMap<&'static str, i64>| {
            m.iter()
                .map(|(r, n)| format!("{r}={n}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        tracing::info!(
            denials = outcome.summary.denials,
            warnings = outcome.summary.warnings,
            objects = outcome.summary.objects.values().sum::<usize>(),
            denials_by_rule = %counts(&per_rule),
            warnings_by_rule = %counts(&warned),
            "periodic audit done; `ipam-guard audit` lists the findings"
        );
    }
}
