//! Three `ipam-guard serve` processes behind one webhook URL, as an install with three replicas:
//! they elect a decider through a Lease (short durations, as tests/e2e_decider.rs), the API
//! server reaches them through a round-robin proxy (`e2e::proxy`, the Service) and presents its
//! client certificate (`--client-ca-file`), so its admissions are trusted ones.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::Value;

use super::e2e::api::{self, WAIT};
use super::e2e::pki::{ApiserverIdentity, Pki, Usage};
use super::e2e::proxy::Proxy;
use super::e2e::{self, eventually, free_port, ControlPlane};
use super::NS;

const LEASE_NS: &str = "ipam-guard";
const LEASE: &str = ipam_guard::decider::DEFAULT_LEASE;

pub struct Replica {
    pub name: String,
    child: Option<Child>,
    pub webhook: SocketAddr,
    pub probe: SocketAddr,
    pub metrics: SocketAddr,
    pub peer: SocketAddr,
    log: PathBuf,
}

impl Replica {
    fn start(cp: &ControlPlane, certs: &Path, name: &str, pending_ttl: Duration) -> Replica {
        let port = || SocketAddr::from(([127, 0, 0, 1], free_port()));
        let (webhook, probe, metrics, peer) = (port(), port(), port(), port());
        let log = cp.dir.path().join(format!("{name}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
            .arg("serve")
            .arg("--kubeconfig")
            .arg(&cp.kubeconfig)
            .arg("--cert-dir")
            .arg(certs)
            .arg("--client-ca-file")
            .arg(certs.join("ca.crt"))
            .args(["--listen", &webhook.to_string()])
            .args(["--probe-listen", &probe.to_string()])
            .args(["--metrics-listen", &metrics.to_string()])
            .args(["--peer-listen", &peer.to_string()])
            .args(["--peer-advertise", &peer.to_string()])
            .args(["--decider-lease-namespace", LEASE_NS])
            .args(["--decider-lease-duration", "3s"])
            .args(["--decider-renew-deadline", "2s"])
            .args(["--decider-retry-period", "500ms"])
            .args(["--pending-ttl", &format!("{}ms", pending_ttl.as_millis())])
            .args(["--shutdown-delay", "0s"])
            .env("POD_NAME", name)
            .env("RUST_LOG", "info,ipam_guard=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .spawn()
            .expect("start ipam-guard serve");
        Replica {
            name: name.to_string(),
            child: Some(child),
            webhook,
            probe,
            metrics,
            peer,
            log,
        }
    }

    /// Sends SIGTERM: a clean shutdown, which for the decider is a handover.
    pub fn terminate(&self) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let ok = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(ok.success(), "kill -TERM {}", self.name);
    }

    /// Waits for the process to exit and reaps it.
    pub async fn exited(&mut self) -> ExitStatus {
        let child = self.child.as_mut().expect("started");
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status;
            }
            assert!(start.elapsed() < WAIT, "{} did not exit", self.name);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn log_tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    fn assert_running(&mut self) {
        if let Some(c) = self.child.as_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                panic!("{} exited ({status}):\n{}", self.name, self.log_tail());
            }
        }
    }

    /// One sample of its /metrics (`name` with its labels, as printed).
    pub async fn metric(&self, name: &str) -> Option<f64> {
        let (status, body) = super::server_support::http_get(self.metrics, "/metrics")
            .await
            .ok()?;
        if status != 200 {
            return None;
        }
        body.lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    /// How many objects of `kind` its view holds (a follower's: what its watch showed; the
    /// decider's: pending entries too).
    pub async fn view_objects(&self, kind: ipam_guard::kinds::Kind) -> Option<f64> {
        self.metric(&format!(
            "ipam_guard_view_objects{{kind=\"{}\"}}",
            kind.name()
        ))
        .await
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Fields drop in order: the proxy and the replicas before the control plane they watch, the
/// certificates last.
pub struct Three {
    pub proxy: Proxy,
    pub replicas: Vec<Replica>,
    pub client: kube::Client,
    pub pending_ttl: Duration,
    pub cp: ControlPlane,
    _files: tempfile::TempDir,
}

impl Three {
    /// The control plane, the CRDs, namespaces `NS` and the Lease's, three replicas with
    /// `--pending-ttl pending_ttl` once all are ready and one decides, the proxy (followers
    /// first, so the API server's first connection is forwarded), and ipam-guard's webhooks
    /// registered through it and called.
    pub async fn start(assets: &e2e::Server, pending_ttl: Duration) -> Three {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let files = tempfile::tempdir().unwrap();
        // One CA for the serving certificates, the peer channel and the API server's client
        // certificate (a serving leaf also allows client auth).
        let pki = Pki::issue(
            "replicas CA",
            Some("replica"),
            &["localhost", "127.0.0.1"],
            Usage::Serving,
        );
        let certs = files.path().join("certs");
        pki.write_secret(&certs);
        let identity = ApiserverIdentity::write(&pki, &files.path().join("apiserver"));
        let cp = ControlPlane::start_with(assets, std::slice::from_ref(&identity.flag)).await;
        let client = cp.client().await;
        api::install_crds(&client).await;
        api::create_namespace(&client, NS).await;
        api::create_namespace(&client, LEASE_NS).await;
        let mut replicas: Vec<Replica> = (0..3)
            .map(|i| Replica::start(&cp, &certs, &format!("replica-{i}"), pending_ttl))
            .collect();
        let start = Instant::now();
        for r in replicas.iter_mut() {
            loop {
                r.assert_running();
                if let Ok((200, _)) = super::server_support::http_get(r.probe, "/readyz").await {
                    break;
                }
                assert!(
                    start.elapsed() < WAIT,
                    "{} not ready:\n{}",
                    r.name,
                    r.log_tail()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        let lease_names = |replicas: &[Replica], addr: Option<String>| {
            addr.and_then(|a| replicas.iter().position(|r| r.peer.to_string() == a))
        };
        let mut decider = None;
        while decider.is_none() {
            assert!(start.elapsed() < WAIT, "no decider elected");
            decider = lease_names(&replicas, lease_address(&client).await);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let d = decider.unwrap();
        let mut order: Vec<usize> = (0..replicas.len()).filter(|i| *i != d).collect();
        order.push(d);
        let proxy = Proxy::start(order.iter().map(|i| replicas[*i].webhook).collect()).await;
        api::register_webhooks(&client, proxy.addr, pki.ca_pem.as_bytes()).await;
        // Called, and decided: a valid pool's dry run is admitted (a 503 until a decider decides).
        let probe = api::in_cluster_pool(NS, "probe", "10.250.0.10-10.250.0.20", "10.250.0.1");
        let reversed = api::in_cluster_pool(NS, "probe", "10.250.0.20-10.250.0.10", "10.250.0.1");
        eventually(
            "the replicas' webhook to be called and decide",
            WAIT,
            || async {
                let denied = api::create(&client, &reversed, true).await;
                let admitted = api::create(&client, &probe, true).await;
                denied.status == 422
                    && denied.message().contains("admission webhook")
                    && admitted.status == 201
            },
        )
        .await;
        Three {
            proxy,
            replicas,
            client,
            pending_ttl,
            cp,
            _files: files,
        }
    }

    /// Which replica the Lease names as the decider now.
    pub async fn decider(&self) -> Option<usize> {
        let addr = lease_address(&self.client).await?;
        self.replicas
            .iter()
            .position(|r| r.peer.to_string() == addr)
    }

    /// Waits until every follower's watch has shown as many objects of `obj`'s kind as the API
    /// server stores, then a little more for the decider's (whose count cannot tell: its pending
    /// entries count too).
    pub async fn watched(&self, obj: &Value) {
        let kind = api::kind_of(obj);
        let d = self.decider().await;
        let stored = stored_count(&self.client, obj).await;
        for (i, r) in self.replicas.iter().enumerate() {
            if Some(i) == d {
                continue;
            }
            eventually(
                &format!("{} to show {stored} {}", r.name, kind.name()),
                WAIT,
                || async { r.view_objects(kind).await == Some(stored as f64) },
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    /// Every replica's log tail, for a failure message.
    pub fn logs(&self) -> String {
        self.replicas
            .iter()
            .map(|r| format!("--- {}:\n{}", r.name, r.log_tail()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

async fn lease_address(client: &kube::Client) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NS);
    let lease = leases.get_opt(LEASE).await.ok()??;
    lease
        .metadata
        .annotations?
        .get(ipam_guard::decider::ADDRESS_ANNOTATION)
        .cloned()
}

/// How many objects of `obj`'s kind the API server stores, in every namespace.
pub async fn stored_count(client: &kube::Client, obj: &Value) -> usize {
    let path = api::collection(obj["apiVersion"].as_str().unwrap(), api::kind_of(obj), None);
    let r = api::call(client, http::Method::GET, &path, None, "application/json").await;
    r.expect(200);
    r.body["items"].as_array().map_or(0, Vec::len)
}
