//! Create latency through a real kube-apiserver (v1.24 + etcd, envtest layout from
//! `KUBEBUILDER_ASSETS`) with ipam-guard registered, beside the same creates with a do-nothing
//! webhook (`examples/echo.rs`), in one interleaved run. Prints a markdown table for docs/performance.md.
//!
//!   benches/apiserver-latency.sh     # builds the release binary and the echo, then runs this
//!   cargo bench --bench apiserver_latency -- --rounds 40 --batch 25
//!
//! Both webhooks are registered at once (validating and mutating, every kind, failurePolicy Fail),
//! each with a namespaceSelector: creates in namespace `guard` go through `ipam-guard serve
//! --kubeconfig` (the release binary, its live view watching the API server), creates in `echo`
//! through the echo. Each round sends one batch of InClusterIPPool creates and one batch of
//! IPAddress creates (each address with its claim, created beforehand) to each namespace, the
//! order of the two namespaces alternating from round to round, one request in flight. The latency
//! is the client's: from sending the POST to the API server's 201.

#[path = "../crates/e2e/tests/e2e/mod.rs"]
mod e2e;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use e2e::api::*;
use e2e::ControlPlane;
use futures::StreamExt;
use ipam_guard::kinds::KINDS;
use serde_json::{json, Value};

/// Addresses per /24 pool that holds the timed IPAddresses.
const PER_POOL: usize = 200;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One side of the comparison: a webhook server and the namespace routed to it.
struct Arm {
    name: &'static str,
    /// Second octet of the arm's address space, so the two arms never overlap.
    octet: usize,
    child: Child,
    pools: Vec<Duration>,
    addresses: Vec<Duration>,
}

impl Drop for Arm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Arm {
    /// The pool that holds timed address `i` (one /24 per `PER_POOL` addresses), and the address.
    fn address_pool(&self, i: usize) -> (String, String, String) {
        let net = format!("10.{}.{}", self.octet, i / PER_POOL);
        let address = format!("{net}.{}", 10 + i % PER_POOL);
        (format!("addr-pool-{}", i / PER_POOL), net, address)
    }

    /// The timed pools, each a small range of its own /24 in a space of its own.
    fn timed_pool(&self, i: usize) -> Value {
        let net = format!("10.{}.{}", self.octet + 1 + i / 250, i % 250);
        in_cluster_pool(
            self.name,
            &format!("pool-{i}"),
            &format!("{net}.10-{net}.20"),
            &format!("{net}.1"),
        )
    }

    fn timed_address(&self, i: usize) -> Value {
        let (pool, _, address) = self.address_pool(i);
        let name = format!("addr-{i}");
        ip_address(self.name, &name, &format!("claim-{i}"), &address, &pool)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

async fn ready(probe: SocketAddr) -> bool {
    let Ok(mut s) = tokio::net::TcpStream::connect(probe).await else {
        return false;
    };
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if s.write_all(b"GET /readyz HTTP/1.0\r\nHost: x\r\n\r\n")
        .await
        .is_err()
    {
        return false;
    }
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    buf.starts_with(b"HTTP/1.1 200") || buf.starts_with(b"HTTP/1.0 200")
}

/// Validating and mutating webhooks for every kind, for objects in `namespace` only.
async fn register(client: &kube::Client, namespace: &str, addr: SocketAddr, ca_pem: &[u8]) {
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
    let hook = |path: &str, rules: Vec<Value>| {
        json!({
            "name": format!("{}.{namespace}.bench.ipam-guard.io", &path[1..]),
            "clientConfig": {"url": format!("https://{addr}{path}"), "caBundle": ca},
            "rules": rules,
            "namespaceSelector": {"matchLabels": {"bench": namespace}},
            "failurePolicy": "Fail", "matchPolicy": "Equivalent", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 10
        })
    };
    let configs = [
        (
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            hook("/validate", validate),
        ),
        (
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            hook("/mutate", mutate),
        ),
    ];
    for (plural, kind, webhook) in configs {
        create_path(
            client,
            &format!("/apis/admissionregistration.k8s.io/v1/{plural}"),
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                "metadata": {"name": format!("bench-{namespace}")},
                "webhooks": [webhook]
            }),
        )
        .await
        .expect(201);
    }
}

/// Creates `objects` with 32 in flight, each expected to be a 201.
async fn create_all(client: &kube::Client, objects: Vec<Value>) {
    let mut results = futures::stream::iter(objects)
        .map(|o| {
            let client = client.clone();
            async move { (create(&client, &o, false).await, o) }
        })
        .buffer_unordered(32);
    while let Some((resp, o)) = results.next().await {
        assert_eq!(resp.status, 201, "setup create of {o}: {resp:?}");
    }
}

/// One timed create, which must succeed.
async fn timed(client: &kube::Client, obj: &Value) -> Duration {
    let start = Instant::now();
    let resp = create(client, obj, false).await;
    let took = start.elapsed();
    assert_eq!(resp.status, 201, "timed create of {obj}: {resp:?}");
    took
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` must not run this.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let Some(assets) = e2e::assets() else {
        println!("skipped: KUBEBUILDER_ASSETS not set");
        return;
    };
    let rounds = arg("--rounds", 40);
    let batch = arg("--batch", 25);
    let warmup_rounds = 2;
    let per_arm = (rounds + warmup_rounds) * batch;
    let binary =
        std::env::var("IPAM_GUARD_BIN").unwrap_or_else(|_| "target/release/ipam-guard".to_string());
    let echo =
        std::env::var("ECHO_BIN").unwrap_or_else(|_| "target/release/examples/echo".to_string());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    let certs = ipam_guard::server::dev::ensure(&cp.dir.path().join("certs")).expect("dev certs");
    let ca_pem = std::fs::read(&certs.ca_cert).expect("CA");
    let port = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));

    // Kept after the run: why ipam-guard did not get ready, or what it logged.
    let guard_log = std::env::temp_dir().join("apiserver-latency-guard.log");
    let guard_addr = port(e2e::free_port());
    let guard_probe = port(e2e::free_port());
    let guard = Command::new(&binary)
        .arg("serve")
        // One replica: it decides alone, as `serve` in a single-replica Deployment.
        .arg("--decider=off")
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .arg("--tls-cert-file")
        .arg(&certs.files.cert)
        .arg("--tls-key-file")
        .arg(&certs.files.key)
        .arg("--listen")
        .arg(guard_addr.to_string())
        .arg("--probe-listen")
        .arg(guard_probe.to_string())
        .arg("--metrics-listen")
        .arg(port(e2e::free_port()).to_string())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&guard_log).expect("log file"))
        .spawn()
        .unwrap_or_else(|e| panic!("{binary}: {e}"));
    let echo_addr = port(e2e::free_port());
    let echo_child = Command::new(&echo)
        .arg("--cert-dir")
        .arg(cp.dir.path().join("certs"))
        .arg("--listen")
        .arg(echo_addr.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{echo}: {e}"));
    let mut arms = [
        Arm {
            name: "guard",
            octet: 20,
            child: guard,
            pools: Vec::new(),
            addresses: Vec::new(),
        },
        Arm {
            name: "echo",
            octet: 120,
            child: echo_child,
            pools: Vec::new(),
            addresses: Vec::new(),
        },
    ];
    e2e::eventually("ipam-guard ready", WAIT, || ready(guard_probe)).await;
    e2e::eventually("the echo listening", WAIT, || async {
        tokio::net::TcpStream::connect(echo_addr).await.is_ok()
    })
    .await;
    for (arm, addr) in arms.iter().zip([guard_addr, echo_addr]) {
        create_path(
            &client,
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": arm.name, "labels": {"bench": arm.name}}}),
        )
        .await
        .expect(201);
        register(&client, arm.name, addr, &ca_pem).await;
    }
    // The API server reads webhook configurations through an informer: give it time to see both.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let start = Instant::now();
    for arm in &arms {
        let mut pools = Vec::new();
        let mut claims = Vec::new();
        for i in 0..per_arm {
            let (pool, net, _) = arm.address_pool(i);
            if i % PER_POOL == 0 {
                let range = format!("{net}.10-{net}.{}", 9 + PER_POOL);
                pools.push(in_cluster_pool(
                    arm.name,
                    &pool,
                    &range,
                    &format!("{net}.1"),
                ));
            }
            claims.push(claim(arm.name, &format!("claim-{i}"), &pool));
        }
        create_all(&client, pools).await;
        create_all(&client, claims).await;
    }
    eprintln!(
        "setup: {per_arm} claims per namespace in {:.1} s",
        start.elapsed().as_secs_f64()
    );

    let load_before = loadavg();
    let run = Instant::now();
    for round in 0..rounds + warmup_rounds {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for a in order {
            let arm = &mut arms[a];
            let mut pools = Vec::with_capacity(batch);
            let mut addresses = Vec::with_capacity(batch);
            for k in 0..batch {
                let i = round * batch + k;
                pools.push(timed(&client, &arm.timed_pool(i)).await);
            }
            for k in 0..batch {
                let i = round * batch + k;
                addresses.push(timed(&client, &arm.timed_address(i)).await);
            }
            if round >= warmup_rounds {
                arm.pools.extend(pools);
                arm.addresses.extend(addresses);
            }
        }
        for arm in arms.iter_mut() {
            if let Ok(Some(status)) = arm.child.try_wait() {
                panic!("the {} webhook exited: {status}", arm.name);
            }
        }
    }
    let wall = run.elapsed().as_secs_f64();

    println!(
        "{rounds} rounds of {batch} creates per kind and webhook ({} warm-up rounds not counted), \
         {wall:.1} s, load before {load_before}, after {}",
        warmup_rounds,
        loadavg()
    );
    println!("| webhook | kind | creates | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) |");
    println!("|---|---|---|---|---|---|---|");
    for arm in arms.iter_mut() {
        let label = match arm.name {
            "guard" => "ipam-guard serve",
            _ => "do-nothing echo",
        };
        for (kind, samples) in [
            ("InClusterIPPool", &mut arm.pools),
            ("IPAddress", &mut arm.addresses),
        ] {
            samples.sort();
            println!(
                "| {label} | {kind} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
                samples.len(),
                percentile(samples, 0.50),
                percentile(samples, 0.90),
                percentile(samples, 0.99),
                percentile(samples, 1.0),
            );
        }
    }
}
