//! One `ipam-guard serve` process of an install with several replicas: the binary cargo built
//! (`IPAM_GUARD_BIN`: another build, e.g. a release build for docs/performance.md), its own
//! ports, its log in a file, and the decider election with short durations (lease 3 s, renew
//! deadline 2 s, retry 0.5 s) so that a takeover fits in a test; the production defaults are
//! 15 s / 10 s / 2 s. Included (`#[path]`) by the suites that run replicas, e2e_decider,
//! e2e_pending and e2e_soak, beside `e2e` and `client` (the tests' HTTPS client), which it uses; each suite uses
//! a part of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::client::http_get;
use crate::e2e::{free_port, process};

/// The namespace of the decider Lease.
pub const LEASE_NS: &str = "ipam-guard";
/// The decider Lease's name (the default).
pub const LEASE: &str = ipam_guard::decider::DEFAULT_LEASE;
/// The Lease is held this long from its holder's last renewal, renewed every retry period, and
/// the holder stops deciding once a renewal is this late (`--decider-renew-deadline`).
pub const LEASE_DURATION: Duration = Duration::from_secs(3);
pub const RETRY_PERIOD: Duration = Duration::from_millis(500);
const RENEW_DEADLINE: Duration = Duration::from_secs(2);

/// How one replica is started.
pub struct Start<'a> {
    pub kubeconfig: &'a Path,
    /// `tls.crt`, `tls.key` and `ca.crt`: serving, peer and client-CA files alike.
    pub certs: &'a Path,
    /// The pod name (`POD_NAME`): the start of its Lease identity.
    pub name: &'a str,
    pub log: PathBuf,
    /// `--pending-ttl`; None keeps the production durations of the election as well.
    pub pending_ttl: Option<Duration>,
    pub rust_log: &'a str,
    pub extra: &'a [&'a str],
}

pub struct Replica {
    pub name: String,
    child: Option<Child>,
    pub webhook: SocketAddr,
    pub probe: SocketAddr,
    pub metrics: SocketAddr,
    pub peer: SocketAddr,
    pub log: PathBuf,
}

impl Replica {
    pub fn start(s: Start<'_>) -> Replica {
        let port = || SocketAddr::from(([127, 0, 0, 1], free_port()));
        let (webhook, probe, metrics, peer) = (port(), port(), port(), port());
        let out = std::fs::File::create(&s.log).unwrap();
        let bin = crate::e2e::ipam_guard_bin();
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .arg("--kubeconfig")
            .arg(s.kubeconfig)
            .arg("--cert-dir")
            .arg(s.certs)
            .arg("--client-ca-file")
            .arg(s.certs.join("ca.crt"))
            .args(["--listen", &webhook.to_string()])
            .args(["--probe-listen", &probe.to_string()])
            .args(["--metrics-listen", &metrics.to_string()])
            .args(["--peer-listen", &peer.to_string()])
            .args(["--peer-advertise", &peer.to_string()])
            .args(["--decider-lease-namespace", LEASE_NS])
            .args(["--shutdown-delay", "0s"]);
        if let Some(ttl) = s.pending_ttl {
            let ms = |d: Duration| format!("{}ms", d.as_millis());
            cmd.args(["--decider-lease-duration", &ms(LEASE_DURATION)])
                .args(["--decider-renew-deadline", &ms(RENEW_DEADLINE)])
                .args(["--decider-retry-period", &ms(RETRY_PERIOD)])
                .args(["--pending-ttl", &ms(ttl)]);
        }
        let child = cmd
            .args(s.extra)
            .env("POD_NAME", s.name)
            .env("RUST_LOG", s.rust_log)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .spawn()
            .expect("start ipam-guard serve");
        Replica {
            name: s.name.to_string(),
            child: Some(child),
            webhook,
            probe,
            metrics,
            peer,
            log: s.log,
        }
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// `kill SIG`; after `-STOP`, once every thread is stopped (`process::signal`).
    pub fn signal(&self, sig: &str) {
        process::signal(sig, self.pid());
    }

    /// Whether every thread of it is stopped now (None: it is not running).
    pub fn is_stopped(&self) -> Option<bool> {
        process::stopped(self.child.as_ref()?.id())
    }

    /// SIGKILL (after a SIGCONT: a stopped process may not die until continued), reaped.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-CONT", &c.id().to_string()])
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// How the process ended, if it ended by itself (reaped then).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        Some(status)
    }

    /// Waits up to `within` for the process to exit by itself (after SIGTERM).
    pub async fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < within {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// Panics with its log when it exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.exited() {
            panic!("{} exited ({status}):\n{}", self.name, self.log_tail(40));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn log_tail(&self, n: usize) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Whether its readiness probe says ready.
    pub async fn ready(&self) -> bool {
        matches!(http_get(self.probe, "/readyz").await, Ok((200, _)))
    }

    /// Waits until it is ready; panics with its log when it exits or is not ready in `within`.
    pub async fn wait_ready(&mut self, within: Duration) -> Duration {
        let start = Instant::now();
        loop {
            self.assert_running();
            if self.ready().await {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < within,
                "{} not ready after {within:?}:\n{}",
                self.name,
                self.log_tail(40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// One sample of its /metrics: `name` with its labels as printed (None: no answer, or no
    /// such series yet).
    pub async fn metric(&self, name: &str) -> Option<f64> {
        let samples = self.samples().await?;
        samples.into_iter().find(|(s, _)| s == name).map(|(_, v)| v)
    }

    /// The sum of the samples whose series (name and labels) `pick` keeps: 0 when there is none
    /// yet (a labelled counter appears once first counted); None when /metrics did not answer.
    pub async fn metric_sum(&self, pick: impl Fn(&str) -> bool) -> Option<f64> {
        let samples = self.samples().await?;
        Some(
            samples
                .iter()
                .filter(|(s, _)| pick(s))
                .map(|(_, v)| v)
                .sum(),
        )
    }

    async fn samples(&self) -> Option<Vec<(String, f64)>> {
        let (status, body) = http_get(self.metrics, "/metrics").await.ok()?;
        if status != 200 {
            return None;
        }
        Some(
            body.lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| l.rsplit_once(' '))
                .filter_map(|(series, v)| Some((series.to_string(), v.parse().ok()?)))
                .collect(),
        )
    }

    /// Whether its `ipam_guard_decider_is_leader` says it holds the Lease (None: no answer).
    pub async fn is_leader(&self) -> Option<bool> {
        self.metric("ipam_guard_decider_is_leader")
            .await
            .map(|v| v == 1.0)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}
