//! Reader for Spiderpool's `SpiderIPPool` (`spiderpool.spidernet.io` v2beta1, cluster-scoped):
//! SPEC §5 table and rules S1–S4, S7 (routes) and S8 (podAffinity), plus the allocation record in
//! `status` that S5 and S6 read.
//!
//! Spiderpool keeps who holds which address in `status.allocatedIPs`, a JSON object serialised
//! into a *string* (`{"172.18.41.40":{"pod":"default/web-0",…}}`), so it is decoded here, once.
//!
//! The allocatable set is SPEC §5's for every pool: `ips − excludeIPs − gateway − reserved`, the
//! reserved addresses being the subnet's network and IPv4 broadcast address (none for /31, /32,
//! /127, /128). A pod given either could not talk on the subnet, so `ips` that include them draw
//! a warning (S3) instead of being silently narrowed.

use serde_json::Value;

use crate::address::{
    parse_cidr, parse_entry, parse_ip, AddrSet, Cidr, Family, Forms, Ip, IpRange,
};
use crate::field::{FieldError, FieldPath, Warning};
use crate::kinds::Kind;
use crate::kube_version::KubeVersion;
use crate::model::paths::{selector, spider as fields};
use crate::model::pool::{
    allocatable, is_link_local_gateway, is_point_to_point, pool_entries, projection, set_of,
    ListEntry, PoolReading,
};
use crate::model::{read, Meta};
use crate::rule_id::RuleId;
use crate::schema::{label_key_problem, label_value_problem};

/// S3: a list of IP-or-range entries at `path`; those that parse, of the subnet's family and
/// inside it.
fn entries<'a>(
    obj: &'a Value,
    path: FieldPath,
    family: Option<Family>,
    subnet: Option<Cidr>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) -> Vec<ListEntry<'a>> {
    let list = read::keep(read::array(RuleId::S3, obj, path), errors).unwrap_or_default();
    let mut out = Vec::new();
    let before = errors.len();
    for (i, v) in list.iter().enumerate() {
        if read::list_full(RuleId::S3, path, errors, before, list.len() - i) {
            break;
        }
        let item = path.index(i);
        let Some(text) = read::item_text(RuleId::S3, v, &item, errors) else {
            continue;
        };
        let parse = parse_entry(text, Forms::IP_OR_RANGE);
        let Some(entry) = read::parsed(RuleId::S3, &item, text, parse, errors, warnings) else {
            continue;
        };
        if family.is_some_and(|f| f != entry.family) {
            let detail = match subnet {
                Some(c) => format!("IP family does not match spec.subnet {c}"),
                None => "IP family does not match spec.ipVersion".to_string(),
            };
            errors.push(FieldError::invalid(RuleId::S3, item, text, detail));
            continue;
        }
        if let Some(c) = subnet {
            if !(c.network.start <= entry.range.start && entry.range.end <= c.network.end) {
                errors.push(FieldError::invalid(
                    RuleId::S3,
                    item,
                    text,
                    format!("must be inside spec.subnet {c}"),
                ));
                continue;
            }
        }
        out.push(ListEntry {
            path: item.into(),
            text,
            entry,
        });
    }
    out
}

/// Reads a `SpiderIPPool`.
pub(crate) fn read_pool(obj: &Value) -> PoolReading {
    let kind = Kind::SpiderIPPool;
    let meta = Meta::read(obj);
    let mut errors = Vec::new();
    let mut warnings = Vec::new();

    // S1: the subnet, in the canonical form Spiderpool itself insists on.
    let subnet_text = match read::string(RuleId::S1, obj, fields::SUBNET) {
        Ok(Some(t)) => Some(t),
        Ok(None) => {
            errors.push(FieldError::required(RuleId::S1, fields::SUBNET, ""));
            None
        }
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let subnet = subnet_text.and_then(|t| match parse_cidr(t) {
        Ok(p) => {
            let canonical = p.value.to_string();
            if canonical != t {
                errors.push(FieldError::invalid(
                    RuleId::S1,
                    fields::SUBNET,
                    t,
                    format!("unformatted subnet {t}, please change it to {canonical}"),
                ));
            }
            Some(p.value)
        }
        Err(e) => {
            errors.push(FieldError::invalid(
                RuleId::S1,
                fields::SUBNET,
                t,
                e.to_string(),
            ));
            None
        }
    });

    // S2: ipVersion names the subnet's family.
    let version_family = match read::integer(RuleId::S2, obj, fields::IP_VERSION) {
        Ok(None) => None,
        Ok(Some(4)) => Some(Family::V4),
        Ok(Some(6)) => Some(Family::V6),
        Ok(Some(v)) => {
            errors.push(FieldError::invalid(
                RuleId::S2,
                fields::IP_VERSION,
                v,
                "must be 4 or 6",
            ));
            None
        }
        Err(e) => {
            errors.push(e);
            None
        }
    };
    if let (Some(c), Some(f)) = (subnet, version_family) {
        if c.family() != f {
            let v = read::get(obj, fields::IP_VERSION)
                .cloned()
                .unwrap_or(Value::Null);
            errors.push(FieldError::invalid(
                RuleId::S2,
                fields::IP_VERSION,
                v,
                format!("does not match spec.subnet {c}, an {} subnet", c.family()),
            ));
        }
    }
    let family = subnet.map(|c| c.family()).or(version_family);

    let ips = entries(obj, fields::IPS, family, subnet, &mut errors, &mut warnings);
    let excluded_items = entries(
        obj,
        fields::EXCLUDE_IPS,
        family,
        subnet,
        &mut errors,
        &mut warnings,
    );
    // Without a subnet or ipVersion the first entry decides, so the index still holds something.
    let family = family.or(ips.first().map(|i| i.entry.family));
    let fam = family.unwrap_or(Family::V4);
    let declared = set_of(fam, &ips);
    let excluded = set_of(fam, &excluded_items);
    let usable = declared.difference(&excluded);

    // S4: the gateway sits inside the subnet and is never handed out.
    let mut gateway = None;
    let gw = read::ip(RuleId::S4, obj, fields::GATEWAY, &mut errors, &mut warnings);
    if let (Some(text), Some(gw)) = gw {
        if family.is_some_and(|f| f != gw.family) {
            errors.push(FieldError::invalid(
                RuleId::S4,
                fields::GATEWAY,
                text,
                "provided gateway and addresses are of mixed IP families",
            ));
        } else {
            gateway = Some(gw);
            if let Some(c) = subnet {
                if !is_link_local_gateway(gw) && !c.network.contains(gw.value) {
                    errors.push(FieldError::invalid(
                        RuleId::S4,
                        fields::GATEWAY,
                        text,
                        format!("must be inside spec.subnet {c}"),
                    ));
                }
            }
            if usable.contains(gw) {
                errors.push(FieldError::invalid(
                    RuleId::S4,
                    fields::GATEWAY,
                    text,
                    "must not be allocatable: it is in spec.ips and not in spec.excludeIPs",
                ));
            }
        }
    }

    let prefix = subnet.map(|c| c.prefix);
    let network = subnet.map(|c| c.network);
    let alloc = allocatable(&declared, &excluded, gateway, network, prefix, false);
    // Addresses a pod should never get; Spiderpool does not skip them by itself.
    if let Some(c) = subnet.filter(|c| !is_point_to_point(c.family(), c.prefix)) {
        let mut reserved = vec![(c.network.start, "network")];
        if c.family() == Family::V4 {
            reserved.push((c.network.end, "broadcast"));
        }
        for (v, what) in reserved {
            if usable.contains(Ip::new(fam, v)) {
                warnings.push(Warning::new(
                    RuleId::S3,
                    fields::IPS,
                    format!(
                        "includes {}, the {what} address of spec.subnet; list it in spec.excludeIPs",
                        Ip::new(fam, v)
                    ),
                ));
            }
        }
    }

    routes(obj, family, subnet, &mut errors, &mut warnings);
    pod_affinity(obj, &meta, &mut errors);

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
        errors,
        warnings,
    }
}

// === routes ===

/// S7: `spec.routes`, as Spiderpool's webhook reads them: no default route (that is what
/// `spec.gateway` is for), no destination twice, each destination a CIDR of the pool's family,
/// each `gw` an IP inside `spec.subnet`. Destinations are compared as networks, so
/// `192.168.40.1/24` repeats `192.168.40.0/24`.
fn routes(
    obj: &Value,
    family: Option<Family>,
    subnet: Option<Cidr>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    let list = read::keep(read::array(RuleId::S7, obj, fields::ROUTES), errors).unwrap_or_default();
    let mut seen: Vec<(Cidr, usize)> = Vec::new();
    let before = errors.len();
    for (i, route) in list.iter().enumerate() {
        if read::list_full(RuleId::S7, fields::ROUTES, errors, before, list.len() - i) {
            break;
        }
        let path = fields::ROUTES.index(i);
        if !route.is_object() {
            errors.push(FieldError::invalid(
                RuleId::S7,
                path,
                Value::String(route.to_string()),
                "must be an object",
            ));
            continue;
        }
        let dst_path = fields::ROUTES.entry(i, fields::ROUTE_DST);
        match read::keep(
            read::at(
                read::string(RuleId::S7, route, fields::ROUTE_DST),
                &dst_path,
            ),
            errors,
        ) {
            None => {
                if !errors.iter().any(|e| e.path == dst_path) {
                    errors.push(FieldError::required(RuleId::S7, dst_path, ""));
                }
            }
            Some(text) => {
                let parsed = parse_cidr(text);
                if let Some(dst) =
                    read::parsed(RuleId::S7, &dst_path, text, parsed, errors, warnings)
                {
                    if family.is_some_and(|f| f != dst.family()) {
                        let of = match subnet {
                            Some(c) => format!("spec.subnet {c}"),
                            None => fields::IP_VERSION.to_string(),
                        };
                        errors.push(FieldError::invalid(
                            RuleId::S7,
                            dst_path,
                            text,
                            format!("IP family does not match {of}"),
                        ));
                    } else if dst.prefix == 0 {
                        errors.push(FieldError::invalid(
                            RuleId::S7,
                            dst_path,
                            text,
                            "is a default route: set spec.gateway instead",
                        ));
                    } else if let Some((_, first)) = seen
                        .iter()
                        .find(|(c, _)| c.network == dst.network && c.prefix == dst.prefix)
                    {
                        errors.push(FieldError::duplicate(
                            RuleId::S7,
                            dst_path,
                            text,
                            format!("spec.routes[{first}] already routes {dst}"),
                        ));
                    } else {
                        seen.push((dst, i));
                    }
                }
            }
        }
        let gw_path = fields::ROUTES.entry(i, fields::ROUTE_GW);
        let (text, gw) = read::ip_at(
            RuleId::S7,
            route,
            fields::ROUTE_GW,
            &gw_path,
            errors,
            warnings,
        );
        let (Some(text), Some(gw)) = (text, gw) else {
            if text.is_none() && !errors.iter().any(|e| e.path == gw_path) {
                errors.push(FieldError::required(RuleId::S7, gw_path, ""));
            }
            continue;
        };
        if family.is_some_and(|f| f != gw.family) {
            errors.push(FieldError::invalid(
                RuleId::S7,
                gw_path,
                text,
                "provided gateway and addresses are of mixed IP families",
            ));
        } else if let Some(c) = subnet {
            if !is_link_local_gateway(gw) && !c.network.contains(gw.value) {
                errors.push(FieldError::invalid(
                    RuleId::S7,
                    gw_path,
                    text,
                    format!("must be inside spec.subnet {c}"),
                ));
            }
        }
    }
}

// === podAffinity ===

/// The label Spiderpool puts on a pool a SpiderSubnet created for one application; such a pool
/// selects that application's Pods with the keys of [`AUTO_POOL_AFFINITY`] and nothing else.
pub const OWNER_APPLICATION_LABEL: &str = "ipam.spidernet.io/owner-application-name";

/// The matchLabels keys of the podAffinity Spiderpool derives for an application's pool.
pub const AUTO_POOL_AFFINITY: [&str; 5] = [
    "ipam.spidernet.io/app-api-group",
    "ipam.spidernet.io/app-api-version",
    "ipam.spidernet.io/app-kind",
    "ipam.spidernet.io/app-namespace",
    "ipam.spidernet.io/app-name",
];

/// S8: `spec.podAffinity` is a label selector Spiderpool can use. On a pool of its own making
/// (label [`OWNER_APPLICATION_LABEL`]) it may hold only the keys Spiderpool derives; on any other
/// pool it is a valid selector (keys qualified names, values label values, operators known) that
/// selects something: an empty selector would match every Pod.
fn pod_affinity(obj: &Value, meta: &Meta, errors: &mut Vec<FieldError>) {
    const AT: FieldPath = fields::POD_AFFINITY;
    let Some(selector) = read::keep(read::object(RuleId::S8, obj, AT), errors) else {
        return;
    };
    let labels = read::keep(
        read::object(RuleId::S8, selector, selector::MATCH_LABELS),
        errors,
    )
    .and_then(Value::as_object);
    let expressions = read::keep(
        read::array(RuleId::S8, selector, selector::MATCH_EXPRESSIONS),
        errors,
    )
    .unwrap_or_default();
    if meta.label(OWNER_APPLICATION_LABEL).is_some() {
        for key in labels.into_iter().flat_map(|m| m.keys()) {
            if !AUTO_POOL_AFFINITY.contains(&key.as_str()) {
                errors.push(FieldError::invalid(
                    RuleId::S8,
                    format!("{AT}.matchLabels"),
                    key.as_str(),
                    format!("a pool Spiderpool created for an application ({OWNER_APPLICATION_LABEL}) selects its Pods by the ipam.spidernet.io/app-* keys only"),
                ));
            }
        }
        if !expressions.is_empty() {
            errors.push(FieldError::invalid(
                RuleId::S8,
                format!("{AT}.matchExpressions"),
                Value::Array(expressions.to_vec()),
                format!("a pool Spiderpool created for an application ({OWNER_APPLICATION_LABEL}) takes no matchExpressions"),
            ));
        }
        return;
    }
    for (key, value) in labels.into_iter().flatten() {
        let at = format!("{AT}.matchLabels");
        if let Some(why) = label_key_problem(KubeVersion::NEWEST_TESTED, key) {
            errors.push(FieldError::invalid(
                RuleId::S8,
                at.clone(),
                key.as_str(),
                why,
            ));
        }
        match value.as_str() {
            Some(v) => {
                if let Some(why) = label_value_problem(KubeVersion::NEWEST_TESTED, v) {
                    errors.push(FieldError::invalid(RuleId::S8, at, v, why));
                }
            }
            None => errors.push(FieldError::invalid(
                RuleId::S8,
                format!("{at}[{key}]"),
                value.clone(),
                "must be a string",
            )),
        }
    }
    for (i, e) in expressions.iter().enumerate() {
        expression(e, &format!("{AT}.matchExpressions[{i}]"), errors);
    }
    if labels.map_or(0, |m| m.len()) + expressions.len() == 0 {
        errors.push(FieldError::invalid(
            RuleId::S8,
            AT,
            selector.clone(),
            "an empty selector matches every Pod: give matchLabels or matchExpressions, or leave podAffinity out",
        ));
    }
}

/// One `matchExpressions` requirement, as Kubernetes' `ValidateLabelSelectorRequirement` reads it
/// with label values checked.
fn expression(e: &Value, at: &str, errors: &mut Vec<FieldError>) {
    if !e.is_object() {
        errors.push(FieldError::invalid(
            RuleId::S8,
            at,
            Value::String(e.to_string()),
            "must be an object",
        ));
        return;
    }
    let key_at = format!("{at}.{}", selector::KEY);
    match read::keep(
        read::at(read::string(RuleId::S8, e, selector::KEY), &key_at),
        errors,
    ) {
        None if !errors.iter().any(|x| x.path == key_at) => {
            errors.push(FieldError::required(RuleId::S8, key_at, ""));
        }
        None => {}
        Some(k) => {
            if let Some(why) = label_key_problem(KubeVersion::NEWEST_TESTED, k) {
                errors.push(FieldError::invalid(RuleId::S8, key_at, k, why));
            }
        }
    }
    let values_at = format!("{at}.{}", selector::VALUES);
    let values = read::keep(
        read::at(read::array(RuleId::S8, e, selector::VALUES), &values_at),
        errors,
    )
    .unwrap_or_default();
    let op_at = format!("{at}.{}", selector::OPERATOR);
    match read::keep(read::at(read::string(RuleId::S8, e, selector::OPERATOR), &op_at), errors) {
        Some("In" | "NotIn") if values.is_empty() => errors.push(FieldError::required(
            RuleId::S8,
            values_at.clone(),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        Some("Exists" | "DoesNotExist") if !values.is_empty() => {
            errors.push(FieldError::forbidden(
                RuleId::S8,
                values_at.clone(),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ));
        }
        Some("In" | "NotIn" | "Exists" | "DoesNotExist") => {}
        Some(other) => errors.push(FieldError::invalid(
            RuleId::S8,
            op_at,
            other,
            "not a valid selector operator: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
        )),
        None if !errors.iter().any(|x| x.path == op_at) => {
            errors.push(FieldError::required(RuleId::S8, op_at, ""));
        }
        None => {}
    }
    for (j, v) in values.iter().enumerate() {
        let item = format!("{values_at}[{j}]");
        let Some(text) = read::item_text(RuleId::S8, v, &item, errors) else {
            continue;
        };
        if let Some(why) = label_value_problem(KubeVersion::NEWEST_TESTED, text) {
            errors.push(FieldError::invalid(RuleId::S8, item, text, why));
        }
    }
}

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
    pub fn holder_text(&self) -> String {
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
    use crate::model::test_support::fixture;
    use serde_json::json;

    fn capture(name: &str) -> Value {
        fixture("eco", name)
    }

    fn pool(spec: Value) -> Value {
        json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
            "metadata": {"name": "p"}, "spec": spec})
    }

    fn texts(r: &PoolReading) -> Vec<String> {
        r.errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn captures_read_clean() {
        let review = capture("spiderippool-create.json");
        let r = read_pool(&review["request"]["object"]);
        assert!(r.errors.is_empty(), "{:?}", texts(&r));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(
            r.proj.allocatable.to_string(),
            "172.18.41.40-172.18.41.44, 172.18.41.46-172.18.41.50, 172.18.41.60"
        );
        assert_eq!(r.proj.prefix, Some(24));
        assert_eq!(r.proj.key.namespace, None);
        let review = capture("spiderippool-create-ipv6.json");
        let r = read_pool(&review["request"]["object"]);
        assert!(r.errors.is_empty(), "{:?}", texts(&r));
        assert_eq!(
            r.proj.allocatable.to_string(),
            "fd00:172:18::100-fd00:172:18::14f, fd00:172:18::151-fd00:172:18::1ff"
        );
    }

    #[test]
    fn s1_subnet_must_be_canonical() {
        let r = read_pool(&pool(json!({"subnet": "172.18.41.1/24"})));
        assert_eq!(
            texts(&r),
            [
                r#"spec.subnet: Invalid value: "172.18.41.1/24": unformatted subnet 172.18.41.1/24, please change it to 172.18.41.0/24"#
            ]
        );
        let r = read_pool(&pool(json!({"subnet": "FD00::/64"})));
        assert_eq!(
            texts(&r),
            [
                r#"spec.subnet: Invalid value: "FD00::/64": unformatted subnet FD00::/64, please change it to fd00::/64"#
            ]
        );
        let r = read_pool(&pool(json!({})));
        assert_eq!(texts(&r), ["spec.subnet: Required value"]);
    }

    #[test]
    fn s2_ip_version_matches_the_subnet() {
        let r = read_pool(&pool(json!({"subnet": "10.0.0.0/24", "ipVersion": 6})));
        assert_eq!(
            texts(&r),
            ["spec.ipVersion: Invalid value: 6: does not match spec.subnet 10.0.0.0/24, an IPv4 subnet"]
        );
        let r = read_pool(&pool(json!({"subnet": "10.0.0.0/24", "ipVersion": 5})));
        assert_eq!(
            texts(&r),
            ["spec.ipVersion: Invalid value: 5: must be 4 or 6"]
        );
    }

    #[test]
    fn s3_entries_parse_and_lie_inside_the_subnet() {
        let r = read_pool(&pool(json!({"subnet": "10.0.0.0/24",
            "ips": ["10.0.0.10-10.0.0.5", "10.0.1.1", "fd00::1", "10.0.0.0/28", "10.0.0.20-10.0.0.30"],
            "excludeIPs": ["10.0.2.0"]})));
        assert_eq!(
            texts(&r),
            [
                r#"spec.ips[0]: Invalid value: "10.0.0.10-10.0.0.5": range start 10.0.0.10 is after range end 10.0.0.5"#,
                r#"spec.ips[1]: Invalid value: "10.0.1.1": must be inside spec.subnet 10.0.0.0/24"#,
                r#"spec.ips[2]: Invalid value: "fd00::1": IP family does not match spec.subnet 10.0.0.0/24"#,
                r#"spec.ips[3]: Invalid value: "10.0.0.0/28": a CIDR is not allowed here, expected an IP address or a range"#,
                r#"spec.excludeIPs[0]: Invalid value: "10.0.2.0": must be inside spec.subnet 10.0.0.0/24"#,
            ]
        );
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.20-10.0.0.30");
    }

    #[test]
    fn s3_network_and_broadcast_in_ips_are_warned_about() {
        let r = read_pool(&pool(
            json!({"subnet": "10.0.0.0/24", "ips": ["10.0.0.0-10.0.0.255"]}),
        ));
        assert!(r.errors.is_empty());
        assert_eq!(r.warnings.len(), 2);
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.1-10.0.0.254");
        // Point-to-point subnets use every address.
        let r = read_pool(&pool(
            json!({"subnet": "10.0.0.0/31", "ips": ["10.0.0.0-10.0.0.1"]}),
        ));
        assert!(r.warnings.is_empty());
        assert_eq!(r.proj.allocatable.to_string(), "10.0.0.0-10.0.0.1");
    }

    #[test]
    fn s4_gateway_inside_the_subnet_and_not_allocatable() {
        let r = read_pool(&pool(
            json!({"subnet": "10.0.0.0/24", "ips": ["10.0.0.1-10.0.0.9"],
            "gateway": "10.0.0.5"}),
        ));
        assert_eq!(
            texts(&r),
            [
                r#"spec.gateway: Invalid value: "10.0.0.5": must not be allocatable: it is in spec.ips and not in spec.excludeIPs"#
            ]
        );
        let r = read_pool(&pool(
            json!({"subnet": "10.0.0.0/24", "ips": ["10.0.0.1-10.0.0.9"],
            "excludeIPs": ["10.0.0.5"], "gateway": "10.0.0.5"}),
        ));
        assert!(r.errors.is_empty(), "{:?}", texts(&r));
        let r = read_pool(&pool(
            json!({"subnet": "10.0.0.0/24", "gateway": "10.0.1.1"}),
        ));
        assert_eq!(
            texts(&r),
            [r#"spec.gateway: Invalid value: "10.0.1.1": must be inside spec.subnet 10.0.0.0/24"#]
        );
        // IPv6 link-local gateways come from router advertisements.
        let r = read_pool(&pool(json!({"subnet": "fd00::/64", "gateway": "fe80::1"})));
        assert!(r.errors.is_empty(), "{:?}", texts(&r));
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
