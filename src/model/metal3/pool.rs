//! A Metal3 `IPPool` as a whole (MP1–MP3): one family across its entries, the pool-level
//! prefix, gateway and DNS servers, what is allocatable, and the pre-allocations.

use std::collections::BTreeMap;

use serde_json::Value;

use super::entry::{
    dns_servers, prefix_field, read_entry, EntryReading, MIXED_ENTRIES, MIXED_GATEWAY,
};
use crate::address::{parse_ip, subnet_of, AddrSet, Family, Ip};
use crate::field::{FieldError, Warning};
use crate::kinds::Kind;
use crate::model::paths::{self, metal3 as fields};
use crate::model::pool::{
    allocatable, has_room_for_subnet, is_link_local_gateway, pool_subnet, projection, subnet_text,
    PoolEntry, PoolReading,
};
use crate::model::{read, Meta};
use crate::rule_id::RuleId;

/// Reads a Metal3 `IPPool`.
pub(crate) fn read_pool(obj: &Value) -> PoolReading {
    let kind = Kind::Metal3IPPool;
    let meta = Meta::read(obj);
    let mut errors = Vec::new();
    let mut warnings = Vec::new();

    // A spec that is not an object would otherwise read as a pool with no pools (ROBUSTNESS O4).
    read::keep(read::object(RuleId::MP1, obj, paths::SPEC), &mut errors);
    let list =
        read::keep(read::array(RuleId::MP1, obj, fields::POOLS), &mut errors).unwrap_or_default();
    let mut entries: Vec<EntryReading> = Vec::new();
    let before = errors.len();
    for i in 0..list.len() {
        if read::list_full(
            RuleId::MP1,
            fields::POOLS,
            &mut errors,
            before,
            list.len() - i,
        ) {
            break;
        }
        entries.extend(read_entry(obj, i, &mut errors, &mut warnings));
    }
    let family = entries.iter().find_map(|e| e.family);
    for e in entries
        .iter_mut()
        .filter(|e| e.family.is_some() && e.family != family)
    {
        errors.push(FieldError::invalid(
            RuleId::MP1,
            e.path.clone(),
            e.text.clone(),
            MIXED_ENTRIES,
        ));
        // A mixed pool is read in the family of its first entry, as the in-cluster reader does.
        e.range = None;
    }

    random_sizes(obj, &entries, &mut errors);

    // Pool-level defaults (MP2).
    let pool_prefix = prefix_field(
        obj,
        fields::PREFIX,
        fields::PREFIX.as_str(),
        family,
        &mut errors,
    );
    let pool_gateway = read::ip(
        RuleId::MP2,
        obj,
        fields::GATEWAY,
        &mut errors,
        &mut warnings,
    );
    if let (Some(text), Some(gw), Some(f)) = (pool_gateway.0, pool_gateway.1, family) {
        if gw.family != f {
            errors.push(FieldError::invalid(
                RuleId::MP2,
                fields::GATEWAY,
                text,
                MIXED_GATEWAY,
            ));
        }
    }
    dns_servers(
        obj,
        fields::DNS_SERVERS,
        fields::DNS_SERVERS.as_str(),
        family,
        &mut errors,
        &mut warnings,
    );

    let fam = family.unwrap_or(Family::V4);
    let mut declared = AddrSet::empty(fam);
    let mut alloc = AddrSet::empty(fam);
    // (entry, addresses the provider walks but that are not allocatable, why)
    let mut handed_out: Vec<(usize, Vec<(Ip, &'static str)>)> = Vec::new();
    for (n, e) in entries.iter().enumerate() {
        let Some(range) = e.range else { continue };
        let set = AddrSet::from_range(fam, range);
        declared = declared.union(&set);
        let prefix = e.prefix.or(pool_prefix);
        let gateway = e.gateway.1.or(pool_gateway.1).filter(|g| g.family == fam);
        // The on-link network of the addresses this entry hands out.
        let network = match prefix {
            Some(p) => Some((subnet_of(Ip::new(fam, range.start), p), p)),
            None => e.subnet.map(|c| (c.network, c.prefix)),
        };
        if let (Some(gw), Some((net, p))) = (gateway, network) {
            let gw_text = e.gateway.0.or(pool_gateway.0).unwrap_or_default();
            let gw_path = if e.gateway.0.is_some() {
                format!("{}.gateway", e.path)
            } else {
                fields::GATEWAY.to_string()
            };
            if has_room_for_subnet(fam, p) && !is_link_local_gateway(gw) && !net.contains(gw.value)
            {
                warnings.push(Warning::new(
                    RuleId::MP2,
                    gw_path,
                    format!(
                        "{gw_text} is outside {}, the network of {}",
                        subnet_text(fam, net, p),
                        e.path
                    ),
                ));
            }
        }
        if let Some((net, p)) = network.filter(|(_, p)| has_room_for_subnet(fam, *p)) {
            if range.end > net.end {
                warnings.push(Warning::new(
                    RuleId::MP1,
                    e.path.clone(),
                    format!(
                        "runs past {}, the last address of its network {}",
                        Ip::new(fam, net.end),
                        subnet_text(fam, net, p)
                    ),
                ));
            }
        }
        let entry_alloc = allocatable(
            &set,
            &AddrSet::empty(fam),
            gateway,
            network.map(|(n, _)| n),
            network.map(|(_, p)| p),
            false,
        );
        let mut why = Vec::new();
        for r in set.difference(&entry_alloc).ranges() {
            for v in r.start..=r.end {
                let ip = Ip::new(fam, v);
                let reason = if Some(ip) == gateway {
                    "the gateway"
                } else if network.is_some_and(|(n, _)| n.start == v) {
                    "the network address"
                } else {
                    "the broadcast address"
                };
                why.push((ip, reason));
            }
        }
        if !why.is_empty() {
            handed_out.push((n, why));
        }
        alloc = alloc.union(&entry_alloc);
    }
    // MP3: pre-allocations are valid, unique and inside the pools.
    let pre = pre_allocations(obj, family, &declared, &mut errors, &mut warnings);
    let pre_ips: Vec<Ip> = pre.values().copied().collect();
    for (n, why) in handed_out {
        let listed: Vec<String> = why
            .iter()
            .filter(|(ip, _)| !pre_ips.contains(ip))
            .map(|(ip, reason)| format!("{ip} ({reason})"))
            .collect();
        if !listed.is_empty() {
            warnings.push(Warning::new(
                RuleId::MP1,
                entries[n].path.clone(),
                format!(
                    "ip-address-manager would hand out {}; set start or end to leave it out, or pre-allocate it",
                    listed.join(" and ")
                ),
            ));
        }
    }

    let subnet = pool_subnet(&declared, pool_prefix);
    let proj_prefix = pool_prefix.or_else(|| entries.iter().find_map(|e| e.prefix));
    let proj_gateway = pool_gateway
        .1
        .or_else(|| entries.iter().find_map(|e| e.gateway.1))
        .filter(|g| g.family == fam);
    let pool_entries = entries
        .iter()
        .filter_map(|e| {
            e.range.map(|r| PoolEntry {
                path: e.path.clone(),
                text: e.text.clone(),
                set: AddrSet::from_range(fam, r),
            })
        })
        .collect();
    PoolReading {
        proj: projection(kind, &meta, family, alloc, proj_gateway, proj_prefix),
        declared,
        excluded: AddrSet::empty(fam),
        subnet,
        entries: pool_entries,
        declared_path: fields::POOLS,
        errors,
        warnings,
    }
}

/// The most addresses ip-address-manager can pick from at random in one entry: it sizes an entry
/// as a Go `int` (`GetPoolSize` in its `api/v1alpha1`), 64 bits on the platforms it ships for.
pub(super) const RANDOM_MAX: u128 = i64::MAX as u128;

/// MP5: with `allocationStrategy: random` the provider picks an offset inside each entry, so an
/// entry needs a size it can compute: a start with an end or a subnet, or a subnet alone, holding
/// at most [`RANDOM_MAX`] addresses. Otherwise the pool is accepted and every claim on it fails
/// later as exhausted. Entries that already have an error (MP1) are not sized.
fn random_sizes(obj: &Value, entries: &[EntryReading], errors: &mut Vec<FieldError>) {
    if read::get(obj, fields::ALLOCATION_STRATEGY).and_then(Value::as_str) != Some("random") {
        return;
    }
    for e in entries.iter().filter(|e| e.clean) {
        // A subnet alone starts at network + 1, as the provider walks it.
        let size = match (e.bounds, e.subnet) {
            ((Some(s), Some(end)), _) => Ok((end - s).checked_add(1)),
            ((Some(s), None), Some(c)) => Ok((c.network.end - s).checked_add(1)),
            ((Some(_), None), None) => {
                Err("a start without an end or a subnet has no size to pick from")
            }
            ((None, _), Some(c)) => Ok(Some(c.network.end - c.network.start)),
            ((None, Some(_)), None) => {
                Err("an end without a start or a subnet holds nothing to pick from")
            }
            ((None, None), None) => continue,
        };
        let why = match size {
            Ok(Some(n)) if n <= RANDOM_MAX => continue,
            Ok(Some(n)) => format!(
                "it holds {n} addresses, more than the {RANDOM_MAX} ip-address-manager can pick from"
            ),
            Ok(None) => format!(
                "it holds 2^128 addresses, more than the {RANDOM_MAX} ip-address-manager can pick from"
            ),
            Err(why) => why.to_string(),
        };
        errors.push(FieldError::invalid(
            RuleId::MP5,
            e.path.clone(),
            e.text.clone(),
            format!("cannot be used with allocationStrategy \"random\": {why}"),
        ));
    }
}

/// MP3: `spec.preAllocations` (claim name → IP). Returns the ones that parse, by claim.
fn pre_allocations(
    obj: &Value,
    family: Option<Family>,
    declared: &AddrSet,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<String, Ip> {
    let mut out = BTreeMap::new();
    let Some(Value::Object(map)) = read::keep(
        read::object(RuleId::MP3, obj, fields::PRE_ALLOCATIONS),
        errors,
    ) else {
        return out;
    };
    // Which claim each address went to first; keys come sorted (serde_json's map is ordered).
    let mut seen: BTreeMap<Ip, &str> = BTreeMap::new();
    for (claim, v) in map {
        let path = format!("spec.preAllocations[{claim}]");
        let Some(text) = read::item_text(RuleId::MP3, v, &path, errors) else {
            continue;
        };
        let Some(ip) = read::parsed(RuleId::MP3, &path, text, parse_ip(text), errors, warnings)
        else {
            continue;
        };
        if let Some(first) = seen.get(&ip) {
            errors.push(FieldError::duplicate(
                RuleId::MP3,
                path,
                text,
                format!("{ip} is already pre-allocated to {first}"),
            ));
            continue;
        }
        seen.insert(ip, claim);
        if family.is_some_and(|f| f != ip.family) || !declared.contains(ip) {
            errors.push(FieldError::invalid(
                RuleId::MP3,
                path,
                text,
                format!(
                    "must be inside the pool's ranges ({})",
                    declared.display_limited(5)
                ),
            ));
            continue;
        }
        out.insert(claim.clone(), ip);
    }
    out
}
