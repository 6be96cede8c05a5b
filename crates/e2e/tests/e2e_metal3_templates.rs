//! Metal3's `Metal3DataTemplate` against a real kube-apiserver (MD1): a reference that names a
//! kind that is not a pool is refused, a pool not found is a warning kubectl shows, and a pool
//! that exists passes. The upstream CRDs are read in place from `../shared/fixtures/crds/`;
//! skips with a line saying why when `KUBEBUILDER_ASSETS` or `../shared` is missing.

mod e2e;

use e2e::api::*;
use e2e::{eventually, ControlPlane};
use ipam_guard::cluster::ClusterView;
use ipam_guard::kinds::Kind;
use serde_json::{json, Value};

const NS: &str = "metal";

fn template(name: &str, pool_ref: Value) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3DataTemplate",
        "metadata": meta(name, Some(NS)),
        "spec": {"clusterName": "rack-a", "networkData": {"networks": {"ipv4": [
            {"id": "provisioning", "link": "eth0", "fromPoolRef": pool_ref}
        ]}}}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_metal3_data_template_references() {
    e2e::each_server("e2e_metal3_data_template_references", against).await;
}

async fn against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    create_namespace(&client, NS).await;
    let (guard, ca_pem) = start_ipam_guard(&cp).await;
    register_webhooks(&client, guard.addr, &ca_pem).await;

    // Refused: a claim is no pool.
    let claim_ref =
        json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "IPAddressClaim", "name": "web-0"});
    eventually("the webhook to judge data templates", WAIT, || {
        let (client, t) = (&client, template("probe", claim_ref.clone()));
        async move {
            let r = create(client, &t, true).await;
            r.status == 422 && r.message().contains("[ipam-guard MD1]")
        }
    })
    .await;
    let r = create(&client, &template("workers", claim_ref), false).await;
    assert_eq!(r.status, 422, "{r:#?}");
    assert!(
        r.message().contains("IPAddressClaim is not a pool: machines of this template can never get an address from it"),
        "{}",
        r.message()
    );

    // Refused: a reference that names no pool. v1beta2's schema refuses an empty name itself;
    // v1beta1's lets it through to ipam-guard on current servers, while v1.20 reads the empty
    // name as null and refuses it at the schema, before any webhook.
    let unnamed =
        json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": ""});
    let mut t = template("workers", unnamed);
    t["apiVersion"] = json!("infrastructure.cluster.x-k8s.io/v1beta1");
    let r = create(&client, &t, false).await;
    assert_eq!(r.status, 422, "{r:#?}");
    let m = r.message();
    let by_schema = m.contains("fromPoolRef.name in body must be of type string");
    assert!(
        (by_schema && !assets.version.at_least(21))
            || m.contains("spec.networkData.networks.ipv4[0].fromPoolRef.name: Required value: no pool is named"),
        "{m}"
    );

    // A pool not found yet: admitted, with kubectl's warning naming it.
    let pool_ref = json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "provisioning"});
    let r = create(&client, &template("workers", pool_ref.clone()), false).await;
    assert_eq!(r.status, 201, "{r:#?}");
    assert!(
        r.warnings.iter().any(|w| w.contains(
            "spec.networkData.networks.ipv4[0].fromPoolRef: InClusterIPPool metal/provisioning not found"
        ) && w.contains("[ipam-guard MD1]")),
        "{:?}",
        r.warnings
    );

    // Once the pool exists, a template naming it passes without a word.
    let pool = in_cluster_pool(NS, "provisioning", "10.20.0.10-10.20.0.50", "10.20.0.1");
    create(&client, &pool, false).await.expect(201);
    let view = &*guard.view;
    eventually("the view to hold the pool", WAIT, || {
        let n = view
            .object_counts()
            .into_iter()
            .find(|(k, _)| *k == Kind::InClusterIPPool)
            .map_or(0, |(_, n)| n);
        async move { n == 1 }
    })
    .await;
    let r = create(&client, &template("masters", pool_ref), false).await;
    assert_eq!(r.status, 201, "{r:#?}");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}
