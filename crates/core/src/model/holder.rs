//! Objects that hold addresses outside every pool, read into one projection the index keeps
//! per address space: Spiderpool's `SpiderReservedIP` (addresses Spiderpool never hands out,
//! RI1-RI6) and the static `spec.network.devices[].ipAddrs` of CAPV's `VSphereMachine` (SA1-SA3).
//! Both belong to the address space of their object (annotation `ipam-guard.io/address-space`).

use std::sync::Arc;

use serde_json::Value;

use crate::address::{parse_cidr, parse_entry, AddrError, AddrSet, Entry, Family, Forms, Parsed};
use crate::kinds::Kind;
use crate::model::paths::{capv, reserved_ip as fields};
use crate::model::pool::TextList;
use crate::model::written::{self, Written};
use crate::model::{read, Meta, ObjKey};

/// What the index keeps of an object holding addresses outside pools.
#[derive(Debug, Clone, PartialEq)]
pub struct HolderProj {
    pub key: ObjKey,
    /// The address space its addresses belong to.
    pub space: Arc<str>,
    /// What it holds, in the order written: ranges of a ReservedIP (of its family), single
    /// addresses of a machine (either family).
    pub held: Vec<Entry>,
}

impl HolderProj {
    /// What it holds of `family`, as one set.
    pub fn set(&self, family: Family) -> AddrSet {
        AddrSet::from_ranges(
            family,
            self.held
                .iter()
                .filter(|e| e.family == family)
                .map(|e| e.range),
        )
    }

    /// Whether it is a SpiderReservedIP (RI4, RI5) rather than a machine's static addresses
    /// (SA1, SA2).
    pub(crate) fn is_reserved(&self) -> bool {
        self.key.kind == Kind::SpiderReservedIP
    }
}

// === SpiderReservedIP ===

/// A `SpiderReservedIP`'s spec as written, each field decoded once.
#[derive(Debug, Clone)]
pub(crate) struct ReservedSpec<'a> {
    pub ip_version: Written<'a, i64>,
    /// `spec.ipVersion` as written, for a cause's value.
    pub ip_version_value: Option<&'a Value>,
    pub ips: TextList<'a, Entry>,
}

/// An IP or a range `a-b` (Spiderpool takes no CIDR in a ReservedIP).
fn ip_or_range(text: &str) -> Result<Parsed<Entry>, AddrError> {
    parse_entry(text, Forms::IP_OR_RANGE)
}

impl ReservedSpec<'_> {
    /// The family `ipVersion` names, when it is 4 or 6.
    pub(crate) fn version_family(&self) -> Option<Family> {
        match self.ip_version.get() {
            Some(4) => Some(Family::V4),
            Some(6) => Some(Family::V6),
            _ => None,
        }
    }

    /// The ReservedIP's family: `ipVersion`'s, else (when it is absent) the first entry's, as
    /// Spiderpool's mutating webhook fills it in.
    pub fn family(&self) -> Option<Family> {
        match self.ip_version {
            Written::Absent => self.ips.parsed().next().map(|(_, _, e)| e.family),
            _ => self.version_family(),
        }
    }

    /// The entries of the ReservedIP's family that parse: what it reserves.
    pub fn reserved(&self) -> Vec<(&str, &str, Entry)> {
        let family = self.family();
        self.ips
            .parsed()
            .filter(|(_, _, e)| Some(e.family) == family)
            .collect()
    }
}

/// Decodes the spec of a `SpiderReservedIP`.
pub(crate) fn reserved_spec(obj: &Value) -> ReservedSpec<'_> {
    ReservedSpec {
        ip_version: written::integer(obj, fields::IP_VERSION),
        ip_version_value: read::get(obj, fields::IP_VERSION),
        ips: TextList::read(obj, fields::IPS, ip_or_range),
    }
}

// === VSphereMachine ===

/// One static address of a machine: `spec.network.devices[i].ipAddrs[j]` in CIDR form; the
/// address is the part before `/`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StaticAddress<'a> {
    pub path: String,
    pub text: &'a str,
    pub entry: Entry,
}

/// The static addresses of a `VSphereMachine` that parse; CAPV's own webhook refuses the others.
pub(crate) fn static_addresses(obj: &Value) -> Vec<StaticAddress<'_>> {
    let devices = read::get(obj, capv::DEVICES)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, device) in devices.iter().enumerate() {
        let addrs = read::get(device, capv::IP_ADDRS)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (j, a) in addrs.iter().enumerate() {
            let Some(text) = a.as_str() else { continue };
            let Ok(c) = parse_cidr(text) else { continue };
            let ip = c.value.ip;
            out.push(StaticAddress {
                path: format!("{}[{j}]", capv::DEVICES.entry(i, capv::IP_ADDRS)),
                text,
                entry: Entry {
                    family: ip.family,
                    range: crate::address::IpRange::single(ip.value),
                    form: crate::address::EntryForm::Ip,
                },
            });
        }
    }
    out
}

/// What the index keeps of a `SpiderReservedIP` or a `VSphereMachine`.
pub fn project(obj: &Value, key: ObjKey) -> HolderProj {
    let held = match key.kind {
        Kind::SpiderReservedIP => reserved_spec(obj)
            .reserved()
            .into_iter()
            .map(|(_, _, e)| e)
            .collect(),
        _ => static_addresses(obj).into_iter().map(|s| s.entry).collect(),
    };
    HolderProj {
        space: Arc::from(Meta::read(obj).address_space()),
        key,
        held,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reserved_ip_holds_the_entries_of_its_family() {
        let obj = json!({"metadata": {"name": "r"}, "spec": {"ipVersion": 4,
            "ips": ["10.0.0.1", "10.0.0.5-10.0.0.9", "fd00::1", "x"]}});
        let h = project(&obj, ObjKey::new(Kind::SpiderReservedIP, None, "r"));
        assert_eq!(h.space.as_ref(), "default");
        assert_eq!(h.set(Family::V4).len(), 6);
        assert!(h.set(Family::V6).is_empty());
        // Without ipVersion the first entry decides, as Spiderpool's mutating webhook does.
        let obj = json!({"metadata": {"name": "r"}, "spec": {"ips": ["fd00::1", "10.0.0.1"]}});
        let h = project(&obj, ObjKey::new(Kind::SpiderReservedIP, None, "r"));
        assert_eq!(h.held.len(), 1);
        assert_eq!(h.held[0].family, Family::V6);
    }

    #[test]
    fn a_machine_holds_the_address_part_of_its_static_addresses() {
        let obj = json!({"metadata": {"name": "m", "namespace": "ns",
            "annotations": {"ipam-guard.io/address-space": "east"}},
            "spec": {"network": {"devices": [
                {"ipAddrs": ["10.0.0.5/24", 7, "bad"]},
                {"ipAddrs": ["fd00::5/64"]}]}}});
        let s = static_addresses(&obj);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].path, "spec.network.devices[0].ipAddrs[0]");
        assert_eq!(s[1].path, "spec.network.devices[1].ipAddrs[0]");
        let h = project(&obj, ObjKey::new(Kind::VSphereMachine, Some("ns"), "m"));
        assert_eq!(h.space.as_ref(), "east");
        assert_eq!(h.set(Family::V4).len(), 1);
        assert!(h
            .set(Family::V4)
            .contains(crate::address::Ip::new(Family::V4, 0x0a00_0005)));
    }
}
