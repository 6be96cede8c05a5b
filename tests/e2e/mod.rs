//! A throwaway control plane for `tests/e2e_apiserver.rs`, in the envtest layout:
//! `$KUBEBUILDER_ASSETS/{etcd,kube-apiserver}`, started on free loopback ports in a temp dir,
//! authenticated with a static token of a `system:masters` user, killed on drop.
//!
//! The flags are what a v1.24+ kube-apiserver needs with no kubelet, no controller manager and no
//! other component: a service-account key pair and issuer (mandatory since 1.20), a service IP
//! range, and the ServiceAccount admission plugin off (nothing creates the `default` account).
#![allow(dead_code)]

pub mod api;

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "ipam-guard-e2e-token";

/// Where envtest keeps its binaries, when they are there.
pub fn assets() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("KUBEBUILDER_ASSETS")?);
    (dir.join("kube-apiserver").is_file() && dir.join("etcd").is_file()).then_some(dir)
}

/// `assets()` for one named test, which also records whether that test runs or skips in
/// `$CARGO_TARGET_TMPDIR/e2e-report.txt`: `cargo test` hides what a passing test prints, and
/// `.ci/run` shows that file after the one test run, so CI says whether the real API server was used.
pub fn assets_for(test: &str) -> Option<PathBuf> {
    let found = assets();
    let line = match &found {
        Some(dir) => format!("ran: {test} against {}", dir.display()),
        None => format!(
            "skipped: {test}: KUBEBUILDER_ASSETS not set (or it holds no kube-apiserver and etcd)"
        ),
    };
    record(&line);
    found
}

/// Prints `line` and appends it to `$CARGO_TARGET_TMPDIR/e2e-report.txt`, which `.ci/run` shows
/// after the test run (`assets_for` writes each test's ran/skipped line through it).
pub fn record(line: &str) {
    println!("{line}");
    let report = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-report.txt");
    if let Ok(mut f) = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(report)
    {
        // One write per line: tests of one binary run in parallel and append at once.
        use std::io::Write;
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// A loopback port nothing listens on right now, for a child process to listen on.
///
/// Taken below the kernel's ephemeral range: a port the OS picks from that range can be handed,
/// between our check and the child's bind, to an outgoing connection (the API server's to etcd,
/// a client's to the API server), and the child then fails with "Address already in use" (seen
/// with the machine's cores oversubscribed). A counter keeps the tests of one binary, which run
/// in parallel, from being handed the same port.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FIRST: u32 = 10_000;
    let span = ephemeral_low().saturating_sub(FIRST);
    if span >= 1024 {
        // Binaries run one after another, but a fresh start per process keeps a port a previous
        // binary's child may still hold in TIME_WAIT or shutdown out of the way.
        let base = std::process::id().wrapping_mul(211) % span;
        for _ in 0..span {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let port = (FIRST + (base + n) % span) as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return port;
            }
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The first port of the kernel's ephemeral range (32768 when it cannot be read).
fn ephemeral_low() -> u32 {
    fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// A child process killed (and reaped) on drop, its output in a log file.
pub struct Proc {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Proc {
    fn spawn(name: &'static str, mut cmd: Command, log: PathBuf) -> Proc {
        let out = fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc { name, child, log }
    }

    /// Panics with the end of the log when the process has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "{} exited ({status}); last lines of its log:\n{}",
                self.name,
                self.log_tail()
            );
        }
    }

    /// The process id (benchmarks read its CPU time from /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// etcd plus kube-apiserver. Fields drop in order: the API server goes before etcd, the temp
/// dir last.
pub struct ControlPlane {
    /// None while stopped (`stop_apiserver`).
    pub apiserver: Option<Proc>,
    pub etcd: Proc,
    pub port: u16,
    pub kubeconfig: PathBuf,
    pub dir: tempfile::TempDir,
    apiserver_bin: PathBuf,
    apiserver_args: Vec<String>,
    restarts: u32,
}

impl ControlPlane {
    pub async fn start(assets: &Path) -> ControlPlane {
        ControlPlane::start_with(assets, &[]).await
    }

    /// As `start`, with more kube-apiserver flags (feature gates, admission configuration).
    pub async fn start_with(assets: &Path, extra_args: &[String]) -> ControlPlane {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();

        let client_port = free_port();
        let peer_port = free_port();
        let mut etcd_cmd = Command::new(assets.join("etcd"));
        etcd_cmd.args([
            format!("--data-dir={}", root.join("etcd").display()),
            format!("--listen-client-urls=http://127.0.0.1:{client_port}"),
            format!("--advertise-client-urls=http://127.0.0.1:{client_port}"),
            format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-cluster=default=http://127.0.0.1:{peer_port}"),
        ]);
        let mut etcd = Proc::spawn("etcd", etcd_cmd, root.join("etcd.log"));
        wait_tcp(&mut etcd, client_port, Duration::from_secs(30)).await;

        // The service-account key pair: ECDSA P-256 (rcgen, ring). The signing key as PKCS#8
        // PEM; the verifying key as a PKIX `PUBLIC KEY`, the one form every apiserver version's
        // --service-account-key-file reads for EC keys.
        let sa_key = rcgen::KeyPair::generate().expect("service-account key");
        let sa_path = root.join("sa.key");
        let sa_pub = root.join("sa.pub");
        fs::write(&sa_path, sa_key.serialize_pem()).unwrap();
        fs::write(&sa_pub, sa_key.public_key_pem()).unwrap();
        let tokens = root.join("tokens.csv");
        fs::write(
            &tokens,
            format!("{TOKEN},ipam-guard-e2e,ipam-guard-e2e-uid,\"system:masters\"\n"),
        )
        .unwrap();

        let port = free_port();
        let apiserver_args = vec![
            format!("--etcd-servers=http://127.0.0.1:{client_port}"),
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".to_string(),
            format!("--secure-port={port}"),
            format!("--cert-dir={}", root.join("apiserver-certs").display()),
            format!("--token-auth-file={}", tokens.display()),
            "--authorization-mode=RBAC".to_string(),
            "--service-cluster-ip-range=10.0.0.0/24".to_string(),
            format!("--service-account-issuer=https://127.0.0.1:{port}"),
            format!("--service-account-key-file={}", sa_pub.display()),
            format!("--service-account-signing-key-file={}", sa_path.display()),
            "--disable-admission-plugins=ServiceAccount".to_string(),
            "--allow-privileged=true".to_string(),
        ];
        // Restarts (`start_apiserver`) reuse the same flags, extras included.
        let mut apiserver_args = apiserver_args;
        apiserver_args.extend(extra_args.iter().cloned());
        let apiserver_bin = assets.join("kube-apiserver");
        let mut cmd = Command::new(&apiserver_bin);
        cmd.args(&apiserver_args);
        let apiserver = Proc::spawn("kube-apiserver", cmd, root.join("kube-apiserver.log"));

        let kubeconfig = root.join("kubeconfig");
        fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\n\
                 clusters:\n- name: e2e\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\n\
                 users:\n- name: e2e\n  user:\n    token: {TOKEN}\n\
                 contexts:\n- name: e2e\n  context:\n    cluster: e2e\n    user: e2e\n\
                 current-context: e2e\n"
            ),
        )
        .unwrap();

        let mut cp = ControlPlane {
            apiserver: Some(apiserver),
            etcd,
            port,
            kubeconfig,
            dir,
            apiserver_bin,
            apiserver_args,
            restarts: 0,
        };
        cp.wait_ready(Duration::from_secs(90)).await;
        cp
    }

    /// Kills the API server (etcd, and so every stored object, stays).
    pub fn stop_apiserver(&mut self) {
        drop(self.apiserver.take());
    }

    /// Starts the API server again on the same port and etcd, and waits until it is ready.
    pub async fn restart_apiserver(&mut self) {
        assert!(self.apiserver.is_none(), "stop it first");
        self.restarts += 1;
        let mut cmd = Command::new(&self.apiserver_bin);
        cmd.args(&self.apiserver_args);
        let log = self
            .dir
            .path()
            .join(format!("kube-apiserver-{}.log", self.restarts));
        self.apiserver = Some(Proc::spawn("kube-apiserver", cmd, log));
        self.wait_ready(Duration::from_secs(90)).await;
    }

    /// Polls `/readyz` until 200.
    async fn wait_ready(&mut self, within: Duration) {
        let client = self.client().await;
        let start = Instant::now();
        loop {
            if let Some(a) = self.apiserver.as_mut() {
                a.assert_running();
            }
            self.etcd.assert_running();
            let req = http::Request::get("/readyz").body(Vec::new()).unwrap();
            if let Ok(text) = client.request_text(req).await {
                if text.trim() == "ok" {
                    return;
                }
            }
            assert!(
                start.elapsed() < within,
                "kube-apiserver not ready after {within:?}; last lines of its log:\n{}",
                self.apiserver
                    .as_ref()
                    .map(Proc::log_tail)
                    .unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// A client through the kubeconfig, the way `--kubeconfig` reaches it.
    pub async fn client(&self) -> kube::Client {
        ipam_guard::cluster::live::client(Some(&self.kubeconfig))
            .await
            .expect("client from the e2e kubeconfig")
    }
}

async fn wait_tcp(proc: &mut Proc, port: u16, within: Duration) {
    let start = Instant::now();
    loop {
        proc.assert_running();
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        assert!(
            start.elapsed() < within,
            "nothing listens on {port} after {within:?}:\n{}",
            proc.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls an async condition every 200 ms until it holds or `within` passes.
pub async fn eventually<F, Fut>(what: &str, within: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !cond().await {
        assert!(
            start.elapsed() < within,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The upstream CRDs (unmodified, see crds/SOURCES.txt), compiled in so the test reads nothing
/// outside the crate at run time.
pub const CRDS: &[(&str, &str)] = &[
    (
        "ipaddressclaims",
        include_str!("../../crds/ipam.cluster.x-k8s.io_ipaddressclaims.yaml"),
    ),
    (
        "ipaddresses",
        include_str!("../../crds/ipam.cluster.x-k8s.io_ipaddresses.yaml"),
    ),
    (
        "inclusterippools",
        include_str!("../../crds/ipam.cluster.x-k8s.io_inclusterippools.yaml"),
    ),
    (
        "globalinclusterippools",
        include_str!("../../crds/ipam.cluster.x-k8s.io_globalinclusterippools.yaml"),
    ),
    (
        "metal3 ippools",
        include_str!("../../crds/ipam.metal3.io_ippools.yaml"),
    ),
    (
        "metal3 ipclaims",
        include_str!("../../crds/ipam.metal3.io_ipclaims.yaml"),
    ),
    (
        "metal3 ipaddresses",
        include_str!("../../crds/ipam.metal3.io_ipaddresses.yaml"),
    ),
    (
        "spiderippools",
        include_str!("../../crds/spiderpool.spidernet.io_spiderippools.yaml"),
    ),
    (
        "vspheremachines",
        include_str!("../../crds/infrastructure.cluster.x-k8s.io_vspheremachines.yaml"),
    ),
    (
        "vspheremachinetemplates",
        include_str!("../../crds/infrastructure.cluster.x-k8s.io_vspheremachinetemplates.yaml"),
    ),
];
