//! `serve` back at once when the API server is: the API server is stopped for two
//! minutes while ipam-guard runs on a loaded cluster (etcd keeps the data), then started again;
//! the view must be ready within 15 s of the API server answering again, which is when its
//! `/readyz` says ok and it serves every kind the view watches, whichever is later. A restarted
//! v1.20.2 says ok about 9 s before it serves any custom resource (docs/performance.md, "Live view").
//!
//! A test binary of its own so that no other e2e test shares the two cores while the clock runs:
//! `cargo test` runs the tests of one binary side by side.

mod e2e;

use std::time::{Duration, Instant};

use e2e::api::*;
use e2e::{eventually, ControlPlane};
use ipam_guard::cluster::ClusterView;
use ipam_guard::kinds::Kind;

const NS: &str = "outage";

/// How long the API server stays away in the long-outage test: the control-plane restart of the
/// issue (2 minutes). Costs that long once per `cargo test`: it runs against the newest server only.
const LONG_OUTAGE: Duration = Duration::from_secs(120);

/// How soon after the API server answers again the view must be ready.
const READY_AFTER_OUTAGE: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_outage_ready_soon_after_a_long_outage() {
    e2e::each_server(
        "e2e_outage_ready_soon_after_a_long_outage",
        e2e_outage_ready_soon_after_a_long_outage_against,
    )
    .await;
}

async fn e2e_outage_ready_soon_after_a_long_outage_against(assets: e2e::Server) {
    // Two minutes of nothing per server: against the newest only, as the full-scale sync.
    if e2e::servers()
        .ok()
        .and_then(|s| s.last())
        .map(|s| &s.apiserver)
        != Some(&assets.apiserver)
    {
        e2e::note("skipped here: runs against the newest server only");
        return;
    }
    // Full scale where CI asks for it (`IPAM_GUARD_E2E_SCALE=full`), else a tenth.
    let (pools, per_pool) = if assets.full_scale {
        (10_000, 10)
    } else {
        (1_000, 10)
    };
    e2e::note(format!(
        "{pools} pools, {} IPAddresses, {} s outage",
        pools * per_pool,
        LONG_OUTAGE.as_secs()
    ));
    // The view's own log (lists, failures, relists, with times), shown when this test fails.
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_max_level(tracing::Level::INFO)
        .try_init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    create_namespace(&client, NS).await;
    load_pools(&client, NS, pools, per_pool).await;
    let (guard, _ca) = start_ipam_guard(&cp).await;
    assert_eq!(guard.count(Kind::IPAddress), pools * per_pool);

    let watched: Vec<(Kind, String)> = guard
        .view
        .watching()
        .into_iter()
        .map(|(kind, version, _)| (kind, version))
        .collect();
    cp.stop_apiserver();
    tokio::time::sleep(LONG_OUTAGE).await;
    assert!(
        !guard.view.synced(),
        "the view fails closed during the outage"
    );
    // The API server answers again when its `/readyz` says ok and it serves a list of every kind
    // the view watches, whichever comes later: a restarted v1.20.2 says ok seconds before it
    // serves custom resources, or the other way round. The three are timed side
    // by side from the restart on; the view's clock starts at the later of the first two.
    let start = Instant::now();
    let (readyz, served, ready) = tokio::join!(
        async {
            cp.restart_apiserver().await;
            start.elapsed()
        },
        all_served(&client, &watched, start),
        async {
            eventually("ipam-guard to be ready again", SERVER_START, || {
                let synced = guard.view.synced();
                async move { synced }
            })
            .await;
            start.elapsed()
        },
    );
    let (last_kind, served_all) = served.iter().max_by_key(|(_, t)| *t).copied().unwrap();
    let back = readyz.max(served_all);
    e2e::note(format!(
        "from the restart: /readyz ok at {:.1} s, every watched kind served at {:.1} s (last {}), \
         view ready at {:.1} s",
        readyz.as_secs_f64(),
        served_all.as_secs_f64(),
        last_kind.display_name(),
        ready.as_secs_f64()
    ));
    let mut order = served.clone();
    order.sort_by_key(|(_, t)| *t);
    for (kind, t) in &order {
        let item = format!("{} {:.1} s", kind.display_name(), t.as_secs_f64());
        e2e::note_item("first served, from the restart", Some(&item));
    }
    e2e::note(format!(
        "ready {:.1} s after the API server answered again",
        ready.saturating_sub(back).as_secs_f64()
    ));
    assert!(
        ready <= back + READY_AFTER_OUTAGE,
        "ipam-guard ready {:.1} s after the API server answered again (at most {} s); \
         per kind, first served: {served:?}",
        (ready - back).as_secs_f64(),
        READY_AFTER_OUTAGE.as_secs()
    );
    assert_eq!(guard.count(Kind::InClusterIPPool), pools);
    assert_eq!(guard.count(Kind::IPAddress), pools * per_pool);
    guard.view.read().check_consistency();
    drop(guard);
    drop(cp);
}

/// How long a restarted API server may take to answer at all.
const SERVER_START: Duration = Duration::from_secs(90);

/// When, from `start`, the API server first answered a one-object LIST of each kind in `kinds`
/// with 200: each kind is asked again 100 ms after each failure, all kinds at once.
async fn all_served(
    client: &kube::Client,
    kinds: &[(Kind, String)],
    start: Instant,
) -> Vec<(Kind, Duration)> {
    let one = |kind: Kind, version: &str| {
        let url = format!(
            "{}?limit=1",
            collection(&format!("{}/{version}", kind.group()), kind, None)
        );
        async move {
            loop {
                let req = http::Request::get(&url).body(Vec::new()).unwrap();
                if client.request_text(req).await.is_ok() {
                    return (kind, start.elapsed());
                }
                assert!(
                    start.elapsed() < SERVER_START,
                    "{} not served {SERVER_START:?} after the restart",
                    kind.display_name()
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    futures::future::join_all(kinds.iter().map(|(k, v)| one(*k, v))).await
}
