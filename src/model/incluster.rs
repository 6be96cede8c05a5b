//! Reader for `InClusterIPPool` and `GlobalInClusterIPPool` (`ipam.cluster.x-k8s.io` v1alpha1 and
//! v1alpha2): SPEC §5, rules P1–P7. Both kinds share one spec; v1alpha1 may declare its addresses
//! as `subnet` + `start` + `end` instead of `addresses`, and has no excluded addresses.
//!
//! The version is read from the object's `apiVersion`: without a conversion webhook the API server
//! prunes what the version does not know, so a `subnet` in a v1alpha2 object never reaches storage
//! and is ignored here as well.

use serde_json::Value;

use crate::address::{parse_cidr, parse_entry, AddrError, AddrSet, Family, Forms, Ip, IpRange};
use crate::field::{FieldError, FieldPath, Warning};
use crate::kinds::Kind;
use crate::model::paths::in_cluster as fields;
use crate::model::pool::{
    allocatable, has_room_for_subnet, is_link_local_gateway, is_point_to_point, pool_entries,
    pool_subnet, projection, set_of, subnet_text, ListEntry, PoolEntry, PoolReading,
};
use crate::model::{read, Meta};
use crate::rule_id::RuleId;

const NOT_AN_ENTRY: &str = "provided address is not a valid IP, range, nor CIDR";
const MIXED: &str = "provided addresses are of mixed IP families";
const MIXED_GATEWAY: &str = "provided gateway and addresses are of mixed IP families";
const MIXED_EXCLUDED: &str = "addresses and excluded addresses are of mixed IP families";
const OTHER_SUBNET: &str = "provided address belongs to a different subnet than others";

/// Collects findings while the spec is read.
struct Reader<'a> {
    obj: &'a Value,
    errors: Vec<FieldError>,
    warnings: Vec<Warning>,
}

/// SPEC P2's text, followed by what exactly is wrong when the parser knows more than "not valid".
fn entry_detail(e: &AddrError) -> String {
    match e {
        AddrError::Invalid { .. } => NOT_AN_ENTRY.to_string(),
        other => format!("{NOT_AN_ENTRY}: {other}"),
    }
}

fn families<'a>(items: impl IntoIterator<Item = &'a ListEntry<'a>>) -> (bool, bool) {
    items.into_iter().fold((false, false), |(v4, v6), i| {
        (
            v4 || i.entry.family == Family::V4,
            v6 || i.entry.family == Family::V6,
        )
    })
}

impl<'a> Reader<'a> {
    fn keep<T>(&mut self, r: Result<Option<T>, FieldError>) -> Option<T> {
        read::keep(r, &mut self.errors)
    }

    /// A list of pool entries at `path`; the list itself (for list-level causes) and the entries
    /// that parse. Entries that do not parse are P2 causes at `path[i]`.
    fn entries(&mut self, path: FieldPath) -> (Option<&'a [Value]>, Vec<ListEntry<'a>>) {
        let list = self.keep(read::array(RuleId::P2, self.obj, path));
        let mut items = Vec::new();
        let before = self.errors.len();
        let all = list.unwrap_or_default();
        for (i, v) in all.iter().enumerate() {
            if read::list_full(RuleId::P2, path, &mut self.errors, before, all.len() - i) {
                break;
            }
            let item_path = path.index(i);
            let Some(text) = read::item_text(RuleId::P2, v, &item_path, &mut self.errors) else {
                continue;
            };
            let parse = parse_entry(text, Forms::ALL).map_err(|e| entry_detail(&e));
            if let Some(entry) = read::parsed(
                RuleId::P2,
                &item_path,
                text,
                parse,
                &mut self.errors,
                &mut self.warnings,
            ) {
                items.push(ListEntry {
                    path: item_path,
                    text,
                    entry,
                });
            }
        }
        (list, items)
    }

    /// A single IP field (`spec.gateway`, `spec.start`, `spec.end`).
    fn ip(&mut self, rule: RuleId, path: FieldPath) -> (Option<&'a str>, Option<Ip>) {
        read::ip(rule, self.obj, path, &mut self.errors, &mut self.warnings)
    }

    /// `spec.prefix` checked against `family` (IPv6's bound when the family is unknown).
    fn prefix(&mut self, raw: i64, family: Option<Family>) -> Option<u8> {
        let value = read::get(self.obj, fields::PREFIX);
        self.keep(read::prefix_in_family(RuleId::P4, fields::PREFIX, raw, value, family).map(Some))
    }

    /// P6: the gateway's family, and its place inside the subnet when the prefix leaves room.
    fn gateway_checks(
        &mut self,
        gateway: (Option<&'a str>, Option<Ip>),
        family: Option<Family>,
        subnet: Option<IpRange>,
        prefix: Option<u8>,
    ) {
        let (Some(text), Some(gw), Some(family)) = (gateway.0, gateway.1, family) else {
            return;
        };
        if gw.family != family {
            self.errors.push(FieldError::invalid(
                RuleId::P3,
                fields::GATEWAY,
                text,
                MIXED_GATEWAY,
            ));
            return;
        }
        if let (Some(subnet), Some(prefix)) = (subnet, prefix) {
            if has_room_for_subnet(family, prefix)
                && !is_link_local_gateway(gw)
                && !subnet.contains(gw.value)
            {
                self.errors.push(FieldError::invalid(
                    RuleId::P6,
                    fields::GATEWAY,
                    text,
                    format!(
                        "must be inside the pool's subnet {}",
                        subnet_text(family, subnet, prefix)
                    ),
                ));
            }
        }
    }

    /// P7: warnings about a pool that cannot hand out what its author expects.
    fn p7(
        &mut self,
        declared: &AddrSet,
        allocatable: &AddrSet,
        family: Option<Family>,
        prefix: Option<u8>,
        allocate_reserved: bool,
    ) {
        if !declared.is_empty() && allocatable.is_empty() {
            self.warnings.push(Warning::new(
                RuleId::P7,
                fields::ADDRESSES,
                "the pool has no allocatable address: every declared address is excluded, the gateway or reserved",
            ));
        }
        if let (Some(Family::V4), Some(p)) = (family, prefix) {
            if is_point_to_point(Family::V4, p) && !allocate_reserved {
                self.warnings.push(Warning::new(
                    RuleId::P7,
                    fields::PREFIX,
                    format!(
                        "the in-cluster provider hands out no address from a /{p} pool unless allocateReservedIPAddresses is true"
                    ),
                ));
            }
        }
    }
}

/// Reads an in-cluster pool of either kind and either version.
pub(crate) fn read(kind: Kind, obj: &Value) -> PoolReading {
    let meta = Meta::read(obj);
    let v1alpha1 = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| v.ends_with("/v1alpha1"));
    let mut r = Reader {
        obj,
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let addresses_given = read::get(obj, fields::ADDRESSES)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if v1alpha1 && !addresses_given && has_subnet_form(obj) {
        return read_subnet_form(kind, &meta, r);
    }

    let (list, items) = r.entries(fields::ADDRESSES);
    if list.is_none_or(|l| l.is_empty()) && !r.errors.iter().any(|e| e.path == fields::ADDRESSES) {
        let detail = if v1alpha1 {
            "addresses or subnet is required"
        } else {
            "addresses is required"
        };
        r.errors
            .push(FieldError::required(RuleId::P1, fields::ADDRESSES, detail));
    }
    if v1alpha1 {
        for (key, field) in [
            ("subnet", fields::SUBNET),
            ("start", fields::START),
            ("end", fields::END),
        ] {
            if let Some(v) = read::get(obj, field) {
                r.errors.push(FieldError::invalid(
                    RuleId::P1,
                    field,
                    v.clone(),
                    format!("{key} may not be used with addresses"),
                ));
            }
        }
    }
    // v1alpha1 has neither field: the API server prunes them, so they mean nothing there.
    let (excluded_list, excluded_items) = if v1alpha1 {
        (None, Vec::new())
    } else {
        r.entries(fields::EXCLUDED_ADDRESSES)
    };
    let allocate_reserved = !v1alpha1
        && r.keep(read::boolean(RuleId::P7, obj, fields::ALLOCATE_RESERVED))
            .unwrap_or(false);
    let gateway = r.ip(RuleId::P6, fields::GATEWAY);
    let raw_prefix = r.keep(read::integer(RuleId::P4, obj, fields::PREFIX));

    // P3: families never mix.
    let (d4, d6) = families(&items);
    let (x4, x6) = families(&excluded_items);
    if d4 && d6 {
        r.errors.push(FieldError::invalid(
            RuleId::P3,
            fields::ADDRESSES,
            list_value(list),
            MIXED,
        ));
    }
    if x4 && x6 {
        r.errors.push(FieldError::invalid(
            RuleId::P3,
            fields::EXCLUDED_ADDRESSES,
            list_value(excluded_list),
            MIXED,
        ));
    }
    if (d4 && x6) || (d6 && x4) {
        r.errors.push(FieldError::invalid(
            RuleId::P3,
            fields::EXCLUDED_ADDRESSES,
            list_value(excluded_list),
            MIXED_EXCLUDED,
        ));
    }
    // A mixed pool is read in the family of its first entry, so the index still holds something.
    let family = items.first().map(|i| i.entry.family);

    // P4
    let prefix = match raw_prefix {
        Some(p) => r.prefix(p, family),
        None if r.errors.iter().any(|e| e.path == fields::PREFIX) => None,
        None => {
            let detail = if v1alpha1 {
                "prefix is required when using addresses"
            } else {
                "prefix is required"
            };
            r.errors
                .push(FieldError::required(RuleId::P4, fields::PREFIX, detail));
            None
        }
    };

    let fam = family.unwrap_or(Family::V4);
    let declared = set_of(fam, &items);
    let excluded = set_of(fam, &excluded_items);
    let subnet = pool_subnet(&declared, prefix);

    // P5: one subnet for every entry (judged only when the families agree).
    if let (Some(subnet), false) = (subnet, d4 && d6) {
        for i in &items {
            if !(subnet.start <= i.entry.range.start && i.entry.range.end <= subnet.end) {
                r.errors.push(FieldError::invalid(
                    RuleId::P5,
                    i.path.clone(),
                    i.text,
                    OTHER_SUBNET,
                ));
            }
        }
    }
    r.gateway_checks(gateway, family, subnet, prefix);

    let alloc = allocatable(
        &declared,
        &excluded,
        gateway.1,
        subnet,
        prefix,
        allocate_reserved,
    );

    // P7: an exclusion that excludes nothing is most likely a typo.
    for i in &excluded_items {
        if Some(i.entry.family) == family && !declared.intersects(&i.entry.to_set()) {
            r.warnings.push(Warning::new(
                RuleId::P7,
                i.path.clone(),
                "excluded address is outside spec.addresses",
            ));
        }
    }
    r.p7(&declared, &alloc, family, prefix, allocate_reserved);

    let entries = pool_entries(fam, &items);
    let mut proj = projection(kind, &meta, family, alloc, gateway.1, prefix);
    proj.reuse_grace = reuse_grace(obj);
    PoolReading {
        proj,
        declared,
        excluded,
        subnet,
        entries,
        declared_path: fields::ADDRESSES,
        errors: r.errors,
        warnings: r.warnings,
    }
}

/// `spec.addressReuseGracePeriodSeconds` (v1alpha2; the schema keeps it an int32 ≥ 0). A value
/// the schema would refuse is no grace here: the API server never stores one.
fn reuse_grace(obj: &Value) -> Option<std::time::Duration> {
    let seconds = read::get(obj, fields::REUSE_GRACE)?.as_u64()?;
    (seconds <= i32::MAX as u64).then(|| std::time::Duration::from_secs(seconds))
}

fn has_subnet_form(obj: &Value) -> bool {
    [fields::SUBNET, fields::START, fields::END]
        .iter()
        .any(|p| read::get(obj, *p).is_some())
}

/// A list as a cause's value (printed as JSON text, cut at 64 characters).
fn list_value(list: Option<&[Value]>) -> Value {
    Value::Array(list.unwrap_or_default().to_vec())
}

/// v1alpha1 `subnet` (+ `start`, `end`): start defaults to network+1, end to the last address
/// but one for IPv4 (the broadcast) and to the last address for IPv6 (SPEC §5 table).
fn read_subnet_form(kind: Kind, meta: &Meta, mut r: Reader<'_>) -> PoolReading {
    let obj = r.obj;
    let subnet_field = r.keep(read::string(RuleId::P2, obj, fields::SUBNET));
    let start = r.ip(RuleId::P2, fields::START);
    let end = r.ip(RuleId::P2, fields::END);
    let gateway = r.ip(RuleId::P6, fields::GATEWAY);
    // Go's zero value: a prefix of 0 in v1alpha1 means "take the subnet's".
    let raw_prefix = r
        .keep(read::integer(RuleId::P4, obj, fields::PREFIX))
        .filter(|p| *p != 0);

    // The subnet: written, or the one of `prefix` around `start` (what the provider's defaulting did).
    let mut entry_path = fields::SUBNET;
    let mut entry_text = subnet_field.unwrap_or_default();
    let cidr: Option<(Family, IpRange, u8)> = match subnet_field {
        Some(text) => read::parsed(
            RuleId::P2,
            fields::SUBNET,
            text,
            parse_cidr(text),
            &mut r.errors,
            &mut r.warnings,
        )
        .map(|c| (c.family(), c.network, c.prefix)),
        None => match (start, raw_prefix) {
            (_, None) | ((_, None), _) => {
                r.errors.push(FieldError::required(
                    RuleId::P1,
                    fields::SUBNET,
                    "subnet is required when addresses is empty",
                ));
                None
            }
            ((text, Some(s)), Some(p)) => {
                entry_path = fields::START;
                entry_text = text.unwrap_or_default();
                r.prefix(p, Some(s.family))
                    .map(|p| (s.family, crate::address::subnet_of(s, p), p))
            }
        },
    };

    let Some((family, subnet, subnet_prefix)) = cidr else {
        // Without a subnet there is nothing to declare; report what else is wrong on its own.
        if let Some(p) = raw_prefix {
            r.prefix(p, None);
        }
        return PoolReading {
            errors: r.errors,
            warnings: r.warnings,
            declared_path: entry_path,
            ..PoolReading::empty(kind, meta)
        };
    };
    if let (Some(p), Some(_)) = (raw_prefix, subnet_field) {
        if r.prefix(p, Some(family)).is_some() && p != i64::from(subnet_prefix) {
            r.errors.push(FieldError::invalid(
                RuleId::P4,
                fields::PREFIX,
                p,
                "does not match prefix of spec.subnet",
            ));
        }
    }

    // Each bound: of the subnet's family and inside it, else the default is used for the set.
    let mut bound = |(text, ip): (Option<&str>, Option<Ip>), path: FieldPath| -> Option<u128> {
        let (text, ip) = (text?, ip?);
        if ip.family != family {
            r.errors
                .push(FieldError::invalid(RuleId::P3, path, text, MIXED));
            None
        } else if !subnet.contains(ip.value) {
            r.errors.push(FieldError::invalid(
                RuleId::P5,
                path,
                text,
                "address is not part of spec.subnet",
            ));
            None
        } else {
            Some(ip.value)
        }
    };
    let start_v = bound(start, fields::START);
    let end_v = bound(end, fields::END);
    if let (Some(s), Some(e), Some(text)) = (start_v, end_v, end.0) {
        if s > e {
            r.errors.push(FieldError::invalid(
                RuleId::P2,
                fields::END,
                text,
                "must not be before spec.start",
            ));
        }
    }
    let first = start_v.unwrap_or(subnet.start.saturating_add(1));
    let last = end_v.unwrap_or(match family {
        Family::V4 => subnet.end.saturating_sub(1),
        Family::V6 => subnet.end,
    });
    let declared = if first <= last {
        AddrSet::from_range(family, IpRange::new(first, last))
    } else {
        AddrSet::empty(family)
    };
    let excluded = AddrSet::empty(family);
    let prefix = Some(subnet_prefix);
    r.gateway_checks(gateway, Some(family), Some(subnet), prefix);
    let alloc = allocatable(&declared, &excluded, gateway.1, Some(subnet), prefix, false);
    r.p7(&declared, &alloc, Some(family), prefix, false);
    let entries = vec![PoolEntry {
        path: entry_path.to_string(),
        text: entry_text.to_string(),
        set: declared.clone(),
    }];
    PoolReading {
        proj: projection(kind, meta, Some(family), alloc, gateway.1, prefix),
        declared,
        excluded,
        subnet: Some(subnet),
        entries,
        declared_path: entry_path,
        errors: r.errors,
        warnings: r.warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pool(version: &str, spec: Value) -> Value {
        json!({"apiVersion": format!("ipam.cluster.x-k8s.io/{version}"), "kind": "InClusterIPPool",
            "metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    fn texts(r: &PoolReading) -> Vec<String> {
        r.errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn v1alpha1_subnet_defaults_follow_spec_table() {
        let r = read(
            Kind::InClusterIPPool,
            &pool(
                "v1alpha1",
                json!({"subnet": "10.0.0.0/24", "gateway": "10.0.0.1"}),
            ),
        );
        assert!(r.errors.is_empty(), "{:?}", texts(&r));
        assert_eq!(r.declared.to_string(), "10.0.0.1-10.0.0.254");
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.2-10.0.0.254");
        assert_eq!(r.proj.prefix, Some(24));
        // IPv6: the last address is the default end (no broadcast).
        let r = read(
            Kind::InClusterIPPool,
            &pool("v1alpha1", json!({"subnet": "2001:db8::/120"})),
        );
        assert_eq!(r.declared.to_string(), "2001:db8::1-2001:db8::ff");
    }

    #[test]
    fn v1alpha1_capture_reads_start_and_end() {
        let path = format!(
            "{}/tests/fixtures/rules/inclusterippool-create-v1alpha1.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let review: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let r = read(Kind::InClusterIPPool, &review["request"]["object"]);
        assert!(r.errors.is_empty(), "{:?}", texts(&r));
        assert_eq!(r.proj.allocatable.to_string(), "10.20.0.10-10.20.0.20");
        assert_eq!(r.declared_path, fields::SUBNET);
    }

    #[test]
    fn v1alpha1_subnet_form_problems() {
        let r = read(
            Kind::InClusterIPPool,
            &pool(
                "v1alpha1",
                json!({"subnet": "10.0.0.0/24", "start": "10.0.1.1", "end": "fd00::1", "prefix": 25}),
            ),
        );
        assert_eq!(
            texts(&r),
            [
                "spec.prefix: Invalid value: 25: does not match prefix of spec.subnet",
                r#"spec.start: Invalid value: "10.0.1.1": address is not part of spec.subnet"#,
                r#"spec.end: Invalid value: "fd00::1": provided addresses are of mixed IP families"#,
            ]
        );
    }

    #[test]
    fn v1alpha2_ignores_v1alpha1_fields() {
        let r = read(
            Kind::InClusterIPPool,
            &pool("v1alpha2", json!({"subnet": "10.0.0.0/24", "prefix": 24})),
        );
        assert_eq!(
            texts(&r),
            ["spec.addresses: Required value: addresses is required"]
        );
    }
}
