//! The live view's lists and health against the fake API server: the first list comes from the
//! watch cache in one request, relists never go back in time, a silent watch fails closed (not
//! ready, 503 for view-dependent writes, pending entries held) and heals, and a CRD installed
//! later is watched at once, the view unsynced until its first list is in.

mod live_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ipam_guard::admission::{Admission, Endpoint};
use ipam_guard::cluster::live::{LiveOptions, LiveView};
use ipam_guard::cluster::ClusterView;
use ipam_guard::kinds::Kind;
use ipam_guard::model::ObjKey;
use ipam_guard::rules::Options;
use live_support::*;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(20);

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
    api.apply(in_cluster_pool("ns", "pool-a", &["10.0.0.10-10.0.0.30"]));
    api
}

fn create_review(object: &Value) -> Vec<u8> {
    let (kind, version) = Kind::from_api_version(
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
    )
    .unwrap();
    let gvk = json!({"group": kind.group(), "version": version, "kind": kind.name()});
    let gvr = json!({"group": kind.group(), "version": version, "resource": kind.plural()});
    let name = object["metadata"]["name"].as_str().unwrap();
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{name}"), "kind": gvk, "resource": gvr, "requestKind": gvk,
            "requestResource": gvr, "name": name, "namespace": object["metadata"]["namespace"],
            "operation": "CREATE", "userInfo": {"username": "admin"},
            "object": object, "oldObject": null, "dryRun": false
        }
    }))
    .unwrap()
}

/// The `response` of a validation.
fn validate(admission: &Admission, object: &Value) -> Value {
    let sent = create_review(object);
    let answer = admission.review_now(Endpoint::Validate, &sent);
    assert_eq!(answer.http_status, 200);
    serde_json::from_slice::<Value>(&answer.body).unwrap()["response"].clone()
}

#[tokio::test]
async fn x1_first_list_reads_the_watch_cache_and_a_relist_is_not_older_than_what_was_seen() {
    let api = capi_cluster().await;
    let view = LiveView::start(api.client(), LiveOptions::default());
    wait_for("synced", WAIT, || view.synced()).await;
    assert_eq!(
        api.list_queries(Kind::InClusterIPPool),
        ["resourceVersion=0"],
        "one list, from the watch cache, no limit (no pages)"
    );
    wait_for("the watch to open", WAIT, || {
        api.open_watches(Kind::InClusterIPPool) == 1
    })
    .await;
    api.apply(in_cluster_pool("ns", "pool-b", &["10.0.1.10-10.0.1.20"]));
    let seen = api.resource_version();
    wait_for("the watch to show pool-b", WAIT, || {
        view.ledger()
            .read()
            .pool(&ObjKey::new(Kind::InClusterIPPool, Some("ns"), "pool-b"))
            .is_some()
    })
    .await;
    api.force_relist(Kind::InClusterIPPool);
    wait_for("the relist", WAIT, || {
        api.list_queries(Kind::InClusterIPPool).len() == 2
    })
    .await;
    let relist = api.list_queries(Kind::InClusterIPPool)[1].clone();
    assert_eq!(
        relist,
        format!("resourceVersion={seen}&resourceVersionMatch=NotOlderThan")
    );
    wait_for("synced again", WAIT, || view.synced()).await;
    let lists = view
        .watch_health()
        .into_iter()
        .find(|h| h.kind == "InClusterIPPool")
        .unwrap()
        .lists;
    assert_eq!(lists, vec![("initial", 1), ("expired", 1)]);
}

#[tokio::test]
async fn x3_a_silent_watch_fails_closed_and_heals() {
    let api = capi_cluster().await;
    let view = LiveView::start(
        api.client(),
        LiveOptions {
            health_bound: Duration::from_secs(2),
            watch_timeout: Duration::from_secs(1),
            ..LiveOptions::default()
        },
    );
    wait_for("synced", WAIT, || view.synced()).await;
    let admission = Admission::new(view.clone(), Options::default());
    assert!(admission.ready());

    // The IPAddress watch goes silent: the connection is there, nothing comes.
    api.stall_watches(Kind::IPAddress);
    wait_for("the silent watch to fail the view closed", WAIT, || {
        !view.synced()
    })
    .await;
    assert!(!admission.ready(), "/readyz fails");
    let health = view.watch_health();
    let ip = health.iter().find(|h| h.kind == "IPAddress").unwrap();
    assert!(!ip.healthy);
    assert!(ip.last_event_age.unwrap() > Duration::from_secs(2));
    assert!(
        health
            .iter()
            .find(|h| h.kind == "InClusterIPPool")
            .unwrap()
            .healthy
    );
    let address = ip_address("ns", "addr-2", "10.0.0.12", "pool-a");
    let response = validate(&admission, &address);
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 503, "{response}");

    api.unstall_watches(Kind::IPAddress);
    wait_for("the watch to heal", WAIT, || view.synced()).await;
    assert!(admission.ready());
    assert_eq!(validate(&admission, &address)["allowed"], true);
}

#[tokio::test]
async fn x2_pending_entries_of_a_failed_watch_do_not_expire_until_it_heals() {
    let api = capi_cluster().await;
    let ttl = Duration::from_secs(10);
    let view = LiveView::start(
        api.client(),
        LiveOptions {
            pending_ttl: ttl,
            ..LiveOptions::default()
        },
    );
    wait_for("synced", WAIT, || view.synced()).await;
    let admission = Admission::new(view.clone(), Options::default());
    // An admitted IPAddress whose write never shows up in the watch.
    let admitted = ip_address("ns", "addr-1", "10.0.0.11", "pool-a");
    assert_eq!(validate(&admission, &admitted)["allowed"], true);
    let held = || {
        view.ledger()
            .read()
            .address(&ObjKey::new(Kind::IPAddress, Some("ns"), "addr-1"))
            .is_some()
    };

    api.fail_watches(Kind::IPAddress);
    wait_for("the failed watch to fail the view closed", WAIT, || {
        !view.synced()
    })
    .await;
    // Past its TTL the entry stays: the watch that would confirm or refute it is down.
    view.ledger()
        .sweep(Instant::now() + ttl + Duration::from_secs(1));
    assert_eq!(view.ledger().pending_len(), 1);
    assert!(held());

    api.unfail_watches(Kind::IPAddress);
    wait_for("the watch to heal", WAIT, || view.synced()).await;
    // Healthy again, the entry gets one more TTL and then goes.
    view.ledger()
        .sweep(Instant::now() + ttl * 2 + Duration::from_secs(2));
    assert_eq!(view.ledger().pending_len(), 0);
    assert!(!held());
}

/// A view whose discovery runs at start and then hourly, unless the CRD watch wakes it; synced.
async fn synced_with_hourly_discovery(api: &FakeApi) -> Arc<LiveView> {
    let view = LiveView::start(
        api.client(),
        LiveOptions {
            discovery_interval: Duration::from_secs(3600),
            ..LiveOptions::default()
        },
    );
    wait_for("synced", WAIT, || view.synced()).await;
    view
}

#[tokio::test]
async fn x3_a_crd_installed_later_is_watched_at_once_and_unsynced_until_listed() {
    let api = capi_cluster().await;
    // Discovery alone would not look again for an hour: only the CRD watch can explain a watch.
    let view = synced_with_hourly_discovery(&api).await;
    api.hold_lists(Kind::SpiderIPPool);
    api.serve(Kind::SpiderIPPool);
    api.apply(json!({
        "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
        "metadata": {"name": "spider"},
        "spec": {"subnet": "10.9.0.0/24", "ips": ["10.9.0.10-10.9.0.20"], "ipVersion": 4}
    }));
    wait_for("the new kind's first list", WAIT, || {
        api.lists(Kind::SpiderIPPool) >= 1
    })
    .await;
    assert!(!view.synced(), "a served kind not yet listed: not synced");
    api.stop_holding(Kind::SpiderIPPool);
    wait_for("synced with the new kind", WAIT, || view.synced()).await;
    assert!(view
        .ledger()
        .read()
        .pool(&ObjKey::new(Kind::SpiderIPPool, None, "spider"))
        .is_some());

    api.unserve(Kind::SpiderIPPool);
    wait_for("the removed kind to be dropped", WAIT, || {
        !watches(&view, Kind::SpiderIPPool)
    })
    .await;
    assert!(view.synced());
}

fn watches(view: &LiveView, kind: Kind) -> bool {
    view.watching().iter().any(|(k, _, _)| *k == kind)
}

/// The IPAddress watch's version, once the kind has been listed.
fn address_watch(view: &LiveView) -> Option<String> {
    view.watching()
        .into_iter()
        .find(|(k, _, listed)| *k == Kind::IPAddress && *listed)
        .map(|(_, version, _)| version)
}

#[tokio::test]
async fn x3_discovery_behind_the_crds_is_looked_at_again_until_it_agrees() {
    let api = capi_cluster().await;
    api.serve_versions(Kind::IPAddress, &["v1alpha1", "v1beta1"]);
    api.apply(ip_address("ns", "a", "10.0.0.12", "pool-a"));
    let view = synced_with_hourly_discovery(&api).await;
    assert_eq!(address_watch(&view).as_deref(), Some("v1beta1"));

    // The CRD serves v1beta2 too; the CRD event wakes discovery, which does not show it yet.
    api.freeze_discovery();
    let before = api.discoveries();
    api.serve(Kind::IPAddress);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(address_watch(&view).as_deref(), Some("v1beta1"));
    // Looked at again, but less and less often: 250 ms, then twice as late each time (about
    // four looks in 2 s; a look every 250 ms would be eight).
    let looks = api.discoveries() - before;
    assert!((2..=5).contains(&looks), "{looks} discoveries in 2 s");
    api.thaw_discovery();
    wait_for("the watch to move to v1beta2", WAIT, || {
        address_watch(&view).as_deref() == Some("v1beta2")
    })
    .await;
    wait_for("synced again", WAIT, || view.synced()).await;
    assert_eq!(count(&view, Kind::IPAddress), 1);

    // The CRD deleted while discovery still lists the kind: dropped once discovery agrees, and
    // the view is ready without it.
    api.freeze_discovery();
    api.unserve(Kind::IPAddress);
    tokio::time::sleep(Duration::from_millis(500)).await;
    api.thaw_discovery();
    wait_for("the deleted kind to be dropped", WAIT, || {
        !watches(&view, Kind::IPAddress)
    })
    .await;
    wait_for("synced without it", WAIT, || view.synced()).await;
    assert_eq!(count(&view, Kind::IPAddress), 0);
}

#[tokio::test]
async fn x3_without_the_crd_watch_the_view_never_syncs() {
    // An API server that serves our kinds but refuses CRD lists (RBAC without CRDs): fail closed.
    let api = capi_cluster().await;
    api.forbid_crds();
    let view: Arc<LiveView> = LiveView::start(api.client(), LiveOptions::default());
    wait_for("the kinds to be listed", WAIT, || {
        view.watching().iter().all(|(_, _, listed)| *listed) && !view.watching().is_empty()
    })
    .await;
    assert!(!view.synced());
    let crds = view
        .watch_health()
        .into_iter()
        .find(|h| h.kind == "CustomResourceDefinition")
        .unwrap();
    assert!(!crds.healthy);
}
