//! What the soak runs against: one control plane with the CRDs, three `ipam-guard serve`
//! processes (the binary cargo built) electing a decider through a Lease with the short timings
//! of crates/e2e/tests/e2e_decider.rs, the `Front` relay registered as the API server's validating
//! and mutating webhook, and the `Tap` relay as the replicas' way to the API server.
//!
//! The API server authenticates to the webhook with a client certificate from the replicas' CA
//! (an AdmissionConfiguration, as crates/e2e/tests/e2e_client_auth.rs sets up), so its admitted
//! writes reserve for the full pending TTL as in a real install; an unauthenticated caller's writes
//! that then fail (the AlreadyExists this soak provokes on purpose) would count as strikes
//! (crates/server/src/cluster/trust.rs) and soon reserve nothing.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use http::Request;
use http_body_util::BodyExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::{json, Value};

use super::e2e::pki::{Pki, Usage};
use super::e2e::{self, free_port, ControlPlane};
use super::proxy::{Front, Tap};
use super::replica::{Replica, Start, LEASE, LEASE_DURATION, LEASE_NS, RETRY_PERIOD};

pub const NS: &str = "soak";
const WAIT: Duration = Duration::from_secs(90);
/// The pending TTL the replicas run with (the false-refusal model reads it too).
pub const PENDING_TTL: Duration = Duration::from_secs(5);
/// How long after the decider is killed or paused no other replica can decide for certain: its
/// lease, renewed at most a retry period before, runs this long at least (and a new decider
/// then waits the pending TTL besides).
pub const NO_DECIDER: Duration = LEASE_DURATION.saturating_sub(RETRY_PERIOD);
/// How long the API server waits for the webhook's answer before it refuses the write.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(e2e::api::WEBHOOK_TIMEOUT_SECONDS);

/// Starts one replica with the soak's pending TTL; its log is `<name>.<starts>.log` in `logs`.
fn start_replica(kubeconfig: &Path, certs: &Path, logs: &Path, name: &str, starts: u32) -> Replica {
    Replica::start(Start {
        kubeconfig,
        certs,
        name,
        log: logs.join(format!("{name}.{starts}.log")),
        pending_ttl: Some(PENDING_TTL),
        rust_log: "info",
        extra: &[],
    })
}

/// The lists a replica's watches made because the API server answered 410 Gone
/// (`ipam_guard_view_relists_total{cause="expired"}`, summed over kinds; None: no answer).
async fn relists_expired(r: &Replica) -> Option<u64> {
    r.metric_sum(|s| {
        s.starts_with("ipam_guard_view_relists_total{") && s.contains("cause=\"expired\"")
    })
    .await
    .map(|n| n as u64)
}

/// Fields drop in order: the relays and replicas go before the control plane.
pub struct Setup {
    pub front: Front,
    pub tap: Tap,
    /// Between the API server and etcd.
    pub etcd_tap: Tap,
    pub replicas: Vec<Replica>,
    /// How many times each replica was started (its log files are numbered by it).
    starts: Vec<u32>,
    pub client: kube::Client,
    pub cp: ControlPlane,
    /// Certificates, configurations and the replicas' logs.
    pub dir: tempfile::TempDir,
    replica_kubeconfig: PathBuf,
}

impl Setup {
    pub async fn start(server: &e2e::Server, replicas: usize, seed: u64) -> Setup {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        let certs = dir.path().join("certs");
        let pki = Pki::issue(
            "soak replicas CA",
            Some("ipam-guard replica"),
            &["localhost", "127.0.0.1"],
            Usage::Serving,
        );
        pki.write_secret(&certs);

        // The API server's client certificate for the front's host:port, exactly as its URL
        // will name it: the listener is bound now, before the API server reads the file.
        let front_listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let front_addr = front_listener.local_addr().unwrap();
        let webhook_kubeconfig = dir.path().join("webhook-kubeconfig.yaml");
        std::fs::write(
            &webhook_kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nusers:\n- name: \"{front_addr}\"\n  user:\n    client-certificate: {}\n    client-key: {}\n",
                certs.join("tls.crt").display(),
                certs.join("tls.key").display()
            ),
        )
        .unwrap();
        let admission = dir.path().join("admission.yaml");
        let plugin = |name: &str| {
            format!(
                "- name: {name}\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: {}\n",
                webhook_kubeconfig.display()
            )
        };
        std::fs::write(
            &admission,
            format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n{}{}",
                plugin("ValidatingAdmissionWebhook"),
                plugin("MutatingAdmissionWebhook")
            ),
        )
        .unwrap();

        let etcd_port = free_port();
        let etcd_tap = Tap::start(SocketAddr::from(([127, 0, 0, 1], etcd_port))).await;
        let cp = ControlPlane::start_via(
            server,
            &[format!(
                "--admission-control-config-file={}",
                admission.display()
            )],
            etcd_port,
            etcd_tap.addr.port(),
        )
        .await;
        let client = cp.client().await;
        e2e::api::install_crds(&client).await;
        for ns in [NS, LEASE_NS] {
            e2e::api::create_namespace(&client, ns).await;
        }

        let tap = Tap::start(SocketAddr::from(([127, 0, 0, 1], cp.port))).await;
        let replica_kubeconfig = dir.path().join("replica-kubeconfig");
        let text = std::fs::read_to_string(&cp.kubeconfig).unwrap();
        let direct = format!("https://127.0.0.1:{}", cp.port);
        assert!(text.contains(&direct), "{text}");
        std::fs::write(
            &replica_kubeconfig,
            text.replace(&direct, &format!("https://{}", tap.addr)),
        )
        .unwrap();

        let replicas: Vec<Replica> = (0..replicas)
            .map(|i| {
                start_replica(
                    &replica_kubeconfig,
                    &certs,
                    dir.path(),
                    &format!("replica-{i}"),
                    0,
                )
            })
            .collect();
        let front = Front::start(
            front_listener,
            replicas.iter().map(|r| r.webhook).collect(),
            seed,
        );
        let mut s = Setup {
            front,
            tap,
            etcd_tap,
            starts: vec![0; replicas.len()],
            replicas,
            client,
            cp,
            dir,
            replica_kubeconfig,
        };
        for i in 0..s.replicas.len() {
            s.wait_ready(i, WAIT).await;
        }
        e2e::api::register_webhooks(&s.client, front_addr, pki.ca_pem.as_bytes()).await;
        s.wait_serving().await;
        s
    }

    /// Waits until replica `i` says it is ready; panics with its log if it does not.
    pub async fn wait_ready(&mut self, i: usize, within: Duration) -> Duration {
        self.replicas[i].wait_ready(within).await
    }

    /// Waits until a write through the API server is judged: a dry-run pool create is admitted.
    async fn wait_serving(&self) {
        let start = Instant::now();
        let mut last;
        for i in 0.. {
            let pool = json!({
                "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
                "metadata": {"name": format!("ready-{i}"), "namespace": NS},
                "spec": {"addresses": ["10.51.0.10-10.51.0.20"], "prefix": 24, "gateway": "10.51.0.1"}
            });
            let path = format!(
                "/apis/ipam.cluster.x-k8s.io/v1alpha2/namespaces/{NS}/inclusterippools?dryRun=All"
            );
            match send(
                &self.client,
                http::Method::POST,
                &path,
                Some(&pool),
                "application/json",
            )
            .await
            {
                Ok((201, _)) => return,
                Ok((status, body)) => last = format!("{status}: {body}"),
                Err(e) => last = e,
            }
            assert!(
                start.elapsed() < WAIT,
                "writes through the API server are not judged: {last}\n{}",
                self.logs(20)
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Starts replica `i` again (new ports, as a rescheduled pod gets a new IP) and tells the
    /// front; does not wait for it to be ready.
    pub fn restart(&mut self, i: usize) {
        let certs = self.dir.path().join("certs");
        let name = self.replicas[i].name.clone();
        self.starts[i] += 1;
        self.replicas[i].kill();
        self.replicas[i] = start_replica(
            &self.replica_kubeconfig,
            &certs,
            self.dir.path(),
            &name,
            self.starts[i],
        );
        self.refresh_front(&[]);
    }

    /// Points the front at every running replica but those in `skip` (a paused one: a Service
    /// drops a pod whose readiness probe fails).
    pub fn refresh_front(&self, skip: &[usize]) {
        let list = (0..self.replicas.len())
            .filter(|i| self.replicas[*i].running() && !skip.contains(i))
            .map(|i| self.replicas[i].webhook)
            .collect();
        self.front.set_backends(list);
    }

    /// The replica the Lease names as the decider, if it names one of ours.
    pub async fn decider(&self) -> Option<usize> {
        let lease = self.lease().await?;
        self.replicas
            .iter()
            .position(|r| r.running() && r.peer.to_string() == lease.address)
    }

    /// The Lease as the API server has it now (None: not read within 5 s, or none).
    pub async fn lease(&self) -> Option<LeaseState> {
        lease_state(&self.client).await
    }

    /// Reads the Lease every 100 ms until the returned history is dropped, keeping each change
    /// with its time since `epoch`: the record of who decided when, beside the replicas' logs.
    pub fn record_leases(&self, epoch: Instant) -> LeaseHistory {
        let changes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (client, kept) = (self.client.clone(), changes.clone());
        let task = tokio::spawn(async move {
            let mut last = None;
            loop {
                let now = lease_state(&client).await;
                if now.is_some() && now != last {
                    if let Some(l) = &now {
                        kept.lock().unwrap().push(format!(
                            "{:8.3} holder {:?} at {:?} renewed {}",
                            epoch.elapsed().as_secs_f64(),
                            l.holder,
                            l.address,
                            l.renewed.map_or("never".to_string(), |t| t.to_string())
                        ));
                    }
                    last = now;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        LeaseHistory { changes, task }
    }

    /// The 410 relists of every running replica, summed (None when one did not answer).
    pub async fn relists_expired(&self) -> Option<u64> {
        let mut sum = 0;
        for r in self.replicas.iter().filter(|r| r.running()) {
            sum += relists_expired(r).await?;
        }
        Some(sum)
    }

    /// Compacts etcd's history up to its current revision through its v3 JSON gateway, as the
    /// API server's own compaction does every `--etcd-compaction-interval`; returns the revision.
    pub async fn compact_etcd(&self) -> Result<i64, String> {
        let gateway = SocketAddr::from(([127, 0, 0, 1], self.cp.etcd_port));
        // Any range answers with the store's revision in its header.
        let range = etcd_post(gateway, "/v3/kv/range", &json!({"key": "AA=="})).await?;
        let revision: i64 = range["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| format!("no revision in {range}"))?;
        etcd_post(
            gateway,
            "/v3/kv/compaction",
            &json!({"revision": revision.to_string(), "physical": true}),
        )
        .await?;
        Ok(revision)
    }

    /// The last lines of every replica's log, for a failure message.
    pub fn logs(&self, n: usize) -> String {
        self.replicas
            .iter()
            .map(|r| format!("--- {} ({}):\n{}", r.name, r.log.display(), r.log_tail(n)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Who holds the decider Lease, where, and when its holder last renewed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseState {
    /// The holder's identity: its pod name, `_`, a nonce (empty: released).
    pub holder: String,
    pub address: String,
    pub renewed: Option<k8s_openapi::jiff::Timestamp>,
}

impl LeaseState {
    /// Whether `replica` holds it (its identity starts with the replica's name).
    pub fn held_by(&self, replica: &str) -> bool {
        self.holder
            .strip_prefix(replica)
            .is_some_and(|rest| rest.starts_with('_'))
    }
}

async fn lease_state(client: &kube::Client) -> Option<LeaseState> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NS);
    let lease = tokio::time::timeout(Duration::from_secs(5), leases.get(LEASE))
        .await
        .ok()?
        .ok()?;
    let spec = lease.spec.unwrap_or_default();
    Some(LeaseState {
        holder: spec.holder_identity.unwrap_or_default(),
        address: lease
            .metadata
            .annotations
            .unwrap_or_default()
            .get(ipam_guard::decider::ADDRESS_ANNOTATION)
            .cloned()
            .unwrap_or_default(),
        renewed: spec.renew_time.map(|t| t.0),
    })
}

/// The Lease's changes `Setup::record_leases` saw; reading stops when it is dropped.
pub struct LeaseHistory {
    changes: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl LeaseHistory {
    pub fn lines(&self) -> Vec<String> {
        self.changes.lock().unwrap().clone()
    }
}

impl Drop for LeaseHistory {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One POST to etcd's JSON gateway (HTTP/1.1, the connection closed after the answer).
async fn etcd_post(to: SocketAddr, path: &str, body: &Value) -> Result<Value, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let call = async {
        let mut conn = tokio::net::TcpStream::connect(to)
            .await
            .map_err(|e| e.to_string())?;
        let body = body.to_string();
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {to}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        conn.write_all(req.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        conn.read_to_end(&mut answer)
            .await
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&answer);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| format!("no HTTP answer: {text}"))?;
        if !head.starts_with("HTTP/1.1 200") {
            return Err(format!("{path}: {head} {body}"));
        }
        serde_json::from_str(body).map_err(|e| format!("{path}: {e}: {body}"))
    };
    tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .map_err(|_| format!("{path}: no answer within 10 s"))?
}

/// A client of the API server as one user's: its own connections, and every answer seen as
/// given. kube 5 retries 429, 503 and 504 by itself (`default_retry`), which would hide each
/// fail-closed refusal from the history and hold a writer for as long as the decider is away.
pub async fn writer(cp: &ControlPlane) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(&cp.kubeconfig).expect("the kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client config from the kubeconfig");
    config.default_retry = false;
    kube::Client::try_from(config).expect("a client")
}

/// One API call as a client makes it; an error when no HTTP answer came within 20 s (the
/// webhook's own timeout is 10 s).
pub async fn send(
    client: &kube::Client,
    method: http::Method,
    path: &str,
    body: Option<&Value>,
    content_type: &str,
) -> Result<(u16, Value), String> {
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
    let call = async {
        let res = client.send(req).await.map_err(|e| e.to_string())?;
        let status = res.status().as_u16();
        let bytes = res
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ))
    };
    tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .map_err(|_| "no answer within 20 s".to_string())?
}
