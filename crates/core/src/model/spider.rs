//! Reader for Spiderpool's `SpiderIPPool` and `SpiderSubnet` (`spiderpool.spidernet.io` v2beta1,
//! cluster-scoped), judged by `rules::spider_spec` (S1–S4, S7 routes, S8 podAffinity), plus the
//! allocation record in `status` that S5 and S6 read. A SpiderSubnet's spec has the shape of a
//! SpiderIPPool's (without podAffinity): one reader and one set of spec rules serve both.
//!
//! [`read_spec`] decodes the spec once into a typed [`Spec`] and reduces it to the pool's
//! reading; it judges nothing. The reading keeps only the entries of `ips` and `excludeIPs` that
//! parse, are of the pool's family and lie inside its subnet ([`fits`]), and a gateway only when
//! it is of the pool's family: the rules explain each entry and gateway left out.
//!
//! Spiderpool keeps who holds which address in `status.allocatedIPs`, a JSON object serialised
//! into a *string* (`{"172.18.41.40":{"pod":"default/web-0",…}}`), so it is decoded here, once.
//!
//! The allocatable set is the one of every pool kind: `ips − excludeIPs − gateway − reserved`, the
//! reserved addresses being the subnet's network and IPv4 broadcast address (none for /31, /32,
//! /127, /128). A pod given either could not talk on the subnet, so `ips` that include them draw
//! a warning (S3) instead of being silently narrowed.

use std::borrow::Cow;

use serde_json::Value;

use crate::address::{
    parse_cidr, parse_entry, parse_ip, AddrError, AddrSet, Cidr, Entry, Family, Forms, Ip, IpRange,
    Parsed,
};
use crate::kinds::Kind;
use crate::model::paths::{selector, spider as fields};
use crate::model::pool::{
    allocatable, pool_entries, projection, set_of, ListEntry, PoolReading, TextList,
};
use crate::model::read::LIST_PROBLEMS;
use crate::model::written::{self, IpText, Text, Written};
use crate::model::{read, Meta, PoolProj};

/// A `SpiderIPPool`'s (or `SpiderSubnet`'s) spec as written, each field decoded once.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    pub subnet: Written<'a, Text<'a, Cidr>>,
    pub ip_version: Written<'a, i64>,
    /// `spec.ipVersion` as written, for a cause's value.
    pub ip_version_value: Option<&'a Value>,
    pub ips: TextList<'a, Entry>,
    pub exclude_ips: TextList<'a, Entry>,
    pub gateway: Written<'a, IpText<'a>>,
    /// `spec.routes`; each route is decoded when it is judged ([`Spec::routes`]), so a list of
    /// 750k bad routes is decoded no further than the rules read it.
    pub routes: Written<'a, &'a [Value]>,
    pub pod_affinity: Written<'a, Selector<'a>>,
    /// The pool carries [`OWNER_APPLICATION_LABEL`]: Spiderpool made it for one application.
    pub application_pool: bool,
}

/// Whether two declared subnets are the same subnet (the reading keeps canonical ones only
/// apart from the address written, which S1 judges).
pub(crate) fn same_subnet(a: &Cidr, b: &Cidr) -> bool {
    a.network == b.network && a.prefix == b.prefix
}

/// Whether `pool` is a SpiderIPPool carved from the SpiderSubnet `subnet`: in its address space
/// and declaring its very subnet. Such a pool lies inside it (S11) and does not overlap it (P10).
pub fn carved(pool: &PoolProj, subnet: &PoolProj) -> bool {
    pool.key.kind == Kind::SpiderIPPool
        && subnet.key.kind == Kind::SpiderSubnet
        && pool.space == subnet.space
        && match (pool.declared_subnet, subnet.declared_subnet) {
            (Some(a), Some(b)) => same_subnet(&a, &b),
            _ => false,
        }
}

/// Whether one of `a` and `b` is carved from the other ([`carved`]): P10 does not hold them
/// apart, a subnet being the container of its pools.
pub(crate) fn carved_pair(a: &PoolProj, b: &PoolProj) -> bool {
    carved(a, b) || carved(b, a)
}

/// An IP or a range: what `ips` and `excludeIPs` hold (Spiderpool takes no CIDR there).
fn entry(text: &str) -> Result<Parsed<Entry>, AddrError> {
    parse_entry(text, Forms::IP_OR_RANGE)
}

/// Why an entry that parses is not part of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misfit {
    OtherFamily,
    OutsideSubnet(Cidr),
}

/// Whether `entry` belongs to a pool of `family` and `subnet` (either unknown: anything goes).
pub fn fits(entry: &Entry, family: Option<Family>, subnet: Option<Cidr>) -> Result<(), Misfit> {
    if family.is_some_and(|f| f != entry.family) {
        return Err(Misfit::OtherFamily);
    }
    match subnet {
        Some(c) if !(c.network.start <= entry.range.start && entry.range.end <= c.network.end) => {
            Err(Misfit::OutsideSubnet(c))
        }
        _ => Ok(()),
    }
}

impl<'a> Spec<'a> {
    /// The subnet, when it is a CIDR (written in canonical form or not).
    pub fn subnet(&self) -> Option<Cidr> {
        self.subnet.ok().and_then(Text::value)
    }

    /// The family `ipVersion` names, when it is 4 or 6.
    pub(crate) fn version_family(&self) -> Option<Family> {
        match self.ip_version.get() {
            Some(4) => Some(Family::V4),
            Some(6) => Some(Family::V6),
            _ => None,
        }
    }

    /// The family the spec declares: the subnet's, else `ipVersion`'s. The entries are judged
    /// against it; the reading falls back to the first entry's when there is none.
    pub fn family(&self) -> Option<Family> {
        self.subnet().map(|c| c.family()).or(self.version_family())
    }

    /// The routes as written, each decoded on demand, in order.
    pub fn routes(&self) -> impl Iterator<Item = Route<'a>> + 'a {
        self.routes
            .get()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, v)| Route::read(i, v))
    }
}

/// The entries of `list` the pool holds: those that parse and [`fit`](fits) it. Past
/// `LIST_PROBLEMS` entries that do not, the rest of the list is not read (docs/robustness.md, O1), the
/// point where the rules stop judging it and say how many entries they left.
pub fn held<'s>(
    list: &'s TextList<'_, Entry>,
    family: Option<Family>,
    subnet: Option<Cidr>,
) -> Vec<ListEntry<'s>> {
    let mut out = Vec::new();
    let mut problems = 0;
    for (path, item) in &list.items {
        if problems >= LIST_PROBLEMS {
            break;
        }
        match item.ok().and_then(|t| Some((t.text, t.value()?))) {
            Some((text, entry)) if fits(&entry, family, subnet).is_ok() => out.push(ListEntry {
                path: Cow::Borrowed(path.as_str()),
                text,
                entry,
            }),
            _ => problems += 1,
        }
    }
    out
}

/// One entry of `spec.routes`.
#[derive(Debug, Clone)]
pub struct Route<'a> {
    /// `spec.routes[1]`.
    pub path: String,
    pub value: &'a Value,
    /// The route's `dst` and `gw`, when the route is an object.
    pub fields: Option<(Written<'a, Text<'a, Cidr>>, Written<'a, IpText<'a>>)>,
}

impl<'a> Route<'a> {
    fn read(i: usize, v: &'a Value) -> Self {
        Route {
            path: fields::ROUTES.index(i),
            value: v,
            fields: v.is_object().then(|| {
                (
                    written::text(v, fields::ROUTE_DST, parse_cidr),
                    written::ip(v, fields::ROUTE_GW),
                )
            }),
        }
    }
}

/// A label selector (`spec.podAffinity`) as written.
#[derive(Debug, Clone)]
pub struct Selector<'a> {
    pub value: &'a Value,
    /// `matchLabels`, read from the selector.
    pub labels: Written<'a, &'a Value>,
    /// `matchExpressions`, read from the selector; each decoded by [`Expression::read`].
    pub expressions: Written<'a, &'a [Value]>,
}

impl<'a> Selector<'a> {
    fn read(v: &'a Value) -> Self {
        Selector {
            value: v,
            labels: written::object(v, selector::MATCH_LABELS),
            expressions: written::list(v, selector::MATCH_EXPRESSIONS),
        }
    }

    /// `matchLabels` when it is a map.
    pub(crate) fn label_map(&self) -> Option<&'a serde_json::Map<String, Value>> {
        self.labels.get().and_then(Value::as_object)
    }

    /// `matchExpressions` when it is a list; empty otherwise.
    pub(crate) fn expression_list(&self) -> &'a [Value] {
        self.expressions.get().unwrap_or_default()
    }
}

/// One `matchExpressions` requirement; its fields when it is an object.
#[derive(Debug, Clone)]
pub(crate) struct Expression<'a> {
    pub key: Written<'a, &'a str>,
    pub operator: Written<'a, &'a str>,
    pub values: Written<'a, &'a [Value]>,
}

impl<'a> Expression<'a> {
    pub fn read(v: &'a Value) -> Option<Self> {
        v.is_object().then(|| Expression {
            key: written::string(v, selector::KEY),
            operator: written::string(v, selector::OPERATOR),
            values: written::list(v, selector::VALUES),
        })
    }
}

/// Decodes the spec of a `SpiderIPPool`.
pub fn parse(obj: &Value) -> Spec<'_> {
    Spec {
        subnet: written::text(obj, fields::SUBNET, parse_cidr),
        ip_version: written::integer(obj, fields::IP_VERSION),
        ip_version_value: read::get(obj, fields::IP_VERSION),
        ips: TextList::read(obj, fields::IPS, entry),
        exclude_ips: TextList::read(obj, fields::EXCLUDE_IPS, entry),
        gateway: written::ip(obj, fields::GATEWAY),
        routes: written::list(obj, fields::ROUTES),
        pod_affinity: match written::object(obj, fields::POD_AFFINITY) {
            Written::Absent => Written::Absent,
            Written::Wrong(w) => Written::Wrong(w),
            Written::Ok(v) => Written::Ok(Selector::read(v)),
        },
        application_pool: Meta::read(obj).label(OWNER_APPLICATION_LABEL).is_some(),
    }
}

/// Reads a `SpiderIPPool` or `SpiderSubnet` (`kind`; findings are the rules').
pub(crate) fn read(kind: Kind, obj: &Value) -> PoolReading {
    read_spec(kind, obj).1
}

/// The spec as decoded and the pool's reading, which holds no findings: the rules
/// (`rules::spider_spec`) judge the spec.
pub fn read_spec(kind: Kind, obj: &Value) -> (Spec<'_>, PoolReading) {
    let spec = parse(obj);
    let reading = reading(kind, obj, &spec);
    (spec, reading)
}

fn reading(kind: Kind, obj: &Value, spec: &Spec) -> PoolReading {
    let meta = Meta::read(obj);
    let subnet = spec.subnet();
    let family = spec.family();
    let ips = held(&spec.ips, family, subnet);
    let excluded_items = held(&spec.exclude_ips, family, subnet);
    // Without a subnet or ipVersion the first entry decides, so the index still holds something.
    let family = family.or(ips.first().map(|i| i.entry.family));
    let fam = family.unwrap_or(Family::V4);
    let declared = set_of(fam, &ips);
    let excluded = set_of(fam, &excluded_items);
    // A gateway of the other family is no gateway of this pool (S4 says so).
    let gateway = spec
        .gateway
        .ok()
        .and_then(Text::value)
        .filter(|gw| family.is_none_or(|f| f == gw.family));
    let prefix = subnet.map(|c| c.prefix);
    let network = subnet.map(|c| c.network);
    let alloc = allocatable(&declared, &excluded, gateway, network, prefix, false);
    let pool_entries = pool_entries(fam, &ips);
    let mut proj = projection(kind, &meta, family, alloc, gateway, prefix);
    proj.declared_subnet = subnet;
    proj.recorded = AddrSet::from_ranges(
        fam,
        allocation(obj)
            .ips
            .iter()
            .filter_map(|a| a.ip)
            .filter(|ip| ip.family == fam)
            .map(|ip| IpRange::single(ip.value)),
    );
    PoolReading {
        proj,
        declared,
        excluded,
        subnet: network,
        entries: pool_entries,
        declared_path: fields::IPS,
        errors: Vec::new(),
        warnings: Vec::new(),
    }
}

/// The label Spiderpool puts on a pool a SpiderSubnet created for one application; such a pool
/// selects that application's Pods with the keys Spiderpool derives and nothing else (S8).
pub(crate) const OWNER_APPLICATION_LABEL: &str = "ipam.spidernet.io/owner-application-name";

// === status ===

/// One key of `status.allocatedIPs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocatedIp {
    /// The key as written.
    pub key: String,
    /// The key as an address; None when it is not one.
    pub ip: Option<Ip>,
    /// `namespace/name` of the pod holding it, when recorded.
    pub pod: Option<String>,
}

impl AllocatedIp {
    /// `default/web-0 (172.18.41.40)`, or the bare key when no pod is recorded.
    pub(crate) fn holder_text(&self) -> String {
        match &self.pod {
            Some(pod) => format!("{pod} ({})", self.key),
            None => self.key.clone(),
        }
    }
}

/// What `status` says is handed out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allocation {
    /// `status.allocatedIPCount` when it is an integer.
    pub count: Option<i64>,
    /// The keys of `status.allocatedIPs`, in key order.
    pub ips: Vec<AllocatedIp>,
    /// `status.allocatedIPs` is present but not a JSON object (S6 counts it as held).
    pub unreadable: bool,
}

impl Allocation {
    /// Whether anything is held (S6).
    pub fn held(&self) -> bool {
        self.count.is_some_and(|c| c > 0) || !self.ips.is_empty() || self.unreadable
    }
}

/// Reads `status.allocatedIPCount` and `status.allocatedIPs`.
pub fn allocation(obj: &Value) -> Allocation {
    let count = read::get(obj, fields::ALLOCATED_IP_COUNT).and_then(Value::as_i64);
    let parsed: Option<Value> = match read::get(obj, fields::ALLOCATED_IPS) {
        None => {
            return Allocation {
                count,
                ..Allocation::default()
            }
        }
        Some(Value::String(s)) if s.trim().is_empty() => Some(Value::Object(Default::default())),
        Some(Value::String(s)) => serde_json::from_str(s).ok(),
        // A file written by hand may hold the map itself; read it the same way.
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => None,
    };
    let map = match parsed {
        Some(Value::Object(m)) => m,
        Some(Value::Null) => Default::default(),
        _ => {
            return Allocation {
                count,
                ips: Vec::new(),
                unreadable: true,
            }
        }
    };
    let ips = map
        .into_iter()
        .map(|(key, v)| AllocatedIp {
            ip: parse_ip(&key).ok().map(|p| p.value),
            pod: v.get("pod").and_then(Value::as_str).map(str::to_string),
            key,
        })
        .collect();
    Allocation {
        count,
        ips,
        unreadable: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_support::{fixture, spider_pool as pool};
    use serde_json::json;

    fn capture(name: &str) -> Value {
        fixture(name)
    }

    #[test]
    fn captures_read_their_allocatable_sets() {
        let review = capture("spiderippool-create.json");
        let r = read(Kind::SpiderIPPool, &review["request"]["object"]);
        assert_eq!(
            r.proj.allocatable.to_string(),
            "172.18.41.40-172.18.41.44, 172.18.41.46-172.18.41.50, 172.18.41.60"
        );
        assert_eq!(r.proj.prefix, Some(24));
        assert_eq!(r.proj.key.namespace, None);
        let review = capture("spiderippool-create-ipv6.json");
        let r = read(Kind::SpiderIPPool, &review["request"]["object"]);
        assert_eq!(
            r.proj.allocatable.to_string(),
            "fd00:172:18::100-fd00:172:18::14f, fd00:172:18::151-fd00:172:18::1ff"
        );
    }

    #[test]
    fn entries_off_the_subnet_are_not_held() {
        let r = read(
            Kind::SpiderIPPool,
            &pool(json!({"subnet": "10.0.0.0/24",
            "ips": ["10.0.0.10-10.0.0.5", "10.0.1.1", "fd00::1", "10.0.0.0/28", "10.0.0.20-10.0.0.30"],
            "excludeIPs": ["10.0.2.0"]})),
        );
        assert!(r.errors.is_empty() && r.warnings.is_empty());
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.20-10.0.0.30");
    }

    #[test]
    fn network_and_broadcast_are_not_allocatable() {
        let r = read(
            Kind::SpiderIPPool,
            &pool(json!({"subnet": "10.0.0.0/24", "ips": ["10.0.0.0-10.0.0.255"]})),
        );
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.1-10.0.0.254");
        // Point-to-point subnets use every address.
        let r = read(
            Kind::SpiderIPPool,
            &pool(json!({"subnet": "10.0.0.0/31", "ips": ["10.0.0.0-10.0.0.1"]})),
        );
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.0-10.0.0.1");
    }

    #[test]
    fn a_gateway_of_the_other_family_is_not_the_gateway() {
        let r = read(
            Kind::SpiderIPPool,
            &pool(
                json!({"subnet": "10.0.0.0/24", "ips": ["10.0.0.1-10.0.0.3"], "gateway": "fd00::1"}),
            ),
        );
        assert_eq!(r.proj.gateway, None);
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.1-10.0.0.3");
    }

    #[test]
    fn a_long_bad_list_is_held_up_to_its_limit() {
        // Entries off the subnet count as problems, like those that do not parse.
        let mut ips: Vec<Value> = (0..LIST_PROBLEMS).map(|_| json!("10.0.1.1")).collect();
        ips.push(json!("10.0.0.5"));
        let r = read(
            Kind::SpiderIPPool,
            &pool(json!({"subnet": "10.0.0.0/24", "ips": ips})),
        );
        assert!(r.declared.is_empty());
    }

    #[test]
    fn allocated_ips_is_a_json_string() {
        let review = capture("spiderippool-update-spec.json");
        let a = allocation(&review["request"]["oldObject"]);
        assert_eq!(a.count, Some(1));
        assert_eq!(a.ips.len(), 1);
        assert_eq!(a.ips[0].holder_text(), "default/web-0 (172.18.41.40)");
        assert!(a.held());
        let none = allocation(&json!({"status": {"allocatedIPCount": 0, "allocatedIPs": "{}"}}));
        assert!(!none.held());
        let broken = allocation(&json!({"status": {"allocatedIPs": "{not json"}}));
        assert!(broken.unreadable && broken.held());
        assert!(!allocation(&json!({})).held());
    }
}
