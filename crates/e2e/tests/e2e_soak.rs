//! A randomized soak under faults, against a real kube-apiserver (runs when `KUBEBUILDER_ASSETS`
//! or /usr/local/kubebuilder names one; tests/e2e), with an independent checker of what the API
//! server stored.
//!
//! Three `ipam-guard serve` replicas elect a decider (X2) and sit behind a round-robin relay
//! registered as the webhook; six clients write pools, addresses and claims of a small universe
//! through the API server, as users do, while faults hit the replicas, the API server, etcd and
//! the relay (`e2e_soak/faults.rs`: each kind at least once in a run of the default length). Then
//! the checker (`e2e_soak/checker.rs`) reads the history of every call and the API server's
//! lists: nothing stored may conflict (no overlapping pools, no address held twice, none
//! outside its pool, no held pool deleted), ipam-guard may never answer with a server error, and
//! it may never refuse a write that conflicts with nothing stored and nothing it admitted within
//! the pending TTL (a false refusal).
//!
//! Knobs: `IPAM_GUARD_SOAK_SECS` (default 180, per API server), `IPAM_GUARD_SOAK_SEED` (default:
//! drawn and printed; the clients' operations and the fault schedule follow from it, the
//! interleaving does not). The whole history, the replicas' logs and every change of the decider
//! Lease (read every 100 ms) of each run are kept under `$CARGO_TARGET_TMPDIR/e2e-soak/`.
//!
//! In `e2e_soak/`: `cluster` (control plane, replicas, webhook registration), `proxy` (the
//! relays), `workload` (the clients), `faults`, `model` (keys, specs, the history's records),
//! `checker` and `ipset` (the checker and its address arithmetic), `rng`.

#[path = "../../../tests/server_support/client.rs"]
mod client;
mod e2e;
#[path = "e2e/replica.rs"]
mod replica;

#[path = "e2e_soak/checker.rs"]
mod checker;
#[path = "e2e_soak/cluster.rs"]
mod cluster;
#[path = "e2e_soak/faults.rs"]
mod faults;
#[path = "e2e_soak/ipset.rs"]
mod ipset;
#[path = "e2e_soak/model.rs"]
mod model;
#[path = "e2e_soak/proxy.rs"]
mod proxy;
#[path = "e2e_soak/rng.rs"]
mod rng;
#[path = "e2e_soak/workload.rs"]
mod workload;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use cluster::{Setup, PENDING_TTL};
use model::{Kind, Outcome, Record};
use rng::Rng;
use workload::Shared;

const CLIENTS: usize = 6;
const REPLICAS: usize = 3;
/// Long enough for one round of every fault kind (`FaultKind::ROUND`) with the time each takes
/// to be undone and writes to be admitted again.
const DEFAULT_SECS: u64 = 180;
/// Watch latency the false-refusal model allows for.
const SLACK: f64 = 2.0;

fn soak_secs() -> u64 {
    std::env::var("IPAM_GUARD_SOAK_SECS")
        .ok()
        .map(|v| {
            v.trim()
                .parse()
                .unwrap_or_else(|e| panic!("IPAM_GUARD_SOAK_SECS={v}: {e}"))
        })
        .unwrap_or(DEFAULT_SECS)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_under_faults_stores_no_conflict_and_refuses_nothing_free() {
    let (seed, given) = rng::seed_from_env();
    println!(
        "soak seed {seed} ({}); replay with IPAM_GUARD_SOAK_SEED={seed}",
        if given {
            "from IPAM_GUARD_SOAK_SEED"
        } else {
            "drawn"
        }
    );
    e2e::each_server(
        "soak_under_faults_stores_no_conflict_and_refuses_nothing_free",
        |server| soak_against(server, seed),
    )
    .await;
}

async fn soak_against(server: e2e::Server, seed: u64) {
    let secs = soak_secs();
    let run_for = Duration::from_secs(secs);
    e2e::note(format!(
        "seed {seed}, {secs} s, {CLIENTS} clients, {REPLICAS} replicas"
    ));
    let mut setup = Setup::start(&server, REPLICAS, seed).await;
    let shared = Shared::new();
    let leases = setup.record_leases(shared.epoch);
    // Bounded in count as well as in time: at most 100 calls a second per client.
    let max_calls = (secs as usize).max(1) * 100;
    let mut writers = Vec::new();
    for _ in 0..=CLIENTS {
        writers.push(cluster::writer(&setup.cp).await);
    }
    let client = writers.pop().unwrap();
    let clients: Vec<_> = writers
        .into_iter()
        .enumerate()
        .map(|(i, writer)| {
            workload::client(
                i,
                writer,
                &shared,
                Rng::stream(seed, i as u64 + 1),
                run_for,
                max_calls,
            )
        })
        .collect();
    let lists = workload::snapshots(client.clone(), &shared, Duration::from_secs(3), run_for);
    let fault_rng = Rng::stream(seed, 0);
    let (_, during, faults) = tokio::join!(
        futures::future::join_all(clients),
        lists,
        faults::run(&mut setup, &shared, fault_rng, run_for),
    );
    shared.stop.store(true, Ordering::Relaxed);
    let took = shared.now();

    let mut crashed = Vec::new();
    for r in &mut setup.replicas {
        if let Some(status) = r.exited() {
            crashed.push(format!("{} exited by itself ({status})", r.name));
        }
    }
    let mut last = Vec::new();
    for kind in [Kind::Pool, Kind::GlobalPool, Kind::Address] {
        let mut listed = None;
        for _ in 0..60 {
            listed = workload::list(&client, &shared, kind).await;
            if listed.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        last.push(listed.unwrap_or_else(|| panic!("no final LIST of {kind:?}")));
    }
    let history = shared.history.lock().unwrap().clone();
    let findings = checker::check(&checker::Input {
        history: &history,
        during: &during,
        last: &last,
        faults: &faults,
        ttl: PENDING_TTL.as_secs_f64(),
        slack: SLACK,
        no_decider: cluster::NO_DECIDER.as_secs_f64(),
    });
    let kept = keep(&setup, &server, seed, &history, &faults);
    std::fs::write(kept.join("lease.txt"), leases.lines().join("\n") + "\n").unwrap();
    for (file, items) in [
        ("violations.txt", &findings.violations),
        ("false-refusals.txt", &findings.false_refusals),
        (
            "stale-after-watch-fault.txt",
            &findings.stale_after_watch_fault,
        ),
    ] {
        std::fs::write(kept.join(file), items.join("\n") + "\n").unwrap();
    }

    let figures = Figures::of(&history);
    e2e::note(format!(
        "{} calls in {took:.0} s: {} admitted by ipam-guard ({} stored or deleted, the rest refused by the \
         API server), {} refused by ipam-guard ({}), {} fail-closed 503, {} webhook unreachable; \
         API server: {}; API server timeouts {} (the webhook's answer came after its timeoutSeconds: \
         refused); no answer {}",
        history.len(),
        figures.count(|o| matches!(o, Outcome::Done | Outcome::AlreadyExists | Outcome::Conflict)),
        figures.count(|o| *o == Outcome::Done),
        figures.count(|o| matches!(o, Outcome::Denied(_))),
        figures.by_rule(),
        figures.count(|o| *o == Outcome::Unavailable),
        figures.count(|o| *o == Outcome::WebhookFailed),
        figures.api_refusals(),
        figures.count(|o| *o == Outcome::WebhookTimeout),
        figures.count(|o| *o == Outcome::NoAnswer),
    ));
    let mut by_kind: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for f in &faults {
        let resumed =
            checker::resumed(&history, f).map_or("never".to_string(), |t| format!("{t:.1} s"));
        by_kind.entry(f.kind.label()).or_default().push(resumed);
    }
    let faults_text: Vec<String> = by_kind
        .iter()
        .map(|(k, v)| format!("{k} ×{} (admitting again after {})", v.len(), v.join(", ")))
        .collect();
    // What the faults that must show an effect did, by kind: (what, each one's count).
    let mut effects: BTreeMap<faults::FaultKind, (&str, Vec<u64>)> = BTreeMap::new();
    for f in &faults {
        if let (Some(what), Some(n)) = (f.kind.effect(), f.effect) {
            effects
                .entry(f.kind)
                .or_insert((what, Vec::new()))
                .1
                .push(n);
        }
    }
    let effects_text: Vec<String> = effects
        .iter()
        .map(|(k, (what, v))| {
            let v: Vec<String> = v.iter().map(u64::to_string).collect();
            format!("{}: {what} {}", k.label(), v.join(", "))
        })
        .collect();
    e2e::note(format!(
        "faults: {}{}",
        if faults_text.is_empty() {
            "none".to_string()
        } else {
            faults_text.join("; ")
        },
        if effects_text.is_empty() {
            String::new()
        } else {
            format!(" ({})", effects_text.join("; "))
        }
    ));
    e2e::note(format!(
        "violations {} ({} of them within the pending TTL after an admitted write the API server refused), \
         false refusals {} (of {} refusals checked; {} of them explained if a clean handover restarts \
         the pending TTL of what it hands over), {} refusals explained only by a watch fault, {} replica crashes",
        findings.violations.len(),
        findings.after_refused_write,
        findings.false_refusals.len(),
        findings.refusals_checked,
        findings.false_after_handover,
        findings.stale_after_watch_fault.len(),
        crashed.len()
    ));
    e2e::note(format!(
        "webhook relay {}: {} connections, {} found no replica",
        setup.front.addr,
        setup.front.stats.connections.load(Ordering::Relaxed),
        setup.front.stats.no_backend.load(Ordering::Relaxed)
    ));
    for s in findings.stale_after_watch_fault.iter().take(5) {
        println!("explained only by a watch fault: {s}");
    }

    let mut problems = String::new();
    let mut list = |title: &str, items: &[String]| {
        if !items.is_empty() {
            let _ = writeln!(problems, "{} {title}:", items.len());
            for i in items.iter().take(25) {
                let _ = writeln!(problems, "  - {i}");
            }
            if items.len() > 25 {
                let _ = writeln!(
                    problems,
                    "  - … {} more in {}",
                    items.len() - 25,
                    kept.display()
                );
            }
        }
    };
    list("invariant violations", &findings.violations);
    list("false refusals", &findings.false_refusals);
    list("replica crashes", &crashed);
    let missed: Vec<String> = faults.iter().filter_map(|f| f.missed.clone()).collect();
    list(
        "faults that did not take hold (the harness's failure)",
        &missed,
    );
    assert!(
        problems.is_empty(),
        "soak with IPAM_GUARD_SOAK_SEED={seed} against {}:\n{problems}history and replica logs: {}",
        server.label(),
        kept.display()
    );

    // A run that wrote little or met nothing proves nothing: the mix must have produced the
    // conflicts and the AlreadyExists path it is there for, and the faults must have happened.
    assert!(
        figures.count(|o| *o == Outcome::Done) >= 20,
        "too few writes stored: {figures:?}"
    );
    assert!(
        figures.count(|o| *o == Outcome::AlreadyExists) >= 5,
        "the AlreadyExists path was not exercised: {figures:?}"
    );
    assert!(
        findings.refusals_checked >= 5,
        "too few refusals to check: {figures:?}"
    );
    if secs >= 30 {
        assert!(!faults.is_empty(), "no fault was injected");
    }
    if secs >= DEFAULT_SECS {
        let missing: Vec<&str> = faults::FaultKind::ROUND
            .iter()
            .filter(|k| !faults.iter().any(|f| f.kind == **k))
            .map(|k| k.label())
            .collect();
        assert!(
            missing.is_empty(),
            "a run of {secs} s did not inject every kind of fault: {} missing",
            missing.join(", ")
        );
    }
    // A fault that did nothing proves nothing: each kind that counts its effect must have shown
    // it at least once (a compaction a 410 relist, a slow front a held answer and the API server
    // a timeout) wherever it was scheduled.
    for (kind, (what, counts)) in &effects {
        assert!(
            counts.iter().any(|n| *n > 0),
            "{} ×{}: no {what} (IPAM_GUARD_SOAK_SEED={seed})",
            kind.label(),
            counts.len()
        );
    }
    if effects
        .get(&faults::FaultKind::SlowAnswers)
        .is_some_and(|(_, v)| v.iter().any(|n| *n > 0))
    {
        assert!(
            figures.count(|o| *o == Outcome::WebhookTimeout) > 0,
            "answers were held past the webhook's timeout but the API server timed out no call: \
             {figures:?}"
        );
    }
}

/// Counts of outcomes.
#[derive(Debug)]
struct Figures(BTreeMap<Outcome, usize>);

impl Figures {
    fn of(history: &[Record]) -> Figures {
        let mut m = BTreeMap::new();
        for r in history {
            *m.entry(r.outcome.clone()).or_default() += 1;
        }
        Figures(m)
    }

    fn count(&self, pred: impl Fn(&Outcome) -> bool) -> usize {
        self.0.iter().filter(|(o, _)| pred(o)).map(|(_, n)| n).sum()
    }

    /// `P10 12, A9 7, …`: each rule of a denial counted once per denial.
    fn by_rule(&self) -> String {
        let mut rules: BTreeMap<&str, usize> = BTreeMap::new();
        for (o, n) in &self.0 {
            if let Outcome::Denied(ids) = o {
                for id in ids {
                    *rules.entry(id).or_default() += n;
                }
            }
        }
        let mut v: Vec<(&str, usize)> = rules.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn api_refusals(&self) -> String {
        [
            ("AlreadyExists", Outcome::AlreadyExists),
            ("NotFound", Outcome::NotFound),
            ("Conflict", Outcome::Conflict),
            ("invalid", Outcome::Invalid),
            ("other", Outcome::Other),
            ("500 from ipam-guard", Outcome::Webhook500),
        ]
        .iter()
        .map(|(label, o)| format!("{label} {}", self.count(|x| x == o)))
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// Writes the history and the faults to `$CARGO_TARGET_TMPDIR/e2e-soak/<version>-<seed>-<unix
/// seconds>/` and copies the replicas' and the API server's logs there; returns the folder. A
/// replay of the same seed keeps its own folder: the interleaving differs, so a failing run's
/// logs are evidence no replay brings back.
fn keep(
    setup: &Setup,
    server: &e2e::Server,
    seed: u64,
    history: &[Record],
    faults: &[faults::Fault],
) -> PathBuf {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("e2e-soak")
        .join(format!("{}-{seed}-{started}", server.version));
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = String::new();
    for f in faults {
        let _ = writeln!(
            text,
            "{:8.3} {:8.3} FAULT {} ({})",
            f.start,
            f.end,
            f.kind.label(),
            f.detail
        );
    }
    for r in history {
        let _ = writeln!(
            text,
            "{:8.3} {:8.3} client {} {:18} {:?} {} {:?} -> {} {} {}",
            r.send,
            r.answer,
            r.client,
            r.tag,
            r.method,
            r.key,
            r.spec,
            r.status,
            r.outcome.label(),
            r.message.replace('\n', " | ")
        );
    }
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_by(|a, b| {
        let t = |l: &str| {
            l.split_whitespace()
                .next()
                .and_then(|t| t.parse::<f64>().ok())
        };
        t(a).unwrap_or(0.0).total_cmp(&t(b).unwrap_or(0.0))
    });
    std::fs::write(dir.join("history.txt"), lines.join("\n") + "\n").unwrap();
    for entry in std::fs::read_dir(setup.dir.path())
        .into_iter()
        .flatten()
        .chain(std::fs::read_dir(setup.cp.dir.path()).into_iter().flatten())
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "log") {
            let _ = std::fs::copy(&path, dir.join(path.file_name().unwrap()));
        }
    }
    dir
}
