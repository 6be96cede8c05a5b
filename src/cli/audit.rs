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
    // Moved, never copied: at 100k findings a copy is tens of MiB (issue 29: ≤ 256 MiB).
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
    let (objects, findings) = match tokio::task::spawn_blocking(move || {
        read.finish(options, |index| health_findings(index, options, now()))
    })
    .await
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
    periodic_view_with(
        view,
        options,
        interval,
        Outputs {
            violations,
            findings: None,
            reports: None,
        },
    )
    .await
}

/// Where the periodic audit's rounds go besides the log.
pub struct Outputs {
    pub violations: Violations,
    /// `ipam_guard_audit_findings{rule,severity}`.
    pub findings: Option<AuditFindings>,
    /// `--policy-reports`.
    pub reports: Option<ReportSink>,
}

/// The PolicyReport writer and who may write: only one replica does (the decider).
pub struct ReportSink {
    pub writer: super::policy_reports::Writer,
    pub may_write: Arc<dyn Fn() -> bool + Send + Sync>,
}

/// As `periodic_view`, with the findings gauge and PolicyReports when given.
pub async fn periodic_view_with(
    view: Arc<dyn ClusterView>,
    options: Options,
    interval: Duration,
    outputs: Outputs,
) {
    let Outputs {
        violations,
        findings,
        mut reports,
    } = outputs;
    let mut recorder = Recorder::new(violations);
    recorder.findings = findings;
    loop {
        if view.synced() {
            let now = std::time::SystemTime::now();
            let outcome = judge_view_at(view.as_ref(), options, now);
            recorder.record(&outcome);
            if let Some(sink) = reports.as_mut() {
                write_reports(sink, &outcome, unix_seconds(now)).await;
            }
        } else {
            tracing::info!("periodic audit skipped: the cluster view has not synced yet");
        }
        tokio::time::sleep(interval).await;
    }
}

async fn write_reports(sink: &mut ReportSink, outcome: &Outcome, now: i64) {
    if !(sink.may_write)() {
        tracing::debug!("PolicyReports are written by the decider; this replica follows");
        return;
    }
    match sink.writer.write(&outcome.findings, now).await {
        Ok(w) => tracing::info!(
            applied = w.applied,
            unchanged = w.unchanged,
            deleted = w.deleted,
            "PolicyReports written"
        ),
        Err(e) => tracing::warn!(error = %e, "PolicyReports not written"),
    }
}

/// The wall clock in Unix seconds, what `rules::health` compares creation timestamps with.
fn now() -> i64 {
    unix_seconds(std::time::SystemTime::now())
}

fn unix_seconds(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// H1, H2, H3 and E1 (`rules::health`) as findings with file `cluster`.
fn health_findings(index: &crate::index::Index, options: Options, now: i64) -> Vec<Finding> {
    let file: Arc<str> = Arc::from(FILE);
    crate::rules::health::judge(index, options, now)
        .into_iter()
        .map(|(key, w)| Finding::warn(&report::Subject::new(Some(file.clone()), key), &w))
        .collect()
}

/// One pass of `periodic_view`, as an `Outcome` with file `cluster`, at the system's time.
pub fn judge_view(view: &dyn ClusterView, options: Options) -> Outcome {
    judge_view_at(view, options, std::time::SystemTime::now())
}

/// One pass of `periodic_view` at `now` (tests pass a `ManualClock`'s wall time).
pub fn judge_view_at(
    view: &dyn ClusterView,
    options: Options,
    now: std::time::SystemTime,
) -> Outcome {
    let file: Arc<str> = Arc::from(FILE);
    let (found, health, objects) = {
        let index = view.read();
        (
            crate::rules::stored::judge(&index, options),
            health_findings(&index, options, unix_seconds(now)),
            index.counts(),
        )
    };
    let mut findings: Vec<Finding> = found
        .into_iter()
        .map(|(key, e)| Finding::deny(&report::Subject::new(Some(file.clone()), key), &e))
        .collect();
    findings.extend(health);
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

/// Label set of `ipam_guard_audit_findings`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FindingLabels {
    pub rule: String,
    /// `deny` or `warn`.
    pub severity: String,
}

/// `ipam_guard_audit_findings{rule,severity}`: every finding of the last periodic audit, per rule
/// id and severity (E1, H1–H3 are warnings: `ipam_guard_violations` counts denials only).
pub type AuditFindings = Family<FindingLabels, Gauge>;

/// Registers `ipam_guard_audit_findings`.
pub fn register_findings(registry: &mut Registry) -> AuditFindings {
    let family = AuditFindings::default();
    registry.register(
        "ipam_guard_audit_findings",
        "Findings of the last periodic audit among stored objects, per rule id and severity (deny, warn)",
        family.clone(),
    );
    family
}

/// Keeps `ipam_guard_violations`, `ipam_guard_audit_findings` and the log in step with the passes.
struct Recorder {
    violations: Violations,
    rules_seen: HashSet<&'static str>,
    findings: Option<AuditFindings>,
    findings_seen: HashSet<(&'static str, Severity)>,
}

impl Recorder {
    fn new(violations: Violations) -> Recorder {
        Recorder {
            violations,
            rules_seen: HashSet::new(),
            findings: None,
            findings_seen: HashSet::new(),
        }
    }

    fn record(&mut self, outcome: &Outcome) {
        let mut per_rule: BTreeMap<&'static str, i64> = BTreeMap::new();
        let mut warned: BTreeMap<&'static str, i64> = BTreeMap::new();
        for f in &outcome.findings {
            match f.severity {
                Severity::Deny => *per_rule.entry(f.rule).or_default() += 1,
                Severity::Warn => *warned.entry(f.rule).or_default() += 1,
                Severity::Info => {}
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
        if let Some(family) = &self.findings {
            let mut counts: BTreeMap<(&'static str, Severity), i64> = BTreeMap::new();
            for f in &outcome.findings {
                *counts.entry((f.rule, f.severity)).or_default() += 1;
            }
            // As above: a series that had findings reads 0 once they are gone.
            self.findings_seen.extend(counts.keys().copied());
            for key in &self.findings_seen {
                family
                    .get_or_create(&FindingLabels {
                        rule: key.0.to_string(),
                        severity: key.1.name().to_string(),
                    })
                    .set(counts.get(key).copied().unwrap_or(0));
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::policy_reports::Writer;
    use crate::field::Warning;
    use crate::kinds::Kind;
    use crate::model::ObjKey;
    use crate::rule_id::RuleId;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// A client whose API server counts the requests it gets and knows no resource.
    fn counting_client(calls: Arc<AtomicUsize>) -> Client {
        let service = tower::service_fn(move |_req: http::Request<kube::client::Body>| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                Ok::<_, std::convert::Infallible>(
                    http::Response::builder()
                        .status(404)
                        .body(http_body_util::Full::new(bytes::Bytes::from_static(b"{}")))
                        .expect("a response"),
                )
            }
        });
        Client::new(service, "default")
    }

    /// One writer across replicas: a replica that does not hold the decider Lease sends nothing;
    /// once it leads, it reads and writes the reports.
    #[tokio::test]
    async fn only_the_leading_replica_writes_policy_reports() {
        let calls = Arc::new(AtomicUsize::new(0));
        let leading = Arc::new(AtomicBool::new(false));
        let lead = leading.clone();
        let mut sink = ReportSink {
            writer: Writer::new(counting_client(calls.clone())),
            may_write: Arc::new(move || lead.load(Ordering::SeqCst)),
        };
        let subject = report::Subject::new(
            Some(Arc::from(FILE)),
            ObjKey::new(Kind::IPAddress, Some("ns"), "a"),
        );
        let outcome = Outcome {
            findings: vec![Finding::warn(
                &subject,
                &Warning::new(RuleId::H2, "spec.claimRef.name", "gone"),
            )],
            ..Outcome::default()
        };
        write_reports(&mut sink, &outcome, 0).await;
        assert_eq!(calls.load(Ordering::SeqCst), 0, "a follower calls nobody");
        leading.store(true, Ordering::SeqCst);
        write_reports(&mut sink, &outcome, 0).await;
        assert!(
            calls.load(Ordering::SeqCst) > 0,
            "the decider lists the reports"
        );
    }

    /// The summary table and `--limit` (what fits a screen).
    mod screen {
        use super::super::*;
        use crate::cli::report::Subject;
        use crate::field::{FieldError, Warning};
        use crate::kinds::Kind;
        use crate::model::ObjKey;
        use crate::rule_id::RuleId;

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
