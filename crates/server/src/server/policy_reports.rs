//! `serve --policy-reports`: the periodic audit's findings as `wgpolicyk8s.io/v1alpha2`
//! PolicyReports (one per namespace with findings) and one ClusterPolicyReport (findings about
//! cluster-scoped objects), the API Kyverno and Gatekeeper users already read (policy-reporter
//! and other UIs show them).
//!
//! Each round the reports are made to match the findings: written with server-side apply (field
//! manager `ipam-guard`) where their results changed, left alone where not, deleted where the
//! namespace (or the cluster scope) is clean. What exists is read back each round (a list by the
//! label `app.kubernetes.io/managed-by=ipam-guard`), so a new decider takes over the reports of
//! the last one without any state of its own. Only one replica writes: the elected decider, or
//! the only replica.

use std::collections::{BTreeMap, HashMap};

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::ApiResource;
use kube::Client;
use serde_json::{json, Value};

use crate::judge::{Finding, Severity, Who};

/// The reports' group and version.
pub const GROUP: &str = "wgpolicyk8s.io";
pub const VERSION: &str = "v1alpha2";
/// The name of every report ipam-guard writes (one per namespace, one cluster-wide).
pub const NAME: &str = "ipam-guard";
/// `policy` of every result, and the label that marks the reports as ipam-guard's.
pub const POLICY: &str = "ipam-guard";
pub(crate) const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Results kept in one report: etcd refuses objects over 1.5 MiB, and a namespace with
/// thousands of findings is read with `ipam-guard audit`. The summary still counts them all.
pub(crate) const MAX_RESULTS: usize = 1_000;

/// Where a report lives: a namespace, or None for the ClusterPolicyReport.
pub(crate) type Scope = Option<String>;

/// The reports one round should leave, each as the fields ipam-guard owns: `results` and
/// `summary`.
pub fn build(findings: &[Finding], first_seen: &HashMap<String, i64>) -> BTreeMap<Scope, Value> {
    let mut by_scope: BTreeMap<Scope, Vec<&Finding>> = BTreeMap::new();
    for f in findings {
        by_scope
            .entry(f.subject.key.namespace().map(str::to_string))
            .or_default()
            .push(f);
    }
    by_scope
        .into_iter()
        .map(|(scope, mut fs)| {
            fs.sort_by_key(|f| finding_id(f));
            let fail = fs.iter().filter(|f| f.severity == Severity::Deny).count();
            let results: Vec<Value> = fs
                .iter()
                .take(MAX_RESULTS)
                .map(|f| result(f, first_seen.get(&finding_id(f)).copied().unwrap_or(0)))
                .collect();
            let body = json!({
                "results": results,
                "summary": {"pass": 0, "fail": fail, "warn": fs.len() - fail, "error": 0, "skip": 0},
            });
            (scope, body)
        })
        .collect()
}

/// What identifies a finding across rounds (its first-seen time is kept under this).
pub(crate) fn finding_id(f: &Finding) -> String {
    format!(
        "{}\u{0}{}\u{0}{}\u{0}{}",
        f.subject.key, f.rule, f.field, f.message
    )
}

/// One result. Severity: a denial is `high`; the audits' findings about pools and addresses
/// over time (E1, H1–H3) `medium`; other warnings `low`; what was not judged `skip`/`info`.
fn result(f: &Finding, seen: i64) -> Value {
    let (result, severity) = match (f.severity, f.rule) {
        (Severity::Deny, _) => ("fail", "high"),
        (Severity::Warn, "E1" | "H1" | "H2" | "H3") => ("warn", "medium"),
        (Severity::Warn, _) => ("warn", "low"),
        // Not judged (an unresolved template field): the v1alpha2 result for that is `skip`.
        (Severity::Info, _) => ("skip", "info"),
    };
    let who = &f.subject.key;
    let api_version = match who {
        Who::Served(k) => format!("{}/{}", k.kind.group(), k.kind.storage_version()),
        Who::Other(o) => o.group.clone(),
    };
    let mut resource =
        json!({"apiVersion": api_version, "kind": who.kind_name(), "name": who.name()});
    if let Some(ns) = who.namespace() {
        resource["namespace"] = json!(ns);
    }
    let message = if f.field.is_empty() {
        format!("{} [ipam-guard {}]", f.message, f.rule)
    } else {
        format!("{}: {} [ipam-guard {}]", f.field, f.message, f.rule)
    };
    json!({
        "policy": POLICY,
        "rule": f.rule,
        "category": "IPAM",
        "source": "ipam-guard",
        "result": result,
        "severity": severity,
        "scored": result == "fail",
        "message": message,
        "resources": [resource],
        "properties": {"field": f.field},
        "timestamp": {"seconds": seen, "nanos": 0},
    })
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: GROUP.to_string(),
        version: VERSION.to_string(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: kind.to_string(),
        plural: plural.to_string(),
    }
}

/// What one round of writing did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Written {
    pub applied: usize,
    pub unchanged: usize,
    pub deleted: usize,
}

/// Writes the reports of each round.
pub struct Writer {
    client: Client,
    namespaced: ApiResource,
    cluster: ApiResource,
    /// First round each finding was seen in (Unix seconds): a result's timestamp, stable while
    /// the finding stays, so an unchanged report is not rewritten.
    first_seen: HashMap<String, i64>,
}

impl Writer {
    pub fn new(client: Client) -> Writer {
        Writer {
            client,
            namespaced: resource("PolicyReport", "policyreports"),
            cluster: resource("ClusterPolicyReport", "clusterpolicyreports"),
            first_seen: HashMap::new(),
        }
    }

    /// Makes the reports in the cluster match `findings` (found at `now`, Unix seconds).
    pub async fn write(&mut self, findings: &[Finding], now: i64) -> Result<Written, String> {
        let mut seen = HashMap::with_capacity(findings.len());
        for f in findings {
            let id = finding_id(f);
            let at = self.first_seen.get(&id).copied().unwrap_or(now);
            seen.insert(id, at);
        }
        self.first_seen = seen;
        let desired = build(findings, &self.first_seen);
        let existing = self.existing().await?;
        let mut done = Written::default();
        for scope in existing.keys().filter(|s| !desired.contains_key(*s)) {
            self.api(scope)
                .delete(NAME, &DeleteParams::default())
                .await
                .map_err(|e| format!("cannot delete {}: {e}", self.describe(scope)))?;
            done.deleted += 1;
        }
        for (scope, body) in &desired {
            let same = existing.get(scope).is_some_and(|o| {
                o.data.get("results") == body.get("results")
                    && o.data.get("summary") == body.get("summary")
            });
            if same {
                done.unchanged += 1;
                continue;
            }
            let r = if scope.is_some() {
                &self.namespaced
            } else {
                &self.cluster
            };
            let mut object = json!({
                "apiVersion": r.api_version,
                "kind": r.kind,
                "metadata": {"name": NAME, "labels": {MANAGED_BY: POLICY}},
                "results": body["results"],
                "summary": body["summary"],
            });
            if let Some(ns) = scope {
                object["metadata"]["namespace"] = json!(ns);
            }
            self.api(scope)
                .patch(
                    NAME,
                    &PatchParams::apply(POLICY).force(),
                    &Patch::Apply(&object),
                )
                .await
                .map_err(|e| format!("cannot write {}: {e}", self.describe(scope)))?;
            done.applied += 1;
        }
        Ok(done)
    }

    /// The reports ipam-guard wrote before (by any replica), by scope.
    async fn existing(&self) -> Result<BTreeMap<Scope, DynamicObject>, String> {
        let params = ListParams::default().labels(&format!("{MANAGED_BY}={POLICY}"));
        let mut out = BTreeMap::new();
        for r in [&self.namespaced, &self.cluster] {
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), r);
            let list = api.list(&params).await.map_err(|e| {
                format!(
                    "cannot list {}.{GROUP} (are the wgpolicyk8s.io/v1alpha2 CRDs installed, and may ipam-guard list them?): {e}",
                    r.plural
                )
            })?;
            for o in list.items {
                if o.metadata.name.as_deref() == Some(NAME) {
                    out.insert(o.metadata.namespace.clone(), o);
                }
            }
        }
        Ok(out)
    }

    fn api(&self, scope: &Scope) -> Api<DynamicObject> {
        match scope {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &self.namespaced),
            None => Api::all_with(self.client.clone(), &self.cluster),
        }
    }

    fn describe(&self, scope: &Scope) -> String {
        match scope {
            Some(ns) => format!("PolicyReport {ns}/{NAME}"),
            None => format!("ClusterPolicyReport {NAME}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{FieldError, Warning};
    use crate::judge::Subject;
    use crate::kinds::Kind;
    use crate::model::ObjKey;
    use crate::rule_id::RuleId;
    use std::sync::Arc;

    fn subject(kind: Kind, ns: Option<&str>, name: &str) -> Subject {
        Subject::new(Some(Arc::from("cluster")), ObjKey::new(kind, ns, name))
    }

    #[test]
    fn one_report_per_namespace_and_one_for_the_cluster_scope() {
        let findings = vec![
            Finding::warn(
                &subject(Kind::IPAddress, Some("team-a"), "web-0"),
                &Warning::new(
                    RuleId::H2,
                    "spec.claimRef.name",
                    "IPAddressClaim team-a/web-0 not found",
                ),
            ),
            Finding::deny(
                &subject(Kind::GlobalInClusterIPPool, None, "shared"),
                &FieldError::invalid(
                    RuleId::P10,
                    "spec",
                    "10.0.0.0/24",
                    "overlaps InClusterIPPool team-a/nodes",
                ),
            ),
        ];
        let mut seen = HashMap::new();
        seen.insert(finding_id(&findings[0]), 1_795_514_400);
        let reports = build(&findings, &seen);
        assert_eq!(
            reports.keys().cloned().collect::<Vec<_>>(),
            [None, Some("team-a".to_string())]
        );
        let ns = &reports[&Some("team-a".to_string())];
        assert_eq!(
            ns["summary"],
            json!({"pass": 0, "fail": 0, "warn": 1, "error": 0, "skip": 0})
        );
        assert_eq!(
            ns["results"][0],
            json!({
                "policy": "ipam-guard", "rule": "H2", "category": "IPAM", "source": "ipam-guard",
                "result": "warn", "severity": "medium", "scored": false,
                "message": "spec.claimRef.name: IPAddressClaim team-a/web-0 not found [ipam-guard H2]",
                "resources": [{"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
                               "name": "web-0", "namespace": "team-a"}],
                "properties": {"field": "spec.claimRef.name"},
                "timestamp": {"seconds": 1_795_514_400, "nanos": 0},
            })
        );
        let cluster = &reports[&None];
        assert_eq!(cluster["summary"]["fail"], 1);
        assert_eq!(cluster["results"][0]["result"], "fail");
        assert_eq!(cluster["results"][0]["severity"], "high");
        assert!(cluster["results"][0]["resources"][0]
            .get("namespace")
            .is_none());
    }

    #[test]
    fn results_are_capped_and_the_summary_counts_them_all() {
        let findings: Vec<Finding> = (0..MAX_RESULTS + 5)
            .map(|i| {
                Finding::warn(
                    &subject(Kind::IPAddress, Some("big"), &format!("a{i}")),
                    &Warning::new(RuleId::H2, "spec.claimRef.name", "gone"),
                )
            })
            .collect();
        let reports = build(&findings, &HashMap::new());
        let r = &reports[&Some("big".to_string())];
        assert_eq!(r["results"].as_array().unwrap().len(), MAX_RESULTS);
        assert_eq!(r["summary"]["warn"], MAX_RESULTS + 5);
    }
}
