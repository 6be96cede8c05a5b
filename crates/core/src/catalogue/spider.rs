//! Spiderpool pools and subnets (S).

use super::objects::{SPIDER_POOL_IN_USE, SPIDER_SUBNET};
use super::{ex, with_cluster, with_old, Rule, RuleId};

pub(super) const SPIDER: &[Rule] = &[
    // === Spiderpool ===
    Rule {
        id: RuleId::S1,
        kinds: "SpiderIPPool, SpiderSubnet",
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
        kinds: "SpiderIPPool, SpiderSubnet",
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
        kinds: "SpiderIPPool, SpiderSubnet",
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
        kinds: "SpiderIPPool, SpiderSubnet",
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
        kinds: "SpiderIPPool, SpiderSubnet",
        operations: "UPDATE",
        field: "spec.subnet, spec.ipVersion, spec.ips",
        summary: "`subnet` and `ipVersion` are immutable (on a SpiderSubnet too, the same rule); on a SpiderIPPool, IPs listed in `status.allocatedIPs` stay allocatable.",
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
        kinds: "SpiderIPPool, SpiderSubnet",
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
        kinds: "SpiderIPPool, SpiderSubnet",
        operations: "CREATE, UPDATE (when the subnet or the address space changes)",
        field: "spec.subnet",
        summary: "SpiderIPPools and SpiderSubnets whose subnets overlap declare the same subnet (Spiderpool groups pools by subnet and carves them from the SpiderSubnet of that subnet): `172.18.41.0/25` beside another pool's or subnet's `172.18.41.0/24` is refused whatever their `ips`. Within one address space; off with `--overlap-scope off`.",
        example: with_cluster(ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-b}
spec:
  subnet: 172.18.41.0/25
  ips: [172.18.41.100-172.18.41.110]
"), SPIDER_POOL_IN_USE),
    },
    Rule {
        id: RuleId::S10,
        kinds: "SpiderSubnet",
        operations: "CREATE, UPDATE (when the address space changes)",
        field: "spec.subnet",
        summary: "SpiderSubnets of one family never overlap, identical subnets included: a pool declaring a subnet is carved from the one SpiderSubnet of that subnet. Within one address space; off with `--overlap-scope off`.",
        example: with_cluster(ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderSubnet
metadata: {name: rack-b}
spec:
  subnet: 172.18.41.0/25
  ips: [172.18.41.100-172.18.41.110]
"), SPIDER_SUBNET),
    },
    Rule {
        id: RuleId::S11,
        kinds: "SpiderIPPool, SpiderSubnet",
        operations: "CREATE, UPDATE",
        field: "spec.ips[i] (SpiderIPPool), spec.ips (SpiderSubnet)",
        summary: "A SpiderIPPool that declares the subnet of a SpiderSubnet of its address space is carved from it: the addresses it can hand out lie in the subnet's `ips` less its `excludeIPs` and gateway. A SpiderSubnet keeps covering every address of the pools carved from it: a create that would not cover them, or an update that takes one away, is refused naming the pool and the addresses. On an update only what the update adds or takes away counts (X5). Off with `--overlap-scope off` but for a subnet's update.",
        example: with_cluster(ex("CREATE", "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-b}
spec:
  subnet: 172.18.41.0/24
  ips: [172.18.41.90-172.18.41.95]
"), SPIDER_SUBNET),
    },
    Rule {
        id: RuleId::S12,
        kinds: "SpiderSubnet",
        operations: "DELETE",
        field: "metadata.name (403 Forbidden)",
        summary: "A SpiderSubnet is not deleted while a SpiderIPPool carved from it holds addresses (its `status.allocatedIPs`, as S6 reads it). P9's skip annotations apply.",
        example: with_cluster(ex("DELETE", SPIDER_SUBNET), SPIDER_POOL_IN_USE),
    },
];
