//! Addresses held outside pools against a real kube-apiserver: SpiderReservedIPs (RI3-RI5) and
//! a VSphereMachine's static addresses (SA1, SA2). A pool that would hand out a reserved address
//! is refused, an IPAddress at a reserved address is refused, overlapping ReservedIPs are
//! refused, an IPAddress at a machine's static address is refused, and a pool gaining a static
//! address is refused. The upstream CRDs are read in place from `../shared/fixtures/crds/`;
//! skips with a line saying why when `KUBEBUILDER_ASSETS` or `../shared` is missing.

mod e2e;

use e2e::api::*;
use e2e::{eventually, ControlPlane};
use ipam_guard::cluster::ClusterView;
use ipam_guard::kinds::Kind;
use serde_json::{json, Value};

const NS: &str = "holders";

fn reserved(name: &str, ips: &[&str]) -> Value {
    json!({
        "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderReservedIP",
        "metadata": meta(name, None),
        "spec": {"ipVersion": 4, "ips": ips}
    })
}

fn machine(name: &str, addrs: &[&str]) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "VSphereMachine",
        "metadata": meta(name, Some(NS)),
        "spec": {"template": "ubuntu-2204",
                 "network": {"devices": [{"networkName": "vm-network", "ipAddrs": addrs}]}}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_holders() {
    e2e::each_server("e2e_holders", holders_against).await;
}

async fn holders_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    create_namespace(&client, NS).await;
    let (guard, ca_pem) = start_ipam_guard(&cp).await;
    register_webhooks(&client, guard.addr, &ca_pem).await;
    let view = &*guard.view;
    // Until the API server calls ipam-guard for ReservedIPs: an entry of the other family is
    // refused (RI1).
    eventually("the webhook to judge SpiderReservedIPs", WAIT, || {
        let client = &client;
        async move {
            let r = create(client, &reserved("probe", &["fd00::1"]), true).await;
            r.status == 422 && r.message().contains("[ipam-guard RI1]")
        }
    })
    .await;

    create(&client, &reserved("vip", &["10.0.0.20"]), false)
        .await
        .expect(201);
    held(
        view,
        Kind::SpiderReservedIP,
        1,
        "the view to hold the ReservedIP",
    )
    .await;

    // RI3: another ReservedIP over the same address.
    let r = create(&client, &reserved("vips", &["10.0.0.18-10.0.0.22"]), false).await;
    refused(&r, "RI3", "overlaps with ReservedIP vip (10.0.0.20)");
    create(&client, &reserved("vips", &["10.0.0.21-10.0.0.22"]), true)
        .await
        .expect(201);

    // RI5: a pool that would hand out the reserved address, and the fix.
    let nodes = in_cluster_pool(NS, "nodes", "10.0.0.10-10.0.0.50", "10.0.0.1");
    let r = create(&client, &nodes, false).await;
    refused(
        &r,
        "RI5",
        "can hand out 10.0.0.20, reserved by SpiderReservedIP vip: exclude it (spec.excludedAddresses)",
    );
    let mut excluded = nodes.clone();
    excluded["spec"]["excludedAddresses"] = json!(["10.0.0.20"]);
    create(&client, &excluded, false).await.expect(201);
    held(view, Kind::InClusterIPPool, 1, "the view to hold the pool").await;

    // RI4: an IPAddress at the reserved address.
    create(&client, &claim(NS, "web-0", "nodes"), false)
        .await
        .expect(201);
    let r = create(
        &client,
        &ip_address(NS, "web-0", "web-0", "10.0.0.20", "nodes"),
        false,
    )
    .await;
    refused(&r, "RI4", "10.0.0.20 is reserved by SpiderReservedIP vip");

    // A machine's static address, outside every pool.
    create(&client, &machine("db-0", &["10.0.0.60/24"]), false)
        .await
        .expect(201);
    held(
        view,
        Kind::VSphereMachine,
        1,
        "the view to hold the machine",
    )
    .await;

    // SA1: an IPAddress at the machine's static address.
    let r = create(
        &client,
        &ip_address(NS, "web-0", "web-0", "10.0.0.60", "nodes"),
        false,
    )
    .await;
    refused(
        &r,
        "SA1",
        "10.0.0.60 is the static address of VSphereMachine.infrastructure.cluster.x-k8s.io holders/db-0",
    );

    // SA2: the pool growing over the static address; growing elsewhere is fine.
    let r = merge_patch(
        &client,
        &excluded,
        json!({"spec": {"addresses": ["10.0.0.10-10.0.0.70"]}}),
    )
    .await;
    refused(
        &r,
        "SA2",
        "can hand out 10.0.0.60, the static address of VSphereMachine.infrastructure.cluster.x-k8s.io holders/db-0",
    );
    let r = merge_patch(
        &client,
        &excluded,
        json!({"spec": {"addresses": ["10.0.0.10-10.0.0.59"]}}),
    )
    .await;
    assert_eq!(r.status, 200, "{r:#?}");

    // SA3: a second machine with the same static address, or one the pool can hand out.
    let r = create(&client, &machine("db-1", &["10.0.0.60/24"]), false).await;
    refused(&r, "SA3", "the static address of VSphereMachine");
    let r = create(&client, &machine("db-1", &["10.0.0.15/24"]), false).await;
    refused(&r, "SA3", "allocatable in InClusterIPPool holders/nodes");

    // A ReservedIP over an address the pool can still hand out is admitted (RI6 only warns),
    // and `usage` counts it as used from then on.
    create(&client, &reserved("spare", &["10.0.0.55"]), false)
        .await
        .expect(201);
    held(
        view,
        Kind::SpiderReservedIP,
        2,
        "the view to hold both ReservedIPs",
    )
    .await;
    let key = ipam_guard::model::ObjKey::new(Kind::InClusterIPPool, Some(NS), "nodes");
    eventually("the view to hold the grown pool", WAIT, || {
        let n = view.read().usage_of_pool(&key).map_or(0, |u| u.allocatable);
        async move { n == 49 }
    })
    .await;
    let usage = view.read().usage_of_pool(&key).expect("the pool");
    assert_eq!(usage.used, 1, "{usage:?}");
}
