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

use kube::api::ListParams;
use kube::core::ApiResource;
use kube::{Api, Client};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::check;
use super::report::{self, Finding, Report, Severity, Summary};
use super::{AuditArgs, OutputFormat, OverlapScope, SeverityFilter};
use crate::cluster::live::{self, api_resource};
use crate::cluster::{ClusterView, WatchedObject};
use crate::kinds::Kind;
use crate::manifests::{Manifest, Source};
use crate::model::ObjKey;
use crate::rules::Options;

/// What findings name as their file.
pub const FILE: &str = "cluster";

/// Objects per list page. The watch cache answers `resourceVersion=0` lists whole on older API
/// servers; newer ones page, and then this bounds each answer.
const PAGE: u32 = 500;

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
                let _ = writeln!(err, "error: {}", live::describe(&e));
                return 2;
            }
        };
    let outcome = audit_at(&client, &server, options).await;
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

/// What `audit --rule ID` prints in text for `findings` (the table, then the lines).
pub(crate) fn text(findings: &[Finding], rule: &str) -> String {
    let selected: Vec<Finding> = findings
        .iter()
        .filter(|f| f.rule == rule)
        .cloned()
        .collect();
    let mut out = Table::of(&selected, None).to_string().into_bytes();
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

/// Lists every served kind of the table (from the watch cache: `resourceVersion=0`) and judges
/// each object as a CREATE against all the others.
pub async fn audit(client: &Client, options: Options) -> Outcome {
    audit_at(client, "", options).await
}

/// `audit`, naming `server` (its URL) in what could not be read.
async fn audit_at(client: &Client, server: &str, options: Options) -> Outcome {
    let options = Options {
        stored: true,
        ..options
    };
    let (manifests, errors) = list_cluster(client, server).await;
    let (objects, mut findings, index) = check::judge_keeping_index(manifests, options);
    findings.extend(health_findings(&index, options, now()));
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

/// Every stored object of every served kind of the table, named as from file `cluster`, and what
/// could not be listed (discovery, or one kind), naming `server` (its URL; may be empty). `audit`
/// judges these; `usage` counts them; `check --kubeconfig` judges files against them.
pub async fn list_cluster(client: &Client, server: &str) -> (Vec<Manifest>, Vec<String>) {
    let served = match live::discover(client).await {
        Ok(s) => s,
        Err(e) => {
            return (
                Vec::new(),
                vec![format!(
                    "API discovery failed: {}",
                    live::explain(server, &e)
                )],
            )
        }
    };
    let file: Arc<str> = Arc::from(FILE);
    let mut manifests = Vec::new();
    let mut errors = Vec::new();
    for (kind, version) in &served {
        match list_kind(client, *kind, version).await {
            Ok(objects) => manifests.extend(
                objects
                    .into_iter()
                    .filter_map(|o| manifest(&file, *kind, version, o)),
            ),
            Err(e) => errors.push(format!("cannot list {}: {e}", kind.display_name())),
        }
    }
    (manifests, errors)
}

async fn list_kind(
    client: &Client,
    kind: Kind,
    version: &str,
) -> Result<Vec<WatchedObject>, kube::Error> {
    list_resource(client, &api_resource(kind, version)).await
}

/// Every object of `resource` in the cluster, page by page.
pub async fn list_resource(
    client: &Client,
    resource: &ApiResource,
) -> Result<Vec<WatchedObject>, kube::Error> {
    let api: Api<WatchedObject> = Api::all_with(client.clone(), resource);
    let mut params = ListParams::default().match_any().limit(PAGE);
    let mut items = Vec::new();
    // Bounded: a server that keeps handing out continue tokens cannot keep us here forever.
    for _ in 0..100_000 {
        let page = api.list(&params).await?;
        items.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            // A continued list must not name a resourceVersion: the token carries it.
            Some(token) => params = ListParams::default().limit(PAGE).continue_token(&token),
            None => break,
        }
    }
    Ok(items)
}

fn manifest(file: &Arc<str>, kind: Kind, version: &str, o: WatchedObject) -> Option<Manifest> {
    let name = o.metadata.name.clone()?;
    let key = ObjKey::new(kind, o.metadata.namespace.as_deref(), &name);
    let object = o.to_value(&api_resource(kind, version));
    Some(Manifest {
        source: Source {
            file: file.clone(),
            document: None,
            item: None,
            line: None,
        },
        kind,
        version: version.to_string(),
        key,
        object,
    })
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
}
