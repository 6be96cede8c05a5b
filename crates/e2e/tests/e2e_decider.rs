//! X2 across replicas, against a real kube-apiserver (runs when `KUBEBUILDER_ASSETS` is set).
//!
//! Each test starts etcd + kube-apiserver (tests/e2e) and 2 or 3 `ipam-guard serve` processes
//! (the binary cargo built) watching it through a kubeconfig and electing one decider through a
//! Lease. AdmissionReviews go straight to the replicas' /validate, as the API server would send
//! them, spread over all replicas; where a test needs admitted objects to become real, it writes
//! them to the API server itself, as the API server does after an allow.
//!
//! Election durations are shortened by flags (lease 3 s, renew deadline 2 s, retry 0.5 s, pending
//! TTL 5 s) so takeovers fit in a test; the production defaults are 15 s / 10 s / 2 s / 30 s.
//!
//! The replicas and the helpers are here, with the one-replica install; the tests by idea in
//! `e2e_decider/`: `races` (conflicting creates), `peers` (the peer listener's client
//! certificates), `takeover` (a decider killed, paused or shut down).

#[path = "../../../tests/server_support/client.rs"]
mod client;
mod e2e;
#[path = "e2e_decider/peers.rs"]
mod peers;
#[path = "e2e_decider/races.rs"]
mod races;
#[path = "e2e/replica.rs"]
mod replica;
#[path = "e2e_decider/takeover.rs"]
mod takeover;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::{post, Conn, Proto};
use e2e::pki::{Pki, Usage};
use e2e::{eventually, ControlPlane};
use http::Request;
use http_body_util::BodyExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use replica::{Replica, Start, LEASE, LEASE_NS};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ClientConfig;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(60);
const NS: &str = "e2e";

// === certificates ===

/// A CA and one leaf for `localhost` / `127.0.0.1` with server and client auth, as cert-manager
/// issues it for the install in manifests/.
fn pki(name: &str) -> Pki {
    let replica = format!("{name} replica");
    Pki::issue(
        name,
        Some(&replica),
        &["localhost", "127.0.0.1"],
        Usage::Serving,
    )
}

/// A client that trusts `server_ca` and presents `me`'s leaf (None: no client certificate).
fn tls_client(server_ca: &CertificateDer<'static>, me: Option<&Pki>) -> Arc<ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server_ca.clone()).unwrap();
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
    let mut config = match me {
        Some(p) => {
            let chain = CertificateDer::pem_slice_iter(p.leaf_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(p.key_pem.as_bytes()).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(config)
}

use rustls::pki_types::pem::PemObject;

// === replicas ===

fn start_replica(cp: &ControlPlane, certs: &Path, name: &str, extra: &[&str]) -> Replica {
    Replica::start(Start {
        kubeconfig: &cp.kubeconfig,
        certs,
        name,
        log: cp.dir.path().join(format!("{name}.log")),
        // E2E_DECIDER_DEFAULT_TIMING=1 keeps the production durations (to measure the resume
        // time of a takeover as shipped; the tests take minutes longer then).
        pending_ttl: std::env::var_os("E2E_DECIDER_DEFAULT_TIMING")
            .is_none()
            .then_some(Duration::from_secs(5)),
        rust_log: "info,ipam_guard=debug",
        extra,
    })
}

/// The election's and the peer channel's lines of a replica's log.
fn election_log(r: &Replica) -> String {
    r.log_text()
        .lines()
        .filter(|l| l.contains("decider") || l.contains("peer") || l.contains("handover"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn signal_pid(sig: &str, pid: &str) {
    e2e::process::signal(sig, pid.parse().expect("a pid"));
}

/// Fields drop in order: the replicas stop before the control plane they watch.
struct Setup {
    replicas: Vec<Replica>,
    client: kube::Client,
    pki: Pki,
    _cp: ControlPlane,
}

impl Setup {
    async fn start(assets: &e2e::Server, n: usize) -> Setup {
        Setup::start_with(assets, n, &[]).await
    }

    async fn start_with(assets: &e2e::Server, n: usize, extra: &[&str]) -> Setup {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let cp = ControlPlane::start(assets).await;
        let client = cp.client().await;
        install_crds(&client).await;
        for ns in [NS, LEASE_NS] {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            let status = create(&client, "/api/v1/namespaces", &body).await.0;
            assert_eq!(status, 201, "namespace {ns}");
        }
        let pki = pki("replicas CA");
        let certs = cp.dir.path().join("certs");
        pki.write_secret(&certs);
        IDENTITIES
            .lock()
            .unwrap()
            .push((pki.ca_der.to_vec(), tls_client(&pki.ca_der, Some(&pki))));
        let replicas = (0..n)
            .map(|i| start_replica(&cp, &certs, &format!("replica-{i}"), extra))
            .collect();
        let mut s = Setup {
            replicas,
            client,
            pki,
            _cp: cp,
        };
        s.wait_ready().await;
        s
    }

    /// Every replica's view has synced and a decider decides: a dry-run create answered by each.
    async fn wait_ready(&mut self) {
        let start = Instant::now();
        for r in self.replicas.iter_mut() {
            r.wait_ready(WAIT.saturating_sub(start.elapsed())).await;
        }
        for i in 0..self.replicas.len() {
            let addr = self.replicas[i].webhook;
            let ca = self.pki.ca_der.clone();
            loop {
                let body = review(&pool(&format!("ready-{i}"), "10.250.0.1-10.250.0.2"), true);
                if send(addr, &ca, &body).await.is_decided() {
                    break;
                }
                self.replicas[i].assert_running();
                assert!(
                    start.elapsed() < WAIT,
                    "{} gets no decision:\n{}",
                    self.replicas[i].name,
                    self.replicas[i].log_tail(30)
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }

    /// Every replica's election lines and the end of its log, for a failure message.
    fn election_logs(&self) -> String {
        self.replicas
            .iter()
            .map(|r| {
                format!(
                    "--- {}:\n{}\n(last lines)\n{}",
                    r.name,
                    election_log(r),
                    r.log_tail(30)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Which replica the Lease names as the decider.
    async fn decider(&self) -> usize {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), LEASE_NS);
        let lease = leases.get(LEASE).await.expect("the decider lease exists");
        let addr = lease
            .metadata
            .annotations
            .unwrap_or_default()
            .get(ipam_guard::decider::ADDRESS_ANNOTATION)
            .cloned()
            .expect("the lease names the decider's address");
        self.replicas
            .iter()
            .position(|r| r.peer.to_string() == addr)
            .expect("the decider is one of ours")
    }

    /// The pid of this test's kube-apiserver (the only one with its port).
    fn apiserver_pid(&self) -> String {
        let out = Command::new("pgrep")
            .args(["-f", "--", &format!("--secure-port={} ", self._cp.port)])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let pids: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(pids.len(), 1, "kube-apiserver pid: {text:?}");
        pids[0].to_string()
    }

    fn webhooks(&self, skip: &[usize]) -> Vec<SocketAddr> {
        (0..self.replicas.len())
            .filter(|i| !skip.contains(i))
            .map(|i| self.replicas[i].webhook)
            .collect()
    }
}

// === reviews ===

fn pool(name: &str, range: &str) -> Value {
    let octets: Vec<&str> = range.split('.').take(2).collect();
    let gateway = format!("{}.0.1", octets.join("."));
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"addresses": [range], "prefix": 16, "gateway": gateway}
    })
}

fn address(name: &str, addr: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "address": addr, "prefix": 16, "gateway": "10.99.0.1",
            "claimRef": {"name": format!("claim-{name}")},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "addresses"}
        }
    })
}

fn review(obj: &Value, dry_run: bool) -> Value {
    let (group, version) = obj["apiVersion"].as_str().unwrap().split_once('/').unwrap();
    let name = obj["metadata"]["name"].as_str().unwrap();
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{name}"),
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "operation": "CREATE", "namespace": NS, "name": name,
            "object": obj, "dryRun": dry_run
        }
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Allowed,
    /// Denied by a rule (422/403) with the message.
    Denied(u64, String),
    /// 503: no decider could decide.
    Unavailable(String),
    /// No HTTP answer (connection refused: a killed replica).
    Failed(String),
}

impl Answer {
    fn is_decided(&self) -> bool {
        matches!(self, Answer::Allowed | Answer::Denied(..))
    }
}

/// The replicas' client identity by their CA: every test's replicas run with
/// `--client-ca-file`, and `send` presents the identity of the CA it is given, as the API server
/// does with an AdmissionConfiguration. Unauthenticated callers get a short, strike-bounded
/// reservation (cluster::trust), which a test that never writes what it admits would exhaust.
static IDENTITIES: std::sync::Mutex<Vec<(Vec<u8>, Arc<ClientConfig>)>> =
    std::sync::Mutex::new(Vec::new());

fn identity(ca: &CertificateDer<'static>) -> Option<Arc<ClientConfig>> {
    let ids = IDENTITIES.lock().unwrap();
    ids.iter()
        .find(|(der, _)| der.as_slice() == ca.as_ref())
        .map(|(_, c)| c.clone())
}

async fn send(addr: SocketAddr, ca: &CertificateDer<'static>, body: &Value) -> Answer {
    let opened = match identity(ca) {
        Some(config) => Conn::open_with(addr, config, Proto::H2).await,
        None => Conn::open(addr, ca, Proto::H2).await,
    };
    let mut conn = match opened {
        Ok(c) => c,
        Err(e) => return Answer::Failed(e.to_string()),
    };
    let bytes = serde_json::to_vec(body).unwrap();
    let reply = match conn
        .send(post("/validate", Some("application/json"), bytes))
        .await
    {
        Ok(r) => r,
        Err(e) => return Answer::Failed(e.to_string()),
    };
    // Only an AdmissionReview answer is a decision: a transport-level error (a 4xx/5xx with a
    // `{"message"}` body) would otherwise read as a denial with code 0.
    if reply.status != 200 {
        return Answer::Failed(format!(
            "HTTP {}: {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        ));
    }
    let out = reply.json();
    let response = &out["response"];
    if !response.is_object() {
        return Answer::Failed(format!("not an AdmissionReview answer: {out}"));
    }
    if response["allowed"] == true {
        return Answer::Allowed;
    }
    let code = response["status"]["code"].as_u64().unwrap_or(0);
    let message = response["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if code == 503 {
        Answer::Unavailable(message)
    } else {
        Answer::Denied(code, message)
    }
}

/// Sends every review at once, review i to replica i mod n; the answers in order.
async fn burst(
    replicas: &[SocketAddr],
    ca: &CertificateDer<'static>,
    bodies: Vec<Value>,
) -> Vec<Answer> {
    let tasks: Vec<_> = bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            let addr = replicas[i % replicas.len()];
            let ca = ca.clone();
            tokio::spawn(async move { send(addr, &ca, &body).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

// === API server helpers ===

async fn create(client: &kube::Client, path: &str, body: &Value) -> (u16, Value) {
    let req = Request::post(path)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    let res = client.send(req).await.expect("the API server answers");
    let status = res.status().as_u16();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn collection(obj: &Value) -> String {
    let api = obj["apiVersion"].as_str().unwrap();
    let plural = match obj["kind"].as_str().unwrap() {
        "InClusterIPPool" => "inclusterippools",
        "IPAddress" => "ipaddresses",
        other => panic!("no collection for {other}"),
    };
    format!("/apis/{api}/namespaces/{NS}/{plural}")
}

async fn install_crds(client: &kube::Client) {
    for c in e2e::crds().expect("the upstream CRDs") {
        e2e::api::create_crd(client, c).await;
    }
    eventually("discovery to serve every kind", WAIT, || async {
        ipam_guard::cluster::live::discover(client)
            .await
            .is_ok_and(|served| served.len() == e2e::crds().map_or(0, <[_]>::len))
    })
    .await;
}

// === tests ===

/// A one-replica install (`--decider=off`) decides in its own process as before: no Lease, no
/// peer traffic, and X2 still holds inside the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_with_the_decider_off_one_replica_decides_alone() {
    e2e::each_server(
        "x2_with_the_decider_off_one_replica_decides_alone",
        x2_with_the_decider_off_one_replica_decides_alone_against,
    )
    .await;
}

async fn x2_with_the_decider_off_one_replica_decides_alone_against(assets: e2e::Server) {
    let s = Setup::start_with(&assets, 1, &["--decider", "off"]).await;
    let bodies = (0..64)
        .map(|i| review(&pool(&format!("solo-{i}"), "10.93.0.10-10.93.0.20"), false))
        .collect();
    let answers = burst(&s.webhooks(&[]), &s.pki.ca_der, bodies).await;
    let mut unavailable = 0;
    check_one_admitted(&answers, "--decider=off", "P10", &mut unavailable);
    assert_eq!(unavailable, 0);
    let leases: Api<Lease> = Api::namespaced(s.client.clone(), LEASE_NS);
    assert!(
        leases.get_opt(LEASE).await.unwrap().is_none(),
        "no Lease with --decider=off"
    );
    assert_eq!(
        s.replicas[0].metric("ipam_guard_decider_is_leader").await,
        None
    );
}

/// docs/performance.md ("Replicas"): the latency a forwarded decision adds. Not run by `cargo test` (ignored):
///
///   cargo build --release --bin ipam-guard
///   IPAM_GUARD_BIN=target/release/ipam-guard KUBEBUILDER_ASSETS=... \
///     cargo test -p ipam-guard-e2e --test e2e_decider bench -- --ignored --nocapture
///
/// One persistent h2 connection to the decider's /validate (decided in that process) and one to
/// the follower's (sent on to the decider over the peer connection), pool creates of distinct
/// ranges sent one at a time, alternating, so both see the same machine noise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn bench_forwarded_vs_local_decision() {
    let Some(assets) = e2e::assets() else {
        return;
    };
    let s = Setup::start(&assets, 2).await;
    let d = s.decider().await;
    let ca = s.pki.ca_der.clone();
    let mut local = Conn::open(s.replicas[d].webhook, &ca, Proto::H2)
        .await
        .unwrap();
    let mut forwarded = Conn::open(s.replicas[1 - d].webhook, &ca, Proto::H2)
        .await
        .unwrap();
    let n: usize = std::env::var("BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let warmup = 500;
    let (mut t_local, mut t_fwd) = (Vec::new(), Vec::new());
    for i in 0..(n + warmup) {
        for (conn, times, side) in [
            (&mut local, &mut t_local, 0),
            (&mut forwarded, &mut t_fwd, 1),
        ] {
            let j = 2 * i + side;
            // A range of its own per request: 10.a.b.1-10, a second octet per 250 requests.
            let (a, b) = (100 + j / 250, j % 250 + 1);
            let range = format!("10.{a}.{b}.1-10.{a}.{b}.10");
            let body =
                serde_json::to_vec(&review(&pool(&format!("b-{j}"), &range), false)).unwrap();
            let start = Instant::now();
            let reply = conn
                .send(post("/validate", Some("application/json"), body))
                .await
                .unwrap();
            let took = start.elapsed();
            assert_eq!(
                reply.json()["response"]["allowed"],
                true,
                "{}",
                reply.text()
            );
            if i >= warmup {
                times.push(took);
            }
        }
    }
    let pct = |v: &mut Vec<Duration>, p: f64| -> Duration {
        v.sort();
        v[((v.len() as f64 - 1.0) * p).round() as usize]
    };
    println!(
        "{n} decisions each: local p50 {:?} p99 {:?}; forwarded p50 {:?} p99 {:?}",
        pct(&mut t_local, 0.50),
        pct(&mut t_local, 0.99),
        pct(&mut t_fwd, 0.50),
        pct(&mut t_fwd, 0.99),
    );
}

#[track_caller]
fn check_one_admitted(answers: &[Answer], what: &str, rule_text: &str, unavailable: &mut usize) {
    let admitted = answers.iter().filter(|a| **a == Answer::Allowed).count();
    assert_eq!(admitted, 1, "{what}: {admitted} admitted: {answers:#?}");
    for a in answers {
        match a {
            Answer::Allowed => {}
            Answer::Denied(_, m) => {
                let ok = match rule_text {
                    "P10" => m.contains("overlap"),
                    _ => m.contains("10.99."),
                };
                assert!(ok, "{what}: denied for another reason: {m}");
            }
            Answer::Unavailable(_) => *unavailable += 1,
            Answer::Failed(e) => panic!("{what}: no answer: {e}"),
        }
    }
}
