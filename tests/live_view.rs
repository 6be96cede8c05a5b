//! The live view against a fake API server (tests/live_support): discovery, first sync and
//! readiness (X3), watch events, relists after `410 Gone` (X1), CRDs installed and removed later.
//! Loopback only; every wait is bounded.

mod live_support;

use std::sync::Arc;
use std::time::Duration;

use ipam_guard::cluster::live::{LiveOptions, LiveView};
use ipam_guard::cluster::ClusterView;
use ipam_guard::kinds::Kind;
use ipam_guard::model::ObjKey;
use live_support::*;

const WAIT: Duration = Duration::from_secs(20);

fn fast() -> LiveOptions {
    LiveOptions {
        discovery_interval: Duration::from_millis(200),
        ..LiveOptions::default()
    }
}

fn key(kind: Kind, ns: Option<&str>, name: &str) -> ObjKey {
    ObjKey::new(kind, ns, name)
}

fn has_pool(view: &LiveView, ns: Option<&str>, kind: Kind, name: &str) -> bool {
    view.ledger().read().pool(&key(kind, ns, name)).is_some()
}

fn has_address(view: &LiveView, ns: &str, name: &str) -> bool {
    view.ledger()
        .read()
        .address(&key(Kind::IPAddress, Some(ns), name))
        .is_some()
}

async fn capi_cluster() -> FakeApi {
    let api = FakeApi::start().await;
    for k in [
        Kind::IPAddressClaim,
        Kind::IPAddress,
        Kind::InClusterIPPool,
        Kind::GlobalInClusterIPPool,
    ] {
        api.serve(k);
    }
    api.apply(in_cluster_pool("ns", "pool-a", &["10.0.0.10-10.0.0.20"]));
    api.apply(global_pool("shared", &["10.1.0.0/24"]));
    api.apply(ip_address("ns", "addr-1", "10.0.0.11", "pool-a"));
    api.apply(claim("ns", "addr-1", "pool-a"));
    api
}

#[tokio::test]
async fn x3_synced_only_after_every_watched_kind_is_listed() {
    let api = capi_cluster().await;
    api.hold_lists(Kind::InClusterIPPool);
    let view = LiveView::start(api.client(), fast());
    wait_for("the pool list to be requested", WAIT, || {
        api.lists(Kind::InClusterIPPool) >= 1
    })
    .await;
    wait_for("the other kinds to be listed", WAIT, || {
        has_address(&view, "ns", "addr-1")
            && has_pool(&view, None, Kind::GlobalInClusterIPPool, "shared")
    })
    .await;
    assert!(
        !view.synced(),
        "one watched kind has not finished its first list: not ready"
    );
    api.release_list(Kind::InClusterIPPool);
    wait_for("synced", WAIT, || view.synced()).await;
    assert!(has_pool(&view, Some("ns"), Kind::InClusterIPPool, "pool-a"));
    assert_eq!(count(&view, Kind::IPAddressClaim), 1);
    assert_eq!(count(&view, Kind::IPAddress), 1);
    // Kinds not served are not watched, and do not block readiness.
    let watching: Vec<Kind> = view.watching().into_iter().map(|(k, _, _)| k).collect();
    assert_eq!(
        watching,
        vec![
            Kind::IPAddressClaim,
            Kind::IPAddress,
            Kind::InClusterIPPool,
            Kind::GlobalInClusterIPPool
        ]
    );
}

#[tokio::test]
async fn x3_never_synced_without_discovery() {
    // Everything answers but discovery, and no kind is served: discovery alone keeps the view
    // unready. Waiting for its retries (not for time) shows it stayed so across several tries.
    let api = FakeApi::start().await;
    api.fail_discovery();
    let view = LiveView::start(api.client(), fast());
    wait_for("the CRD watch to be healthy", WAIT, || {
        view.watch_health()
            .iter()
            .any(|h| h.kind == "CustomResourceDefinition" && h.healthy)
    })
    .await;
    let tries = api.discoveries();
    wait_for("discovery to fail three more times", WAIT, || {
        api.discoveries() >= tries + 3
    })
    .await;
    assert!(!view.synced());
    assert!(view.watching().is_empty());
}

#[tokio::test]
async fn x1_discovery_reads_the_storage_version_or_the_latest_served() {
    let api = FakeApi::start().await;
    api.serve(Kind::IPAddress);
    api.serve_versions(Kind::IPAddressClaim, &["v1alpha1", "v1beta1"]);
    api.serve(Kind::SpiderIPPool);
    api.serve(Kind::VSphereMachineTemplate);
    api.serve(Kind::Metal3IPClaim);
    let view = LiveView::start(api.client(), fast());
    wait_for("synced", WAIT, || view.synced()).await;
    let watching: Vec<(Kind, String)> = view
        .watching()
        .into_iter()
        .map(|(k, v, _)| (k, v))
        .collect();
    assert_eq!(
        watching,
        vec![
            (Kind::IPAddressClaim, "v1beta1".to_string()),
            (Kind::IPAddress, "v1beta2".to_string()),
            (Kind::Metal3IPClaim, "v1alpha1".to_string()),
            (Kind::SpiderIPPool, "v2beta1".to_string()),
        ],
        "no rule reads VSphereMachineTemplates from the view: they are not watched (Metal3 IPClaims are, for H1 and H2)"
    );
    assert_eq!(api.lists(Kind::VSphereMachine), 0);
}

#[tokio::test]
async fn x1_watch_events_add_update_and_delete() {
    let api = capi_cluster().await;
    let view = LiveView::start(api.client(), fast());
    wait_for("synced", WAIT, || view.synced()).await;
    wait_for("the watch to open", WAIT, || {
        api.open_watches(Kind::IPAddress) == 1
    })
    .await;

    api.apply(ip_address("ns", "addr-2", "10.0.0.12", "pool-a"));
    wait_for("ADDED", WAIT, || has_address(&view, "ns", "addr-2")).await;

    api.apply(ip_address("ns", "addr-2", "10.0.0.13", "pool-a"));
    wait_for("MODIFIED", WAIT, || {
        view.ledger()
            .read()
            .address(&key(Kind::IPAddress, Some("ns"), "addr-2"))
            .and_then(|a| a.ip)
            .is_some_and(|ip| ip.to_string() == "10.0.0.13")
    })
    .await;

    api.delete(Kind::IPAddress, Some("ns"), "addr-2");
    wait_for("DELETED", WAIT, || !has_address(&view, "ns", "addr-2")).await;

    api.delete(Kind::GlobalInClusterIPPool, None, "shared");
    wait_for("pool DELETED", WAIT, || {
        !has_pool(&view, None, Kind::GlobalInClusterIPPool, "shared")
    })
    .await;
    assert!(view.synced());
    view.ledger().read().check_consistency();
}

#[tokio::test]
async fn x1_relist_after_410_keeps_old_data_until_init_done() {
    let api = capi_cluster().await;
    api.apply(in_cluster_pool("ns", "pool-b", &["10.0.1.10-10.0.1.20"]));
    let view = LiveView::start(api.client(), fast());
    wait_for("synced", WAIT, || view.synced()).await;
    wait_for("the watch to open", WAIT, || {
        api.open_watches(Kind::InClusterIPPool) == 1
    })
    .await;
    assert!(has_pool(&view, Some("ns"), Kind::InClusterIPPool, "pool-b"));
    let lists_before = api.lists(Kind::InClusterIPPool);

    // pool-b goes while the watch is down; the resumed watch is answered 410 Gone.
    api.hold_lists(Kind::InClusterIPPool);
    api.delete_silently(Kind::InClusterIPPool, Some("ns"), "pool-b");
    api.force_relist(Kind::InClusterIPPool);
    wait_for("the relist to start", WAIT, || {
        api.lists(Kind::InClusterIPPool) > lists_before
    })
    .await;
    // Mid-relist: the old data is still served and the view stays ready. No wait is needed to
    // see it: the relist's Init was fed before its list request went out, and keys go only at
    // InitDone, which the held list cannot reach.
    assert!(has_pool(&view, Some("ns"), Kind::InClusterIPPool, "pool-b"));
    assert!(has_pool(&view, Some("ns"), Kind::InClusterIPPool, "pool-a"));
    assert!(view.synced());

    api.stop_holding(Kind::InClusterIPPool);
    wait_for("the vanished pool to be removed", WAIT, || {
        !has_pool(&view, Some("ns"), Kind::InClusterIPPool, "pool-b")
    })
    .await;
    assert!(has_pool(&view, Some("ns"), Kind::InClusterIPPool, "pool-a"));
    assert_eq!(count(&view, Kind::InClusterIPPool), 1);
    view.ledger().read().check_consistency();
}

#[tokio::test]
async fn x1_crd_installed_later_is_watched_and_removed_crd_is_dropped() {
    let api = capi_cluster().await;
    let view = LiveView::start(api.client(), fast());
    wait_for("synced", WAIT, || view.synced()).await;
    assert!(!view
        .watching()
        .iter()
        .any(|(k, _, _)| *k == Kind::SpiderIPPool));

    api.serve(Kind::SpiderIPPool);
    api.apply(serde_json::json!({
        "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
        "metadata": {"name": "spider"},
        "spec": {"subnet": "10.9.0.0/24", "ips": ["10.9.0.10-10.9.0.20"], "ipVersion": 4}
    }));
    wait_for("the new kind's objects", WAIT, || {
        has_pool(&view, None, Kind::SpiderIPPool, "spider")
    })
    .await;
    wait_for("synced again", WAIT, || view.synced()).await;

    let discoveries = api.discoveries();
    api.unserve(Kind::SpiderIPPool);
    wait_for("the removed kind to be dropped", WAIT, || {
        count(&view, Kind::SpiderIPPool) == 0
            && !view
                .watching()
                .iter()
                .any(|(k, _, _)| *k == Kind::SpiderIPPool)
    })
    .await;
    assert!(api.discoveries() > discoveries);
    assert!(view.synced());
    assert!(has_pool(&view, Some("ns"), Kind::InClusterIPPool, "pool-a"));
}

#[tokio::test]
async fn dropping_the_view_stops_its_watches() {
    let api = capi_cluster().await;
    let view = LiveView::start(api.client(), fast());
    wait_for("synced", WAIT, || view.synced()).await;
    wait_for("watches to open", WAIT, || {
        api.open_watches(Kind::IPAddress) == 1
    })
    .await;
    let view: Arc<LiveView> = view;
    // Discovery and every watch task hold the index: once it is gone, none of them can run again.
    let index = Arc::downgrade(view.ledger());
    let discoveries = api.discoveries();
    drop(view);
    wait_for("every task of the view to end", WAIT, || {
        index.upgrade().is_none()
    })
    .await;
    // A closed connection is noticed when the server next writes to it: keep writing.
    let mut n = 0;
    wait_for("watches to close", WAIT, || {
        n += 1;
        api.apply(ip_address(
            "ns",
            &format!("addr-{n}"),
            "10.0.0.19",
            "pool-a",
        ));
        api.open_watches(Kind::IPAddress) == 0
    })
    .await;
    assert!(
        api.discoveries() <= discoveries + 1,
        "discovery stopped too (one request may have been in flight at the drop)"
    );
}
