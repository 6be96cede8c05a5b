//! IPAddressClaim (C) and IPAddress (A, R1): Cluster API's claim and address.

use super::objects::{ADDRESS_WEB, CLAIM_WEB, POOL_AND_CLAIM, POOL_CLAIMS_ADDRESS, POOL_NODES};
use super::{ex, with_cluster, with_old, Example, Rule, RuleId, Setting};

pub(super) const CLAIMS: &[Rule] = &[
    // === IPAddressClaim ===
    Rule {
        id: RuleId::C1,
        kinds: "IPAddressClaim",
        operations: "CREATE",
        field: "spec.poolRef.name, spec.poolRef.kind, spec.poolRef.apiGroup",
        summary: "The pool reference is complete: `name`, `kind` and `apiGroup` are set and not empty in every request version (judged after the mutating webhook has filled `apiGroup`, M1), and `name` is a DNS-1123 subdomain.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-0, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, name: nodes}
"), POOL_NODES),    },
    Rule {
        id: RuleId::C2,
        kinds: "IPAddressClaim, IPAddress",
        operations: "CREATE",
        field: "spec.poolRef.namespace",
        summary: "A pool reference carries no namespace: references stay in the object's own namespace (an API server prunes the key through the CAPI schemas; `check`, `audit` and direct reviews still see it).",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-0, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes, namespace: team-b}
"), POOL_NODES),    },
    Rule {
        id: RuleId::C3,
        kinds: "IPAddressClaim",
        operations: "CREATE",
        field: "spec.poolRef.name",
        summary: "The referenced pool exists (namespaced pools in the claim's namespace, cluster-scoped pools anywhere). A missing pool is a warning by default and a denial with `--require-existing-pool`; a known pool group with an unknown kind is a warning.",
        example: ex("CREATE", CLAIM_WEB),
    },
    Rule {
        id: RuleId::C4,
        kinds: "IPAddressClaim",
        operations: "UPDATE",
        field: "each changed field under spec",
        summary: "The whole spec is immutable; each changed field is its own cause, naming the old value.",
        example: with_old(ex("UPDATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-0, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes-b}
"), CLAIM_WEB),
    },
    Rule {
        id: RuleId::C5,
        kinds: "IPAddressClaim",
        operations: "CREATE; UPDATE when the label or spec.clusterName changes",
        field: "metadata.labels",
        summary: "When both `spec.clusterName` and the label `cluster.x-k8s.io/cluster-name` are set, they agree.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata:
  name: web-0
  namespace: team-a
  labels: {cluster.x-k8s.io/cluster-name: prod}
spec:
  clusterName: staging
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), POOL_NODES),    },
    // === IPAddress ===
    Rule {
        id: RuleId::A1,
        kinds: "IPAddress",
        operations: "CREATE",
        field: "spec.address",
        summary: "`spec.address` is a valid IP in the strict grammar (no leading zeros, no zone, no IPv4-mapped IPv6); IPv6 that is not in canonical form is a warning giving the canonical text.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.011
  prefix: 24
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), POOL_AND_CLAIM),    },
    Rule {
        id: RuleId::A2,
        kinds: "IPAddress",
        operations: "CREATE",
        field: "spec.prefix",
        summary: "`spec.prefix` is within the bound of the address's family (0-32 for IPv4, 0-128 for IPv6) and never negative; a number too large for the field is a denial, never a wrap-around.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 33
  gateway: 10.0.0.1
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), POOL_AND_CLAIM),    },
    Rule {
        id: RuleId::A3,
        kinds: "IPAddress",
        operations: "CREATE",
        field: "spec.gateway",
        summary: "The gateway, when set, is a valid IP of the address's family, not the address itself, and inside `address/prefix` when the prefix leaves room for a subnet (IPv6 link-local gateways are exempt, and so is every address of a prefix pool, whose one gateway is informational).",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 24
  gateway: 10.0.1.1
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), CLAIM_WEB),    },
    Rule {
        id: RuleId::A4,
        kinds: "IPAddress",
        operations: "CREATE",
        field: "spec.address",
        summary: "The address is the network address (IPv4 up to /30, IPv6 up to /126) or the IPv4 broadcast address of its own subnet Not for addresses of a prefix pool: a sub-prefix is handed out at its network address.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.255
  prefix: 24
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), CLAIM_WEB),    },
    Rule {
        id: RuleId::A5,
        kinds: "IPAddress",
        operations: "CREATE",
        field: "spec.claimRef.name, spec.poolRef.name, spec.poolRef.kind, spec.poolRef.apiGroup",
        summary: "The claim reference and the three pool reference fields are set and not empty.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: ''}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), POOL_AND_CLAIM),    },
    Rule {
        id: RuleId::A6,
        kinds: "IPAddress",
        operations: "CREATE",
        field: "spec.poolRef (denial), spec.claimRef.name (warning)",
        summary: "The address names the same pool as the claim it fulfils (looked up in its namespace). A claim that is not found is a warning: restores create objects in any order.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: GlobalInClusterIPPool, name: shared}
"), POOL_AND_CLAIM),
    },
    Rule {
        id: RuleId::A7,
        kinds: "IPAddress",
        operations: "CREATE",
        field: "spec.claimRef.name",
        summary: "One address per claim: no other IPAddress already names the same claim.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0-second, namespace: team-a}
spec:
  address: 10.0.0.12
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), POOL_CLAIMS_ADDRESS),
    },
    Rule {
        id: RuleId::A8,
        kinds: "IPAddress",
        operations: "CREATE",
        field: "spec.address (denial), spec.prefix, spec.gateway (warnings)",
        summary: "When the pool is known and found, the address lies in what the pool can hand out (declared - excluded - gateway - reserved) in every version the view holds (stored, and admitted but not yet stored: X2), and the pool is not being deleted (a deletionTimestamp, or a DELETE admitted that the watch has not shown yet; stored addresses are not judged so); a prefix or gateway other than the pool's is a warning. For a prefix pool the address is the network address of one whole allocatable sub-prefix and `prefix` is the pool's `allocationPrefixLength` (both denials), as the provider writes them.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.200
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), POOL_AND_CLAIM),
    },
    Rule {
        id: RuleId::A9,
        kinds: "IPAddress (CAPI and Metal3)",
        operations: "CREATE",
        field: "spec.address",
        summary: "No other address object in the same address space holds the same address (compared as parsed values, so `2001:DB8::5` and `2001:db8::5` are one address).",
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
"), POOL_CLAIMS_ADDRESS),
    },
    Rule {
        id: RuleId::A10,
        kinds: "IPAddress",
        operations: "UPDATE",
        field: "each changed field under spec",
        summary: "The whole spec is immutable, as C4.",
        example: with_old(ex("UPDATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-0, namespace: team-a}
spec:
  address: 10.0.0.12
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-0}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), ADDRESS_WEB),
    },
    Rule {
        id: RuleId::R1,
        kinds: "IPAddress (CAPI and Metal3)",
        operations: "CREATE",
        field: "spec.address",
        summary: "Reuse grace: an address released less than the grace ago (its IPAddress deleted) is not given to a new holder in the same address space, because top-of-rack switches keep the old owner's ARP/NDP entry and black-hole the new one. The grace is the in-cluster pool's own `spec.addressReuseGracePeriodSeconds` (v1alpha2) when the pool sets it (0 included: free at once), else `serve --reuse-grace` (off by default); as the in-cluster provider does, a pool being deleted gives no grace of its own. The release begins when the address object or its claim was first seen marked for deletion (the provider measures its grace from the claim's deletion and holds the IPAddress meanwhile), else when it went. The same object re-created for the same claim (a restore, a retried create) is not a new holder and passes. Releases are remembered from the watch, in memory, at most 50,000 and each only for its grace: a restart forgets them, and what the view does not remember it does not refuse (fail-safe). Scoped as A9 by `--overlap-scope` (`off` turns it off). An address of a prefix pool is its sub-prefix's network address (A8), so its release counts for the whole sub-prefix; prefix pools have no grace field of their own, so `--reuse-grace` applies to them.",
        example: Example {
            setting: Setting::AfterRelease,
            ..with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-1, namespace: team-a}
spec:
  address: 10.0.0.11
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-1}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
  addressReuseGracePeriodSeconds: 60
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
")
        },
    },
];
