//! R1, the reuse grace, against a real kube-apiserver: an IPAddress deleted through the API
//! server, the view seeing it go through its watch, and a new IPAddress for the same address
//! refused through the API server until the grace has passed in real time, then admitted. Once
//! with `--reuse-grace` (LiveOptions::reuse_grace), once with an InClusterIPPool's own
//! `addressReuseGracePeriodSeconds` (longer than the flag: the pool's wins). The CRDs are read
//! in place from `../shared/fixtures/crds/`. Skips with a line saying why when
//! `KUBEBUILDER_ASSETS` or `../shared` is missing.

mod e2e;

use std::time::{Duration, Instant};

use e2e::api::*;
use e2e::{eventually, ControlPlane};
use ipam_guard::cluster::live::{self, LiveOptions};
use ipam_guard::cluster::ClusterView;
use ipam_guard::kinds::Kind;
use ipam_guard::model::ObjKey;
use serde_json::json;

const NS: &str = "reuse";
const FLAG: Duration = Duration::from_secs(4);
const POOL_GRACE: u64 = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_reuse_grace_refuses_a_new_holder_until_the_grace_has_passed() {
    e2e::each_server(
        "e2e_reuse_grace_refuses_a_new_holder_until_the_grace_has_passed",
        against,
    )
    .await;
}

async fn against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    let capi = [Kind::IPAddressClaim, Kind::IPAddress, Kind::InClusterIPPool];
    for c in e2e::crds().expect("the upstream CRDs") {
        if capi.contains(&c.kind) {
            install_crd(&client, c).await;
        }
    }
    eventually("discovery to serve the kinds installed", WAIT, || async {
        live::discover(&client)
            .await
            .is_ok_and(|served| served.len() == capi.len())
    })
    .await;
    create_namespace(&client, NS).await;
    let options = LiveOptions {
        reuse_grace: FLAG,
        ..LiveOptions::default()
    };
    let (guard, ca_pem) = start_ipam_guard_with(&cp, options).await;
    register_webhooks(&client, guard.addr, &ca_pem).await;

    let flag_pool = in_cluster_pool(NS, "flag-pool", "10.20.0.10-10.20.0.50", "10.20.0.1");
    let mut own_pool = in_cluster_pool(NS, "own-pool", "10.21.0.10-10.21.0.50", "10.21.0.1");
    own_pool["spec"]["addressReuseGracePeriodSeconds"] = json!(POOL_GRACE);
    for p in [&flag_pool, &own_pool] {
        create(&client, p, false).await.expect(201);
    }
    let stored = get(&client, &own_pool).await;
    assert_eq!(
        stored.body["spec"]["addressReuseGracePeriodSeconds"], POOL_GRACE,
        "the CRD keeps the field"
    );
    // Wait until the API server calls us: an address outside its pool is refused (A8).
    let probe = ip_address(NS, "probe", "probe", "10.20.0.200", "flag-pool");
    eventually("the webhook to judge IPAddresses", WAIT, || {
        let (client, probe) = (&client, &probe);
        async move { create(client, probe, true).await.status == 422 }
    })
    .await;

    // --- the flag's grace ---
    let waited = reuse(&client, &guard, "flag-pool", "10.20.0.11", "--reuse-grace").await;
    println!("--reuse-grace {FLAG:?}: the new holder admitted {waited:?} after the delete");
    assert!(waited >= FLAG, "admitted {waited:?} after the delete");

    // --- the pool's own grace, longer than the flag: the pool's wins ---
    let waited = reuse(
        &client,
        &guard,
        "own-pool",
        "10.21.0.11",
        "(addressReuseGracePeriodSeconds)",
    )
    .await;
    println!("addressReuseGracePeriodSeconds {POOL_GRACE}: admitted {waited:?} after the delete");
    assert!(
        waited >= Duration::from_secs(POOL_GRACE),
        "admitted {waited:?} after the delete"
    );
}

/// Creates an IPAddress for `ip` in `pool`, deletes it, re-creates the same object (admitted: not
/// a new holder), deletes it again, and then creates a new holder until admitted. Returns how long
/// after the second delete began the new holder was admitted; checks every refusal before that
/// is R1's, naming the old object and the grace's source `source`.
async fn reuse(
    client: &kube::Client,
    guard: &Guard,
    pool: &str,
    ip: &str,
    source: &str,
) -> Duration {
    let name = format!("old-{pool}");
    let old = ip_address(NS, &name, &name, ip, pool);
    create(client, &old, false).await.expect(201);
    wait_for_address(guard, &name, true).await;
    delete(client, &old).await.expect(200);
    wait_for_address(guard, &name, false).await;
    // The same object for the same claim (a restore, a retried create) passes.
    create(client, &old, false).await.expect(201);
    wait_for_address(guard, &name, true).await;

    let deleted = Instant::now();
    delete(client, &old).await.expect(200);
    wait_for_address(guard, &name, false).await;
    let new = ip_address(NS, &format!("new-{pool}"), &format!("new-{pool}"), ip, pool);
    let first = create(client, &new, false).await;
    assert_eq!(
        first.status,
        422,
        "refused within the grace ({:?} after the delete): {first:#?}",
        deleted.elapsed()
    );
    let expect_refusal = |r: &Resp| {
        let msg = r.message();
        assert!(
            msg.contains(&format!(
                "spec.address: Invalid value: \"{ip}\": {ip} was released by IPAddress {NS}/old-{pool} "
            )) && msg.contains(source)
                && msg.ends_with("[ipam-guard R1]"),
            "{msg}"
        );
    };
    expect_refusal(&first);
    // A dry run is judged the same way.
    let dry = create(client, &new, true).await;
    if dry.status == 422 {
        expect_refusal(&dry);
    }
    loop {
        let r = create(client, &new, false).await;
        if r.status == 201 {
            return deleted.elapsed();
        }
        assert_eq!(r.status, 422, "{r:#?}");
        expect_refusal(&r);
        assert!(deleted.elapsed() < WAIT, "never admitted");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until the view holds (or no longer holds) the IPAddress `name`.
async fn wait_for_address(guard: &Guard, name: &str, held: bool) {
    let key = ObjKey::new(Kind::IPAddress, Some(NS), name);
    eventually(
        &format!("the view to show {name} held: {held}"),
        WAIT,
        || {
            let now = ClusterView::read(&*guard.view).address(&key).is_some();
            async move { now == held }
        },
    )
    .await;
}
