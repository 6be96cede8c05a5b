//! `check` and a real API server agree on an object that needs the mutating webhook (M1) before
//! its schema holds: a v1beta2 IPAddressClaim without `poolRef.apiGroup`. The API
//! server alone refuses it (the v1beta2 schema requires the field); with ipam-guard's webhooks
//! registered it runs mutation first, so the claim is created with the group filled in, and
//! `check` (which assumes those webhooks, X4) passes it with the M1 warning. A claim M1
//! cannot complete (a pool kind it does not know) is refused by both, at the same field.
//!
//! Runs against each API server found (tests/e2e); skipped without `KUBEBUILDER_ASSETS`.

mod e2e;

use std::process::Command;

use e2e::api::*;
use e2e::{eventually, ControlPlane};
use serde_json::{json, Value};

const NS: &str = "order";

fn claim_without_group(name: &str, kind: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
        "metadata": meta(name, Some(NS)),
        "spec": {"poolRef": {"kind": kind, "name": "nodes"}}
    })
}

/// `ipam-guard check` on `object` written to a file: exit code and stdout.
fn check(dir: &std::path::Path, object: &Value, extra: &[&str]) -> (i32, String) {
    let file = dir.join(format!(
        "{}.yaml",
        object["metadata"]["name"].as_str().unwrap()
    ));
    std::fs::write(&file, serde_yaml_ng::to_string(object).unwrap()).unwrap();
    let o = Command::new(e2e::ipam_guard_bin())
        .arg("check")
        .args(extra)
        .arg(&file)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr),
    )
}

fn cause_fields(r: &Resp) -> Vec<String> {
    r.causes()
        .iter()
        .filter_map(|c| c["field"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_and_the_api_server_agree_on_an_object_that_needs_m1() {
    e2e::each_server(
        "check_and_the_api_server_agree_on_an_object_that_needs_m1",
        agree_against,
    )
    .await;
}

async fn agree_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    create_namespace(&client, NS).await;
    create(
        &client,
        &in_cluster_pool(NS, "nodes", "10.60.0.10-10.60.0.20", "10.60.0.1"),
        false,
    )
    .await
    .expect(201);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = cp.kubeconfig.to_str().unwrap().to_string();
    let version = format!("--kube-version={}", assets.version);

    let needs_m1 = claim_without_group("needs-m1", "InClusterIPPool");
    let unknown = claim_without_group("unknown-kind", "ExamplePool");

    // Without the webhooks the schema alone speaks: the claim that needs M1 is refused.
    let alone = create(&client, &needs_m1, true).await;
    alone.expect(422);
    assert!(
        cause_fields(&alone)
            .iter()
            .any(|f| f == "spec.poolRef.apiGroup"),
        "{alone:#?}"
    );

    let (_guard, ca_pem) = start_ipam_guard(&cp).await;
    register_webhooks(&client, _guard.addr, &ca_pem).await;
    // Webhook configurations are picked up asynchronously: wait until M1 applies.
    eventually("the mutating webhook to be called", WAIT, || {
        let (client, needs_m1) = (&client, &needs_m1);
        async move { create(client, needs_m1, true).await.status == 201 }
    })
    .await;

    // Created for real, with the group M1 fills in; `check` passes it, saying M1 fills it.
    let created = create(&client, &needs_m1, false).await;
    created.expect(201);
    assert_eq!(
        created.body["spec"]["poolRef"]["apiGroup"], "ipam.cluster.x-k8s.io",
        "{created:#?}"
    );
    for extra in [
        vec![version.as_str()],
        vec!["--kubeconfig", kubeconfig.as_str()],
    ] {
        let mut needs_m1 = needs_m1.clone();
        // Another name: the one just created is stored, and --kubeconfig reads it.
        needs_m1["metadata"]["name"] = json!("needs-m1-file");
        let (code, out) = check(dir.path(), &needs_m1, &extra);
        assert_eq!(
            code, 0,
            "{extra:?}: check disagrees with the API server (201):\n{out}"
        );
        assert!(
            out.contains("spec.poolRef.apiGroup: not set; the mutating webhook sets it to \"ipam.cluster.x-k8s.io\" [M1]"),
            "{out}"
        );
    }

    // M1 knows no ExamplePool: the schema refuses the missing group, in the API server and in
    // `check`, at the same field.
    let refused = create(&client, &unknown, true).await;
    refused.expect(422);
    let fields = cause_fields(&refused);
    assert!(
        fields.iter().any(|f| f == "spec.poolRef.apiGroup"),
        "{refused:#?}"
    );
    for extra in [
        vec![version.as_str()],
        vec!["--kubeconfig", kubeconfig.as_str()],
    ] {
        let (code, out) = check(dir.path(), &unknown, &extra);
        assert_eq!(
            code, 1,
            "{extra:?}: check disagrees with the API server (422):\n{out}"
        );
        let denied: Vec<&str> = out
            .lines()
            .filter(|l| !l.starts_with("warning: ") && l.ends_with(']') && l.contains(".yaml:"))
            .collect();
        assert!(!denied.is_empty(), "{out}");
        for line in denied {
            assert!(
                line.contains(": spec.poolRef.apiGroup: Required value"),
                "{extra:?}: a denial the API server does not make ({fields:?}): {line}"
            );
        }
    }
}
