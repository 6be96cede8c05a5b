//! Metal3 IPAM: pools (MP), claims (MC) and addresses (MA).

use super::objects::{METAL3_ADDRESS, METAL3_CLAIM, METAL3_POOL, METAL3_POOL_AND_ADDRESS};
use super::{ex, with_cluster, with_old, Rule, RuleId};

pub(super) const METAL3: &[Rule] = &[
    // === Metal3 ===
    Rule {
        id: RuleId::MP1,
        kinds: "IPPool.ipam.metal3.io",
        operations: "CREATE, UPDATE",
        field: "spec.pools[i]",
        summary: "Each entry has a start, an end or a subnet; each parses; start <= end; start, end and subnet share a family; start and end lie inside the subnet.",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata: {name: provisioning, namespace: team-a}
spec:
  namePrefix: prov
  allocationStrategy: sequential
  pools:
    - {start: 192.168.20.50, end: 192.168.20.10, prefix: 24}
"),
    },
    Rule {
        id: RuleId::MP2,
        kinds: "IPPool.ipam.metal3.io",
        operations: "CREATE, UPDATE",
        field: "spec.prefix, spec.pools[i].prefix, spec.gateway, spec.pools[i].gateway, spec.dnsServers",
        summary: "Prefixes within the family bound, pool-level and per entry; gateways and DNS servers are valid IPs of the family.",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata: {name: provisioning, namespace: team-a}
spec:
  namePrefix: prov
  allocationStrategy: sequential
  pools:
    - {start: 192.168.20.10, end: 192.168.20.50, prefix: 33}
"),
    },
    Rule {
        id: RuleId::MP3,
        kinds: "IPPool.ipam.metal3.io",
        operations: "CREATE, UPDATE",
        field: "spec.preAllocations[<claim>]",
        summary: "Pre-allocated addresses are valid, unique and inside the pools.",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata: {name: provisioning, namespace: team-a}
spec:
  namePrefix: prov
  allocationStrategy: sequential
  pools:
    - {start: 192.168.20.10, end: 192.168.20.50, prefix: 24}
  preAllocations:
    host-0: 192.168.30.5
"),
    },
    Rule {
        id: RuleId::MP4,
        kinds: "IPPool.ipam.metal3.io",
        operations: "UPDATE, DELETE",
        field: "spec.namePrefix, spec.allocationStrategy, spec.pools, metadata.name (DELETE: 403)",
        summary: "`namePrefix` and `allocationStrategy` are immutable; addresses held by Metal3 IPAddresses stay inside the pools; the pool is not deleted while Metal3 IPAddresses name it.",
        example: with_cluster(ex("DELETE", METAL3_POOL), METAL3_POOL_AND_ADDRESS),
    },
    Rule {
        id: RuleId::MP5,
        kinds: "IPPool.ipam.metal3.io",
        operations: "CREATE, UPDATE",
        field: "spec.pools[i]",
        summary: "With `allocationStrategy: random`, each entry has a size ip-address-manager can pick from: a start with an end or a subnet, or a subnet alone, holding at most 2^63-1 addresses (a start alone, or `2001:db8::/32`, is refused).",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata: {name: provisioning, namespace: team-a}
spec:
  namePrefix: prov
  allocationStrategy: random
  pools:
    - {subnet: '2001:db8::/32', prefix: 64}
"),
    },
    Rule {
        id: RuleId::MC1,
        kinds: "IPClaim.ipam.metal3.io",
        operations: "CREATE",
        field: "spec.pool.name",
        summary: "The claim names its pool.",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPClaim
metadata: {name: host-0, namespace: team-a}
spec:
  pool: {namespace: team-a}
"),
    },
    Rule {
        id: RuleId::MC2,
        kinds: "IPClaim.ipam.metal3.io",
        operations: "CREATE",
        field: "spec.pool.namespace",
        summary: "`spec.pool.namespace`, when set, is the claim's own namespace.",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPClaim
metadata: {name: host-0, namespace: team-a}
spec:
  pool: {name: provisioning, namespace: team-b}
"),
    },
    Rule {
        id: RuleId::MC3,
        kinds: "IPClaim.ipam.metal3.io",
        operations: "UPDATE",
        field: "each changed field under spec",
        summary: "The spec is immutable.",
        example: with_old(ex("UPDATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPClaim
metadata: {name: host-0, namespace: team-a}
spec:
  pool: {name: provisioning-b, namespace: team-a}
"), METAL3_CLAIM),
    },
    Rule {
        id: RuleId::MC4,
        kinds: "IPClaim.ipam.metal3.io",
        operations: "CREATE, UPDATE",
        field: "metadata.annotations[ipAddress]",
        summary: "The `ipAddress` annotation, when set, is a valid IP; outside the claim's pool it is a warning.",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPClaim
metadata:
  name: host-0
  namespace: team-a
  annotations: {ipAddress: 192.168.20.300}
spec:
  pool: {name: provisioning, namespace: team-a}
"),
    },
    Rule {
        id: RuleId::MA1,
        kinds: "IPAddress.ipam.metal3.io",
        operations: "CREATE",
        field: "spec.address, spec.prefix, spec.gateway",
        summary: "Address, prefix and gateway as A1-A3.",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPAddress
metadata: {name: prov-host-0, namespace: team-a}
spec:
  address: 192.168.20.11
  prefix: 24
  gateway: 192.168.21.1
  pool: {name: provisioning, namespace: team-a}
  claim: {name: host-0, namespace: team-a}
"),
    },
    Rule {
        id: RuleId::MA2,
        kinds: "IPAddress.ipam.metal3.io",
        operations: "CREATE",
        field: "spec.pool.name, spec.claim.name, spec.pool.namespace, spec.claim.namespace",
        summary: "The pool and claim references are set, and their namespaces are the object's own.",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPAddress
metadata: {name: prov-host-0, namespace: team-a}
spec:
  address: 192.168.20.11
  prefix: 24
  pool: {name: provisioning, namespace: team-a}
  claim: {namespace: team-a}
"),
    },
    Rule {
        id: RuleId::MA3,
        kinds: "IPAddress.ipam.metal3.io",
        operations: "UPDATE",
        field: "each changed field under spec",
        summary: "The spec is immutable (removing a finalizer passes).",
        example: with_old(ex("UPDATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPAddress
metadata: {name: prov-host-0, namespace: team-a}
spec:
  address: 192.168.20.12
  prefix: 24
  gateway: 192.168.20.1
  pool: {name: provisioning, namespace: team-a}
  claim: {name: host-0, namespace: team-a}
"), METAL3_ADDRESS),
    },
    Rule {
        id: RuleId::MA4,
        kinds: "IPAddress.ipam.metal3.io",
        operations: "CREATE",
        field: "spec.address",
        summary: "As A8 and A9: the address lies in its pool's allocatable set and no other address object in the same space holds it.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPAddress
metadata: {name: prov-host-1, namespace: team-a}
spec:
  address: 192.168.20.200
  prefix: 24
  gateway: 192.168.20.1
  pool: {name: provisioning, namespace: team-a}
  claim: {name: host-1, namespace: team-a}
"), METAL3_POOL),
    },
    Rule {
        id: RuleId::MA5,
        kinds: "IPAddress.ipam.metal3.io",
        operations: "CREATE, UPDATE (when the annotation changes)",
        field: "metadata.annotations[ipAddress]",
        summary: "The `ipAddress` annotation, when set, is a valid IP (as MC4 on the claim).",
        example: ex("CREATE", "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPAddress
metadata:
  name: prov-host-0
  namespace: team-a
  annotations: {ipAddress: not-an-ip}
spec:
  address: 192.168.20.11
  prefix: 24
  gateway: 192.168.20.1
  pool: {name: provisioning, namespace: team-a}
  claim: {name: host-0, namespace: team-a}
"),
    },
    Rule {
        id: RuleId::MD1,
        kinds: "Metal3DataTemplate",
        operations: "CREATE; UPDATE when a reference is added or changed",
        field: "each pool reference under spec.metaData and spec.networkData (fromPoolRef, ipAddressFromIPPool, fromIPPool, dnsFromIPPool, metaData.*FromIPPool[i])",
        summary: "Every pool the template's machines will claim from can serve them: a reference to a kind ipam-guard knows that is not a pool (an IPAddressClaim, an IPAddress) is refused, and so is a reference with an empty name; a pool not found in the template's namespace, a pool of the other family than its `ipv4` or `ipv6` network, or a kind ipam-guard does not know is a warning (pools are often applied after their templates). A bare name (`ipAddressFromIPPool`, `fromIPPool`, `dnsFromIPPool`) names a Metal3 `IPPool`; a place that sets `fromPoolAnnotation` takes its pool at run time and is not checked.",
        example: ex("CREATE", "\
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3DataTemplate
metadata: {name: workers, namespace: team-a}
spec:
  clusterName: prod
  networkData:
    networks:
      ipv4:
        - id: provisioning
          link: eth0
          fromPoolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: IPAddressClaim, name: web-0}
"),
    },
];
