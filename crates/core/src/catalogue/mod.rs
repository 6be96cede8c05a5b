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

mod beyond;
mod claims;
mod clusters;
mod holders;
mod in_cluster;
mod metal3;
mod objects;
mod spider;

/// Every rule id, in the order of the documentation: one file per family of kinds, joined here.
pub const RULES: &[Rule] = &concat::<
    {
        claims::CLAIMS.len()
            + in_cluster::IN_CLUSTER.len()
            + metal3::METAL3.len()
            + spider::SPIDER.len()
            + clusters::CLUSTERS.len()
            + holders::HOLDERS.len()
            + beyond::BEYOND.len()
    },
>(&[
    claims::CLAIMS,
    in_cluster::IN_CLUSTER,
    metal3::METAL3,
    spider::SPIDER,
    clusters::CLUSTERS,
    holders::HOLDERS,
    beyond::BEYOND,
]);

/// The parts one after another, in a const: `RULES` stays a plain `&[Rule]` for its readers.
/// `N` must be the parts' total length (checked at compile time).
const fn concat<const N: usize>(parts: &[&[Rule]]) -> [Rule; N] {
    let mut out = [parts[0][0]; N];
    let mut n = 0;
    let mut i = 0;
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[n] = parts[i][j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    assert!(n == N, "the parts' lengths do not add up to N");
    out
}

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
Decisions that read other objects are serialised, and a write admitted but not yet seen \
through the watch counts as existing: of two racing creates of overlapping pools only the \
first is admitted.

A pending entry is the version a CREATE or UPDATE admitted would store. It holds its \
addresses **beside** what the view shows stored under the same name, never in its place: an \
UPDATE that shrinks a pool keeps the old addresses held, one that grows it holds the new ones \
too, and a CREATE of a name that is already stored frees nothing the stored object holds. A \
DELETE frees nothing until the watch shows it.

It ends when the watch shows the write landed or refuted: for a CREATE, the object with \
the uid the review carried (the API server sets it before it asks validating webhooks); for an \
UPDATE, any version of the object later than the one it replaced (the API server stores an \
update only on top of that version). Otherwise it ends after `--pending-ttl` (30 s). The same \
write retried renews its entry; dry runs and updates that hold what the version they replace \
holds make none.

A refused write costs little: when the API server refuses a write ipam-guard admitted \
(AlreadyExists, another webhook, a quota, a storage error), its entry holds its addresses until \
the TTL: a write conflicting with it is refused meanwhile (a short, conservative refusal). \
Decisions are never made against an object that is not stored while the stored one is hidden.

With two or more replicas, the replicas elect one decider through the Lease \
`ipam-guard-decider` in their namespace. Every replica answers each review itself but sends \
that one serialised step to the decider over mutual TLS and relays its answer; while no \
decider can be reached within `--decider-timeout` (2 s), a write that needs that step is \
refused with 503 (fail closed; retry). `--decider=off` (one replica), `--dev` and \
`--state-from` decide in-process. A decider that steps down cleanly hands its admissions of \
the last TTL to the next one, leaving out those whose objects its watch has shown deleted; the \
next decider holds each as a pending entry unless its own watch has already shown it landed, \
refuted or deleted.",
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
    diff("Cluster API", "a Cluster (or VSphereCluster, Metal3Cluster) whose IP endpoint a pool of its address space can hand out, that another cluster has as its endpoint, or that an address object holds",
        "allowed (Cluster API does not validate `controlPlaneEndpoint`)",
        "refused (CP1), and from the other side a pool that could hand it out (CP3) and an address equal to it (CP4), unless claimed through the annotation `ipam-guard.io/control-plane-endpoint-of`",
        "the first machine given the VIP takes the cluster's API server off the network"),
    diff("Cluster API", "a Cluster whose pod or service CIDR blocks take in an address its machines hold, or a machine's address inside its own cluster's blocks",
        "allowed",
        "refused (CP5); a block that overlaps a pool the cluster's claims draw from is a warning",
        "inside the cluster such an address is routed to pods or services, not to the node"),
    diff("Cluster API", "writes of Clusters and infrastructure clusters while the webhook is unreachable",
        "refused (its webhooks are registered with `failurePolicy: Fail`)",
        "allowed: `validate-clusters.ipam-guard.io` is registered with `failurePolicy: Ignore`; pools and addresses still fail closed (CP3, CP4) and the audit reports what passed",
        "Cluster API's controllers write Clusters on every reconcile and upgrade; an ipam-guard outage must not stall them"),
    diff("Proxmox provider", "a ProxmoxCluster whose endpoint lies in its own `ipv4Config` or `ipv6Config` addresses",
        "refused (its cluster webhook compares the endpoint with that cluster's own ranges)",
        "ProxmoxCluster is not read; the same endpoint is judged on the Cluster, which Cluster API gives the infrastructure cluster's endpoint, against every pool of the address space (CP1), and the pool the provider makes of those ranges is judged against it (CP3)",
        "another cluster's pool handing out the VIP breaks the cluster as surely as its own"),
    diff("Metal3 (CAPM3)", "a Metal3DataTemplate reference to a kind that is not a pool, a pool not found or of the other family; spec.metaData or spec.networkData changed on UPDATE",
        "references: only an empty `fromPoolRef.name` (with no other source) is refused; any change to metaData or networkData is refused",
        "a kind that is not a pool and an empty name are refused, a pool not found or of the other family is a warning (MD1); changes are judged on the references they add (X5) and immutability is left to Metal3's webhook",
        "a reference that can never be served leaves every machine of the template without an address, found only when it boots; pools are often applied after their templates"),
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
    diff("Spiderpool", "SpiderSubnets and the pools carved from them: overlapping or identical subnets (S10), a pool's subnet overlapping a subnet it is not (S9), a carved pool's IPs outside the subnet and a subnet update dropping them (S11)",
        "refused across the whole cluster, and only with its `EnableSpiderSubnet` switch on (else the subnet webhook refuses every SpiderSubnet)",
        "refused within one address space (`ipam-guard.io/address-space`), whatever Spiderpool's switch; a pool and a subnet of the same CIDR in different spaces are not related",
        "address spaces are ipam-guard's unit of one network everywhere (P10); Spiderpool's configuration is not visible to ipam-guard"),
    diff("Spiderpool", "a SpiderIPPool declaring a SpiderSubnet's subnet with an owner reference to a SpiderSubnet that does not exist, or an application pool's IPs edited by hand",
        "refused",
        "not judged",
        "a pool is carved from a subnet by its `spec.subnet` (S11); owner references and application pools are Spiderpool's controllers' bookkeeping"),
    diff("Spiderpool", "a SpiderSubnet update dropping addresses its pools use",
        "refused from the subnet's own `status.controlledIPPools`",
        "refused from the carved SpiderIPPools in the view (S11), their allocatable sets",
        "the pools are the record of what is carved; the status can lag"),
    diff("Spiderpool", "DELETE of a SpiderSubnet whose pools hold addresses",
        "allowed by its webhook (its controller holds the subnet by a finalizer)",
        "refused with 403 naming the pools and their addresses (S12)",
        "as for every pool kind (P9, S6): deleting the container of live pools loses their record"),
    diff("Spiderpool", "a SpiderSubnet overlapping an InClusterIPPool, Metal3 IPPool or other pool kind of its address space",
        "allowed (it compares Spiderpool objects only)",
        "refused (P10); a SpiderIPPool carved from the subnet is not an overlap",
        "one address space is one network whatever the provider"),
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
    diff("Spiderpool", "a SpiderReservedIP without `spec.ipVersion`, or of a family disabled in Spiderpool's configuration",
        "its mutating webhook fills `ipVersion` in from `ips[0]`; a disabled family is refused",
        "reads the first entry's family, as the mutating webhook would (RI1, RI2); a disabled family is not judged",
        "ipam-guard cannot see Spiderpool's configuration and never relies on another webhook's mutation"),
    diff("Spiderpool", "UPDATE of a SpiderReservedIP whose `deletionTimestamp` is set",
        "refused (Forbidden)",
        "allowed",
        "an object on its way out must be able to lose its finalizers; what it reserved is free once it is gone"),
    diff("Spiderpool", "overlapping SpiderReservedIPs of one IP version in different address spaces",
        "refused (it compares every ReservedIP)",
        "allowed: compared within one address space (RI3), as pools are (P10, S9)",
        "ReservedIPs on separate networks opt out by naming different spaces (`ipam-guard.io/address-space`)"),
    diff("Spiderpool", "an UPDATE of a SpiderReservedIP that keeps an overlap with another ReservedIP it already had",
        "refused (every update compares all of `spec.ips`)",
        "allowed: only the addresses the update adds are compared (RI3, X5); `audit` and the periodic audit report the stored overlap",
        "a ReservedIP stored before the webhook existed must stay editable, so the overlap can be fixed"),
    diff(ALL_PROVIDERS, "a pool that can hand out an address a SpiderReservedIP reserves or a VSphereMachine holds as a static address; an IPAddress at such an address; a VSphereMachine whose static address is in use or in a pool",
        "allowed (no provider looks beyond its own objects; Spiderpool honours a ReservedIP in its own allocations only)",
        "refused (RI4, RI5, SA1-SA3) in the holder's address space; a ReservedIP over an address in use is a warning (RI6); a SpiderIPPool or SpiderSubnet may list reserved addresses",
        "an address handed out twice is the outage ipam-guard exists to stop; reserving an address in use is how one drains it, and Spiderpool users list reserved addresses in pools on purpose"),
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
    /// Whether it reads other objects through the view (X1): such rules are skipped or
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
