//! The periodic audit of `serve --audit-interval`: on a timer, `judge::audit` over what the
//! view already holds (the rules that compare objects, `rules::stored`, and the findings about
//! pools and addresses over time, `rules::health`), feeding `ipam_guard_violations{rule}` and
//! `ipam_guard_audit_findings{rule,severity}`, one log line per round and, with
//! `--policy-reports`, PolicyReports. It never lists the cluster (the `audit` command does).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::policy_reports::Writer;
use crate::cluster::ClusterView;
use crate::judge::audit::{judge_view_stepwise, unix_seconds, ClusterFindings};
use crate::judge::Severity;
use crate::rules::Options;

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
    pub writer: Writer,
    pub may_write: Arc<dyn Fn() -> bool + Send + Sync>,
}

/// `serve --audit-interval`: judges what the view already holds (`rules::stored`) every
/// `interval`, instead of listing the cluster again: no API server load, no copy of the cluster.
/// Waits for the view to sync first, so a half-read view reports nothing. Feeds `outputs`
/// (abort the task to stop it).
pub async fn periodic(
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
            let outcome = judge_view_stepwise(view.as_ref(), options, now).await;
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

async fn write_reports(sink: &mut ReportSink, outcome: &ClusterFindings, now: i64) {
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

/// Label set of `ipam_guard_audit_findings`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FindingLabels {
    pub rule: String,
    /// `deny` or `warn`.
    pub severity: String,
}

/// `ipam_guard_audit_findings{rule,severity}`: every finding of the last periodic audit, per rule
/// id and severity (E1, H1–H3 are warnings: `ipam_guard_violations` counts denials only).
pub(crate) type AuditFindings = Family<FindingLabels, Gauge>;

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

    fn record(&mut self, outcome: &ClusterFindings) {
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
    use crate::field::Warning;
    use crate::judge::stored::FILE;
    use crate::judge::{Finding, Subject};
    use crate::kinds::Kind;
    use crate::model::ObjKey;
    use crate::rule_id::RuleId;
    use kube::Client;
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
        let subject = Subject::new(
            Some(Arc::from(FILE)),
            ObjKey::new(Kind::IPAddress, Some("ns"), "a"),
        );
        let outcome = ClusterFindings {
            findings: vec![Finding::warn(
                &subject,
                &Warning::new(RuleId::H2, "spec.claimRef.name", "gone"),
            )],
            ..ClusterFindings::default()
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
