//! The rule catalogue as data: every rule id ipam-guard reports (in kubectl messages as
//! `[ipam-guard <ID>]`, in `check`/`audit` as `[<ID>]`, in logs and in
//! `ipam_guard_decisions_total{rule}`), with what it is about and an object that triggers it.
//!
//! `docs/rules.md` and `ipam-guard explain ID` are rendered from this table, each example through
//! the real admission handler (`cli::explain`); tests check that every example triggers its rule
//! and that every id the code reports is listed here. Bottom layer: text only, no I/O.

pub use crate::rule_id::{Effect, RuleId};

/// Circumstances an example needs besides its objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Default,
    /// The view has not finished its first sync (X3).
    ViewNotSynced,
    /// The review is sent without its object (REQ): only a broken caller does that.
    WithoutObject,
    /// The address objects of `cluster` were deleted [`RELEASED_AGO`] seconds before the write,
    /// and the view saw them go (R1).
    AfterRelease,
}

/// How long before an `AfterRelease` example's write its addresses were deleted.
pub const RELEASED_AGO: u64 = 12;

/// A write that triggers the rule.
#[derive(Debug, Clone, Copy)]
pub struct Example {
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'static str,
    /// The object written (CREATE, UPDATE) or the stored object deleted (DELETE), as YAML.
    pub object: &'static str,
    /// UPDATE: the stored object before the write.
    pub old: Option<&'static str>,
    /// Objects already in the cluster, as YAML documents (may be empty).
    pub cluster: &'static str,
    pub setting: Setting,
}

/// One rule id.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub id: RuleId,
    /// The kinds it judges, as written in the docs.
    pub kinds: &'static str,
    /// The operations it judges.
    pub operations: &'static str,
    /// Where its findings sit.
    pub field: &'static str,
    /// What it denies or warns about.
    pub summary: &'static str,
    pub example: Example,
}

const fn ex(operation: &'static str, object: &'static str) -> Example {
    Example {
        operation,
        object,
        old: None,
        cluster: "",
        setting: Setting::Default,
    }
}

const fn with_cluster(mut e: Example, cluster: &'static str) -> Example {
    e.cluster = cluster;
    e
}

const fn with_old(mut e: Example, old: &'static str) -> Example {
    e.old = Some(old);
    e
}

// === objects shared by examples ===

const POOL_NODES: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
";

const CLAIM_WEB: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddressClaim
metadata: {name: web-0, namespace: team-a}
spec:
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
";

const ADDRESS_WEB: &str = "\
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

const POOL_AND_CLAIM: &str = "\
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

const POOL_CLAIMS_ADDRESS: &str = "\
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

const POOL_AND_ADDRESS: &str = "\
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

const PREFIX_POOL: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterPrefixPool
metadata: {name: nodes-v6, namespace: team-a}
spec:
  prefixes: ['fd00:10::/48']
  allocationPrefixLength: 64
  gateway: 'fd00:10::1'
";

const METAL3_POOL: &str = "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata: {name: provisioning, namespace: team-a}
spec:
  namePrefix: prov
  allocationStrategy: sequential
  pools:
    - {start: 192.168.20.10, end: 192.168.20.50, prefix: 24, gateway: 192.168.20.1}
";

const METAL3_POOL_AND_ADDRESS: &str = "\
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

const METAL3_CLAIM: &str = "\
apiVersion: ipam.metal3.io/v1alpha1
kind: IPClaim
metadata: {name: host-0, namespace: team-a}
spec:
  pool: {name: provisioning, namespace: team-a}
";

const METAL3_ADDRESS: &str = "\
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

const SPIDER_POOL_IN_USE: &str = "\
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

/// Every rule id, in the order of the documentation.
pub const RULES: &[Rule] = &[
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
        summary: "When the pool is known and found, the address lies in what the pool can hand out (declared - excluded - gateway - reserved); a prefix or gateway other than the pool's is a warning. For a prefix pool the address is the network address of one whole allocatable sub-prefix and `prefix` is the pool's `allocationPrefixLength` (both denials), as the provider writes them.",
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
    // === Spiderpool ===
    Rule {
        id: RuleId::S1,
        kinds: "SpiderIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.subnet",
        summary: "`spec.subnet` is a canonical CIDR (no host bits).",
        example: ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  subnet: 172.18.41.7/24
  ips: [172.18.41.40-172.18.41.50]
"),
    },
    Rule {
        id: RuleId::S2,
        kinds: "SpiderIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.ipVersion",
        summary: "`spec.ipVersion` matches the subnet's family.",
        example: ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  ipVersion: 6
  subnet: 172.18.41.0/24
  ips: [172.18.41.40-172.18.41.50]
"),
    },
    Rule {
        id: RuleId::S3,
        kinds: "SpiderIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.ips[i], spec.excludeIPs[i]",
        summary: "Entries (an IP or `a-b`) parse and lie inside the subnet; listing the network or broadcast address is a warning.",
        example: ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.42.40-172.18.42.50]
"),
    },
    Rule {
        id: RuleId::S4,
        kinds: "SpiderIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.gateway",
        summary: "The gateway lies inside the subnet and is not allocatable.",
        example: ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.41.40-172.18.41.50]
  gateway: 172.18.41.45
"),
    },
    Rule {
        id: RuleId::S5,
        kinds: "SpiderIPPool",
        operations: "UPDATE",
        field: "spec.subnet, spec.ipVersion, spec.ips",
        summary: "`subnet` and `ipVersion` are immutable; IPs listed in `status.allocatedIPs` stay allocatable.",
        example: with_old(ex("UPDATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.41.45-172.18.41.50]
  gateway: 172.18.41.1
status:
  allocatedIPCount: 1
  allocatedIPs: '{\"172.18.41.41\":{\"pod\":\"default/web-0\"}}'
"), SPIDER_POOL_IN_USE),
    },
    Rule {
        id: RuleId::S6,
        kinds: "SpiderIPPool",
        operations: "DELETE",
        field: "metadata.name (403 Forbidden)",
        summary: "The pool is not deleted while `status.allocatedIPCount > 0` or `status.allocatedIPs` (a JSON string holding a map) has a key; a value that does not parse counts as held.",
        example: ex("DELETE", SPIDER_POOL_IN_USE),
    },
    Rule {
        id: RuleId::S7,
        kinds: "SpiderIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.routes[i].dst, spec.routes[i].gw",
        summary: "Routes hold no default route (`0.0.0.0/0`, `::/0`: that is what `spec.gateway` is for) and no destination twice; each `dst` is a CIDR of the pool's family and each `gw` an IP inside `spec.subnet`.",
        example: ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.41.40-172.18.41.50]
  gateway: 172.18.41.1
  routes:
    - {dst: 0.0.0.0/0, gw: 172.18.41.1}
    - {dst: 192.168.40.0/24, gw: 172.18.42.1}
"),
    },
    Rule {
        id: RuleId::S8,
        kinds: "SpiderIPPool",
        operations: "CREATE, UPDATE",
        field: "spec.podAffinity (matchLabels, matchExpressions[i])",
        summary: "`spec.podAffinity` is a valid label selector (keys qualified names, values label values, known operators) that is not empty; on a pool Spiderpool created for an application (label `ipam.spidernet.io/owner-application-name`) it holds only the `ipam.spidernet.io/app-*` keys Spiderpool derives, and no matchExpressions.",
        example: ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-a}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.41.40-172.18.41.50]
  podAffinity:
    matchLabels: {app: .starts.with.dot}
"),
    },
    Rule {
        id: RuleId::S9,
        kinds: "SpiderIPPool",
        operations: "CREATE, UPDATE (when the subnet or the address space changes)",
        field: "spec.subnet",
        summary: "SpiderIPPools whose subnets overlap declare the same subnet (Spiderpool groups pools by subnet): `172.18.41.0/25` beside another pool's `172.18.41.0/24` is refused whatever their `ips`. Within one address space; off with `--overlap-scope off`.",
        example: with_cluster(ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-b}
spec:
  subnet: 172.18.41.0/25
  ips: [172.18.41.100-172.18.41.110]
"), SPIDER_POOL_IN_USE),
    },
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

/// The id `check` gives what a kind's CRD schema refuses: not a rule of ipam-guard's, the API
/// server's own validation, which runs before any webhook.
pub const SCHEMA: &str = "SCHEMA";

/// The id `check` gives an object whose fields still hold `${…}` template placeholders: those
/// fields are not judged.
pub const TEMPLATE: &str = "TEMPLATE";

/// An id that names how ipam-guard works rather than one rule: it appears in findings (SCHEMA),
/// in messages and the docs (X1, X2, X5), and `explain` knows it like a rule's.
#[derive(Debug, Clone, Copy)]
pub struct Principle {
    pub id: &'static str,
    pub title: &'static str,
    /// Paragraphs, blank-line separated (Markdown).
    pub text: &'static str,
}

pub const PRINCIPLES: &[Principle] = &[
    Principle {
        id: SCHEMA,
        title: "the kind's CRD schema (ipam-guard check)",
        text: "\
What the API server refuses on its own, before any webhook runs: the object against the \
`openAPIV3Schema` of the version named in `apiVersion` (unknown fields as strict field validation \
reports them, types, required fields, enums, patterns, bounds) and the metadata name rules. \
`ipam-guard check` reports these with the id `SCHEMA` and the API server's own wording, so a \
folder kubectl would reject does not pass a CI gate.

The order is the API server's: mutating admission first (a field M1 fills in is not missing), \
then the schema, then the validating rules. Where the schema and a rule flag the same field, the \
rule's finding is the one reported.

The schema comes from `--crd-dir DIR` (the CRDs you install), or is the one built in for the \
kinds ipam-guard judges. An object of a kind ipam-guard does not judge is checked against its \
CRD when one is at hand, and only against that; without one it is skipped and counted \
(`--strict` fails on it).",
    },
    Principle {
        id: TEMPLATE,
        title: "unresolved template placeholders (ipam-guard check)",
        text: "\
Cluster templates (`clusterctl generate cluster`, CAPV flavors, CAPM3 examples) hold `${VAR}` \
placeholders that clusterctl fills in before anything reaches a cluster. `ipam-guard check` \
does not judge a field that still holds one: it reports the object once, with severity `info`, \
naming each such field and its placeholder, and no schema or rule finding on those fields \
(nor on the lists that hold them). The rest of the object is judged as usual. This is not a \
failure (exit 0 when nothing else is found); `--strict` fails on it, as on a kind it cannot \
judge.

`--var NAME=VALUE` (repeatable) and `--env` (the environment's variables; `--var` wins) \
substitute values into each file's text before it is parsed, as clusterctl does \
(drone/envsubst): `${VAR}`, `${VAR:=default}`, `${VAR:-default}`, `${VAR=default}` (a default \
applies when the variable is unset or empty), `$${VAR}` for a literal `${VAR}`; a bare `$VAR` \
is left alone, and `-` is part of a name (`${VAR-x}` is the variable `VAR-x`). A placeholder \
whose variable has no value and no default stays unresolved and is reported as above.",
    },
    Principle {
        id: "X1",
        title: "rules that read other objects read a view",
        text: "\
Rules that read other objects (A6–A9, R1, C3, P8–P10, MP4, MA4, S5, V1: each entry says \
\"Reads other objects: yes\") read an in-memory view of the cluster fed by watches, never the \
API server on the request path: an answer costs no API call, and its latency does not depend \
on the API server's.",
    },
    Principle {
        id: "X2",
        title: "race safety: one decision at a time, pending admissions count",
        text: "\
Decisions that read other objects are serialised per address space, and an object admitted \
but not yet seen through the watch counts as existing (a pending entry) until the watch shows \
it or `--pending-ttl` (30 s) passes: of two racing creates of overlapping pools only the first \
is admitted. A retried CREATE of the same object replaces its own pending entry; dry runs \
never make one.

With two or more replicas, the replicas elect one decider through the Lease \
`ipam-guard-decider` in their namespace. Every replica answers each review itself but sends \
that one serialised step to the decider over mutual TLS and relays its answer; while no \
decider can be reached within `--decider-timeout` (2 s), a write that needs that step is \
refused with 503 (fail closed; retry). `--decider=off` (one replica), `--dev` and \
`--state-from` decide in-process.",
    },
    Principle {
        id: "X5",
        title: "ratchet: an update is judged on what it changes",
        text: "\
On UPDATE, validity rules judge only what the update changes: an object whose spec is \
unchanged is never denied for a spec problem it already had, so metadata, finalizer and label \
updates pass (except C5 and P10's address-space annotation case). `ipam-guard audit` reports \
such stored objects instead.",
    },
];

/// The principle with `id` (any case), if there is one.
pub fn principle(id: &str) -> Option<&'static Principle> {
    PRINCIPLES.iter().find(|p| p.id.eq_ignore_ascii_case(id))
}

// === differences from the providers' own webhooks ===

/// One place where ipam-guard deliberately answers otherwise than a provider's own webhook.
#[derive(Debug, Clone, Copy)]
pub struct Difference {
    /// Whose webhook: `Cluster API`, `in-cluster provider`, `Metal3 IPAM`, `Spiderpool`.
    pub provider: &'static str,
    /// The write, in a few words.
    pub case: &'static str,
    /// What the provider's webhook answers.
    pub provider_answer: &'static str,
    /// What ipam-guard answers (with the rule id when it speaks).
    pub ipam_guard: &'static str,
    /// Why.
    pub why: &'static str,
}

const fn diff(
    provider: &'static str,
    case: &'static str,
    provider_answer: &'static str,
    ipam_guard: &'static str,
    why: &'static str,
) -> Difference {
    Difference {
        provider,
        case,
        provider_answer,
        ipam_guard,
        why,
    }
}

const ALL_PROVIDERS: &str = "all four";
const POOL_PROVIDERS: &str = "in-cluster provider, Metal3 IPAM, Spiderpool";

/// Every deliberate difference, rendered into docs/rules.md ("Differences from the providers' own
/// webhooks"): a reader deciding whether to keep both webhooks needs it.
pub const DIFFERENCES: &[Difference] = &[
    diff(POOL_PROVIDERS, "an UPDATE that leaves a spec problem the stored object already had (a broken pool relabelled, or grown elsewhere)",
        "judges the whole new object and refuses it",
        "allows it; `ipam-guard audit` reports the stored problem (X5)",
        "an object stored before the webhook existed must stay editable (finalizers, labels, the fix itself); refusing edits to it blocks deletion and repair"),
    diff(ALL_PROVIDERS, "addresses with a zone (`fe80::1%eth0`), IPv4-mapped IPv6 (`::ffff:10.0.0.1`)",
        "accepted where Go's parsers accept them",
        "refused under the rule that reads the field (A1, A3, P2, MP1, S3, ...)",
        "one strict grammar (the one Kubernetes CEL `ip()` uses) so every component reads an address the same way"),
    diff(ALL_PROVIDERS, "a pool whose addresses overlap a pool of another kind or namespace in the same address space",
        "allowed (each provider looks at its own pools at most)",
        "refused (P10)",
        "two pools handing out one address is the duplicate-IP outage ipam-guard exists to stop"),
    diff(ALL_PROVIDERS, "IPv6 gateways in `fe80::/10` outside the pool's subnet (pool gateway, Spiderpool route `gw`)",
        "refused by Spiderpool (outside `spec.subnet`)",
        "allowed (S4, S7 exempt link-local gateways)",
        "router advertisements make the link-local router the usual IPv6 gateway"),
    diff("Cluster API", "IPAddressClaim CREATE with an incomplete, namespaced or missing pool reference",
        "allowed (the claim webhook checks only immutability)",
        "refused (C1, C2; C3 with `--require-existing-pool`), warned otherwise (C3)",
        "a claim no provider will ever serve leaves a machine waiting forever"),
    diff("Cluster API", "IPAddress CREATE: gateway of the other family, equal to the address or outside `address/prefix`; a second address for one claim; an address outside its pool or held by another IPAddress",
        "allowed (it checks syntax, prefix bounds and the claim's pool only)",
        "refused (A3, A7, A8, A9)",
        "these are the writes that give one address to two machines or route through a gateway that cannot be reached"),
    diff(ALL_PROVIDERS, "an IPAddress (CAPI or Metal3) for an address whose previous IPAddress in the same address space was deleted less than the reuse grace ago (`serve --reuse-grace`, or the in-cluster pool's `addressReuseGracePeriodSeconds`)",
        "allowed (the in-cluster provider keeps its pool's grace in its controller, by holding the old IPAddress; no provider webhook refuses a new holder)",
        "refused (R1), except the same object re-created for the same claim",
        "a restore, a hand-written IPAddress or another controller is not held back by the provider's controller, and switches keep the old owner's ARP/NDP entry for the grace"),
    diff("Cluster API, in-cluster provider, Spiderpool", "the webhook's own read of the cluster fails (its List or Get of IPAddressClaims, IPAddresses or SpiderIPPools returns an error)",
        "refused with an internal-error cause (`failed to list IPPools`, `failed to fetch claim`)",
        "never reads the API server while judging: the rules that read other objects answer from the watched view; until it has synced, a write they could deny is refused with 503 (X3)",
        "an API round trip per review would make every write as slow and as fragile as the API server's worst moment; the view fails closed while it cannot know, as the provider does"),
    diff("Cluster API", "IPAddress / IPAddressClaim spec change",
        "refused as one `spec: Forbidden` cause with a diff",
        "refused with one Invalid cause per changed field (A10, C4)",
        "kubectl shows exactly which field changed, as Kubernetes' `ValidateImmutableField` does"),
    diff("in-cluster provider", "UPDATE of a pool whose `deletionTimestamp` is set",
        "judged like any update",
        "allowed (P11)",
        "a pool on its way out must be able to lose its finalizers even if its spec is broken"),
    diff("in-cluster provider", "an update that drops an address an IPAddress holds; DELETE of a pool with IPAddresses",
        "refused with HTTP 400 (BadRequest)",
        "refused with 422 naming the holders (P8) and 403 naming the holders (P9)",
        "the answer says who holds the pool, so the person reading kubectl knows what to remove"),
    diff("in-cluster provider", "DELETE of a held pool annotated `clusterctl.cluster.x-k8s.io/delete-for-move`",
        "refused (only `skip-validate-delete-webhook` skips)",
        "allowed",
        "`clusterctl move` deletes the source objects after copying them; refusing breaks the move"),
    diff("in-cluster provider", "a gateway outside the pool's subnet; excluded addresses outside the pool; a /31 or /32 pool without `allocateReservedIPAddresses`",
        "allowed",
        "refused (P6), warned (P7)",
        "a pool whose gateway is off-link hands out addresses that cannot route; the warnings point at pools that hand out nothing"),
    diff("in-cluster provider", "negative `spec.addressReuseGracePeriodSeconds`",
        "refused by its webhook",
        "not judged (the CRD schema's `minimum: 0` refuses it at the API server first)",
        "the API server validates the schema before any webhook is called"),
    diff("Metal3 IPAM", "IPAddress spec change other than address, pool or claim (prefix, gateway, DNS servers)",
        "allowed",
        "refused: the whole spec is immutable (MA3)",
        "the provider never rewrites an IPAddress; a changed gateway or prefix on a live address diverges from what the host was given"),
    diff("Metal3 IPAM", "IPPool entries whose start or end lie outside their subnet, entries of mixed families, prefixes beyond the family, gateways of the other family",
        "allowed (it checks each field's syntax and start <= end)",
        "refused (MP1, MP2)",
        "the provider would hand out addresses outside the network it tells the host about"),
    diff("Metal3 IPAM", "an IPPool update that strands an address held by a Metal3 IPAddress, or one recorded only in the old pool's `status.allocations`",
        "refused from the old pool's `status.allocations`",
        "refused from the IPAddresses in the view (MP4), also for CAPI IPAddresses served from the pool; an address in `status.allocations` with no IPAddress does not hold the pool",
        "the status can lag; the IPAddress objects are the record of who holds what"),
    diff("Metal3 IPAM", "DELETE of an IPPool that IPAddresses still name",
        "allowed",
        "refused with 403 naming the holders (MP4)",
        "deleting a pool under live hosts loses the record of their addresses"),
    diff("Spiderpool", "UPDATE of a terminating SpiderIPPool that still has Spiderpool's finalizer",
        "refused (Forbidden: cannot update a terminating IPPool)",
        "allowed (P11)",
        "as for every pool kind: a pool on its way out is never held up"),
    diff("Spiderpool", "`spec.ipVersion` missing, or IPv4/IPv6 disabled in Spiderpool's configuration",
        "refused (its mutating webhook normally fills ipVersion; the families come from its config)",
        "allowed; S2 checks ipVersion against the subnet when it is set",
        "ipam-guard cannot see Spiderpool's configuration and never relies on another webhook's mutation"),
    diff("Spiderpool", "a valid new pool while another stored SpiderIPPool is itself broken (its `ips` do not parse, or its `subnet` does not)",
        "refused (it re-parses the stored pools it compares against, those of the same subnet for IPs and every pool for subnet overlaps, and fails on the broken one)",
        "allowed",
        "a broken stored pool must not block an unrelated valid one; `audit` reports the broken pool"),
    diff("Spiderpool", "CREATE of a pool that already exists",
        "refused by the webhook as AlreadyExists",
        "not judged as such: the API server answers AlreadyExists itself",
        "same outcome for the user"),
    diff("Spiderpool", "pools owned by a SpiderSubnet (`EnableSpiderSubnet`): IPs outside the subnet's IPs, an owner reference to a SpiderSubnet that does not exist, an application pool's IPs edited by hand",
        "refused",
        "not judged",
        "ipam-guard does not watch SpiderSubnet objects"),
    diff("Spiderpool", "two routes whose `dst` texts differ but name one network (`192.168.40.0/24`, `192.168.40.1/24`); a default route written `0.0.0.1/0`",
        "allowed (compares texts)",
        "refused (S7 compares networks)",
        "both mean one route table entry twice, or a default route"),
    diff("Spiderpool", "a gateway or a reserved (network, broadcast) address in `spec.ips`",
        "gateway refused; network and broadcast allowed",
        "gateway refused (S4); network and broadcast warned about (S3)",
        "a Pod given either cannot talk on the subnet"),
    diff("Spiderpool", "overlapping subnets (S9) and overlapping IPs between pools",
        "compared across all SpiderIPPools of one IP version",
        "compared within one address space (S9, P10)",
        "pools on separate networks opt out by naming different spaces (`ipam-guard.io/address-space`)"),
    diff("Spiderpool", "DELETE of a pool whose `status.allocatedIPs` still has keys while `allocatedIPCount` is 0, or whose `allocatedIPs` does not parse",
        "allowed (it reads only the count, and only with `EnableValidatingResourcesDeletedWebhook`)",
        "refused with 403 (S6)",
        "a pool with recorded holders is in use whatever the counter says"),
];

impl Rule {
    /// What the rule does to a write (`RuleId::effect`).
    pub fn effect(&self) -> Effect {
        self.id.effect()
    }
    /// Whether it reads other objects through the view (SPEC X1): such rules are skipped or
    /// answer 503 until the view has synced (X3).
    pub fn reads_view(&self) -> bool {
        self.id.reads_view()
    }
}

/// The rule with `id` (any case), if there is one.
pub fn rule(id: &str) -> Option<&'static Rule> {
    let id = RuleId::parse(id)?;
    RULES.iter().find(|r| r.id == id)
}

/// Every id `explain` knows: the rules in catalogue order, then the principles.
pub fn ids() -> impl Iterator<Item = &'static str> {
    RULES
        .iter()
        .map(|r| r.id.as_str())
        .chain(PRINCIPLES.iter().map(|p| p.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_id_has_exactly_one_entry_and_every_entry_an_id() {
        for id in RuleId::ALL {
            assert_eq!(
                RULES.iter().filter(|r| r.id == id).count(),
                1,
                "{id} needs exactly one catalogue entry"
            );
        }
        assert!(RULES.iter().all(|r| RuleId::ALL.contains(&r.id)));
        assert_eq!(RULES.len(), RuleId::ALL.len());
    }

    #[test]
    fn ids_are_unique() {
        let mut ids: Vec<&str> = ids().collect();
        ids.sort_unstable();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}
