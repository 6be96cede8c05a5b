//! The NetworkPolicy component against a real kube-apiserver: unpatched, its placeholders are
//! refused (so applying it by mistake cannot cut the API server off from the webhook); with the
//! two peers set, it is accepted. Runs only with `KUBEBUILDER_ASSETS` (see
//! crates/e2e/tests/e2e/mod.rs).

mod e2e;

use e2e::ControlPlane;
use http::{Method, Request};
use serde_json::{json, Value};

const POLICY: &str =
    include_str!("../../../manifests/components/network-policy/networkpolicy.yaml");

async fn post(client: &kube::Client, path: &str, body: &Value) -> (u16, Value) {
    let req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    let res = client.send(req).await.expect("the API server answers");
    let status = res.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_policy_placeholders_are_refused_and_set_peers_accepted() {
    e2e::each_server(
        "network_policy_placeholders_are_refused_and_set_peers_accepted",
        network_policy_placeholders_are_refused_and_set_peers_accepted_against,
    )
    .await;
}

async fn network_policy_placeholders_are_refused_and_set_peers_accepted_against(
    assets: e2e::Server,
) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    let mut policy: Value = serde_yaml_ng::from_str(POLICY).unwrap();
    let ns = policy["metadata"]["namespace"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = post(
        &client,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let path = format!("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies?dryRun=All");

    let (status, body) = post(&client, &path, &policy).await;
    assert_eq!(status, 422, "the unpatched component was accepted: {body}");
    let causes = body["details"]["causes"].as_array().unwrap();
    for field in [
        "spec.ingress[0].from[0].ipBlock.cidr",
        "spec.ingress[2].from[0].ipBlock.cidr",
    ] {
        assert!(
            causes.iter().any(|c| c["field"] == field),
            "{field} not refused: {body}"
        );
    }

    policy["spec"]["ingress"][0]["from"][0]["ipBlock"]["cidr"] = json!("192.168.10.0/24");
    policy["spec"]["ingress"][2]["from"][0]["ipBlock"]["cidr"] = json!("192.168.0.0/16");
    let (status, body) = post(&client, &path, &policy).await;
    assert_eq!(status, 201, "{body}");
}
