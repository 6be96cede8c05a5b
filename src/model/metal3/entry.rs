//! One entry of a Metal3 pool (`spec.pools[i]`, MP1–MP2), read on its own: the range the
//! provider walks, and the entry's prefix, gateway and DNS servers.

use serde_json::Value;

use crate::address::{parse_cidr, parse_ip, Cidr, Family, Ip, IpRange};
use crate::field::{FieldError, FieldPath, Warning};
use crate::model::paths::metal3 as fields;
use crate::model::read;
use crate::rule_id::RuleId;

pub(super) const MIXED_ENTRIES: &str = "pool entries are of mixed IP families";
pub(super) const MIXED_IN_ENTRY: &str = "start, end and subnet must be of one IP family";
pub(super) const MIXED_GATEWAY: &str = "provided gateway and addresses are of mixed IP families";
pub(super) const MIXED_DNS: &str = "DNS server and addresses are of mixed IP families";

/// Reads a Metal3 prefix: Go's zero value means "not set" (`if pool.Prefix != 0`), so 0 is None.
/// Checked against `family` when known, else against IPv6's bound.
pub(super) fn prefix_field(
    base: &Value,
    field: FieldPath,
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
pub(super) fn dns_servers(
    base: &Value,
    field: FieldPath,
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
pub(super) struct EntryReading<'a> {
    pub(super) path: String,
    /// The text a cause about the whole entry shows: the subnet, or `start-end`.
    pub(super) text: String,
    pub(super) family: Option<Family>,
    /// What the provider walks; None when the entry hands out nothing or is broken.
    pub(super) range: Option<IpRange>,
    pub(super) prefix: Option<u8>,
    pub(super) gateway: (Option<&'a str>, Option<Ip>),
    pub(super) subnet: Option<Cidr>,
    /// `start` and `end` as read, when they parse and fit the entry (MP5 sizes the entry).
    pub(super) bounds: (Option<u128>, Option<u128>),
    /// Whether reading the entry found no error (MP5 judges only such entries).
    pub(super) clean: bool,
}

/// Reads `spec.pools[i]` on its own (MP1; MP2 for its prefix, gateway and DNS servers).
pub(super) fn read_entry<'a>(
    obj: &'a Value,
    i: usize,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) -> Option<EntryReading<'a>> {
    let path = fields::POOLS.index(i);
    let errors_before = errors.len();
    let entry = read::get(obj, fields::POOLS)?.get(i)?;
    if !entry.is_object() {
        errors.push(FieldError::invalid(
            RuleId::MP1,
            path,
            Value::String(entry.to_string()),
            "must be an object",
        ));
        return None;
    }
    let sub = |field: FieldPath| fields::POOLS.entry(i, field);
    let mut bound_ip =
        |field: FieldPath| read::ip_at(RuleId::MP1, entry, field, sub(field), errors, warnings);
    let start = bound_ip(fields::ENTRY_START);
    let end = bound_ip(fields::ENTRY_END);
    let subnet_text_given = read::keep(
        read::at(
            read::string(RuleId::MP1, entry, fields::ENTRY_SUBNET),
            sub(fields::ENTRY_SUBNET),
        ),
        errors,
    );
    let subnet = subnet_text_given.and_then(|t| {
        read::parsed(
            RuleId::MP1,
            sub(fields::ENTRY_SUBNET),
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
    let mut bound = |(text, ip): (Option<&str>, Option<Ip>), field: FieldPath| -> Option<u128> {
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
    let start_v = bound(start, fields::ENTRY_START);
    let end_v = bound(end, fields::ENTRY_END);
    let mut reversed = false;
    if let (Some(s), Some(e), Some(text)) = (start_v, end_v, end.0) {
        if s > e {
            reversed = true;
            errors.push(FieldError::invalid(
                RuleId::MP1,
                sub(fields::ENTRY_END),
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
                    sub(fields::ENTRY_END),
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

    let prefix = prefix_field(
        entry,
        fields::ENTRY_PREFIX,
        &sub(fields::ENTRY_PREFIX),
        family,
        errors,
    );
    let gateway = read::ip_at(
        RuleId::MP2,
        entry,
        fields::ENTRY_GATEWAY,
        sub(fields::ENTRY_GATEWAY),
        errors,
        warnings,
    );
    if let (Some(text), Some(gw), Some(f)) = (gateway.0, gateway.1, family) {
        if gw.family != f {
            errors.push(FieldError::invalid(
                RuleId::MP2,
                sub(fields::ENTRY_GATEWAY),
                text,
                MIXED_GATEWAY,
            ));
        }
    }
    dns_servers(
        entry,
        fields::ENTRY_DNS_SERVERS,
        &sub(fields::ENTRY_DNS_SERVERS),
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
        bounds: (start_v, end_v),
        clean: errors.len() == errors_before,
    })
}
