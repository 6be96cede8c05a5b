//! The in-cluster provider's prefix pools (`InClusterPrefixPool`, `GlobalInClusterPrefixPool`)
//! against a real kube-apiserver, through kubectl: their CRDs installed (read in place from
//! `../shared/fixtures/crds/`, never copied into this repository), ipam-guard registered for
//! them, and create / update / delete as a user runs them. Skips with a line saying why when
//! `KUBEBUILDER_ASSETS`, kubectl or `../shared` is missing.

mod e2e;

use e2e::api::*;
use e2e::{eventually, ControlPlane};
use ipam_guard::cluster::live;
use ipam_guard::kinds::Kind;
use serde_json::{json, Value};

const NS: &str = "v6";

/// Runs kubectl with `args` (a manifest written to a file when given); (exit ok, stdout, stderr).
fn kubectl(cp: &ControlPlane, args: &[&str], manifest: Option<&Value>) -> (bool, String, String) {
    let mut cmd = std::process::Command::new("kubectl");
    cmd.arg("--kubeconfig").arg(&cp.kubeconfig).args(args);
    if let Some(m) = manifest {
        let path = cp.dir.path().join(format!(
            "{}-{}.json",
            m["kind"].as_str().unwrap(),
            m["metadata"]["name"].as_str().unwrap()
        ));
        std::fs::write(&path, serde_json::to_vec(m).unwrap()).unwrap();
        cmd.arg("-f").arg(&path);
    }
    let out = cmd.output().expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn prefix_pool(kind: &str, ns: Option<&str>, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": kind,
        "metadata": meta(name, ns), "spec": spec})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_prefix_pools_through_kubectl() {
    e2e::each_server(
        "e2e_prefix_pools_through_kubectl",
        e2e_prefix_pools_through_kubectl_against,
    )
    .await;
}

async fn e2e_prefix_pools_through_kubectl_against(assets: e2e::Server) {
    if std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_err()
    {
        println!("skipped: no kubectl on PATH");
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = ControlPlane::start(&assets).await;
    let client = cp.client().await;
    let capi = [Kind::IPAddressClaim, Kind::IPAddress, Kind::InClusterIPPool];
    // The harness installs each CRD as published, or as the server can take it (and says so).
    for c in e2e::crds().expect("the upstream CRDs") {
        if capi.contains(&c.kind) || c.kind.is_prefix_pool() {
            install_crd(&client, c).await;
        }
    }
    eventually("discovery to serve the kinds installed", WAIT, || async {
        live::discover(&client)
            .await
            .is_ok_and(|served| served.len() == capi.len() + 2)
    })
    .await;
    create_namespace(&client, NS).await;
    let (guard, ca_pem) = start_ipam_guard(&cp).await;
    register_webhooks(&client, guard.addr, &ca_pem).await;
    // Wait until the API server calls us for the new kind: a host-bit CIDR (PP2) is refused.
    let probe = prefix_pool(
        "InClusterPrefixPool",
        Some(NS),
        "probe",
        json!({"prefixes": ["fd99::1/48"]}),
    );
    eventually("the webhook to judge prefix pools", WAIT, || {
        let (client, probe) = (&client, &probe);
        async move {
            let r = create(client, probe, true).await;
            r.status == 422 && r.message().contains("network-aligned")
        }
    })
    .await;

    // --- create: a valid pool (the CRD default writes allocationPrefixLength 64) ---
    let pool = prefix_pool(
        "InClusterPrefixPool",
        Some(NS),
        "nodes-v6",
        json!({"prefixes": ["fd00:10::/48"], "gateway": "fd00:10::1"}),
    );
    let (ok, _, stderr) = kubectl(&cp, &["create"], Some(&pool));
    assert!(ok, "{stderr}");
    let stored = get(&client, &pool).await;
    assert_eq!(stored.body["spec"]["allocationPrefixLength"], 64);
    eventually("the view to hold the prefix pool", WAIT, || {
        let n = count(&*guard.view, Kind::InClusterPrefixPool);
        async move { n == 1 }
    })
    .await;

    // --- create: entries that do not parse, all causes in one answer ---
    let bad = prefix_pool(
        "GlobalInClusterPrefixPool",
        None,
        "bad",
        json!({"prefixes": ["10.0.0.0/8", "fd00:20::/72"], "excludedPrefixes": ["fd00:30::/64"]}),
    );
    let (ok, _, stderr) = kubectl(&cp, &["create"], Some(&bad));
    assert!(!ok);
    for line in [
        "The GlobalInClusterPrefixPool \"bad\" is invalid: ",
        "* spec.prefixes[0]: Invalid value: \"10.0.0.0/8\": only IPv6 prefixes are supported [ipam-guard PP2]",
        "* spec.prefixes[1]: Invalid value: \"fd00:20::/72\": CIDR prefix length must be <= allocationPrefixLength (64) [ipam-guard PP3]",
        "* spec.excludedPrefixes[0]: Invalid value: \"fd00:30::/64\": excluded entry must lie inside spec.prefixes [ipam-guard PP4]",
    ] {
        assert!(stderr.contains(line), "missing {line:?} in {stderr}");
    }

    // --- overlap: an InClusterIPPool over the same IPv6 range is refused, both ways round ---
    let hosts = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": meta("hosts-v6", Some(NS)),
        "spec": {"addresses": ["fd00:10::/48"], "prefix": 48}});
    let (ok, _, stderr) = kubectl(&cp, &["create"], Some(&hosts));
    assert!(!ok);
    assert!(
        stderr.contains(
            "The InClusterIPPool \"hosts-v6\" is invalid: spec.addresses[0]: Invalid value: \"fd00:10::/48\": overlaps InClusterPrefixPool v6/nodes-v6 (fd00:10::1-fd00:10:0:ffff:ffff:ffff:ffff:ffff) [ipam-guard P10]"
        ),
        "{stderr}"
    );
    let elsewhere = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": meta("hosts-v6", Some(NS)),
        "spec": {"addresses": ["fd00:11::/64"], "prefix": 64}});
    let (ok, _, stderr) = kubectl(&cp, &["create"], Some(&elsewhere));
    assert!(ok, "{stderr}");
    eventually("the view to hold the IP pool", WAIT, || {
        let n = count(&*guard.view, Kind::InClusterIPPool);
        async move { n == 1 }
    })
    .await;
    let wide = prefix_pool(
        "GlobalInClusterPrefixPool",
        None,
        "wide",
        json!({"prefixes": ["fd00:11::/56"], "allocationPrefixLength": 64}),
    );
    let (ok, _, stderr) = kubectl(&cp, &["create"], Some(&wide));
    assert!(!ok);
    assert!(
        stderr.contains("spec.prefixes[0]: Invalid value: \"fd00:11::/56\": overlaps InClusterIPPool v6/hosts-v6 (fd00:11::1-fd00:11::ffff:ffff:ffff:ffff) [ipam-guard P10]"),
        "{stderr}"
    );

    // --- an IPAddress holds a sub-prefix, as the provider writes it ---
    let claim = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
        "metadata": meta("web-0", Some(NS)),
        "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterPrefixPool", "name": "nodes-v6"}}});
    create(&client, &claim, false).await.expect(201);
    let address = |name: &str, address: &str, prefix: i64| {
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
            "metadata": meta(name, Some(NS)),
            "spec": {"address": address, "prefix": prefix, "gateway": "fd00:10::1",
                "claimRef": {"name": "web-0"},
                "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterPrefixPool", "name": "nodes-v6"}}})
    };
    let (ok, _, stderr) = kubectl(
        &cp,
        &["create"],
        Some(&address("web-0-bad", "fd00:10:0:1::5", 64)),
    );
    assert!(!ok);
    assert!(
        stderr.contains("must be the network address of its /64 sub-prefix of InClusterPrefixPool v6/nodes-v6 (fd00:10:0:1::) [ipam-guard A8]"),
        "{stderr}"
    );
    let (ok, _, stderr) = kubectl(
        &cp,
        &["create"],
        Some(&address("web-0", "fd00:10:0:1::", 64)),
    );
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("Warning"), "{stderr}");
    eventually("the view to hold the IPAddress", WAIT, || {
        let n = count(&*guard.view, Kind::IPAddress);
        async move { n == 1 }
    })
    .await;

    // --- update: growing is fine; excluding part of the held /64 strands it; the length is fixed ---
    let (ok, _, stderr) = kubectl(
        &cp,
        &[
            "patch",
            "inclusterprefixpool",
            "nodes-v6",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec": {"prefixes": ["fd00:10::/48", "fd00:12::/48"]}}"#,
        ],
        None,
    );
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = kubectl(
        &cp,
        &[
            "patch",
            "inclusterprefixpool",
            "nodes-v6",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec": {"excludedPrefixes": ["fd00:10:0:1::ff"]}}"#,
        ],
        None,
    );
    assert!(!ok);
    assert!(
        stderr.contains("pool addresses do not contain allocated addresses: v6/web-0 fd00:10:0:1::/64 [ipam-guard P8]"),
        "{stderr}"
    );
    let (ok, _, stderr) = kubectl(
        &cp,
        &[
            "patch",
            "inclusterprefixpool",
            "nodes-v6",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec": {"allocationPrefixLength": 56}}"#,
        ],
        None,
    );
    assert!(!ok);
    assert!(
        stderr.contains("spec.allocationPrefixLength: Invalid value: 56: field is immutable (was 64) [ipam-guard PP7]"),
        "{stderr}"
    );

    // --- delete: refused while the IPAddress holds a sub-prefix, then allowed ---
    let (ok, _, stderr) = kubectl(
        &cp,
        &["delete", "inclusterprefixpool", "nodes-v6", "-n", NS],
        None,
    );
    assert!(!ok);
    assert!(
        stderr.contains("Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed. Held by: v6/web-0 (fd00:10:0:1::/64) [ipam-guard P9]"),
        "{stderr}"
    );
    let (ok, _, stderr) = kubectl(
        &cp,
        &[
            "delete",
            "ipaddresses.ipam.cluster.x-k8s.io",
            "web-0",
            "-n",
            NS,
        ],
        None,
    );
    assert!(ok, "{stderr}");
    eventually("the view to drop the IPAddress", WAIT, || {
        let n = count(&*guard.view, Kind::IPAddress);
        async move { n == 0 }
    })
    .await;
    let (ok, _, stderr) = kubectl(
        &cp,
        &["delete", "inclusterprefixpool", "nodes-v6", "-n", NS],
        None,
    );
    assert!(ok, "{stderr}");
    drop(guard);
    drop(cp);
}
