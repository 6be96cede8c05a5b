//! HTTPS for `/validate` and `/mutate`, plain-HTTP probes and metrics, certificate reload and
//! graceful shutdown, and the periodic audit (`audit`: `judge` on a timer, with PolicyReports).
//! Never decides a verdict: every webhook answer body comes from `Admission::review`, byte for
//! byte.
//!
//! ```text
//! let server = Server::bind(config, admission, registry).await?;   // sockets bound, certs loaded
//! let addrs = server.addrs();                                      // real ports when given :0
//! server.run(shutdown_signal).await;                               // returns once drained
//! ```

pub mod audit;
mod client_auth;
mod conn;
/// Binds a listener as the webhook's are bound (`:PORT` dual-stack); the decider's peer port uses it.
pub(crate) use conn::bind as bind_listener;
pub mod dev;
mod metrics;
pub mod policy_reports;
pub mod pool_metrics;
mod routes;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::admission::Admission;
pub use client_auth::ClientAuth;
use metrics::Metrics;
pub use tls::{CertError, CertFiles};

/// The largest AdmissionReview body accepted: object and oldObject of a ≈3 MiB etcd object.
pub const BODY_LIMIT: usize = 7 * 1024 * 1024;

/// Default bytes of body judged at once: a real AdmissionReview is a few KiB, so this only ever
/// makes pathological bodies (MiBs of entries) wait for each other.
pub const JUDGING_BUDGET: usize = 8 * 1024 * 1024;

/// Default TLS handshake timeout (`--handshake-timeout`).
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default connections per peer address (`--max-connections-per-source`): far above what an API
/// server holds (one per request in flight, each answered in milliseconds), a quarter of the slots.
pub const MAX_CONNECTIONS_PER_SOURCE: usize = 256;

/// Where a listener binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// `:PORT`: every address of every family the host has (`[::]` dual-stack, or `0.0.0.0`
    /// where the kernel has no IPv6), so one manifest serves IPv4-only, IPv6-only and dual-stack.
    AnyFamily(u16),
    /// An explicit address, bound as given (`[::]` is bound dual-stack too).
    Addr(SocketAddr),
}

impl std::str::FromStr for Listen {
    type Err = String;
    /// `:9443`, `0.0.0.0:9443`, `127.0.0.1:0`, `[::]:9443`, `[::1]:9443`.
    fn from_str(s: &str) -> Result<Listen, String> {
        let s = s.trim();
        if let Some(port) = s.strip_prefix(':') {
            return port
                .parse()
                .map(Listen::AnyFamily)
                .map_err(|_| format!("{s:?}: bad port"));
        }
        s.parse().map(Listen::Addr).map_err(|_| {
            format!(
                "{s:?}: expected :PORT, or an address and port such as 0.0.0.0:9443 or [::]:9443"
            )
        })
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::AnyFamily(port) => write!(f, ":{port}"),
            Listen::Addr(addr) => write!(f, "{addr}"),
        }
    }
}

impl From<SocketAddr> for Listen {
    fn from(addr: SocketAddr) -> Listen {
        Listen::Addr(addr)
    }
}

/// Everything the server needs besides the admission handler and the registry.
#[derive(Debug, Clone)]
pub struct Config {
    /// HTTPS address for `/validate` and `/mutate` (`--listen`).
    pub listen: Listen,
    /// Plain-HTTP address for `/healthz` and `/readyz` (`--probe-listen`).
    pub probe_listen: Listen,
    /// Plain-HTTP address for `/metrics` (`--metrics-listen`).
    pub metrics_listen: Listen,
    pub certs: CertFiles,
    /// How often the certificate files are compared with what is served.
    pub cert_poll_interval: Duration,
    /// How long requests keep being served after the shutdown signal, with `/readyz` failing.
    pub shutdown_delay: Duration,
    /// How long requests in progress may take to finish once accepting has stopped.
    pub drain_timeout: Duration,
    pub handshake_timeout: Duration,
    /// How long a request body may take to arrive once its headers have (408 after that).
    pub body_read_timeout: Duration,
    /// Also the idle timeout of HTTP/1.1 keep-alive connections (hyper starts it on idle).
    pub header_read_timeout: Duration,
    pub max_connections: usize,
    /// Connections one peer address may hold at once on the webhook listener (0: no limit);
    /// past it new ones are closed at once.
    pub max_connections_per_source: usize,
    pub body_limit: usize,
    /// Bytes of request body being judged at once (docs/robustness.md, O1): judging costs 10-50× the
    /// body, so this bounds the memory of requests in flight whatever the number of cores. A
    /// larger body is judged alone.
    pub judging_budget: usize,
    /// Require a client certificate on the webhook listener (`--client-ca-file`).
    pub client_auth: Option<ClientAuth>,
}

impl Config {
    /// The production defaults: the addresses of the CLI defaults and the given certificate files.
    pub fn new(certs: CertFiles) -> Config {
        Config {
            listen: Listen::Addr(SocketAddr::from(([0, 0, 0, 0], 9443))),
            probe_listen: Listen::Addr(SocketAddr::from(([0, 0, 0, 0], 8081))),
            metrics_listen: Listen::Addr(SocketAddr::from(([0, 0, 0, 0], 8080))),
            certs,
            cert_poll_interval: Duration::from_secs(5),
            shutdown_delay: Duration::from_secs(5),
            drain_timeout: Duration::from_secs(30),
            // The API server completes a handshake in milliseconds; an idle connection holds a
            // slot for this long (docs/robustness.md, O2).
            handshake_timeout: HANDSHAKE_TIMEOUT,
            body_read_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            max_connections: 1024,
            max_connections_per_source: MAX_CONNECTIONS_PER_SOURCE,
            body_limit: BODY_LIMIT,
            judging_budget: JUDGING_BUDGET,
            client_auth: None,
        }
    }
}

/// The addresses actually bound (the real port when the config said 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addrs {
    pub webhook: SocketAddr,
    pub probe: SocketAddr,
    pub metrics: SocketAddr,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr} for {listener} (set {flag}): {source}")]
    Bind {
        listener: &'static str,
        flag: &'static str,
        addr: Listen,
        source: std::io::Error,
    },
    #[error("serving certificate: {0}")]
    Certificate(#[from] CertError),
    #[error("client CA (--client-ca-file): {0}")]
    ClientCa(CertError),
}

/// State the handlers share.
pub(crate) struct Shared {
    admission: Admission,
    metrics: Arc<Metrics>,
    registry: Arc<Registry>,
    shutting_down: AtomicBool,
    body_limit: usize,
    body_read_timeout: Duration,
    /// Permits are KiB of body being judged (`routes::answer`).
    judging: tokio::sync::Semaphore,
    judging_kib: u32,
}

/// A bound, not yet running server.
pub struct Server {
    config: Config,
    shared: Arc<Shared>,
    webhook: TcpListener,
    probe: TcpListener,
    metrics: TcpListener,
    resolver: Arc<tls::Resolver>,
    loaded: (Vec<u8>, Vec<u8>),
    /// The client verifier and the CA bytes it was built from, with `--client-ca-file`.
    client_auth: Option<(Arc<client_auth::ClientVerifier>, Vec<u8>)>,
    addrs: Addrs,
}

impl Server {
    /// Loads the certificate pair, registers the metrics into `registry` and binds all three
    /// listeners, so that every configuration error surfaces before anything is served.
    pub async fn bind(
        config: Config,
        admission: Admission,
        mut registry: Registry,
    ) -> Result<Server, ServerError> {
        let files = config.certs.clone();
        let (cert, key) = tls::read_pair(&files)?;
        let pair = tls::parse_pair(&cert, &key, &files)?;
        let client_auth = match &config.client_auth {
            Some(auth) => {
                let (verifier, pem) =
                    client_auth::ClientVerifier::load(auth).map_err(ServerError::ClientCa)?;
                Some((Arc::new(verifier), pem))
            }
            None => None,
        };

        let metrics = Arc::new(Metrics::register(&mut registry, &admission));
        metrics.tls_not_after.set(pair.not_after);

        let (webhook, webhook_addr) = bind_one("the webhook", "--listen", config.listen)?;
        let (probe, probe_addr) = bind_one("the probes", "--probe-listen", config.probe_listen)?;
        let (metrics_listener, metrics_addr) =
            bind_one("the metrics", "--metrics-listen", config.metrics_listen)?;
        let addrs = Addrs {
            webhook: webhook_addr,
            probe: probe_addr,
            metrics: metrics_addr,
        };
        Ok(Server {
            shared: Arc::new(Shared {
                admission,
                metrics,
                registry: Arc::new(registry),
                shutting_down: AtomicBool::new(false),
                body_limit: config.body_limit,
                body_read_timeout: config.body_read_timeout,
                judging: tokio::sync::Semaphore::new(kib(config.judging_budget) as usize),
                judging_kib: kib(config.judging_budget),
            }),
            resolver: Arc::new(tls::Resolver::new(pair.key)),
            loaded: (cert, key),
            client_auth,
            config,
            webhook,
            probe,
            metrics: metrics_listener,
            addrs,
        })
    }

    pub fn addrs(&self) -> Addrs {
        self.addrs
    }

    /// Serves until `shutdown` resolves, then: `/readyz` fails at once; requests keep being
    /// served for `shutdown_delay` (the API server needs that long to drop this endpoint);
    /// then accepting stops, idle connections close, and requests in progress get up to
    /// `drain_timeout`. Returns when the webhook listener has drained.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let Server {
            config,
            shared,
            webhook,
            probe,
            metrics,
            resolver,
            loaded,
            client_auth,
            addrs,
        } = self;
        let (stop_webhook, webhook_stopped) = watch::channel(false);
        let (stop_aux, aux_stopped) = watch::channel(false);

        let limits = conn::Limits {
            handshake_timeout: config.handshake_timeout,
            header_read_timeout: config.header_read_timeout,
            max_connections: config.max_connections,
            max_per_source: config.max_connections_per_source,
            drain_timeout: config.drain_timeout,
        };
        // Probes and metrics are tiny and local; a short drain is plenty.
        let aux_limits = conn::Limits {
            max_connections: 64,
            max_per_source: 0,
            drain_timeout: Duration::from_secs(1),
            ..limits
        };
        let verifier = client_auth
            .as_ref()
            .map(|(v, _)| v.clone() as Arc<dyn rustls::server::danger::ClientCertVerifier>);
        let acceptor = TlsAcceptor::from(tls::server_config(resolver.clone(), verifier));
        let webhook_task = tokio::spawn(conn::serve(
            "webhook",
            webhook,
            Some(acceptor),
            routes::webhook(shared.clone()),
            limits,
            shared.metrics.listener("webhook"),
            webhook_stopped,
        ));
        let probe_task = tokio::spawn(conn::serve(
            "probes",
            probe,
            None,
            routes::probes(shared.clone()),
            aux_limits,
            shared.metrics.listener("probes"),
            aux_stopped.clone(),
        ));
        let metrics_task = tokio::spawn(conn::serve(
            "metrics",
            metrics,
            None,
            routes::metrics(shared.clone()),
            aux_limits,
            shared.metrics.listener("metrics"),
            aux_stopped.clone(),
        ));
        let reloader = tls::Reloader {
            files: config.certs.clone(),
            resolver,
            metrics: shared.metrics.clone(),
            interval: config.cert_poll_interval,
        };
        let reload_task = tokio::spawn(reloader.run(loaded, aux_stopped.clone()));
        let ca_task = client_auth
            .zip(config.client_auth.clone())
            .map(|((verifier, pem), auth)| {
                let reloader = client_auth::CaReloader {
                    path: auth.ca_file,
                    verifier,
                    metrics: shared.metrics.clone(),
                    interval: config.cert_poll_interval,
                };
                tokio::spawn(reloader.run(pem, aux_stopped))
            });
        tracing::info!(
            webhook = %addrs.webhook,
            probes = %addrs.probe,
            metrics = %addrs.metrics,
            cert = %config.certs.cert.display(),
            client_ca = ?config.client_auth.as_ref().map(|a| a.ca_file.display()),
            // The cores tokio found: the CPU limit rounded down, at least one (the install's
            // 500m gives one worker; TOKIO_WORKER_THREADS overrides it).
            worker_threads = tokio::runtime::Handle::current().metrics().num_workers(),
            "serving"
        );

        shutdown.await;
        shared.shutting_down.store(true, Ordering::Relaxed);
        tracing::info!(
            delay = ?config.shutdown_delay,
            "shutdown requested: /readyz fails now; still serving during the shutdown delay"
        );
        tokio::time::sleep(config.shutdown_delay).await;
        tracing::info!("shutdown delay over: no new connections; finishing requests in progress");
        let _ = stop_webhook.send(true);
        if let Err(e) = webhook_task.await {
            tracing::error!(error = %e, "webhook listener task failed");
        }
        let _ = stop_aux.send(true);
        for task in [probe_task, metrics_task, reload_task]
            .into_iter()
            .chain(ca_task)
        {
            let _ = task.await;
        }
        tracing::info!("stopped");
    }
}

/// Whole KiB, at least 1, at most what a semaphore takes at once.
fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// Binds and reads back the real address (the port the kernel chose for port 0).
fn bind_one(
    listener: &'static str,
    flag: &'static str,
    addr: Listen,
) -> Result<(TcpListener, SocketAddr), ServerError> {
    let err = |source| ServerError::Bind {
        listener,
        flag,
        addr,
        source,
    };
    let bound = conn::bind(addr).map_err(err)?;
    let local = bound.local_addr().map_err(err)?;
    Ok((bound, local))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_forms() {
        assert_eq!(":9443".parse(), Ok(Listen::AnyFamily(9443)));
        assert_eq!(
            "0.0.0.0:9443".parse(),
            Ok(Listen::Addr(SocketAddr::from(([0, 0, 0, 0], 9443))))
        );
        assert_eq!(
            "[::]:9443".parse::<Listen>().map(|l| l.to_string()),
            Ok("[::]:9443".to_string())
        );
        assert_eq!(":9443".parse::<Listen>().unwrap().to_string(), ":9443");
        for bad in ["9443", ":", ":port", "localhost:9443", "[::]", ":70000"] {
            assert!(bad.parse::<Listen>().is_err(), "{bad}");
        }
    }
}
