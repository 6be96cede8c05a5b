//! CP1-CP4: a Cluster's control-plane endpoint against pools, other Clusters and address
//! objects, and against its own networks.

use serde_json::{json, Value};

use crate::kinds::Kind;
use crate::rules::test_support::{
    create, create_with, errors, index, update, warnings, with_space,
};
use crate::rules::{Options, OverlapScope};

fn cluster(name: &str, host: &str) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {
            "controlPlaneEndpoint": {"host": host, "port": 6443},
            "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]},
                               "services": {"cidrBlocks": ["10.96.0.0/12"]}}
        }
    })
}

fn pool(name: &str, range: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"addresses": [range], "prefix": 24, "gateway": "10.0.0.1"}
    })
}

fn claim(name: &str, endpoint_of: Option<&str>) -> Value {
    let mut c = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "nodes"}}
    });
    if let Some(c2) = endpoint_of {
        c["metadata"]["annotations"] = json!({"ipam-guard.io/control-plane-endpoint-of": c2});
    }
    c
}

fn address(name: &str, ip: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"address": ip, "prefix": 24, "gateway": "10.0.0.1", "claimRef": {"name": name},
                 "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "nodes"}}
    })
}

fn rules(v: &crate::field::Verdict) -> Vec<String> {
    v.errors.iter().map(|e| e.rule.to_string()).collect()
}

#[test]
fn cp1_an_endpoint_a_pool_can_hand_out_is_refused() {
    let nodes = pool("nodes", "10.0.0.10-10.0.0.50");
    let ix = index(&[(Kind::InClusterIPPool, &nodes)]);
    let v = create(Kind::Cluster, &cluster("prod", "10.0.0.20"), &ix);
    assert_eq!(
        errors(&v),
        ["spec.controlPlaneEndpoint.host: Invalid value: \"10.0.0.20\": 10.0.0.20 can be handed out by InClusterIPPool team-a/nodes: exclude it there, or claim it with an IPAddressClaim annotated ipam-guard.io/control-plane-endpoint-of: prod"]
    );
    // Outside the pool, a host name, or another address space: nothing to say.
    assert!(errors(&create(Kind::Cluster, &cluster("prod", "10.0.0.60"), &ix)).is_empty());
    assert!(errors(&create(
        Kind::Cluster,
        &cluster("prod", "api.example.com"),
        &ix
    ))
    .is_empty());
    let elsewhere = with_space(cluster("prod", "10.0.0.20"), "dc2");
    assert!(errors(&create(Kind::Cluster, &elsewhere, &ix)).is_empty());
    let off = Options {
        overlap_scope: OverlapScope::Off,
        ..Options::default()
    };
    assert!(errors(&create_with(
        Kind::Cluster,
        &cluster("prod", "10.0.0.20"),
        &ix,
        off
    ))
    .is_empty());
}

#[test]
fn cp1_another_clusters_endpoint_and_an_address_held_are_refused() {
    let other = cluster("staging", "10.0.0.70");
    let a = address("web-0", "10.0.0.80");
    let ix = index(&[(Kind::Cluster, &other), (Kind::IPAddress, &a)]);
    let v = create(Kind::Cluster, &cluster("prod", "10.0.0.70"), &ix);
    assert_eq!(
        errors(&v),
        ["spec.controlPlaneEndpoint.host: Duplicate value: \"10.0.0.70\": 10.0.0.70 is already the control-plane endpoint of Cluster team-a/staging"]
    );
    let v = create(Kind::Cluster, &cluster("prod", "10.0.0.80"), &ix);
    assert_eq!(rules(&v), ["CP1"]);
    assert!(
        errors(&v)[0].contains("is already held by IPAddress team-a/web-0"),
        "{v:?}"
    );
    // The Cluster itself, updated without moving its endpoint, is not its own rival.
    let me = cluster("staging", "10.0.0.70");
    assert!(errors(&update(Kind::Cluster, &me, &other, &ix)).is_empty());
}

#[test]
fn cp1_cp3_cp4_an_endpoint_claimed_from_the_pool_is_its_own() {
    let nodes = pool("nodes", "10.0.0.10-10.0.0.50");
    let marked = claim("prod-vip", Some("prod"));
    let vip = address("prod-vip", "10.0.0.20");
    let ix = index(&[
        (Kind::InClusterIPPool, &nodes),
        (Kind::IPAddressClaim, &marked),
        (Kind::IPAddress, &vip),
    ]);
    // The Cluster whose VIP was claimed for it passes; another Cluster may not take it.
    assert!(errors(&create(Kind::Cluster, &cluster("prod", "10.0.0.20"), &ix)).is_empty());
    assert_eq!(
        rules(&create(Kind::Cluster, &cluster("other", "10.0.0.20"), &ix)),
        ["CP1", "CP1"]
    );
    // With the Cluster stored, the address for the marked claim is admitted; an unmarked one not.
    let prod = cluster("prod", "10.0.0.20");
    let plain = claim("web-1", None);
    let ix = index(&[
        (Kind::InClusterIPPool, &nodes),
        (Kind::IPAddressClaim, &marked),
        (Kind::IPAddressClaim, &plain),
        (Kind::Cluster, &prod),
    ]);
    assert!(errors(&create(Kind::IPAddress, &vip, &ix)).is_empty());
    let v = create(Kind::IPAddress, &address("web-1", "10.0.0.20"), &ix);
    assert_eq!(
        errors(&v),
        ["spec.address: Invalid value: \"10.0.0.20\": 10.0.0.20 is the control-plane endpoint of Cluster team-a/prod: no machine may hold it (a claim for the endpoint itself is annotated ipam-guard.io/control-plane-endpoint-of: <Cluster>)"]
    );
    // A pool that can hand out an unclaimed endpoint is refused, naming the field to exclude it with.
    let ix = index(&[(Kind::Cluster, &prod)]);
    let v = create(Kind::InClusterIPPool, &nodes, &ix);
    assert_eq!(
        errors(&v),
        ["spec.addresses[0]: Invalid value: \"10.0.0.10-10.0.0.50\": can hand out 10.0.0.20, the control-plane endpoint of Cluster team-a/prod: exclude it (spec.excludedAddresses)"]
    );
    let mut excluded = nodes.clone();
    excluded["spec"]["excludedAddresses"] = json!(["10.0.0.20"]);
    assert!(errors(&create(Kind::InClusterIPPool, &excluded, &ix)).is_empty());
    // X5: an update that does not add the endpoint is not refused for it.
    let mut grown = excluded.clone();
    grown["spec"]["addresses"] = json!(["10.0.0.10-10.0.0.50", "10.0.0.60"]);
    assert!(errors(&update(Kind::InClusterIPPool, &grown, &excluded, &ix)).is_empty());
    let mut unexcluded = grown.clone();
    unexcluded["spec"]["excludedAddresses"] = json!([]);
    assert_eq!(
        rules(&update(Kind::InClusterIPPool, &unexcluded, &grown, &ix)),
        ["CP3"]
    );
}

#[test]
fn cp2_an_endpoint_inside_the_clusters_own_networks_is_refused() {
    let ix = index(&[]);
    let v = create(Kind::Cluster, &cluster("prod", "10.96.0.1"), &ix);
    assert_eq!(
        errors(&v),
        ["spec.controlPlaneEndpoint.host: Invalid value: \"10.96.0.1\": 10.96.0.1 lies in the cluster's own service network 10.96.0.0/12 (spec.clusterNetwork.services.cidrBlocks[0]): inside the cluster it does not reach the control plane"]
    );
    assert_eq!(
        rules(&create(Kind::Cluster, &cluster("prod", "192.168.3.4"), &ix)),
        ["CP2"]
    );
    // X5: an update that changes neither the endpoint nor the networks is not judged again.
    let stored = cluster("prod", "10.96.0.1");
    let mut relabelled = stored.clone();
    relabelled["spec"]["topology"] = json!({"version": "v1.31.0"});
    assert!(errors(&update(Kind::Cluster, &relabelled, &stored, &ix)).is_empty());
    // Being deleted, it passes whatever it holds.
    let mut going = stored.clone();
    going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let mut moved = going.clone();
    moved["spec"]["controlPlaneEndpoint"]["host"] = json!("10.96.0.2");
    assert!(errors(&update(Kind::Cluster, &moved, &going, &ix)).is_empty());
}

#[test]
fn cp5_a_machines_address_inside_its_own_clusters_networks_is_refused() {
    let nodes = pool("nodes", "10.0.0.10-10.0.0.50");
    let mut own = claim("web-1", None);
    own["spec"]["clusterName"] = json!("prod");
    let mut other = claim("web-2", None);
    other["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": "staging"});
    let mut prod = cluster("prod", "10.1.0.5");
    prod["spec"]["clusterNetwork"]["pods"]["cidrBlocks"] = json!(["10.0.0.0/16"]);
    let staging = cluster("staging", "10.1.0.6");
    let ix = index(&[
        (Kind::InClusterIPPool, &nodes),
        (Kind::IPAddressClaim, &own),
        (Kind::IPAddressClaim, &other),
        (Kind::Cluster, &prod),
        (Kind::Cluster, &staging),
    ]);
    let v = create(Kind::IPAddress, &address("web-1", "10.0.0.11"), &ix);
    assert_eq!(
        errors(&v),
        ["spec.address: Invalid value: \"10.0.0.11\": 10.0.0.11 lies in the pod network 10.0.0.0/16 of Cluster team-a/prod, the cluster its claim belongs to: inside that cluster it is unroutable"]
    );
    // The same range is another cluster's business only: staging's machine is admitted.
    assert!(errors(&create(
        Kind::IPAddress,
        &address("web-2", "10.0.0.12"),
        &ix
    ))
    .is_empty());

    // A Cluster whose new networks take in an address its machine holds is refused at the block.
    let held = address("web-2", "10.0.0.12");
    let ix = index(&[
        (Kind::InClusterIPPool, &nodes),
        (Kind::IPAddressClaim, &other),
        (Kind::IPAddress, &held),
        (Kind::Cluster, &staging),
    ]);
    let mut grown = staging.clone();
    grown["spec"]["clusterNetwork"]["services"]["cidrBlocks"] = json!(["10.0.0.0/24"]);
    let v = update(Kind::Cluster, &grown, &staging, &ix);
    assert_eq!(
        errors(&v),
        ["spec.clusterNetwork.services.cidrBlocks[0]: Invalid value: \"10.0.0.0/24\": holds addresses machines of this cluster already have: 10.0.0.12 (IPAddress team-a/web-2); inside the cluster they would be unroutable"]
    );
    // A block that holds none of their addresses but overlaps the pool they draw from is a
    // warning: the pool may hand the next machine an address inside it.
    let mut near = staging.clone();
    near["spec"]["clusterNetwork"]["services"]["cidrBlocks"] = json!(["10.0.0.32/27"]);
    let v = update(Kind::Cluster, &near, &staging, &ix);
    assert!(errors(&v).is_empty());
    assert_eq!(
        warnings(&v),
        ["spec.clusterNetwork.services.cidrBlocks[0]: 10.0.0.32/27 overlaps InClusterIPPool team-a/nodes, which machines of this cluster draw addresses from: an address handed out there inside 10.0.0.32/27 is unroutable inside the cluster"]
    );
    // Another cluster's networks may hold it.
    let mut prod2 = cluster("prod", "10.1.0.5");
    prod2["spec"]["clusterNetwork"]["services"]["cidrBlocks"] = json!(["10.0.0.0/24"]);
    assert!(errors(&create(Kind::Cluster, &prod2, &ix)).is_empty());
}

#[test]
fn cp1_an_infrastructure_cluster_shares_its_clusters_endpoint_and_no_other() {
    let vsphere = |name: &str, cluster: &str, host: &str| {
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "VSphereCluster",
            "metadata": {"name": name, "namespace": "team-a",
                         "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
            "spec": {"server": "vcenter.example.com",
                     "controlPlaneEndpoint": {"host": host, "port": 6443}}
        })
    };
    let prod = cluster("prod", "10.1.0.5");
    let ix = index(&[(Kind::Cluster, &prod)]);
    // Its own Cluster's endpoint: one cluster, no conflict.
    assert!(errors(&create(
        Kind::VSphereCluster,
        &vsphere("prod-x", "prod", "10.1.0.5"),
        &ix
    ))
    .is_empty());
    let v = create(
        Kind::VSphereCluster,
        &vsphere("dev", "dev", "10.1.0.5"),
        &ix,
    );
    assert_eq!(
        errors(&v),
        ["spec.controlPlaneEndpoint.host: Duplicate value: \"10.1.0.5\": 10.1.0.5 is already the control-plane endpoint of Cluster team-a/prod"]
    );
    // And the other way round: a Cluster meets the infrastructure clusters of other clusters.
    let infra = vsphere("dev", "dev", "10.1.0.7");
    let ix = index(&[(Kind::VSphereCluster, &infra)]);
    assert_eq!(
        rules(&create(Kind::Cluster, &cluster("prod", "10.1.0.7"), &ix)),
        ["CP1"]
    );
    assert!(errors(&create(Kind::Cluster, &cluster("dev", "10.1.0.7"), &ix)).is_empty());
}

#[test]
fn cp1_an_infrastructure_cluster_without_a_space_of_its_own_is_judged_in_its_clusters() {
    let vsphere = json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "VSphereCluster",
        "metadata": {"name": "prod-x", "namespace": "team-a",
                     "labels": {"cluster.x-k8s.io/cluster-name": "prod"}},
        "spec": {"server": "vcenter.example.com",
                 "controlPlaneEndpoint": {"host": "10.0.0.20", "port": 6443}}
    });
    let prod = with_space(cluster("prod", "10.0.0.20"), "dc1");
    // A pool of `default` may hold the address: the cluster's network is dc1.
    let nodes = pool("nodes", "10.0.0.10-10.0.0.50");
    let ix = index(&[(Kind::Cluster, &prod), (Kind::InClusterIPPool, &nodes)]);
    assert!(errors(&create(Kind::VSphereCluster, &vsphere, &ix)).is_empty());
    // A pool of dc1 may not.
    let dc1 = with_space(pool("dc1-nodes", "10.0.0.10-10.0.0.50"), "dc1");
    let ix = index(&[(Kind::Cluster, &prod), (Kind::InClusterIPPool, &dc1)]);
    assert_eq!(rules(&create(Kind::VSphereCluster, &vsphere, &ix)), ["CP1"]);
}
