//! Spiderpool's `SpiderSubnet` against a real kube-apiserver: overlapping and identical subnets
//! are refused (S10); a SpiderIPPool carved from a subnet is admitted inside it and refused
//! outside it, and a subnet update that drops a carved pool's address is refused (S11); a subnet
//! overlapping an InClusterIPPool of its address space is refused (P10); a subnet whose carved
//! pool holds addresses is not deleted (S12). The upstream CRDs are read in place from
//! `../shared/fixtures/crds/`; skips with a line saying why when `KUBEBUILDER_ASSETS` or
//! `../shared` is missing.

mod e2e;

use e2e::api::*;
use e2e::{eventually, ControlPlane};
use http::Method;
use ipam_guard::kinds::Kind;
use serde_json::{json, Value};

const SPIDER: &str = "spiderpool.spidernet.io/v2beta1";

fn subnet(name: &str, cidr: &str, ips: &[&str]) -> Value {
    json!({"apiVersion": SPIDER, "kind": "SpiderSubnet", "metadata": meta(name, None),
        "spec": {"subnet": cidr, "ips": ips}})
}

fn pool(name: &str, cidr: &str, ips: &[&str]) -> Value {
    json!({"apiVersion": SPIDER, "kind": "SpiderIPPool", "metadata": meta(name, None),
        "spec": {"subnet": cidr, "ips": ips}})
}

#[track_caller]
fn refused(r: &Resp, status: u16, rule: &str, text: &str) {
    assert_eq!(r.status, status, "{r:#?}");
    let m = r.message();
    assert!(
        m.contains(&format!("[ipam-guard {rule}]")) && m.contains(text),
        "{m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_spider_subnets() {
    e2e::each_server("e2e_spider_subnets", against).await;
}

async fn against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    create_namespace(&client, "nodes").await;
    let (guard, ca_pem) = start_ipam_guard(&cp).await;
    register_webhooks(&client, guard.addr, &ca_pem).await;

    // The webhook judges subnets: the pool rules' S1 on a subnet.
    eventually("the webhook to judge subnets", WAIT, || {
        let (client, s) = (&client, subnet("probe", "10.30.0.7/24", &["10.30.0.10"]));
        async move {
            let r = create(client, &s, true).await;
            r.status == 422 && r.message().contains("[ipam-guard S1]")
        }
    })
    .await;
    let rack_a = subnet("rack-a", "10.30.0.0/24", &["10.30.0.10-10.30.0.100"]);
    create(&client, &rack_a, false).await.expect(201);
    let g = &guard;
    eventually("the view to hold the subnet", WAIT, || async move {
        g.count(Kind::SpiderSubnet) == 1
    })
    .await;

    // S10: identical and overlapping subnets.
    let r = create(
        &client,
        &subnet("rack-b", "10.30.0.0/24", &["10.30.0.200"]),
        false,
    )
    .await;
    refused(
        &r,
        422,
        "S10",
        "overlaps the subnet of SpiderSubnet.spiderpool.spidernet.io rack-a (10.30.0.0/24)",
    );
    let r = create(
        &client,
        &subnet("rack-c", "10.30.0.128/25", &["10.30.0.200"]),
        false,
    )
    .await;
    refused(&r, 422, "S10", "SpiderSubnets never overlap");

    // S11: a carved pool inside its subnet is admitted, one reaching outside it refused.
    let carved = pool("pods-in", "10.30.0.0/24", &["10.30.0.20-10.30.0.30"]);
    create(&client, &carved, false).await.expect(201);
    let r = create(
        &client,
        &pool("pods-out", "10.30.0.0/24", &["10.30.0.90-10.30.0.120"]),
        false,
    )
    .await;
    refused(
        &r,
        422,
        "S11",
        "10.30.0.101-10.30.0.120 outside SpiderSubnet.spiderpool.spidernet.io rack-a",
    );
    eventually("the view to hold the carved pool", WAIT, || async move {
        g.count(Kind::SpiderIPPool) == 1
    })
    .await;

    // S11: a subnet update that drops a carved pool's addresses.
    let r = merge_patch(
        &client,
        &rack_a,
        json!({"spec": {"ips": ["10.30.0.10-10.30.0.25"]}}),
    )
    .await;
    refused(
        &r,
        422,
        "S11",
        "does not cover 10.30.0.26-10.30.0.30 of SpiderIPPool.spiderpool.spidernet.io pods-in",
    );
    // Growing it is fine.
    merge_patch(
        &client,
        &rack_a,
        json!({"spec": {"ips": ["10.30.0.10-10.30.0.110"]}}),
    )
    .await
    .expect(200);

    // P10: a subnet overlapping an InClusterIPPool of its address space.
    let nodes = in_cluster_pool("nodes", "nodes", "10.31.0.10-10.31.0.20", "10.31.0.1");
    create(&client, &nodes, false).await.expect(201);
    eventually(
        "the view to hold the in-cluster pool",
        WAIT,
        || async move { g.count(Kind::InClusterIPPool) == 1 },
    )
    .await;
    let r = create(
        &client,
        &subnet("rack-n", "10.31.0.0/24", &["10.31.0.5-10.31.0.50"]),
        false,
    )
    .await;
    refused(&r, 422, "P10", "overlaps InClusterIPPool nodes/nodes");
    // The same subnet in an address space of its own is another network.
    let mut apart = subnet("rack-n", "10.31.0.0/24", &["10.31.0.5-10.31.0.50"]);
    apart["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
    create(&client, &apart, true).await.expect(201);

    // S12: once the carved pool holds an address, the subnet is not deleted.
    let status = json!({"status": {
        "allocatedIPs": json!({"10.30.0.21": {"pod": "default/web-0"}}).to_string(),
        "allocatedIPCount": 1
    }});
    let path = format!("{}/status", item_path(&carved));
    call(
        &client,
        Method::PATCH,
        &path,
        Some(&status),
        "application/merge-patch+json",
    )
    .await
    .expect(200);
    let dry_delete = format!("{}?dryRun=All", item_path(&rack_a));
    eventually("the subnet's delete to be refused", WAIT, || {
        let (client, path) = (&client, &dry_delete);
        async move {
            let r = call(client, Method::DELETE, path, None, "application/json").await;
            r.status == 403
        }
    })
    .await;
    let r = delete(&client, &rack_a).await;
    refused(
        &r,
        403,
        "S12",
        "Held by: SpiderIPPool.spiderpool.spidernet.io pods-in (10.30.0.21)",
    );
    // Once the pool's pods have given their addresses back, the subnet goes.
    let released = json!({"status": {"allocatedIPs": "{}", "allocatedIPCount": 0}});
    call(
        &client,
        Method::PATCH,
        &path,
        Some(&released),
        "application/merge-patch+json",
    )
    .await
    .expect(200);
    eventually("the subnet's delete to pass", WAIT, || {
        let (client, path) = (&client, &dry_delete);
        async move {
            let r = call(client, Method::DELETE, path, None, "application/json").await;
            r.status == 200
        }
    })
    .await;
}
