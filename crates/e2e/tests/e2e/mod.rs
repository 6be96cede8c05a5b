//! A throwaway control plane for the e2e suites, from envtest-style folders holding
//! `kube-apiserver` (and `etcd`): `$KUBEBUILDER_ASSETS` and every `/usr/local/kubebuilder/*/bin`,
//! each test run once against each API server found (`each_server`). Started on free loopback
//! ports in a temp dir, authenticated with a static token of a `system:masters` user, killed on
//! drop.
//!
//! The flags are what a v1.20+ kube-apiserver needs with no kubelet, no controller manager and no
//! other component: a service-account key pair and issuer (mandatory since 1.20), a service IP
//! range, and the ServiceAccount admission plugin off (nothing creates the `default` account).
#![allow(dead_code)]

pub mod api;
pub mod https;
pub mod measure;
pub mod pki;
pub mod process;
pub mod proxy;
pub mod recorder;
pub mod refuser;

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "ipam-guard-e2e-token";

// === the repository and the binary ===

/// The repository's root, where manifests/, docs/, tests/fixtures/ and the Dockerfiles are, and
/// beside which `../shared` is: the folder above this package that holds crates/e2e. Found
/// rather than fixed as `../..`, because the root package's benches include this harness too.
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("crates/e2e/Cargo.toml").is_file())
        .unwrap_or_else(|| panic!("no folder above {} holds crates/e2e", here.display()))
        .to_path_buf()
}

/// The `ipam-guard` binary the suites start. Cargo hands `CARGO_BIN_EXE_ipam-guard` only to the
/// tests of the package the binary belongs to, and the suites are a package of their own, so:
/// `$IPAM_GUARD_BIN` when set (another build, such as a release one; a relative path is taken
/// from the repository's root), else the binary built once per test process by the cargo that
/// runs the tests, in this test binary's profile and target folder
/// (`<target>/<profile>/deps/<test>` beside `<target>/<profile>/ipam-guard`).
pub fn ipam_guard_bin() -> PathBuf {
    use std::sync::OnceLock;
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("IPAM_GUARD_BIN") {
        Some(bin) => {
            let bin = repo_root().join(bin);
            assert!(
                bin.is_file(),
                "IPAM_GUARD_BIN={}: no such file",
                bin.display()
            );
            bin
        }
        None => build_ipam_guard(),
    })
    .clone()
}

fn build_ipam_guard() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{}: not under <target>/<profile>/deps", exe.display()));
    let target_dir = profile_dir.parent().expect("a target folder");
    // The folder `debug` is the `dev` profile's; every other profile has a folder of its name
    // (`bench` builds into `release`, which is the release profile's).
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(name) => name,
        None => panic!("{}: no profile folder", exe.display()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // Without what cargo sets for a test process, so that the build is the one a plain `cargo
    // build` or `cargo test` makes, not a rebuild of what watches those variables.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_BIN_EXE_")
            || [
                "CARGO",
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
                "LD_LIBRARY_PATH",
            ]
            .contains(&key.as_ref())
        {
            cmd.env_remove(key.as_ref());
        }
    }
    eprintln!("e2e: building ipam-guard ({profile} profile) for the suites");
    let status = cmd
        .current_dir(repo_root())
        .args([
            "build",
            "--quiet",
            "-p",
            "ipam-guard",
            "--bin",
            "ipam-guard",
        ])
        .args(["--profile", profile])
        .arg("--target-dir")
        .arg(target_dir)
        .stdin(Stdio::null())
        .status()
        .expect("run cargo build");
    assert!(
        status.success(),
        "cargo build -p ipam-guard --bin ipam-guard --profile {profile}: {status}"
    );
    let bin = profile_dir.join(format!("ipam-guard{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "cargo built ipam-guard but {} is missing (a --target build puts it elsewhere: set \
         IPAM_GUARD_BIN to the binary)",
        bin.display()
    );
    bin
}

/// A Kubernetes release, as `kube-apiserver --version` prints it (`Kubernetes v1.20.2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    /// `v1.20.2`, `1.36.2`, `Kubernetes v1.20.2` (a build suffix such as `-dirty` is dropped).
    pub fn parse(text: &str) -> Option<Version> {
        let word = text.split_whitespace().find(|w| {
            w.trim_start_matches('v')
                .starts_with(|c: char| c.is_ascii_digit())
        })?;
        let core = word.trim_start_matches('v');
        let core = core.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
        Some(Version {
            major: parts.next()??,
            minor: parts.next()??,
            patch: parts.next().flatten().unwrap_or(0),
        })
    }

    /// At least `1.minor`.
    pub fn at_least(self, minor: u32) -> bool {
        self.major > 1 || (self.major == 1 && self.minor >= minor)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// One real API server the e2e suites run against: a `kube-apiserver` binary, the etcd it is
/// started with, and its version.
#[derive(Debug, Clone)]
pub struct Server {
    pub apiserver: PathBuf,
    pub etcd: PathBuf,
    /// The folder it was found in.
    pub dir: PathBuf,
    pub version: Version,
    /// Whether the full-scale first-sync test (IPAM_GUARD_E2E_SCALE=full) runs at full scale
    /// against this server: against one only, the newest, to keep CI within its time.
    pub full_scale: bool,
}

impl Server {
    /// `v1.20.2 (/tmp/ipam-guard-k8s-assets)`, for messages and the report.
    pub fn label(&self) -> String {
        format!("{} ({})", self.version, self.dir.display())
    }
}

/// Where API servers are looked for, in order: `$KUBEBUILDER_ASSETS`, then envtest's places
/// (`/usr/local/kubebuilder/<version>/bin`, `/usr/local/kubebuilder/bin`).
fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("KUBEBUILDER_ASSETS") {
        dirs.push(PathBuf::from(d));
    }
    let root = Path::new("/usr/local/kubebuilder");
    if let Ok(entries) = fs::read_dir(root) {
        let mut versions: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .collect();
        versions.sort();
        dirs.extend(versions);
    }
    dirs.push(root.join("bin"));
    dirs
}

/// The etcd of a folder that has none: `$KUBEBUILDER_ASSETS/etcd`, else the one on PATH.
fn fallback_etcd() -> Option<PathBuf> {
    let assets = std::env::var_os("KUBEBUILDER_ASSETS")
        .map(|d| PathBuf::from(d).join("etcd"))
        .filter(|p| p.is_file());
    assets.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join("etcd"))
            .find(|p| p.is_file())
    })
}

fn apiserver_version(bin: &Path) -> Version {
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{} --version: {e}", bin.display()));
    let text = String::from_utf8_lossy(&out.stdout);
    Version::parse(&text).unwrap_or_else(|| {
        panic!(
            "{} --version printed no version: {text:?} {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Every API server on this machine, oldest first, each once (by the real path of its binary),
/// or why there is none.
pub fn servers() -> Result<&'static [Server], String> {
    use std::sync::OnceLock;
    static SERVERS: OnceLock<Result<Vec<Server>, String>> = OnceLock::new();
    SERVERS
        .get_or_init(|| {
            let mut seen = std::collections::BTreeSet::new();
            let mut found = Vec::new();
            let mut without_etcd = Vec::new();
            for dir in candidate_dirs() {
                let apiserver = dir.join("kube-apiserver");
                if !apiserver.is_file() {
                    continue;
                }
                let real = fs::canonicalize(&apiserver).unwrap_or_else(|_| apiserver.clone());
                if !seen.insert(real) {
                    continue;
                }
                let etcd = Some(dir.join("etcd"))
                    .filter(|p| p.is_file())
                    .or_else(fallback_etcd);
                let Some(etcd) = etcd else {
                    without_etcd.push(dir.display().to_string());
                    continue;
                };
                found.push(Server {
                    version: apiserver_version(&apiserver),
                    apiserver,
                    etcd,
                    dir,
                    full_scale: false,
                });
            }
            found.sort_by_key(|s| s.version);
            let full = std::env::var("IPAM_GUARD_E2E_SCALE").is_ok_and(|v| v == "full");
            if let Some(newest) = found.last_mut() {
                newest.full_scale = full;
            }
            if found.is_empty() {
                let mut why = "no kube-apiserver: KUBEBUILDER_ASSETS not set (or it holds none), none in /usr/local/kubebuilder/*/bin".to_string();
                if !without_etcd.is_empty() {
                    why = format!(
                        "no etcd beside the kube-apiserver of {} nor on PATH",
                        without_etcd.join(", ")
                    );
                }
                return Err(why);
            }
            Ok(found)
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// The first API server found (benchmarks run against one).
pub fn assets() -> Option<Server> {
    servers().ok()?.first().cloned()
}

/// A line of `$CARGO_TARGET_TMPDIR/e2e-report.txt`: `cargo test` hides what a passing test
/// prints, and `.ci/run` shows that file after the one test run, so CI says against which API
/// servers each e2e test ran, and how long it took.
fn report(line: &str) {
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

/// What the harness adapted for the run in progress (said on its report line): notes, each
/// with the items it names (`CRDs installed without … : ipaddresses, ipaddressclaims`).
type Notes = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<String>)>>>;

tokio::task_local! {
    static NOTES: Notes;
}

/// Says on the report line of the run in progress what was adapted to this server. Outside
/// `each_server` it is only printed.
pub fn note(text: impl Into<String>) {
    note_item(text, None);
}

/// `note` naming one more item the same note applies to (listed once each after a colon).
pub fn note_item(text: impl Into<String>, item: Option<&str>) {
    let text = text.into();
    let kept = NOTES.try_with(|n| {
        let mut n = n.lock().unwrap();
        let at = match n.iter().position(|(t, _)| *t == text) {
            Some(i) => i,
            None => {
                n.push((text.clone(), Vec::new()));
                n.len() - 1
            }
        };
        if let Some(item) = item {
            if !n[at].1.iter().any(|i| i == item) {
                n[at].1.push(item.to_string());
            }
        }
    });
    if kept.is_err() {
        println!("note: {text} {}", item.unwrap_or_default());
    }
}

/// Runs one e2e test once against every API server found (oldest first), each run on the e2e
/// report with the server's version, what was adapted to it and its time. A run that fails does
/// not stop the others; the test then fails naming every server it failed against. Without an
/// API server or without the upstream CRDs the test is skipped, and the report says why.
pub async fn each_server<F, Fut>(test: &str, mut body: F)
where
    F: FnMut(Server) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    use futures::FutureExt;
    let servers = match (servers(), crds()) {
        (Err(why), _) | (Ok(_), Err(why)) => {
            report(&format!("skipped: {test}: {why}"));
            return;
        }
        (Ok(servers), Ok(_)) => servers,
    };
    let mut failed = Vec::new();
    for server in servers {
        println!("== {test} against {}", server.label());
        let notes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let start = Instant::now();
        let run = std::panic::AssertUnwindSafe(body(server.clone())).catch_unwind();
        let result = NOTES.scope(notes.clone(), run).await;
        let took = start.elapsed().as_secs_f64();
        let notes: String = notes
            .lock()
            .unwrap()
            .iter()
            .map(|(text, items)| match items.is_empty() {
                true => format!("; {text}"),
                false => format!("; {text}: {}", items.join(", ")),
            })
            .collect();
        match result {
            Ok(()) => report(&format!(
                "ran: {test} against {} in {took:.0} s{notes}",
                server.label()
            )),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("(a panic without a message)")
                    .to_string();
                report(&format!(
                    "FAILED: {test} against {} after {took:.0} s{notes}",
                    server.label()
                ));
                failed.push(format!("against {}:\n{message}", server.label()));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{test} failed {}",
        failed.join("\n\nand ")
    );
}

/// A line of the e2e report from a test that finds its server itself
/// (`crates/e2e/tests/e2e_image.rs`).
pub fn record(line: &str) {
    report(line);
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
    /// None while stopped (`stop_etcd`).
    pub etcd: Option<Proc>,
    pub port: u16,
    /// Where etcd listens for clients (its v3 JSON gateway too).
    pub etcd_port: u16,
    pub kubeconfig: PathBuf,
    pub dir: tempfile::TempDir,
    apiserver_bin: PathBuf,
    apiserver_args: Vec<String>,
    restarts: u32,
    etcd_bin: PathBuf,
    etcd_args: Vec<String>,
    etcd_restarts: u32,
}

impl ControlPlane {
    pub async fn start(server: &Server) -> ControlPlane {
        ControlPlane::start_with(server, &[]).await
    }

    /// As `start`, with more kube-apiserver flags (feature gates, admission configuration).
    pub async fn start_with(server: &Server, extra_args: &[String]) -> ControlPlane {
        let etcd_port = free_port();
        ControlPlane::start_via(server, extra_args, etcd_port, etcd_port).await
    }

    /// As `start_with`, etcd listening for clients on `etcd_port` and the API server reaching
    /// it through `etcd_via` (a relay the caller runs to `etcd_port`, or `etcd_port` itself).
    pub async fn start_via(
        server: &Server,
        extra_args: &[String],
        etcd_port: u16,
        etcd_via: u16,
    ) -> ControlPlane {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();

        let client_port = etcd_port;
        let peer_port = free_port();
        // Restarts (`restart_etcd`) reuse the same data dir and ports.
        let etcd_args = vec![
            format!("--data-dir={}", root.join("etcd").display()),
            format!("--listen-client-urls=http://127.0.0.1:{client_port}"),
            format!("--advertise-client-urls=http://127.0.0.1:{client_port}"),
            format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-cluster=default=http://127.0.0.1:{peer_port}"),
        ];
        let mut etcd_cmd = Command::new(&server.etcd);
        etcd_cmd.args(&etcd_args);
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
            format!("--etcd-servers=http://127.0.0.1:{etcd_via}"),
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
        let apiserver_bin = server.apiserver.clone();
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
            etcd: Some(etcd),
            port,
            etcd_port,
            kubeconfig,
            dir,
            apiserver_bin,
            apiserver_args,
            restarts: 0,
            etcd_bin: server.etcd.clone(),
            etcd_args,
            etcd_restarts: 0,
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

    /// Kills etcd (SIGKILL, as a node loss ends it); its data dir stays.
    pub fn stop_etcd(&mut self) {
        drop(self.etcd.take());
    }

    /// Starts etcd again on the same data dir and ports, and waits until it takes connections.
    pub async fn restart_etcd(&mut self) {
        assert!(self.etcd.is_none(), "stop it first");
        self.etcd_restarts += 1;
        let mut cmd = Command::new(&self.etcd_bin);
        cmd.args(&self.etcd_args);
        let log = self
            .dir
            .path()
            .join(format!("etcd-{}.log", self.etcd_restarts));
        let mut etcd = Proc::spawn("etcd", cmd, log);
        wait_tcp(&mut etcd, self.etcd_port, Duration::from_secs(30)).await;
        self.etcd = Some(etcd);
    }

    /// Polls `/readyz` until 200.
    pub async fn wait_ready(&mut self, within: Duration) {
        let client = self.client().await;
        let start = Instant::now();
        loop {
            if let Some(a) = self.apiserver.as_mut() {
                a.assert_running();
            }
            if let Some(e) = self.etcd.as_mut() {
                e.assert_running();
            }
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

/// One upstream CRD the e2e suites install: the kind of the table it defines, read unmodified
/// from `../shared/fixtures/crds/` (see SOURCES.txt there).
pub struct Crd {
    pub kind: ipam_guard::kinds::Kind,
    /// The file name, for messages.
    pub file: String,
    pub text: String,
}

/// Where the upstream CRDs are: `../shared` beside the project root, read in place at run time
/// (the repository holds no upstream file).
pub fn crd_dir() -> PathBuf {
    repo_root().join("../shared/fixtures/crds")
}

/// The CRD of every kind of the table (`{group}_{plural}.yaml`), or why they cannot be had: the
/// suites skip without `../shared`. A kind whose file is missing there is an error, not a skip.
pub fn crds() -> Result<&'static [Crd], String> {
    use std::sync::OnceLock;
    static CRDS: OnceLock<Result<Vec<Crd>, String>> = OnceLock::new();
    CRDS.get_or_init(|| {
        let dir = crd_dir();
        if !dir.is_dir() {
            return Err(format!(
                "{} is not there (the upstream CRDs the e2e suites install are read there, in place)",
                dir.display()
            ));
        }
        Ok(ipam_guard::kinds::KINDS
            .iter()
            .map(|k| {
                let file = format!("{}_{}.yaml", k.group, k.plural);
                let text = fs::read_to_string(dir.join(&file)).unwrap_or_else(|e| {
                    panic!("the CRD of {} ({}): {e}", k.name, dir.join(&file).display())
                });
                Crd {
                    kind: k.kind,
                    file,
                    text,
                }
            })
            .collect())
    })
    .as_deref()
    .map_err(Clone::clone)
}

/// The CRD of one kind (the suites call it inside `each_server`, which skips without them).
pub fn crd(kind: ipam_guard::kinds::Kind) -> &'static Crd {
    crds()
        .expect("each_server skips without the CRDs")
        .iter()
        .find(|c| c.kind == kind)
        .expect("every kind of the table has a CRD")
}
