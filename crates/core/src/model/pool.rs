//! The one reading of a pool: every pool kind is reduced to declared, excluded and
//! allocatable sets, a gateway and a prefix. Admission, the index, `check` and `audit` all call
//! [`read_pool`], so a pool means the same thing wherever it is judged.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::address::{subnet_of, AddrError, AddrSet, Entry, Family, Ip, IpRange, Parsed};
use crate::field::{FieldError, FieldPath, Warning};
use crate::kinds::Kind;
use crate::model::read::LIST_PROBLEMS;
use crate::model::written::{self, Text, Written};
use crate::model::{paths, Meta, ObjKey, PoolProj};

/// Annotations that switch off delete protection (P9): the in-cluster provider's own escape
/// hatch, and the one `clusterctl move` sets before it deletes the source objects.
pub(crate) const SKIP_DELETE_ANNOTATIONS: [&str; 2] = [
    "ipam.cluster.x-k8s.io/skip-validate-delete-webhook",
    "clusterctl.cluster.x-k8s.io/delete-for-move",
];

/// One declared entry with where it was written, so a cause can sit on the entry (P10).
#[derive(Debug, Clone, PartialEq)]
pub struct PoolEntry {
    /// `spec.addresses[1]`.
    pub path: String,
    /// The text as written, for the cause's value.
    pub text: String,
    /// What the entry declares (one run, in the pool's family).
    pub set: AddrSet,
}

/// One parsed entry of a pool's address list (in-cluster `addresses`, Spiderpool `ips`, and their
/// exclusions), with where it was written.
pub struct ListEntry<'a> {
    /// `spec.addresses[1]`; borrowed from a [`TextList`] where there is one.
    pub path: Cow<'a, str>,
    /// The text as written.
    pub text: &'a str,
    pub entry: Entry,
}

/// A list of address texts (`spec.addresses`, `spec.prefixes`) as written, each parsed.
#[derive(Debug, Clone)]
pub struct TextList<'a, T> {
    pub path: FieldPath,
    pub list: Written<'a, &'a [Value]>,
    /// Each entry read, with its path, in order. Reading stops after `LIST_PROBLEMS` entries that
    /// are not strings or do not parse: a list of 750k bad entries is not read to its end.
    pub items: Vec<(String, Written<'a, Text<'a, T>>)>,
    /// How many entries the list holds.
    pub len: usize,
}

impl<'a, T: Copy> TextList<'a, T> {
    /// The list at `path` of `obj`, each entry parsed by `parse`.
    pub fn read(
        obj: &'a Value,
        path: FieldPath,
        parse: fn(&str) -> Result<Parsed<T>, AddrError>,
    ) -> Self {
        let list = written::list(obj, path);
        let all = list.get().unwrap_or_default();
        let mut items = Vec::new();
        let mut problems = 0;
        for (i, v) in all.iter().enumerate() {
            if problems >= LIST_PROBLEMS {
                break;
            }
            let item = written::item(v, parse);
            if !matches!(&item, Written::Ok(Text { parsed: Ok(_), .. })) {
                problems += 1;
            }
            items.push((path.index(i), item));
        }
        TextList {
            path,
            list,
            items,
            len: all.len(),
        }
    }

    /// The entries that parse, with where they were written.
    pub fn parsed(&self) -> impl Iterator<Item = (&str, &'a str, T)> + '_ {
        self.items.iter().filter_map(|(path, item)| {
            let t = item.ok()?;
            Some((path.as_str(), t.text, t.value()?))
        })
    }

    /// The list as a cause's value (printed as JSON text, cut at 64 characters).
    pub fn value(&self) -> Value {
        Value::Array(self.list.get().unwrap_or_default().to_vec())
    }
}

impl<'a> TextList<'a, Entry> {
    /// The entries that parse, as pool entries.
    pub fn entries(&self) -> Vec<ListEntry<'_>> {
        self.parsed()
            .map(|(path, text, entry)| ListEntry {
                path: Cow::Borrowed(path),
                text,
                entry,
            })
            .collect()
    }
}

/// The union of the entries of `family`: a list that mixes families is read in one.
pub(crate) fn set_of(family: Family, items: &[ListEntry]) -> AddrSet {
    AddrSet::from_ranges(
        family,
        items
            .iter()
            .filter(|i| i.entry.family == family)
            .map(|i| i.entry.range),
    )
}

/// The entries of `family` as the reading keeps them, so a cause can sit on an entry (P10).
pub(crate) fn pool_entries(family: Family, items: &[ListEntry]) -> Vec<PoolEntry> {
    items
        .iter()
        .filter(|i| i.entry.family == family)
        .map(|i| PoolEntry {
            path: i.path.to_string(),
            text: i.text.to_string(),
            set: i.entry.to_set(),
        })
        .collect()
}

/// A pool as read, with everything the rules need beyond the projection.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolReading {
    /// What the index keeps (allocatable set, space, gateway, prefix, …).
    pub proj: PoolProj,
    /// The union of the declared entries of the pool's family.
    pub declared: AddrSet,
    /// The union of the excluded entries of the pool's family.
    pub excluded: AddrSet,
    /// The subnet of the pool's prefix that holds its lowest address, when both are known.
    pub subnet: Option<IpRange>,
    /// Declared entries in order, for causes that sit on an entry.
    pub entries: Vec<PoolEntry>,
    /// The field that declares the addresses (`spec.addresses`, `spec.subnet`): where a cause about
    /// the declared set as a whole goes (P8).
    pub declared_path: FieldPath,
    /// Problems of the spec on its own, collected: filled by the rules from the kind's typed spec
    /// (`rules::validator::read_judged`); always empty in `model::read_pool`'s reading.
    pub errors: Vec<FieldError>,
    /// Warnings of the spec on its own (P7, address texts that are not canonical), likewise.
    pub warnings: Vec<Warning>,
}

impl PoolReading {
    /// A reading with no addresses: metadata only.
    pub(crate) fn empty(kind: Kind, meta: &Meta) -> PoolReading {
        PoolReading {
            proj: projection(kind, meta, None, AddrSet::empty(Family::V4), None, None),
            declared: AddrSet::empty(Family::V4),
            excluded: AddrSet::empty(Family::V4),
            subnet: None,
            entries: Vec::new(),
            declared_path: paths::SPEC,
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// The projection for a pool whose sets are known.
pub(crate) fn projection(
    kind: Kind,
    meta: &Meta,
    family: Option<Family>,
    allocatable: AddrSet,
    gateway: Option<Ip>,
    prefix: Option<u8>,
) -> PoolProj {
    PoolProj {
        key: ObjKey::new(kind, meta.namespace, meta.name),
        space: Arc::from(meta.address_space()),
        family,
        allocatable,
        other_family: None,
        gateway,
        prefix,
        deleting: meta.deleting,
        skip_delete_check: meta.skips_delete_check(),
        recorded: AddrSet::empty(family.unwrap_or(Family::V4)),
        declared_subnet: None,
        reuse_grace: None,
    }
}

/// RFC 3021 / RFC 6164 point-to-point and host prefixes: every address is usable.
pub(crate) fn is_point_to_point(family: Family, prefix: u8) -> bool {
    match family {
        Family::V4 => prefix >= 31,
        Family::V6 => prefix >= 127,
    }
}

/// Whether a prefix leaves room for a subnet with a network address (IPv4 ≤ /30, IPv6 ≤ /126).
pub(crate) fn has_room_for_subnet(family: Family, prefix: u8) -> bool {
    match family {
        Family::V4 => prefix <= 30,
        Family::V6 => prefix <= 126,
    }
}

/// IPv6 link-local gateways (`fe80::/10`) come from router advertisements and are exempt from
/// every inside-the-subnet check.
pub(crate) fn is_link_local_gateway(ip: Ip) -> bool {
    ip.family == Family::V6 && std::net::Ipv6Addr::from(ip.value).is_unicast_link_local()
}

/// `10.0.0.0/24`: a subnet as text.
pub(crate) fn subnet_text(family: Family, subnet: IpRange, prefix: u8) -> String {
    format!("{}/{prefix}", Ip::new(family, subnet.start))
}

/// The subnet of `prefix` holding the lowest declared address.
pub(crate) fn pool_subnet(declared: &AddrSet, prefix: Option<u8>) -> Option<IpRange> {
    Some(subnet_of(declared.first()?, prefix?))
}

/// declared − excluded − gateway − reserved. Reserved is the network address and, for
/// IPv4, the broadcast address of the pool's subnet, unless the pool allocates them or the prefix
/// is a point-to-point or host prefix.
pub fn allocatable(
    declared: &AddrSet,
    excluded: &AddrSet,
    gateway: Option<Ip>,
    subnet: Option<IpRange>,
    prefix: Option<u8>,
    allocate_reserved: bool,
) -> AddrSet {
    let family = declared.family();
    let mut out = declared.difference(excluded);
    if let Some(gw) = gateway.filter(|g| g.family == family) {
        out.remove(IpRange::single(gw.value));
    }
    if let (Some(subnet), Some(prefix)) = (subnet, prefix) {
        if !allocate_reserved && !is_point_to_point(family, prefix) {
            out.remove(IpRange::single(subnet.start));
            if family == Family::V4 {
                out.remove(IpRange::single(subnet.end));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::parse_ip;

    fn ip(s: &str) -> Ip {
        parse_ip(s).unwrap().value
    }

    #[test]
    fn link_local_is_fe80_slash_10() {
        assert!(is_link_local_gateway(ip("fe80::1")));
        assert!(is_link_local_gateway(ip("febf::1")));
        assert!(!is_link_local_gateway(ip("fec0::1")));
        assert!(!is_link_local_gateway(ip("2001:db8::1")));
        assert!(!is_link_local_gateway(ip("10.0.0.1")));
    }

    #[test]
    fn reserved_addresses_leave_point_to_point_prefixes_alone() {
        let set = |a: &str, b: &str| {
            let (a, b) = (ip(a), ip(b));
            AddrSet::from_range(a.family, IpRange::new(a.value, b.value))
        };
        let none = AddrSet::empty(Family::V4);
        let d = set("10.0.0.0", "10.0.0.255");
        let a = allocatable(&d, &none, None, pool_subnet(&d, Some(24)), Some(24), false);
        assert_eq!(a.to_string(), "10.0.0.1-10.0.0.254");
        let a = allocatable(&d, &none, None, pool_subnet(&d, Some(24)), Some(24), true);
        assert_eq!(a.to_string(), "10.0.0.0-10.0.0.255");
        let d = set("10.0.0.4", "10.0.0.5");
        let a = allocatable(&d, &none, None, pool_subnet(&d, Some(31)), Some(31), false);
        assert_eq!(a.to_string(), "10.0.0.4-10.0.0.5");
        let d = set("2001:db8::", "2001:db8::ff");
        let none6 = AddrSet::empty(Family::V6);
        let a = allocatable(
            &d,
            &none6,
            Some(ip("2001:db8::1")),
            pool_subnet(&d, Some(64)),
            Some(64),
            false,
        );
        // IPv6 has no broadcast: only the subnet-router anycast address and the gateway go.
        assert_eq!(a.to_string(), "2001:db8::2-2001:db8::ff");
        let d = set("2001:db8::", "2001:db8::1");
        let a = allocatable(
            &d,
            &none6,
            None,
            pool_subnet(&d, Some(127)),
            Some(127),
            false,
        );
        assert_eq!(a.to_string(), "2001:db8::-2001:db8::1");
    }
}
