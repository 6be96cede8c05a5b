//! What the e2e suites do through the API server: calls as a client sees them, the objects they
//! store, CRDs and webhook registration, and an in-process ipam-guard on a live view.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use http::{Method, Request};
use http_body_util::BodyExt;
use ipam_guard::admission::Admission;
use ipam_guard::cluster::live::{self, LiveOptions, LiveView};
use ipam_guard::cluster::ClusterView;
use ipam_guard::kinds::{Kind, KINDS};
use ipam_guard::rules::Options;
use ipam_guard::server::{self, Listen, Server};
use serde_json::{json, Value};

use super::{crds, eventually, note_item, ControlPlane, Crd};

pub const WAIT: Duration = Duration::from_secs(60);

/// What a client sees of one API call.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub warnings: Vec<String>,
    pub body: Value,
}

impl Resp {
    pub fn causes(&self) -> Vec<Value> {
        self.body["details"]["causes"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
    pub fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or_default()
    }
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(self.status, status, "unexpected answer: {self:#?}");
        self
    }
}

pub async fn call(
    client: &kube::Client,
    method: Method,
    path: &str,
    body: Option<&Value>,
    content_type: &str,
) -> Resp {
    let bytes = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .header("accept", "application/json")
        .body(kube::client::Body::from(bytes))
        .unwrap();
    let res = client.send(req).await.expect("the API server answers");
    let status = res.status().as_u16();
    let warnings = res
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| {
            // `299 - "text"`
            v.trim_start_matches("299 - ").trim_matches('"').to_string()
        })
        .collect();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Resp {
        status,
        warnings,
        body,
    }
}

pub fn collection(api_version: &str, kind: Kind, namespace: Option<&str>) -> String {
    let plural = kind.plural();
    match namespace {
        Some(ns) if kind.namespaced() => format!("/apis/{api_version}/namespaces/{ns}/{plural}"),
        _ => format!("/apis/{api_version}/{plural}"),
    }
}

pub fn kind_of(obj: &Value) -> Kind {
    Kind::from_api_version(
        obj["apiVersion"].as_str().unwrap(),
        obj["kind"].as_str().unwrap(),
    )
    .unwrap()
    .0
}

pub async fn create(client: &kube::Client, obj: &Value, dry_run: bool) -> Resp {
    let path = collection(
        obj["apiVersion"].as_str().unwrap(),
        kind_of(obj),
        obj["metadata"]["namespace"].as_str(),
    );
    let path = if dry_run {
        format!("{path}?dryRun=All")
    } else {
        path
    };
    call(client, Method::POST, &path, Some(obj), "application/json").await
}

pub fn item_path(obj: &Value) -> String {
    format!(
        "{}/{}",
        collection(
            obj["apiVersion"].as_str().unwrap(),
            kind_of(obj),
            obj["metadata"]["namespace"].as_str()
        ),
        obj["metadata"]["name"].as_str().unwrap()
    )
}

pub async fn get(client: &kube::Client, obj: &Value) -> Resp {
    call(
        client,
        Method::GET,
        &item_path(obj),
        None,
        "application/json",
    )
    .await
}

pub async fn delete(client: &kube::Client, obj: &Value) -> Resp {
    call(
        client,
        Method::DELETE,
        &item_path(obj),
        None,
        "application/json",
    )
    .await
}

pub async fn merge_patch(client: &kube::Client, obj: &Value, patch: Value) -> Resp {
    call(
        client,
        Method::PATCH,
        &item_path(obj),
        Some(&patch),
        "application/merge-patch+json",
    )
    .await
}

// === Objects ===

pub fn meta(name: &str, ns: Option<&str>) -> Value {
    match ns {
        Some(ns) => json!({"name": name, "namespace": ns}),
        None => json!({"name": name}),
    }
}

pub fn in_cluster_pool(ns: &str, name: &str, range: &str, gateway: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": meta(name, Some(ns)),
        "spec": {"addresses": [range], "prefix": 24, "gateway": gateway}
    })
}

pub fn ip_address(ns: &str, name: &str, claim: &str, address: &str, pool: &str) -> Value {
    let gateway = format!("{}.1", address.rsplit_once('.').unwrap().0);
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": meta(name, Some(ns)),
        "spec": {
            "address": address, "prefix": 24, "gateway": gateway,
            "claimRef": {"name": claim},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": pool}
        }
    })
}

pub fn claim(ns: &str, name: &str, pool: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
        "metadata": meta(name, Some(ns)),
        "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": pool}}
    })
}

// === Setup ===

pub async fn install_crds(client: &kube::Client) {
    install_crds_but(client, &[]).await;
}

/// Installs the CRDs of every kind but those in `skip`, each established, and waits until
/// discovery serves every installed kind, so the live view's first discovery sees them all.
pub async fn install_crds_but(client: &kube::Client, skip: &[Kind]) {
    for c in crds().expect("the upstream CRDs") {
        if !skip.contains(&c.kind) {
            install_crd(client, c).await;
        }
    }
    // One kind per CRD file.
    let want = crds()
        .expect("the upstream CRDs")
        .iter()
        .filter(|c| !skip.contains(&c.kind))
        .count();
    eventually("discovery to serve every installed kind", WAIT, || async {
        live::discover(client)
            .await
            .is_ok_and(|served| served.len() == want)
    })
    .await;
}

const CRDS_PATH: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// Creates one upstream CRD as it is published. A server that refuses `default: ""` on a string
/// property (v1.20: "in body must be of type string: \"null\"") gets the CRD without those
/// lines, and the e2e report says so: that is the test environment adapting to an old server,
/// not a change to what the providers publish. Any other refusal fails the test. Returns the
/// CRD as sent.
pub async fn create_crd(client: &kube::Client, crd: &Crd) -> Value {
    let what = &crd.file;
    let mut body: Value =
        serde_yaml_ng::from_str(&crd.text).unwrap_or_else(|e| panic!("{what}: {e}"));
    let r = create_path(client, CRDS_PATH, &body).await;
    if r.status == 201 {
        return body;
    }
    let refuses_empty_default = r.status == 422
        && !r.causes().is_empty()
        && r.causes().iter().all(|c| {
            c["field"].as_str().is_some_and(|f| f.ends_with(".default"))
                && c["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("must be of type string: \"null\""))
        });
    assert!(refuses_empty_default, "CRD {what}: {r:#?}");
    let removed = remove_empty_string_defaults(&mut body);
    assert!(removed > 0, "CRD {what}: {r:#?}");
    create_path(client, CRDS_PATH, &body).await.expect(201);
    let name = crd.kind.plural();
    note_item(
        "CRDs installed without their `default: \"\"` lines, which this server refuses",
        Some(&format!("{name} ({removed})")),
    );
    body
}

/// Removes every `default: ""` of a schema; returns how many there were.
fn remove_empty_string_defaults(v: &mut Value) -> usize {
    match v {
        Value::Object(m) => {
            let mut n = 0;
            if m.get("default") == Some(&json!("")) {
                m.remove("default");
                n += 1;
            }
            n + m
                .values_mut()
                .map(remove_empty_string_defaults)
                .sum::<usize>()
        }
        Value::Array(a) => a.iter_mut().map(remove_empty_string_defaults).sum(),
        _ => 0,
    }
}

/// Creates one CRD (`create_crd`) and waits until it is established.
pub async fn install_crd(client: &kube::Client, crd: &Crd) {
    let what = &crd.file;
    let crd = create_crd(client, crd).await;
    let path = format!("{CRDS_PATH}/{}", crd["metadata"]["name"].as_str().unwrap());
    eventually(&format!("CRD {what} established"), WAIT, || {
        let path = path.clone();
        async move {
            let r = call(client, Method::GET, &path, None, "application/json").await;
            r.body["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            })
        }
    })
    .await;
}

pub async fn create_path(client: &kube::Client, path: &str, body: &Value) -> Resp {
    call(client, Method::POST, path, Some(body), "application/json").await
}

/// Creates namespace `name` (a test's own, so it must not exist yet).
pub async fn create_namespace(client: &kube::Client, name: &str) {
    create_path(
        client,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    )
    .await
    .expect(201);
}

/// The `timeoutSeconds` of the webhooks `register_webhooks` registers.
pub const WEBHOOK_TIMEOUT_SECONDS: u64 = 10;

/// Validating and mutating webhooks for every kind of the table, pointing at the in-process server.
pub async fn register_webhooks(client: &kube::Client, addr: SocketAddr, ca_pem: &[u8]) {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let rule = |k: &ipam_guard::kinds::KindInfo, ops: &[&str]| {
        json!({
            "apiGroups": [k.group], "apiVersions": k.versions, "resources": [k.plural],
            "operations": ops, "scope": if k.namespaced { "Namespaced" } else { "Cluster" }
        })
    };
    let validate: Vec<Value> = KINDS.iter().map(|k| rule(k, k.kind.operations())).collect();
    let mutate: Vec<Value> = KINDS
        .iter()
        .filter(|k| k.kind.mutated())
        .map(|k| rule(k, &["CREATE", "UPDATE"]))
        .collect();
    let hook = |name: &str, path: &str, rules: Vec<Value>| {
        json!({
            "name": name,
            "clientConfig": {"url": format!("https://{addr}{path}"), "caBundle": ca},
            "rules": rules,
            "failurePolicy": "Fail", "matchPolicy": "Equivalent", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": WEBHOOK_TIMEOUT_SECONDS
        })
    };
    create_path(
        client,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "ipam-guard-e2e"},
            "webhooks": [hook("validate.ipam-guard.io", "/validate", validate)]
        }),
    )
    .await
    .expect(201);
    let mut mutating = hook("mutate.ipam-guard.io", "/mutate", mutate);
    mutating["reinvocationPolicy"] = json!("Never");
    create_path(
        client,
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "ipam-guard-e2e"},
            "webhooks": [mutating]
        }),
    )
    .await
    .expect(201);
}

pub struct Guard {
    pub view: Arc<LiveView>,
    pub stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<()>,
    pub addr: SocketAddr,
    /// `/healthz`, `/readyz` (plain HTTP).
    pub probe: SocketAddr,
    /// `/metrics` (plain HTTP).
    pub metrics: SocketAddr,
}

impl Guard {
    /// How many objects of `kind` the view holds.
    pub fn count(&self, kind: Kind) -> usize {
        self.view
            .object_counts()
            .into_iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, n)| n)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.abort();
    }
}

pub async fn start_ipam_guard(cp: &ControlPlane) -> (Guard, Vec<u8>) {
    start_ipam_guard_with(cp, LiveOptions::default()).await
}

/// As `start_ipam_guard`, with the live view's knobs (the kubeconfig client of `--kubeconfig`).
pub async fn start_ipam_guard_with(cp: &ControlPlane, options: LiveOptions) -> (Guard, Vec<u8>) {
    start_guard(cp, options, None).await
}

/// As `start_ipam_guard_with`, requiring a client certificate of `client_ca` (`--client-ca-file`,
/// any name): the API server's admissions are then trusted ones, which reserve for
/// `options.pending_ttl`; an unauthenticated caller's reserve for a fixed 5 s and no more after
/// three strikes (cluster::trust). The API server presents one with `pki::ApiserverIdentity`.
pub async fn start_ipam_guard_trusting(
    cp: &ControlPlane,
    options: LiveOptions,
    client_ca: &std::path::Path,
) -> (Guard, Vec<u8>) {
    let auth = server::ClientAuth::new(client_ca);
    start_guard(cp, options, Some(auth)).await
}

async fn start_guard(
    cp: &ControlPlane,
    options: LiveOptions,
    client_auth: Option<server::ClientAuth>,
) -> (Guard, Vec<u8>) {
    let client = live::client(Some(&cp.kubeconfig))
        .await
        .expect("client from the kubeconfig");
    let view = LiveView::start(client, options);
    eventually("the live view to sync", WAIT, || {
        let synced = view.synced();
        async move { synced }
    })
    .await;
    let certs =
        server::dev::ensure(&cp.dir.path().join("webhook-certs")).expect("dev certificates");
    let ca_pem = std::fs::read(&certs.ca_cert).unwrap();
    let mut config = server::Config::new(certs.files.clone());
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    config.listen = Listen::Addr(loopback);
    config.probe_listen = Listen::Addr(loopback);
    config.metrics_listen = Listen::Addr(loopback);
    config.shutdown_delay = Duration::ZERO;
    config.drain_timeout = Duration::from_secs(1);
    config.client_auth = client_auth;
    let admission = Admission::new(view.clone(), Options::default());
    let server = Server::bind(config, admission, Default::default())
        .await
        .expect("server binds");
    let addr = server.addrs().webhook;
    let probe = server.addrs().probe;
    let metrics = server.addrs().metrics;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    (
        Guard {
            view,
            stop: Some(stop),
            task,
            addr,
            probe,
            metrics,
        },
        ca_pem,
    )
}

/// Stores `pools` InClusterIPPools in `ns`, each with `per_pool` IPAddresses inside it (pool i
/// holds `10.{100 + i / 250}.{i % 250}.10` onwards), through the API with no webhook: the
/// first-sync scale test's and the cluster-read measurements' data (10,000 × 10 at full scale).
/// Many requests in flight at once; panics naming the statuses of creates that failed.
pub async fn load_pools(client: &kube::Client, ns: &str, pools: usize, per_pool: usize) {
    load_pools_from(client, ns, 0, pools, per_pool).await;
}

/// As `load_pools`, pools `first..pools` only (a growing data set). Past 37,500 pools the
/// subnets continue in 11.100.0.0/16 and up, so no two pools overlap.
pub async fn load_pools_from(
    client: &kube::Client,
    ns: &str,
    first: usize,
    pools: usize,
    per_pool: usize,
) {
    use futures::StreamExt;
    let objects = (first..pools).flat_map(|i| {
        let block = i / 250;
        let net = format!("{}.{}.{}", 10 + block / 150, 100 + block % 150, i % 250);
        let pool = format!("pool-{i}");
        let mut objs = vec![in_cluster_pool(
            ns,
            &pool,
            &format!("{net}.10-{net}.{}", 10 + per_pool),
            &format!("{net}.1"),
        )];
        for j in 0..per_pool {
            let name = format!("addr-{i}-{j}");
            objs.push(ip_address(
                ns,
                &name,
                &name,
                &format!("{net}.{}", 10 + j),
                &pool,
            ));
        }
        objs
    });
    let mut failures: std::collections::BTreeMap<u16, usize> = Default::default();
    let mut results = futures::stream::iter(objects)
        .map(|o| {
            let client = client.clone();
            async move { create(&client, &o, false).await.status }
        })
        .buffer_unordered(64);
    while let Some(status) = results.next().await {
        if status != 201 {
            *failures.entry(status).or_default() += 1;
        }
    }
    assert!(failures.is_empty(), "creates failed: {failures:?}");
}

/// How many objects of `kind` the view holds.
pub fn count(view: &dyn ClusterView, kind: Kind) -> usize {
    view.object_counts()
        .into_iter()
        .find(|(k, _)| *k == kind)
        .map_or(0, |(_, n)| n)
}

/// Waits until the view holds `n` objects of `kind`.
pub async fn held(view: &dyn ClusterView, kind: Kind, n: usize, what: &str) {
    super::eventually(what, WAIT, || {
        let got = count(view, kind);
        async move { got == n }
    })
    .await;
}

/// The answer is a 422 from ipam-guard naming `rule`, with `text` in its message.
#[track_caller]
pub fn refused(r: &Resp, rule: &str, text: &str) {
    assert_eq!(r.status, 422, "{r:#?}");
    let m = r.message();
    assert!(
        m.contains(&format!("[ipam-guard {rule}]")) && m.contains(text),
        "{m}"
    );
}
