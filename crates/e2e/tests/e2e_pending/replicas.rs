//! Three `ipam-guard serve` processes behind one webhook URL, as an install with three replicas:
//! they elect a decider through a Lease (`replica`: short durations), the API
//! server reaches them through a round-robin proxy (`e2e::proxy`, the Service) and presents its
//! client certificate (`--client-ca-file`), so its admissions are trusted ones.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::Value;

use super::e2e::api::{self, WAIT};
use super::e2e::pki::{ApiserverIdentity, Pki, Usage};
use super::e2e::proxy::Proxy;
use super::e2e::{self, eventually, ControlPlane};
use super::replica::{Replica, Start, LEASE, LEASE_NS};
use super::NS;

fn start_replica(cp: &ControlPlane, certs: &Path, name: &str, pending_ttl: Duration) -> Replica {
    Replica::start(Start {
        kubeconfig: &cp.kubeconfig,
        certs,
        name,
        log: cp.dir.path().join(format!("{name}.log")),
        pending_ttl: Some(pending_ttl),
        rust_log: "info,ipam_guard=debug",
        extra: &[],
    })
}

/// How many objects of `kind` the view of `r` holds (a follower's: what its watch showed; the
/// decider's: pending entries too).
pub async fn view_objects(r: &Replica, kind: ipam_guard::kinds::Kind) -> Option<f64> {
    r.metric(&format!(
        "ipam_guard_view_objects{{kind=\"{}\"}}",
        kind.name()
    ))
    .await
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
            .map(|i| start_replica(&cp, &certs, &format!("replica-{i}"), pending_ttl))
            .collect();
        let start = Instant::now();
        for r in replicas.iter_mut() {
            r.wait_ready(WAIT.saturating_sub(start.elapsed())).await;
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
                || async { view_objects(r, kind).await == Some(stored as f64) },
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    /// Every replica's log tail, for a failure message.
    pub fn logs(&self) -> String {
        self.replicas
            .iter()
            .map(|r| format!("--- {}:\n{}", r.name, r.log_tail(30)))
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
