//! Objects several rules' examples share: the same pool, claim or address reads the same
//! wherever the docs show it.

pub(super) const POOL_NODES: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
";

pub(super) const CLAIM_WEB: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-0, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
";

pub(super) const ADDRESS_WEB: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
";

pub(super) const POOL_AND_CLAIM: &str = "\
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
metadata: {name: web-0, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
";

pub(super) const POOL_CLAIMS_ADDRESS: &str = "\
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
metadata: {name: web-0, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
---
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-1, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
---
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
";

pub(super) const POOL_AND_ADDRESS: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
---
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
";

pub(super) const PREFIX_POOL: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterPrefixPool
metadata: {name: nodes-v6, namespace: team-a}
spec:
  prefixes: ['fd00:10::/48']
  allocationPrefixLength: 64
  gateway: 'fd00:10::1'
";

pub(super) const METAL3_POOL: &str = "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata: {name: provisioning, namespace: team-a}
spec:
  namePrefix: prov
  allocationStrategy: sequential
  pools:
    - {start: 192.168.20.10, end: 192.168.20.50, prefix: 24, gateway: 192.168.20.1}
";

pub(super) const METAL3_POOL_AND_ADDRESS: &str = "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata: {name: provisioning, namespace: team-a}
spec:
  namePrefix: prov
  allocationStrategy: sequential
  pools:
    - {start: 192.168.20.10, end: 192.168.20.50, prefix: 24, gateway: 192.168.20.1}
---
apiVersion: ipam.metal3.io/v1alpha1
kind: IPAddress
metadata: {name: prov-host-0, namespace: team-a}
spec:
  address: 192.168.20.11
  prefix: 24
  gateway: 192.168.20.1
  pool: {name: provisioning, namespace: team-a}
  claim: {name: host-0, namespace: team-a}
";

pub(super) const METAL3_CLAIM: &str = "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPClaim
metadata: {name: host-0, namespace: team-a}
spec:
  pool: {name: provisioning, namespace: team-a}
";

pub(super) const METAL3_ADDRESS: &str = "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPAddress
metadata: {name: prov-host-0, namespace: team-a}
spec:
  address: 192.168.20.11
  prefix: 24
  gateway: 192.168.20.1
  pool: {name: provisioning, namespace: team-a}
  claim: {name: host-0, namespace: team-a}
";

/// A SpiderSubnet whose subnet SPIDER_POOL_IN_USE declares: that pool is carved from it.
pub(super) const SPIDER_SUBNET: &str = "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderSubnet
metadata: {name: rack-a}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.41.40-172.18.41.80]
  gateway: 172.18.41.1
";

pub(super) const SPIDER_POOL_IN_USE: &str = "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.41.40-172.18.41.50]
  gateway: 172.18.41.1
status:
  allocatedIPCount: 1
  allocatedIPs: '{\"172.18.41.41\":{\"pod\":\"default/web-0\"}}'
";
