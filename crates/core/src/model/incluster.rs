//! Reader for `InClusterIPPool` and `GlobalInClusterIPPool` (`ipam.cluster.x-k8s.io` v1alpha1 and
//! v1alpha2), judged by `rules::in_cluster` (P1–P7). Both kinds share one spec; v1alpha1
//! may declare its addresses as `subnet` + `start` + `end` instead of `addresses`, and has no
//! excluded addresses.
//!
//! The version is read from the object's `apiVersion`: without a conversion webhook the API server
//! prunes what the version does not know, so a `subnet` in a v1alpha2 object never reaches storage
//! and is ignored here as well.
//!
//! [`read_spec`] decodes the spec once into a typed [`Spec`] and reduces it to the pool's
//! reading; it judges nothing. What the reading falls back to when a field is wrong (the family
//! of the first entry, the default start and end of a subnet) is the same fallback the rules
//! explain.

use serde_json::Value;

use crate::address::{
    parse_cidr, parse_entry, subnet_of, AddrError, AddrSet, Cidr, Entry, Family, Forms, Ip,
    IpRange, Parsed,
};
use crate::field::FieldPath;
use crate::kinds::Kind;
use crate::model::paths::in_cluster as fields;
use crate::model::pool::{
    allocatable, pool_entries, pool_subnet, projection, set_of, ListEntry, PoolEntry, PoolReading,
    TextList,
};
use crate::model::written::{self, IpText, Text, Written};
use crate::model::{read, Meta};

/// An in-cluster pool's spec as written, each field decoded once.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    pub v1alpha1: bool,
    pub form: Form<'a>,
    pub gateway: Written<'a, IpText<'a>>,
    pub prefix: Written<'a, i64>,
    /// `spec.prefix` as written, for a cause's value.
    pub prefix_value: Option<&'a Value>,
    /// `spec.addressReuseGracePeriodSeconds` (v1alpha2; the schema keeps it an int32 ≥ 0). A
    /// value the schema would refuse is no grace here: the API server never stores one.
    pub reuse_grace: Option<std::time::Duration>,
}

/// How the pool declares its addresses.
#[derive(Debug, Clone)]
pub enum Form<'a> {
    /// `addresses` (and, in v1alpha2, `excludedAddresses` and `allocateReservedIPAddresses`).
    List {
        addresses: TextList<'a, Entry>,
        /// v1alpha1 fields written beside `addresses`: (field name, path, value).
        beside: Vec<(&'static str, FieldPath, &'a Value)>,
        excluded: Option<TextList<'a, Entry>>,
        allocate_reserved: Written<'a, bool>,
    },
    /// v1alpha1 `subnet` + `start` + `end`, when `addresses` is empty.
    Subnet {
        subnet: Written<'a, Text<'a, Cidr>>,
        start: Written<'a, IpText<'a>>,
        end: Written<'a, IpText<'a>>,
    },
}

/// A pool entry: an IP, a range or a CIDR.
fn entry(text: &str) -> Result<Parsed<Entry>, AddrError> {
    parse_entry(text, Forms::ALL)
}

/// Whether `items` hold IPv4 and IPv6 entries.
pub fn families<'a>(items: impl IntoIterator<Item = &'a ListEntry<'a>>) -> (bool, bool) {
    items.into_iter().fold((false, false), |(v4, v6), i| {
        (
            v4 || i.entry.family == Family::V4,
            v6 || i.entry.family == Family::V6,
        )
    })
}

impl Spec<'_> {
    /// The prefix as written, when it is an integer; v1alpha1's subnet form reads 0 as unset (Go's
    /// zero value: "take the subnet's").
    pub(crate) fn raw_prefix(&self) -> Option<i64> {
        let p = self.prefix.get()?;
        match self.form {
            Form::Subnet { .. } if p == 0 => None,
            _ => Some(p),
        }
    }

    /// The subnet form's subnet: the one written, else the one of `prefix` around `start` (what
    /// the provider's defaulting did).
    pub(crate) fn subnet_form_cidr(&self) -> Option<(Family, IpRange, u8)> {
        let Form::Subnet { subnet, start, .. } = &self.form else {
            return None;
        };
        match subnet {
            Written::Ok(t) => t.value().map(|c| (c.family(), c.network, c.prefix)),
            // A subnet of the wrong type is read as none: `start` and `prefix` may still say.
            Written::Wrong(_) | Written::Absent => {
                let s = start.ok()?.value()?;
                let p = read::in_family(self.raw_prefix()?, Some(s.family))?;
                Some((s.family, subnet_of(s, p), p))
            }
        }
    }
}

/// Decodes the spec of an in-cluster pool of either kind and either version.
pub fn parse(obj: &Value) -> Spec<'_> {
    let v1alpha1 = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| v.ends_with("/v1alpha1"));
    let addresses_given = read::get(obj, fields::ADDRESSES)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let subnet_fields = [
        ("subnet", fields::SUBNET),
        ("start", fields::START),
        ("end", fields::END),
    ];
    let form = if v1alpha1
        && !addresses_given
        && subnet_fields
            .iter()
            .any(|(_, p)| read::get(obj, *p).is_some())
    {
        Form::Subnet {
            subnet: written::text(obj, fields::SUBNET, parse_cidr),
            start: written::ip(obj, fields::START),
            end: written::ip(obj, fields::END),
        }
    } else {
        Form::List {
            addresses: TextList::read(obj, fields::ADDRESSES, entry),
            beside: if v1alpha1 {
                subnet_fields
                    .iter()
                    .filter_map(|&(key, path)| Some((key, path, read::get(obj, path)?)))
                    .collect()
            } else {
                Vec::new()
            },
            // v1alpha1 has neither field: the API server prunes them, so they mean nothing there.
            excluded: (!v1alpha1).then(|| TextList::read(obj, fields::EXCLUDED_ADDRESSES, entry)),
            allocate_reserved: if v1alpha1 {
                Written::Absent
            } else {
                written::boolean(obj, fields::ALLOCATE_RESERVED)
            },
        }
    };
    let prefix_value = read::get(obj, fields::PREFIX);
    Spec {
        v1alpha1,
        form,
        gateway: written::ip(obj, fields::GATEWAY),
        prefix: written::integer_of(prefix_value),
        prefix_value,
        reuse_grace: read::get(obj, fields::REUSE_GRACE)
            .and_then(Value::as_u64)
            .filter(|s| *s <= i32::MAX as u64)
            .map(std::time::Duration::from_secs),
    }
}

/// Reads an in-cluster pool of either kind and either version (findings are the rules').
pub(crate) fn read(kind: Kind, obj: &Value) -> PoolReading {
    read_spec(kind, obj).1
}

/// The spec as decoded and the pool's reading, which holds no findings: the rules
/// (`rules::in_cluster`) judge the spec.
pub fn read_spec(kind: Kind, obj: &Value) -> (Spec<'_>, PoolReading) {
    let spec = parse(obj);
    let meta = Meta::read(obj);
    let reading = match &spec.form {
        Form::List {
            addresses,
            excluded,
            allocate_reserved,
            ..
        } => list_reading(
            kind,
            &meta,
            &spec,
            addresses,
            excluded.as_ref(),
            allocate_reserved.get().unwrap_or(false),
        ),
        Form::Subnet { start, end, .. } => subnet_reading(kind, &meta, &spec, start, end),
    };
    (spec, reading)
}

fn list_reading(
    kind: Kind,
    meta: &Meta,
    spec: &Spec,
    addresses: &TextList<Entry>,
    excluded: Option<&TextList<Entry>>,
    allocate_reserved: bool,
) -> PoolReading {
    let items = addresses.entries();
    let excluded_items = excluded.map(TextList::entries).unwrap_or_default();
    // A mixed pool is read in the family of its first entry, so the index still holds something.
    let family = items.first().map(|i| i.entry.family);
    let prefix = spec.prefix.get().and_then(|p| read::in_family(p, family));
    let fam = family.unwrap_or(Family::V4);
    let declared = set_of(fam, &items);
    let excluded_set = set_of(fam, &excluded_items);
    let subnet = pool_subnet(&declared, prefix);
    let gateway = spec.gateway.ok().and_then(Text::value);
    let alloc = allocatable(
        &declared,
        &excluded_set,
        gateway,
        subnet,
        prefix,
        allocate_reserved,
    );
    let entries = pool_entries(fam, &items);
    let mut proj = projection(kind, meta, family, alloc, gateway, prefix);
    proj.reuse_grace = spec.reuse_grace;
    PoolReading {
        proj,
        declared,
        excluded: excluded_set,
        subnet,
        entries,
        declared_path: fields::ADDRESSES,
        errors: Vec::new(),
        warnings: Vec::new(),
    }
}

impl Spec<'_> {
    /// The field the subnet form's addresses come from, and its text: `spec.subnet`, or
    /// `spec.start` when the subnet is made of `start` and `prefix`.
    pub(crate) fn subnet_source(&self) -> (FieldPath, &str) {
        let Form::Subnet { subnet, start, .. } = &self.form else {
            return (fields::ADDRESSES, "");
        };
        match subnet {
            Written::Ok(t) => (fields::SUBNET, t.text),
            _ if start.ok().and_then(Text::value).is_some() && self.raw_prefix().is_some() => {
                (fields::START, start.ok().map_or("", |t| t.text))
            }
            _ => (fields::SUBNET, ""),
        }
    }
}

/// Why a v1alpha1 `start` or `end` is not used as a bound of the subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OffBound {
    OtherFamily,
    OutsideSubnet,
}

/// A v1alpha1 `start` or `end`, as a bound of `subnet` in `family`.
pub(crate) fn subnet_bound(ip: Ip, family: Family, subnet: IpRange) -> Result<u128, OffBound> {
    if ip.family != family {
        Err(OffBound::OtherFamily)
    } else if !subnet.contains(ip.value) {
        Err(OffBound::OutsideSubnet)
    } else {
        Ok(ip.value)
    }
}

/// v1alpha1 `subnet` (+ `start`, `end`): start defaults to network+1, end to the last address
/// but one for IPv4 (the broadcast) and to the last address for IPv6.
fn subnet_reading(
    kind: Kind,
    meta: &Meta,
    spec: &Spec,
    start: &Written<IpText>,
    end: &Written<IpText>,
) -> PoolReading {
    let (entry_path, entry_text) = spec.subnet_source();
    let Some((family, subnet, subnet_prefix)) = spec.subnet_form_cidr() else {
        return PoolReading {
            declared_path: entry_path,
            ..PoolReading::empty(kind, meta)
        };
    };
    let bound = |w: &Written<IpText>| subnet_bound(w.ok()?.value()?, family, subnet).ok();
    let first = bound(start).unwrap_or(subnet.start.saturating_add(1));
    let last = bound(end).unwrap_or(match family {
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
    let gateway = spec.gateway.ok().and_then(Text::value);
    let alloc = allocatable(&declared, &excluded, gateway, Some(subnet), prefix, false);
    let entries = vec![PoolEntry {
        path: entry_path.to_string(),
        text: entry_text.to_string(),
        set: declared.clone(),
    }];
    PoolReading {
        proj: projection(kind, meta, Some(family), alloc, gateway, prefix),
        declared,
        excluded,
        subnet: Some(subnet),
        entries,
        declared_path: entry_path,
        errors: Vec::new(),
        warnings: Vec::new(),
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

    #[test]
    fn v1alpha1_subnet_defaults_follow_spec_table() {
        let r = read(
            Kind::InClusterIPPool,
            &pool(
                "v1alpha1",
                json!({"subnet": "10.0.0.0/24", "gateway": "10.0.0.1"}),
            ),
        );
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
            "{}/../../tests/fixtures/reviews/v1.36/inclusterippool-create-v1alpha1.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let review: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let r = read(Kind::InClusterIPPool, &review["request"]["object"]);
        assert_eq!(r.proj.allocatable.to_string(), "10.20.0.10-10.20.0.20");
        assert_eq!(r.declared_path, fields::SUBNET);
    }

    #[test]
    fn v1alpha1_bounds_off_the_subnet_fall_back_to_the_defaults() {
        let r = read(
            Kind::InClusterIPPool,
            &pool(
                "v1alpha1",
                json!({"subnet": "10.0.0.0/24", "start": "10.0.1.1", "end": "fd00::1"}),
            ),
        );
        assert_eq!(r.declared.to_string(), "10.0.0.1-10.0.0.254");
    }

    #[test]
    fn a_long_bad_list_is_read_up_to_its_limit() {
        let bad: Vec<Value> = (0..crate::model::read::LIST_PROBLEMS + 5)
            .map(|_| json!("x"))
            .collect();
        let obj = pool("v1alpha2", json!({"addresses": bad}));
        let spec = parse(&obj);
        let Form::List { addresses, .. } = &spec.form else {
            panic!("list form")
        };
        assert_eq!(addresses.items.len(), crate::model::read::LIST_PROBLEMS);
        assert_eq!(addresses.len, crate::model::read::LIST_PROBLEMS + 5);
    }
}
