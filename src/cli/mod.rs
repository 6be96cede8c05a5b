//! Command line: `serve`, `check`, `audit`. Thin: each command parses flags and hands over to the library.

pub mod audit;
pub mod check;
pub mod report;
pub mod serve;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "ipam-guard",
    version,
    about = "Admission webhook that keeps Kubernetes IP address management honest"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// One value parsed once per process: boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve /validate and /mutate over HTTPS.
    Serve(ServeArgs),
    /// Judge manifests on disk as if each were created next to all the others.
    Check(CheckArgs),
    /// Judge every stored object of a live cluster as if it were created now.
    Audit(AuditArgs),
}

/// How overlap (P10) and uniqueness (A9) are scoped (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OverlapScope {
    #[default]
    AddressSpace,
    Namespace,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Flags every command that judges objects shares.
#[derive(Debug, Clone, Args)]
pub struct RuleArgs {
    /// How pool overlaps and duplicate addresses are scoped.
    #[arg(long, value_enum, default_value_t = OverlapScope::AddressSpace)]
    pub overlap_scope: OverlapScope,
    /// Deny (instead of warn about) claims whose pool does not exist (C3).
    #[arg(long)]
    pub require_existing_pool: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// HTTPS listen address for /validate and /mutate.
    #[arg(long, default_value = "0.0.0.0:9443")]
    pub listen: String,
    /// Serving certificate (PEM, may hold a chain). Overrides --cert-dir.
    #[arg(long, requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// Serving key (PEM: PKCS#1, PKCS#8 or SEC1).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
    /// Directory holding tls.crt and tls.key (default: the controller-runtime path, or ./certs/dev with --dev).
    #[arg(long)]
    pub cert_dir: Option<PathBuf>,
    /// Plain-HTTP listen address for /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8081")]
    pub probe_listen: String,
    /// Plain-HTTP listen address for /metrics.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub metrics_listen: String,
    /// Development mode: generate (or reuse) a CA and a localhost serving certificate; never reads KUBECONFIG on its own.
    #[arg(long)]
    pub dev: bool,
    /// Static cluster view from YAML/JSON files or directories instead of watching a cluster.
    #[arg(long, num_args = 1..)]
    pub state_from: Vec<PathBuf>,
    /// Kubeconfig for the live view (default: in-cluster, then KUBECONFIG).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// How long connections keep being served after SIGTERM before draining, e.g. 5s.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub shutdown_delay: std::time::Duration,
    /// Every INTERVAL (e.g. 10m), judge what the view holds for overlaps, duplicates and holders
    /// (SPEC X4) and set ipam_guard_violations{rule}; off by default. Makes no API calls.
    #[arg(long, value_parser = parse_duration)]
    pub audit_interval: Option<std::time::Duration>,
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// How long a new connection may take to finish its TLS handshake, e.g. 5s.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub handshake_timeout: std::time::Duration,
    /// Connections one peer address may hold open on the webhook listener (0: no limit); past
    /// it new connections from that address are closed at once.
    #[arg(long, default_value_t = crate::server::MAX_CONNECTIONS_PER_SOURCE)]
    pub max_connections_per_source: usize,
    /// Require a client certificate chaining to this CA (PEM) on the webhook listener: only the
    /// API server holding one is served. Reloaded when the file changes.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// Accept only client certificates with this subject CN (repeatable; with --client-san, either matches).
    #[arg(long, requires = "client_ca_file")]
    pub client_cn: Vec<String>,
    /// Accept only client certificates with this DNS, IP, URI or email SAN (repeatable).
    #[arg(long, requires = "client_ca_file")]
    pub client_san: Vec<String>,
    #[command(flatten)]
    pub rules: RuleArgs,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    #[arg(long, short, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Files or directories of YAML/JSON manifests (multi-document YAML and `kind: List` are read).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long, short, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub rules: RuleArgs,
}

/// Parses `500ms`, `5s`, `10m`, `1h`, or bare seconds.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: expected e.g. 500ms, 5s, 10m"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("invalid duration unit in {s:?}: use ms, s, m or h")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("invalid duration {s:?}"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap().as_secs(), 5);
        assert_eq!(parse_duration("500ms").unwrap().as_millis(), 500);
        assert_eq!(parse_duration("10m").unwrap().as_secs(), 600);
        assert_eq!(parse_duration("7").unwrap().as_secs(), 7);
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
