//! A Metal3 `IPPool` on its own: MP1–MP3 and MP5, judged on the spec as
//! `model::metal3` decodes it and the layout its reading is made of. What every pool kind shares
//! (MP4 with P9–P11) is `rules::metal3` and `rules::pool`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::address::{Family, Ip};
use crate::field::{FieldError, Warning};
use crate::model::metal3::{Bound, DnsServers, EntrySpec, Layout, Note, Spec};
use crate::model::paths::{self, metal3 as fields};
use crate::model::pool::{has_room_for_subnet, is_link_local_gateway, subnet_text, PoolReading};
use crate::model::written::{Expected, IpText, Text, Written, Wrong};
use crate::rule_id::RuleId;
use crate::rules::util::{each_capped, ip_findings, prefix_in_family};

/// The most addresses ip-address-manager can pick from at random in one entry: it sizes an entry
/// as a Go `int` (`GetPoolSize` in its `api/v1alpha1`), 64 bits on the platforms it ships for.
const RANDOM_MAX: u128 = i64::MAX as u128;

const MIXED_ENTRIES: &str = "pool entries are of mixed IP families";
const MIXED_IN_ENTRY: &str = "start, end and subnet must be of one IP family";
const MIXED_GATEWAY: &str = "provided gateway and addresses are of mixed IP families";
const MIXED_DNS: &str = "DNS server and addresses are of mixed IP families";

/// What the spec says on its own, in the order a reader meets it: each entry (MP1, with MP2 for
/// its prefix, gateway and DNS servers), the entries' families, MP5, the pool-level MP2 fields,
/// then MP3; warnings likewise.
pub(crate) fn findings(
    spec: &Spec,
    layout: &Layout,
    r: &PoolReading,
) -> (Vec<FieldError>, Vec<Warning>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    // A spec that is not an object would otherwise read as a pool with no pools (docs/robustness.md, O4).
    errors.extend(spec.spec.type_error(RuleId::MP1, paths::SPEC));
    errors.extend(spec.pools.type_error(RuleId::MP1, fields::POOLS));

    // Whether each entry judged had no cause of its own (MP5 sizes only those).
    let mut clean = Vec::new();
    each_capped(
        RuleId::MP1,
        fields::POOLS,
        spec.pools_len,
        &spec.entries,
        &mut errors,
        |e, errors| {
            let before = errors.len();
            entry(e, errors, &mut warnings);
            clean.push(errors.len() == before);
        },
    );
    let judged = &spec.entries[..clean.len()];
    for e in judged {
        let Ok(f) = &e.fields else { continue };
        if f.walk.family.is_some() && f.walk.family != spec.family {
            errors.push(FieldError::invalid(
                RuleId::MP1,
                e.path.as_str(),
                f.walk.text.as_str(),
                MIXED_ENTRIES,
            ));
        }
    }
    if spec.random {
        for (e, _) in judged.iter().zip(&clean).filter(|(_, c)| **c) {
            mp5_size(e, &mut errors);
        }
    }

    // Pool-level defaults (MP2).
    mp2_prefix(
        &spec.prefix,
        spec.prefix_value,
        fields::PREFIX.as_str(),
        spec.family,
        &mut errors,
    );
    mp2_gateway(
        &spec.gateway,
        fields::GATEWAY.as_str(),
        spec.family,
        &mut errors,
        &mut warnings,
    );
    mp2_dns(
        &spec.dns_servers,
        fields::DNS_SERVERS.as_str(),
        spec.family,
        &mut errors,
        &mut warnings,
    );

    network_warnings(spec, layout, &mut warnings);
    let pre = mp3_pre_allocations(spec, r, &mut errors, &mut warnings);
    handed_out(spec, layout, &pre, &mut warnings);
    (errors, warnings)
}

/// `spec.pools[i]` on its own (MP1; MP2 for its prefix, gateway and DNS servers).
fn entry(e: &EntrySpec, errors: &mut Vec<FieldError>, warnings: &mut Vec<Warning>) {
    let f = match &e.fields {
        Ok(f) => f,
        Err(value) => {
            errors.push(
                Wrong {
                    value,
                    expected: Expected::Object,
                }
                .error(RuleId::MP1, e.path.as_str()),
            );
            return;
        }
    };
    let sub = |field| fields::POOLS.entry(e.index, field);
    ip_findings(
        RuleId::MP1,
        sub(fields::ENTRY_START),
        &f.start,
        errors,
        warnings,
    );
    ip_findings(
        RuleId::MP1,
        sub(fields::ENTRY_END),
        &f.end,
        errors,
        warnings,
    );
    ip_findings(
        RuleId::MP1,
        sub(fields::ENTRY_SUBNET),
        &f.subnet,
        errors,
        warnings,
    );
    if f.unbounded() {
        errors.push(FieldError::required(
            RuleId::MP1,
            e.path.as_str(),
            "at least one of start, end or subnet is required",
        ));
    }
    for (bound, field, written) in [
        (f.walk.start, fields::ENTRY_START, &f.start),
        (f.walk.end, fields::ENTRY_END, &f.end),
    ] {
        let why = match bound {
            Bound::OtherFamily => MIXED_IN_ENTRY.to_string(),
            Bound::OutsideSubnet(c) => format!("must be inside subnet {c}"),
            _ => continue,
        };
        errors.push(FieldError::invalid(
            RuleId::MP1,
            sub(field),
            text(written),
            why,
        ));
    }
    if f.walk.reversed {
        errors.push(FieldError::invalid(
            RuleId::MP1,
            sub(fields::ENTRY_END),
            text(&f.end),
            format!("must not be before start {}", text(&f.start)),
        ));
    }
    match f.walk.note {
        None => {}
        Some(Note::EndIgnored) => warnings.push(Warning::new(
            RuleId::MP1,
            sub(fields::ENTRY_END),
            "without start, ip-address-manager ignores end and hands out the whole subnet; set start as well",
        )),
        Some(Note::RunsToLast(family)) => warnings.push(Warning::new(
            RuleId::MP1,
            e.path.as_str(),
            format!(
                "without end or subnet the range runs to the last {} address",
                family.name()
            ),
        )),
        Some(Note::HandsOutNothing) => warnings.push(Warning::new(
            RuleId::MP1,
            e.path.as_str(),
            "without start or subnet ip-address-manager hands out nothing from this entry",
        )),
    }
    let family = f.walk.family;
    mp2_prefix(
        &f.prefix,
        f.prefix_value,
        &sub(fields::ENTRY_PREFIX),
        family,
        errors,
    );
    mp2_gateway(
        &f.gateway,
        &sub(fields::ENTRY_GATEWAY),
        family,
        errors,
        warnings,
    );
    mp2_dns(
        &f.dns_servers,
        &sub(fields::ENTRY_DNS_SERVERS),
        family,
        errors,
        warnings,
    );
}

/// The text of an address field written as a string; empty otherwise.
fn text<'a>(w: &Written<'a, IpText<'a>>) -> &'a str {
    w.ok().map(|t| t.text).unwrap_or_default()
}

/// MP2: a prefix is an integer; unless 0 (Go's "not set"), within `family`'s bound (IPv6's when
/// the family is unknown).
fn mp2_prefix(
    raw: &Written<i64>,
    value: Option<&Value>,
    path: &str,
    family: Option<Family>,
    errors: &mut Vec<FieldError>,
) {
    errors.extend(raw.type_error(RuleId::MP2, path));
    if let Some(p) = raw.get().filter(|p| *p != 0) {
        if let Err(e) = prefix_in_family(RuleId::MP2, path, p, value, family) {
            errors.push(e);
        }
    }
}

/// MP2: a gateway is an IP address of the pool's family.
fn mp2_gateway(
    gateway: &Written<IpText>,
    path: &str,
    family: Option<Family>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    ip_findings(RuleId::MP2, path, gateway, errors, warnings);
    if let Some(t) = gateway.ok() {
        if let (Some(gw), Some(f)) = (t.value(), family) {
            if gw.family != f {
                errors.push(FieldError::invalid(
                    RuleId::MP2,
                    path,
                    t.text,
                    MIXED_GATEWAY,
                ));
            }
        }
    }
}

/// MP2: `dnsServers` at `path` are IP addresses of the pool's family.
fn mp2_dns(
    dns: &DnsServers,
    path: &str,
    family: Option<Family>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    errors.extend(dns.list.type_error(RuleId::MP2, path));
    for (j, item) in dns.items.iter().enumerate() {
        let item_path = format!("{path}[{j}]");
        ip_findings(RuleId::MP2, item_path.as_str(), item, errors, warnings);
        if let Some(t) = item.ok() {
            if t.value()
                .is_some_and(|ip| family.is_some_and(|f| f != ip.family))
            {
                errors.push(FieldError::invalid(
                    RuleId::MP2,
                    item_path,
                    t.text,
                    MIXED_DNS,
                ));
            }
        }
    }
}

/// MP5: with `allocationStrategy: random` the provider picks an offset inside each entry, so an
/// entry needs a size it can compute: a start with an end or a subnet, or a subnet alone, holding
/// at most [`RANDOM_MAX`] addresses. Otherwise the pool is accepted and every claim on it fails
/// later as exhausted.
fn mp5_size(e: &EntrySpec, errors: &mut Vec<FieldError>) {
    let Ok(f) = &e.fields else { return };
    // A subnet alone starts at network + 1, as the provider walks it.
    let size = match ((f.walk.start.value(), f.walk.end.value()), f.walk.subnet) {
        ((Some(s), Some(end)), _) => Ok((end - s).checked_add(1)),
        ((Some(s), None), Some(c)) => Ok((c.network.end - s).checked_add(1)),
        ((Some(_), None), None) => {
            Err("a start without an end or a subnet has no size to pick from")
        }
        ((None, _), Some(c)) => Ok(Some(c.network.end - c.network.start)),
        ((None, Some(_)), None) => {
            Err("an end without a start or a subnet holds nothing to pick from")
        }
        ((None, None), None) => return,
    };
    let why = match size {
        Ok(Some(n)) if n <= RANDOM_MAX => return,
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
        e.path.as_str(),
        f.walk.text.as_str(),
        format!("cannot be used with allocationStrategy \"random\": {why}"),
    ));
}

/// MP2 and MP1 warnings about where an entry's addresses sit: a gateway outside the entry's
/// network, an entry running past its network's last address.
fn network_warnings(spec: &Spec, layout: &Layout, warnings: &mut Vec<Warning>) {
    let fam = layout.family;
    for p in &layout.placed {
        let e = &spec.entries[p.entry];
        let Ok(f) = &e.fields else { continue };
        if let (Some(gw), Some((net, prefix))) = (p.gateway, p.network) {
            // The cause sits where the gateway the entry uses is written: the entry's own when
            // it has one, else the pool's.
            let own = f.gateway.ok().map(|t| t.text);
            let gw_text = own
                .or(spec.gateway.ok().map(|t| t.text))
                .unwrap_or_default();
            let gw_path = match own {
                Some(_) => fields::POOLS.entry(e.index, fields::ENTRY_GATEWAY),
                None => fields::GATEWAY.to_string(),
            };
            if has_room_for_subnet(fam, prefix)
                && !is_link_local_gateway(gw)
                && !net.contains(gw.value)
            {
                warnings.push(Warning::new(
                    RuleId::MP2,
                    gw_path,
                    format!(
                        "{gw_text} is outside {}, the network of {}",
                        subnet_text(fam, net, prefix),
                        e.path
                    ),
                ));
            }
        }
        if let Some((net, prefix)) = p.network.filter(|(_, p)| has_room_for_subnet(fam, *p)) {
            if p.range.end > net.end {
                warnings.push(Warning::new(
                    RuleId::MP1,
                    e.path.as_str(),
                    format!(
                        "runs past {}, the last address of its network {}",
                        Ip::new(fam, net.end),
                        subnet_text(fam, net, prefix)
                    ),
                ));
            }
        }
    }
}

/// MP3: `spec.preAllocations` are valid, unique and inside the pool's ranges. Returns the ones
/// that are.
fn mp3_pre_allocations(
    spec: &Spec,
    r: &PoolReading,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) -> Vec<Ip> {
    let pre = &spec.pre_allocations;
    errors.extend(pre.map.type_error(RuleId::MP3, fields::PRE_ALLOCATIONS));
    let mut out = Vec::new();
    // Which claim each address went to first.
    let mut seen: BTreeMap<Ip, &str> = BTreeMap::new();
    for (claim, item) in &pre.items {
        let path = fields::PRE_ALLOCATIONS.key(claim);
        ip_findings(RuleId::MP3, path.as_str(), item, errors, warnings);
        let Some(Text {
            text,
            parsed: Ok(p),
        }) = item.ok()
        else {
            continue;
        };
        let ip = p.value;
        if let Some(first) = seen.get(&ip) {
            errors.push(FieldError::duplicate(
                RuleId::MP3,
                path,
                *text,
                format!("{ip} is already pre-allocated to {first}"),
            ));
            continue;
        }
        seen.insert(ip, claim);
        if spec.family.is_some_and(|f| f != ip.family) || !r.declared.contains(ip) {
            errors.push(FieldError::invalid(
                RuleId::MP3,
                path,
                *text,
                format!(
                    "must be inside the pool's ranges ({})",
                    r.declared.display_limited(5)
                ),
            ));
            continue;
        }
        out.push(ip);
    }
    out
}

/// MP1: the provider skips nothing as it walks an entry, so it would hand out the gateway, the
/// network address or the IPv4 broadcast address the reading leaves out, unless pre-allocated.
fn handed_out(spec: &Spec, layout: &Layout, pre: &[Ip], warnings: &mut Vec<Warning>) {
    for p in &layout.placed {
        let listed: Vec<String> = p
            .withheld
            .iter()
            .filter(|(ip, _)| !pre.contains(ip))
            .map(|(ip, reason)| format!("{ip} ({reason})"))
            .collect();
        if !listed.is_empty() {
            warnings.push(Warning::new(
                RuleId::MP1,
                spec.entries[p.entry].path.as_str(),
                format!(
                    "ip-address-manager would hand out {}; set start or end to leave it out, or pre-allocate it",
                    listed.join(" and ")
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::findings;
    use crate::field::FieldError;
    use crate::model::metal3::read_spec;
    use crate::model::pool::PoolReading;
    use crate::model::test_support::{fixture, metal3_pool as pool};

    fn capture(name: &str) -> Value {
        fixture(name)
    }

    fn judged(obj: &Value) -> PoolReading {
        let (spec, layout, mut r) = read_spec(obj);
        (r.errors, r.warnings) = findings(&spec, &layout, &r);
        r
    }

    fn texts(r: &[FieldError]) -> Vec<String> {
        r.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn capture_pool_warns_of_what_the_provider_would_hand_out() {
        let review = capture("metal3-ippool-create.json");
        let r = judged(&review["request"]["object"]);
        assert!(r.errors.is_empty(), "{:?}", texts(&r.errors));
        // 192.168.1.1 is the pool's gateway and 192.168.1.255 the broadcast address of its /24.
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
        let r = judged(&pool(json!({"prefix": 24, "pools": [
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
        let r = judged(&pool(json!({"pools": [
            {},
            {"start": "10.0.0.9", "end": "10.0.0.1"},
            {"start": "10.0.0.1", "end": "fd00::1"},
            {"start": "10.0.1.1", "subnet": "10.0.0.0/24"},
            {"subnet": "10.0.0.0/33"},
            {"subnet": "fd00::/64"},
            5,
            "10.0.0.0/24",
        ]})));
        assert_eq!(
            texts(&r.errors),
            [
                "spec.pools[0]: Required value: at least one of start, end or subnet is required",
                r#"spec.pools[1].end: Invalid value: "10.0.0.1": must not be before start 10.0.0.9"#,
                r#"spec.pools[2].end: Invalid value: "fd00::1": start, end and subnet must be of one IP family"#,
                r#"spec.pools[3].start: Invalid value: "10.0.1.1": must be inside subnet 10.0.0.0/24"#,
                r#"spec.pools[4].subnet: Invalid value: "10.0.0.0/33": prefix length must be a number between 0 and 32 for an IPv4 address"#,
                "spec.pools[6]: Invalid value: 5: must be an object",
                r#"spec.pools[7]: Invalid value: "10.0.0.0/24": must be an object"#,
                r#"spec.pools[5]: Invalid value: "fd00::/64": pool entries are of mixed IP families"#,
            ]
        );
    }

    #[test]
    fn mp2_prefixes_gateways_and_dns_servers() {
        let r = judged(&pool(json!({"prefix": 33, "gateway": "fd00::1",
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
        let r = judged(&pool(
            json!({"prefix": 128, "pools": [{"subnet": "fd00::/120", "prefix": 64}]}),
        ));
        assert!(r.errors.is_empty(), "{:?}", texts(&r.errors));
    }

    #[test]
    fn mp3_pre_allocations() {
        let r = judged(&pool(
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
        let r = judged(&pool(json!({"prefix": 24, "gateway": "10.0.0.1",
            "pools": [{"subnet": "10.0.0.0/25"}], "preAllocations": {"router": "10.0.0.1"}})));
        assert!(r.errors.is_empty());
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.2-10.0.0.127");
    }

    #[test]
    fn mp1_entry_running_past_its_network_is_warned_about() {
        let r = judged(&pool(json!({"prefix": 24, "gateway": "10.0.0.1",
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
        let r = judged(&pool(
            json!({"pools": [{"start": "10.0.0.250"}, {"end": "10.0.1.5"}]}),
        ));
        assert!(r.errors.is_empty());
        assert_eq!(r.declared.to_string(), "10.0.0.250-255.255.255.255");
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    }

    #[test]
    fn mp1_a_long_broken_list_is_judged_up_to_the_cap() {
        let mut pools = vec![json!({"start": "10.0.0.1", "end": "10.0.0.9"})];
        pools.extend((0..1_500).map(|_| json!({})));
        let r = judged(&pool(json!({ "pools": pools })));
        assert_eq!(r.errors.len(), 1_001, "{:?}", &texts(&r.errors)[..3]);
        assert_eq!(
            r.errors[0].to_string(),
            "spec.pools[1]: Required value: at least one of start, end or subnet is required"
        );
        assert_eq!(
            r.errors[1_000].to_string(),
            "spec.pools: Forbidden: 500 more entries not checked after 1000 problems in this list"
        );
        assert_eq!(r.declared.to_string(), "10.0.0.1-10.0.0.9");
        // Entries with two causes each fill the cap after 500 of them.
        let pools: Vec<Value> = (0..2_000)
            .map(|_| json!({"start": "x", "end": "y"}))
            .collect();
        let r = judged(&pool(json!({ "pools": pools })));
        assert_eq!(r.errors.len(), 1_001);
        assert_eq!(
            r.errors[1_000].to_string(),
            "spec.pools: Forbidden: 1500 more entries not checked after 1000 problems in this list"
        );
    }
}
