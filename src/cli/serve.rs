//! `ipam-guard serve`: flags → certificates, cluster view and server config; signals → shutdown.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use prometheus_client::registry::Registry;
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::admission::Admission;
use crate::cli::{DeciderMode, LogFormat, PoolMetrics, ServeArgs};
use crate::cluster::live::{LiveOptions, LiveView};
use crate::cluster::{ClusterView, Ledger, StaticView, StrangerPolicy};
use crate::decider::election::Timing;
use crate::decider::peer::PeerFiles;
use crate::decider::{Decider, DeciderConfig};
use crate::rules::Options;
use crate::server::dev::{self, Made};
use crate::server::pool_metrics;
use crate::server::{Addrs, CertFiles, ClientAuth, Config, Listen, Server};

/// Where controller-runtime (and so most webhook Helm charts) mount the serving Secret.
pub const DEFAULT_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
pub const DEV_CERT_DIR: &str = "./certs/dev";
/// The example review the `--dev` banner tells to post.
pub const DEV_EXAMPLE: &str = "examples/reviews/claim-create.json";

/// Runs the webhook until SIGTERM or SIGINT, then drains and returns.
pub async fn run(args: ServeArgs, registry: Registry) -> anyhow::Result<()> {
    run_with(args, registry, || {}).await
}

/// As `run`, calling `after_load` once the view is built: the binary hands the allocator back
/// what reading `--state-from` freed (`main.rs`), which the library, free of `unsafe`, cannot.
pub async fn run_with(
    args: ServeArgs,
    mut registry: Registry,
    after_load: impl FnOnce(),
) -> anyhow::Result<()> {
    init_logging(args.log_format);
    // Installed before anything slow, so an early SIGTERM drains instead of killing.
    let term = signal(SignalKind::terminate()).context("cannot install the SIGTERM handler")?;
    let int = signal(SignalKind::interrupt()).context("cannot install the SIGINT handler")?;

    let mut config = Config::new(cert_files(&args)?);
    config.listen = parse_addr(&args.listen, "--listen")?;
    config.probe_listen = parse_addr(&args.probe_listen, "--probe-listen")?;
    config.metrics_listen = parse_addr(&args.metrics_listen, "--metrics-listen")?;
    config.shutdown_delay = args.shutdown_delay;
    config.handshake_timeout = args.handshake_timeout;
    config.max_connections_per_source = args.max_connections_per_source;
    config.client_auth = args.client_ca_file.as_ref().map(|ca| ClientAuth {
        ca_file: ca.clone(),
        allowed_cns: args.client_cn.clone(),
        allowed_sans: args.client_san.clone(),
    });

    let dev_ca = if args.dev && args.tls_cert_file.is_none() {
        let dir = config.certs.cert.parent().unwrap_or(Path::new("."));
        let made =
            dev::ensure(dir).with_context(|| format!("--dev certificates in {}", dir.display()))?;
        Some(made)
    } else {
        None
    };

    let (view, client) = build_view(&args).await?;
    after_load();
    if args.pool_metrics == PoolMetrics::All {
        pool_metrics::register(&mut registry, view.clone(), pool_metrics::POOL_SERIES_LIMIT);
    }
    if args.policy_reports && client.is_none() {
        anyhow::bail!(
            "--policy-reports writes to a cluster: it needs the live view (not --state-from, nor --dev without --kubeconfig)"
        );
    }
    let options = Options::from(&args.rules);
    let (admission, decider) = match client.clone() {
        // Only a live view can share a decider: --dev and --state-from each hold their own world.
        Some(client) if args.decider.decider == DeciderMode::Lease => {
            let config = decider_config(&args, &config, &client)?;
            let decider = Decider::start(client, config, view.clone(), &mut registry)?;
            let admission = Admission::with_route(view.clone(), options, decider.clone());
            decider.serve_peers(admission.clone());
            (admission, Some(decider))
        }
        _ if args.dev => (Admission::local(view.clone(), options), None),
        _ => (Admission::new(view.clone(), options), None),
    };
    // The periodic audit (off unless --audit-interval) judges what the view already holds: no
    // second copy of the cluster and no list calls each round (rules::stored, rules::health).
    let _audit = args.audit_interval.map(|interval| {
        let violations = crate::server::audit::register_violations(&mut registry);
        let findings = crate::server::audit::register_findings(&mut registry);
        let reports = client.filter(|_| args.policy_reports).map(|client| {
            // One writer across replicas: the decider; a lone replica is its own.
            let leader = decider.clone();
            crate::server::audit::ReportSink {
                writer: crate::server::policy_reports::Writer::new(client),
                may_write: Arc::new(move || leader.as_ref().is_none_or(|d| d.leads())),
            }
        });
        AbortOnDrop(tokio::spawn(crate::server::audit::periodic(
            view,
            args.rules.audit_options(&args.health),
            interval,
            crate::server::audit::Outputs {
                violations,
                findings: Some(findings),
                reports,
            },
        )))
    });
    let server = Server::bind(config, admission, registry).await?;
    if let Some(certs) = dev_ca {
        print_dev_banner(&certs, server.addrs(), &view_description(&args));
    }
    // The decider steps down as soon as the shutdown starts, while this replica still serves
    // (forwarding to the next decider) and can hand its admissions over.
    let stepping_down = decider.clone();
    let dev = args.dev;
    let shutdown = async move {
        shutdown_signal(term, int, dev).await;
        if let Some(decider) = stepping_down {
            decider.step_down().await;
        }
    };
    server.run(shutdown).await;
    if let Some(decider) = decider {
        decider.finish().await;
    }
    Ok(())
}

fn decider_config(
    args: &ServeArgs,
    server: &Config,
    client: &kube::Client,
) -> anyhow::Result<DeciderConfig> {
    let d = &args.decider;
    let peer_listen = parse_addr(&d.peer_listen, "--peer-listen")?;
    let port = match peer_listen {
        Listen::AnyFamily(p) => p,
        Listen::Addr(a) => a.port(),
    };
    let advertise = match (&d.peer_advertise, std::env::var("POD_IP").ok()) {
        (Some(a), _) => a.clone(),
        (None, Some(ip)) if !ip.is_empty() => match ip.parse::<std::net::IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, port).to_string(),
            Err(_) => anyhow::bail!("POD_IP {ip:?} is not an IP address"),
        },
        _ => match peer_listen {
            Listen::Addr(a) if !a.ip().is_unspecified() => a.to_string(),
            _ => anyhow::bail!(
                "the decider election needs this replica's address for the others: set POD_IP \
                 (downward API) or --peer-advertise, or run one replica with --decider=off"
            ),
        },
    };
    let ca = d.peer_ca_file.clone().unwrap_or_else(|| {
        server
            .certs
            .cert
            .parent()
            .unwrap_or(Path::new("."))
            .join("ca.crt")
    });
    let namespace = d
        .decider_lease_namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| client.default_namespace().to_string());
    let pod = std::env::var("POD_NAME").unwrap_or_else(|_| "ipam-guard".to_string());
    Ok(DeciderConfig {
        lease: d.decider_lease.clone(),
        namespace,
        identity: crate::decider::identity(&pod),
        advertise,
        peer_listen,
        peer_files: PeerFiles {
            pair: server.certs.clone(),
            ca,
        },
        timing: Timing {
            lease: d.decider_lease_duration,
            renew_deadline: d.decider_renew_deadline,
            retry: d.decider_retry_period,
            pending_ttl: d.pending_ttl,
        },
        budget: d.decider_timeout,
    })
}

/// `--dev` never reads KUBECONFIG or in-cluster config on its own.
async fn build_view(
    args: &ServeArgs,
) -> anyhow::Result<(Arc<dyn ClusterView>, Option<kube::Client>)> {
    if !args.state_from.is_empty() {
        let index = StaticView::load_index(&args.state_from)?;
        tracing::info!(
            objects = index.len(),
            "serving a static view from --state-from"
        );
        // Ledger, not the bare static view: admitted objects count as pending (X2), so a dev
        // server refuses the second of two overlapping creates as a cluster would.
        return Ok((
            Arc::new(Ledger::new(index).with_strangers(StrangerPolicy::unbounded())),
            None,
        ));
    }
    if args.dev && args.kubeconfig.is_none() && args.context.is_none() {
        return Ok((
            Arc::new(Ledger::default().with_strangers(StrangerPolicy::unbounded())),
            None,
        ));
    }
    // --kubeconfig when given, else in-cluster, else KUBECONFIG / ~/.kube/config;
    // --context picks a context of that kubeconfig.
    let (client, _) = crate::cluster::live::client_and_server(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
    )
    .await?;
    let options = LiveOptions {
        pending_ttl: args.decider.pending_ttl,
        reuse_grace: args.reuse_grace.unwrap_or_default(),
        ..LiveOptions::default()
    };
    if let Some(grace) = args.reuse_grace.filter(|g| !g.is_zero()) {
        tracing::info!(
            ?grace,
            "reuse grace on (R1): an address released less than this long ago is refused to a new holder; releases are remembered from the watch, in memory only"
        );
    }
    let view = LiveView::start(client.clone(), options);
    // `--dev --kubeconfig` is one developer's process: it decides alone.
    Ok((view, (!args.dev).then_some(client)))
}

fn cert_files(args: &ServeArgs) -> anyhow::Result<CertFiles> {
    if let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_key_file) {
        return Ok(CertFiles {
            cert: cert.clone(),
            key: key.clone(),
        });
    }
    let dir = match (&args.cert_dir, args.dev) {
        (Some(dir), _) => dir.clone(),
        (None, true) => PathBuf::from(DEV_CERT_DIR),
        (None, false) => PathBuf::from(DEFAULT_CERT_DIR),
    };
    Ok(CertFiles::in_dir(&dir))
}

fn parse_addr(value: &str, flag: &str) -> anyhow::Result<Listen> {
    value
        .parse()
        .map_err(|e: String| anyhow::anyhow!("{flag} {e}"))
}

/// Logs go to stderr; stdout is kept for what a person asked for (the `--dev` banner).
fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    // try_init: a second call (tests running `run` twice) keeps the first subscriber.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        // One object per line, the event's fields at the top level beside `message`, `level`,
        // `timestamp` and `target`: what `jq 'select(.rules)'` or a log pipeline reads.
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// The first SIGTERM/SIGINT starts the graceful shutdown; a second one exits at once. Under
/// `--dev`, Ctrl-C (SIGINT) exits at once: nothing routes traffic away from a process on a
/// laptop, so the shutdown delay would only keep the user waiting. SIGTERM (a pod's stop) drains
/// either way.
async fn shutdown_signal(mut term: Signal, mut int: Signal, dev: bool) {
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    if dev && name == "SIGINT" {
        tracing::info!("SIGINT under --dev: exiting without the shutdown delay");
        std::process::exit(0);
    }
    tracing::info!(signal = name, "shutdown signal received");
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::warn!("second shutdown signal: exiting without draining");
        std::process::exit(130);
    });
}

/// What the dev banner says the rules read.
fn view_description(args: &ServeArgs) -> String {
    if !args.state_from.is_empty() {
        let files: Vec<String> = args
            .state_from
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        format!("a static view of --state-from {}", files.join(" "))
    } else if let Some(kc) = &args.kubeconfig {
        format!("the live cluster of --kubeconfig {}", kc.display())
    } else {
        "no cluster: an empty view (give --state-from or --kubeconfig for one)".to_string()
    }
}

/// The example review, compact, for the banner's curl: embedded so the command works from any
/// directory and with an installed binary.
const DEV_EXAMPLE_JSON: &str = include_str!("../../examples/reviews/claim-create.json");

fn print_dev_banner(certs: &dev::DevCerts, addrs: Addrs, view: &str) {
    let made = match certs.made {
        Made::Nothing => "reused",
        Made::ServingCert => "reused; serving certificate made anew",
        Made::CaAndServingCert => "made now",
    };
    let host = if addrs.webhook.ip().is_loopback() || addrs.webhook.ip().is_unspecified() {
        "localhost".to_string()
    } else {
        // Not among the certificate's names: curl will say so, which is the honest answer.
        match addrs.webhook {
            SocketAddr::V4(a) => a.ip().to_string(),
            SocketAddr::V6(a) => format!("[{}]", a.ip()),
        }
    };
    let port = addrs.webhook.port();
    let ca_path = std::fs::canonicalize(&certs.ca_cert).unwrap_or_else(|_| certs.ca_cert.clone());
    let ca = ca_path.display();
    println!("ipam-guard serve --dev, judging against {view}");
    println!("  CA certificate: {ca} ({made})");
    println!(
        "  webhook:        https://{host}:{port}/validate and /mutate (listening on {})",
        addrs.webhook
    );
    println!("  probes:         http://{}/readyz", addrs.probe);
    println!("  metrics:        http://{}/metrics", addrs.metrics);
    println!("  try:");
    let example = serde_json::from_str::<serde_json::Value>(DEV_EXAMPLE_JSON)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| DEV_EXAMPLE_JSON.replace('\n', " "));
    println!(
        "    curl --cacert {ca} -H 'Content-Type: application/json' --data-binary @- https://{host}:{port}/validate <<'EOF'\n{example}\nEOF"
    );
}

/// Stops a background task when serve returns.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
