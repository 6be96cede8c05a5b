//! Addresses held outside every pool: Spiderpool's `SpiderReservedIP` (RI1-RI6) and a CAPV
//! `VSphereMachine`'s static addresses (SA1-SA3), each in the address space of its object.

use super::objects::POOL_NODES;
use super::{ex, with_cluster, with_old, Rule, RuleId};

const RESERVED_20: &str = "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderReservedIP
metadata: {name: vip}
spec:
  ipVersion: 4
  ips: [10.0.0.20]
";

const MACHINE_STATIC_30: &str = "\
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: VSphereMachine
metadata: {name: db-0, namespace: team-a}
spec:
  template: ubuntu-2204
  network:
    devices:
      - networkName: vm-network
        ipAddrs: [10.0.0.30/24]
";

const ADDRESS_20: &str = "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-1, namespace: team-a}
spec:
  address: 10.0.0.20
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-1}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
";

pub(super) const HOLDERS: &[Rule] = &[
    Rule {
        id: RuleId::RI1,
        kinds: "SpiderReservedIP",
        operations: "CREATE; UPDATE when the spec brings a new problem (X5)",
        field: "spec.ips, spec.ips[i]",
        summary: "As Spiderpool's webhook: `spec.ips` holds at least one entry, each a string that is an IP or a range `a-b` (no CIDR) of the ReservedIP's family: `spec.ipVersion`'s, else (Spiderpool's mutating webhook fills it in) the first entry's.",
        example: ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderReservedIP
metadata: {name: vip}
spec:
  ipVersion: 4
  ips: [10.0.0.20, fd00::20]
"),
    },
    Rule {
        id: RuleId::RI2,
        kinds: "SpiderReservedIP",
        operations: "CREATE, UPDATE",
        field: "spec.ipVersion",
        summary: "As Spiderpool's webhook: `spec.ipVersion` is 4 or 6, and never changes once set (`Forbidden: is not changeable`).",
        example: with_old(ex("UPDATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderReservedIP
metadata: {name: vip}
spec:
  ipVersion: 6
  ips: [fd00::20]
"), RESERVED_20),
    },
    Rule {
        id: RuleId::RI3,
        kinds: "SpiderReservedIP",
        operations: "CREATE; UPDATE when the ReservedIP gains addresses or moves to another address space",
        field: "spec.ips",
        summary: "As Spiderpool's webhook: no address the write adds is reserved by another SpiderReservedIP of the same family in its address space (annotation `ipam-guard.io/address-space`; Spiderpool compares them all, see the Differences). Off with `--overlap-scope off`.",
        example: with_cluster(ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderReservedIP
metadata: {name: vips}
spec:
  ipVersion: 4
  ips: [10.0.0.18-10.0.0.22]
"), RESERVED_20),
    },
    Rule {
        id: RuleId::RI4,
        kinds: "IPAddress (CAPI and Metal3)",
        operations: "CREATE",
        field: "spec.address",
        summary: "The address is not reserved by a SpiderReservedIP of its address space (its pool's; scoped as A9; a ReservedIP's space is its `ipam-guard.io/address-space` annotation). Spiderpool never hands such an address out, and no other provider may either: whoever reserved it means to keep it free.",
        example: with_cluster(ex("CREATE", ADDRESS_20), RESERVED_20),
    },
    Rule {
        id: RuleId::RI5,
        kinds: "every pool kind but SpiderIPPool",
        operations: "CREATE; UPDATE when the allocatable set gains addresses or the address space changes",
        field: "the entry that holds the address (spec.addresses[i], spec.prefixes[i], spec.pools[i])",
        summary: "What the pool can hand out (on an update: what it gains, X5) holds no address a SpiderReservedIP of its address space reserves; the cause names the ReservedIP and the field to exclude the address with. A SpiderIPPool or SpiderSubnet may list reserved addresses: Spiderpool itself never hands out what a SpiderReservedIP holds, and that is how its users set addresses aside on purpose.",
        example: with_cluster(ex("CREATE", POOL_NODES), RESERVED_20),
    },
    Rule {
        id: RuleId::RI6,
        kinds: "SpiderReservedIP",
        operations: "CREATE; UPDATE when the ReservedIP gains addresses or moves to another address space",
        field: "spec.ips",
        summary: "A warning when an address the write adds is already held by an address object of the ReservedIP's address space (reserving an address in use is what one does before draining it: it stays with its holder until released), or can be handed out by a pool of that space other than a SpiderIPPool or SpiderSubnet (only Spiderpool honours a ReservedIP; RI5 refuses such a pool from then on).",
        example: with_cluster(ex("CREATE", RESERVED_20), RI6_CLUSTER),
    },
    Rule {
        id: RuleId::SA1,
        kinds: "IPAddress (CAPI and Metal3)",
        operations: "CREATE",
        field: "spec.address",
        summary: "The address is no VSphereMachine's static address (`spec.network.devices[i].ipAddrs[j]`, the part before `/`) in its address space (its pool's; the machine's `ipam-guard.io/address-space` annotation; scoped as A9): two machines would share it.",
        example: with_cluster(ex("CREATE", "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {name: web-1, namespace: team-a}
spec:
  address: 10.0.0.30
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-1}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
"), MACHINE_STATIC_30),
    },
    Rule {
        id: RuleId::SA2,
        kinds: "every pool kind",
        operations: "CREATE; UPDATE when the allocatable set gains addresses or the address space changes",
        field: "the entry that holds the address (spec.addresses[i], spec.prefixes[i], spec.pools[i], spec.ips[i])",
        summary: "What the pool can hand out (on an update: what it gains, X5) holds no VSphereMachine's static address in its address space; the cause names the machine and the field to exclude the address with.",
        example: with_cluster(ex("CREATE", POOL_NODES), MACHINE_STATIC_30),
    },
    Rule {
        id: RuleId::SA3,
        kinds: "VSphereMachine",
        operations: "CREATE; UPDATE when a static address is added or the address space changes",
        field: "spec.network.devices[i].ipAddrs[j]",
        summary: "A static address the write adds is, in the machine's address space, held by no address object, can be handed out by no pool, and is no other VSphereMachine's static address: two machines with one address is an outage, so this is refused, not warned.",
        example: with_cluster(ex("CREATE", MACHINE_STATIC_30), POOL_NODES),
    },
];

/// RI6's view: the pool and an address it handed out at 10.0.0.20.
const RI6_CLUSTER: &str = "\
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
metadata: {name: web-1, namespace: team-a}
spec:
  address: 10.0.0.20
  prefix: 24
  gateway: 10.0.0.1
  claimRef: {name: web-1}
  poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}
";
