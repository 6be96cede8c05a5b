//! Measurements of the commands that read a whole cluster (`audit`, `audit -n`, `usage`, `check
//! --kubeconfig`), each a whole process under `/usr/bin/time -v` (wall time, peak RSS), beside
//! one raw `resourceVersion=0` LIST per kind with curl in the same run, on a real kube-apiserver
//! holding the first-sync test's data; and how soon the live view is ready again after the API
//! server comes back from an outage. docs/performance.md ("Cluster reads") has the figures and the
//! command. Ignored by default: at full scale it takes many minutes.
//!
//! ```sh
//! cargo build --release --bin ipam-guard
//! IPAM_GUARD_MEASURE_BINS="after=target/release/ipam-guard" \
//!   cargo test -p ipam-guard-e2e --test e2e_cluster_reads -- --ignored --nocapture
//! ```
//!
//! Knobs: `IPAM_GUARD_MEASURE_BINS` (space-separated `label=path`, default the test build's
//! binary), `IPAM_GUARD_MEASURE_POOLS` (a comma-separated list of pool counts, 10 addresses each;
//! default 10000: the data grows between sizes, each measured in turn), `IPAM_GUARD_MEASURE_RUNS`
//! (runs of each command, default 1), `IPAM_GUARD_MEASURE_OUTAGE` (seconds the API server is down
//! before the readiness measurement; 0 skips it; default 120), `IPAM_GUARD_MEASURE_HOLD` (a
//! directory: after each size the loaded server is held, its kubeconfig copied there, until a
//! file `next` appears; a file `again` measures once more, with the binaries a file `bins` names
//! when there is one: loading 110k objects takes minutes, comparing builds should not).

mod e2e;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use e2e::api::*;
use e2e::ControlPlane;
use ipam_guard::cluster::live::{self, LiveOptions, LiveView};
use ipam_guard::cluster::ClusterView;

const NS: &str = "scale";
/// The namespace `audit -n` asks about: a handful of objects beside the bulk.
const SMALL: &str = "trial-guard";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn bins() -> Vec<(String, PathBuf)> {
    match env("IPAM_GUARD_MEASURE_BINS") {
        Some(list) => list
            .split_whitespace()
            .map(|b| match b.split_once('=') {
                Some((label, path)) => (label.to_string(), PathBuf::from(path)),
                None => (b.to_string(), PathBuf::from(b)),
            })
            .collect(),
        None => vec![("test-build".to_string(), e2e::ipam_guard_bin())],
    }
}

/// Wall seconds, peak RSS (MiB), exit code and CPU seconds (user + system) of one whole process,
/// from `/usr/bin/time -v`.
fn timed(args: &[&str]) -> (f64, f64, i32, f64) {
    let out = Command::new("/usr/bin/time")
        .arg("-v")
        .args(args)
        .output()
        .expect("/usr/bin/time");
    let err = String::from_utf8_lossy(&out.stderr);
    let t = e2e::measure::time_v(&err);
    let code = out.status.code().unwrap_or(-1);
    if t.wall == 0.0 {
        eprintln!("no time for {args:?}: {err}");
    }
    (t.wall, t.rss_mib, code, t.cpu)
}

fn line(text: String) {
    println!("{text}");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cluster-reads.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        use std::io::Write;
        let _ = writeln!(f, "{text}");
    }
}

/// One raw `resourceVersion=0` LIST of each served kind with curl, as the commands make them
/// (to /dev/null): seconds per kind and their sum.
async fn raw_lists(cp: &ControlPlane) -> (f64, Vec<String>) {
    let client = cp.client().await;
    let served = live::discover(&client).await.expect("discovery");
    let mut total = 0.0;
    let mut parts = Vec::new();
    for (kind, version) in served {
        let r = live::api_resource(kind, &version);
        let url = format!(
            "https://127.0.0.1:{}/apis/{}/{}?resourceVersion=0",
            cp.port, r.api_version, r.plural
        );
        let (secs, bytes) = e2e::measure::curl_get(&url);
        total += secs;
        if bytes > 1e6 {
            parts.push(format!("{}: {secs:.2} s, {:.0} MB", r.plural, bytes / 1e6));
        }
    }
    (total, parts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "many minutes at full scale; run by hand for docs/performance.md"]
async fn measure_cluster_reads() {
    let Some(server) = e2e::servers().ok().and_then(|s| s.last().cloned()) else {
        panic!("no kube-apiserver: set KUBEBUILDER_ASSETS");
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sizes: Vec<usize> = env("IPAM_GUARD_MEASURE_POOLS")
        .unwrap_or_else(|| "10000".to_string())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let runs: usize = env("IPAM_GUARD_MEASURE_RUNS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let outage: u64 = env("IPAM_GUARD_MEASURE_OUTAGE")
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let mut cp = ControlPlane::start(&server).await;
    let client = cp.client().await;
    install_crds(&client).await;
    for ns in [NS, SMALL] {
        let r = create_path(
            &client,
            "/api/v1/namespaces",
            &serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
        assert!(r.status == 201 || r.status == 409, "{r:?}");
    }
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        let addr = format!("192.168.77.{}", 10 + i);
        create(
            &client,
            &ip_address(SMALL, name, name, &addr, "small"),
            false,
        )
        .await
        .expect(201);
    }
    create(
        &client,
        &in_cluster_pool(
            SMALL,
            "small",
            "192.168.77.10-192.168.77.20",
            "192.168.77.1",
        ),
        false,
    )
    .await
    .expect(201);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pool.yaml");
    std::fs::write(
        &file,
        serde_json::to_string(&in_cluster_pool(
            SMALL,
            "new",
            "192.168.78.10-192.168.78.20",
            "192.168.78.1",
        ))
        .unwrap(),
    )
    .unwrap();
    let kc = cp.kubeconfig.to_str().unwrap().to_string();
    let file = file.to_str().unwrap().to_string();
    let mut loaded = 0;
    line(format!(
        "== cluster reads against {} ({} cores, shared: timings are noisy)",
        server.label(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    for pools in sizes {
        let started = Instant::now();
        load_pools_from(&client, NS, loaded, pools, 10).await;
        loaded = pools;
        line(format!(
            "-- {pools} pools + {} IPAddresses (loaded in {:.0} s)",
            pools * 10,
            started.elapsed().as_secs_f64()
        ));
        let hold = env("IPAM_GUARD_MEASURE_HOLD").map(PathBuf::from);
        if let Some(dir) = &hold {
            std::fs::create_dir_all(dir).expect("the hold directory");
            std::fs::copy(&cp.kubeconfig, dir.join("kubeconfig")).expect("kubeconfig copied");
        }
        let mut round = 0;
        loop {
            measure(&cp, &kc, &file, runs, round, hold.as_deref()).await;
            round += 1;
            let Some(dir) = &hold else { break };
            line(format!(
                "holding {pools} pools: touch {}/again or {}/next",
                dir.display(),
                dir.display()
            ));
            if wait_for(dir).await == Held::Next {
                break;
            }
        }
    }
    if outage == 0 {
        return;
    }
    let view = LiveView::start(client.clone(), LiveOptions::default());
    let started = Instant::now();
    while !view.synced() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    line(format!(
        "live view: synced {:.1} s after start",
        started.elapsed().as_secs_f64()
    ));
    cp.stop_apiserver();
    tokio::time::sleep(Duration::from_secs(outage)).await;
    let restarting = Instant::now();
    cp.restart_apiserver().await;
    let back = Instant::now();
    while !view.synced() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    line(format!(
        "live view: ready {:.1} s after the API server answered again ({outage} s outage; it took {:.1} s to answer), objects {:?}",
        back.elapsed().as_secs_f64(),
        back.duration_since(restarting).as_secs_f64(),
        view.object_counts()
    ));
}

#[derive(PartialEq)]
enum Held {
    Again,
    Next,
}

/// Waits until `dir` holds `again` or `next`, and takes it away.
async fn wait_for(dir: &std::path::Path) -> Held {
    loop {
        for (name, held) in [("again", Held::Again), ("next", Held::Next)] {
            if std::fs::remove_file(dir.join(name)).is_ok() {
                return held;
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// The binaries to measure: `bins` in the hold directory when there is one, else the knob's.
fn bins_now(hold: Option<&std::path::Path>) -> Vec<(String, PathBuf)> {
    let listed = hold.and_then(|d| std::fs::read_to_string(d.join("bins")).ok());
    match listed {
        Some(text) => text
            .split_whitespace()
            .map(|b| match b.split_once('=') {
                Some((label, path)) => (label.to_string(), PathBuf::from(path)),
                None => (b.to_string(), PathBuf::from(b)),
            })
            .collect(),
        None => bins(),
    }
}

/// `runs` rounds of: the raw LISTs, then each command of each binary as a whole process.
async fn measure(
    cp: &ControlPlane,
    kc: &str,
    file: &str,
    runs: usize,
    round: usize,
    hold: Option<&std::path::Path>,
) {
    for run in 0..runs {
        let run = round * runs + run;
        let (raw, parts) = raw_lists(cp).await;
        line(format!(
            "run {run}: raw LIST per kind: {raw:.2} s ({}); load {}",
            parts.join("; "),
            e2e::measure::load()
        ));
        for (label, bin) in bins_now(hold) {
            let bin = bin.to_str().unwrap().to_string();
            let commands: [(&str, Vec<&str>); 4] = [
                ("audit", vec!["audit", "--kubeconfig", kc]),
                ("audit -n", vec!["audit", "--kubeconfig", kc, "-n", SMALL]),
                ("usage", vec!["usage", "--kubeconfig", kc]),
                (
                    "check --kubeconfig",
                    vec!["check", "--kubeconfig", kc, file],
                ),
            ];
            for (name, args) in commands {
                let mut all = vec![bin.as_str()];
                all.extend(args);
                let (secs, rss, code, cpu) = timed(&all);
                let budget = 1.5 * raw + 5.0;
                line(format!(
                        "run {run}: {label}: {name}: {secs:.1} s (budget {budget:.1} s), cpu {cpu:.1} s, peak RSS {rss:.0} MiB, exit {code}; load {}",
                        e2e::measure::load()
                    ));
            }
        }
    }
}
