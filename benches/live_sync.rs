//! The live view's first sync against a real kube-apiserver (v1.24 + etcd, envtest layout from
//! `KUBEBUILDER_ASSETS`), side by side with a raw `resourceVersion=0` LIST of the same objects
//! (curl with the static token), in the same run. Prints a markdown table for BENCHMARKS.md.
//!
//!   benches/live-sync.sh             # builds, then runs this with 10,000 pools + 100,000 IPAddresses
//!   cargo bench --bench live_sync -- --pools 1000 --addresses 10000
//!
//! For each round: one raw LIST of each populated kind (wall time, bytes, API server CPU), then
//! `ipam-guard serve --kubeconfig` (release binary) from spawn to `/readyz` 200: wall time, the
//! process's peak RSS (VmHWM), its RSS a few seconds after (steady), its CPU and the API
//! server's CPU over the sync. API server CPU is utime + stime from /proc/<pid>/stat.

#[path = "../tests/e2e/mod.rs"]
mod e2e;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use e2e::api::*;
use e2e::{ControlPlane, TOKEN};
use futures::StreamExt;
use serde_json::json;

const NS: &str = "bench";

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// utime + stime of a process, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    let hz = clk_tck();
    ticks / hz
}

fn clk_tck() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// A `VmHWM` / `VmRSS` line of /proc/<pid>/status, in MiB.
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

struct Raw {
    wall: f64,
    bytes: u64,
    apiserver_cpu: f64,
}

/// One raw `resourceVersion=0` LIST of each path, with curl, the way any client would.
fn raw_list(cp: &ControlPlane, apiserver: u32, paths: &[&str]) -> Raw {
    let cpu0 = cpu_seconds(apiserver);
    let start = Instant::now();
    let mut bytes = 0;
    for path in paths {
        let out = Command::new("curl")
            .args([
                "-sk",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code} %{size_download}",
            ])
            .arg("-H")
            .arg(format!("Authorization: Bearer {TOKEN}"))
            .arg(format!(
                "https://127.0.0.1:{}{path}?resourceVersion=0",
                cp.port
            ))
            .output()
            .expect("curl runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let (code, size) = text.split_once(' ').expect("curl output");
        assert_eq!(code, "200", "raw list of {path}");
        bytes += size.parse::<u64>().unwrap_or(0);
    }
    Raw {
        wall: start.elapsed().as_secs_f64(),
        bytes,
        apiserver_cpu: cpu_seconds(apiserver) - cpu0,
    }
}

struct Sync {
    ready: f64,
    hwm: f64,
    steady: f64,
    own_cpu: f64,
    apiserver_cpu: f64,
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

async fn sync(
    cp: &ControlPlane,
    apiserver: u32,
    binary: &Path,
    certs: &ipam_guard::server::CertFiles,
) -> Sync {
    let port = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    let probe = port(e2e::free_port());
    let cpu0 = cpu_seconds(apiserver);
    let start = Instant::now();
    let mut child = Command::new(binary)
        .arg("serve")
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .arg("--tls-cert-file")
        .arg(&certs.cert)
        .arg("--tls-key-file")
        .arg(&certs.key)
        .arg("--listen")
        .arg(port(e2e::free_port()).to_string())
        .arg("--probe-listen")
        .arg(probe.to_string())
        .arg("--metrics-listen")
        .arg(port(e2e::free_port()).to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ipam-guard starts");
    let pid = child.id();
    while !ready(probe).await {
        assert!(
            child.try_wait().ok().flatten().is_none(),
            "ipam-guard exited"
        );
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "not ready in 10 min"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ready_s = start.elapsed().as_secs_f64();
    let apiserver_cpu = cpu_seconds(apiserver) - cpu0;
    let own_cpu = cpu_seconds(pid);
    let hwm = status_mib(pid, "VmHWM:");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let steady = status_mib(pid, "VmRSS:");
    let _ = child.kill();
    let _ = child.wait();
    Sync {
        ready: ready_s,
        hwm,
        steady,
        own_cpu,
        apiserver_cpu,
    }
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
    let pools = arg("--pools", 10_000);
    let addresses = arg("--addresses", 100_000);
    let rounds = arg("--rounds", 2);
    let binary =
        std::env::var("IPAM_GUARD_BIN").unwrap_or_else(|_| "target/release/ipam-guard".to_string());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let apiserver = cp.apiserver.as_ref().expect("running").pid();
    let client = cp.client().await;
    install_crds(&client).await;
    create_path(
        &client,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    )
    .await
    .expect(201);
    let certs = ipam_guard::server::dev::ensure(&cp.dir.path().join("certs")).expect("dev certs");

    let per_pool = addresses.div_ceil(pools.max(1));
    let start = Instant::now();
    let objects = (0..pools).flat_map(move |i| {
        let net = format!("10.{}.{}", 100 + i / 250, i % 250);
        let pool = format!("pool-{i}");
        let mut objs = vec![in_cluster_pool(
            NS,
            &pool,
            &format!("{net}.10-{net}.{}", 10 + per_pool),
            &format!("{net}.1"),
        )];
        for j in 0..per_pool.min(addresses.saturating_sub(i * per_pool)) {
            let name = format!("addr-{i}-{j}");
            objs.push(ip_address(
                NS,
                &name,
                &name,
                &format!("{net}.{}", 10 + j),
                &pool,
            ));
        }
        objs
    });
    let mut failed = 0usize;
    let mut results = futures::stream::iter(objects)
        .map(|o| {
            let client = client.clone();
            async move { create(&client, &o, false).await.status }
        })
        .buffer_unordered(64);
    while let Some(status) = results.next().await {
        if status != 201 {
            failed += 1;
        }
    }
    assert_eq!(failed, 0, "creates failed");
    eprintln!(
        "created {pools} pools + {addresses} IPAddresses in {:.1} s",
        start.elapsed().as_secs_f64()
    );

    let paths = [
        "/apis/ipam.cluster.x-k8s.io/v1alpha2/inclusterippools",
        "/apis/ipam.cluster.x-k8s.io/v1beta2/ipaddresses",
    ];
    println!("| round | what | wall (s) | API server CPU (s) | ipam-guard CPU (s) | peak RSS (MiB) | RSS 5 s after (MiB) | load before |");
    println!("|---|---|---|---|---|---|---|---|");
    for round in 1..=rounds {
        let load = loadavg();
        let raw = raw_list(&cp, apiserver, &paths);
        println!(
            "| {round} | raw LIST rv=0, 2 kinds, {:.0} MB | {:.2} | {:.2} | – | – | – | {load} |",
            raw.bytes as f64 / 1e6,
            raw.wall,
            raw.apiserver_cpu
        );
        let load = loadavg();
        let s = sync(&cp, apiserver, Path::new(&binary), &certs.files).await;
        println!(
            "| {round} | ipam-guard serve: spawn to /readyz 200 | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {load} |",
            s.ready, s.apiserver_cpu, s.own_cpu, s.hwm, s.steady
        );
    }
}
