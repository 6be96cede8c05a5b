//! What the measurements of whole commands share (`crates/e2e/tests/e2e_cluster_reads.rs` against a
//! real API server, `benches/cluster_reads_growth.rs` against a stand-in): reading `/usr/bin/time
//! -v`, one raw list with curl beside the commands, and the benches' command-line flags.

use std::process::Command;

/// What `/usr/bin/time -v` reported of one process.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeV {
    /// Wall seconds.
    pub wall: f64,
    /// CPU seconds, user + system.
    pub cpu: f64,
    /// Peak resident set size, MiB.
    pub rss_mib: f64,
}

/// Reads the report `/usr/bin/time -v` writes to stderr (after whatever the command wrote there).
pub fn time_v(stderr: &str) -> TimeV {
    let field = |name: &str| {
        stderr
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(str::trim)
            .unwrap_or_default()
            .to_string()
    };
    let wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss):")
        .split(':')
        .filter_map(|p| p.parse::<f64>().ok())
        .fold(0.0, |acc, p| acc * 60.0 + p);
    let cpu = ["User time (seconds):", "System time (seconds):"]
        .iter()
        .filter_map(|f| field(f).parse::<f64>().ok())
        .sum();
    let rss_kb: f64 = field("Maximum resident set size (kbytes):")
        .parse()
        .unwrap_or(0.0);
    TimeV {
        wall,
        cpu,
        rss_mib: rss_kb / 1024.0,
    }
}

/// One GET of `url` with curl, the body thrown away (the e2e bearer token, the server's
/// certificate not checked): seconds taken and bytes read.
pub fn curl_get(url: &str) -> (f64, f64) {
    let out = Command::new("curl")
        .args([
            "-sk",
            "-o",
            "/dev/null",
            "-w",
            "%{time_total} %{size_download}",
        ])
        .args(["-H", &format!("Authorization: Bearer {}", super::TOKEN)])
        .arg(url)
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut it = text.split_whitespace();
    let secs: f64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let bytes: f64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
    (secs, bytes)
}

/// The 1-minute load average, printed beside each figure (wall times depend on it).
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .unwrap_or("?")
        .to_string()
}

/// The value after `name` on the command line (`--pools 10000`): the benches that measure whole
/// commands take their few flags this way.
pub fn flag(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}
