//! Cluster API's `Cluster`: its control-plane endpoint is an address held outside every pool
//! (CP1, CP3, CP4), and its pod and service networks are its own (CP2, CP5).

use super::objects::POOL_NODES;
use super::{ex, with_cluster, Rule, RuleId};

const CLUSTER_PROD: &str = "\
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: prod, namespace: team-a}
spec:
  controlPlaneEndpoint: {host: 10.0.0.20, port: 6443}
  clusterNetwork:
    pods: {cidrBlocks: [192.168.0.0/16]}
    services: {cidrBlocks: [10.96.0.0/12]}
";

pub(super) const CLUSTERS: &[Rule] = &[
    Rule {
        id: RuleId::CP1,
        kinds: "Cluster, VSphereCluster, Metal3Cluster",
        operations: "CREATE; UPDATE when the endpoint or the address-space annotation changes",
        field: "spec.controlPlaneEndpoint.host",
        summary: "A control-plane endpoint that is an IP address (a host name holds none) is, in the Cluster's address space (annotation `ipam-guard.io/address-space`, default `default`; see `--overlap-scope`), not an address a pool of any known kind can hand out, not another Cluster's endpoint, and not held by an address object, unless that address was claimed for this endpoint: its claim carries the annotation `ipam-guard.io/control-plane-endpoint-of: <Cluster name>` (same namespace), and then the pool that handed it out is not in the way either. An infrastructure cluster (CAPV's `VSphereCluster`, Metal3's `Metal3Cluster`) holds its endpoint the same way, in the address space of its Cluster unless it carries an address-space annotation of its own (providers and ClusterClass topologies create it without the Cluster's annotations); it belongs to the Cluster its label `cluster.x-k8s.io/cluster-name` (else its owner reference) names, and one cluster's endpoints never conflict with each other. The webhook registration for these kinds is its own: see docs/operations.md for its failurePolicy.",
        example: with_cluster(ex("CREATE", CLUSTER_PROD), POOL_NODES),
    },
    Rule {
        id: RuleId::CP2,
        kinds: "Cluster",
        operations: "CREATE; UPDATE when the endpoint, the networks or the address space change",
        field: "spec.controlPlaneEndpoint.host",
        summary: "The control-plane endpoint does not lie in the Cluster's own pod or service CIDR blocks (`spec.clusterNetwork.pods.cidrBlocks`, `.services.cidrBlocks`): inside the cluster that address is routed to pods or services, never to the control plane. Networks of different Clusters are not compared: each is private to its cluster.",
        example: ex("CREATE", "\
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: prod, namespace: team-a}
spec:
  controlPlaneEndpoint: {host: 10.96.0.1, port: 6443}
  clusterNetwork:
    pods: {cidrBlocks: [192.168.0.0/16]}
    services: {cidrBlocks: [10.96.0.0/12]}
"),
    },
    Rule {
        id: RuleId::CP3,
        kinds: "every pool kind",
        operations: "CREATE; UPDATE when the allocatable set gains addresses or the address space changes",
        field: "the entry that holds the endpoint (spec.addresses[i], spec.prefixes[i], spec.pools[i], spec.ips[i])",
        summary: "What the pool can hand out holds no Cluster's control-plane endpoint in its address space (scoped as P10), unless an address object claimed for that endpoint (CP1) already holds it. The cause names the Cluster and the field to exclude it with.",
        example: with_cluster(ex("CREATE", POOL_NODES), CLUSTER_PROD),
    },
    Rule {
        id: RuleId::CP4,
        kinds: "IPAddress (CAPI and Metal3)",
        operations: "CREATE",
        field: "spec.address",
        summary: "The address is no Cluster's control-plane endpoint in its address space (its pool's; scoped as A9), unless its claim is annotated `ipam-guard.io/control-plane-endpoint-of` with that Cluster's name: a VIP claimed from a pool is the endpoint's own address.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-1, namespace: team-a}
spec:
  address: 10.0.0.20
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-1}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), CP4_CLUSTER),
    },
    Rule {
        id: RuleId::CP5,
        kinds: "IPAddress (CAPI and Metal3), Cluster",
        operations: "IPAddress: CREATE; Cluster: CREATE, and UPDATE when the networks change",
        field: "spec.address; the Cluster's spec.clusterNetwork.pods.cidrBlocks[i], .services.cidrBlocks[i]",
        summary: "A machine's address does not lie in the pod or service networks of its own Cluster (the one its claim names, by `spec.clusterName` or the label `cluster.x-k8s.io/cluster-name`, in the claim's namespace): inside that cluster it would be routed to pods or services. A Cluster whose networks would take in addresses its machines already hold is refused at the block; a block that overlaps a pool its machines' claims draw from is a warning (the pool may hand the next machine an address inside it). Addresses of other clusters are not compared: pod and service networks are private to each cluster.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-1, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-1}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), CP5_CLUSTER),
    },
];

/// CP5's view: the pool, a claim of Cluster `prod`'s machine, and the Cluster, whose pod network
/// takes in the pool.
const CP5_CLUSTER: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
---
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-1, namespace: team-a}
spec:
  clusterName: prod
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: prod, namespace: team-a}
spec:
  clusterNetwork:
    pods: {cidrBlocks: [10.0.0.0/16]}
    services: {cidrBlocks: [10.96.0.0/12]}
";

/// CP4's view: a VIP claimed from the pool for Cluster `prod` (an annotated claim and its
/// address), the Cluster, and a claim of an ordinary machine.
const CP4_CLUSTER: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
---
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata:
  name: prod-vip
  namespace: team-a
  annotations: {ipam-guard.io/control-plane-endpoint-of: prod}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
---
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: prod-vip, namespace: team-a}
spec:
  address: 10.0.0.20
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: prod-vip}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: prod, namespace: team-a}
spec:
  controlPlaneEndpoint: {host: 10.0.0.20, port: 6443}
---
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-1, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
";
