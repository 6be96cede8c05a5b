//! The live view's first sync against a real kube-apiserver (v1.24 + etcd, envtest layout from
//! `KUBEBUILDER_ASSETS`), side by side with a raw `resourceVersion=0` LIST of the same objects
//! (curl with the static token), in the same run. Prints a markdown table for docs/performance.md.
//!
//!   benches/live-sync.sh             # builds, then runs this with 10,000 pools + 100,000 IPAddresses
//!   cargo bench --bench live_sync -- --pools 1000 --addresses 10000
//!
//! For each round, in the order of `--modes` (default `raw,serve`):
//!
//! - `raw`: one raw LIST of each populated kind with curl (wall time, bytes, API server CPU);
//!   `raw-h1` the same over HTTP/1.1;
//! - `serve`: `ipam-guard serve --kubeconfig` (release binary) from spawn to `/readyz` 200: wall
//!   time, the process's peak RSS (VmHWM), its RSS a few seconds after (steady), its CPU and the
//!   API server's CPU over the sync;
//! - `own`: this binary again, as a child process that starts the live view (`LiveView::start`,
//!   the project's own list/watch loop) and exits once it is synced;
//! - `watcher`: the same child, syncing the same kinds into the same index through
//!   kube-runtime's `watcher` (`any_semantic()`, `page_size: None`) instead, exiting once every
//!   kind has sent `InitDone`.
//!
//! API server CPU is utime + stime from /proc/<pid>/stat.
//!
//! Loading 110k objects takes minutes; to load once and measure many times:
//!
//!   cargo bench --bench live_sync -- --rounds 0 --keep /tmp/live-sync.attach &   # loads, holds
//!   cargo bench --bench live_sync -- --attach /tmp/live-sync.attach --modes raw,serve,own,watcher
//!   rm /tmp/live-sync.attach                                                     # stops it

#[path = "../crates/e2e/tests/e2e/mod.rs"]
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
    e2e::measure::flag(name)
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

/// The API server's completed GC cycles (`go_gc_cycles_total_gc_cycles_total` of its /metrics;
/// None when it does not say). Its heap holds every object several times over (watch cache, etcd
/// client), so one GC cycle costs seconds of CPU and lands in whichever step crosses the trigger:
/// a step's API server CPU is only comparable beside how many cycles fell in it.
fn gc_cycles(port: u16) -> Option<u64> {
    let out = Command::new("curl")
        .args(["-sk", "-H"])
        .arg(format!("Authorization: Bearer {TOKEN}"))
        .arg(format!("https://127.0.0.1:{port}/metrics"))
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("go_gc_cycles_total_gc_cycles_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
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
fn raw_list(port: u16, apiserver: u32, paths: &[&str], http1: bool) -> Raw {
    let cpu0 = cpu_seconds(apiserver);
    let start = Instant::now();
    let mut bytes = 0;
    for path in paths {
        let out = Command::new("curl")
            // curl speaks HTTP/2 when the server offers it, as client-go (kubectl) does.
            .args(if http1 { &["--http1.1"][..] } else { &[][..] })
            .args([
                "-sk",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code} %{size_download}",
            ])
            .arg("-H")
            .arg(format!("Authorization: Bearer {TOKEN}"))
            .arg(format!("https://127.0.0.1:{port}{path}?resourceVersion=0"))
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
    kubeconfig: &Path,
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
        .arg(kubeconfig)
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
        // One replica: no decider election (it would need this replica's address).
        .arg("--decider=off")
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

/// A child's own figures, printed on one line for the parent (`ready <wall s> <peak MiB> <cpu s>
/// <objects>`).
fn report_self(start: Instant, objects: usize) {
    println!(
        "ready {:.3} {:.1} {:.3} {objects}",
        start.elapsed().as_secs_f64(),
        status_mib(std::process::id(), "VmHWM:"),
        cpu_seconds(std::process::id())
    );
}

/// `--child own`: the live view as `serve` runs it, until synced.
async fn child_own(kubeconfig: &Path, start: Instant) {
    use ipam_guard::cluster::live::{LiveOptions, LiveView};
    use ipam_guard::cluster::ClusterView;
    let client = ipam_guard::cluster::live::client(Some(kubeconfig))
        .await
        .expect("client");
    let view = LiveView::start(client, LiveOptions::default());
    while !view.synced() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let objects = view.object_counts().iter().map(|(_, n)| n).sum();
    report_self(start, objects);
}

/// `--child watcher`: the same kinds into the same index through kube-runtime's `watcher`, until
/// every kind's first list is complete (`InitDone`).
async fn child_watcher(kubeconfig: &Path, start: Instant) {
    use ipam_guard::cluster::live::{api_resource, discover, watched, KindFeed};
    use ipam_guard::cluster::{Ledger, WatchedObject};
    use kube::runtime::watcher::{self, Event};
    use std::sync::Arc;
    let client = ipam_guard::cluster::live::client(Some(kubeconfig))
        .await
        .expect("client");
    let served = discover(&client).await.expect("discovery");
    let ledger = Arc::new(Ledger::new(Default::default()));
    let mut tasks = Vec::new();
    for (kind, version) in served.into_iter().filter(|(k, _)| watched(*k)) {
        let resource = api_resource(kind, &version);
        let api: kube::Api<WatchedObject> = kube::Api::all_with(client.clone(), &resource);
        let mut config = watcher::Config::default().any_semantic();
        // `page_size(n)` only sets a bound; unbounded is the field itself.
        config.page_size = None;
        let ledger = ledger.clone();
        tasks.push(tokio::spawn(async move {
            let mut feed = KindFeed::new(kind, &version);
            let mut stream = std::pin::pin!(watcher::watcher(api, config));
            while let Some(event) = stream.next().await {
                match event {
                    Ok(event) => {
                        let done = matches!(event, Event::InitDone);
                        feed.apply(&ledger, event);
                        if done {
                            return;
                        }
                    }
                    Err(e) => eprintln!("{kind}: {e}"),
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("watcher task");
    }
    let objects = ledger.read().counts().iter().map(|(_, n)| n).sum();
    report_self(start, objects);
}

struct Child {
    wall: f64,
    ready: f64,
    hwm: f64,
    own_cpu: f64,
    apiserver_cpu: f64,
    objects: usize,
}

/// This binary again as `--child MODE`, from spawn to exit (it exits once synced).
fn child(mode: &str, kubeconfig: &Path, apiserver: u32) -> Child {
    let cpu0 = cpu_seconds(apiserver);
    let start = Instant::now();
    let out = Command::new(std::env::current_exe().expect("own path"))
        .args(["--bench", "--child", mode, "--kubeconfig"])
        .arg(kubeconfig)
        .stderr(Stdio::inherit())
        .output()
        .expect("child runs");
    let wall = start.elapsed().as_secs_f64();
    let apiserver_cpu = cpu_seconds(apiserver) - cpu0;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ready "))
        .unwrap_or_else(|| panic!("child {mode} printed no figures: {text}"));
    let f: Vec<f64> = line
        .split_whitespace()
        .map(|v| v.parse().expect("a figure"))
        .collect();
    Child {
        wall,
        ready: f[0],
        hwm: f[1],
        own_cpu: f[2],
        apiserver_cpu,
        objects: f[3] as usize,
    }
}

/// Where a held control plane is: the kubeconfig, the API server's pid and port.
struct Target {
    kubeconfig: std::path::PathBuf,
    apiserver: u32,
    port: u16,
}

fn read_attach(path: &str) -> Target {
    let text = std::fs::read_to_string(path).expect("attach file");
    let mut lines = text.lines();
    let kubeconfig = lines.next().expect("kubeconfig line").into();
    let apiserver = lines.next().and_then(|l| l.parse().ok()).expect("pid");
    let port = lines.next().and_then(|l| l.parse().ok()).expect("port");
    Target {
        kubeconfig,
        apiserver,
        port,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` must not run this.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    if let Some(mode) = e2e::measure::flag("--child") {
        let start = Instant::now();
        let kubeconfig = e2e::measure::flag("--kubeconfig").expect("--kubeconfig");
        match mode.as_str() {
            "own" => child_own(Path::new(&kubeconfig), start).await,
            "watcher" => child_watcher(Path::new(&kubeconfig), start).await,
            other => panic!("unknown child mode {other}"),
        }
        return;
    }
    let pools = arg("--pools", 10_000);
    let addresses = arg("--addresses", 100_000);
    let rounds = arg("--rounds", 2);
    let modes = e2e::measure::flag("--modes").unwrap_or_else(|| "raw,serve".to_string());
    let binary =
        std::env::var("IPAM_GUARD_BIN").unwrap_or_else(|_| "target/release/ipam-guard".to_string());
    let scratch = tempfile::tempdir().expect("temp dir");
    let certs = ipam_guard::server::dev::ensure(&scratch.path().join("certs")).expect("dev certs");
    // Held by this process (dropped at the end: the API server and etcd stop) unless attached.
    let mut held = None;
    let target = match e2e::measure::flag("--attach") {
        Some(path) => read_attach(&path),
        None => {
            let Some(assets) = e2e::assets() else {
                println!("skipped: KUBEBUILDER_ASSETS not set");
                return;
            };
            let cp = ControlPlane::start(&assets).await;
            load(&cp, pools, addresses).await;
            let target = Target {
                kubeconfig: cp.kubeconfig.clone(),
                apiserver: cp.apiserver.as_ref().expect("running").pid(),
                port: cp.port,
            };
            held = Some(cp);
            target
        }
    };

    let paths = [
        "/apis/ipam.cluster.x-k8s.io/v1alpha2/inclusterippools",
        "/apis/ipam.cluster.x-k8s.io/v1beta2/ipaddresses",
    ];
    let apiserver = target.apiserver;
    println!("| round | what | wall (s) | API server CPU (s) | API server GC cycles | client CPU (s) | peak RSS (MiB) | RSS 5 s after (MiB) | load before |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for round in 1..=rounds {
        for mode in modes.split(',') {
            let load = loadavg();
            let gc0 = gc_cycles(target.port);
            // The GC column is spliced in after the step (its count is known only then).
            let gc = || match (gc0, gc_cycles(target.port)) {
                (Some(a), Some(b)) => (b - a).to_string(),
                _ => "?".to_string(),
            };
            match mode {
                "raw" | "raw-h1" => {
                    let http1 = mode == "raw-h1";
                    let raw = raw_list(target.port, apiserver, &paths, http1);
                    println!(
                        "| {round} | raw LIST rv=0, 2 kinds, {:.0} MB, curl over {} | {:.2} | {:.2} | {} | – | – | – | {load} |",
                        raw.bytes as f64 / 1e6,
                        if http1 { "HTTP/1.1" } else { "HTTP/2" },
                        raw.wall,
                        raw.apiserver_cpu,
                        gc()
                    );
                }
                "serve" => {
                    let s = sync(
                        &target.kubeconfig,
                        apiserver,
                        Path::new(&binary),
                        &certs.files,
                    )
                    .await;
                    println!(
                        "| {round} | ipam-guard serve: spawn to /readyz 200 | {:.2} | {:.2} | {} | {:.2} | {:.0} | {:.0} | {load} |",
                        s.ready, s.apiserver_cpu, gc(), s.own_cpu, s.hwm, s.steady
                    );
                }
                "own" | "watcher" => {
                    let what = match mode {
                        "own" => "own loop (`LiveView`) until synced",
                        _ => "kube-runtime `watcher` until every `InitDone`",
                    };
                    let c = child(mode, &target.kubeconfig, apiserver);
                    println!(
                        "| {round} | {what}, {} objects (synced at {:.2} s) | {:.2} | {:.2} | {} | {:.2} | {:.0} | – | {load} |",
                        c.objects, c.ready, c.wall, c.apiserver_cpu, gc(), c.own_cpu, c.hwm
                    );
                }
                other => panic!("unknown mode {other} (raw, raw-h1, serve, own, watcher)"),
            }
        }
    }
    if let (Some(path), Some(cp)) = (e2e::measure::flag("--keep"), &held) {
        let port = cp.port;
        std::fs::write(
            &path,
            format!("{}\n{apiserver}\n{port}\n", target.kubeconfig.display()),
        )
        .expect("attach file");
        eprintln!("holding the control plane until {path} is removed");
        while Path::new(&path).exists() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    drop(held);
}

/// Creates the bench namespace, the CRDs, and `pools` pools holding `addresses` IPAddresses.
async fn load(cp: &ControlPlane, pools: usize, addresses: usize) {
    let client = cp.client().await;
    install_crds(&client).await;
    create_path(
        &client,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    )
    .await
    .expect(201);
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
}
