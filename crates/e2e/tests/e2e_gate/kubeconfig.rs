//! `check --kubeconfig` and `audit` against a live cluster: files judged against what the cluster
//! stores, schemas taken from the cluster's own CRDs, and the audit's filters, summary and limits.

use super::*;

pub fn run_check(args: &[&str]) -> std::process::Output {
    std::process::Command::new(crate::e2e::ipam_guard_bin())
        .arg("check")
        .args(args)
        .output()
        .expect("run ipam-guard check")
}

/// `check --kubeconfig`: a pull request's new pool judged against what the cluster stores, only
/// the new file blamed; a file that redefines a stored object wins over it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_kubeconfig_judges_files_against_the_live_cluster() {
    e2e::each_server(
        "check_kubeconfig_judges_files_against_the_live_cluster",
        check_kubeconfig_judges_files_against_the_live_cluster_against,
    )
    .await;
}

pub async fn check_kubeconfig_judges_files_against_the_live_cluster_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = e2e::ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gitops"}});
    assert_eq!(post(&client, "/api/v1/namespaces", &ns).await.0, 201);
    let stored = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": "scale-pool-0", "namespace": "gitops"},
        "spec": {"addresses": ["10.50.0.10-10.50.0.20"], "prefix": 24, "gateway": "10.50.0.1"}});
    let status = post_when_served(&client, &plural_path(&stored), &stored)
        .await
        .0;
    assert_eq!(status, 201);

    let dir = tempfile::tempdir().unwrap();
    let new_pool = dir.path().join("new-pool.yaml");
    std::fs::write(
        &new_pool,
        "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: InClusterIPPool\n\
         metadata: {name: new-pool, namespace: gitops}\n\
         spec: {addresses: [10.50.0.15-10.50.0.30], prefix: 24, gateway: 10.50.0.1}\n",
    )
    .unwrap();
    let moved = dir.path().join("scale0.yaml");
    std::fs::write(
        &moved,
        "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: InClusterIPPool\n\
         metadata: {name: scale-pool-0, namespace: gitops}\n\
         spec: {addresses: [10.50.1.10-10.50.1.20], prefix: 24, gateway: 10.50.1.1}\n",
    )
    .unwrap();
    let kc = cp.kubeconfig.to_str().unwrap();
    let f = new_pool.to_str().unwrap();

    let o = run_check(&["--kubeconfig", kc, f]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert_eq!(
        out,
        format!("{f}:4: InClusterIPPool gitops/new-pool: spec.addresses[0]: Invalid value: \"10.50.0.15-10.50.0.30\": overlaps InClusterIPPool gitops/scale-pool-0 (10.50.0.15-10.50.0.20) [P10]\n"),
        "{err}"
    );
    assert!(err.contains("read 1 object from 1 file"), "{err}");

    // The same pool moved by a file in the same change: the file wins, nothing overlaps.
    let o = run_check(&[
        "--kubeconfig",
        kc,
        "--context",
        "e2e",
        f,
        moved.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );

    // `check --kubeconfig` speaks for this server's release (its /version): an unknown metadata
    // field is refused where the server refuses it and a warning where the server prunes it.
    let typo = dir.path().join("typo.yaml");
    std::fs::write(
        &typo,
        "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: InClusterIPPool\n\
         metadata: {name: typo, namespace: gitops, lables: {a: b}}\n\
         spec: {addresses: [10.51.0.10-10.51.0.20], prefix: 24, gateway: 10.51.0.1}\n",
    )
    .unwrap();
    let object: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&typo).unwrap()).unwrap();
    let strict = format!("{}?dryRun=All&fieldValidation=Strict", plural_path(&object));
    let (server_status, server_body) = post(&client, &strict, &object).await;
    let o = run_check(&["--kubeconfig", kc, typo.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let refused = server_status != 201;
    assert_eq!(
        o.status.code(),
        Some(i32::from(refused)),
        "the API server ({}) says {server_status} {server_body}, check says:\n{out}{}",
        assets.version,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("unknown field \"metadata.lables\""), "{out}");
    assert_eq!(!out.contains("the API server drops it"), refused, "{out}");

    let o = run_check(&["--kubeconfig", kc, "--context", "nope", f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("context \"nope\""),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `check --kubeconfig` takes each kind's schema from the CRDs the cluster has installed: here a
/// release of the in-cluster provider that serves only v1alpha2 and spells the field `gatway`.
/// A kind the cluster does not serve (SpiderIPPool) is checked against the built-in description.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_kubeconfig_takes_schemas_from_the_clusters_crds() {
    e2e::each_server(
        "check_kubeconfig_takes_schemas_from_the_clusters_crds",
        check_kubeconfig_takes_schemas_from_the_clusters_crds_against,
    )
    .await;
}

pub async fn check_kubeconfig_takes_schemas_from_the_clusters_crds_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = e2e::ControlPlane::start(&assets).await;
    let client = cp.client().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    for c in e2e::crds().expect("the upstream CRDs") {
        let mut crd: Value = serde_yaml_ng::from_str(&c.text).unwrap();
        match crd["spec"]["names"]["kind"].as_str().unwrap() {
            "SpiderIPPool" => continue,
            "InClusterIPPool" => {}
            // As published, or as this server can take them (the harness says what it adapted).
            _ => {
                e2e::api::create_crd(&client, c).await;
                continue;
            }
        }
        // Only InClusterIPPool is left: served as a release that spells the field `gatway`.
        let versions = crd["spec"]["versions"].as_array_mut().unwrap();
        versions.retain(|v| v["name"] == "v1alpha2");
        versions[0]["storage"] = true.into();
        let spec = versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            .as_object_mut()
            .unwrap();
        let gateway = spec.remove("gateway").unwrap();
        spec.insert("gatway".into(), gateway);
        assert_eq!(post(&client, crds, &crd).await.0, 201, "{}", c.file);
    }
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gitops"}});
    assert_eq!(post(&client, "/api/v1/namespaces", &ns).await.0, 201);
    // The cluster's own answer on the renamed field, once the kind is served.
    let pool = |name: &str, version: &str, field: &str| {
        json!({"apiVersion": format!("ipam.cluster.x-k8s.io/{version}"), "kind": "InClusterIPPool",
            "metadata": {"name": name, "namespace": "gitops"},
            "spec": {"addresses": [format!("10.60.{}.10-10.60.{}.20", name.len(), name.len())],
                     "prefix": 24, field: format!("10.60.{}.1", name.len())}})
    };
    // Names of different lengths: pools that do not overlap.
    let stored = pool("stored-pool", "v1alpha2", "gatway");
    let (status, body) = post_when_served(&client, &plural_path(&stored), &stored).await;
    assert_eq!(status, 201, "{body}");
    let (status, _) = post(
        &client,
        "/apis/ipam.cluster.x-k8s.io/v1alpha1/namespaces/gitops/inclusterippools",
        &pool("old", "v1alpha1", "gateway"),
    )
    .await;
    assert_eq!(status, 404, "v1alpha1 is not served by this cluster");

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, v: &Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_string(v).unwrap()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let renamed = write("renamed.json", &pool("renamed", "v1alpha2", "gatway"));
    let upstream = write("upstream.json", &pool("upstream", "v1alpha2", "gateway"));
    let old = write("old.json", &pool("old", "v1alpha1", "gateway"));
    let spider = write(
        "spider.json",
        &json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
            "metadata": {"name": "sp"}, "spec": {"subnet": "10.70.0.0/24", "ipVersion": 4, "default": "yes"}}),
    );
    let kc = cp.kubeconfig.to_str().unwrap();
    let run = |args: &[&str]| {
        let o = run_check(args);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };

    let (code, out, err) = run(&["--kubeconfig", kc, &renamed]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, _) = run(&[&renamed]);
    assert_eq!(code, Some(1), "the built-in description knows no gatway");
    assert!(out.contains("unknown field \"spec.gatway\""), "{out}");

    // `check --kubeconfig` speaks for this server's release: from v1.25 an unknown field is
    // refused, before that it is pruned (a warning).
    let (code, out, err) = run(&["--kubeconfig", kc, &upstream]);
    if assets.version.at_least(25) {
        assert_eq!(code, Some(1), "{out}{err}");
        assert_eq!(
            out,
            format!("{upstream}:1: InClusterIPPool gitops/upstream: spec.gateway: unknown field \"spec.gateway\" [SCHEMA]\n")
        );
    } else {
        assert_eq!(code, Some(0), "{out}{err}");
        assert!(
            out.contains(
                "spec.gateway: unknown field \"spec.gateway\"; the API server drops it [SCHEMA]"
            ),
            "{out}"
        );
    }

    let (code, out, err) = run(&["--kubeconfig", kc, &old]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("no matches for kind \"InClusterIPPool\" in version \"ipam.cluster.x-k8s.io/v1alpha1\"; served versions: v1alpha2"),
        "{out}"
    );

    let (code, out, err) = run(&["--kubeconfig", kc, &spider]);
    assert_eq!(code, Some(1), "{out}{err}");
    // A type error no rule reads: only the schema (here the built-in description) can say it.
    assert!(
        out.contains("spec.default: Invalid value: \"yes\"")
            && out.contains("must be of type boolean")
            && out.contains("[SCHEMA]"),
        "{out}"
    );
}

pub fn run_audit(args: &[&str]) -> (Option<i32>, String, String) {
    let o = std::process::Command::new(crate::e2e::ipam_guard_bin())
        .arg("audit")
        .args(args)
        .output()
        .expect("run ipam-guard audit");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

/// `audit` for people and machines: a summary table first, only what -n/--rule/--severity ask
/// for, --limit per rule, `source: "cluster"` in JSON, stored-object wording.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_filters_summarises_and_limits() {
    e2e::each_server(
        "audit_filters_summarises_and_limits",
        audit_filters_summarises_and_limits_against,
    )
    .await;
}

pub async fn audit_filters_summarises_and_limits_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = e2e::ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    for ns in ["team-a", "team-b"] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        assert_eq!(post(&client, "/api/v1/namespaces", &body).await.0, 201);
    }
    let pool = |ns: &str, name: &str, range: &str| {
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"addresses": [range], "prefix": 24, "gateway": "10.60.0.1"}})
    };
    let address = |ns: &str, name: &str, ip: &str| {
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"address": ip, "prefix": 24, "gateway": "10.60.0.1",
                        "claimRef": {"name": format!("gone-{name}")},
                        "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "a1"}}})
    };
    // Stored before any webhook: three pools overlapping across namespaces (P10 on each),
    // three addresses whose claims are gone (H2 warnings).
    let objects = [
        pool("team-a", "a1", "10.60.0.10-10.60.0.30"),
        pool("team-a", "a2", "10.60.0.25-10.60.0.40"),
        pool("team-b", "b1", "10.60.0.35-10.60.0.50"),
        address("team-a", "x1", "10.60.0.11"),
        address("team-a", "x2", "10.60.0.12"),
        address("team-a", "x3", "10.60.0.13"),
    ];
    for o in &objects {
        let status = post_when_served(&client, &plural_path(o), o).await.0;
        assert_eq!(status, 201, "{o}");
    }
    let kc = cp.kubeconfig.to_str().unwrap();

    let (code, out, err) = run_audit(&["--kubeconfig", kc, "-n", "team-a", "--rule", "P10"]);
    assert_eq!(code, Some(1), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["RULE", "SEVERITY", "FINDINGS", "NAMESPACES"],
        "{out}"
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["P10", "deny", "2", "team-a", "2"],
        "{out}"
    );
    assert_eq!(lines[2], "", "{out}");
    let findings: Vec<&str> = lines[3..].to_vec();
    assert_eq!(findings.len(), 2, "{out}");
    assert!(
        findings
            .iter()
            .all(|l| l.starts_with("cluster: InClusterIPPool team-a/") && l.ends_with("[P10]")),
        "{out}"
    );
    assert!(err.contains("2 denials, 0 warnings"), "{err}");

    let (code, out, err) = run_audit(&["--kubeconfig", kc, "--severity", "warn", "--limit", "1"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("(showing 1 of 3 H2 findings: --limit 1)"),
        "{out}"
    );
    let h2: Vec<&str> = out.lines().filter(|l| l.ends_with("[H2]")).collect();
    assert_eq!(h2.len(), 1, "{out}");
    assert!(h2[0].contains("not found: an orphaned address"), "{out}");
    assert!(!out.contains("[P10]"), "{out}");

    let (code, out, err) = run_audit(&["--kubeconfig", kc, "-o", "json", "--rule", "P10"]);
    assert_eq!(code, Some(1), "{err}");
    let v: Value = serde_json::from_str(&out).expect("JSON on stdout, the table on stderr");
    let v = v.as_array().unwrap();
    assert_eq!(v.len(), 3);
    assert!(
        v.iter()
            .all(|f| f["source"] == "cluster" && f.get("file").is_none()),
        "{v:?}"
    );
    assert!(err.contains("RULE"), "{err}");
}
