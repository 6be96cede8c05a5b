//! The live view end to end against every real kube-apiserver found (tests/e2e; skipped without
//! one):
//!
//! - a watch outage: the API server is stopped while ipam-guard runs (etcd keeps the data); the
//!   view turns unready, `/readyz` fails and a view-dependent review is answered 503, then it
//!   becomes ready again with its view intact once the API server is back (the two-minute
//!   outage at scale, with its clock, is crates/e2e/tests/e2e_outage.rs);
//! - a CRD installed after start is watched at once (discovery alone would wait an hour here) and
//!   its objects are judged against each other right away;
//! - a kind's watch follows the version its CRD serves: to an older one when the CRD stops
//!   serving the newer, back when it serves it again, keeping the kind's objects throughout;
//! - what kubectl prints for a denial with one cause and with several;
//! - the first sync at scale: pools and IPAddresses created through the API before ipam-guard
//!   starts are all in the view once it is ready, read with exactly one LIST per kind.
//!   1,000 pools + 10,000 IPAddresses by default; `IPAM_GUARD_E2E_SCALE=full` makes it the
//!   10,000 + 100,000 (several minutes on 2 cores) against the newest API server
//!   found, the others staying at the default size (the e2e report says which ran at which).

#[path = "../../../tests/server_support/client.rs"]
mod client;
mod e2e;

use std::time::Duration;

use bytes::Bytes;
use client::{http_get, post, Conn, Proto};
use e2e::api::*;
use e2e::{eventually, ControlPlane};
use ipam_guard::cli::explain::{kubectl_output, KubectlCall, Verb};
use ipam_guard::cluster::live::LiveOptions;
use ipam_guard::cluster::ClusterView;
use ipam_guard::kinds::Kind;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use serde_json::{json, Value};

const NS: &str = "live";

async fn namespace(client: &kube::Client, name: &str) {
    create_namespace(client, name).await;
}

/// Registers the webhooks and waits until the API server calls them.
async fn webhooks_on(client: &kube::Client, guard: &Guard, ca_pem: &[u8]) {
    register_webhooks(client, guard.addr, ca_pem).await;
    let probe = in_cluster_pool(NS, "probe", "10.99.0.20-10.99.0.10", "10.99.0.1");
    eventually("the webhook to be called", WAIT, || {
        let probe = &probe;
        async move {
            let r = create(client, probe, true).await;
            r.status == 422 && r.message().contains("admission webhook")
        }
    })
    .await;
}

/// An AdmissionReview for creating `object`, sent straight to the webhook (the API server may be
/// down); returns the `response`.
async fn review_directly(guard: &Guard, ca_pem: &[u8], object: &Value) -> Value {
    let ca = CertificateDer::from_pem_slice(ca_pem).expect("the dev CA");
    let mut conn = Conn::open(guard.addr, &ca, Proto::H1)
        .await
        .expect("connect to the webhook");
    let kind = kind_of(object);
    let gvk = json!({"group": kind.group(), "version": "v1beta2", "kind": kind.name()});
    let gvr = json!({"group": kind.group(), "version": "v1beta2", "resource": kind.plural()});
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "outage-1", "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
            "operation": "CREATE", "userInfo": {"username": "admin"},
            "object": object, "oldObject": null, "dryRun": false
        }
    });
    let reply = conn
        .send(post(
            "/validate",
            Some("application/json"),
            Bytes::from(serde_json::to_vec(&review).unwrap()),
        ))
        .await
        .expect("the webhook answers");
    assert_eq!(reply.status, 200);
    reply.json()["response"].clone()
}

async fn readyz(guard: &Guard) -> u16 {
    http_get(guard.probe, "/readyz").await.expect("probe").0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_live_watch_outage_fails_closed_and_recovers() {
    e2e::each_server(
        "e2e_live_watch_outage_fails_closed_and_recovers",
        e2e_live_watch_outage_fails_closed_and_recovers_against,
    )
    .await;
}

async fn e2e_live_watch_outage_fails_closed_and_recovers_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    namespace(&client, NS).await;
    let (guard, ca_pem) = start_ipam_guard(&cp).await;
    webhooks_on(&client, &guard, &ca_pem).await;
    let pool = in_cluster_pool(NS, "pool-a", "10.0.0.10-10.0.0.30", "10.0.0.1");
    let held = ip_address(NS, "addr-1", "addr-1", "10.0.0.11", "pool-a");
    create(&client, &pool, false).await.expect(201);
    create(&client, &held, false).await.expect(201);
    eventually("the view to hold the pool and address", WAIT, || {
        let n = (
            guard.count(Kind::InClusterIPPool),
            guard.count(Kind::IPAddress),
        );
        async move { n == (1, 1) }
    })
    .await;
    assert_eq!(readyz(&guard).await, 200);

    cp.stop_apiserver();
    eventually("ipam-guard to turn unready", WAIT, || async {
        readyz(&guard).await == 503
    })
    .await;
    assert!(!guard.view.synced());
    let next = ip_address(NS, "addr-2", "addr-2", "10.0.0.12", "pool-a");
    let response = review_directly(&guard, &ca_pem, &next).await;
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(response["status"]["code"], 503, "{response}");
    assert_eq!(
        (
            guard.count(Kind::InClusterIPPool),
            guard.count(Kind::IPAddress)
        ),
        (1, 1),
        "the view keeps what it had"
    );

    cp.restart_apiserver().await;
    eventually("ipam-guard to be ready again", WAIT, || async {
        readyz(&guard).await == 200
    })
    .await;
    assert_eq!(
        (
            guard.count(Kind::InClusterIPPool),
            guard.count(Kind::IPAddress)
        ),
        (1, 1),
        "the view is intact"
    );
    // And it judges against it: a second holder of 10.0.0.11 is refused, a new address passes.
    let dup = ip_address(NS, "dup", "dup", "10.0.0.11", "pool-a");
    eventually("the webhook to be called again", WAIT, || async {
        let r = create(&client, &dup, true).await;
        r.status == 422
            && r.causes()
                .iter()
                .any(|c| c["reason"] == "FieldValueDuplicate")
    })
    .await;
    create(&client, &next, false).await.expect(201);
    drop(guard);
    drop(cp);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_live_crd_installed_after_start_is_watched_at_once() {
    e2e::each_server(
        "e2e_live_crd_installed_after_start_is_watched_at_once",
        e2e_live_crd_installed_after_start_is_watched_at_once_against,
    )
    .await;
}

/// ipam-guard whose discovery runs at start and then hourly, unless the CRD watch wakes it.
async fn start_with_hourly_discovery(cp: &ControlPlane) -> (Guard, Vec<u8>) {
    start_ipam_guard_with(
        cp,
        LiveOptions {
            discovery_interval: Duration::from_secs(3600),
            ..LiveOptions::default()
        },
    )
    .await
}

async fn e2e_live_crd_installed_after_start_is_watched_at_once_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds_but(&client, &[Kind::SpiderIPPool]).await;
    namespace(&client, NS).await;
    // Discovery alone would look again in an hour: only the CRD watch can start the new watch.
    let (guard, ca_pem) = start_with_hourly_discovery(&cp).await;
    webhooks_on(&client, &guard, &ca_pem).await;
    assert!(!guard
        .view
        .watching()
        .iter()
        .any(|(k, _, _)| *k == Kind::SpiderIPPool));

    install_crd(&client, e2e::crd(Kind::SpiderIPPool)).await;
    let spider = |name: &str, range: &str| {
        json!({
            "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
            "metadata": {"name": name},
            "spec": {"ipVersion": 4, "subnet": "10.3.0.0/24", "ips": [range], "gateway": "10.3.0.1"}
        })
    };
    // Until the new kind is listed, writes that need the view are refused (503), never let
    // through: retry the first create until it is judged.
    let first = spider("spider-a", "10.3.0.10-10.3.0.30");
    eventually("the first SpiderIPPool to be admitted", WAIT, || async {
        let r = create(&client, &first, false).await;
        assert!(
            r.status == 201 || r.message().contains("ipam-guard"),
            "only ipam-guard may hold it back: {r:#?}"
        );
        r.status == 201
    })
    .await;
    assert!(guard
        .view
        .watching()
        .iter()
        .any(|(k, _, listed)| *k == Kind::SpiderIPPool && *listed));
    // The second, overlapping, right away: judged against the first (watch or pending entry).
    let r = create(&client, &spider("spider-b", "10.3.0.25-10.3.0.40"), false).await;
    r.expect(422);
    assert!(
        r.causes().iter().any(|c| c["message"]
            .as_str()
            .unwrap_or_default()
            .contains("spider-a")),
        "{r:#?}"
    );
    drop(guard);
    drop(cp);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_live_watch_follows_the_version_the_crd_serves() {
    e2e::each_server(
        "e2e_live_watch_follows_the_version_the_crd_serves",
        e2e_live_watch_follows_the_version_the_crd_serves_against,
    )
    .await;
}

/// The version the IPAddress watch reads, once the kind has been listed (a watch that moves
/// to another version keeps the kind listed: its objects stay until the new watch lists).
fn address_watch(guard: &Guard) -> Option<String> {
    guard
        .view
        .watching()
        .into_iter()
        .find(|(k, _, listed)| *k == Kind::IPAddress && *listed)
        .map(|(_, version, _)| version)
}

/// Sets `served` of `version` in the IPAddress CRD (a PUT of the whole CRD).
async fn serve_address_version(client: &kube::Client, version: &str, served: bool) {
    let path =
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ipaddresses.ipam.cluster.x-k8s.io";
    let r = call(client, http::Method::GET, path, None, "application/json").await;
    r.expect(200);
    let mut crd = r.body.clone();
    let versions = crd["spec"]["versions"].as_array_mut().unwrap();
    let v = versions
        .iter_mut()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("the IPAddress CRD has no {version}"));
    v["served"] = json!(served);
    call(
        client,
        http::Method::PUT,
        path,
        Some(&crd),
        "application/json",
    )
    .await
    .expect(200);
}

async fn e2e_live_watch_follows_the_version_the_crd_serves_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    namespace(&client, NS).await;
    // Discovery alone would look again in an hour: the CRD watch wakes it.
    let (guard, _ca_pem) = start_with_hourly_discovery(&cp).await;
    assert_eq!(address_watch(&guard).as_deref(), Some("v1beta2"));
    create(
        &client,
        &ip_address(NS, "kept", "kept", "10.9.0.5", "nodes"),
        false,
    )
    .await
    .expect(201);
    eventually("the view to hold the IPAddress", WAIT, || async {
        guard.count(Kind::IPAddress) == 1
    })
    .await;

    // The CRD stops serving v1beta2: discovery lists v1beta1 only, and the watch moves there.
    serve_address_version(&client, "v1beta2", false).await;
    eventually("the IPAddress watch to move to v1beta1", WAIT, || async {
        address_watch(&guard).as_deref() == Some("v1beta1")
    })
    .await;
    assert_eq!(guard.count(Kind::IPAddress), 1);
    // Served again: the newer version is taken back at once.
    serve_address_version(&client, "v1beta2", true).await;
    eventually(
        "the IPAddress watch to move back to v1beta2",
        WAIT,
        || async { address_watch(&guard).as_deref() == Some("v1beta2") },
    )
    .await;
    eventually("the view to be ready", WAIT, || async {
        guard.view.synced()
    })
    .await;
    // The kind's object is kept through both moves.
    assert_eq!(guard.count(Kind::IPAddress), 1);

    // The CRD deleted (a provider uninstalled): the kind is dropped, and the view is ready
    // without it, not failing closed on a watch of what is gone until discovery runs again.
    call(
        &client,
        http::Method::DELETE,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ipaddresses.ipam.cluster.x-k8s.io",
        None,
        "application/json",
    )
    .await
    .expect(200);
    eventually("the IPAddress kind to be dropped", WAIT, || async {
        !guard
            .view
            .watching()
            .iter()
            .any(|(k, _, _)| *k == Kind::IPAddress)
    })
    .await;
    assert_eq!(guard.count(Kind::IPAddress), 0);
    eventually("the view to be ready without it", WAIT, || async {
        guard.view.synced()
    })
    .await;
    drop(guard);
    drop(cp);
}

/// Drops the ` [ipam-guard <ID>]` suffix ipam-guard adds to each cause message.
fn without_rule_suffix(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" [ipam-guard ") {
        out.push_str(&rest[..at]);
        rest = match rest[at..].find(']') {
            Some(end) => &rest[at + end + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_live_kubectl_renders_one_and_many_cause_denials() {
    e2e::each_server(
        "e2e_live_kubectl_renders_one_and_many_cause_denials",
        e2e_live_kubectl_renders_one_and_many_cause_denials_against,
    )
    .await;
}

async fn e2e_live_kubectl_renders_one_and_many_cause_denials_against(assets: e2e::Server) {
    if std::process::Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        println!("skipped: no kubectl on PATH");
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    namespace(&client, NS).await;
    let (guard, ca_pem) = start_ipam_guard(&cp).await;
    webhooks_on(&client, &guard, &ca_pem).await;
    create(
        &client,
        &in_cluster_pool(NS, "pool-a", "10.0.0.10-10.0.0.30", "10.0.0.1"),
        false,
    )
    .await
    .expect(201);
    eventually("the view to hold pool-a", WAIT, || {
        let n = guard.count(Kind::InClusterIPPool);
        async move { n == 1 }
    })
    .await;

    // Each case: what real kubectl prints (stderr, then stdout) against the real API server,
    // byte for byte equal to what the one renderer (`explain::kubectl_output`, behind docs/rules.md,
    // `explain`, README and docs/trial.md) makes of ipam-guard's own answer to the same request.
    let one = in_cluster_pool(NS, "pool-b", "10.0.0.25-10.0.0.40", "10.0.0.1");
    let (ok, printed) = kubectl(&cp, "create", &one).expect("kubectl runs");
    assert!(!ok);
    assert_eq!(
        without_rule_suffix(&printed),
        "The InClusterIPPool \"pool-b\" is invalid: spec.addresses[0]: Invalid value: \
         \"10.0.0.25-10.0.0.40\": overlaps InClusterIPPool live/pool-a (10.0.0.25-10.0.0.30)\n",
        "{printed}"
    );
    let answer = review_as(&guard, &ca_pem, "CREATE", &one).await;
    assert_eq!(printed, rendered(Verb::Create, &one, &answer), "one cause");

    let mut many = in_cluster_pool(NS, "pool-c", "10.5.0.20-10.5.0.10", "10.5.0.1");
    many["spec"]["addresses"] = json!(["10.5.0.20-10.5.0.10", "10.5.1.20-10.5.1.10"]);
    let (ok, printed) = kubectl(&cp, "create", &many).expect("kubectl runs");
    assert!(!ok);
    // Several causes: kubectl lists one per line under the object's name.
    assert_eq!(
        without_rule_suffix(&printed),
        "The InClusterIPPool \"pool-c\" is invalid: \n\
         * spec.addresses[0]: Invalid value: \"10.5.0.20-10.5.0.10\": provided address is not a \
         valid IP, range, nor CIDR: range start 10.5.0.20 is after range end 10.5.0.10\n\
         * spec.addresses[1]: Invalid value: \"10.5.1.20-10.5.1.10\": provided address is not a \
         valid IP, range, nor CIDR: range start 10.5.1.20 is after range end 10.5.1.10\n",
        "{printed}"
    );
    let answer = review_as(&guard, &ca_pem, "CREATE", &many).await;
    assert_eq!(
        printed,
        rendered(Verb::Create, &many, &answer),
        "many causes"
    );

    // A warning (C3: the claim's pool does not exist), and the object created.
    let lonely = claim(NS, "lonely", "no-such-pool");
    let answer = review_as(&guard, &ca_pem, "CREATE", &lonely).await;
    let (ok, printed) = kubectl(&cp, "create", &lonely).expect("kubectl runs");
    assert!(ok, "{printed}");
    assert!(printed.starts_with("Warning: "), "{printed}");
    assert_eq!(
        printed,
        rendered(Verb::Create, &lonely, &answer),
        "a warning"
    );

    // A 403: deleting a pool that still holds an address (P9).
    create(&client, &claim(NS, "held", "pool-a"), false)
        .await
        .expect(201);
    create(
        &client,
        &ip_address(NS, "held", "held", "10.0.0.12", "pool-a"),
        false,
    )
    .await
    .expect(201);
    eventually("the view to hold the address", WAIT, || {
        let n = guard.count(Kind::IPAddress);
        async move { n == 1 }
    })
    .await;
    let pool_a = in_cluster_pool(NS, "pool-a", "10.0.0.10-10.0.0.30", "10.0.0.1");
    let answer = review_as(&guard, &ca_pem, "DELETE", &pool_a).await;
    assert_eq!(answer["status"]["code"], 403, "{answer:#}");
    let (ok, printed) = kubectl(&cp, "delete", &pool_a).expect("kubectl runs");
    assert!(!ok);
    assert!(
        printed.starts_with("Error from server (Forbidden): "),
        "{printed}"
    );
    assert_eq!(printed, rendered(Verb::Delete, &pool_a, &answer), "a 403");
    drop(guard);
    drop(cp);
}

/// Runs `kubectl <verb>` on `manifest` (`create -f FILE`; `delete <resource> <name> -n <ns>`)
/// and returns whether it succeeded and what it printed: stderr, then stdout (a warning comes
/// before the line that says the object was created). The file's path reads `FILE`.
fn kubectl(cp: &ControlPlane, verb: &str, manifest: &Value) -> Option<(bool, String)> {
    let name = manifest["metadata"]["name"].as_str().unwrap();
    let mut cmd = std::process::Command::new("kubectl");
    cmd.arg("--kubeconfig").arg(&cp.kubeconfig);
    let path = cp.dir.path().join(format!("{name}.json"));
    if verb == "create" {
        std::fs::write(&path, serde_json::to_vec(manifest).unwrap()).unwrap();
        cmd.arg("create").arg("-f").arg(&path);
    } else {
        let kind = kind_of(manifest);
        cmd.arg(verb)
            .arg(format!("{}.{}", kind.plural(), kind.group()))
            .arg(name);
        if let Some(ns) = manifest["metadata"]["namespace"].as_str() {
            cmd.arg("-n").arg(ns);
        }
    }
    let out = cmd.output().ok()?;
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    Some((
        out.status.success(),
        printed.replace(&path.display().to_string(), "FILE"),
    ))
}

/// What the renderer makes of ipam-guard's `answer` to `verb` on `manifest`.
fn rendered(verb: Verb, manifest: &Value, answer: &Value) -> String {
    let call = KubectlCall {
        verb,
        kind: kind_of(manifest),
        namespace: manifest["metadata"]["namespace"]
            .as_str()
            .map(str::to_string),
        name: manifest["metadata"]["name"].as_str().unwrap().to_string(),
        file: "FILE".to_string(),
    };
    kubectl_output(&call, answer)
}

/// An AdmissionReview for `operation` on `object` (as the stored object for DELETE), in its own
/// apiVersion, sent straight to the webhook; returns the `response`.
async fn review_as(guard: &Guard, ca_pem: &[u8], operation: &str, object: &Value) -> Value {
    let ca = CertificateDer::from_pem_slice(ca_pem).expect("the dev CA");
    let mut conn = Conn::open(guard.addr, &ca, Proto::H1)
        .await
        .expect("connect to the webhook");
    let kind = kind_of(object);
    let version = object["apiVersion"]
        .as_str()
        .unwrap()
        .rsplit_once('/')
        .unwrap()
        .1;
    let gvk = json!({"group": kind.group(), "version": version, "kind": kind.name()});
    let gvr = json!({"group": kind.group(), "version": version, "resource": kind.plural()});
    let (new, old) = if operation == "DELETE" {
        (Value::Null, object.clone())
    } else {
        (object.clone(), Value::Null)
    };
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "render-1", "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
            "operation": operation, "userInfo": {"username": "admin"},
            "object": new, "oldObject": old, "dryRun": true
        }
    });
    let reply = conn
        .send(post(
            "/validate",
            Some("application/json"),
            Bytes::from(serde_json::to_vec(&review).unwrap()),
        ))
        .await
        .expect("the webhook answers");
    assert_eq!(reply.status, 200);
    reply.json()["response"].clone()
}

/// `apiserver_request_total` summed over the series of one group, resource and verb.
async fn requests(client: &kube::Client, group: &str, resource: &str, verb: &str) -> f64 {
    let r = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(r).await.expect("API server metrics");
    let (group, res, verb) = (
        format!("group=\"{group}\""),
        format!("resource=\"{resource}\""),
        format!("verb=\"{verb}\""),
    );
    text.lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{")
                && l.contains(&group)
                && l.contains(&res)
                && l.contains(&verb)
        })
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_live_first_sync_at_scale() {
    e2e::each_server(
        "e2e_live_first_sync_at_scale",
        e2e_live_first_sync_at_scale_against,
    )
    .await;
}

async fn e2e_live_first_sync_at_scale_against(assets: e2e::Server) {
    // At full scale against one server only (the newest), to keep CI within its time.
    let (pools, per_pool) = if assets.full_scale {
        (10_000, 10)
    } else {
        (1_000, 10)
    };
    e2e::note(format!("{pools} pools, {} IPAddresses", pools * per_pool));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    namespace(&client, NS).await;

    load_pools(&client, NS, pools, per_pool).await;

    let lists_before = requests(&client, "ipam.cluster.x-k8s.io", "ipaddresses", "LIST").await;
    let (guard, _ca) = start_ipam_guard(&cp).await;
    assert_eq!(guard.count(Kind::InClusterIPPool), pools);
    assert_eq!(guard.count(Kind::IPAddress), pools * per_pool);
    guard.view.read().check_consistency();
    assert_eq!(
        requests(&client, "ipam.cluster.x-k8s.io", "ipaddresses", "LIST").await - lists_before,
        1.0,
        "one list, not pages"
    );
    drop(guard);
    drop(cp);
}

#[test]
fn rule_suffixes_are_dropped_wherever_they_are() {
    assert_eq!(
        without_rule_suffix("a: overlaps x [ipam-guard P10], b: y [ipam-guard P2]\n"),
        "a: overlaps x, b: y\n"
    );
    assert_eq!(without_rule_suffix("no suffix\n"), "no suffix\n");
}
