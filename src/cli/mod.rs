//! Command line: `serve`, `check`, `audit`. Thin: each command parses flags and hands over to the library.

pub mod audit;
pub mod check;
pub mod completions;
pub mod dev_webhooks;
pub mod explain;
pub mod kinds;
pub mod policies;
pub mod progress;
pub mod report;
pub mod serve;
pub mod terminal;
pub mod usage;
pub mod usage_entry;
pub mod usage_free;

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
    Serve(Box<ServeArgs>),
    /// Judge manifests on disk as if each were created next to all the others.
    Check(CheckArgs),
    /// Judge every stored object of a live cluster as if it were created now.
    Audit(AuditArgs),
    /// How full each pool is, fullest first: of a live cluster, or of manifests on disk.
    Usage(UsageArgs),
    /// What a rule id means, with an example and what kubectl prints for it.
    Explain(ExplainArgs),
    /// Print webhook configurations that send a real cluster's IPAM writes in some namespaces to
    /// a local `serve --dev --kubeconfig` (a trial; see docs/trial.md).
    DevWebhooks(DevWebhooksArgs),
    /// Print ValidatingAdmissionPolicies and bindings that keep the single-object rules in force
    /// without the webhook (Kubernetes 1.30+), or the webhooks' matchConditions.
    Policies(PoliciesArgs),
    /// Print a shell completion script: `source <(ipam-guard completions bash)`.
    Completions(CompletionsArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// How `explain` writes an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ExplainFormat {
    /// `text` when standard output is a terminal, else `markdown` (so `explain --all >
    /// docs/rules.md` and scripts get the same Markdown whatever the terminal).
    #[default]
    Auto,
    /// For reading in a terminal: headings, wrapped paragraphs, indented code blocks (bold only
    /// on a terminal and without NO_COLOR).
    Text,
    /// The Markdown of docs/rules.md.
    Markdown,
}

#[derive(Debug, Clone, Args)]
pub struct PoliciesArgs {
    /// Only what a server of this version evaluates (e.g. 1.30: no policy that needs CEL's IP
    /// library, which stored expressions may use from 1.31). Default: every policy.
    #[arg(long, value_name = "MAJOR.MINOR")]
    pub kube_version: Option<String>,
    /// Print instead the kustomize patch that adds matchConditions to the webhook
    /// configurations of manifests/ (Kubernetes 1.30+): the API server then skips requests no
    /// rule can deny, warn about or mutate.
    #[arg(long)]
    pub webhook_conditions: bool,
}

#[derive(Debug, Clone, Args)]
pub struct DevWebhooksArgs {
    /// Where the API server reaches the local ipam-guard, e.g. https://127.0.0.1:9443 (the dev
    /// certificate is valid for localhost, 127.0.0.1 and ::1).
    #[arg(long)]
    pub url: String,
    /// Judge writes in this namespace only (repeatable); cluster-scoped pools are always judged.
    #[arg(long, short = 'n', required = true)]
    pub namespace: Vec<String>,
    /// The `serve --dev` certificate directory holding ca.crt.
    #[arg(long, default_value = "./certs/dev")]
    pub cert_dir: PathBuf,
    /// The target API server's version (`kubectl version`): from 1.30 the configurations carry
    /// matchConditions, so requests no rule can judge are not sent. Unset: none (any server).
    #[arg(long, value_name = "MAJOR.MINOR")]
    pub kube_version: Option<String>,
}

pub use crate::rules::OverlapScope;

/// `--overlap-scope`: the flag's spelling of `rules::OverlapScope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ScopeFlag {
    #[default]
    AddressSpace,
    Namespace,
    Off,
}

impl From<ScopeFlag> for OverlapScope {
    fn from(f: ScopeFlag) -> Self {
        match f {
            ScopeFlag::AddressSpace => OverlapScope::AddressSpace,
            ScopeFlag::Namespace => OverlapScope::Namespace,
            ScopeFlag::Off => OverlapScope::Off,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
    /// SARIF 2.1.0 (GitHub code scanning).
    Sarif,
    /// JUnit XML (CI test reports).
    Junit,
}

/// `usage` prints a table, not findings: no SARIF or JUnit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum UsageFormat {
    #[default]
    Text,
    Json,
}

/// Which pools `ipam_guard_pool_addresses` exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum PoolMetrics {
    /// Every pool while there are at most 5,000; beyond that the 5,000 fullest.
    #[default]
    All,
    /// No pool usage metrics.
    None,
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
    #[arg(long, value_enum, default_value_t = ScopeFlag::AddressSpace)]
    pub overlap_scope: ScopeFlag,
    /// Deny (instead of warn about) claims whose pool does not exist (C3).
    #[arg(long)]
    pub require_existing_pool: bool,
    /// Warn about a claim's create (E1) when its pool has fewer free addresses than a count (`2`),
    /// a percentage of what it can hand out (`5%`, rounded up), or the larger of both (`5%,2`).
    /// A pool with none free is always warned about; `0` warns only then.
    #[arg(long, value_name = "N|P%|P%,N", default_value = "5%,2", value_parser = crate::rules::exhaustion::FreeThreshold::parse)]
    pub warn_free_below: crate::rules::exhaustion::FreeThreshold,
}

impl From<&RuleArgs> for crate::rules::Options {
    fn from(a: &RuleArgs) -> Self {
        crate::rules::Options {
            overlap_scope: a.overlap_scope.into(),
            require_existing_pool: a.require_existing_pool,
            warn_free_below: a.warn_free_below,
            ..crate::rules::Options::default()
        }
    }
}

/// Flags of the audits (`audit`, `serve --audit-interval`) for claims and addresses over time.
#[derive(Debug, Clone, Args)]
pub struct HealthArgs {
    /// A claim without an address for longer than this (e.g. 10m, 1h), while its pool has free
    /// addresses, is reported as stuck (H1).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub stuck_after: std::time::Duration,
}

impl RuleArgs {
    /// The options of an audit: these flags and `--stuck-after`.
    pub fn audit_options(&self, health: &HealthArgs) -> crate::rules::Options {
        crate::rules::Options {
            stuck_after: health.stuck_after,
            ..crate::rules::Options::from(self)
        }
    }
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
    /// The kubeconfig context to watch (of --kubeconfig, or the default kubeconfig).
    #[arg(long)]
    pub context: Option<String>,
    /// How long connections keep being served after SIGTERM before draining, e.g. 5s.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub shutdown_delay: std::time::Duration,
    /// Every INTERVAL (e.g. 10m), judge what the view holds for overlaps, duplicates, holders,
    /// stuck claims and orphaned addresses and set ipam_guard_violations{rule} and
    /// ipam_guard_audit_findings{rule,severity}; off by default. Makes no API calls (but for
    /// --policy-reports).
    #[arg(long, value_parser = parse_duration)]
    pub audit_interval: Option<std::time::Duration>,
    /// Refuse an IPAddress (CAPI or Metal3) for an address released less than DURATION ago in
    /// the same address space (rule R1), e.g. 60s; off by default. An in-cluster pool's own
    /// addressReuseGracePeriodSeconds wins for its addresses. Releases are remembered in memory
    /// only: a restart forgets them.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub reuse_grace: Option<std::time::Duration>,
    #[command(flatten)]
    pub health: HealthArgs,
    /// With --audit-interval: write the findings of each round as wgpolicyk8s.io/v1alpha2
    /// PolicyReports (one per namespace) and a ClusterPolicyReport, updated in place and deleted
    /// when clean. Only the elected decider (or the only replica) writes them.
    #[arg(long, requires = "audit_interval")]
    pub policy_reports: bool,
    /// Log lines as human-readable text or as one JSON object per line (for log collectors).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Pool usage metrics (ipam_guard_pool_addresses, two series per pool): `all` exports every
    /// pool up to 5,000 pools, then only the 5,000 fullest; `none` exports none.
    #[arg(long, value_enum, default_value_t = PoolMetrics::All)]
    pub pool_metrics: PoolMetrics,
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

/// Flags of the decider election and the peer listener (race safety across replicas, rule X2).
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
    /// How long an admitted object counts as existing before the watch shows it (rule X2); a new
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
    /// Output format of the findings (the summary always goes to stderr).
    #[arg(long, short, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Leave out files and directories whose path or name matches this glob (repeatable), e.g.
    /// `--exclude 'charts/**' --exclude values.yaml`.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Fail (exit 2) on objects of kinds ipam-guard does not judge instead of skipping them.
    #[arg(long)]
    pub strict: bool,
    /// Validate against the CRDs in this directory (YAML/JSON) alone, for instance the provider
    /// releases a cluster runs; by default (and for kinds the cluster of --kubeconfig does not
    /// serve) ipam-guard's own description of the kinds it judges.
    #[arg(long, value_name = "DIR")]
    pub crd_dir: Option<PathBuf>,
    /// Judge the files as if created into this cluster: its stored pools, claims and addresses
    /// count (files win over stored objects of the same identity); only the files are reported.
    /// Each kind's schema is that of the CRD the cluster has installed (unless --crd-dir).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use with --kubeconfig (or the default kubeconfig).
    #[arg(long)]
    pub context: Option<String>,
    /// No progress on stderr while the cluster is read (it is drawn only on a terminal anyway).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Say what an API server of this Kubernetes release would (e.g. 1.20: unknown fields are
    /// pruned, not refused). Default: the cluster's release with --kubeconfig, else the newest
    /// release the project tests against.
    #[arg(long, value_name = "VERSION")]
    pub kube_version: Option<String>,
    /// Give a cluster template's placeholder a value (repeatable): `${NAME}` (and clusterctl's
    /// other forms, e.g. `${NAME:=default}`) is replaced in each file's text before it is parsed,
    /// as `clusterctl generate cluster` does. Fields still holding a placeholder are not judged.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Take placeholder values from the environment too (a --var wins).
    #[arg(long)]
    pub env: bool,
    /// Judge the pool kinds declared in this `AddressKinds` file too (repeatable; see
    /// docs/kinds.md): their objects are read by the file's CEL expressions and judged as pools
    /// (P10 against every pool of every kind). A file that cannot be used exits 2.
    #[arg(long = "kinds", value_name = "FILE")]
    pub kinds: Vec<PathBuf>,
    /// Files or directories of YAML/JSON manifests (multi-document YAML and `kind: List` are
    /// read); `-` reads standard input (e.g. `kustomize build . | ipam-guard check -`).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// Kubeconfig of the cluster to audit (default: in-cluster, then KUBECONFIG).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to audit.
    #[arg(long)]
    pub context: Option<String>,
    /// Output format of the findings (the summary always goes to stderr).
    #[arg(long, short, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Report only objects of this namespace (they are still judged against the whole cluster).
    #[arg(long, short = 'n', conflicts_with = "all_namespaces")]
    pub namespace: Option<String>,
    /// Report objects of every namespace and cluster-scoped ones (the default).
    #[arg(long, short = 'A')]
    pub all_namespaces: bool,
    /// Report only findings of this rule id (repeatable), e.g. `--rule P10 --rule A9`.
    #[arg(long = "rule", value_name = "ID")]
    pub rules_only: Vec<String>,
    /// Report only denials or only warnings.
    #[arg(long, value_enum)]
    pub severity: Option<SeverityFilter>,
    /// At most this many finding lines per rule; the rest are counted in the summary table.
    /// Default: 20 in text (a screenful), every finding in JSON, SARIF and JUnit; 0: all.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// No progress on stderr while the cluster is read (it is drawn only on a terminal anyway).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub health: HealthArgs,
}

#[derive(Debug, Clone, Args)]
pub struct UsageArgs {
    /// `text`: a table, fullest pool first, with a bar per pool; `json`: one object per pool.
    #[arg(long, short, value_enum, default_value_t = UsageFormat::Text)]
    pub output: UsageFormat,
    /// Kubeconfig of the cluster to read (default: in-cluster, then KUBECONFIG). Not with PATHs.
    #[arg(long, conflicts_with = "paths")]
    pub kubeconfig: Option<PathBuf>,
    /// List each pool's free ranges instead (what it hands out and nobody holds), largest
    /// first; prefix pools list free sub-prefixes. With POOL (`name`, `namespace/name` or
    /// `Kind namespace/name`) only the pools it names; put PATHs before `--free`.
    #[arg(long, value_name = "POOL", num_args = 0..=1, default_missing_value = "")]
    pub free: Option<String>,
    /// The kubeconfig context to read (of --kubeconfig, or the default kubeconfig).
    #[arg(long, conflicts_with = "paths")]
    pub context: Option<String>,
    /// No progress on stderr while the cluster is read (it is drawn only on a terminal anyway).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Only the pools of this namespace (cluster-scoped pools are left out).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Only pools of this kind (repeatable), by name or plural, e.g. `--kind InClusterIPPool`.
    #[arg(long = "kind", value_name = "KIND")]
    pub kinds: Vec<String>,
    /// Only the N fullest pools (of those the other flags select).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Files or directories of manifests, read as `check` reads them, instead of a cluster.
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// A rule id as `check`, `audit`, logs and kubectl messages show it (e.g. P10).
    #[arg(required_unless_present = "all")]
    pub id: Option<String>,
    /// Every rule: the whole of docs/rules.md.
    #[arg(long, conflicts_with = "id")]
    pub all: bool,
    /// `auto`: rendered for reading on a terminal, Markdown when piped or redirected.
    #[arg(long, short, value_enum, default_value_t = ExplainFormat::Auto)]
    pub output: ExplainFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SeverityFilter {
    Deny,
    Warn,
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

    #[test]
    fn r1_reuse_grace_is_off_unless_given() {
        use clap::Parser;
        let grace = |args: &[&str]| match Cli::try_parse_from(args).map(|c| c.command) {
            Ok(Command::Serve(s)) => Ok(s.reuse_grace),
            Ok(_) => unreachable!("serve parses as serve"),
            Err(e) => Err(e.to_string()),
        };
        assert_eq!(grace(&["ipam-guard", "serve"]), Ok(None));
        assert_eq!(
            grace(&["ipam-guard", "serve", "--reuse-grace", "90s"]),
            Ok(Some(std::time::Duration::from_secs(90)))
        );
        assert!(grace(&["ipam-guard", "serve", "--reuse-grace", "soon"])
            .unwrap_err()
            .contains("invalid duration"));
    }
}
