//! The container image the install pulls, started as `manifests/deployment.yaml` starts it, against
//! a real kube-apiserver.
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
//!
//! In `e2e_image/`: `engine` (the container engine and the runtime base) and `pod` (what the
//! Deployment asks for, as container settings).

#[path = "../../../tests/server_support/client.rs"]
mod client;
mod e2e;
#[path = "e2e_image/engine.rs"]
mod engine;
#[path = "e2e_image/pod.rs"]
mod pod;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use client::{post, Conn, Proto};
use e2e::api::{create, create_namespace, create_path, in_cluster_pool, install_crds_but};
use e2e::{eventually, record, ControlPlane};
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};

use engine::{runtime_base, Engine};
use pod::*;

const TEST: &str = "e2e_image_runs_as_the_deployment_runs_it";
const IMAGE: &str = "local/ipam-guard:e2e";
const CONTAINER: &str = "ipam-guard-e2e-image";
const PUBLISHED_RUNTIME: &str = "gcr.io/distroless/cc-debian12:nonroot";
const DEBIAN_BASE: &str = "local/debian:bookworm";
const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The namespace of the objects the review is about (the install's own is read from the files).
const NS: &str = "e2e";
const WAIT: Duration = Duration::from_secs(120);

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

// === The binary and the image (the engine and the runtime base: `engine`) ===

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
        .current_dir(e2e::repo_root())
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

/// The value of `ENV name=value` in `Dockerfile`'s runtime stage.
fn dockerfile_env(name: &str) -> String {
    let text = std::fs::read_to_string(e2e::repo_root().join("Dockerfile")).unwrap();
    let prefix = format!("ENV {name}=");
    last_stage(&text)
        .iter()
        .find_map(|i| i.strip_prefix(&prefix).map(str::to_string))
        .unwrap_or_else(|| panic!("no ENV {name} in Dockerfile's runtime stage"))
}

/// `Dockerfile.prebuilt` is the runtime stage of `Dockerfile` with the binary from the build
/// context: the same base (argument and default), user, ports, entrypoint and command. So the
/// image CI runs differs from the published one only in where the binary was built (and in the
/// base, when the published one cannot be had).
#[test]
fn prebuilt_dockerfile_is_the_published_runtime_stage() {
    let read = |name: &str| std::fs::read_to_string(e2e::repo_root().join(name)).unwrap();
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
    assert!(dockerfile_env("GLIBC_TUNABLES").starts_with("glibc.malloc.tcache_count="));
}

// === The run (what the Deployment asks for: `pod`) ===

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
    // The cluster part installs the upstream CRDs, read in place from ../shared.
    if let Err(why) = e2e::crds() {
        record(&format!("skipped: {TEST}: {why}"));
        return;
    }
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
    // As docs/operations.md and Dockerfile do: without the debug info, with the symbols.
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
        &e2e::repo_root()
            .join("Dockerfile.prebuilt")
            .display()
            .to_string(),
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
    // The allocator's cache the figures of docs/performance.md were taken with ("Memory"): in the image's environment, and below in the running process's.
    let tunables = format!("GLIBC_TUNABLES={}", dockerfile_env("GLIBC_TUNABLES"));
    assert!(
        config["Env"]
            .as_array()
            .is_some_and(|env| env.contains(&json!(tunables))),
        "{tunables} is not in the image's environment: {}",
        config["Env"]
    );
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
        if let Ok((200, _)) = client::http_get(probes, "/readyz").await {
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
    // std and tokio read the container's CPU quota: the limit rounded down, at least one, is the
    // runtime's worker count (docs/performance.md measures the webhook with it).
    let workers = (pod.cpus.floor() as u64).max(1);
    let out = engine.output(&["logs", CONTAINER]);
    let all = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    let serving = all
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["message"] == "serving")
        .unwrap_or_else(|| panic!("no \"serving\" line in the log:\n{}", logs()));
    assert_eq!(
        serving["worker_threads"], workers,
        "--cpus={} should give {workers} worker thread(s): {serving}",
        pod.cpus
    );
    let pid = engine.ok(&["inspect", "--format", "{{.State.Pid}}", CONTAINER]);
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(environ) => {
            // glibc 2.36 reads the variable in place: the `:` between two tunables becomes a NUL
            // in the process's environment, the mark that it read them.
            let read = tunables.replace(':', "\0");
            let has = |s: &str| environ.windows(s.len()).any(|w| w == s.as_bytes());
            assert!(
                has(&tunables) || has(&read),
                "the server runs without {tunables}: {:?}",
                String::from_utf8_lossy(&environ)
            );
        }
        // Another user's process (a rootless engine's): the image's environment above is what
        // the engine hands it.
        Err(e) if !is_root() && e.kind() == std::io::ErrorKind::PermissionDenied => {}
        Err(e) => panic!("/proc/{pid}/environ of the container's process: {e}"),
    }

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
    let (status, body) = client::http_get(metrics, "/metrics").await.unwrap();
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
            client::http_get(metrics, "/metrics").await,
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
