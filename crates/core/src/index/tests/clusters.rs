//! Clusters in the index: control-plane endpoints by address space, stored and pending (X2),
//! and an infrastructure cluster following its Cluster's space.

use super::*;

fn cluster(name: &str, space: &str, endpoint: Option<&str>) -> ClusterProj {
    ClusterProj {
        key: key(Kind::Cluster, Some("ns"), name),
        cluster: Arc::from(name),
        space: Arc::from(space),
        endpoint: endpoint.map(ip),
        networks: Vec::new(),
        inherits: false,
    }
}

/// A VSphereCluster of the Cluster `of`, with no address-space annotation of its own.
fn infra(name: &str, of: &str, endpoint: &str) -> ClusterProj {
    ClusterProj {
        key: key(Kind::VSphereCluster, Some("ns"), name),
        cluster: Arc::from(of),
        inherits: true,
        ..cluster(name, "default", Some(endpoint))
    }
}

#[test]
fn an_infrastructure_cluster_follows_its_clusters_space() {
    let mut index = Index::new();
    let names = |v: Vec<&ClusterProj>| -> Vec<String> {
        v.iter().map(|c| c.key.name.to_string()).collect()
    };
    // Before its Cluster is seen, the endpoint is in `default`.
    index.upsert_cluster(infra("prod-x", "prod", "10.0.0.5"));
    index.check_consistency();
    assert_eq!(
        names(index.endpoints_at("default", ip("10.0.0.5"))),
        ["prod-x"]
    );

    index.upsert_cluster(cluster("prod", "dc1", Some("10.0.0.5")));
    index.check_consistency();
    assert!(index.endpoints_at("default", ip("10.0.0.5")).is_empty());
    assert_eq!(
        names(index.endpoints_at("dc1", ip("10.0.0.5"))),
        ["prod", "prod-x"]
    );

    // A pending version of the Cluster in another space moves it only while no Cluster is
    // stored; a stored one decides.
    let id = index.add_pending(Object::Cluster(Box::new(cluster(
        "prod",
        "dc2",
        Some("10.0.0.5"),
    ))));
    index.check_consistency();
    assert_eq!(
        names(index.endpoints_at("dc1", ip("10.0.0.5"))),
        ["prod", "prod-x"]
    );
    index.remove_pending(id);

    index.upsert_cluster(cluster("prod", "dc2", Some("10.0.0.5")));
    index.check_consistency();
    assert_eq!(
        names(index.endpoints_at("dc2", ip("10.0.0.5"))),
        ["prod", "prod-x"]
    );
    index.remove_cluster(&key(Kind::Cluster, Some("ns"), "prod"));
    index.check_consistency();
    assert_eq!(
        names(index.endpoints_at("default", ip("10.0.0.5"))),
        ["prod-x"]
    );

    // A pending Cluster alone decides until it is settled.
    let id = index.add_pending(Object::Cluster(Box::new(cluster("prod", "dc3", None))));
    index.check_consistency();
    assert_eq!(names(index.endpoints_at("dc3", ip("10.0.0.5"))), ["prod-x"]);
    index.remove_pending(id);
    index.check_consistency();
    assert_eq!(
        names(index.endpoints_at("default", ip("10.0.0.5"))),
        ["prod-x"]
    );

    // One with its own annotation keeps it.
    let mut own = infra("prod-y", "prod", "10.0.0.6");
    own.inherits = false;
    own.space = Arc::from("dc9");
    index.upsert_cluster(cluster("prod", "dc1", None));
    index.upsert_cluster(own);
    index.check_consistency();
    assert_eq!(names(index.endpoints_at("dc9", ip("10.0.0.6"))), ["prod-y"]);
}

#[test]
fn cluster_endpoints_by_space_stored_and_pending() {
    let mut index = Index::new();
    index.upsert_cluster(cluster("a", "default", Some("10.0.0.5")));
    index.upsert_cluster(cluster("b", "dc2", Some("10.0.0.5")));
    index.upsert_cluster(cluster("c", "default", None));
    index.check_consistency();
    let names = |v: Vec<&ClusterProj>| -> Vec<String> {
        v.iter().map(|c| c.key.name.to_string()).collect()
    };
    assert_eq!(names(index.endpoints_at("default", ip("10.0.0.5"))), ["a"]);
    assert_eq!(
        names(index.endpoints_in("dc2", &set(&["10.0.0.0/24"]))),
        ["b"]
    );
    assert!(index.endpoints_at("default", ip("10.0.0.6")).is_empty());

    // A pending version that moves the endpoint: both addresses count until it is settled (X2).
    let id = index.add_pending(Object::Cluster(Box::new(cluster(
        "a",
        "default",
        Some("10.0.0.6"),
    ))));
    index.check_consistency();
    assert_eq!(names(index.endpoints_at("default", ip("10.0.0.6"))), ["a"]);
    assert_eq!(names(index.endpoints_at("default", ip("10.0.0.5"))), ["a"]);
    assert_eq!(
        index
            .cluster_versions(&key(Kind::Cluster, Some("ns"), "a"))
            .count(),
        2
    );
    index.remove_pending(id);
    index.check_consistency();
    assert!(index.endpoints_at("default", ip("10.0.0.6")).is_empty());

    // Moving spaces and relists keep the maps exact.
    index.upsert_cluster(cluster("a", "dc2", Some("10.0.0.5")));
    assert_eq!(names(index.endpoints_at("dc2", ip("10.0.0.5"))), ["a", "b"]);
    index.retain_kind(Kind::Cluster, |k| &*k.name == "b");
    index.check_consistency();
    assert_eq!(names(index.endpoints_at("dc2", ip("10.0.0.5"))), ["b"]);
    assert_eq!(index.len(), 1);
}

#[test]
fn an_endpoint_a_pool_could_hand_out_counts_as_used() {
    let mut index = Index::new();
    index.upsert_pool(global("nodes", "default", &["10.0.0.0-10.0.0.9"]));
    index.upsert_cluster(cluster("a", "default", Some("10.0.0.5")));
    index.upsert_cluster(cluster("b", "dc2", Some("10.0.0.6")));
    let key = key(Kind::GlobalInClusterIPPool, None, "nodes");
    let usage = index.usage_of_pool(&key).unwrap();
    assert_eq!((usage.allocatable, usage.used, usage.free()), (10, 1, 9));
    assert_eq!(index.free_at_least(&key), Some((10, 9)));
    let pool = index.pool(&key).unwrap().clone();
    assert_eq!(
        index.free_of(&pool),
        set(&["10.0.0.0-10.0.0.4", "10.0.0.6-10.0.0.9"])
    );
}
