//! The monitoring component's alerts (manifests/monitoring) name only metrics the
//! server really exposes, read back from a running server's `/metrics` with the registry `serve`
//! builds (the audit's `ipam_guard_violations` included).

mod server_support;

use std::collections::BTreeSet;

use ipam_guard::admission::Admission;
use ipam_guard::cluster::StaticView;
use ipam_guard::server::audit;
use ipam_guard::server::{CertFiles, Server};
use prometheus_client::registry::Registry;
use serde_json::Value;
use server_support::*;

const RULES: &str = include_str!("../manifests/monitoring/prometheusrule.yaml");

/// Metric names in an expression: identifiers starting `ipam_guard_` or `controller_runtime_`.
fn names_in(expr: &str) -> BTreeSet<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("ipam_guard_") || w.starts_with("controller_runtime_"))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn every_alert_names_an_exposed_metric() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let mut registry = Registry::default();
    let violations = audit::register_violations(&mut registry);
    // A family shows up once it has a sample: as after an audit pass that found something.
    violations
        .get_or_create(&audit::ViolationLabels { rule: "P10".into() })
        .set(1);
    // One pool in the view, so the pool usage family has samples too.
    let view = StaticView::from_manifests(
        ipam_guard::manifests::read_str(
            "pool.yaml",
            "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: InClusterIPPool\n\
             metadata: {name: p, namespace: ns}\nspec: {addresses: [10.0.0.10-10.0.0.19], prefix: 24}\n",
        )
        .manifests,
    );
    let view: std::sync::Arc<dyn ipam_guard::cluster::ClusterView> = std::sync::Arc::new(view);
    ipam_guard::server::pool_metrics::register(
        &mut registry,
        view.clone(),
        ipam_guard::server::pool_metrics::POOL_SERIES_LIMIT,
    );
    let admission = Admission::new(view, Default::default());
    let server = Server::bind(
        loopback_config(CertFiles::in_dir(dir.path())),
        admission,
        registry,
    )
    .await
    .unwrap();
    let metrics_addr = server.addrs().metrics;
    let task = tokio::spawn(server.run(std::future::pending()));
    let (status, text) = http_get(metrics_addr, "/metrics").await.unwrap();
    task.abort();
    assert_eq!(status, 200);
    // Families as exposed: `# TYPE name counter` is sampled as `name_total`.
    let mut exposed = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let (name, kind) = (parts.next().unwrap(), parts.next().unwrap_or(""));
            exposed.insert(name.to_string());
            if kind == "counter" {
                exposed.insert(format!("{name}_total"));
            }
        }
    }

    let rules: Value = serde_yaml_ng::from_str(RULES).unwrap();
    let mut alerts = 0;
    for group in rules["spec"]["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            let expr = rule["expr"].as_str().unwrap();
            let names = names_in(expr);
            assert!(!names.is_empty(), "{expr}");
            for n in &names {
                assert!(
                    exposed.contains(n),
                    "{n} in {expr:?} is not exposed: {exposed:?}"
                );
            }
            alerts += 1;
        }
    }
    assert!(alerts >= 3);
    assert!(RULES.contains("ipam_guard_violations"));
}
