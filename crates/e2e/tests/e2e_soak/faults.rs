//! Faults on a schedule drawn from the seed, one at a time, each undone before the next: the
//! decider killed (and started again), paused and continued, shut down cleanly (its admissions
//! handed over), a follower shut down, the API server restarted, etcd restarted, every
//! connection from the replicas to the API server cut (watches, lists, the Lease), etcd's
//! history compacted under the watches so that they must relist (410 Gone), and the replicas'
//! answers held past the webhook's timeout.

use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::cluster::{Setup, WEBHOOK_TIMEOUT};
use super::model::{Kind, Method, Outcome};
use super::rng::Rng;
use super::workload::Shared;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    KillDecider,
    PauseDecider,
    TermDecider,
    TermFollower,
    RestartApiServer,
    CutWatches,
    RestartEtcd,
    /// etcd compacted to its current revision, then the API server's watches of etcd and the
    /// replicas' watches cut: each resumes from a revision etcd no longer has.
    Compaction,
    /// The front holds the replicas' answers longer than the webhook's `timeoutSeconds`.
    SlowAnswers,
}

impl FaultKind {
    /// One round of the schedule: every kind once, and the clean handover (the path that once
    /// brought deleted objects back as held) twice.
    pub const ROUND: [FaultKind; 10] = [
        FaultKind::KillDecider,
        FaultKind::PauseDecider,
        FaultKind::TermDecider,
        FaultKind::TermFollower,
        FaultKind::RestartApiServer,
        FaultKind::CutWatches,
        FaultKind::TermDecider,
        FaultKind::RestartEtcd,
        FaultKind::Compaction,
        FaultKind::SlowAnswers,
    ];

    pub fn label(self) -> &'static str {
        match self {
            FaultKind::KillDecider => "SIGKILL decider",
            FaultKind::PauseDecider => "SIGSTOP decider",
            FaultKind::TermDecider => "SIGTERM decider",
            FaultKind::TermFollower => "SIGTERM follower",
            FaultKind::RestartApiServer => "API server restart",
            FaultKind::CutWatches => "watches cut",
            FaultKind::RestartEtcd => "etcd restart",
            FaultKind::Compaction => "compaction under the watches",
            FaultKind::SlowAnswers => "answers held past the webhook timeout",
        }
    }

    /// Whether the replicas' watches break: their view may lag what is stored until they resume.
    pub fn breaks_watches(self) -> bool {
        matches!(
            self,
            FaultKind::RestartApiServer
                | FaultKind::CutWatches
                | FaultKind::RestartEtcd
                | FaultKind::Compaction
        )
    }

    /// What `Fault::effect` counts for this kind, if it counts anything.
    pub fn effect(self) -> Option<&'static str> {
        match self {
            FaultKind::Compaction => Some("410 relists"),
            FaultKind::SlowAnswers => Some("answers held"),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Fault {
    pub kind: FaultKind,
    /// Seconds since the run began: injected, and undone (the replica ready again, the API
    /// server ready again).
    pub start: f64,
    pub end: f64,
    pub detail: String,
    /// For a fault aimed at the decider: its own metric said it was the decider just before.
    pub hit_the_decider: bool,
    /// What the fault did that shows it happened (`FaultKind::effect`): the replicas' lists
    /// after a 410 within 20 s of a compaction, the answers a slow front held.
    pub effect: Option<u64>,
    /// Why the fault did not take hold (a pause the process did not stop for): the run fails on
    /// it as the harness's failure, not ipam-guard's.
    pub missed: Option<String>,
}

/// The replica the Lease names, waiting a little for an election in progress; else any running one.
async fn decider(setup: &Setup, rng: &mut Rng) -> (usize, bool) {
    for _ in 0..20 {
        if let Some(d) = setup.decider().await {
            return (d, true);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let running: Vec<usize> = (0..setup.replicas.len())
        .filter(|i| setup.replicas[*i].running())
        .collect();
    (*rng.pick(&running), false)
}

/// Injects faults until `until`, the first after 4-7 s, then 4-8 s after writes were admitted
/// again, in rounds of `FaultKind::ROUND`, each round in an order drawn from the seed.
pub async fn run(setup: &mut Setup, shared: &Shared, mut rng: Rng, until: Duration) -> Vec<Fault> {
    let mut faults = Vec::new();
    let mut round = Vec::new();
    let mut next = rng.millis(4_000, 7_000);
    loop {
        let wait = next.saturating_sub(shared.epoch.elapsed());
        tokio::time::sleep(wait).await;
        // A fault needs time left to be undone and to see writes admitted again while the
        // clients still write: an API server restart took up to about 15 s to admit again
        // (docs/robustness.md), so a fault drawn later would end the run unrecovered.
        if shared.epoch.elapsed() + Duration::from_secs(20) > until {
            break;
        }
        if round.is_empty() {
            round = FaultKind::ROUND.to_vec();
            // Fisher-Yates, drawn from the fault stream; taken from the end.
            for i in (1..round.len()).rev() {
                round.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        let kind = round.pop().unwrap();
        let (start, detail, hit_the_decider, effect, missed) =
            inject(setup, kind, &mut rng, shared).await;
        let end = shared.now();
        println!(
            "fault at {start:.1} s: {} ({detail}), undone at {end:.1} s{}",
            kind.label(),
            missed
                .as_ref()
                .map_or(String::new(), |why| format!("; DID NOT HOLD: {why}"))
        );
        faults.push(Fault {
            kind,
            start,
            end,
            detail,
            hit_the_decider,
            effect,
            missed,
        });
        // The next fault waits until writes are admitted again (at most 45 s), so that each
        // time to admit again is that of one fault.
        let waited = std::time::Instant::now();
        while !admitted_since(shared, start) && waited.elapsed() < Duration::from_secs(45) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        next = shared.epoch.elapsed() + rng.millis(4_000, 8_000);
    }
    faults
}

/// Whether a pool or address write sent at or after `t` has been admitted.
fn admitted_since(shared: &Shared, t: f64) -> bool {
    let history = shared.history.lock().unwrap();
    // Records are pushed as answers come: one sent after `t` is among the last ones.
    history.iter().rev().take(20_000).any(|r| {
        r.send >= t
            && matches!(r.method, Method::Create | Method::Update)
            && r.key.kind != Kind::Claim
            && matches!(r.outcome, Outcome::Done | Outcome::AlreadyExists)
    })
}

const READY: Duration = Duration::from_secs(90);

/// Injects one fault and undoes it; returns when it was injected (after the decider was looked
/// up, so that the time to admit again counts from the fault itself), what was done, whether it
/// hit the decider and its effect.
async fn inject(
    setup: &mut Setup,
    kind: FaultKind,
    rng: &mut Rng,
    shared: &Shared,
) -> (f64, String, bool, Option<u64>, Option<String>) {
    let at;
    let mut leader = false;
    let mut effect = None;
    let mut missed = None;
    let detail = match kind {
        FaultKind::KillDecider => {
            let (d, named) = decider(setup, rng).await;
            leader = setup.replicas[d].is_leader().await == Some(true);
            at = shared.now();
            setup.replicas[d].kill();
            setup.refresh_front(&[]);
            tokio::time::sleep(rng.millis(500, 2_000)).await;
            setup.restart(d);
            let ready = setup.wait_ready(d, READY).await;
            format!(
                "{}{}, ready {:.1} s after its restart",
                setup.replicas[d].name,
                if named { "" } else { " (no decider named)" },
                ready.as_secs_f64()
            )
        }
        FaultKind::PauseDecider => {
            let (d, _) = decider(setup, rng).await;
            let pause = rng.millis(3_000, 7_000);
            leader = setup.replicas[d].is_leader().await == Some(true);
            let stopped_at = Timestamp::now();
            at = shared.now();
            setup.replicas[d].signal("-STOP");
            // A Service stops sending to a pod once its readiness probe fails.
            tokio::time::sleep(Duration::from_secs(2)).await;
            setup.refresh_front(&[d]);
            tokio::time::sleep(pause.saturating_sub(Duration::from_secs(2))).await;
            let held = pause_held(setup, d, stopped_at).await;
            setup.replicas[d].signal("-CONT");
            setup.wait_ready(d, READY).await;
            setup.refresh_front(&[]);
            let name = &setup.replicas[d].name;
            if let Err(why) = held {
                // What follows the pause is no fault of ipam-guard's: not checked as one.
                leader = false;
                missed = Some(format!("{name} was not paused: {why}"));
            }
            format!("{name} for {:.1} s", pause.as_secs_f64())
        }
        FaultKind::TermDecider | FaultKind::TermFollower => {
            let (d, _) = decider(setup, rng).await;
            let target = match kind {
                FaultKind::TermDecider => d,
                _ => {
                    let others: Vec<usize> = (0..setup.replicas.len())
                        .filter(|i| *i != d && setup.replicas[*i].running())
                        .collect();
                    *rng.pick(&others)
                }
            };
            at = shared.now();
            setup.replicas[target].signal("-TERM");
            let exited = setup.replicas[target]
                .wait_exit(Duration::from_secs(30))
                .await
                .is_some();
            setup.refresh_front(&[]);
            tokio::time::sleep(rng.millis(200, 1_500)).await;
            let name = setup.replicas[target].name.clone();
            setup.restart(target);
            let ready = setup.wait_ready(target, READY).await;
            format!(
                "{name}{}, back and ready after {:.1} s",
                if exited {
                    ""
                } else {
                    " (did not exit within 30 s: killed)"
                },
                ready.as_secs_f64()
            )
        }
        FaultKind::RestartApiServer => {
            let away = rng.millis(1_000, 3_000);
            at = shared.now();
            setup.cp.stop_apiserver();
            tokio::time::sleep(away).await;
            setup.cp.restart_apiserver().await;
            format!("stopped for {:.1} s", away.as_secs_f64())
        }
        FaultKind::CutWatches => {
            at = shared.now();
            let n = setup.tap.cut();
            format!("{n} connections")
        }
        FaultKind::RestartEtcd => {
            let away = rng.millis(2_000, 5_000);
            at = shared.now();
            setup.cp.stop_etcd();
            tokio::time::sleep(away).await;
            setup.cp.restart_etcd().await;
            // The API server runs on and reconnects by itself; it must be ready again.
            setup.cp.wait_ready(READY).await;
            format!(
                "down for {:.1} s, the API server ready again {:.1} s after",
                away.as_secs_f64(),
                shared.now() - at - away.as_secs_f64()
            )
        }
        FaultKind::Compaction => {
            let before = setup.relists_expired().await;
            at = shared.now();
            let compacted = setup.compact_etcd().await;
            // The API server's own watches of etcd resume from their last revision, now
            // compacted: its watch cache lists again and ends the watches it serves, whose
            // resumes are then older than anything it holds. The replicas' are cut besides.
            let etcd_side = setup.etcd_tap.cut();
            let replica_side = setup.tap.cut();
            let mut relists = 0;
            let waited = std::time::Instant::now();
            while waited.elapsed() < Duration::from_secs(20) {
                tokio::time::sleep(Duration::from_millis(250)).await;
                if let (Some(b), Some(a)) = (before, setup.relists_expired().await) {
                    relists = a.saturating_sub(b);
                    if relists > 0 {
                        break;
                    }
                }
            }
            effect = Some(relists);
            format!(
                "{}, {etcd_side} connections to etcd and {replica_side} to the API server cut, \
                 {relists} relists after a 410 within {:.1} s",
                match compacted {
                    Ok(rev) => format!("compacted at revision {rev}"),
                    Err(e) => format!("compaction failed: {e}"),
                },
                waited.elapsed().as_secs_f64()
            )
        }
        FaultKind::SlowAnswers => {
            let window = rng.millis(1_000, 3_000);
            let hold = rng.millis(11_000, 13_000);
            let before = setup.front.slow.held.load(Ordering::Relaxed);
            at = shared.now();
            setup.front.slow_for(window, hold);
            // Until the last answer held has been passed on.
            tokio::time::sleep(window + hold + Duration::from_millis(500)).await;
            let held = setup.front.slow.held.load(Ordering::Relaxed) - before;
            effect = Some(held as u64);
            format!(
                "answers sent in {:.1} s held {:.1} s each (the webhook's timeout is {} s): {held}",
                window.as_secs_f64(),
                hold.as_secs_f64(),
                WEBHOOK_TIMEOUT.as_secs()
            )
        }
    };
    (at, detail, leader, effect, missed)
}

/// Whether replica `d`, sent SIGSTOP at `stopped_at`, is still paused at the end of its pause:
/// every thread stopped, its metrics endpoint silent, and the Lease not renewed by it since. A
/// renew in flight when the signal came carries a renewTime from before it.
async fn pause_held(setup: &Setup, d: usize, stopped_at: Timestamp) -> Result<(), String> {
    let replica = &setup.replicas[d];
    if replica.is_stopped() != Some(true) {
        return Err(format!(
            "its state is not T (stopped: {:?})",
            replica.is_stopped()
        ));
    }
    if let Ok(Some(leads)) =
        tokio::time::timeout(Duration::from_millis(300), replica.is_leader()).await
    {
        return Err(format!("its metrics endpoint answered (is_leader {leads})"));
    }
    match setup.lease().await {
        Some(lease) if lease.held_by(&replica.name) && lease.renewed > Some(stopped_at) => {
            Err(format!(
                "the Lease says it renewed at {:?}, after the signal at {stopped_at}",
                lease.renewed
            ))
        }
        _ => Ok(()),
    }
}
