//! Readers for Metal3 IPAM (`ipam.metal3.io` v1alpha1): `IPPool` (SPEC §5 table, MP1–MP3),
//! `IPClaim` and `IPAddress`.
//!
//! The pool is read the way ip-address-manager walks it (`GetIPAddress` in its `api/v1alpha1`):
//! an entry runs from `start` (else the subnet's network + 1) to `end` (else the subnet's last
//! address). The provider skips nothing on the way — not the gateway, not the IPv4 broadcast
//! address — so those are left out of the allocatable set like for every other pool (SPEC §5),
//! and a warning tells the author that the provider would hand them out.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::address::{parse_cidr, parse_ip, subnet_of, AddrSet, Cidr, Family, Ip, IpRange};
use crate::field::{FieldError, Warning};
use crate::kinds::Kind;
use crate::model::pool::{
    allocatable, has_room_for_subnet, is_link_local_gateway, pool_subnet, projection, subnet_text,
    PoolEntry, PoolReading,
};
use crate::model::{read, AddressProj, Meta, ObjKey};
use crate::rule_id::RuleId;

/// The annotation ip-address-manager reads on a claim to hand out one particular address
/// (`IPAddressAnnotation` in its `ipam` package).
pub const IP_ADDRESS_ANNOTATION: &str = "ipAddress";

const MIXED_ENTRIES: &str = "pool entries are of mixed IP families";
const MIXED_IN_ENTRY: &str = "start, end and subnet must be of one IP family";
const MIXED_GATEWAY: &str = "provided gateway and addresses are of mixed IP families";
const MIXED_DNS: &str = "DNS server and addresses are of mixed IP families";

/// Reads a Metal3 prefix: Go's zero value means "not set" (`if pool.Prefix != 0`), so 0 is None.
/// Checked against `family` when known, else against IPv6's bound.
fn prefix_field(
    base: &Value,
    field: &str,
    path: &str,
    family: Option<Family>,
    errors: &mut Vec<FieldError>,
) -> Option<u8> {
    let raw = read::keep(
        read::at(read::integer(RuleId::MP2, base, field), path),
        errors,
    )
    .filter(|p| *p != 0)?;
    let value = read::get(base, field);
    read::keep(
        read::prefix_in_family(RuleId::MP2, path, raw, value, family).map(Some),
        errors,
    )
}

/// `dnsServers` at `path`: valid IPs of `family`.
fn dns_servers(
    base: &Value,
    field: &str,
    path: &str,
    family: Option<Family>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    let list = read::keep(
        read::at(read::array(RuleId::MP2, base, field), path),
        errors,
    );
    for (j, v) in list.unwrap_or_default().iter().enumerate() {
        let item = format!("{path}[{j}]");
        let Some(text) = read::item_text(RuleId::MP2, v, &item, errors) else {
            continue;
        };
        let ip = read::parsed(RuleId::MP2, &item, text, parse_ip(text), errors, warnings);
        if ip.is_some_and(|ip| family.is_some_and(|f| f != ip.family)) {
            errors.push(FieldError::invalid(RuleId::MP2, item, text, MIXED_DNS));
        }
    }
}

/// One `spec.pools[i]` as read.
struct EntryReading<'a> {
    path: String,
    /// The text a cause about the whole entry shows: the subnet, or `start-end`.
    text: String,
    family: Option<Family>,
    /// What the provider walks; None when the entry hands out nothing or is broken.
    range: Option<IpRange>,
    prefix: Option<u8>,
    gateway: (Option<&'a str>, Option<Ip>),
    subnet: Option<Cidr>,
}

/// Reads `spec.pools[i]` on its own (MP1; MP2 for its prefix, gateway and DNS servers).
fn read_entry<'a>(
    obj: &'a Value,
    i: usize,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) -> Option<EntryReading<'a>> {
    let path = format!("spec.pools[{i}]");
    let entry = read::get(obj, "spec.pools")?.get(i)?;
    if !entry.is_object() {
        errors.push(FieldError::invalid(
            RuleId::MP1,
            path,
            Value::String(entry.to_string()),
            "must be an object",
        ));
        return None;
    }
    let sub = |field: &str| format!("{path}.{field}");
    let start = read::ip_at(RuleId::MP1, entry, "start", &sub("start"), errors, warnings);
    let end = read::ip_at(RuleId::MP1, entry, "end", &sub("end"), errors, warnings);
    let subnet_text_given = read::keep(
        read::at(read::string(RuleId::MP1, entry, "subnet"), &sub("subnet")),
        errors,
    );
    let subnet = subnet_text_given.and_then(|t| {
        read::parsed(
            RuleId::MP1,
            &sub("subnet"),
            t,
            parse_cidr(t),
            errors,
            warnings,
        )
    });
    if start.0.is_none() && end.0.is_none() && subnet_text_given.is_none() {
        errors.push(FieldError::required(
            RuleId::MP1,
            path.clone(),
            "at least one of start, end or subnet is required",
        ));
    }

    // One family per entry: the subnet's sets it when given, else start's, else end's.
    let family = subnet
        .map(|c| c.family())
        .or(start.1.map(|ip| ip.family))
        .or(end.1.map(|ip| ip.family));
    let mut bound = |(text, ip): (Option<&str>, Option<Ip>), field: &str| -> Option<u128> {
        let (text, ip) = (text?, ip?);
        if Some(ip.family) != family {
            errors.push(FieldError::invalid(
                RuleId::MP1,
                sub(field),
                text,
                MIXED_IN_ENTRY,
            ));
            return None;
        }
        if let Some(c) = subnet {
            if !c.network.contains(ip.value) {
                errors.push(FieldError::invalid(
                    RuleId::MP1,
                    sub(field),
                    text,
                    format!("must be inside subnet {c}"),
                ));
                return None;
            }
        }
        Some(ip.value)
    };
    let start_v = bound(start, "start");
    let end_v = bound(end, "end");
    let mut reversed = false;
    if let (Some(s), Some(e), Some(text)) = (start_v, end_v, end.0) {
        if s > e {
            reversed = true;
            errors.push(FieldError::invalid(
                RuleId::MP1,
                sub("end"),
                text,
                format!("must not be before start {}", start.0.unwrap_or_default()),
            ));
        }
    }

    // The walk, as the provider does it (see the module docs). A field already reported as
    // broken leaves the entry out rather than guessing what was meant.
    let broken = reversed
        || (start.0.is_some() && start_v.is_none())
        || (end.0.is_some() && end_v.is_none())
        || (subnet_text_given.is_some() && subnet.is_none());
    let range = match (family, start_v, end_v, subnet) {
        _ if broken => None,
        (Some(_), Some(s), Some(e), _) => Some(IpRange::new(s, e)),
        (Some(_), Some(s), None, Some(c)) => Some(IpRange::new(s, c.network.end)),
        (Some(_), None, e, Some(c)) => {
            if e.is_some() {
                warnings.push(Warning::new(
                    RuleId::MP1,
                    sub("end"),
                    "without start, ip-address-manager ignores end and hands out the whole subnet; set start as well",
                ));
            }
            let first = c
                .network
                .start
                .checked_add(1)
                .filter(|v| *v <= c.network.end);
            let last = e.unwrap_or(c.network.end);
            first.filter(|f| *f <= last).map(|f| IpRange::new(f, last))
        }
        (Some(f), Some(s), None, None) => {
            warnings.push(Warning::new(
                RuleId::MP1,
                path.clone(),
                format!(
                    "without end or subnet the range runs to the last {} address",
                    f.name()
                ),
            ));
            Some(IpRange::new(s, f.max()))
        }
        (Some(_), None, Some(_), None) => {
            warnings.push(Warning::new(
                RuleId::MP1,
                path.clone(),
                "without start or subnet ip-address-manager hands out nothing from this entry",
            ));
            None
        }
        _ => None,
    };

    let prefix = prefix_field(entry, "prefix", &sub("prefix"), family, errors);
    let gateway = read::ip_at(
        RuleId::MP2,
        entry,
        "gateway",
        &sub("gateway"),
        errors,
        warnings,
    );
    if let (Some(text), Some(gw), Some(f)) = (gateway.0, gateway.1, family) {
        if gw.family != f {
            errors.push(FieldError::invalid(
                RuleId::MP2,
                sub("gateway"),
                text,
                MIXED_GATEWAY,
            ));
        }
    }
    dns_servers(
        entry,
        "dnsServers",
        &sub("dnsServers"),
        family,
        errors,
        warnings,
    );

    let text = match (subnet_text_given, start.0, end.0) {
        (Some(s), None, None) => s.to_string(),
        (_, Some(s), Some(e)) => format!("{s}-{e}"),
        _ => range
            .zip(family)
            .map(|(r, f)| crate::address::format_range(f, r))
            .unwrap_or_default(),
    };
    Some(EntryReading {
        path,
        text,
        family,
        range,
        prefix,
        gateway,
        subnet,
    })
}

/// Reads a Metal3 `IPPool`.
pub(crate) fn read_pool(obj: &Value) -> PoolReading {
    let kind = Kind::Metal3IPPool;
    let meta = Meta::read(obj);
    let mut errors = Vec::new();
    let mut warnings = Vec::new();

    // A spec that is not an object would otherwise read as a pool with no pools (ROBUSTNESS O4).
    read::keep(read::object(RuleId::MP1, obj, "spec"), &mut errors);
    let list =
        read::keep(read::array(RuleId::MP1, obj, "spec.pools"), &mut errors).unwrap_or_default();
    let mut entries: Vec<EntryReading> = Vec::new();
    let before = errors.len();
    for i in 0..list.len() {
        if read::list_full(
            RuleId::MP1,
            "spec.pools",
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

    // Pool-level defaults (MP2).
    let pool_prefix = prefix_field(obj, "spec.prefix", "spec.prefix", family, &mut errors);
    let pool_gateway = read::ip(RuleId::MP2, obj, "spec.gateway", &mut errors, &mut warnings);
    if let (Some(text), Some(gw), Some(f)) = (pool_gateway.0, pool_gateway.1, family) {
        if gw.family != f {
            errors.push(FieldError::invalid(
                RuleId::MP2,
                "spec.gateway",
                text,
                MIXED_GATEWAY,
            ));
        }
    }
    dns_servers(
        obj,
        "spec.dnsServers",
        "spec.dnsServers",
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
                "spec.gateway".to_string()
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
        declared_path: "spec.pools",
        errors,
        warnings,
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
        read::object(RuleId::MP3, obj, "spec.preAllocations"),
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

// === IPClaim ===

/// A Metal3 `IPClaim` as read.
#[derive(Debug, Clone, Default)]
pub struct ClaimReading<'a> {
    pub pool_name: Option<&'a str>,
    pub pool_namespace: Option<&'a str>,
    /// The `ipAddress` annotation as written, and the address when it parses.
    pub requested: Option<&'a str>,
    /// Fields of the wrong type.
    pub errors: Vec<FieldError>,
}

/// Reads a Metal3 `IPClaim`.
pub fn read_claim(obj: &Value) -> ClaimReading<'_> {
    let mut errors = Vec::new();
    let mut s = |rule: RuleId, path: &str| read::keep(read::string(rule, obj, path), &mut errors);
    let pool_name = s(RuleId::MC1, "spec.pool.name");
    let pool_namespace = s(RuleId::MC2, "spec.pool.namespace");
    let requested =
        read::entry(obj, "metadata.annotations", IP_ADDRESS_ANNOTATION).and_then(Value::as_str);
    ClaimReading {
        pool_name,
        pool_namespace,
        requested,
        errors,
    }
}

// === IPAddress ===

/// A Metal3 `IPAddress` spec as read: each field parsed once.
#[derive(Debug, Clone, Default)]
pub struct AddressReading<'a> {
    pub address_text: Option<&'a str>,
    pub address: Option<Ip>,
    /// `spec.prefix` as written (never narrowed), and checked against the address's family.
    pub prefix_raw: Option<&'a Value>,
    pub prefix: Option<u8>,
    pub gateway_text: Option<&'a str>,
    pub gateway: Option<Ip>,
    pub pool_name: Option<&'a str>,
    pub pool_namespace: Option<&'a str>,
    pub claim_name: Option<&'a str>,
    pub claim_namespace: Option<&'a str>,
    /// Problems of one field on its own: MA1 address, prefix, gateway; MA2 types.
    pub errors: Vec<FieldError>,
    pub warnings: Vec<Warning>,
}

/// Reads a Metal3 `IPAddress`.
pub fn read_address(obj: &Value) -> AddressReading<'_> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let (address_text, address) =
        read::ip(RuleId::MA1, obj, "spec.address", &mut errors, &mut warnings);
    if address_text.is_none() && !errors.iter().any(|e| e.path == "spec.address") {
        errors.push(FieldError::required(RuleId::MA1, "spec.address", ""));
    }
    let (gateway_text, gateway) =
        read::ip(RuleId::MA1, obj, "spec.gateway", &mut errors, &mut warnings);
    let prefix_raw = read::get(obj, "spec.prefix");
    // Unlike CAPI's, a Metal3 prefix is optional.
    let family = address.or(gateway).map(|ip| ip.family);
    let prefix = read::prefix(RuleId::MA1, obj, "spec.prefix", family, &mut errors);
    let mut s = |path: &str| read::keep(read::string(RuleId::MA2, obj, path), &mut errors);
    let pool_name = s("spec.pool.name");
    let pool_namespace = s("spec.pool.namespace");
    let claim_name = s("spec.claim.name");
    let claim_namespace = s("spec.claim.namespace");
    AddressReading {
        address_text,
        address,
        prefix_raw,
        prefix,
        gateway_text,
        gateway,
        pool_name,
        pool_namespace,
        claim_name,
        claim_namespace,
        errors,
        warnings,
    }
}

/// What the index keeps of a Metal3 address. ip-address-manager looks its addresses up in the
/// pool's own namespace, so the pool is keyed there whatever `spec.pool.namespace` says (MA2
/// denies a different one).
pub fn project_address(obj: &Value, key: ObjKey) -> AddressProj {
    let ip = read::ip_value(obj, "spec.address");
    let name = |path: &str| {
        read::get(obj, path)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    AddressProj {
        pool: name("spec.pool.name")
            .map(|n| ObjKey::new(Kind::Metal3IPPool, key.namespace.as_deref(), n)),
        claim: name("spec.claim.name").map(std::sync::Arc::from),
        ip,
        key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_support::fixture;
    use serde_json::json;

    fn capture(name: &str) -> Value {
        fixture("eco", name)
    }

    fn pool(spec: Value) -> Value {
        json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
            "metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    fn texts(r: &[FieldError]) -> Vec<String> {
        r.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn capture_pool_reads_as_the_provider_walks_it() {
        let review = capture("metal3-ippool-create.json");
        let r = read_pool(&review["request"]["object"]);
        assert!(r.errors.is_empty(), "{:?}", texts(&r.errors));
        assert_eq!(
            r.declared.to_string(),
            "192.168.0.10-192.168.0.30, 192.168.1.1-192.168.1.63, 192.168.1.129-192.168.1.255"
        );
        // 192.168.1.1 is the pool's gateway and 192.168.1.255 the broadcast address of its /24.
        assert_eq!(
            r.proj.allocatable.to_string(),
            "192.168.0.10-192.168.0.30, 192.168.1.2-192.168.1.63, 192.168.1.129-192.168.1.254"
        );
        assert_eq!(r.proj.prefix, Some(24));
        assert_eq!(r.proj.gateway.unwrap().to_string(), "192.168.1.1");
        let w: Vec<String> = r.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            w,
            [
                "spec.pools[1]: ip-address-manager would hand out 192.168.1.1 (the gateway); set start or end to leave it out, or pre-allocate it",
                "spec.pools[2]: ip-address-manager would hand out 192.168.1.255 (the broadcast address); set start or end to leave it out, or pre-allocate it",
            ]
        );
        assert_eq!(r.entries[1].text, "192.168.1.0/26");
        assert_eq!(r.entries[0].text, "192.168.0.10-192.168.0.30");
    }

    #[test]
    fn mp1_missing_bounds_come_from_the_subnet() {
        let r = read_pool(&pool(json!({"prefix": 24, "pools": [
            {"start": "10.0.0.100", "subnet": "10.0.0.0/24"},
            {"end": "10.0.1.20", "subnet": "10.0.1.0/24", "prefix": 24},
        ]})));
        assert!(r.errors.is_empty(), "{:?}", texts(&r.errors));
        assert_eq!(
            r.declared.to_string(),
            "10.0.0.100-10.0.0.255, 10.0.1.1-10.0.1.20"
        );
        assert!(r
            .warnings
            .iter()
            .any(|w| w.path == "spec.pools[1].end" && w.message.contains("ignores end")));
    }

    #[test]
    fn mp1_entry_problems() {
        let r = read_pool(&pool(json!({"pools": [
            {},
            {"start": "10.0.0.9", "end": "10.0.0.1"},
            {"start": "10.0.0.1", "end": "fd00::1"},
            {"start": "10.0.1.1", "subnet": "10.0.0.0/24"},
            {"subnet": "10.0.0.0/33"},
            {"subnet": "fd00::/64"},
        ]})));
        assert_eq!(
            texts(&r.errors),
            [
                "spec.pools[0]: Required value: at least one of start, end or subnet is required",
                r#"spec.pools[1].end: Invalid value: "10.0.0.1": must not be before start 10.0.0.9"#,
                r#"spec.pools[2].end: Invalid value: "fd00::1": start, end and subnet must be of one IP family"#,
                r#"spec.pools[3].start: Invalid value: "10.0.1.1": must be inside subnet 10.0.0.0/24"#,
                r#"spec.pools[4].subnet: Invalid value: "10.0.0.0/33": prefix length must be a number between 0 and 32 for an IPv4 address"#,
                r#"spec.pools[5]: Invalid value: "fd00::/64": pool entries are of mixed IP families"#,
            ]
        );
    }

    #[test]
    fn mp2_prefixes_gateways_and_dns_servers() {
        let r = read_pool(&pool(json!({"prefix": 33, "gateway": "fd00::1",
            "dnsServers": ["8.8.8.8", "fd00::53", "8.8.8"],
            "pools": [{"start": "10.0.0.1", "end": "10.0.0.9", "prefix": 129, "gateway": "10.0.0.1",
                       "dnsServers": ["fd00::53"]}]})));
        assert_eq!(
            texts(&r.errors),
            [
                "spec.pools[0].prefix: Invalid value: 129: prefix is too large for an IPv4 address",
                r#"spec.pools[0].dnsServers[0]: Invalid value: "fd00::53": DNS server and addresses are of mixed IP families"#,
                "spec.prefix: Invalid value: 33: prefix is too large for an IPv4 address",
                r#"spec.gateway: Invalid value: "fd00::1": provided gateway and addresses are of mixed IP families"#,
                r#"spec.dnsServers[1]: Invalid value: "fd00::53": DNS server and addresses are of mixed IP families"#,
                r#"spec.dnsServers[2]: Invalid value: "8.8.8": not a valid IP address"#,
            ]
        );
        // IPv6 takes prefixes up to 128.
        let r = read_pool(&pool(
            json!({"prefix": 128, "pools": [{"subnet": "fd00::/120", "prefix": 64}]}),
        ));
        assert!(r.errors.is_empty(), "{:?}", texts(&r.errors));
    }

    #[test]
    fn mp3_pre_allocations() {
        let r = read_pool(&pool(
            json!({"prefix": 24, "pools": [{"start": "10.0.0.10", "end": "10.0.0.20"}],
            "preAllocations": {"a": "10.0.0.11", "b": "10.0.0.11", "c": "10.0.0.99", "d": "nope", "e": "fd00::1"}}),
        ));
        assert_eq!(
            texts(&r.errors),
            [
                r#"spec.preAllocations[b]: Duplicate value: "10.0.0.11": 10.0.0.11 is already pre-allocated to a"#,
                r#"spec.preAllocations[c]: Invalid value: "10.0.0.99": must be inside the pool's ranges (10.0.0.10-10.0.0.20)"#,
                r#"spec.preAllocations[d]: Invalid value: "nope": not a valid IP address"#,
                r#"spec.preAllocations[e]: Invalid value: "fd00::1": must be inside the pool's ranges (10.0.0.10-10.0.0.20)"#,
            ]
        );
    }

    #[test]
    fn pre_allocated_gateway_is_not_warned_about() {
        let r = read_pool(&pool(json!({"prefix": 24, "gateway": "10.0.0.1",
            "pools": [{"subnet": "10.0.0.0/25"}], "preAllocations": {"router": "10.0.0.1"}})));
        assert!(r.errors.is_empty());
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.2-10.0.0.127");
    }

    #[test]
    fn mp1_entry_running_past_its_network_is_warned_about() {
        let r = read_pool(&pool(json!({"prefix": 24, "gateway": "10.0.0.1",
            "pools": [{"start": "10.0.0.10", "end": "10.0.1.20"}]})));
        assert!(r.errors.is_empty());
        let w: Vec<String> = r.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            w,
            [
                "spec.pools[0]: runs past 10.0.0.255, the last address of its network 10.0.0.0/24",
                "spec.pools[0]: ip-address-manager would hand out 10.0.0.255 (the broadcast address); set start or end to leave it out, or pre-allocate it",
            ]
        );
    }

    #[test]
    fn start_only_and_end_only_entries() {
        let r = read_pool(&pool(
            json!({"pools": [{"start": "10.0.0.250"}, {"end": "10.0.1.5"}]}),
        ));
        assert!(r.errors.is_empty());
        assert_eq!(r.declared.to_string(), "10.0.0.250-255.255.255.255");
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    }

    #[test]
    fn address_reads_and_projects_the_capture() {
        let review = capture("metal3-ipaddress-create.json");
        let obj = &review["request"]["object"];
        let r = read_address(obj);
        assert!(r.errors.is_empty(), "{:?}", texts(&r.errors));
        assert_eq!(r.address.unwrap().to_string(), "192.168.0.13");
        assert_eq!(r.prefix, Some(25));
        assert_eq!(r.pool_name, Some("provisioning-pool"));
        let key = ObjKey::new(Kind::Metal3IPAddress, Some("capture-eco"), "a");
        let p = project_address(obj, key);
        assert_eq!(
            p.pool,
            Some(ObjKey::new(
                Kind::Metal3IPPool,
                Some("capture-eco"),
                "provisioning-pool"
            ))
        );
        assert_eq!(
            p.claim.as_deref(),
            Some("test1-controlplane-template-0-provisioning-pool")
        );
    }

    #[test]
    fn claim_reads_the_ip_address_annotation() {
        let obj = json!({"metadata": {"annotations": {"ipAddress": "10.0.0.5"}},
            "spec": {"pool": {"name": "p", "namespace": "ns"}}});
        let r = read_claim(&obj);
        assert_eq!(r.requested, Some("10.0.0.5"));
        assert_eq!(r.pool_name, Some("p"));
        assert_eq!(r.pool_namespace, Some("ns"));
    }
}
