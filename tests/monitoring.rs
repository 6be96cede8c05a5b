//! `manifests/monitoring/` (the optional kustomize component) renders with `kubectl kustomize`,
//! its alerts say what they promise (a pool more than 90% used for 10 minutes; any
//! `ipam_guard_violations` above 0), and every metric and label they read is one the server
//! really exports, so a renamed metric fails here instead of silencing an alert. Needs kubectl on
//! PATH (or `KUBECTL=/path/to/kubectl`), as tests/manifests.rs does.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use ipam_guard::cluster::Ledger;
use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::model::project;
use ipam_guard::server::audit::{register_violations, ViolationLabels};
use ipam_guard::server::pool_metrics;
use prometheus_client::registry::Registry;
use serde::Deserialize;
use serde_json::{json, Value};

fn kubectl() -> PathBuf {
    std::env::var_os("KUBECTL")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("kubectl"))
                .find(|p| p.is_file())
        })
        .expect("kubectl is not on PATH: this test renders manifests/monitoring with `kubectl kustomize` (or set KUBECTL)")
}

fn kustomize(dir: &Path) -> Vec<Value> {
    let out = Command::new(kubectl())
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).expect("rendered YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

fn manifests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests")
}

fn one<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = objects.iter().filter(|o| o["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} expected: {objects:#?}");
    found[0]
}

fn rules(rule: &Value) -> Vec<&Value> {
    rule["spec"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .collect()
}

fn alert<'a>(rule: &'a Value, name: &str) -> &'a Value {
    rules(rule)
        .into_iter()
        .find(|r| r["alert"] == name)
        .unwrap_or_else(|| panic!("no alert {name}: {rule:#}"))
}

/// `expr` without whitespace, so the checks do not depend on line breaks.
fn squeezed(expr: &Value) -> String {
    expr.as_str()
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_component_renders_both_alerts() {
    let objects = kustomize(&manifests().join("monitoring"));
    let rule = one(&objects, "PrometheusRule");
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(rule["metadata"]["namespace"], "ipam-guard-system");

    let pool = alert(rule, "IPAMPoolNearlyExhausted");
    assert_eq!(pool["for"], "10m");
    assert_eq!(
        squeezed(&pool["expr"]),
        r#"max by (kind, namespace, pool) (ipam_guard_pool_addresses{state="used"}) / max by (kind, namespace, pool) (ipam_guard_pool_addresses{state="allocatable"}) > 0.9"#
    );
    let violations = alert(rule, "IPAMGuardViolations");
    assert_eq!(
        squeezed(&violations["expr"]),
        "max by (rule) (ipam_guard_violations) > 0"
    );
    for a in [pool, violations] {
        assert!(a["labels"]["severity"].is_string(), "{a:#}");
        assert!(a["annotations"]["description"].is_string(), "{a:#}");
    }

    let monitor = one(&objects, "ServiceMonitor");
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");
    assert_eq!(monitor["spec"]["endpoints"][0]["honorLabels"], true);
}

/// The metrics text the server exports for the alerts' inputs: pool usage from a view with one
/// pool, and the periodic audit's violations with one rule set.
fn exported() -> String {
    let mut index = Index::new();
    let pool = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"addresses": ["10.0.0.10-10.0.0.19"], "prefix": 24}});
    index.upsert(project(Kind::InClusterIPPool, &pool).unwrap());
    let mut registry = Registry::default();
    pool_metrics::register(
        &mut registry,
        Arc::new(Ledger::new(index)),
        pool_metrics::POOL_SERIES_LIMIT,
    );
    register_violations(&mut registry)
        .get_or_create(&ViolationLabels {
            rule: "P10".to_string(),
        })
        .set(1);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    text
}

/// Label names of the first sample of `metric` in a metrics text.
fn labels_of(text: &str, metric: &str) -> BTreeSet<String> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{metric}{{")))
        .unwrap_or_else(|| panic!("no sample of {metric} in\n{text}"));
    let inner = &line[metric.len() + 1..line.find('}').unwrap()];
    inner
        .split(',')
        .map(|kv| kv.split('=').next().unwrap().to_string())
        .collect()
}

#[test]
fn the_alerts_read_metrics_and_labels_the_server_exports() {
    let objects = kustomize(&manifests().join("monitoring"));
    let rule = one(&objects, "PrometheusRule");
    let text = exported();
    for r in rules(rule) {
        let expr = squeezed(&r["expr"]);
        // The certificate alerts read the TLS layer's metrics: tests/alerts.rs checks them
        // against a running server.
        if expr.contains("ipam_guard_tls_") {
            continue;
        }
        // Every metric named in the expression, with the labels it groups or filters by.
        let words: Vec<&str> = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let metrics: BTreeSet<&str> = words
            .iter()
            .copied()
            .filter(|w| w.starts_with("ipam_guard_"))
            .collect();
        assert!(!metrics.is_empty(), "{expr}");
        for m in &metrics {
            assert!(
                text.contains(&format!("# TYPE {m} gauge")),
                "{expr} reads {m}, which the server does not export:\n{text}"
            );
        }
        // `max by (a, b) (metric{...})`: the metric must carry every label it is grouped by.
        for clause in expr.split("by (").skip(1) {
            let (labels, rest) = clause.split_once(") (").expect("by (...) (metric)");
            let metric = rest.split(['{', ')']).next().unwrap();
            let exported = labels_of(&text, metric);
            for label in labels.split(',').map(str::trim) {
                assert!(
                    exported.contains(label),
                    "{expr} groups {metric} by {label}, which it does not carry: {exported:?}"
                );
            }
        }
    }
}

#[test]
fn added_to_the_install_it_turns_on_the_audit_and_scrapes_the_metrics_port() {
    // kustomize refuses absolute paths: the overlay reaches manifests/ relatively from a temp dir.
    let dir = tempfile::tempdir().unwrap();
    let up = "../".repeat(dir.path().components().count() - 1);
    let rel = format!(
        "{up}{}",
        manifests().display().to_string().trim_start_matches('/')
    );
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!("resources:\n  - {rel}\ncomponents:\n  - {rel}/monitoring\n"),
    )
    .unwrap();
    let objects = kustomize(dir.path());
    let deployment = one(&objects, "Deployment");
    let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&"--audit-interval=10m"), "{args:?}");
    // The argument parses as the binary will parse it.
    let mut argv = vec!["ipam-guard"];
    argv.extend(&args);
    use clap::Parser;
    ipam_guard::cli::Cli::try_parse_from(argv).expect("the container's arguments parse");

    let service = one(&objects, "Service");
    let monitor = one(&objects, "ServiceMonitor");
    for (k, v) in monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap()
    {
        assert_eq!(&service["metadata"]["labels"][k], v, "{service:#}");
    }
    assert!(service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == monitor["spec"]["endpoints"][0]["port"]));
    assert_eq!(
        monitor["spec"]["namespaceSelector"]["matchNames"][0],
        service["metadata"]["namespace"]
    );
    one(&objects, "PrometheusRule");
}
