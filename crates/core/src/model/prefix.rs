//! Reader for `InClusterPrefixPool` and `GlobalInClusterPrefixPool` (`ipam.cluster.x-k8s.io`
//! v1alpha2): IPv6 pools that hand out whole sub-prefixes of `spec.allocationPrefixLength`
//! (default 64) from `spec.prefixes`, less any sub-prefix an entry of `spec.excludedPrefixes`
//! touches. Judged by `rules::prefix_pool` (PP1–PP6): [`read_spec`] decodes the spec into a
//! typed [`Spec`] and reduces it to the pool's reading, judging nothing.
//!
//! The allocatable set is the union of the sub-prefixes the provider could hand out, so overlap
//! (P10), held addresses (P8) and usage read these pools as they read every other pool: a
//! sub-prefix that an exclusion only partly covers is not allocatable and not in the set. The
//! gateway is informational (the provider copies it into every IPAddress) and blocks nothing.

use serde_json::Value;

use crate::address::{
    parse_cidr, parse_entry, AddrError, AddrSet, Cidr, Entry, Family, Forms, Parsed,
};
use crate::kinds::Kind;
use crate::model::paths::prefix_pool as fields;
use crate::model::pool::{projection, PoolEntry, PoolReading, TextList};
use crate::model::written::{self, IpText, Text, Written};
use crate::model::{read, Meta};

/// What the provider uses when `allocationPrefixLength` is absent (its CRD default as well).
pub(crate) const DEFAULT_ALLOCATION_PREFIX_LENGTH: u8 = 64;

/// `spec.allocationPrefixLength` as the provider reads it: absent means the default. Returns the
/// raw value too, for messages. A wrong type is None here (the reader reports it).
pub(crate) fn allocation_length(obj: &Value) -> Option<i64> {
    match read::get(obj, fields::ALLOCATION_PREFIX_LENGTH) {
        None => Some(i64::from(DEFAULT_ALLOCATION_PREFIX_LENGTH)),
        Some(v) => v.as_i64(),
    }
}

/// A prefix pool's spec as written, each field decoded once.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    pub length: Written<'a, i64>,
    pub prefixes: TextList<'a, Cidr>,
    pub excluded: TextList<'a, Entry>,
    pub gateway: Written<'a, IpText<'a>>,
}

impl Spec<'_> {
    /// The length of every sub-prefix handed out: the default when absent, None when it is of
    /// the wrong type or outside 1..=128.
    pub fn length(&self) -> Option<u8> {
        match self.length {
            Written::Absent => Some(DEFAULT_ALLOCATION_PREFIX_LENGTH),
            Written::Wrong(_) => None,
            Written::Ok(n) => u8::try_from(n).ok().filter(|n| (1..=128).contains(n)),
        }
    }

    /// The `spec.prefixes` entries the pool declares: the IPv6 CIDRs, with their paths and
    /// texts (a CIDR with host bits declares its network).
    pub fn declared(&self) -> impl Iterator<Item = (&str, &str, Cidr)> + '_ {
        self.prefixes
            .parsed()
            .filter(|(_, _, c)| c.family() == Family::V6)
    }

    /// The IPv6 gateway, when there is one.
    pub(crate) fn gateway_v6(&self) -> Option<crate::address::Ip> {
        self.gateway
            .ok()
            .and_then(Text::value)
            .filter(|gw| gw.family == Family::V6)
    }
}

fn cidr(text: &str) -> Result<Parsed<Cidr>, AddrError> {
    parse_cidr(text)
}

fn entry(text: &str) -> Result<Parsed<Entry>, AddrError> {
    parse_entry(text, Forms::ALL)
}

/// Decodes the spec of a prefix pool of either kind.
pub fn parse(obj: &Value) -> Spec<'_> {
    Spec {
        length: written::integer(obj, fields::ALLOCATION_PREFIX_LENGTH),
        prefixes: TextList::read(obj, fields::PREFIXES, cidr),
        excluded: TextList::read(obj, fields::EXCLUDED_PREFIXES, entry),
        gateway: written::ip(obj, fields::GATEWAY),
    }
}

/// Reads a prefix pool of either kind (findings are the rules').
pub(crate) fn read(kind: Kind, obj: &Value) -> PoolReading {
    read_spec(kind, obj).1
}

/// The spec as decoded and the pool's reading, which holds no findings: the rules
/// (`rules::prefix_pool`) judge the spec.
pub fn read_spec(kind: Kind, obj: &Value) -> (Spec<'_>, PoolReading) {
    let spec = parse(obj);
    let meta = Meta::read(obj);
    let length = spec.length();
    let declared_items: Vec<(&str, &str, Cidr)> = spec.declared().collect();
    let declared = AddrSet::from_ranges(Family::V6, declared_items.iter().map(|d| d.2.network));
    let mut excluded = AddrSet::empty(Family::V6);
    for (_, _, e) in spec.excluded.parsed() {
        if e.family == Family::V6 {
            excluded = excluded.union(&e.to_set());
        }
    }
    let free = declared.difference(&excluded);
    // A pool whose length is wrong is read as handing out every address it declares, so the
    // index still sees everything it could overlap.
    let allocatable = match length {
        Some(len) => free.whole_blocks(len),
        None => free,
    };
    let family = (!declared_items.is_empty()).then_some(Family::V6);
    let entries = declared_items
        .iter()
        .map(|(path, text, c)| PoolEntry {
            path: path.to_string(),
            text: text.to_string(),
            set: AddrSet::from_range(Family::V6, c.network),
        })
        .collect();
    let reading = PoolReading {
        proj: projection(kind, &meta, family, allocatable, spec.gateway_v6(), length),
        declared,
        excluded,
        subnet: None,
        entries,
        declared_path: fields::PREFIXES,
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    (spec, reading)
}
