//! `check`'s schema validation (rule SCHEMA) against the real kube-apiserver's: each object is
//! sent as a server-side dry run with strict field validation to an API server holding the same
//! CRDs, and the two must agree on whether it is refused, at which fields, and with which words.
//! Skips (and says so) without KUBEBUILDER_ASSETS.
//!
//! In `e2e_gate/`: `kubeconfig` (`check --kubeconfig` and `audit` against a live cluster) and
//! `trial` (docs/trial.md followed step by step).

mod e2e;
#[path = "e2e_gate/kubeconfig.rs"]
mod kubeconfig;
#[path = "e2e_gate/trial.rs"]
mod trial;

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
