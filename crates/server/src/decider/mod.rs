//! One decider across replicas (X2 with 2+ replicas).
//!
//! Every replica answers every review itself, except the one step X2 serialises: judging what
//! reads the view and recording the admitted object as a pending entry. That step runs on one
//! replica, elected through a Lease (`election`, `lease`); the others send it there over mutual
//! TLS (`peer`) and relay the answer. When no decider answers within the budget, view-dependent
//! requests are refused with a 503 that says so; everything else is still answered. A decider
//! that steps down cleanly hands its recent admissions to the next one (`handover`).
//!
//! Sits beside `server`, above `admission`: admission asks a `Route` where the step runs and
//! this module is that route.

pub mod election;
pub mod handover;
mod lease;
mod metrics;
pub mod peer;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use prometheus_client::registry::Registry;
use tokio::task::JoinHandle;

use crate::admission::{Admission, DecisionAnswer, DecisionRequest, Here, Route};
use crate::cluster::ClusterView;
use crate::model::Request;
use crate::server::Listen;
use election::{Election, Standing, Timing};
use handover::Log;
use lease::{LeaseLoop, Takeover};
use metrics::DeciderMetrics;
use peer::{PeerClient, PeerFiles, PeerTls};

pub use lease::ADDRESS_ANNOTATION;

/// How long a stepping-down decider stays up after serving the handover, so the answer is
/// written out before its peer connections close.
const HANDOVER_FLUSH: Duration = Duration::from_millis(500);

/// The default Lease name.
pub const DEFAULT_LEASE: &str = "ipam-guard-decider";

/// Everything `start` needs.
#[derive(Debug, Clone)]
pub struct DeciderConfig {
    pub lease: String,
    pub namespace: String,
    /// Unique per process (pod name plus a nonce): a restarted container must not believe it
    /// still holds the lease of its previous life, whose pending entries it lost.
    pub identity: String,
    /// `host:port` other replicas reach this one at (pod IP and peer port).
    pub advertise: String,
    pub peer_listen: Listen,
    pub peer_files: PeerFiles,
    pub timing: Timing,
    pub budget: Duration,
}

/// The route of a replica that shares a decider with others.
pub struct Decider {
    election: Arc<Mutex<Election>>,
    client: Arc<PeerClient>,
    tls: Arc<PeerTls>,
    metrics: DeciderMetrics,
    budget: Duration,
    /// Wakes the election loop early (a follower found its decider stale).
    refresh: Arc<tokio::sync::Notify>,
    api: Api<Lease>,
    lease: String,
    advertise: String,
    log: Arc<Log>,
    /// The election loop, stopped last on shutdown.
    lease_task: Mutex<Option<JoinHandle<()>>>,
    /// The peer listener, bound at start, served once admission exists.
    listener: Mutex<Option<(tokio::net::TcpListener, std::net::SocketAddr)>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Set when a release offered a handover: shutdown waits for the next decider to fetch it.
    handing_over: std::sync::atomic::AtomicBool,
}

#[derive(Debug, thiserror::Error)]
pub enum DeciderError {
    #[error(transparent)]
    Tls(#[from] peer::PeerTlsError),
    #[error("decider timing: {0}")]
    Timing(String),
    #[error("cannot listen for peers on {addr} (--peer-listen): {source}")]
    Bind {
        addr: Listen,
        source: std::io::Error,
    },
}

impl Decider {
    /// Loads the peer certificates and starts the election. The replica follows (forwarding,
    /// or refusing when nobody is elected) until it wins.
    pub fn start(
        client: kube::Client,
        config: DeciderConfig,
        view: Arc<dyn ClusterView>,
        registry: &mut Registry,
    ) -> Result<Arc<Decider>, DeciderError> {
        config.timing.check().map_err(DeciderError::Timing)?;
        let tls = Arc::new(PeerTls::load(config.peer_files.clone())?);
        // Bound before the election starts: once this replica wins, the others reach it at once.
        let err = |source| DeciderError::Bind {
            addr: config.peer_listen,
            source,
        };
        let listener = crate::server::bind_listener(config.peer_listen).map_err(err)?;
        let local = listener.local_addr().map_err(err)?;
        let peers = Arc::new(PeerClient::new(tls.clone()));
        let log = Arc::new(Log::new(config.timing.pending_ttl));
        let refresh = Arc::new(tokio::sync::Notify::new());
        let metrics = DeciderMetrics::new();
        metrics.register(registry);
        let election = Arc::new(Mutex::new(Election::new(
            config.identity.clone(),
            config.timing,
        )));
        let api: Api<Lease> = Api::namespaced(client, &config.namespace);
        let lease_loop = LeaseLoop {
            api: api.clone(),
            name: config.lease.clone(),
            address: config.advertise.clone(),
            election: election.clone(),
            metrics: metrics.clone(),
            takeover: Arc::new(Takeover {
                client: peers.clone(),
                view,
                log: log.clone(),
            }),
            refresh: refresh.clone(),
        };
        tracing::info!(
            lease = %config.lease,
            namespace = %config.namespace,
            identity = %config.identity,
            advertise = %config.advertise,
            "joining the decider election"
        );
        let lease_task = tokio::spawn(lease_loop.run());
        let tasks = vec![tokio::spawn(tls.clone().reload_forever())];
        Ok(Arc::new(Decider {
            election,
            client: peers,
            tls,
            metrics,
            budget: config.budget,
            refresh,
            api,
            lease: config.lease,
            advertise: config.advertise,
            log,
            lease_task: Mutex::new(Some(lease_task)),
            listener: Mutex::new(Some((listener, local))),
            tasks: Mutex::new(tasks),
            handing_over: std::sync::atomic::AtomicBool::new(false),
        }))
    }

    /// Serves the peer listener bound by `start`: decision requests from other replicas go to
    /// `admission`. Returns the address, or None when it is already being served.
    pub fn serve_peers(&self, admission: Admission) -> Option<std::net::SocketAddr> {
        let (listener, local) = self
            .listener
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
        let task = tokio::spawn(peer::serve(
            listener,
            self.tls.clone(),
            admission,
            self.log.clone(),
        ));
        self.tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(task);
        tracing::info!(addr = %local, "listening for decision requests from other replicas (mutual TLS)");
        Some(local)
    }

    /// At the start of a shutdown: stops deciding and the election, and gives the lease up so
    /// another replica takes over without waiting for it to expire, offering it this replica's
    /// admissions (`handover`). Requests still arriving here are forwarded to the next decider.
    pub async fn step_down(&self) {
        // The election loop keeps running, retired (see `Election::resign`): it follows the next
        // decider so the requests still arriving here during the drain are forwarded to it.
        self.metrics.is_leader.set(0);
        let release = LeaseLoop::release(
            &self.api,
            &self.lease,
            &self.election,
            &self.advertise,
            &self.log,
        );
        let offered = tokio::time::timeout(Duration::from_secs(2), release).await;
        self.handing_over.store(
            offered.unwrap_or(false),
            std::sync::atomic::Ordering::SeqCst,
        );
    }

    /// At the end of a shutdown: waits (bounded) until the next decider fetched the handover,
    /// then stops the election and the peer listener.
    pub async fn finish(&self) {
        if self.handing_over.load(std::sync::atomic::Ordering::SeqCst) {
            // The next replica reads the lease every retry period, then fetches at once.
            let retry = self
                .election
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .timing()
                .retry;
            let wait = retry * 2 + self.budget;
            tracing::info!(
                wait_ms = wait.as_millis() as u64,
                "waiting for the next decider to fetch the handover"
            );
            match tokio::time::timeout(wait, self.log.fetched()).await {
                Ok(()) => {
                    // The handler notified before hyper wrote the answer: give it time to reach
                    // the next decider before the listener and its connections go away.
                    tokio::time::sleep(HANDOVER_FLUSH).await;
                    tracing::info!("the next decider fetched the handover");
                }
                Err(_) => tracing::warn!(
                    "the next decider did not fetch the handover; it waits out the pending TTL"
                ),
            }
        }
        if let Some(task) = self
            .lease_task
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            task.abort();
        }
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }

    /// Whether this replica holds the lease now: the one writer of what must be written once
    /// across replicas (the periodic audit's PolicyReports).
    pub fn leads(&self) -> bool {
        !matches!(self.standing_now(), Standing::Following(_))
    }

    fn standing_now(&self) -> Standing {
        self.election
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .standing(Instant::now())
    }

    async fn forward_to(&self, request: DecisionRequest) -> DecisionAnswer {
        let start = Instant::now();
        let first = self.forward_once(&request, start).await;
        if !first.not_decider {
            return first;
        }
        // The replica we asked stepped down (or lost the lease): read the lease now and, if it
        // names another decider within the budget, ask that one once.
        let Standing::Following(Some(stale)) = self.standing_now() else {
            return first;
        };
        self.refresh.notify_one();
        while start.elapsed() < self.budget / 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            match self.standing_now() {
                Standing::Following(Some(addr)) if addr != stale => {
                    return self.forward_once(&request, start).await;
                }
                Standing::Following(_) => {}
                _ => return first,
            }
        }
        first
    }

    /// One forward to the decider the lease names, within what is left of the budget.
    async fn forward_once(&self, request: &DecisionRequest, start: Instant) -> DecisionAnswer {
        let Standing::Following(Some(addr)) = self.standing_now() else {
            self.metrics.forwarded("no_decider");
            return DecisionAnswer::unavailable(NO_DECIDER);
        };
        let left = self.budget.saturating_sub(start.elapsed());
        let sent = tokio::time::timeout(left, self.client.send(&addr, request)).await;
        self.metrics
            .forward_duration
            .observe(start.elapsed().as_secs_f64());
        match sent {
            Ok(Ok(answer)) => {
                self.metrics.forwarded(if answer.unavailable.is_some() {
                    "unavailable"
                } else {
                    "ok"
                });
                answer
            }
            Ok(Err(e)) => {
                self.metrics.forwarded("error");
                tracing::warn!(decider = %addr, error = %e, "forwarding a decision failed");
                DecisionAnswer::unavailable(format!(
                    "ipam-guard could not reach its decider replica ({e}), so it cannot check this write \
                     against other objects safely; retry in a few seconds"
                ))
            }
            Err(_) => {
                self.metrics.forwarded("timeout");
                tracing::warn!(decider = %addr, budget_ms = self.budget.as_millis() as u64, "the decider did not answer in time");
                DecisionAnswer::unavailable(format!(
                    "ipam-guard's decider replica at {addr} did not answer within {:?}, so this write cannot \
                     be checked against other objects safely; retry in a few seconds",
                    self.budget
                ))
            }
        }
    }
}

const NO_DECIDER: &str = "no ipam-guard replica is the decider right now (the election is in progress or the \
     decider lease expired), so this write cannot be checked against other objects safely; retry in a few seconds. \
     If this persists, check the ipam-guard pods' logs and their RBAC on leases";

impl Route for Decider {
    fn standing(&self) -> Here {
        match self.standing_now() {
            Standing::Deciding => Here::Decide,
            Standing::Waiting(until) => Here::Refuse(format!(
                "this ipam-guard replica just became the decider and waits {}s more until writes admitted \
                 by the previous decider can no longer be missing from its view (X2); retry shortly",
                until.saturating_duration_since(Instant::now()).as_secs() + 1
            )),
            Standing::Following(_) => Here::Forward,
        }
    }

    fn forward(&self, req: DecisionRequest) -> BoxFuture<'_, DecisionAnswer> {
        self.forward_to(req).boxed()
    }

    fn admitted(&self, req: &Request) {
        self.log.record(
            Instant::now(),
            DecisionRequest::new(req, &crate::cluster::Caller::Trusted),
        );
    }
}

impl Drop for Decider {
    fn drop(&mut self) {
        if let Some(task) = self
            .lease_task
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            task.abort();
        }
        for task in self
            .tasks
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }
}

/// A process-unique identity: `name` (the pod name) plus a nonce from the clock and pid.
pub fn identity(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{name}_{:x}{:x}", std::process::id(), nanos)
}
