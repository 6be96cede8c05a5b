//! The in-cluster provider's pools (P) and prefix pools (PP).

use super::objects::{POOL_AND_ADDRESS, POOL_NODES, PREFIX_POOL};
use super::{ex, with_cluster, with_old, Rule, RuleId};

pub(super) const IN_CLUSTER: &[Rule] = &[
    // === In-cluster pools ===
    Rule {
        id: RuleId::P1,
        kinds: "InClusterIPPool, GlobalInClusterIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.addresses",
        summary: "The pool declares at least one address (`spec.addresses`, or v1alpha1's `subnet`, never both).",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: []
  prefix: 24
"),
    },
    Rule {
        id: RuleId::P2,
        kinds: "InClusterIPPool, GlobalInClusterIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.addresses[i], spec.excludedAddresses[i]",
        summary: "Every entry is a single IP, a range `a-b` (same family, a <= b, never swapped) or a CIDR. A CIDR with host bits set and IPv6 not in canonical form are warnings naming what they mean.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.50-10.0.0.10]
  prefix: 24
"),
    },
    Rule {
        id: RuleId::P3,
        kinds: "InClusterIPPool, GlobalInClusterIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.addresses, spec.excludedAddresses, spec.gateway",
        summary: "Entries, excluded entries and the gateway are of one IP family.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50, 'fd00::10-fd00::50']
  prefix: 24
"),
    },
    Rule {
        id: RuleId::P4,
        kinds: "InClusterIPPool, GlobalInClusterIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.prefix",
        summary: "The prefix is set and within the family's bound.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  prefix: 40
"),
    },
    Rule {
        id: RuleId::P5,
        kinds: "InClusterIPPool, GlobalInClusterIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.addresses[i]",
        summary: "Every entry lies inside the one subnet of the pool's prefix that holds its lowest address.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50, 10.0.1.10-10.0.1.50]
  prefix: 24
"),
    },
    Rule {
        id: RuleId::P6,
        kinds: "InClusterIPPool, GlobalInClusterIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.gateway",
        summary: "The gateway is a valid IP inside the pool's subnet when the prefix leaves room for one (IPv6 link-local gateways are exempt).",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.1.1
  prefix: 24
"),
    },
    Rule {
        id: RuleId::P7,
        kinds: "InClusterIPPool, GlobalInClusterIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.excludedAddresses[i], spec.addresses, spec.prefix",
        summary: "The pool hands out less than its author expects: an excluded entry outside the declared addresses, nothing allocatable at all, or a /31-/32 pool without `allocateReservedIPAddresses: true` (the in-cluster provider then hands out nothing).",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  excludedAddresses: [10.0.0.100]
  gateway: 10.0.0.1
  prefix: 24
"),
    },
    Rule {
        id: RuleId::P8,
        kinds: "InClusterIPPool, GlobalInClusterIPPool, InClusterPrefixPool, GlobalInClusterPrefixPool",
        operations: "UPDATE (spec changed)",
        field: "spec.addresses (prefix pools: spec.prefixes)",
        summary: "Every IPAddress referencing the pool stays inside its new allocatable set (for a prefix pool: its sub-prefix stays a whole allocatable sub-prefix); the offenders are named (at most 5, then `and N more`).",
        example: with_cluster(with_old(ex("UPDATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.20-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
"), POOL_NODES), POOL_AND_ADDRESS),
    },
    Rule {
        id: RuleId::P9,
        kinds: "InClusterIPPool, GlobalInClusterIPPool, InClusterPrefixPool, GlobalInClusterPrefixPool",
        operations: "DELETE",
        field: "metadata.name (403 Forbidden)",
        summary: "A pool is not deleted while IPAddresses reference it (a namespaced pool: from its namespace; a global pool: from any); the answer names the holders. Skipped with annotation `ipam.cluster.x-k8s.io/skip-validate-delete-webhook` or `clusterctl.cluster.x-k8s.io/delete-for-move`.",
        example: with_cluster(ex("DELETE", POOL_NODES), POOL_AND_ADDRESS),
    },
    Rule {
        id: RuleId::P10,
        kinds: "every pool kind",
        operations: "CREATE; UPDATE when the allocatable set or the address-space annotation changes",
        field: "the entry that overlaps (spec.addresses[i], spec.prefixes[i], spec.pools[i], spec.ips[i])",
        summary: "What the pool can hand out shares no address with any other pool, of any known kind, in the same address space (annotation `ipam-guard.io/address-space`, default `default`; see `--overlap-scope`). A prefix pool's set is the whole sub-prefixes it can hand out. The cause names the other pool and the shared range.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: GlobalInClusterIPPool
metadata: {name: shared}
spec:
  addresses: [10.0.0.0/24]
  prefix: 24
"), POOL_NODES),
    },
    Rule {
        id: RuleId::P11,
        kinds: "every pool kind",
        operations: "UPDATE",
        field: "-",
        summary: "A pool with `deletionTimestamp` set passes every update, so finalizers can be removed whatever the pool looks like.",
        example: with_cluster(with_old(ex("UPDATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a, deletionTimestamp: '2026-01-01T00:00:00Z'}
spec:
  addresses: [10.0.0.20-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
"), "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [example.com/hold]}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
"), POOL_AND_ADDRESS),
    },
    // === In-cluster prefix pools ===
    Rule {
        id: RuleId::PP1,
        kinds: "InClusterPrefixPool, GlobalInClusterPrefixPool",
        operations: "CREATE, UPDATE",
        field: "spec.prefixes",
        summary: "The pool declares at least one prefix.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterPrefixPool
metadata: {name: nodes-v6, namespace: team-a}
spec:
  prefixes: []
  allocationPrefixLength: 64
"),
    },
    Rule {
        id: RuleId::PP2,
        kinds: "InClusterPrefixPool, GlobalInClusterPrefixPool",
        operations: "CREATE, UPDATE",
        field: "spec.prefixes[i]",
        summary: "Every entry is an IPv6 CIDR with no host bits set (`fd00::/48`, not `fd00::1/48`); IPv6 not in canonical form is a warning.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterPrefixPool
metadata: {name: nodes-v6, namespace: team-a}
spec:
  prefixes: ['fd00:10::1/48']
  allocationPrefixLength: 64
"),
    },
    Rule {
        id: RuleId::PP3,
        kinds: "InClusterPrefixPool, GlobalInClusterPrefixPool",
        operations: "CREATE, UPDATE",
        field: "spec.allocationPrefixLength, spec.prefixes[i]",
        summary: "`allocationPrefixLength` is between 1 and 128 and at least the length of every entry (a /72 entry has no whole /64 to hand out).",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterPrefixPool
metadata: {name: nodes-v6, namespace: team-a}
spec:
  prefixes: ['fd00:10::/72']
  allocationPrefixLength: 64
"),
    },
    Rule {
        id: RuleId::PP4,
        kinds: "InClusterPrefixPool, GlobalInClusterPrefixPool",
        operations: "CREATE, UPDATE",
        field: "spec.excludedPrefixes[i]",
        summary: "Every excluded entry is an IPv6 IP, range or CIDR lying inside `spec.prefixes`. A sub-prefix an exclusion touches at all is not handed out.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterPrefixPool
metadata: {name: nodes-v6, namespace: team-a}
spec:
  prefixes: ['fd00:10::/48']
  excludedPrefixes: ['fd00:11::/64']
  allocationPrefixLength: 64
"),
    },
    Rule {
        id: RuleId::PP5,
        kinds: "InClusterPrefixPool, GlobalInClusterPrefixPool",
        operations: "CREATE, UPDATE",
        field: "spec.gateway",
        summary: "The gateway, when set, is an IPv6 address. It blocks no sub-prefix: the provider copies it into every IPAddress.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterPrefixPool
metadata: {name: nodes-v6, namespace: team-a}
spec:
  prefixes: ['fd00:10::/48']
  allocationPrefixLength: 64
  gateway: 10.0.0.1
"),
    },
    Rule {
        id: RuleId::PP6,
        kinds: "InClusterPrefixPool, GlobalInClusterPrefixPool",
        operations: "CREATE, UPDATE",
        field: "spec.excludedPrefixes, spec.allocationPrefixLength, spec.gateway",
        summary: "The pool hands out other than its author most likely expects: no whole sub-prefix is left after the exclusions, `/128` allocations (single addresses, an InClusterIPPool's job), or a gateway that a `/128` allocation may hand out.",
        example: ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterPrefixPool
metadata: {name: nodes-v6, namespace: team-a}
spec:
  prefixes: ['fd00:10::/64']
  excludedPrefixes: ['fd00:10::1']
  allocationPrefixLength: 64
"),
    },
    Rule {
        id: RuleId::PP7,
        kinds: "InClusterPrefixPool, GlobalInClusterPrefixPool",
        operations: "UPDATE (spec changed)",
        field: "spec.allocationPrefixLength",
        summary: "`allocationPrefixLength` is immutable: every sub-prefix already handed out has the old length.",
        example: with_old(ex("UPDATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterPrefixPool
metadata: {name: nodes-v6, namespace: team-a}
spec:
  prefixes: ['fd00:10::/48']
  allocationPrefixLength: 56
  gateway: 'fd00:10::1'
"), PREFIX_POOL),
    },
];
