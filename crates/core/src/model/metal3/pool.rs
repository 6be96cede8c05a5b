//! A Metal3 `IPPool` as a whole: its spec as written ([`Spec`]) and the pool's reading: one
//! family across its entries, what is allocatable, the pool-level prefix and gateway. Nothing
//! here judges; `rules::metal3_pool` does (MP1–MP3, MP5), from the same [`Layout`].

use serde_json::Value;

use super::entry::{prefix_len, DnsServers, EntrySpec};
use crate::address::{parse_ip, subnet_of, AddrSet, Family, Ip, IpRange};
use crate::kinds::Kind;
use crate::model::paths::{self, metal3 as fields};
use crate::model::pool::{allocatable, pool_subnet, projection, PoolEntry, PoolReading};
use crate::model::read::LIST_PROBLEMS;
use crate::model::written::{self, IpText, Text, Written};
use crate::model::Meta;

/// A Metal3 pool's spec as written, each field decoded once.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    pub spec: Written<'a, &'a Value>,
    pub pools: Written<'a, &'a [Value]>,
    /// The entries read, in order. Reading stops after `LIST_PROBLEMS` entries the rules will
    /// surely find wrong: a list of 750k broken entries is not read to its end.
    pub entries: Vec<EntrySpec<'a>>,
    /// How many entries `spec.pools` holds.
    pub pools_len: usize,
    /// The family of the first entry that has one: a mixed pool is read in it.
    pub family: Option<Family>,
    pub prefix: Written<'a, i64>,
    pub prefix_value: Option<&'a Value>,
    pub gateway: Written<'a, IpText<'a>>,
    pub dns_servers: DnsServers<'a>,
    /// `allocationStrategy: random`.
    pub random: bool,
    pub pre_allocations: PreAllocations<'a>,
}

/// `spec.preAllocations` (claim name → IP) as written, in key order (serde_json's map is
/// ordered).
#[derive(Debug, Clone)]
pub struct PreAllocations<'a> {
    pub map: Written<'a, &'a Value>,
    pub items: Vec<(&'a str, Written<'a, IpText<'a>>)>,
}

impl Spec<'_> {
    /// The pool-level prefix when set and within the pool's family.
    pub fn prefix_len(&self) -> Option<u8> {
        prefix_len(&self.prefix, self.family)
    }
}

/// Decodes a Metal3 pool's spec.
pub fn parse(obj: &Value) -> Spec<'_> {
    let pools = written::list(obj, fields::POOLS);
    let all = pools.get().unwrap_or_default();
    let mut entries = Vec::new();
    let mut flawed = 0;
    for (i, v) in all.iter().enumerate() {
        if flawed >= LIST_PROBLEMS {
            break;
        }
        let e = EntrySpec::read(i, v);
        flawed += usize::from(e.flawed());
        entries.push(e);
    }
    let family = entries
        .iter()
        .find_map(|e| e.fields.as_ref().ok()?.walk.family);
    let map = written::object(obj, fields::PRE_ALLOCATIONS);
    let items = match map.get() {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(claim, v)| (claim.as_str(), written::item(v, parse_ip)))
            .collect(),
        _ => Vec::new(),
    };
    let prefix_value = fields::PREFIX.get(obj);
    Spec {
        spec: written::object(obj, paths::SPEC),
        pools,
        entries,
        pools_len: all.len(),
        family,
        prefix: written::integer_of(prefix_value),
        prefix_value,
        gateway: written::ip(obj, fields::GATEWAY),
        dns_servers: DnsServers::read(obj, fields::DNS_SERVERS),
        random: written::string(obj, fields::ALLOCATION_STRATEGY).get() == Some("random"),
        pre_allocations: PreAllocations { map, items },
    }
}

/// Where each entry that hands out addresses sits in the pool's family.
#[derive(Debug, Clone)]
pub struct Placed {
    /// Index into [`Spec::entries`].
    pub entry: usize,
    pub range: IpRange,
    /// The on-link network of the addresses the entry hands out, and its prefix: the entry's
    /// prefix (else the pool's) around its start, else the entry's subnet.
    pub network: Option<(IpRange, u8)>,
    /// The gateway the entry's addresses use (the entry's, else the pool's), in the pool's
    /// family.
    pub gateway: Option<Ip>,
    /// What of `range` is allocatable.
    pub allocatable: AddrSet,
    /// Addresses the provider walks that are not allocatable, and why: the gateway,
    /// the network address, the broadcast address.
    pub withheld: Vec<(Ip, &'static str)>,
}

/// The pool laid out in its family: what the reading is made of, and what the rules explain.
#[derive(Debug, Clone)]
pub struct Layout {
    pub family: Family,
    pub placed: Vec<Placed>,
}

/// Lays the entries out: an entry of another family than the pool's is left out (a mixed pool
/// is read in its first entry's family, as the in-cluster reader does).
pub fn layout(spec: &Spec) -> Layout {
    let fam = spec.family.unwrap_or(Family::V4);
    let pool_prefix = spec.prefix_len();
    let pool_gateway = spec.gateway.ok().and_then(Text::value);
    let mut placed = Vec::new();
    for (n, e) in spec.entries.iter().enumerate() {
        let Ok(f) = &e.fields else { continue };
        let Some(range) = f.walk.range.filter(|_| f.walk.family == spec.family) else {
            continue;
        };
        let prefix = f.prefix_len().or(pool_prefix);
        let gateway = f
            .gateway
            .ok()
            .and_then(Text::value)
            .or(pool_gateway)
            .filter(|g| g.family == fam);
        let network = match prefix {
            Some(p) => Some((subnet_of(Ip::new(fam, range.start), p), p)),
            None => f.walk.subnet.map(|c| (c.network, c.prefix)),
        };
        let set = AddrSet::from_range(fam, range);
        let allocatable = entry_allocatable(&set, gateway, network);
        let mut withheld = Vec::new();
        for r in set.difference(&allocatable).ranges() {
            for v in r.start..=r.end {
                let ip = Ip::new(fam, v);
                let reason = if Some(ip) == gateway {
                    "the gateway"
                } else if network.is_some_and(|(n, _)| n.start == v) {
                    "the network address"
                } else {
                    "the broadcast address"
                };
                withheld.push((ip, reason));
            }
        }
        placed.push(Placed {
            entry: n,
            range,
            network,
            gateway,
            allocatable,
            withheld,
        });
    }
    Layout {
        family: fam,
        placed,
    }
}

fn entry_allocatable(
    set: &AddrSet,
    gateway: Option<Ip>,
    network: Option<(IpRange, u8)>,
) -> AddrSet {
    let fam = set.family();
    allocatable(
        set,
        &AddrSet::empty(fam),
        gateway,
        network.map(|(n, _)| n),
        network.map(|(_, p)| p),
        false,
    )
}

/// Reads a Metal3 `IPPool` (findings are the rules').
pub(crate) fn read_pool(obj: &Value) -> PoolReading {
    read_spec(obj).2
}

/// The spec as decoded, its layout, and the pool's reading, which holds no findings.
pub fn read_spec(obj: &Value) -> (Spec<'_>, Layout, PoolReading) {
    let spec = parse(obj);
    let layout = layout(&spec);
    let meta = Meta::read(obj);
    let fam = layout.family;
    let mut declared = AddrSet::empty(fam);
    let mut alloc = AddrSet::empty(fam);
    let mut entries = Vec::new();
    for p in &layout.placed {
        let set = AddrSet::from_range(fam, p.range);
        declared = declared.union(&set);
        alloc = alloc.union(&p.allocatable);
        let e = &spec.entries[p.entry];
        entries.push(PoolEntry {
            path: e.path.clone(),
            text: e
                .fields
                .as_ref()
                .map(|f| f.walk.text.clone())
                .unwrap_or_default(),
            set,
        });
    }
    let pool_prefix = spec.prefix_len();
    let fields_of = || spec.entries.iter().filter_map(|e| e.fields.as_ref().ok());
    let prefix = pool_prefix.or_else(|| fields_of().find_map(|f| f.prefix_len()));
    let gateway = spec
        .gateway
        .ok()
        .and_then(Text::value)
        .or_else(|| fields_of().find_map(|f| f.gateway.ok().and_then(Text::value)))
        .filter(|g| g.family == fam);
    let reading = PoolReading {
        proj: projection(
            Kind::Metal3IPPool,
            &meta,
            spec.family,
            alloc,
            gateway,
            prefix,
        ),
        subnet: pool_subnet(&declared, pool_prefix),
        declared,
        excluded: AddrSet::empty(fam),
        entries,
        declared_path: fields::POOLS,
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    (spec, layout, reading)
}
