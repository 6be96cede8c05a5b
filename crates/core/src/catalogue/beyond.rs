//! CAPV machines (V1), the defaults the mutating webhook fills (M), and the rules beyond one
//! kind's fields: the request itself, the view, exhaustion and health.

use super::objects::{ADDRESS_WEB, CLAIM_WEB, POOL_NODES};
use super::{ex, with_cluster, Example, Rule, RuleId, Setting};

pub(super) const BEYOND: &[Rule] = &[
    // === CAPV ===
    Rule {
        id: RuleId::V1,
        kinds: "VSphereMachine, VSphereMachineTemplate",
        operations: "CREATE, UPDATE",
        field: "spec.network.devices[i].addressesFromPools[j] (templates: under spec.template.spec)",
        summary: "Each pool reference is complete, names a known pool kind, finds its pool (namespaced kinds in the machine's namespace) and carries no namespace. Warnings only: CAPV owns these objects.",
        example: ex("CREATE", "\
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: VSphereMachine
metadata: {name: worker-0, namespace: team-a}
spec:
  template: ubuntu-2204
  network:
    devices:
      - networkName: vm-network
        addressesFromPools:
          - {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"),
    },
    // === Mutations ===
    Rule {
        id: RuleId::M1,
        kinds: "IPAddressClaim, IPAddress",
        operations: "CREATE (mutating webhook)",
        field: "spec.poolRef.apiGroup",
        summary: "An absent or empty `spec.poolRef.apiGroup` with kind `InClusterIPPool`, `GlobalInClusterIPPool`, `InClusterPrefixPool` or `GlobalInClusterPrefixPool` is set to `ipam.cluster.x-k8s.io`. Never on UPDATE (the spec is immutable).",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta1
kind: IPAddressClaim
metadata: {name: web-0, namespace: team-a}
spec:
  poolRef: {kind: InClusterIPPool, name: nodes}
"), POOL_NODES),    },
    Rule {
        id: RuleId::M2,
        kinds: "IPAddressClaim",
        operations: "CREATE, UPDATE (mutating webhook)",
        field: "metadata.labels[cluster.x-k8s.io/cluster-name]",
        summary: "With `spec.clusterName` set and the label `cluster.x-k8s.io/cluster-name` absent, the label is added.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-0, namespace: team-a}
spec:
  clusterName: prod
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), POOL_NODES),    },
    // === Beyond one kind ===
    Rule {
        id: RuleId::K1,
        kinds: "every kind ipam-guard serves",
        operations: "CREATE, UPDATE, DELETE",
        field: "(the object)",
        summary: "A version of a known kind that ipam-guard cannot decode (a newer CRD than it knows) is let through unchecked, never silently.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta3
kind: IPAddressClaim
metadata: {name: web-0, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"),
    },
    Rule {
        id: RuleId::REQ,
        kinds: "every kind ipam-guard serves",
        operations: "CREATE, UPDATE, DELETE",
        field: "object, oldObject",
        summary: "A review that lacks the object its operation needs (or carries one that is not a JSON object) is denied with a cause at the missing field, never allowed. An API server always sends them; this catches broken callers.",
        example: Example {
            setting: Setting::WithoutObject,
            ..ex("CREATE", CLAIM_WEB)
        },
    },
    Rule {
        id: RuleId::X3,
        kinds: "every kind ipam-guard serves",
        operations: "CREATE, UPDATE, DELETE",
        field: "(the object)",
        summary: "Until the view has synced every watched kind, a write that a view-reading rule could deny is refused with 503 (fail closed; retry), and warning-only view rules are skipped with a warning saying so.",
        example: Example {
            setting: Setting::ViewNotSynced,
            ..ex("CREATE", ADDRESS_WEB)
        },
    },
    Rule {
        id: RuleId::X4,
        kinds: "every kind (`ipam-guard check`)",
        operations: "-",
        field: "metadata.name",
        summary: "`check` found the same object defined twice; the others are judged against the last definition, as applying the files in order would leave it.",
        example: ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.41.40-172.18.41.50]
  gateway: 172.18.41.1
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.41.40-172.18.41.60]
  gateway: 172.18.41.1
"),
    },
    Rule {
        id: RuleId::E1,
        kinds: "IPAddressClaim, IPClaim (Metal3); `audit`: claims without an address",
        operations: "CREATE; `audit` and the periodic audit",
        field: "spec.poolRef.name (Metal3: spec.pool.name)",
        summary: "The claim's pool, found in the view, has no free address: the claim is admitted (addresses are released later and the provider then serves it) with a warning naming the pool and its usage, the figures `ipam-guard usage` and `ipam_guard_pool_addresses` show (free = allocatable − used; a prefix pool counts sub-prefixes). Below `--warn-free-below` (default `5%,2`: fewer free than 5% of the allocatable set rounded up, or than 2, whichever is more) the warning says how many are left. `audit` and the periodic audit report a claim still without an address whose pool has none free. Never a denial.",
        example: with_cluster(ex("CREATE", CLAIM_WEB), "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.11]
  gateway: 10.0.0.1
  prefix: 24
---
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: db-0, namespace: team-a}
spec:
  address: 10.0.0.10
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: db-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
---
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: db-1, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: db-1}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"),
    },
    Rule {
        id: RuleId::H1,
        kinds: "IPAddressClaim, IPClaim (Metal3)",
        operations: "`audit` and the periodic audit",
        field: "status.addressRef (Metal3: status.address)",
        summary: "A claim has had no address for longer than `--stuck-after` (default 10m, from its `creationTimestamp`) while its pool has free addresses: neither its status names an address nor does an address object name it. The provider is not serving it (not running, not watching the namespace, or failing on it).",
        example: with_cluster(ex("-", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-0, namespace: team-a, creationTimestamp: \"2026-01-05T09:30:00Z\"}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), POOL_NODES),
    },
    Rule {
        id: RuleId::H2,
        kinds: "IPAddress, IPAddress (Metal3)",
        operations: "`audit` and the periodic audit",
        field: "spec.claimRef.name (Metal3: spec.claim.name)",
        summary: "An address whose claim no longer exists: an orphan that holds its address until someone deletes it (at admission the same case is A6's warning, since restores create addresses before their claims).",
        example: with_cluster(ex("-", ADDRESS_WEB), POOL_NODES),
    },
    Rule {
        id: RuleId::H3,
        kinds: "IPAddress, IPAddress (Metal3)",
        operations: "`audit` and the periodic audit",
        field: "spec.poolRef.name (Metal3: spec.pool.name)",
        summary: "An address whose pool (a known pool kind) no longer exists: it holds an address no pool accounts for, so no overlap or usage figure sees it.",
        example: with_cluster(ex("-", ADDRESS_WEB), CLAIM_WEB),
    },
];
