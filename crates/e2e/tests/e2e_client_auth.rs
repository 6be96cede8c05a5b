//! `--client-ca-file` against a real kube-apiserver: the API server presents the client certificate
//! an AdmissionConfiguration's WebhookAdmissionConfiguration `kubeConfigFile` gives it for the
//! webhook's host:port, and its writes are judged as usual; a webhook it holds no certificate for
//! refuses its calls in the handshake, and with `failurePolicy: Fail` the write is denied.
//! Runs only with `KUBEBUILDER_ASSETS` (see crates/e2e/tests/e2e/mod.rs).

mod e2e;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use e2e::pki::{Pki, Usage};
use e2e::{eventually, ControlPlane};
use http::{Method, Request};
use ipam_guard::admission::Admission;
use ipam_guard::cluster::Ledger;
use ipam_guard::rules::Options;
use ipam_guard::server::{self, ClientAuth, Listen, Server};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(60);
const NS: &str = "e2e";

/// A client CA and one certificate from it for the API server (CN kube-apiserver), as PEM files.
fn client_pki(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let pki = Pki::issue(
        "apiserver client CA",
        Some("kube-apiserver"),
        &[],
        Usage::Client,
    );
    let paths = (
        dir.join("client-ca.crt"),
        dir.join("apiserver-client.crt"),
        dir.join("apiserver-client.key"),
    );
    std::fs::write(&paths.0, &pki.ca_pem).unwrap();
    std::fs::write(&paths.1, &pki.leaf_pem).unwrap();
    std::fs::write(&paths.2, &pki.key_pem).unwrap();
    paths
}

struct Guard {
    addrs: server::Addrs,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.abort();
    }
}

/// ipam-guard on a loopback port with `--client-ca-file ca --client-cn kube-apiserver`, judging
/// against an empty view (with pending entries, as `serve --dev`).
async fn start_guard(certs: &server::dev::DevCerts, ca: &Path) -> Guard {
    let mut config = server::Config::new(certs.files.clone());
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    config.listen = Listen::Addr(loopback);
    config.probe_listen = Listen::Addr(loopback);
    config.metrics_listen = Listen::Addr(loopback);
    config.shutdown_delay = Duration::ZERO;
    config.drain_timeout = Duration::from_secs(1);
    config.client_auth = Some(ClientAuth {
        ca_file: ca.to_path_buf(),
        allowed_cns: vec!["kube-apiserver".into()],
        allowed_sans: Vec::new(),
    });
    let admission = Admission::new(Arc::new(Ledger::default()), Options::default());
    let server = Server::bind(config, admission, Default::default())
        .await
        .expect("server binds");
    let addrs = server.addrs();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    Guard {
        addrs,
        stop: Some(stop),
        task,
    }
}

/// `/validate` requests answered so far, from the server's own metrics.
async fn validate_requests(guard: &Guard) -> f64 {
    let mut tcp = tokio::net::TcpStream::connect(guard.addrs.metrics)
        .await
        .unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.0\r\nHost: metrics\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).await.unwrap();
    text.lines()
        .filter(|l| {
            l.starts_with("controller_runtime_webhook_requests_total{")
                && l.contains("webhook=\"/validate\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn call(
    client: &kube::Client,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let bytes = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(kube::client::Body::from(bytes))
        .unwrap();
    let res = client.send(req).await.expect("the API server answers");
    let status = res.status().as_u16();
    let body = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn pool(name: &str, range: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"addresses": [range], "prefix": 24, "gateway": "10.9.0.1"}
    })
}

async fn create_pool(client: &kube::Client, pool: &Value) -> (u16, Value) {
    let path = format!("/apis/ipam.cluster.x-k8s.io/v1alpha2/namespaces/{NS}/inclusterippools");
    call(client, Method::POST, &path, Some(pool)).await
}

/// A validating webhook for InClusterIPPools calling `url`, failing closed.
async fn register(client: &kube::Client, name: &str, url: &str, ca_pem: &[u8]) {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": "validate.ipam-guard.io",
            "clientConfig": {"url": url, "caBundle": ca},
            "rules": [{
                "apiGroups": ["ipam.cluster.x-k8s.io"], "apiVersions": ["*"],
                "resources": ["inclusterippools"], "operations": ["CREATE", "UPDATE"],
                "scope": "Namespaced"
            }],
            "failurePolicy": "Fail", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 10
        }]
    });
    let (status, body) = call(
        client,
        Method::POST,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        Some(&config),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificate_from_the_apiserver_is_required() {
    e2e::each_server(
        "client_certificate_from_the_apiserver_is_required",
        client_certificate_from_the_apiserver_is_required_against,
    )
    .await;
}

async fn client_certificate_from_the_apiserver_is_required_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let certs = server::dev::ensure(&dir.path().join("serving")).expect("dev certificates");
    let serving_ca = std::fs::read(&certs.ca_cert).unwrap();
    let (client_ca, client_crt, client_key) = client_pki(dir.path());

    // Two webhooks trusting the same client CA; the API server holds a certificate for the first.
    let known = start_guard(&certs, &client_ca).await;
    let stranger = start_guard(&certs, &client_ca).await;
    let kubeconfig = dir.path().join("webhook-kubeconfig.yaml");
    // The users entry is picked by the host:port of the webhook's URL, exactly as written there.
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nusers:\n- name: \"{}\"\n  user:\n    client-certificate: {}\n    client-key: {}\n",
            known.addrs.webhook,
            client_crt.display(),
            client_key.display()
        ),
    )
    .unwrap();
    let admission_config = dir.path().join("admission.yaml");
    let plugin = |name: &str| {
        format!(
            "- name: {name}\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: {}\n",
            kubeconfig.display()
        )
    };
    std::fs::write(
        &admission_config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n{}{}",
            plugin("ValidatingAdmissionWebhook"),
            plugin("MutatingAdmissionWebhook")
        ),
    )
    .unwrap();

    let cp = ControlPlane::start_with(
        &assets,
        &[format!(
            "--admission-control-config-file={}",
            admission_config.display()
        )],
    )
    .await;
    let client = cp.client().await;
    e2e::api::create_crd(&client, e2e::crd(ipam_guard::kinds::Kind::InClusterIPPool)).await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    let (status, body) = call(&client, Method::POST, "/api/v1/namespaces", Some(&ns)).await;
    assert_eq!(status, 201, "{body}");
    eventually("the CRD to be served", WAIT, || async {
        let path = format!("/apis/ipam.cluster.x-k8s.io/v1alpha2/namespaces/{NS}/inclusterippools");
        call(&client, Method::GET, &path, None).await.0 == 200
    })
    .await;

    // With its client certificate, the API server's writes are judged as usual.
    register(
        &client,
        "known",
        &format!("https://{}/validate", known.addrs.webhook),
        &serving_ca,
    )
    .await;
    let mut attempt = 0;
    eventually(
        "a reversed range to be denied by the webhook (P2)",
        WAIT,
        || {
            attempt += 1;
            let reversed = pool(&format!("reversed-{attempt}"), "10.9.0.20-10.9.0.10");
            let client = &client;
            async move {
                let (status, body) = create_pool(client, &reversed).await;
                status == 422
                    && body["message"]
                        .as_str()
                        .unwrap_or("")
                        .contains("admission webhook")
            }
        },
    )
    .await;
    let (status, body) = create_pool(&client, &pool("good", "10.9.0.10-10.9.0.20")).await;
    assert_eq!(status, 201, "{body}");
    // X2 holds through the authenticated path: an overlapping create is refused.
    let (status, body) = create_pool(&client, &pool("overlap", "10.9.0.15-10.9.0.30")).await;
    assert_eq!(status, 422, "{body}");
    assert!(validate_requests(&known).await >= 3.0);

    // A webhook the API server holds no certificate for refuses it in the handshake; the write
    // fails closed.
    let (status, body) = call(
        &client,
        Method::DELETE,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/known",
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    register(
        &client,
        "stranger",
        &format!("https://{}/validate", stranger.addrs.webhook),
        &serving_ca,
    )
    .await;
    let start = std::time::Instant::now();
    let mut attempt = 0;
    let message = loop {
        attempt += 1;
        let valid = pool(&format!("unjudged-{attempt}"), "10.9.1.10-10.9.1.20");
        let (status, body) = create_pool(&client, &valid).await;
        let message = body["message"].as_str().unwrap_or("").to_string();
        if status == 500
            && message.contains("failed calling webhook")
            && message.contains("tls: certificate required")
        {
            break message;
        }
        assert!(
            start.elapsed() < WAIT,
            "writes still pass the stranger webhook: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!("without a client certificate: {message}");
    // Refused before any request was read: the rules never saw one.
    assert_eq!(validate_requests(&stranger).await, 0.0);
}
