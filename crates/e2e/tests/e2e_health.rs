//! Pools running dry, claims stuck and addresses left behind, on a real kube-apiserver
//! (tests/e2e), once per server found:
//! - E1: a claim created into a full pool is admitted, and kubectl prints the warning that names
//!   the pool and its usage (the figures `ipam-guard usage` prints for it);
//! - `ipam-guard audit` reports a planted stuck claim (H1), orphaned addresses (H2) and the claim
//!   waiting on the full pool (E1);
//! - `serve --audit-interval --policy-reports` (a process, `--decider off`) counts them in
//!   `ipam_guard_audit_findings{rule,severity}` and writes them as a PolicyReport in the
//!   namespace and a ClusterPolicyReport (the CRDs of `tests/crds/`); the reports follow the
//!   findings: updated when some are fixed, deleted when none are left.

mod e2e;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use e2e::api::{self, call, create_namespace, create_path};
use e2e::{eventually, ControlPlane};
use http::Method;
use serde_json::{json, Value};

const NS: &str = "team-h";
const WAIT: Duration = Duration::from_secs(60);
const CRDS_PATH: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const REPORT: &str = "/apis/wgpolicyk8s.io/v1alpha2/namespaces/team-h/policyreports/ipam-guard";
const CLUSTER_REPORT: &str = "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports/ipam-guard";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_health_e1_h1_h2_and_policy_reports() {
    e2e::each_server(
        "e2e_health_e1_h1_h2_and_policy_reports",
        e2e_health_e1_h1_h2_and_policy_reports_against,
    )
    .await;
}

fn ipam_guard(args: &[&str]) -> std::process::Output {
    Command::new(e2e::ipam_guard_bin())
        .args(args)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .expect("run ipam-guard")
}

async fn get(client: &kube::Client, path: &str) -> api::Resp {
    call(client, Method::GET, path, None, "application/json").await
}

async fn delete(client: &kube::Client, obj: &Value) {
    let r = api::delete(client, obj).await;
    assert!(r.status == 200 || r.status == 202, "{r:#?}");
}

/// `(rule, resource name)` of each result of the report at `path`, sorted; None while absent.
async fn results(client: &kube::Client, path: &str) -> Option<Vec<(String, String)>> {
    let r = get(client, path).await;
    if r.status == 404 {
        return None;
    }
    assert_eq!(r.status, 200, "{r:#?}");
    let mut out: Vec<(String, String)> = r.body["results"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|x| {
                    (
                        x["rule"].as_str().unwrap_or_default().to_string(),
                        x["resources"][0]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    Some(out)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = list
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    v.sort();
    v
}

async fn metrics(addr: std::net::SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return String::new();
    };
    let _ = s
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await;
    let mut body = String::new();
    let _ = s.read_to_string(&mut body).await;
    body
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// The YAML documents of a file under the repository.
fn documents(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(e2e::repo_root().join(path)).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// Creates an object of the install (namespace, ServiceAccount, RBAC) through the API.
async fn apply(client: &kube::Client, obj: &Value) {
    let kind = obj["kind"].as_str().unwrap();
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default();
    let path = match kind {
        "Namespace" => "/api/v1/namespaces".to_string(),
        "ServiceAccount" => format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        "ClusterRole" | "ClusterRoleBinding" => format!(
            "/apis/rbac.authorization.k8s.io/v1/{}s",
            kind.to_ascii_lowercase()
        ),
        "Role" | "RoleBinding" => format!(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/{}s",
            kind.to_ascii_lowercase()
        ),
        other => panic!("not part of the install's RBAC: {other}"),
    };
    create_path(client, &path, obj).await.expect(201);
}

/// A kubeconfig that acts as the install's ServiceAccount (impersonated by the e2e admin), so
/// `serve` has exactly the RBAC of manifests/rbac.yaml and the policy-reports component.
fn service_account_kubeconfig(cp: &ControlPlane) -> std::path::PathBuf {
    let admin = std::fs::read_to_string(&cp.kubeconfig).unwrap();
    let with_as = admin.replacen(
        "  user:\n",
        "  user:\n    as: system:serviceaccount:ipam-guard-system:ipam-guard\n",
        1,
    );
    assert_ne!(admin, with_as, "{admin}");
    let path = cp.dir.path().join("kubeconfig-sa");
    std::fs::write(&path, with_as).unwrap();
    path
}

/// `serve` with the periodic audit every second and PolicyReports; its log in `log`.
fn start_serve(
    cp: &ControlPlane,
    kubeconfig: &Path,
    log: &Path,
) -> (std::process::Child, std::net::SocketAddr) {
    let certs = ipam_guard::server::dev::ensure(&cp.dir.path().join("serve-certs")).unwrap();
    let port = || std::net::SocketAddr::from(([127, 0, 0, 1], e2e::free_port()));
    let (listen, probe, metrics_addr) = (port(), port(), port());
    let out = std::fs::File::create(log).unwrap();
    let child = Command::new(e2e::ipam_guard_bin())
        .arg("serve")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--tls-cert-file")
        .arg(&certs.files.cert)
        .arg("--tls-key-file")
        .arg(&certs.files.key)
        .args(["--listen", &listen.to_string()])
        .args(["--probe-listen", &probe.to_string()])
        .args(["--metrics-listen", &metrics_addr.to_string()])
        .args(["--decider", "off", "--shutdown-delay", "0s"])
        .args([
            "--audit-interval",
            "1s",
            "--stuck-after",
            "1s",
            "--policy-reports",
        ])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .stdout(std::process::Stdio::from(out.try_clone().unwrap()))
        .stderr(std::process::Stdio::from(out))
        .spawn()
        .expect("start serve");
    (child, metrics_addr)
}

async fn e2e_health_e1_h1_h2_and_policy_reports_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        println!("skipped: no kubectl on PATH");
        return;
    }
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    api::install_crds(&client).await;
    for file in [
        "wgpolicyk8s.io_policyreports.yaml",
        "wgpolicyk8s.io_clusterpolicyreports.yaml",
    ] {
        let path = e2e::repo_root().join("tests/crds").join(file);
        let crd: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        create_path(&client, CRDS_PATH, &crd).await.expect(201);
        let name = crd["metadata"]["name"].as_str().unwrap().to_string();
        eventually(&format!("CRD {name} established"), WAIT, || {
            let path = format!("{CRDS_PATH}/{name}");
            let client = client.clone();
            async move {
                get(&client, &path).await.body["status"]["conditions"]
                    .as_array()
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    })
            }
        })
        .await;
    }
    create_namespace(&client, NS).await;

    // Stored before the webhook: a global pool overlapping `spare` (P10 on both, one of them
    // cluster-scoped: the ClusterPolicyReport's).
    let spare = api::in_cluster_pool(NS, "spare", "10.70.1.10-10.70.1.20", "10.70.1.1");
    let global = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
        "metadata": {"name": "h-overlap"},
        "spec": {"addresses": ["10.70.1.20-10.70.1.30"], "prefix": 24, "gateway": "10.70.1.1"}
    });
    api::create(&client, &spare, false).await.expect(201);
    api::create(&client, &global, false).await.expect(201);

    let (guard, ca) = api::start_ipam_guard(&cp).await;
    api::register_webhooks(&client, guard.addr, &ca).await;

    // A pool of two addresses, both held by addresses whose claims do not exist (H2).
    let full = api::in_cluster_pool(NS, "full", "10.70.0.10-10.70.0.11", "10.70.0.1");
    let held = [
        api::ip_address(NS, "full-0", "gone-0", "10.70.0.10", "full"),
        api::ip_address(NS, "full-1", "gone-1", "10.70.0.11", "full"),
    ];
    api::create(&client, &full, false).await.expect(201);
    for a in &held {
        api::create(&client, a, false).await.expect(201);
    }
    eventually("the view to hold both addresses", WAIT, || {
        let n = guard
            .view
            .ledger()
            .read()
            .pool_usage()
            .into_iter()
            .find(|u| u.key.name.as_ref() == "full")
            .map_or(0, |u| u.used);
        async move { n == 2 }
    })
    .await;

    // E1 through kubectl: admitted, with the warning.
    let waits = api::claim(NS, "waits", "full");
    let file = cp.dir.path().join("waits.json");
    std::fs::write(&file, serde_json::to_vec(&waits).unwrap()).unwrap();
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .args(["create", "-f"])
        .arg(&file)
        .output()
        .expect("kubectl runs");
    let printed =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{printed}");
    assert!(
        printed.contains(
            "Warning: spec.poolRef.name: InClusterIPPool team-h/full has no free address (2 of 2 in use); \
             this claim waits until one is released [ipam-guard E1]\n"
        ),
        "{printed}"
    );
    assert!(
        printed.contains("ipaddressclaim.ipam.cluster.x-k8s.io/waits created"),
        "{printed}"
    );
    // The same figures as `usage`.
    let kc = cp.kubeconfig.to_str().unwrap().to_string();
    let usage = ipam_guard(&["usage", "--kubeconfig", &kc, "-o", "json"]);
    let usage: Value = serde_json::from_slice(&usage.stdout).expect("usage JSON");
    let row = usage
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "full")
        .expect("pool full");
    assert_eq!(
        (&row["used"], &row["allocatable"]),
        (&json!(2), &json!(2)),
        "{row}"
    );

    // A claim no provider serves, in a pool with free addresses (H1 once older than 1 s). The
    // age is the audit's wall clock against the API server's creationTimestamp (whole seconds):
    // the audit runs again until it finds the claim stuck, instead of sleeping past the second.
    let stuck = api::claim(NS, "stuck", "spare");
    api::create(&client, &stuck, false).await.expect(201);
    let audit_ns = || {
        let audit = ipam_guard(&[
            "audit",
            "--kubeconfig",
            &kc,
            "--stuck-after",
            "1s",
            "-o",
            "json",
        ]);
        let found: Value = serde_json::from_slice(&audit.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&audit.stderr)));
        let mut got: Vec<(String, String)> = found
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| {
                f["namespace"] == NS && ["E1", "H1", "H2"].contains(&f["rule"].as_str().unwrap())
            })
            .map(|f| {
                (
                    f["rule"].as_str().unwrap().to_string(),
                    f["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        got.sort();
        (found, got)
    };
    let stuck_seen = std::time::Instant::now();
    let (found, got) = loop {
        let (found, got) = audit_ns();
        if got.contains(&("H1".to_string(), "stuck".to_string())) {
            break (found, got);
        }
        assert!(
            stuck_seen.elapsed() < WAIT,
            "the audit never found the claim stuck: {found:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        got,
        pairs(&[
            ("E1", "waits"),
            ("H1", "stuck"),
            ("H2", "full-0"),
            ("H2", "full-1")
        ]),
        "{found:#}"
    );

    // The periodic audit of a serving process, with PolicyReports, running as the install's
    // ServiceAccount with the install's RBAC and the component's, nothing more.
    for obj in documents("manifests/namespace.yaml")
        .iter()
        .chain(documents("manifests/rbac.yaml").iter())
        .chain(documents("manifests/components/policy-reports/rbac.yaml").iter())
    {
        apply(&client, obj).await;
    }
    let sa = service_account_kubeconfig(&cp);
    let log = cp.dir.path().join("serve.log");
    let (mut serve, metrics_addr) = start_serve(&cp, &sa, &log);
    let log_tail = || std::fs::read_to_string(&log).unwrap_or_default();

    let want_ns = pairs(&[
        ("E1", "waits"),
        ("H1", "stuck"),
        ("H2", "full-0"),
        ("H2", "full-1"),
        ("P10", "spare"),
    ]);
    eventually("the PolicyReports to appear", WAIT, || {
        let client = client.clone();
        let want = want_ns.clone();
        async move {
            results(&client, REPORT).await == Some(want)
                && results(&client, CLUSTER_REPORT).await == Some(pairs(&[("P10", "h-overlap")]))
        }
    })
    .await;
    // Rounds that find the same leave the reports alone (the results keep their first-seen time):
    // two whole rounds more, seen in the log as writes that changed nothing, and the version
    // stands. (The round that wrote what was just read may log after the count is taken, so
    // it is not one of the two.)
    let version = |r: api::Resp| r.body["metadata"]["resourceVersion"].clone();
    let before = version(get(&client, REPORT).await);
    let written = |log: &str| -> Vec<String> {
        log.lines()
            .filter(|l| l.contains("PolicyReports written"))
            .map(str::to_string)
            .collect()
    };
    let rounds_before = written(&log_tail()).len();
    eventually("three more audit rounds", WAIT, || {
        let n = written(&log_tail()).len();
        async move { n >= rounds_before + 3 }
    })
    .await;
    let later = written(&log_tail()).split_off(rounds_before + 1);
    assert!(
        later
            .iter()
            .all(|l| l.contains("applied=0") && l.contains("deleted=0")),
        "{later:#?}"
    );
    assert_eq!(
        version(get(&client, REPORT).await),
        before,
        "{}",
        log_tail()
    );
    let text = metrics(metrics_addr).await;
    for (series, n) in [
        (
            r#"ipam_guard_audit_findings{rule="H1",severity="warn"}"#,
            1.0,
        ),
        (
            r#"ipam_guard_audit_findings{rule="H2",severity="warn"}"#,
            2.0,
        ),
        (
            r#"ipam_guard_audit_findings{rule="E1",severity="warn"}"#,
            1.0,
        ),
        (
            r#"ipam_guard_audit_findings{rule="P10",severity="deny"}"#,
            2.0,
        ),
        (r#"ipam_guard_violations{rule="P10"}"#, 2.0),
        // The figures of E1's warning and of `usage`, as the metrics export them.
        (
            r#"ipam_guard_pool_addresses{kind="InClusterIPPool",namespace="team-h",pool="full",state="used"}"#,
            2.0,
        ),
        (
            r#"ipam_guard_pool_addresses{kind="InClusterIPPool",namespace="team-h",pool="full",state="allocatable"}"#,
            2.0,
        ),
    ] {
        assert_eq!(
            sample(&text, series),
            Some(n),
            "{series}\n{text}\n{}",
            log_tail()
        );
    }
    let report = get(&client, REPORT).await.body;
    assert_eq!(
        report["summary"],
        json!({"pass": 0, "fail": 1, "warn": 4, "error": 0, "skip": 0}),
        "{report:#}"
    );
    let h1 = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == "H1")
        .unwrap();
    assert_eq!(h1["policy"], "ipam-guard");
    assert_eq!(h1["result"], "warn");
    assert_eq!(h1["severity"], "medium");
    assert_eq!(
        h1["resources"][0],
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim", "name": "stuck", "namespace": NS})
    );
    assert!(
        h1["message"].as_str().unwrap().ends_with("[ipam-guard H1]"),
        "{h1}"
    );

    // Some fixed: an orphan deleted frees an address, so `waits` is no longer on a full pool
    // but waits with one free (H1); the overlap goes with the global pool.
    delete(&client, &held[0]).await;
    delete(&client, &global).await;
    eventually("the PolicyReport to be updated", WAIT, || {
        let client = client.clone();
        async move {
            results(&client, REPORT).await
                == Some(pairs(&[("H1", "stuck"), ("H1", "waits"), ("H2", "full-1")]))
                && results(&client, CLUSTER_REPORT).await.is_none()
        }
    })
    .await;

    // Another writer takes over (as a new decider would) with nothing but what the cluster
    // holds: it deletes the report that the first one wrote, once the namespace is clean.
    let _ = serve.kill();
    let _ = serve.wait();
    let log = cp.dir.path().join("serve-2.log");
    let (mut serve, metrics_addr) = start_serve(&cp, &sa, &log);
    let log_tail = || std::fs::read_to_string(&log).unwrap_or_default();

    // Clean: every finding gone, so is the report.
    delete(&client, &held[1]).await;
    delete(&client, &waits).await;
    delete(&client, &stuck).await;
    eventually("the PolicyReport to be deleted", WAIT, || {
        let client = client.clone();
        async move { results(&client, REPORT).await.is_none() }
    })
    .await;
    let text = metrics(metrics_addr).await;
    let h2 = sample(
        &text,
        r#"ipam_guard_audit_findings{rule="H2",severity="warn"}"#,
    );
    assert!(h2.is_none() || h2 == Some(0.0), "{text}");
    assert!(
        !log_tail().contains("PolicyReports not written"),
        "{}",
        log_tail()
    );
    if let Ok(Some(status)) = serve.try_wait() {
        panic!("serve exited ({status}):\n{}", log_tail());
    }
    let _ = serve.kill();
    let _ = serve.wait();
    drop(guard);
}
