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

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve /validate and /mutate over HTTPS.
    Serve(Box<ServeArgs>),
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
    /// Run a periodic audit of the live cluster (e.g. 10m); off by default.
    #[arg(long, value_parser = parse_duration)]
    pub audit_interval: Option<std::time::Duration>,
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub decider: DeciderArgs,
}

/// Whether replicas elect one decider for the X2 step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum DeciderMode {
    /// Elect one decider through a Lease; the others forward the X2 step to it (2+ replicas).
    #[default]
    Lease,
    /// Decide in this process (one replica). `--dev` and `--state-from` always do.
    Off,
}

/// Flags of the decider election and the peer listener (SPEC X2 across replicas).
#[derive(Debug, Clone, Args)]
pub struct DeciderArgs {
    /// `lease`: replicas elect one decider for decisions that depend on each other; `off`: decide
    /// locally (a one-replica install). Ignored (off) with --dev or --state-from.
    #[arg(long, value_enum, default_value_t = DeciderMode::Lease)]
    pub decider: DeciderMode,
    /// Name of the coordination.k8s.io/v1 Lease the replicas elect the decider with.
    #[arg(long, default_value = crate::decider::DEFAULT_LEASE)]
    pub decider_lease: String,
    /// Namespace of that Lease (default: the pod's namespace, from POD_NAMESPACE or the client's).
    #[arg(long, env = "POD_NAMESPACE")]
    pub decider_lease_namespace: Option<String>,
    /// How long the lease holds without renewal.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub decider_lease_duration: std::time::Duration,
    /// The decider stops deciding when it has not renewed for this long (before the lease can expire).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub decider_renew_deadline: std::time::Duration,
    /// How often the lease is read and renewed.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub decider_retry_period: std::time::Duration,
    /// How long a replica waits for the decider before refusing a view-dependent request with 503.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub decider_timeout: std::time::Duration,
    /// How long an admitted object counts as existing before the watch shows it (SPEC X2); a new
    /// decider waits this long after a takeover.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub pending_ttl: std::time::Duration,
    /// Mutual-TLS listen address for decision requests from other replicas.
    #[arg(long, default_value = ":9444")]
    pub peer_listen: String,
    /// Address other replicas reach this one at (default: POD_IP and the --peer-listen port).
    #[arg(long)]
    pub peer_advertise: Option<String>,
    /// CA the replicas' certificates chain to (default: ca.crt next to the serving certificate).
    #[arg(long)]
    pub peer_ca_file: Option<PathBuf>,
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
