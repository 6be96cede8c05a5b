//! The container image the install pulls, started as `manifests/deployment.yaml` starts it, against
//! a real kube-apiserver (issue 27).
//!
//! Runs when `KUBEBUILDER_ASSETS` names a control plane (tests/e2e) and a container engine can be
//! had: the one `DOCKER_HOST` names, or a `dockerd` this test starts itself (as root, from Debian's
//! `docker.io`, with its own data root under `/var/cache/ipam-guard-image/`, stopped by its PID at
//! the end). Otherwise it records why it skipped in the e2e report, as the other e2e suites do.
//!
//! The image is `Dockerfile.prebuilt` around `cargo build --release`'s binary: no registry is
//! reachable here, so the runtime base is the published one only if the engine already holds it
//! (`gcr.io/distroless/cc-debian12:nonroot`); otherwise a Debian 12 (bookworm) base made with
//! `debootstrap --variant=minbase` from the machine's own Debian mirror and imported, the rootfs
//! tarball cached beside the data root so a reused machine never bootstraps twice.
//!
//! The container gets what the kubelet would give the Deployment's pod, read from the file: its
//! args and env (the downward API's fields filled in), user and group, read-only root filesystem,
//! no capabilities, no privilege escalation, the default seccomp profile, the memory and CPU
//! limits, the serving certificate read-only at the mount path, and the in-cluster API config: a
//! ServiceAccount token (TokenRequest for the `ipam-guard` ServiceAccount of manifests/rbac.yaml,
//! so the install's own RBAC is what the view and the decider election run with), `ca.crt` and
//! `namespace` at `/var/run/secrets/kubernetes.io/serviceaccount/`, and
//! `KUBERNETES_SERVICE_HOST`/`_PORT`. The one departure: the host's network (`--network host`),
//! since the API server listens on loopback; the listeners are the Deployment's own ports.

mod e2e;
mod server_support;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use e2e::api::{create, create_namespace, create_path, in_cluster_pool, install_crds_but};
use e2e::{eventually, record, ControlPlane};
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};
use server_support::{post, Conn, Proto};

const TEST: &str = "e2e_image_runs_as_the_deployment_runs_it";
const IMAGE: &str = "local/ipam-guard:e2e";
const CONTAINER: &str = "ipam-guard-e2e-image";
const PUBLISHED_RUNTIME: &str = "gcr.io/distroless/cc-debian12:nonroot";
const DEBIAN_BASE: &str = "local/debian:bookworm";
const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The namespace of the objects the review is about (the install's own is read from the files).
const NS: &str = "e2e";
const WAIT: Duration = Duration::from_secs(120);

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where the engine's data root and the bootstrapped base live between runs.
fn cache_dir() -> PathBuf {
    std::env::var_os("IPAM_GUARD_IMAGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/ipam-guard-image"))
}

/// The socket, PID file and exec root of the engine this test starts (short: a unix socket path
/// is limited to 107 bytes).
const RUN_DIR: &str = "/run/ipam-guard-image";

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let uids = s.lines().find(|l| l.starts_with("Uid:"))?.to_string();
            Some(uids.split_whitespace().nth(2)? == "0")
        })
        .unwrap_or(false)
}

// === The engine ===

/// A container engine: the client and the daemon it talks to. When this test started the daemon
/// (`daemon` is Some), dropping the engine stops it by its PID.
struct Engine {
    client: PathBuf,
    host: String,
    daemon: Option<Child>,
    how: String,
}

impl Engine {
    fn docker(&self) -> Command {
        let mut cmd = Command::new(&self.client);
        // The classic builder, whatever the client's default: Debian's engine has no buildx.
        cmd.env("DOCKER_HOST", &self.host)
            .env("DOCKER_BUILDKIT", "0")
            .stdin(Stdio::null());
        cmd
    }

    fn output(&self, args: &[&str]) -> Output {
        self.docker()
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running docker {args:?}: {e}"))
    }

    /// Runs `docker ARGS`, panics with its output unless it succeeds, returns its stdout.
    #[track_caller]
    fn ok(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(
            out.status.success(),
            "docker {} failed ({}):\n{}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn answers(&self) -> Result<(), String> {
        let out = self.output(&["version", "--format", "{{.Server.Version}}"]);
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    fn has_image(&self, image: &str) -> bool {
        self.output(&["image", "inspect", image]).status.success()
    }

    /// The engine `DOCKER_HOST` names, one already answering on this test's socket, or one this
    /// test starts. Err: why none can be had, for the skip line.
    fn get() -> Result<Engine, String> {
        // The engine's own client first: another docker CLI on PATH (a newer one, or one without
        // the classic builder) may not match Debian's 20.10 engine.
        let client = std::env::var_os("IPAM_GUARD_DOCKER")
            .map(PathBuf::from)
            .or_else(|| Some(PathBuf::from("/usr/bin/docker")).filter(|p| p.is_file()))
            .or_else(|| find_on_path("docker"))
            .ok_or("no docker client (apt-get install docker.io)")?;
        if let Some(host) = std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()) {
            let engine = Engine {
                client,
                how: format!("the engine at DOCKER_HOST={host}"),
                host,
                daemon: None,
            };
            engine
                .answers()
                .map_err(|e| format!("DOCKER_HOST={} does not answer: {e}", engine.host))?;
            return Ok(engine);
        }
        let run = Path::new(RUN_DIR);
        let host = format!("unix://{}", run.join("docker.sock").display());
        let mut engine = Engine {
            client,
            how: format!("an engine already running at {host} (left running)"),
            host,
            daemon: None,
        };
        if engine.answers().is_ok() {
            return Ok(engine);
        }
        let dockerd = find_on_path("dockerd")
            .or_else(|| Some(PathBuf::from("/usr/sbin/dockerd")).filter(|p| p.is_file()))
            .ok_or("no container engine: DOCKER_HOST is not set and dockerd is not installed (apt-get install docker.io)")?;
        if !is_root() {
            return Err(
                "no container engine: DOCKER_HOST is not set and starting dockerd needs root"
                    .to_string(),
            );
        }
        let cache = cache_dir();
        for dir in [cache.as_path(), run] {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let log_path = cache.join("dockerd.log");
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        // No bridge, no iptables, no forwarding: containers get `none` or the host's network,
        // and the machine's network setup is left as it was.
        let started = Instant::now();
        let child = Command::new(&dockerd)
            .arg(format!("--data-root={}", cache.join("docker").display()))
            .arg(format!("--exec-root={}", run.join("exec").display()))
            .arg(format!("--pidfile={}", run.join("dockerd.pid").display()))
            .arg(format!("--host={}", engine.host))
            .args([
                "--storage-driver=overlay2",
                "--iptables=false",
                "--ip-forward=false",
                "--bridge=none",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().map_err(|e| e.to_string())?))
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", dockerd.display()))?;
        engine.how = format!("dockerd started by this test (PID {})", child.id());
        engine.daemon = Some(child);
        loop {
            if let Some(Ok(Some(status))) = engine.daemon.as_mut().map(Child::try_wait) {
                engine.daemon = None;
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                return Err(format!(
                    "dockerd exited at start ({status}); {}:\n{}",
                    log_path.display(),
                    tail(&log, 10)
                ));
            }
            if engine.answers().is_ok() {
                engine.how +=
                    &format!(", answering after {:.1} s", started.elapsed().as_secs_f64());
                return Ok(engine);
            }
            if started.elapsed() > Duration::from_secs(60) {
                // Dropping the engine stops the daemon.
                return Err(format!(
                    "dockerd did not answer within 60 s (log: {})",
                    log_path.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let Some(mut child) = self.daemon.take() else {
            return;
        };
        // SIGTERM by PID: dockerd stops its containers and the containerd it started, then exits.
        let pid = child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("dockerd (PID {pid}) did not stop within 60 s of SIGTERM: killing it");
        let _ = child.kill();
        let _ = child.wait();
    }
}

// === The runtime base ===

/// The base image for `RUNTIME_IMAGE`: `IPAM_GUARD_RUNTIME_IMAGE`, else the published one if the
/// engine holds it, else the bootstrapped Debian (imported from the cached rootfs, bootstrapped
/// first when there is none). Err: why there is none, for the skip line.
fn runtime_base(engine: &Engine) -> Result<String, String> {
    if let Ok(image) = std::env::var("IPAM_GUARD_RUNTIME_IMAGE") {
        assert!(
            engine.has_image(&image),
            "IPAM_GUARD_RUNTIME_IMAGE={image}: the engine does not hold that image"
        );
        return Ok(image);
    }
    for image in [PUBLISHED_RUNTIME, DEBIAN_BASE] {
        if engine.has_image(image) {
            return Ok(image.to_string());
        }
    }
    let tarball = cache_dir().join("debian-bookworm-minbase.tar");
    if !tarball.is_file() {
        debootstrap(&tarball)?;
    }
    engine.ok(&["import", &tarball.display().to_string(), DEBIAN_BASE]);
    Ok(DEBIAN_BASE.to_string())
}

/// The Debian mirror apt already uses (`IPAM_GUARD_DEBIAN_MIRROR` overrides): the first `URIs:`
/// of a deb822 source carrying the `bookworm` suite, or the first `deb URL bookworm` line.
fn debian_mirror() -> Option<String> {
    if let Ok(m) = std::env::var("IPAM_GUARD_DEBIAN_MIRROR") {
        return Some(m);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir("/etc/apt/sources.list.d")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for stanza in text.split("\n\n") {
            let field = |name: &str| {
                stanza
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(str::trim)
                    .map(str::to_string)
            };
            let is_bookworm =
                field("Suites:").is_some_and(|s| s.split_whitespace().any(|s| s == "bookworm"));
            if is_bookworm
                && field("Types:").is_some_and(|t| t.split_whitespace().any(|t| t == "deb"))
            {
                if let Some(uri) =
                    field("URIs:").and_then(|u| u.split_whitespace().next().map(str::to_string))
                {
                    return Some(uri);
                }
            }
        }
    }
    let list = std::fs::read_to_string("/etc/apt/sources.list").unwrap_or_default();
    list.lines().find_map(|l| {
        let words: Vec<&str> = l.split_whitespace().collect();
        (words.len() >= 3 && words[0] == "deb" && words[2] == "bookworm")
            .then(|| words[1].to_string())
    })
}

/// `debootstrap --variant=minbase bookworm` into a scratch dir, without apt's downloaded packages
/// and lists (80 MB a runtime base never reads), tarred to `tarball`.
fn debootstrap(tarball: &Path) -> Result<(), String> {
    let debootstrap = find_on_path("debootstrap")
        .or_else(|| Some(PathBuf::from("/usr/sbin/debootstrap")).filter(|p| p.is_file()))
        .ok_or("no runtime base: the engine holds neither the published base nor local/debian:bookworm, and debootstrap is not installed (apt-get install debootstrap)")?;
    let mirror = debian_mirror().ok_or(
        "no runtime base: no Debian bookworm mirror in /etc/apt (set IPAM_GUARD_DEBIAN_MIRROR)",
    )?;
    let cache = tarball.parent().expect("the cache dir");
    std::fs::create_dir_all(cache).map_err(|e| e.to_string())?;
    let rootfs = cache.join("bookworm-rootfs.tmp");
    let _ = std::fs::remove_dir_all(&rootfs);
    let log = cache.join("debootstrap.log");
    let out = Command::new(debootstrap)
        .args(["--variant=minbase", "bookworm"])
        .arg(&rootfs)
        .arg(&mirror)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run debootstrap: {e}"))?;
    let _ = std::fs::write(
        &log,
        [out.stdout.as_slice(), out.stderr.as_slice()].concat(),
    );
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&rootfs);
        return Err(format!(
            "no runtime base: debootstrap from {mirror} failed ({}), log {}:\n{}",
            out.status,
            log.display(),
            tail(&String::from_utf8_lossy(&out.stderr), 5)
        ));
    }
    for dir in ["var/cache/apt/archives", "var/lib/apt/lists"] {
        for entry in std::fs::read_dir(rootfs.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    let partial = tarball.with_extension("tar.tmp");
    let status = Command::new("tar")
        .arg("-C")
        .arg(&rootfs)
        .arg("-cf")
        .arg(&partial)
        .arg(".")
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    let _ = std::fs::remove_dir_all(&rootfs);
    if !status.success() {
        return Err(format!("tar of the bootstrapped rootfs failed ({status})"));
    }
    std::fs::rename(&partial, tarball).map_err(|e| e.to_string())
}

// === The binary and the image ===

/// The release binary: `IPAM_GUARD_IMAGE_BINARY` (what `.ci/run` just built), or else what
/// `cargo build --release --locked --bin ipam-guard` names.
fn release_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("IPAM_GUARD_IMAGE_BINARY") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "IPAM_GUARD_IMAGE_BINARY={}: no such file",
            path.display()
        );
        return path;
    }
    // The cargo on PATH with the variables `cargo test` sets for tests removed: a dependency's
    // build script that watches one of them (LD_LIBRARY_PATH is one cargo test changes) would
    // otherwise rebuild the release tree here and again at the next plain `cargo build --release`.
    let mut cmd = Command::new("cargo");
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if (key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_TARGET_DIR")
            || key == "CARGO"
            || key == "LD_LIBRARY_PATH"
            || key.starts_with("RUSTUP_")
            || key == "RUST_RECURSION_COUNT"
        {
            cmd.env_remove(key.as_ref());
        }
    }
    let out = cmd
        .current_dir(repo())
        .args([
            "build",
            "--release",
            "--locked",
            "--bin",
            "ipam-guard",
            "--message-format=json",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run cargo build --release");
    assert!(
        out.status.success(),
        "cargo build --release failed:\n{}",
        tail(&String::from_utf8_lossy(&out.stderr), 30)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "ipam-guard")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo named the ipam-guard executable")
}

/// The instructions of a Dockerfile's last stage (from its last FROM), comments and blank lines
/// left out, continuation lines joined.
fn last_stage(text: &str) -> Vec<String> {
    let mut instructions = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                instructions.push(std::mem::take(&mut current));
            }
        }
    }
    let from = instructions
        .iter()
        .rposition(|i| i.starts_with("FROM "))
        .expect("a FROM");
    instructions.split_off(from)
}

/// `Dockerfile.prebuilt` is the runtime stage of `Dockerfile` with the binary from the build
/// context: the same base (argument and default), user, ports, entrypoint and command. So the
/// image CI runs differs from the published one only in where the binary was built (and in the
/// base, when the published one cannot be had).
#[test]
fn prebuilt_dockerfile_is_the_published_runtime_stage() {
    let read = |name: &str| std::fs::read_to_string(repo().join(name)).unwrap();
    let published = read("Dockerfile");
    let prebuilt = read("Dockerfile.prebuilt");
    let arg = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("ARG RUNTIME_IMAGE="))
            .map(str::to_string)
    };
    assert_eq!(
        arg(&published),
        Some(format!("ARG RUNTIME_IMAGE={PUBLISHED_RUNTIME}"))
    );
    assert_eq!(arg(&prebuilt), arg(&published));
    assert!(
        published.contains("ARG BUILDER_IMAGE=rust:1.95-bookworm")
            && published.contains("FROM ${BUILDER_IMAGE} AS build"),
        "the published path builds in the builder image named by BUILDER_IMAGE"
    );
    // The classic builder (Debian's engine) reads neither BuildKit's mounts nor its heredocs,
    // nor a `# syntax=` frontend.
    for text in [&published, &prebuilt] {
        let instructions: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        for i in &instructions {
            assert!(!i.contains("--mount"), "BuildKit-only RUN --mount: {i}");
            assert!(!i.contains("<<"), "BuildKit-only heredoc: {i}");
        }
        assert!(!text.contains("# syntax="), "a BuildKit frontend directive");
    }
    let (p, b) = (last_stage(&published), last_stage(&prebuilt));
    assert_eq!(p[0], "FROM ${RUNTIME_IMAGE}");
    assert_eq!(b[0], "FROM ${RUNTIME_IMAGE}");
    assert!(p.contains(&"COPY --from=build /ipam-guard /ipam-guard".to_string()));
    assert!(b.contains(&"COPY ipam-guard /ipam-guard".to_string()));
    let rest = |stage: &[String]| -> Vec<String> {
        stage[1..]
            .iter()
            .filter(|i| !i.starts_with("COPY "))
            .cloned()
            .collect()
    };
    assert_eq!(rest(&p), rest(&b), "the two runtime stages differ");
}

// === What the Deployment asks for ===

fn deployment() -> Value {
    let text = std::fs::read_to_string(repo().join("manifests/deployment.yaml")).unwrap();
    serde_yaml_ng::from_str(&text).expect("manifests/deployment.yaml is YAML")
}

/// The documents of a manifest file.
fn documents(name: &str) -> Vec<Value> {
    use serde::Deserialize;
    let text = std::fs::read_to_string(repo().join("manifests").join(name)).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{name}: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

/// Creates a manifest object through the API, at the collection its apiVersion and kind name.
async fn apply(client: &kube::Client, obj: &Value) {
    let api_version = obj["apiVersion"].as_str().unwrap();
    let kind = obj["kind"].as_str().unwrap();
    let root = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    // The plurals of every kind the install's namespace and RBAC files hold.
    let plural = format!("{}s", kind.to_lowercase());
    let path = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{root}/namespaces/{ns}/{plural}"),
        None => format!("{root}/{plural}"),
    };
    create_path(client, &path, obj).await.expect(201);
}

/// `256Mi` → bytes (`Ki`, `Mi`, `Gi` or none).
fn memory_bytes(q: &str) -> u64 {
    let (n, unit) = q
        .find(|c: char| !c.is_ascii_digit())
        .map_or((q, ""), |i| q.split_at(i));
    let n: u64 = n.parse().unwrap_or_else(|_| panic!("memory {q:?}"));
    n * match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => panic!("memory unit of {q:?}: the test knows Ki, Mi, Gi"),
    }
}

/// `500m` → `0.5`, `2` → `2`.
fn cpus(q: &str) -> String {
    match q.strip_suffix('m') {
        Some(milli) => {
            let m: u32 = milli.parse().unwrap_or_else(|_| panic!("cpu {q:?}"));
            format!("{}.{:03}", m / 1000, m % 1000)
        }
        None => q.to_string(),
    }
}

/// The `docker run` flags that give the container what the kubelet gives the Deployment's pod,
/// each read from the Deployment; a setting the test cannot reproduce fails it.
struct Pod {
    flags: Vec<String>,
    args: Vec<String>,
    cert_mount: String,
    grace: u64,
}

fn pod(api_port: u16, certs: &Path, sa: &Path) -> Pod {
    let d = deployment();
    let namespace = d["metadata"]["namespace"].as_str().unwrap().to_string();
    let spec = &d["spec"]["template"]["spec"];
    let c = spec["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "ipam-guard")
        .expect("the ipam-guard container");
    assert!(
        c.get("command").is_none(),
        "args only: the image's ENTRYPOINT runs"
    );
    let sc = |key: &str| -> Value {
        c["securityContext"]
            .get(key)
            .or_else(|| spec["securityContext"].get(key))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut flags: Vec<String> = Vec::new();
    let user = sc("runAsUser").as_u64().expect("runAsUser");
    let group = sc("runAsGroup").as_u64().expect("runAsGroup");
    flags.push(format!("--user={user}:{group}"));
    if let Some(fs_group) = spec["securityContext"]["fsGroup"].as_u64() {
        flags.push(format!("--group-add={fs_group}"));
    }
    assert_eq!(sc("readOnlyRootFilesystem"), true);
    flags.push("--read-only".into());
    assert_eq!(sc("allowPrivilegeEscalation"), false);
    flags.push("--security-opt=no-new-privileges".into());
    assert_eq!(sc("capabilities")["drop"], json!(["ALL"]));
    assert!(sc("capabilities").get("add").is_none());
    flags.push("--cap-drop=ALL".into());
    // RuntimeDefault: the engine's default seccomp profile, which `docker run` applies unasked.
    assert_eq!(sc("seccompProfile")["type"], "RuntimeDefault");
    let limits = &c["resources"]["limits"];
    flags.push(format!(
        "--memory={}b",
        memory_bytes(limits["memory"].as_str().unwrap())
    ));
    flags.push(format!("--cpus={}", cpus(limits["cpu"].as_str().unwrap())));

    let pod_name = "ipam-guard-e2e-image";
    for e in c["env"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap();
        let value = match (
            e["value"].as_str(),
            e["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        ) {
            (Some(v), _) => v.to_string(),
            (None, Some("metadata.name")) => pod_name.to_string(),
            (None, Some("metadata.namespace")) => namespace.clone(),
            // The host's network: the pod's address is loopback.
            (None, Some("status.podIP")) => "127.0.0.1".to_string(),
            _ => panic!("env {name}: the test cannot fill {e}"),
        };
        flags.push(format!("--env={name}={value}"));
    }
    // What the kubelet adds for the in-cluster config.
    flags.push("--env=KUBERNETES_SERVICE_HOST=127.0.0.1".into());
    flags.push(format!("--env=KUBERNETES_SERVICE_PORT={api_port}"));
    flags.push(format!("--volume={}:{SA_DIR}:ro", sa.display()));

    let volumes = spec["volumes"].as_array().unwrap();
    let mounts = c["volumeMounts"].as_array().unwrap();
    assert_eq!(
        mounts.len(),
        1,
        "the test mounts the serving certificate only"
    );
    let mount = &mounts[0];
    let volume = volumes
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the mounted volume");
    assert!(
        volume["secret"].is_object(),
        "the certificate comes from a Secret"
    );
    assert_eq!(mount["readOnly"], true);
    let cert_mount = mount["mountPath"].as_str().unwrap().to_string();
    flags.push(format!("--volume={}:{cert_mount}:ro", certs.display()));

    let args: Vec<String> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    Pod {
        flags,
        args,
        cert_mount,
        grace: spec["terminationGracePeriodSeconds"].as_u64().unwrap(),
    }
}

/// The port of the Deployment's `--FLAG=:PORT` argument.
fn listen_port(args: &[String], flag: &str) -> u16 {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("{flag}=")))
        .and_then(|v| v.rsplit_once(':'))
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("the Deployment passes {flag}=:PORT"))
}

/// Files as a Secret volume with `defaultMode` and the pod's `fsGroup` leave them: group-owned by
/// `group`, mode `mode`, in a directory anyone may enter.
fn write_files(dir: &Path, files: &[(&str, &[u8])], group: u32, mode: u32) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        std::os::unix::fs::chown(&path, Some(0), Some(group)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// A CA and a serving certificate with server and client auth (the decider's peer channel uses
/// it both ways), as cert-manager issues `certificate.yaml`'s: tls.crt, tls.key, ca.crt.
fn serving_certificate(namespace: &str) -> (Vec<(&'static str, Vec<u8>)>, CertificateDer<'static>) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, "ipam-guard e2e image CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec![
        format!("ipam-guard-webhook.{namespace}.svc"),
        "localhost".to_string(),
        "127.0.0.1".to_string(),
    ])
    .unwrap();
    leaf.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    leaf.use_authority_key_identifier_extension = true;
    let leaf = leaf.signed_by(&key, &issuer).unwrap();
    (
        vec![
            ("tls.crt", leaf.pem().into_bytes()),
            ("tls.key", key.serialize_pem().into_bytes()),
            ("ca.crt", ca_cert.pem().into_bytes()),
        ],
        ca_cert.der().clone(),
    )
}

/// The CA the API server's self-signed serving certificate chains to: the last certificate of the
/// `apiserver.crt` it wrote into its `--cert-dir` (leaf first, then its CA).
fn apiserver_ca(cp: &ControlPlane) -> Vec<u8> {
    let text =
        std::fs::read_to_string(cp.dir.path().join("apiserver-certs/apiserver.crt")).unwrap();
    let begin = text
        .rfind("-----BEGIN CERTIFICATE-----")
        .expect("a certificate in apiserver.crt");
    text.as_bytes()[begin..].to_vec()
}

/// Removes the container (and the image this test built) however the test ends.
struct Cleanup<'a>(&'a Engine);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = self.0.output(&["rm", "--force", CONTAINER]);
        let _ = self.0.output(&["image", "rm", "--force", IMAGE]);
    }
}

fn review(obj: &Value) -> Value {
    let (group, version) = obj["apiVersion"].as_str().unwrap().split_once('/').unwrap();
    let name = obj["metadata"]["name"].as_str().unwrap();
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{name}"),
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "resource": {"group": group, "version": version, "resource": "inclusterippools"},
            "operation": "CREATE", "namespace": NS, "name": name,
            "userInfo": {"username": "e2e"},
            "object": obj, "dryRun": false
        }
    })
}

/// POSTs a review to /validate until it is decided (allowed, or denied by a rule): right after
/// readiness the replica may not yet hold the decider lease and answers 503.
async fn decide(webhook: SocketAddr, ca: &CertificateDer<'static>, obj: &Value) -> Value {
    let body = serde_json::to_vec(&review(obj)).unwrap();
    let start = Instant::now();
    loop {
        let mut conn = Conn::open(webhook, ca, Proto::H1)
            .await
            .expect("HTTPS to the container's webhook port");
        let reply = conn
            .send(post("/validate", Some("application/json"), body.clone()))
            .await
            .expect("an answer");
        assert_eq!(reply.status, 200, "{}", reply.text());
        let answer = reply.json()["response"].clone();
        if answer["allowed"] == true || answer["status"]["code"] != 503 {
            return answer;
        }
        assert!(
            start.elapsed() < WAIT,
            "no decision within {WAIT:?}: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_image_runs_as_the_deployment_runs_it() {
    let Some(assets) = e2e::assets() else {
        record(&format!(
            "skipped: {TEST}: KUBEBUILDER_ASSETS not set (or it holds no kube-apiserver and etcd)"
        ));
        return;
    };
    let engine = match Engine::get() {
        Ok(engine) => engine,
        Err(why) => {
            record(&format!("skipped: {TEST}: {why}"));
            return;
        }
    };
    let base = match runtime_base(&engine) {
        Ok(base) => base,
        Err(why) => {
            record(&format!("skipped: {TEST}: {why}"));
            return;
        }
    };
    record(&format!(
        "ran: {TEST} against {} with {} on {base}",
        assets.label(),
        engine.how
    ));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _cleanup = Cleanup(&engine);
    let _ = engine.output(&["rm", "--force", CONTAINER]);

    // --- the image: Dockerfile.prebuilt around the release binary ---
    let binary = release_binary();
    let context = tempfile::tempdir().unwrap();
    let in_image = context.path().join("ipam-guard");
    // As README.md and Dockerfile do: without the debug info, with the symbols.
    let strip = Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&in_image)
        .arg(&binary)
        .status();
    assert!(
        strip.as_ref().is_ok_and(|s| s.success()),
        "strip --strip-debug {} (binutils): {strip:?}",
        binary.display()
    );
    let build_started = Instant::now();
    engine.ok(&[
        "build",
        "--network=none",
        "--file",
        &repo().join("Dockerfile.prebuilt").display().to_string(),
        "--build-arg",
        &format!("RUNTIME_IMAGE={base}"),
        "--tag",
        IMAGE,
        &context.path().display().to_string(),
    ]);
    let build_time = build_started.elapsed();
    let config: Value = serde_json::from_str(&engine.ok(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config}}",
        IMAGE,
    ]))
    .unwrap();
    assert_eq!(config["User"], "65532:65532");
    assert_eq!(config["Entrypoint"], json!(["/ipam-guard"]));
    assert_eq!(config["Cmd"], json!(["serve"]));
    let image_size: u64 = engine
        .ok(&["image", "inspect", "--format", "{{.Size}}", IMAGE])
        .parse()
        .unwrap();
    let base_size: u64 = engine
        .ok(&["image", "inspect", "--format", "{{.Size}}", &base])
        .parse()
        .unwrap();

    // --- the cluster: CRDs, the install's namespace and RBAC, a pool to conflict with ---
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    // Cluster API's IPAddress and IPAddressClaim CRDs carry `default: ""`, which a v1.20 API
    // server refuses; the view watches whatever is installed, and the review below is about
    // InClusterIPPools.
    install_crds_but(&client, &[]).await;
    for obj in documents("namespace.yaml")
        .iter()
        .chain(documents("rbac.yaml").iter())
    {
        apply(&client, obj).await;
    }
    create_namespace(&client, NS).await;
    create(
        &client,
        &in_cluster_pool(NS, "pool-a", "10.0.0.10-10.0.0.30", "10.0.0.1"),
        false,
    )
    .await
    .expect(201);

    // --- what the kubelet would mount: the ServiceAccount's token and the serving certificate ---
    let scratch = tempfile::tempdir().unwrap();
    std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = deployment();
    let namespace = d["metadata"]["namespace"].as_str().unwrap();
    let pod_spec = &d["spec"]["template"]["spec"];
    let account = pod_spec["serviceAccountName"].as_str().unwrap();
    let token = create_path(
        &client,
        &format!("/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"),
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600}}),
    )
    .await;
    token.expect(201);
    let token = token.body["status"]["token"].as_str().unwrap().to_string();
    let sa = scratch.path().join("serviceaccount");
    // A projected service-account volume: mode 0644 unless the pod says otherwise.
    write_files(
        &sa,
        &[
            ("token", token.as_bytes()),
            ("ca.crt", &apiserver_ca(&cp)),
            ("namespace", namespace.as_bytes()),
        ],
        65532,
        0o644,
    );
    let certs = scratch.path().join("serving-certs");
    let (cert_files, ca_der) = serving_certificate(namespace);
    let mode = pod_spec["volumes"][0]["secret"]["defaultMode"]
        .as_u64()
        .unwrap_or(0o644) as u32;
    let fs_group = pod_spec["securityContext"]["fsGroup"].as_u64().unwrap_or(0) as u32;
    let files: Vec<(&str, &[u8])> = cert_files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    write_files(&certs, &files, fs_group, mode);
    let pod = pod(cp.port, &certs, &sa);
    assert_eq!(pod.cert_mount, "/tmp/k8s-webhook-server/serving-certs");

    let webhook = SocketAddr::from(([127, 0, 0, 1], listen_port(&pod.args, "--listen")));
    let probes = SocketAddr::from(([127, 0, 0, 1], listen_port(&pod.args, "--probe-listen")));
    let metrics = SocketAddr::from(([127, 0, 0, 1], listen_port(&pod.args, "--metrics-listen")));
    let peer = SocketAddr::from(([127, 0, 0, 1], listen_port(&pod.args, "--peer-listen")));
    for addr in [webhook, probes, metrics, peer] {
        // The host's network: the Deployment's ports must be free on this machine.
        assert!(
            std::net::TcpListener::bind(("0.0.0.0", addr.port())).is_ok(),
            "port {} is taken on this machine; the container listens on the Deployment's ports \
             with the host's network",
            addr.port()
        );
    }

    // --- start it as the kubelet would, and wait for /readyz ---
    let mut run: Vec<String> = vec![
        "run".into(),
        "--detach".into(),
        format!("--name={CONTAINER}"),
        "--network=host".into(),
    ];
    run.extend(pod.flags.iter().cloned());
    run.push(IMAGE.into());
    run.extend(pod.args.iter().cloned());
    let run: Vec<&str> = run.iter().map(String::as_str).collect();
    let started = Instant::now();
    engine.ok(&run);
    let logs = || {
        let out = engine.output(&["logs", CONTAINER]);
        tail(
            &(String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr)),
            40,
        )
    };
    loop {
        if let Ok((200, _)) = server_support::http_get(probes, "/readyz").await {
            break;
        }
        let running = engine.ok(&["inspect", "--format", "{{.State.Running}}", CONTAINER]);
        assert_eq!(running, "true", "the container stopped:\n{}", logs());
        assert!(
            started.elapsed() < WAIT,
            "not ready within {WAIT:?}:\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ready_after = started.elapsed();

    // --- a review over HTTPS, answered from the live view ---
    let overlapping = in_cluster_pool(NS, "pool-b", "10.0.0.25-10.0.0.40", "10.0.0.1");
    let answer = decide(webhook, &ca_der, &overlapping).await;
    assert_eq!(answer["allowed"], false, "{answer}");
    assert_eq!(answer["uid"], "uid-pool-b");
    let text = answer.to_string();
    assert!(
        text.contains("overlaps InClusterIPPool e2e/pool-a") && text.contains("[ipam-guard P10]"),
        "{answer}"
    );
    let apart = in_cluster_pool(NS, "pool-c", "10.0.1.10-10.0.1.30", "10.0.1.1");
    let answer = decide(webhook, &ca_der, &apart).await;
    assert_eq!(answer["allowed"], true, "{answer}");

    // --- metrics: the view and the decisions just made ---
    let (status, body) = server_support::http_get(metrics, "/metrics").await.unwrap();
    assert_eq!(status, 200);
    assert!(
        body.lines().any(|l| l == "ipam_guard_view_synced 1"),
        "{body}"
    );
    assert!(
        body.lines()
            .any(|l| l.starts_with("ipam_guard_decisions_total{")
                && l.contains("decision=\"denied\"")
                && l.contains("rule=\"P10\"")),
        "{body}"
    );
    // The decider was elected through the Lease the install's Role allows.
    eventually("the replica to hold the decider lease", WAIT, || async {
        matches!(
            server_support::http_get(metrics, "/metrics").await,
            Ok((200, b)) if b.lines().any(|l| l == "ipam_guard_decider_is_leader 1")
        )
    })
    .await;

    // --- SIGTERM within the grace period: exit 0, the shutdown in the log ---
    let stop_started = Instant::now();
    engine.ok(&["stop", "--time", &pod.grace.to_string(), CONTAINER]);
    let stopped_after = stop_started.elapsed();
    let state: Value =
        serde_json::from_str(&engine.ok(&["inspect", "--format", "{{json .State}}", CONTAINER]))
            .unwrap();
    let log = logs();
    assert_eq!(state["ExitCode"], 0, "{state}\n{log}");
    assert_eq!(state["OOMKilled"], false);
    assert!(
        stopped_after < Duration::from_secs(pod.grace),
        "stopped after {stopped_after:?}, grace {} s",
        pod.grace
    );
    for line in ["shutdown signal received", "\"stopped\""] {
        assert!(log.contains(line), "no {line} in the log:\n{log}");
    }

    record(&format!(
        "{TEST}: image {IMAGE} {} on {base} ({}; binary {}), built in {:.1} s; ready {:.2} s after \
         docker run; answered a review over HTTPS; metrics served; docker stop --time {}: exit 0 \
         after {:.1} s",
        megabytes(image_size),
        megabytes(base_size),
        megabytes(std::fs::metadata(&in_image).unwrap().len()),
        build_time.as_secs_f64(),
        ready_after.as_secs_f64(),
        pod.grace,
        stopped_after.as_secs_f64()
    ));
}
