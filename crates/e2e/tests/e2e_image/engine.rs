//! The container engine (the one `DOCKER_HOST` names, or a `dockerd` started here and stopped by
//! its PID) and the runtime base the image is built on.

use super::*;

/// A container engine: the client and the daemon it talks to. When this test started the daemon
/// (`daemon` is Some), dropping the engine stops it by its PID.
pub struct Engine {
    pub client: PathBuf,
    pub host: String,
    pub daemon: Option<Child>,
    pub how: String,
}

impl Engine {
    pub fn docker(&self) -> Command {
        let mut cmd = Command::new(&self.client);
        // The classic builder, whatever the client's default: Debian's engine has no buildx.
        cmd.env("DOCKER_HOST", &self.host)
            .env("DOCKER_BUILDKIT", "0")
            .stdin(Stdio::null());
        cmd
    }

    pub fn output(&self, args: &[&str]) -> Output {
        self.docker()
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running docker {args:?}: {e}"))
    }

    /// Runs `docker ARGS`, panics with its output unless it succeeds, returns its stdout.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> String {
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

    pub fn answers(&self) -> Result<(), String> {
        let out = self.output(&["version", "--format", "{{.Server.Version}}"]);
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    pub fn has_image(&self, image: &str) -> bool {
        self.output(&["image", "inspect", image]).status.success()
    }

    /// The engine `DOCKER_HOST` names, one already answering on this test's socket, or one this
    /// test starts. Err: why none can be had, for the skip line.
    pub fn get() -> Result<Engine, String> {
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
pub fn runtime_base(engine: &Engine) -> Result<String, String> {
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
pub fn debian_mirror() -> Option<String> {
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
pub fn debootstrap(tarball: &Path) -> Result<(), String> {
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
