//! `ipam-guard usage --kubeconfig` against a real kube-apiserver (tests/e2e): the objects of
//! `tests/fixtures/usage/pools.yaml` are stored through the API (upstream CRDs, no webhook, so the
//! address in an excluded range slips in as it would before install), then the binary reads the
//! cluster. Its answer must be the one `usage PATH` gives for the same file (whose figures
//! tests/usage_cli.rs checks by hand).

mod e2e;

use std::process::{Command, Output};
use std::time::Duration;

use e2e::{eventually, ControlPlane};
use ipam_guard::cluster::live::{self, api_resource};
use ipam_guard::manifests;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{json, Value};

const POOLS: &str = "tests/fixtures/usage/pools.yaml";
const WAIT: Duration = Duration::from_secs(60);

fn usage(args: &[&str]) -> Output {
    Command::new(e2e::ipam_guard_bin())
        .current_dir(e2e::repo_root())
        .arg("usage")
        .args(args)
        // Only --kubeconfig may name the cluster.
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .expect("run ipam-guard")
}

fn json_of(o: &Output) -> Value {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

async fn create(
    client: &kube::Client,
    ar: &kube::discovery::ApiResource,
    ns: Option<&str>,
    obj: &Value,
) {
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let obj: DynamicObject = serde_json::from_value(obj.clone()).unwrap();
    api.create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("create {:?}: {e}", obj.metadata.name));
}

async fn install_crds(client: &kube::Client) {
    for c in e2e::crds().expect("the upstream CRDs") {
        e2e::api::create_crd(client, c).await;
    }
    eventually("discovery to serve every kind", WAIT, || async {
        live::discover(client)
            .await
            .is_ok_and(|served| served.len() == e2e::crds().map_or(0, <[_]>::len))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_of_a_live_cluster_matches_usage_of_the_same_files() {
    e2e::each_server(
        "usage_of_a_live_cluster_matches_usage_of_the_same_files",
        usage_of_a_live_cluster_matches_usage_of_the_same_files_against,
    )
    .await;
}

async fn usage_of_a_live_cluster_matches_usage_of_the_same_files_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap(),
        )
        .await
        .expect("namespace team-a");

    let path = e2e::repo_root().join(POOLS);
    let loaded = manifests::read_paths(&[path]);
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    for m in &loaded.manifests {
        let ar = api_resource(m.kind, &m.version);
        create(&client, &ar, m.key.namespace.as_deref(), &m.object).await;
    }

    let kubeconfig = cp.kubeconfig.to_str().unwrap().to_string();
    let live = json_of(&usage(&["--kubeconfig", &kubeconfig, "-o", "json"]));
    let files = json_of(&usage(&["-o", "json", POOLS]));
    assert_eq!(live, files);
    // The figures themselves (worked out in tests/usage_cli.rs), as read from the API server.
    let nodes = live
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "nodes")
        .expect("pool nodes");
    assert_eq!(
        (&nodes["allocatable"], &nodes["used"], &nodes["outside"]),
        (&json!(9), &json!(8), &json!(1))
    );
    let v6 = live
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "v6-nodes")
        .expect("pool v6-nodes");
    assert_eq!(v6["allocatable"], json!(((1u128 << 64) - 2) as u64));

    // The text form reads the cluster the same way.
    let text = usage(&["--kubeconfig", &kubeconfig]);
    assert_eq!(text.status.code(), Some(0));
    let table = String::from_utf8(text.stdout).unwrap();
    assert!(
        table
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("InClusterIPPool team-a/link6")),
        "{table}"
    );

    // `usage --free` reads the cluster as it reads the files (the ranges: tests/pool_free.rs).
    let live = json_of(&usage(&[
        "--kubeconfig",
        &kubeconfig,
        "-o",
        "json",
        "--free",
    ]));
    let files = json_of(&usage(&["-o", "json", POOLS, "--free"]));
    assert_eq!(live, files);
    let nodes = live
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "nodes")
        .expect("pool nodes");
    assert_eq!(nodes["free_ranges"][0]["first"], "10.20.0.14");
}
