//! `check`'s schema validation (rule SCHEMA) against the real kube-apiserver's: each object is
//! sent as a server-side dry run with strict field validation to an API server holding the same
//! CRDs, and the two must agree on whether it is refused, at which fields, and with which words.
//! Skips (and says so) without KUBEBUILDER_ASSETS.

mod e2e;

use std::time::Duration;

use http::{Method, Request};
use http_body_util::BodyExt;
use ipam_guard::kube_version::KubeVersion;
use ipam_guard::schema::Schemas;
use serde_json::{json, Value};

async fn post(client: &kube::Client, path: &str, body: &Value) -> (u16, Value) {
    let req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    let res = client.send(req).await.expect("the API server answers");
    let status = res.status().as_u16();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn plural_path(obj: &Value) -> String {
    let api_version = obj["apiVersion"].as_str().unwrap();
    let kind = obj["kind"].as_str().unwrap();
    let (k, _) = ipam_guard::kinds::Kind::from_api_version(api_version, kind).unwrap();
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) if k.namespaced() => {
            format!("/apis/{api_version}/namespaces/{ns}/{}", k.plural())
        }
        _ => format!("/apis/{api_version}/{}", k.plural()),
    }
}

/// Creates every CRD the project tests against (not waiting: `post_when_served` does).
async fn install_crds(client: &kube::Client) {
    for c in e2e::crds().expect("the upstream CRDs") {
        e2e::api::create_crd(client, c).await;
    }
}

/// POSTs `body` to `path`, again while the API server does not serve the kind yet (a CRD is
/// served a moment after it is created).
async fn post_when_served(client: &kube::Client, path: &str, body: &Value) -> (u16, Value) {
    let start = std::time::Instant::now();
    loop {
        let answer = post(client, path, body).await;
        if answer.0 != 404 || start.elapsed() > Duration::from_secs(60) {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn obj(api_version: &str, kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
           "metadata": {"name": name, "namespace": "schema"}, "spec": spec})
}

/// Objects the API server accepts and refuses, across kinds and versions.
fn cases() -> Vec<(&'static str, Value)> {
    let pool = "ipam.cluster.x-k8s.io/v1alpha2";
    let claim = "ipam.cluster.x-k8s.io/v1beta2";
    let metal3 = "ipam.metal3.io/v1alpha1";
    let spider = "spiderpool.spidernet.io/v2beta1";
    let pool_ref =
        json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"});
    vec![
        (
            "valid pool",
            obj(
                pool,
                "InClusterIPPool",
                "ok",
                json!({"addresses": ["10.0.0.10-10.0.0.20"], "prefix": 24, "gateway": "10.0.0.1"}),
            ),
        ),
        (
            "misspelt fields",
            obj(
                pool,
                "InClusterIPPool",
                "typo",
                json!({"addresses": ["10.0.0.10"], "prefix": 24, "gatway": "10.0.0.1", "exludedAddresses": []}),
            ),
        ),
        (
            "prefix as a string",
            obj(
                pool,
                "InClusterIPPool",
                "str",
                json!({"addresses": ["10.0.0.10"], "prefix": "24"}),
            ),
        ),
        (
            "prefix out of bounds",
            obj(
                pool,
                "InClusterIPPool",
                "big",
                json!({"addresses": ["10.0.0.10"], "prefix": 129}),
            ),
        ),
        (
            "addresses missing",
            obj(pool, "InClusterIPPool", "none", json!({"prefix": 24})),
        ),
        (
            "name not a subdomain",
            obj(
                pool,
                "InClusterIPPool",
                "Not_Ok",
                json!({"addresses": ["10.0.0.10"], "prefix": 24}),
            ),
        ),
        (
            "unknown metadata field",
            json!({"apiVersion": pool, "kind": "InClusterIPPool", "metadata": {"name": "m", "namespace": "schema", "lables": {"a": "b"}}, "spec": {"addresses": ["10.0.0.10"], "prefix": 24}}),
        ),
        (
            "bad label value",
            json!({"apiVersion": pool, "kind": "InClusterIPPool", "metadata": {"name": "l", "namespace": "schema", "labels": {"a": "not ok!"}}, "spec": {"addresses": ["10.0.0.10"], "prefix": 24}}),
        ),
        (
            "bad label keys",
            json!({"apiVersion": pool, "kind": "InClusterIPPool", "metadata": {"name": "k", "namespace": "schema", "labels": {"a/b/c": "x", "-x": "y", "Example.com/ok": "z"}}, "spec": {"addresses": ["10.0.0.10"], "prefix": 24}}),
        ),
        (
            "label key and value too long",
            json!({"apiVersion": pool, "kind": "InClusterIPPool", "metadata": {"name": "t", "namespace": "schema", "labels": {"k".repeat(64): "x", "v": "v".repeat(64)}}, "spec": {"addresses": ["10.0.0.10"], "prefix": 24}}),
        ),
        (
            "valid claim",
            obj(claim, "IPAddressClaim", "c", json!({"poolRef": pool_ref})),
        ),
        (
            "claim poolRef name pattern",
            obj(
                claim,
                "IPAddressClaim",
                "c2",
                json!({"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "Bad_Name"}}),
            ),
        ),
        (
            "claim poolRef kind missing",
            obj(
                claim,
                "IPAddressClaim",
                "c3",
                json!({"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "name": "p"}}),
            ),
        ),
        (
            "claim with extra field",
            obj(
                claim,
                "IPAddressClaim",
                "c4",
                json!({"poolRef": pool_ref, "colour": "red"}),
            ),
        ),
        (
            "address prefix negative",
            obj(
                claim,
                "IPAddress",
                "a",
                json!({"address": "10.0.0.5", "prefix": -1, "poolRef": pool_ref, "claimRef": {"name": "c"}}),
            ),
        ),
        (
            "metal3 pool",
            obj(
                metal3,
                "IPPool",
                "m3",
                json!({"namePrefix": "x", "pools": [{"start": "10.1.0.10", "end": "10.1.0.20"}], "prefix": 24}),
            ),
        ),
        (
            "metal3 pool bad type",
            obj(
                metal3,
                "IPPool",
                "m3b",
                json!({"namePrefix": "x", "pools": {"start": "10.1.0.10"}}),
            ),
        ),
        (
            "metal3 pool unknown entry field",
            obj(
                metal3,
                "IPPool",
                "m3c",
                json!({"namePrefix": "x", "pools": [{"start": "10.1.0.10", "stop": "10.1.0.20"}]}),
            ),
        ),
        (
            "global pool",
            json!({"apiVersion": pool, "kind": "GlobalInClusterIPPool", "metadata": {"name": "g"}, "spec": {"addresses": ["10.3.0.10-10.3.0.20"], "prefix": 24}}),
        ),
        (
            "global pool without prefix",
            json!({"apiVersion": pool, "kind": "GlobalInClusterIPPool", "metadata": {"name": "g2"}, "spec": {"addresses": ["10.3.0.10"]}}),
        ),
        (
            "global pool v1alpha1 subnet",
            json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha1", "kind": "GlobalInClusterIPPool", "metadata": {"name": "g3"}, "spec": {"subnet": "10.4.0.0/24", "start": "10.4.0.10", "end": "10.4.0.20"}}),
        ),
        (
            "global pool v1alpha1 unknown field",
            json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha1", "kind": "GlobalInClusterIPPool", "metadata": {"name": "g4"}, "spec": {"subnet": "10.4.0.0/24", "strat": "10.4.0.10"}}),
        ),
        (
            "metal3 claim",
            obj(metal3, "IPClaim", "m3-c", json!({"pool": {"name": "m3"}})),
        ),
        (
            "metal3 claim without pool",
            obj(metal3, "IPClaim", "m3-c2", json!({})),
        ),
        (
            "metal3 claim extra field",
            obj(
                metal3,
                "IPClaim",
                "m3-c3",
                json!({"pool": {"name": "m3"}, "size": 1}),
            ),
        ),
        (
            "metal3 address",
            obj(
                metal3,
                "IPAddress",
                "m3-a",
                json!({"address": "10.1.0.15", "prefix": 24, "claim": {"name": "m3-c"}, "pool": {"name": "m3"}}),
            ),
        ),
        (
            "metal3 address prefix as a string",
            obj(
                metal3,
                "IPAddress",
                "m3-a2",
                json!({"address": "10.1.0.16", "prefix": "24", "claim": {"name": "m3-c"}, "pool": {"name": "m3"}}),
            ),
        ),
        (
            "vsphere machine",
            obj(
                "infrastructure.cluster.x-k8s.io/v1beta1",
                "VSphereMachine",
                "vm",
                json!({"template": "ubuntu", "network": {"devices": [{"networkName": "vm-net", "addressesFromPools": [pool_ref.clone()]}]}}),
            ),
        ),
        (
            "vsphere machine unknown device field",
            obj(
                "infrastructure.cluster.x-k8s.io/v1beta1",
                "VSphereMachine",
                "vm2",
                json!({"template": "ubuntu", "network": {"devices": [{"networkName": "vm-net", "adressesFromPools": []}]}}),
            ),
        ),
        (
            "vsphere machine without template",
            obj(
                "infrastructure.cluster.x-k8s.io/v1beta2",
                "VSphereMachine",
                "vm3",
                json!({"network": {"devices": [{"networkName": "vm-net"}]}}),
            ),
        ),
        (
            "vsphere machine template",
            obj(
                "infrastructure.cluster.x-k8s.io/v1beta1",
                "VSphereMachineTemplate",
                "vmt",
                json!({"template": {"spec": {"template": "ubuntu", "network": {"devices": [{"networkName": "vm-net", "addressesFromPools": [pool_ref.clone()]}]}}}}),
            ),
        ),
        (
            "vsphere machine template wrong type",
            obj(
                "infrastructure.cluster.x-k8s.io/v1beta2",
                "VSphereMachineTemplate",
                "vmt2",
                json!({"template": {"spec": {"template": "ubuntu", "network": {"devices": "vm-net"}}}}),
            ),
        ),
        (
            "spider pool",
            json!({"apiVersion": spider, "kind": "SpiderIPPool", "metadata": {"name": "sp"}, "spec": {"subnet": "10.2.0.0/24", "ips": ["10.2.0.10-10.2.0.20"]}}),
        ),
        (
            "spider pool bad subnet pattern",
            json!({"apiVersion": spider, "kind": "SpiderIPPool", "metadata": {"name": "sp2"}, "spec": {"subnet": "not-a-subnet", "ips": ["10.2.0.10"]}}),
        ),
        (
            "spider pool ipVersion enum",
            json!({"apiVersion": spider, "kind": "SpiderIPPool", "metadata": {"name": "sp3"}, "spec": {"subnet": "10.2.0.0/24", "ipVersion": 5}}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_agrees_with_the_api_server() {
    e2e::each_server(
        "schema_agrees_with_the_api_server",
        schema_agrees_with_the_api_server_against,
    )
    .await;
}

async fn schema_agrees_with_the_api_server_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The server as it runs by default: strict field validation is there from v1.25 (beta, on);
    // older servers prune unknown fields, and `check` says that for them.
    let cp = e2e::ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    let (status, _) = post(
        &client,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "schema"}}),
    )
    .await;
    assert_eq!(status, 201);

    let schemas = Schemas::builtin();
    // `check` as it speaks for this server's release.
    let target = KubeVersion::parse(&assets.version.to_string()).unwrap();
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (what, object) in cases() {
        let path = format!("{}?dryRun=All&fieldValidation=Strict", plural_path(&object));
        let (status, body) = post_when_served(&client, &path, &object).await;
        let api_version = object["apiVersion"].as_str().unwrap();
        let (group, version) = api_version.rsplit_once('/').unwrap();
        let ours = schemas
            .validate_as(
                target,
                group,
                object["kind"].as_str().unwrap(),
                version,
                &object,
            )
            .expect("a served version");
        let message = body["message"].as_str().unwrap_or_default().to_string();
        report.push(format!(
            "{what}: API server {status}: {message}\n  check: {ours:?}"
        ));
        assert!(
            matches!(status, 201 | 400 | 422),
            "{what}: unexpected {status}: {body}"
        );
        if (status != 201) != ours.iter().any(|e| !e.warning) {
            failures.push(format!(
                "{what}: the API server says {status} {message}, check says {ours:?}"
            ));
        }
        // A wrong type that the API server's strict decoder trips over first (an object where
        // a list belongs) is refused as an unknown field somewhere below it: both refuse, at
        // the same field, in other words.
        let decoder = status == 400 && message.contains("strict decoding error");
        for e in ours.iter().filter(|e| !e.warning) {
            if decoder && e.message.contains(" in body must be of type ") {
                if !message.contains(&format!("unknown field \"{}.", e.path)) {
                    failures.push(format!("{what}: {message} does not name {}", e.path));
                }
                continue;
            }
            // The API server names every field check names, with the same words; only a wrong
            // type differs: check shows the value where the API server shows the type's name,
            // so the words after the value are compared.
            let cause = if e.message.starts_with("unknown field") {
                e.message.clone()
            } else if let Some(at) = e.message.find(" in body must be of type ") {
                // `<path> in body must be of type …`: where the path starts before `at`.
                let start = at.saturating_sub(e.path.len());
                format!("{}: Invalid value: \0{}", e.path, &e.message[start..])
            } else {
                format!("{}: {}", e.path, e.message)
            };
            let found = match cause.split_once('\0') {
                Some((head, tail)) => message.contains(head) && message.contains(tail),
                None => message.contains(&cause),
            };
            if !found {
                failures.push(format!(
                    "{what}: the API server's message lacks {cause:?}:\n{message}"
                ));
            }
        }
    }
    println!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn run_check(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
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

async fn check_kubeconfig_judges_files_against_the_live_cluster_against(assets: e2e::Server) {
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

async fn check_kubeconfig_takes_schemas_from_the_clusters_crds_against(assets: e2e::Server) {
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

fn run_audit(args: &[&str]) -> (Option<i32>, String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
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

async fn audit_filters_summarises_and_limits_against(assets: e2e::Server) {
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

/// One step of docs/trial.md: a `sh` block and how the page says it behaves.
#[derive(Debug)]
enum Step {
    Run(String),
    Background(String),
    Retry(String),
    FailsWith(String, String),
}

fn trial_steps(page: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    // A marker applies to the next block (prose may stand in between).
    let mut marker: Option<String> = None;
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if let Some(m) = line.strip_prefix("<!-- trial:") {
            marker = Some(m.trim_end_matches("-->").trim().to_string());
        } else if line == "```sh" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            let command = block.join("\n");
            steps.push(match marker.take().as_deref() {
                None => Step::Run(command),
                Some("background") => Step::Background(command),
                Some("retry") => Step::Retry(command),
                Some(m) if m.starts_with("fails-with ") => {
                    let text = m["fails-with ".len()..].trim_matches('"').to_string();
                    Step::FailsWith(command, text)
                }
                Some(other) => panic!("unknown trial marker {other:?}"),
            });
        }
    }
    steps
}

/// docs/trial.md, followed as written against a real kube-apiserver: serve --dev --kubeconfig,
/// dev-webhooks, kubectl, a denial through the API server, removal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trial_page_works_as_written() {
    e2e::each_server(
        "trial_page_works_as_written",
        trial_page_works_as_written_against,
    )
    .await;
}

async fn trial_page_works_as_written_against(assets: e2e::Server) {
    if std::process::Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        panic!("kubectl is not on PATH (.ci/run installs it)");
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = e2e::ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/trial.md"),
    )
    .unwrap();
    let steps = trial_steps(&page);
    assert!(steps.len() >= 6, "{steps:#?}");

    // The page's ports, moved to free ones; the binary on PATH; a directory of its own.
    let ports = [
        ("9443", e2e::free_port()),
        ("8081", e2e::free_port()),
        ("8080", e2e::free_port()),
    ];
    let localise = |c: &str| {
        ports.iter().fold(c.to_string(), |c, (from, to)| {
            c.replace(from, &to.to_string())
        })
    };
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = tempfile::tempdir().unwrap();
    let bash = |command: &str| {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-euo")
            .arg("pipefail")
            .arg("-c")
            .arg(localise(command))
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("KUBECONFIG", &cp.kubeconfig)
            .kill_on_drop(true);
        cmd
    };
    let within = Duration::from_secs(90);
    let mut background = Vec::new();
    for step in &steps {
        match step {
            Step::Background(c) => {
                let mut cmd = bash(c);
                cmd.stdout(std::process::Stdio::null())
                    .stderr(std::fs::File::create(dir.path().join("serve.log")).unwrap());
                background.push(cmd.spawn().expect("serve starts"));
            }
            Step::Run(c) => {
                let o = bash(c).output().await.unwrap();
                assert!(
                    o.status.success(),
                    "{c}\n{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            Step::Retry(c) | Step::FailsWith(c, _) => {
                let start = std::time::Instant::now();
                loop {
                    let o = bash(c).output().await.unwrap();
                    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
                    let done = match step {
                        Step::FailsWith(_, text) => !o.status.success() && stderr.contains(text),
                        _ => o.status.success(),
                    };
                    if done {
                        break;
                    }
                    assert!(
                        start.elapsed() < within,
                        "{step:?} did not happen within {within:?}: {}{stderr}\nserve log:\n{}",
                        String::from_utf8_lossy(&o.stdout),
                        std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default()
                    );
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }
    // The trial is gone: the configurations are deleted.
    let o =
        bash("kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations -o name")
            .output()
            .await
            .unwrap();
    assert!(o.status.success());
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("ipam-guard-dev"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    drop(background);
    // The first sync says what it read, kind by kind.
    let log = std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default();
    assert!(
        log.lines()
            .any(|l| l.contains("listed") && l.contains("objects=")),
        "no sync progress in the log:\n{log}"
    );
}

/// `dev-webhooks` touches only the trial: against a real API server, with its configurations
/// applied and nothing but a connection counter at the URL (`serve` down), another team's
/// cluster-scoped pools are created without the API server ever calling the URL; a pool that opts
/// in with the trial label is sent (and, failing open, created all the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trial_webhooks_leave_other_teams_cluster_scoped_objects_alone() {
    e2e::each_server(
        "trial_webhooks_leave_other_teams_cluster_scoped_objects_alone",
        trial_webhooks_leave_other_teams_cluster_scoped_objects_alone_against,
    )
    .await;
}

async fn trial_webhooks_leave_other_teams_cluster_scoped_objects_alone_against(
    assets: e2e::Server,
) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = e2e::ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    let dir = tempfile::tempdir().unwrap();
    let certs =
        ipam_guard::server::dev::ensure(&dir.path().join("certs")).expect("dev certificates");
    let cert_dir = certs.ca_cert.parent().unwrap().to_path_buf();

    // Where `serve` would listen: a socket that only counts who connects.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(conn);
        }
    });

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .args([
            "dev-webhooks",
            "--url",
            &format!("https://127.0.0.1:{port}"),
        ])
        .args(["--namespace", "ipam-trial", "--cert-dir"])
        .arg(&cert_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let file = dir.path().join("dev-webhooks.yaml");
    std::fs::write(&file, &out.stdout).unwrap();
    let kubectl = |args: &[&str], stdin: Option<&str>| {
        let mut cmd = std::process::Command::new("kubectl");
        cmd.arg("--kubeconfig").arg(&cp.kubeconfig).args(args);
        if let Some(text) = stdin {
            let path = dir.path().join("obj.yaml");
            std::fs::write(&path, text).unwrap();
            cmd.arg("-f").arg(path);
        }
        cmd.output().unwrap()
    };
    let o = kubectl(&["apply", "-f", file.to_str().unwrap()], None);
    assert!(o.status.success(), "{o:?}");

    let global = |name: &str, labels: &str| {
        format!(
            "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: GlobalInClusterIPPool\n\
             metadata:\n  name: {name}\n  labels: {{{labels}}}\n\
             spec:\n  addresses: [10.200.0.10-10.200.0.20]\n  prefix: 24\n  gateway: 10.200.0.1\n"
        )
    };
    let spider = "apiVersion: spiderpool.spidernet.io/v2beta1\nkind: SpiderIPPool\n\
                  metadata: {name: other-team-pods}\n\
                  spec:\n  subnet: 172.19.0.0/24\n  ips: [172.19.0.10-172.19.0.20]\n";
    // A configuration takes a moment to reach the API server's webhook cache: the labelled pool
    // is created (and deleted) until the URL has been called once.
    let start = std::time::Instant::now();
    loop {
        let o = kubectl(
            &["create"],
            Some(&global("opted-in", "ipam-guard.io/trial: \"true\"")),
        );
        assert!(o.status.success(), "{o:?}");
        let o = kubectl(
            &[
                "delete",
                "globalinclusterippools.ipam.cluster.x-k8s.io",
                "opted-in",
            ],
            None,
        );
        assert!(o.status.success(), "{o:?}");
        if calls.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the API server never called the trial's URL for a labelled pool"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let before = calls.load(std::sync::atomic::Ordering::SeqCst);
    for text in [global("other-team", "team: b"), spider.to_string()] {
        let o = kubectl(&["create"], Some(&text));
        assert!(o.status.success(), "{o:?}");
        assert!(
            o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // Updates and deletes of those objects are not sent either.
    let o = kubectl(
        &[
            "delete",
            "spiderippools.spiderpool.spidernet.io",
            "other-team-pods",
        ],
        None,
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        before,
        "an unlabelled cluster-scoped object was sent to the trial"
    );
    drop(cp);
}
