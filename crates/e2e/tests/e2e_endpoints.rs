//! Cluster API Clusters' control-plane endpoints against a real kube-apiserver (CP1-CP4): a
//! pool that would hand out a Cluster's VIP is refused, a Cluster whose VIP another Cluster
//! holds is refused, a VIP claimed through an annotated claim is admitted, an address equal to
//! an unclaimed endpoint is refused, and a machine's address inside its own cluster's networks
//! is refused (CP5) while another cluster's machine may hold it; an infrastructure cluster is
//! judged in its Cluster's address space. The upstream CRDs are read in place from
//! `../shared/fixtures/crds/`; skips with a line saying why when `KUBEBUILDER_ASSETS` or
//! `../shared` is missing.

mod e2e;

use e2e::api::*;
use e2e::{eventually, ControlPlane};
use ipam_guard::cluster::ClusterView;
use ipam_guard::kinds::Kind;
use serde_json::{json, Value};

const NS: &str = "endpoints";

fn cluster(name: &str, host: &str) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": meta(name, Some(NS)),
        "spec": {
            "controlPlaneEndpoint": {"host": host, "port": 6443},
            "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]},
                               "services": {"cidrBlocks": ["10.96.0.0/12"]}}
        }
    })
}

fn marked_claim(name: &str, cluster: &str) -> Value {
    let mut c = claim(NS, name, "nodes");
    c["metadata"]["annotations"] = json!({"ipam-guard.io/control-plane-endpoint-of": cluster});
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_control_plane_endpoints() {
    e2e::each_server("e2e_control_plane_endpoints", endpoints_against).await;
}

async fn endpoints_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    create_namespace(&client, NS).await;
    let (guard, ca_pem) = start_ipam_guard(&cp).await;
    register_webhooks(&client, guard.addr, &ca_pem).await;
    let view = &*guard.view;
    // Until the API server calls ipam-guard for Clusters: an endpoint inside the cluster's own
    // service network is refused (CP2).
    eventually("the webhook to judge Clusters", WAIT, || {
        let client = &client;
        async move {
            let r = create(client, &cluster("probe", "10.96.0.1"), true).await;
            r.status == 422 && r.message().contains("[ipam-guard CP2]")
        }
    })
    .await;

    // CP1: a Cluster whose endpoint a pool can hand out.
    let nodes = in_cluster_pool(NS, "nodes", "10.0.0.10-10.0.0.50", "10.0.0.1");
    create(&client, &nodes, false).await.expect(201);
    held(view, Kind::InClusterIPPool, 1, "the view to hold the pool").await;
    let r = create(&client, &cluster("prod", "10.0.0.20"), false).await;
    refused(
        &r,
        "CP1",
        "can be handed out by InClusterIPPool endpoints/nodes",
    );

    // Outside every pool it is admitted; a host name holds no address at all.
    create(&client, &cluster("prod", "10.0.1.5"), false)
        .await
        .expect(201);
    create(&client, &cluster("by-name", "api.example.com"), false)
        .await
        .expect(201);
    held(view, Kind::Cluster, 2, "the view to hold the Clusters").await;

    // CP3: a pool that would hand out the VIP is refused, naming the Cluster.
    let extra = in_cluster_pool(NS, "extra", "10.0.1.2-10.0.1.9", "10.0.1.1");
    let r = create(&client, &extra, false).await;
    refused(
        &r,
        "CP3",
        "10.0.1.5, the control-plane endpoint of Cluster endpoints/prod",
    );
    let mut excluded = extra.clone();
    excluded["spec"]["excludedAddresses"] = json!(["10.0.1.5"]);
    create(&client, &excluded, true).await.expect(201);

    // An infrastructure cluster shares its own Cluster's endpoint, and no other cluster's.
    let vsphere = |name: &str, owner: &str| {
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "VSphereCluster",
            "metadata": {"name": name, "namespace": NS,
                         "labels": {"cluster.x-k8s.io/cluster-name": owner}},
            "spec": {"server": "vcenter.example.com",
                     "controlPlaneEndpoint": {"host": "10.0.1.5", "port": 6443}}
        })
    };
    create(&client, &vsphere("prod", "prod"), false)
        .await
        .expect(201);
    let r = create(&client, &vsphere("dev", "dev"), false).await;
    refused(
        &r,
        "CP1",
        "already the control-plane endpoint of Cluster endpoints/prod",
    );
    held(
        view,
        Kind::VSphereCluster,
        1,
        "the view to hold the VSphereCluster",
    )
    .await;

    // CP1: a Cluster whose VIP another Cluster holds.
    let r = create(&client, &cluster("staging", "10.0.1.5"), false).await;
    refused(
        &r,
        "CP1",
        "already the control-plane endpoint of Cluster endpoints/prod",
    );

    // A VIP claimed from the pool through an annotated claim is the endpoint's own.
    create(&client, &marked_claim("staging-vip", "staging"), false)
        .await
        .expect(201);
    let vip = ip_address(NS, "staging-vip", "staging-vip", "10.0.0.30", "nodes");
    create(&client, &vip, false).await.expect(201);
    held(
        view,
        Kind::IPAddress,
        1,
        "the view to hold the VIP's address",
    )
    .await;
    create(&client, &cluster("staging", "10.0.0.30"), false)
        .await
        .expect(201);
    held(view, Kind::Cluster, 3, "the view to hold staging").await;
    // Another Cluster may not take it, annotated claim or not.
    let r = create(&client, &cluster("dev", "10.0.0.30"), true).await;
    refused(&r, "CP1", "already held by IPAddress endpoints/staging-vip");

    // CP4: with the VIP's address gone, an unannotated claim's address may not take it; the
    // annotated claim's may.
    delete(&client, &vip).await.expect(200);
    held(
        view,
        Kind::IPAddress,
        0,
        "the view to drop the VIP's address",
    )
    .await;
    // `usage` counts the endpoint as used all the same: no machine may be given it.
    let nodes_key = ipam_guard::model::ObjKey::new(Kind::InClusterIPPool, Some(NS), "nodes");
    let usage = view.read().usage_of_pool(&nodes_key).expect("the pool");
    assert_eq!((usage.allocatable, usage.used), (41, 1), "{usage:?}");
    create(&client, &claim(NS, "web-0", "nodes"), false)
        .await
        .expect(201);
    held(
        view,
        Kind::IPAddressClaim,
        2,
        "the view to hold both claims",
    )
    .await;
    let web = ip_address(NS, "web-0", "web-0", "10.0.0.30", "nodes");
    let r = create(&client, &web, false).await;
    refused(
        &r,
        "CP4",
        "10.0.0.30 is the control-plane endpoint of Cluster endpoints/staging",
    );
    create(&client, &vip, false).await.expect(201);

    // CP5: a machine's address inside its own cluster's pod network is refused; the same address
    // for a machine of another cluster is admitted.
    let mut net_a = cluster("net-a", "api.net-a.example.com");
    net_a["spec"]["clusterNetwork"]["pods"]["cidrBlocks"] = json!(["10.0.0.0/24"]);
    create(&client, &net_a, false).await.expect(201);
    let mut a0 = claim(NS, "a-0", "nodes");
    a0["spec"]["clusterName"] = json!("net-a");
    let mut b0 = claim(NS, "b-0", "nodes");
    b0["spec"]["clusterName"] = json!("prod");
    create(&client, &a0, false).await.expect(201);
    create(&client, &b0, false).await.expect(201);
    held(view, Kind::Cluster, 4, "the view to hold net-a").await;
    let r = create(
        &client,
        &ip_address(NS, "a-0", "a-0", "10.0.0.40", "nodes"),
        false,
    )
    .await;
    refused(
        &r,
        "CP5",
        "lies in the pod network 10.0.0.0/24 of Cluster endpoints/net-a",
    );
    create(
        &client,
        &ip_address(NS, "b-0", "b-0", "10.0.0.40", "nodes"),
        false,
    )
    .await
    .expect(201);
    // A Cluster whose networks would take in its machine's address is refused at the block.
    let r = merge_patch(
        &client,
        &cluster("prod", "10.0.1.5"),
        json!({"spec": {"clusterNetwork": {"services": {"cidrBlocks": ["10.0.0.0/26"]}}}}),
    )
    .await;
    refused(&r, "CP5", "10.0.0.40 (IPAddress endpoints/b-0)");
    // One that holds none of them but overlaps the pool they draw from is admitted with a warning.
    let r = merge_patch(
        &client,
        &cluster("prod", "10.0.1.5"),
        json!({"spec": {"clusterNetwork": {"services": {"cidrBlocks": ["10.0.0.48/29"]}}}}),
    )
    .await;
    assert_eq!(r.status, 200, "{r:#?}");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("overlaps InClusterIPPool endpoints/nodes, which machines of this cluster draw addresses from")),
        "{:?}",
        r.warnings
    );

    // An update that does not move the endpoint passes whatever else it changes.
    let r = merge_patch(
        &client,
        &cluster("prod", "10.0.1.5"),
        json!({"spec": {"paused": true}}),
    )
    .await;
    assert_eq!(r.status, 200, "{r:#?}");

    // An infrastructure cluster without an address space of its own is in its Cluster's: the
    // pool `nodes` of `default` holds 10.0.0.45, the Cluster `east` is on another network.
    let mut east = cluster("east", "10.0.0.45");
    east["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "east"});
    create(&client, &east, false).await.expect(201);
    held(view, Kind::Cluster, 5, "the view to hold east").await;
    let mut infra = vsphere("east", "east");
    infra["spec"]["controlPlaneEndpoint"]["host"] = json!("10.0.0.45");
    create(&client, &infra, false).await.expect(201);
}
