//! Cluster API `Cluster`: its control-plane endpoint is an address the cluster holds outside
//! every pool (CP1-CP4), and its pod and service networks are its own (CP2, CP5). The checks on the
//! other side, a pool that could hand the endpoint out (CP3) and an address object holding it
//! (CP4), live here too, so one file says what an endpoint is owed.
//!
//! An endpoint claimed from a pool is legitimate: a claim annotated
//! `ipam-guard.io/control-plane-endpoint-of: <Cluster>` asks for that Cluster's endpoint, and
//! the address it gets is the endpoint's own, not a second holder of it.

use serde_json::Value;

use crate::address::{AddrSet, Ip, IpRange};
use crate::field::{FieldError, Verdict};
use crate::index::Index;
use crate::kinds::Kind;
use crate::model::cluster::{
    blocks, endpoint, ClusterProj, Endpoint, Network, ENDPOINT_CLAIM_ANNOTATION,
};
use crate::model::paths::{address, cluster as fields, in_cluster, prefix_pool, spider};
use crate::model::pool::PoolReading;
use crate::model::{project, AddressProj, KeyRef, Meta, ObjKey, Operation, Projection};
use crate::rule_id::RuleId;
use crate::rules::conditions::field_at;
use crate::rules::util::{allocatable_added_sets, in_scope, join_limited, same};
use crate::rules::{Call, Ctx, Options, OverlapScope, Validator};

/// `Cluster`: CP1 and CP2.
pub(crate) struct Cluster;

impl Validator for Cluster {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        if let Some(e) = endpoint(obj) {
            own_networks(obj, e, &mut v);
            against_view(obj, e, call, ctx, &mut v);
        }
        networks_hold_machines(obj, call, ctx, &mut v);
        v
    }

    fn update(&self, obj: &Value, old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let (meta, old_meta) = (Meta::read(obj), Meta::read(old));
        // A Cluster on its way out is never held up: its finalizers must come off.
        if meta.deleting || old_meta.deleting {
            return v;
        }
        // X5: each rule only when what it reads changed.
        let networks = !same(
            field_at(obj, "spec.clusterNetwork"),
            field_at(old, "spec.clusterNetwork"),
        );
        if networks {
            networks_hold_machines(obj, call, ctx, &mut v);
        }
        let Some(e) = endpoint(obj) else {
            return v;
        };
        let moved = endpoint(old).map(|o| o.text) != Some(e.text)
            || meta.address_space() != old_meta.address_space();
        if moved || networks {
            own_networks(obj, e, &mut v);
        }
        if moved {
            against_view(obj, e, call, ctx, &mut v);
        }
        v
    }

    /// Clusters are Cluster API's to delete.
    fn delete(&self, _old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        Verdict::default()
    }

    fn view_denials(&self, op: Operation, options: &Options) -> Vec<RuleId> {
        let on = options.overlap_scope != OverlapScope::Off;
        match op {
            Operation::Create | Operation::Update if on => vec![RuleId::CP1, RuleId::CP5],
            Operation::Create | Operation::Update => vec![RuleId::CP5],
            _ => Vec::new(),
        }
    }
}

/// CP2: the endpoint does not lie in the cluster's own pod or service networks, where traffic
/// from inside the cluster would never reach the control plane.
fn own_networks(obj: &Value, e: Endpoint, v: &mut Verdict) {
    let Some(ip) = e.ip else { return };
    for network in [Network::Pods, Network::Services] {
        for (i, cidr) in blocks(obj, network) {
            if cidr.family() == ip.family && cidr.network.contains(ip.value) {
                v.deny(FieldError::invalid(
                    RuleId::CP2,
                    fields::ENDPOINT_HOST,
                    e.text,
                    format!(
                        "{ip} lies in the cluster's own {} network {cidr} ({}[{i}]): inside the cluster it does not reach the control plane",
                        network.label(),
                        network.path()
                    ),
                ));
            }
        }
    }
}

/// CP1: no pool of the endpoint's address space can hand it out, no other Cluster has it as its
/// endpoint, and no address object holds it but one claimed for this Cluster's endpoint.
fn against_view(obj: &Value, e: Endpoint, call: &Call, ctx: &Ctx, v: &mut Verdict) {
    if let Some(Projection::Cluster(c)) = project(call.kind, obj) {
        v.errors.extend(endpoint_conflicts(&c, e.text, ctx));
    }
}

/// CP1 of the Cluster `c` as the view holds it; `text` is the endpoint as written.
pub(crate) fn endpoint_conflicts(c: &ClusterProj, text: &str, ctx: &Ctx) -> Vec<FieldError> {
    let mut out = Vec::new();
    let scope = ctx.options.overlap_scope;
    let (Some(ip), false) = (c.endpoint, scope == OverlapScope::Off) else {
        return out;
    };
    let index = ctx.index;
    let own = &c.key;
    let space = index.space_of_cluster(c);
    if !claimed_for(index, space, ip, c) {
        let pools: Vec<String> = index
            .overlapping_pools(space, &single(ip))
            .into_iter()
            .filter(|(p, _)| in_scope(scope, own, &p.key))
            .map(|(p, _)| p.key.to_string())
            .collect();
        if !pools.is_empty() {
            out.push(FieldError::invalid(
                RuleId::CP1,
                fields::ENDPOINT_HOST,
                text,
                format!(
                    "{ip} can be handed out by {}: exclude it there, or claim it with an IPAddressClaim annotated {ENDPOINT_CLAIM_ANNOTATION}: {}",
                    join_limited(&pools),
                    c.cluster
                ),
            ));
        }
    }
    let others: Vec<String> = index
        .endpoints_at(space, ip)
        .into_iter()
        .filter(|o| !same_cluster(o, c) && in_scope(scope, own, &o.key))
        .map(|o| o.key.to_string())
        .collect();
    if !others.is_empty() {
        out.push(FieldError::duplicate(
            RuleId::CP1,
            fields::ENDPOINT_HOST,
            text,
            format!(
                "{ip} is already the control-plane endpoint of {}",
                join_limited(&others)
            ),
        ));
    }
    let holders: Vec<String> = index
        .holders(ip)
        .filter(|h| index.space_of_address(h) == space)
        .filter(|h| in_scope(scope, own, &h.key) && !marked_for(index, h, c))
        .map(|h| h.key.to_string())
        .collect();
    if !holders.is_empty() {
        out.push(FieldError::duplicate(
            RuleId::CP1,
            fields::ENDPOINT_HOST,
            text,
            format!(
                "{ip} is already held by {}; if that address was claimed for this endpoint, annotate its claim {ENDPOINT_CLAIM_ANNOTATION}: {}",
                join_limited(&holders),
                c.cluster
            ),
        ));
    }
    out
}

/// CP5 for a Cluster: no block of its pod or service networks holds an address a machine of the
/// cluster already has (an address object whose claim names the Cluster, in its namespace,
/// stored or admitted and not yet stored, X2). A block that overlaps a pool those claims draw
/// from is a warning: the pool may hand the next machine an address inside it.
fn networks_hold_machines(obj: &Value, call: &Call, ctx: &Ctx, v: &mut Verdict) {
    let Some(Projection::Cluster(c)) = project(call.kind, obj) else {
        return;
    };
    if c.networks.is_empty() {
        return;
    }
    let index = ctx.index;
    let ns = c.key.namespace.as_deref();
    let mut held: Vec<&AddressProj> = Vec::new();
    let mut pools: Vec<ObjKey> = Vec::new();
    for claim in index.claims_and_pending() {
        if claim.key.namespace.as_deref() != ns || claim.cluster.as_deref() != Some(&*c.key.name) {
            continue;
        }
        let kind = match claim.key.kind {
            Kind::Metal3IPClaim => Kind::Metal3IPAddress,
            _ => Kind::IPAddress,
        };
        held.extend(index.addresses_for_claim(kind, ns.unwrap_or_default(), &claim.key.name));
        pools.extend(claim.pool_ref.key(ns));
    }
    held.sort_by(|a, b| a.key.cmp(&b.key));
    held.dedup_by(|a, b| a.key == b.key && a.ip == b.ip);
    pools.sort();
    pools.dedup();
    for network in [Network::Pods, Network::Services] {
        for (i, cidr) in blocks(obj, network) {
            let path = format!("{}[{i}]", network.path());
            let inside: Vec<String> = held
                .iter()
                .filter_map(|a| Some((a.ip?, &a.key)))
                .filter(|(ip, _)| cidr.family() == ip.family && cidr.network.contains(ip.value))
                .map(|(ip, key)| format!("{ip} ({key})"))
                .collect();
            if !inside.is_empty() {
                v.deny(FieldError::invalid(
                    RuleId::CP5,
                    path.clone(),
                    cidr.to_string(),
                    format!(
                        "holds addresses machines of this cluster already have: {}; inside the cluster they would be unroutable",
                        join_limited(&inside)
                    ),
                ));
                continue;
            }
            let block = AddrSet::from_range(cidr.family(), cidr.network);
            let overlapping: Vec<String> = pools
                .iter()
                .filter(|k| {
                    index
                        .pool_versions(*k)
                        .any(|p| p.allocatable.intersects(&block))
                })
                .map(ToString::to_string)
                .collect();
            if !overlapping.is_empty() {
                v.warn(
                    RuleId::CP5,
                    path,
                    format!(
                        "{cidr} overlaps {}, which machines of this cluster draw addresses from: an address handed out there inside {cidr} is unroutable inside the cluster",
                        join_limited(&overlapping)
                    ),
                );
            }
        }
    }
}

/// CP5 for an address: it does not lie in the pod or service networks of the Cluster its claim
/// belongs to (the claim's `spec.clusterName` or cluster-name label), where that cluster would
/// route it to pods or services. Addresses of other clusters are not compared: those networks
/// are private to their cluster.
pub(crate) fn address_in_own_networks(
    addr: Ip,
    text: &str,
    own: KeyRef<'_>,
    claim: Option<&str>,
    ctx: &Ctx,
) -> Option<FieldError> {
    let index = ctx.index;
    let claim = claim_key(own.kind, own.namespace, claim).and_then(|k| index.claim(&k))?;
    let name = claim.cluster.as_deref()?;
    let key = KeyRef::new(Kind::Cluster, own.namespace, name);
    index.cluster_versions(&key).find_map(|c| {
        let (network, cidr) = c.network_of(addr)?;
        Some(FieldError::invalid(
            RuleId::CP5,
            address::ADDRESS,
            text,
            format!(
                "{addr} lies in the {} network {cidr} of {}, the cluster its claim belongs to: inside that cluster it is unroutable",
                network.label(),
                c.key
            ),
        ))
    })
}

/// CP3: what a pool can hand out (on an update: what the update adds, X5) holds no Cluster's
/// endpoint in the pool's address space, unless the endpoint is already held by an address
/// claimed for it (the pool handed it out to its own claim).
pub(crate) fn pool_holds_endpoint(
    r: &PoolReading,
    before: Option<&PoolReading>,
    ctx: &Ctx,
    v: &mut Verdict,
) {
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off {
        return;
    }
    // One probe per family the pool hands out of (a declared pool may hand out both).
    let probes = allocatable_added_sets(r, before);
    let index = ctx.index;
    let own = &r.proj.key;
    let space = &*r.proj.space;
    let held: Vec<(Ip, &ClusterProj)> = probes
        .iter()
        .filter(|probe| !probe.is_empty())
        .flat_map(|probe| index.endpoints_in(space, probe))
        .filter_map(|c| Some((c.endpoint?, c)))
        .filter(|(ip, c)| in_scope(scope, own, &c.key) && !claimed_for(index, space, *ip, c))
        .collect();
    for e in &r.entries {
        let here: Vec<String> = held
            .iter()
            .filter(|(ip, _)| e.set.contains(*ip))
            .map(|(ip, c)| format!("{ip}, the control-plane endpoint of {}", c.key))
            .collect();
        if !here.is_empty() {
            v.deny(FieldError::invalid(
                RuleId::CP3,
                e.path.clone(),
                e.text.as_str(),
                format!(
                    "can hand out {}: exclude it ({})",
                    join_limited(&here),
                    exclude_field(own.kind)
                ),
            ));
        }
    }
}

/// CP4, for CAPI and Metal3 addresses: `addr`, in the address space of the pool `pool_key`
/// names, is no Cluster's control-plane endpoint, unless the address's claim is annotated as
/// that endpoint's own.
pub(crate) fn address_is_endpoint(
    addr: Ip,
    text: &str,
    own: KeyRef<'_>,
    claim: Option<&str>,
    pool_key: Option<KeyRef<'_>>,
    ctx: &Ctx,
) -> Option<FieldError> {
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off {
        return None;
    }
    let index = ctx.index;
    let space = pool_key.map_or(crate::kinds::DEFAULT_ADDRESS_SPACE, |k| {
        index.space_of_pool(&k)
    });
    // Nearly every address is no endpoint: the claim is looked up only when one is.
    let found = index.endpoints_at(space, addr);
    if found.is_empty() {
        return None;
    }
    let marked = claim_key(own.kind, own.namespace, claim)
        .and_then(|k| index.claim(&k))
        .and_then(|c| c.endpoint_of.clone());
    let own_key = own.to_key();
    let clusters: Vec<String> = found
        .into_iter()
        .filter(|c| in_scope(scope, &own_key, &c.key))
        .filter(|c| {
            !(marked.as_deref() == Some(&*c.cluster) && c.key.namespace.as_deref() == own.namespace)
        })
        .map(|c| c.key.to_string())
        .collect();
    (!clusters.is_empty()).then(|| {
        FieldError::invalid(
            RuleId::CP4,
            address::ADDRESS,
            text,
            format!(
                "{addr} is the control-plane endpoint of {}: no machine may hold it (a claim for the endpoint itself is annotated {ENDPOINT_CLAIM_ANNOTATION}: <Cluster>)",
                join_limited(&clusters)
            ),
        )
    })
}

/// The claim an address object of `kind` fulfils, by name in its namespace.
fn claim_key<'a>(
    kind: Kind,
    namespace: Option<&'a str>,
    claim: Option<&'a str>,
) -> Option<KeyRef<'a>> {
    let claim_kind = match kind {
        Kind::IPAddress => Kind::IPAddressClaim,
        Kind::Metal3IPAddress => Kind::Metal3IPClaim,
        _ => return None,
    };
    Some(KeyRef::new(
        claim_kind,
        namespace,
        claim.filter(|c| !c.is_empty())?,
    ))
}

/// Whether the address object `h` was claimed for `cluster`'s endpoint: its claim, in the
/// Cluster's namespace, carries the annotation naming the Cluster.
fn marked_for(index: &Index, h: &AddressProj, cluster: &ClusterProj) -> bool {
    h.key.namespace == cluster.key.namespace
        && claim_key(h.key.kind, h.key.namespace.as_deref(), h.claim.as_deref())
            .and_then(|k| index.claim(&k))
            .and_then(|c| c.endpoint_of.as_deref())
            == Some(&*cluster.cluster)
}

/// Whether two endpoint holders are one cluster's: a Cluster and its infrastructure cluster.
fn same_cluster(a: &ClusterProj, b: &ClusterProj) -> bool {
    a.key.namespace == b.key.namespace && a.cluster == b.cluster
}

/// Whether `ip` in `space` is held by an address object claimed for `cluster`'s endpoint.
fn claimed_for(index: &Index, space: &str, ip: Ip, cluster: &ClusterProj) -> bool {
    index
        .holders(ip)
        .any(|h| index.space_of_address(h) == space && marked_for(index, h, cluster))
}

/// The field a pool of `kind` excludes addresses with.
pub(crate) fn exclude_field(kind: Kind) -> String {
    match kind {
        Kind::InClusterIPPool | Kind::GlobalInClusterIPPool => {
            in_cluster::EXCLUDED_ADDRESSES.to_string()
        }
        Kind::InClusterPrefixPool | Kind::GlobalInClusterPrefixPool => {
            prefix_pool::EXCLUDED_PREFIXES.to_string()
        }
        Kind::SpiderIPPool | Kind::SpiderSubnet => spider::EXCLUDE_IPS.to_string(),
        _ => "narrow the pool's ranges around it".to_string(),
    }
}

fn single(ip: Ip) -> AddrSet {
    AddrSet::from_range(ip.family, IpRange::single(ip.value))
}
