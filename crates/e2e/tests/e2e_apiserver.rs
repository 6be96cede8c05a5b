//! End to end against a real kube-apiserver (envtest layout): runs only when `KUBEBUILDER_ASSETS`
//! names a folder holding `kube-apiserver` and `etcd`, and passes with
//! `skipped: KUBEBUILDER_ASSETS not set` otherwise.
//!
//! It starts etcd and kube-apiserver on loopback (tests/e2e), installs the upstream CRDs, stores a
//! few conflicting objects, starts ipam-guard in-process (HTTPS server with dev certificates on
//! 127.0.0.1:0, live view through a kubeconfig), registers validating and mutating webhooks built
//! from the kinds table, and drives real writes: HTTP status, Status reason and causes, warnings
//! and the stored object are asserted as a client sees them.

mod e2e;

use e2e::api::*;
use e2e::{eventually, ControlPlane};
use ipam_guard::cluster::ClusterView;
use ipam_guard::judge::audit;
use ipam_guard::judge::Severity;
use ipam_guard::kinds::Kind;
use ipam_guard::rules::Options;
use serde_json::{json, Value};
const NS: &str = "e2e";
const PRE: &str = "pre";

// === Objects ===

/// One valid object of every kind, in an order that creates what is referenced first.
fn one_of_each() -> Vec<Value> {
    let devices = json!([{
        "networkName": "VM Network",
        "addressesFromPools": [{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "pool-a"}]
    }]);
    vec![
        in_cluster_pool(NS, "pool-a", "10.0.0.10-10.0.0.30", "10.0.0.1"),
        json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
            "metadata": meta("global-a", None),
            "spec": {"addresses": ["10.1.0.10-10.1.0.30"], "prefix": 24, "gateway": "10.1.0.1"}
        }),
        claim(NS, "claim-1", "pool-a"),
        ip_address(NS, "claim-1", "claim-1", "10.0.0.11", "pool-a"),
        json!({
            "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
            "metadata": meta("m3-pool", Some(NS)),
            "spec": {"namePrefix": "m3", "prefix": 24, "gateway": "10.2.0.1",
                     "pools": [{"start": "10.2.0.10", "end": "10.2.0.30"}]}
        }),
        json!({
            "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPClaim",
            "metadata": meta("m3-claim", Some(NS)),
            "spec": {"pool": {"name": "m3-pool"}}
        }),
        json!({
            "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPAddress",
            "metadata": meta("m3-pool-10-2-0-11", Some(NS)),
            "spec": {"address": "10.2.0.11", "prefix": 24, "gateway": "10.2.0.1",
                     "pool": {"name": "m3-pool"}, "claim": {"name": "m3-claim"}}
        }),
        json!({
            "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
            "metadata": meta("spider-a", None),
            "spec": {"ipVersion": 4, "subnet": "10.3.0.0/24", "ips": ["10.3.0.10-10.3.0.30"], "gateway": "10.3.0.1"}
        }),
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "VSphereMachine",
            "metadata": meta("vm-1", Some(NS)),
            "spec": {"template": "ubuntu-2204", "network": {"devices": devices}}
        }),
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "VSphereMachineTemplate",
            "metadata": meta("vmt-1", Some(NS)),
            "spec": {"template": {"spec": {"template": "ubuntu-2204", "network": {"devices": devices}}}}
        }),
    ]
}

// === The test ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_webhook_against_a_real_apiserver() {
    e2e::each_server(
        "e2e_webhook_against_a_real_apiserver",
        e2e_webhook_against_a_real_apiserver_against,
    )
    .await;
}

async fn e2e_webhook_against_a_real_apiserver_against(assets: e2e::Server) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    for ns in [NS, PRE] {
        create_namespace(&client, ns).await;
    }

    // X4: stored before the webhook exists: two overlapping pools, two holders of one address.
    let pre_objects = [
        in_cluster_pool(PRE, "pre-a", "10.20.0.10-10.20.0.30", "10.20.0.1"),
        in_cluster_pool(PRE, "pre-b", "10.20.0.20-10.20.0.40", "10.20.0.1"),
        ip_address(PRE, "pre-x", "pre-x", "10.20.0.12", "pre-a"),
        ip_address(PRE, "pre-y", "pre-y", "10.20.0.12", "pre-a"),
    ];
    for o in &pre_objects {
        create(&client, o, false).await.expect(201);
    }

    let (guard, ca_pem) = start_ipam_guard(&cp).await;
    register_webhooks(&client, guard.addr, &ca_pem).await;
    // The API server picks webhook configurations up asynchronously: wait until a reversed
    // range (P2, which no schema catches) is refused by us.
    let probe = in_cluster_pool(NS, "probe", "10.9.0.20-10.9.0.10", "10.9.0.1");
    eventually("the webhook to be called", WAIT, || {
        let (client, probe) = (&client, &probe);
        async move {
            let r = create(client, probe, true).await;
            r.status == 422 && r.message().contains("admission webhook")
        }
    })
    .await;

    // --- every kind: create, update (labels), later delete ---
    let objects = one_of_each();
    for o in &objects {
        create(&client, o, false).await.expect(201);
        merge_patch(&client, o, json!({"metadata": {"labels": {"e2e": "yes"}}}))
            .await
            .expect(200);
    }
    for kind in [
        Kind::IPAddressClaim,
        Kind::IPAddress,
        Kind::InClusterIPPool,
        Kind::GlobalInClusterIPPool,
        Kind::Metal3IPPool,
        Kind::SpiderIPPool,
    ] {
        eventually(&format!("the view to hold the new {kind}"), WAIT, || {
            let n = guard
                .view
                .read()
                .counts()
                .into_iter()
                .find(|(k, _)| *k == kind)
                .map_or(0, |(_, n)| n);
            async move { n >= 1 }
        })
        .await;
    }

    // --- P10: an overlapping pool is denied, 422 with a cause on the entry ---
    let overlapping = in_cluster_pool(NS, "pool-b", "10.0.0.25-10.0.0.40", "10.0.0.1");
    let r = create(&client, &overlapping, false).await;
    r.expect(422);
    assert_eq!(r.body["kind"], "Status");
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(r.body["details"]["kind"], "InClusterIPPool");
    assert_eq!(r.body["details"]["name"], "pool-b");
    assert!(
        r.message()
            .contains("admission webhook \"validate.ipam-guard.io\" denied the request"),
        "{r:#?}"
    );
    let causes = r.causes();
    assert!(
        causes.iter().any(|c| c["field"] == "spec.addresses[0]"
            && c["reason"] == "FieldValueInvalid"
            && c["message"]
                .as_str()
                .unwrap_or_default()
                .contains("overlaps InClusterIPPool e2e/pool-a")
            && c["message"]
                .as_str()
                .unwrap_or_default()
                .ends_with(" [ipam-guard P10]")),
        "{r:#?}"
    );
    assert_eq!(
        get(&client, &overlapping).await.status,
        404,
        "nothing stored"
    );

    // --- A9: a second holder of one address, with A6's warning that its claim is missing ---
    let dup = ip_address(NS, "dup", "dup", "10.0.0.11", "pool-a");
    let r = create(&client, &dup, false).await;
    r.expect(422);
    assert!(
        r.causes()
            .iter()
            .any(|c| c["field"] == "spec.address" && c["reason"] == "FieldValueDuplicate"),
        "{r:#?}"
    );
    assert!(
        !r.warnings.is_empty(),
        "warnings reach the client on a denial too: {r:#?}"
    );

    // --- C3: a claim whose pool does not exist is allowed with a warning ---
    let lost = claim(NS, "lost", "no-such-pool");
    let r = create(&client, &lost, false).await;
    r.expect(201);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("no-such-pool") && w.ends_with(" [ipam-guard C3]")),
        "{:?}",
        r.warnings
    );

    // --- C4: a claim's spec is immutable ---
    let r = merge_patch(
        &client,
        &objects[2],
        json!({"spec": {"poolRef": {"name": "other"}}}),
    )
    .await;
    r.expect(422);
    assert!(
        r.causes().iter().any(|c| c["field"] == "spec.poolRef.name"
            && c["message"]
                .as_str()
                .unwrap_or_default()
                .contains("field is immutable")),
        "{r:#?}"
    );

    // --- P9: a pool held by an address cannot be deleted: 403 naming the holder ---
    let r = delete(&client, &objects[0]).await;
    r.expect(403);
    assert_eq!(r.body["reason"], "Forbidden");
    assert!(
        r.message().contains("Held by: e2e/claim-1 (10.0.0.11)"),
        "{r:#?}"
    );
    assert!(r.message().ends_with(" [ipam-guard P9]"), "{r:#?}");
    get(&client, &objects[0]).await.expect(200);

    // --- dry run: judged, never stored, and never blocks the real create that follows ---
    let r = create(
        &client,
        &in_cluster_pool(NS, "dry-overlap", "10.0.0.20-10.0.0.22", "10.0.0.1"),
        true,
    )
    .await;
    r.expect(422);
    let dry = in_cluster_pool(NS, "pool-d", "10.0.5.10-10.0.5.20", "10.0.5.1");
    create(&client, &dry, true).await.expect(201);
    get(&client, &dry).await.expect(404);
    let after = in_cluster_pool(NS, "pool-e", "10.0.5.15-10.0.5.25", "10.0.5.1");
    create(&client, &after, false).await.expect(201);

    // --- M1: the mutation shows up in the stored object ---
    let unmutated = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta1", "kind": "IPAddressClaim",
        "metadata": meta("claim-m", Some(NS)),
        "spec": {"poolRef": {"kind": "InClusterIPPool", "name": "pool-a"}}
    });
    let r = create(&client, &unmutated, false).await;
    r.expect(201);
    let stored = get(&client, &unmutated).await;
    stored.expect(200);
    assert_eq!(
        stored.body["spec"]["poolRef"]["apiGroup"], "ipam.cluster.x-k8s.io",
        "{stored:#?}"
    );

    // --- X2: concurrent conflicting creates admit exactly one ---
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let client = client.clone();
            let pool = in_cluster_pool(
                NS,
                &format!("race-{i}"),
                &format!("10.0.7.{}-10.0.7.{}", 10 + i, 100 + i),
                "10.0.7.1",
            );
            tokio::spawn(async move { create(&client, &pool, false).await.status })
        })
        .collect();
    let mut statuses = Vec::new();
    for r in racers {
        statuses.push(r.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 201 || *s == 422),
        "{statuses:?}"
    );

    // --- X4: audit finds what was stored before the webhook ---
    let outcome = audit::audit(&client, Options::default()).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    let found = |rule: &str, name: &str| {
        outcome.findings.iter().any(|f| {
            f.rule == rule
                && f.severity == Severity::Deny
                && f.subject.key.namespace() == Some(PRE)
                && f.subject.key.name() == name
                && f.subject.file.as_deref() == Some("cluster")
        })
    };
    assert!(
        found("P10", "pre-a") && found("P10", "pre-b"),
        "{:#?}",
        outcome.findings
    );
    assert!(
        found("A9", "pre-x") && found("A9", "pre-y"),
        "{:#?}",
        outcome.findings
    );
    assert_eq!(outcome.summary.exit_code(), 1);

    // --- deletes: holders first, then what they held. A pool delete is refused (403) until the
    // watch has shown its last holder gone, so each delete is retried until it goes through. ---
    for o in objects.iter().rev() {
        eventually(&format!("delete {}", item_path(o)), WAIT, || async {
            let r = delete(&client, o).await;
            assert!(
                matches!(r.status, 200 | 202 | 403 | 404),
                "delete {}: {r:#?}",
                item_path(o)
            );
            r.status != 403
        })
        .await;
        get(&client, o).await.expect(404);
    }
    eventually("the view to drop the deleted pool", WAIT, || {
        let gone = guard
            .view
            .read()
            .pool(&ipam_guard::model::ObjKey::new(
                Kind::InClusterIPPool,
                Some(NS),
                "pool-a",
            ))
            .is_none();
        async move { gone }
    })
    .await;

    drop(guard);
    drop(cp);
}
