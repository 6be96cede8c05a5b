//! The Grafana dashboard of manifests/monitoring asks only for metrics the binary exports: every
//! metric name in every PromQL expression of `dashboard.json` must be a series of `/metrics` as
//! the real `ipam-guard serve` answers it (histograms as `_bucket`, `_sum`, `_count`, counters as
//! `_total`, both read from the samples themselves). Two runs of the binary between them show
//! every family a sample: `serve --dev --state-from` with the periodic audit (pool usage, stored
//! violations), and `serve --kubeconfig` as installed, with the decider election, against an API
//! server that is not there (decider, watch health; a claim then goes to the absent decider).
//! Label names a selector uses must be labels of that metric.

mod server_support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use server_support::*;
use tokio::io::AsyncBufReadExt;

const DASHBOARD: &str = include_str!("../manifests/monitoring/dashboard.json");

/// Metric name → label names seen on its samples.
type Exposed = BTreeMap<String, BTreeSet<String>>;

fn exposed(text: &str, into: &mut Exposed) {
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let labels = into.entry(line[..end].to_string()).or_default();
        if line[end..].starts_with('{') {
            let close = line.rfind('}').unwrap();
            for pair in line[end + 1..close].split("\",") {
                if let Some((name, _)) = pair.split_once('=') {
                    labels.insert(name.trim_matches(',').to_string());
                }
            }
        }
    }
}

/// The metric names of a PromQL expression, each with the label names its selector matches on.
/// Skips string literals, label matchers, range and offset durations, Grafana variables, numbers,
/// function names (an identifier followed by `(`), keywords, and the labels of `by`, `without`,
/// `on`, `ignoring`, `group_left`, `group_right` lists.
fn metric_names(expr: &str) -> Vec<(String, BTreeSet<String>)> {
    const KEYWORDS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "and",
        "or",
        "unless",
        "offset",
        "inf",
        "nan",
        // Aggregations, which may take their label list before their argument.
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    ];
    const LABEL_LISTS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    let chars: Vec<char> = expr.chars().collect();
    let mut out: Vec<(String, BTreeSet<String>)> = Vec::new();
    let mut i = 0;
    let mut last_word = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '[' {
            while i < chars.len() && chars[i] != ']' {
                i += 1;
            }
            i += 1;
        } else if c == '{' {
            // A selector's matchers: the label names belong to the metric just read.
            let start = i + 1;
            let mut depth_quote = None;
            while i < chars.len() && (chars[i] != '}' || depth_quote.is_some()) {
                match (depth_quote, chars[i]) {
                    (None, q @ ('"' | '\'' | '`')) => depth_quote = Some(q),
                    (Some(q), ch) if ch == q => depth_quote = None,
                    _ => {}
                }
                i += 1;
            }
            let body: String = chars[start..i.min(chars.len())].iter().collect();
            let names = matcher_names(&body);
            if let Some(last) = out.last_mut().filter(|_| !last_word.is_empty()) {
                last.1.extend(names);
            }
            i += 1;
        } else if c == '$' {
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || "_{}".contains(chars[i])) {
                i += 1;
            }
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut j = i;
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
            let next = chars.get(j).copied();
            if LABEL_LISTS.contains(&word.as_str()) && next == Some('(') {
                // Skip the label list.
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
                i += 1;
                last_word.clear();
            } else if KEYWORDS.contains(&word.as_str()) || next == Some('(') {
                last_word.clear();
            } else {
                out.push((word.clone(), BTreeSet::new()));
                last_word = word;
            }
            continue;
        } else {
            if !c.is_whitespace() {
                last_word.clear();
            }
            i += 1;
        }
    }
    out
}

fn matcher_names(body: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = body;
    while let Some(op) = rest.find(['=', '!']) {
        let name = rest[..op].trim().trim_start_matches(',').trim();
        if !name.is_empty() {
            names.insert(name.to_string());
        }
        // Past the quoted value.
        let after = &rest[op..];
        let Some(q) = after.find('"') else { break };
        let Some(close) = after[q + 1..].find('"') else {
            break;
        };
        rest = &after[q + 1 + close + 1..];
    }
    names
}

fn exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr", Value::String(s)) => out.push(s.clone()),
                    _ => exprs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
        _ => {}
    }
}

#[test]
fn the_expression_reader_finds_metrics_and_their_matchers() {
    let found = metric_names(
        r#"histogram_quantile(0.99, sum by (le, webhook) (rate(controller_runtime_webhook_latency_seconds_bucket{webhook="/validate"}[$__rate_interval]))) / on (x) group_left max without (y) (a_b:c offset 5m) > bool 2e3 - time()"#,
    );
    assert_eq!(
        found,
        [
            (
                "controller_runtime_webhook_latency_seconds_bucket".to_string(),
                BTreeSet::from(["webhook".to_string()])
            ),
            ("a_b:c".to_string(), BTreeSet::new()),
        ]
    );
    assert_eq!(
        matcher_names(r#"state="used", kind!~"a,b=c", pool!="x""#),
        BTreeSet::from(["state".into(), "kind".into(), "pool".into()])
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn scrape_until(metrics: SocketAddr, wanted: &str) -> String {
    let start = Instant::now();
    loop {
        if let Ok((200, text)) = http_get(metrics, "/metrics").await {
            if text.lines().any(|l| l.starts_with(wanted)) || start.elapsed() > WAIT {
                return text;
            }
        }
        assert!(start.elapsed() < WAIT, "no /metrics within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn claim_review() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000001",
            "kind": {"group": "ipam.cluster.x-k8s.io", "version": "v1beta2", "kind": "IPAddressClaim"},
            "resource": {"group": "ipam.cluster.x-k8s.io", "version": "v1beta2", "resource": "ipaddressclaims"},
            "name": "c1", "namespace": "ns", "operation": "CREATE",
            "userInfo": {"username": "someone"},
            "object": {
                "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
                "metadata": {"name": "c1", "namespace": "ns"},
                "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"}},
            },
            "dryRun": false,
        },
    }))
    .unwrap()
}

async fn validate(webhook: SocketAddr, ca: &rustls::pki_types::CertificateDer<'static>) -> Reply {
    let mut conn = Conn::open(webhook, ca, Proto::H1).await.expect("connect");
    conn.send(post("/validate", Some("application/json"), claim_review()))
        .await
        .expect("a reply")
}

/// `serve` as manifests/deployment.yaml runs it (live view, decider election), its kubeconfig
/// naming a server nobody listens on: the watches and the election keep failing, and every
/// family it registers is exported.
async fn serve_installed(dir: &Path, ca: &rustls::pki_types::CertificateDer<'static>) -> String {
    let kubeconfig = dir.join("kubeconfig");
    let nobody = free_port();
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: none\n\
             clusters: [{{name: none, cluster: {{server: \"https://127.0.0.1:{nobody}\"}}}}]\n\
             contexts: [{{name: none, context: {{cluster: none, user: none, namespace: ipam-guard-system}}}}]\n\
             users: [{{name: none, user: {{token: none}}}}]\n"
        ),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .arg("serve")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--cert-dir")
        .arg(dir.join("certs"))
        .args(["--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0"])
        .args([
            "--metrics-listen",
            "127.0.0.1:0",
            "--peer-listen",
            "127.0.0.1:0",
        ])
        .args(["--peer-advertise", "127.0.0.1:1", "--audit-interval", "1s"])
        .env("RUST_LOG", "info")
        .env_remove("POD_IP")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    // `serving webhook=ADDR probes=ADDR metrics=ADDR` in the log names the ports.
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    let find = |line: &str, key: &str| -> Option<SocketAddr> {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|a| a.parse().ok())
    };
    let (webhook, metrics) = tokio::time::timeout(WAIT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            seen.push_str(&line);
            seen.push('\n');
            if let (Some(w), Some(m)) = (find(&line, "webhook="), find(&line, "metrics=")) {
                return Some((w, m));
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| panic!("no `serving` line; logs:\n{seen}"));
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    // A claim needs the decider, which nobody is: a 503, counted as a forward without one.
    let reply = validate(webhook, ca).await;
    assert_eq!(
        reply.json()["response"]["status"]["code"],
        503,
        "{}",
        reply.text()
    );
    let text = scrape_until(metrics, "ipam_guard_decider_forwards_total").await;
    let _ = child.kill().await;
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_query_names_an_exported_metric() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    let mut all = Exposed::new();

    // The static view: pools and an address its pool does not hand out (the audit finds it).
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/usage");
    let (pools, prefix_pools) = (
        fixtures.join("pools.yaml"),
        fixtures.join("prefix-pools.yaml"),
    );
    let served = serve_dev(
        &certs,
        &[
            "--state-from",
            pools.to_str().unwrap(),
            prefix_pools.to_str().unwrap(),
            "--audit-interval",
            "1s",
        ],
    )
    .await;
    served.wait_ready().await;
    let reply = validate(served.webhook, &served.ca).await;
    assert_eq!(reply.status, 200);
    exposed(
        &scrape_until(served.metrics, "ipam_guard_violations").await,
        &mut all,
    );
    let ca = served.ca.clone();
    drop(served);

    exposed(&serve_installed(dir.path(), &ca).await, &mut all);
    for family in [
        "ipam_guard_violations",
        "ipam_guard_decider_forwards_total",
        "ipam_guard_pool_addresses",
        "ipam_guard_pool_prefixes",
        "ipam_guard_decisions_total",
    ] {
        assert!(all.contains_key(family), "{family} not exported: {all:?}");
    }

    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("dashboard.json is JSON");
    let mut found = Vec::new();
    exprs(&dashboard["panels"], &mut found);
    assert!(found.len() >= 10, "{found:?}");
    let mut used = BTreeSet::new();
    for expr in &found {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "no metric in {expr:?}");
        for (name, labels) in names {
            let Some(have) = all.get(&name) else {
                panic!(
                    "{name} in {expr:?} is not exported; exported: {:?}",
                    all.keys()
                );
            };
            for l in &labels {
                assert!(
                    have.contains(l),
                    "{name} has no label {l:?} ({expr:?}): {have:?}"
                );
            }
            used.insert(name);
        }
    }
    // What the dashboard is for: pool usage, denials by rule, the decider, the view.
    for needed in [
        "ipam_guard_pool_addresses",
        "ipam_guard_decisions_total",
        "ipam_guard_decider_is_leader",
        "ipam_guard_view_synced",
        "ipam_guard_violations",
    ] {
        assert!(used.contains(needed), "the dashboard shows no {needed}");
    }
}
