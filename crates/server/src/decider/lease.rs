//! The election loop: reads the Lease every retry period (or at once when a follower found its
//! decider stale), writes it as the state machine says, and publishes the result (logs, metrics)
//! on every change of standing. Also the release on shutdown and the takeover of a handover.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::Api;

use super::election::{Election, Record, Standing, Step};
use super::handover::Log;
use super::metrics::DeciderMetrics;
use super::peer::PeerClient;
use crate::admission::{basis_of, written};
use crate::cluster::{Basis, Caller, ClusterView};

/// The annotation holding the decider's peer address (`host:port`).
pub const ADDRESS_ANNOTATION: &str = "ipam-guard/decider-address";
/// Written with a release: where the next decider fetches the admissions of the last one.
pub(crate) const HANDOVER_ANNOTATION: &str = "ipam-guard/handover-from";

/// What the loop needs besides the election state.
pub(crate) struct LeaseLoop {
    pub(crate) api: Api<Lease>,
    pub(crate) name: String,
    pub(crate) address: String,
    pub(crate) election: Arc<Mutex<Election>>,
    pub(crate) metrics: DeciderMetrics,
    pub(crate) takeover: Arc<Takeover>,
    pub(crate) refresh: Arc<tokio::sync::Notify>,
}

/// What taking admissions over from a decider that stepped down needs.
pub(crate) struct Takeover {
    pub(crate) client: Arc<PeerClient>,
    pub(crate) view: Arc<dyn ClusterView>,
    pub(crate) log: Arc<Log>,
}

enum Wrote {
    Ok {
        previous_holder: bool,
        handover: Option<String>,
    },
    Conflict,
    /// No answer, or an error that does not say whether the write landed.
    Failed {
        previous_holder: bool,
    },
}

impl LeaseLoop {
    /// Runs until the task is aborted.
    pub(crate) async fn run(self) {
        let retry = self.lock().timing().retry;
        let mut last = Standing::Following(None);
        let mut ticker = tokio::time::interval(retry);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                // A follower was told its decider is not the decider any more: read now rather
                // than at the next tick.
                _ = self.refresh.notified() => {}
            }
            self.round().await;
            last = self.report(last);
        }
    }

    /// One read and at most one write.
    async fn round(&self) {
        // A call that hangs must not outlive the window it is meant to extend.
        let budget = self.lock().timing().retry;
        let current = match tokio::time::timeout(budget, self.api.get_opt(&self.name)).await {
            Ok(Ok(lease)) => lease,
            Ok(Err(e)) => {
                tracing::warn!(lease = %self.name, error = %e, "cannot read the decider lease");
                return;
            }
            Err(_) => {
                tracing::warn!(lease = %self.name, "reading the decider lease timed out");
                return;
            }
        };
        let record = current.as_ref().map(record);
        // Everything this round does is dated after the read was answered, never from the start
        // of the round: under load the API server may answer a read long after it was sent, with
        // a record written meanwhile. Dated back, that record could look expired while its
        // holder's fence is still open, and a takeover's wait would end before the old holder's
        // last admissions expire (the likely cause of a CI run where a replica still decided
        // while the lease already named another). The instant is still before any write below
        // is sent, so a fence counted from it is never longer than the write allows.
        let started = Instant::now();
        let step = self.lock().next(started, record.as_ref());
        let written = match step {
            Step::Follow => return,
            Step::Create => self.write(None, budget).await,
            Step::Renew | Step::Acquire => self.write(current, budget).await,
        };
        let mut election = self.lock();
        match written {
            Wrote::Ok {
                previous_holder,
                handover,
            } => {
                if let Some(acquired) = election.wrote(&step, started, previous_holder) {
                    if acquired.takeover {
                        self.metrics.takeovers.inc();
                    }
                    tracing::info!(
                        lease = %self.name,
                        identity = election.identity(),
                        takeover = acquired.takeover,
                        unanswered_write_landed = step == Step::Renew,
                        "acquired the decider lease"
                    );
                    if let (Some(from), Some(term)) = (handover, election.term()) {
                        // The election lock is held here: the task takes it only after the fetch.
                        let budget = election.timing().retry * 2;
                        let takeover = self.takeover.clone();
                        let shared = self.election.clone();
                        tokio::spawn(async move {
                            takeover.run(&from, term, &shared, budget).await;
                        });
                    }
                }
            }
            Wrote::Conflict => election.write_failed(&step, true, false),
            Wrote::Failed { previous_holder } => {
                election.write_failed(&step, false, previous_holder)
            }
        }
    }

    /// Creates (`current` None) or replaces the lease naming us, guarded by its resourceVersion.
    async fn write(&self, current: Option<Lease>, budget: std::time::Duration) -> Wrote {
        let identity = self.lock().identity().to_string();
        let lease_secs = self.lock().timing().lease.as_secs() as i32;
        let now = MicroTime(Timestamp::now());
        let creating = current.is_none();
        let mut lease = current.unwrap_or_else(|| Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec::default()),
        });
        // A handover offered by a clean release applies to this acquisition only.
        let handover = lease
            .metadata
            .annotations
            .as_mut()
            .and_then(|a| a.remove(HANDOVER_ANNOTATION));
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let previous = spec.holder_identity.clone().unwrap_or_default();
        let previous_holder = !creating && previous != identity;
        if previous != identity {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions =
                Some(spec.lease_transitions.unwrap_or(0) + i32::from(!creating));
        }
        spec.holder_identity = Some(identity);
        spec.lease_duration_seconds = Some(lease_secs);
        spec.renew_time = Some(now);
        lease
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(ADDRESS_ANNOTATION.to_string(), self.address.clone());
        let pp = PostParams::default();
        let call = async {
            if creating {
                self.api.create(&pp, &lease).await
            } else {
                // The object carries the resourceVersion we read: a write by anyone since is a 409.
                self.api.replace(&self.name, &pp, &lease).await
            }
        };
        match tokio::time::timeout(budget, call).await {
            Ok(Ok(_)) => Wrote::Ok {
                previous_holder,
                // Only a released lease hands over; a taken-over one's holder died or hung.
                handover: handover.filter(|_| previous.is_empty()),
            },
            Ok(Err(kube::Error::Api(e))) if e.code == 409 => {
                tracing::debug!(lease = %self.name, "another replica wrote the decider lease first");
                Wrote::Conflict
            }
            Ok(Err(e)) => {
                tracing::warn!(lease = %self.name, error = %e, "cannot write the decider lease");
                Wrote::Failed { previous_holder }
            }
            Err(_) => {
                tracing::warn!(lease = %self.name, "writing the decider lease timed out");
                Wrote::Failed { previous_holder }
            }
        }
    }

    /// Logs and exports a change of standing.
    fn report(&self, last: Standing) -> Standing {
        let now = self.lock().standing(Instant::now());
        let leading = matches!(now, Standing::Deciding | Standing::Waiting(_));
        self.metrics.is_leader.set(i64::from(leading));
        let changed = match (&last, &now) {
            (Standing::Deciding, Standing::Deciding) => false,
            (Standing::Waiting(_), Standing::Waiting(_)) => false,
            (Standing::Following(a), Standing::Following(b)) => a != b,
            _ => true,
        };
        let was_leading = matches!(last, Standing::Deciding | Standing::Waiting(_));
        if changed && was_leading && !leading {
            // Lost the lease, or could not renew it within the renew deadline: the time fence
            // already stopped decisions; say so loudly, it costs 503s until a decider is back.
            tracing::warn!(
                lease = %self.name,
                "this replica stopped deciding: it lost the decider lease or could not renew it in time"
            );
        }
        if changed {
            match &now {
                Standing::Deciding => {
                    tracing::info!(lease = %self.name, "this replica is now the decider")
                }
                Standing::Waiting(until) => tracing::info!(
                    lease = %self.name,
                    wait_ms = until.saturating_duration_since(Instant::now()).as_millis() as u64,
                    "this replica holds the decider lease and waits out the previous decider's pending window before deciding"
                ),
                Standing::Following(Some(addr)) => {
                    tracing::info!(lease = %self.name, decider = %addr, "following the decider")
                }
                Standing::Following(None) => tracing::info!(
                    lease = %self.name,
                    "no decider right now: view-dependent requests are refused until one is elected"
                ),
            }
        }
        now
    }

    /// Gives the lease up on shutdown: stop deciding first, then write an empty holder so another
    /// replica need not wait for expiry (it still waits out the pending TTL).
    /// Returns true when the lease was released with a handover offered (the caller then keeps
    /// the peer listener up until the next decider fetched the list).
    pub(crate) async fn release(
        api: &Api<Lease>,
        name: &str,
        election: &Mutex<Election>,
        address: &str,
        log: &Log,
    ) -> bool {
        let (identity, was_deciding) = {
            let mut e = election.lock().unwrap_or_else(|p| p.into_inner());
            let was = e.resign(Instant::now());
            (e.identity().to_string(), was)
        };
        // Not deciding any more: the list of admissions is final from here on.
        log.step_down();
        // A renew of the election loop may race with this write (409): read again and retry;
        // the loop no longer renews once resigned.
        for _ in 0..3 {
            let Ok(Some(mut lease)) = api.get_opt(name).await else {
                return false;
            };
            let Some(spec) = lease.spec.as_mut() else {
                return false;
            };
            if spec.holder_identity.as_deref() != Some(identity.as_str()) {
                return false;
            }
            spec.holder_identity = None;
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            let annotations = lease
                .metadata
                .annotations
                .get_or_insert_with(Default::default);
            annotations.remove(ADDRESS_ANNOTATION);
            if was_deciding {
                annotations.insert(HANDOVER_ANNOTATION.to_string(), address.to_string());
            }
            match api.replace(name, &PostParams::default(), &lease).await {
                Ok(_) => {
                    tracing::info!(lease = %name, handover = was_deciding, "released the decider lease");
                    return was_deciding;
                }
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => {
                    tracing::warn!(lease = %name, error = %e, "cannot release the decider lease");
                    return false;
                }
            }
        }
        tracing::warn!(lease = %name, "cannot release the decider lease: it kept changing");
        false
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Election> {
        self.election.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn record(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    Record {
        holder: spec.holder_identity.unwrap_or_default(),
        address: lease
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ADDRESS_ANNOTATION))
            .cloned(),
        resource_version: lease.metadata.resource_version.clone().unwrap_or_default(),
        renew_time: spec.renew_time.map(|t| t.0.to_string()).unwrap_or_default(),
    }
}

impl Takeover {
    /// Fetches the previous decider's admissions, installs them as pending entries, and lets
    /// this term decide at once. On any failure the term keeps waiting out the pending TTL.
    async fn run(
        &self,
        from: &str,
        term: Instant,
        election: &Mutex<Election>,
        budget: std::time::Duration,
    ) {
        let list = match tokio::time::timeout(budget, self.client.pending(from)).await {
            Ok(Ok(list)) => list,
            Ok(Err(e)) => {
                tracing::warn!(from, error = %e, "no handover from the previous decider: waiting out the pending TTL");
                return;
            }
            Err(_) => {
                tracing::warn!(
                    from,
                    "the handover from the previous decider timed out: waiting out the pending TTL"
                );
                return;
            }
        };
        let now = Instant::now();
        let mut installed = 0;
        for request in list.entries {
            let age = Duration::from_millis(request.admitted_ms_ago.unwrap_or(0));
            let projected = request.read(|req| {
                let basis = Basis {
                    admitted_ago: age,
                    ..basis_of(req)
                };
                Some((written(req)?, basis))
            });
            if let Ok(Some((projection, basis))) = projected {
                // Recorded under the decision lock like any admission, with its basis: one this
                // replica's own watch has already shown landed or refuted is not held again.
                let mut once = Some(projection);
                self.view
                    .reserve_as(&Caller::Trusted, &basis, &mut |_| once.take());
                installed += 1;
            }
            self.log.record(now, request);
        }
        let mut election = election.lock().unwrap_or_else(|p| p.into_inner());
        if election.handed_over(term, Instant::now()) {
            tracing::info!(
                from,
                entries = installed,
                "took over the previous decider's admissions as pending entries; deciding now"
            );
        }
    }
}
