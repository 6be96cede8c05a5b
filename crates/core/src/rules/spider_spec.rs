//! `SpiderIPPool` on its own: S1–S4, S7 and S8, judged on the spec as `model::spider`
//! decodes it and the reading it makes of it, in the order a reader meets the fields. S5, S6 and
//! S9 are `rules::spider`; what every pool kind shares (P10, P11) is `rules::pool`.

use serde_json::Value;

use crate::address::{Cidr, Entry, Family, Ip};
use crate::field::{FieldError, FieldPath, Warning};
use crate::kube_version::KubeVersion;
use crate::model::paths::selector::{KEY, MATCH_EXPRESSIONS, MATCH_LABELS, OPERATOR, VALUES};
use crate::model::paths::spider as fields;
use crate::model::pool::{is_link_local_gateway, is_point_to_point, PoolReading, TextList};
use crate::model::spider::{
    fits, Expression, Misfit, Route, Selector, Spec, OWNER_APPLICATION_LABEL,
};
use crate::model::written::{Expected, Text, Written, Wrong};
use crate::rule_id::RuleId;
use crate::rules::util::{each_capped, ip_findings};
use crate::schema::{label_key_problem, label_value_problem};

const MIXED_GATEWAY: &str = "provided gateway and addresses are of mixed IP families";

/// The matchLabels keys of the podAffinity Spiderpool derives for an application's pool.
pub(crate) const AUTO_POOL_AFFINITY: [&str; 5] = [
    "ipam.spidernet.io/app-api-group",
    "ipam.spidernet.io/app-api-version",
    "ipam.spidernet.io/app-kind",
    "ipam.spidernet.io/app-namespace",
    "ipam.spidernet.io/app-name",
];

/// What the spec says on its own, in the order a reader meets it: the causes (S1–S4, S7, S8) and
/// the warnings (S3's reserved addresses, address texts that are not canonical).
pub(crate) fn findings(spec: &Spec, r: &PoolReading) -> (Vec<FieldError>, Vec<Warning>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    s1_subnet(spec, &mut errors);
    s2_ip_version(spec, &mut errors);
    let (family, subnet) = (spec.family(), spec.subnet());
    for list in [&spec.ips, &spec.exclude_ips] {
        s3_entries(list, family, subnet, &mut errors, &mut warnings);
    }
    s4_gateway(spec, r, &mut errors, &mut warnings);
    s3_reserved(spec, r, &mut warnings);
    s7_routes(spec, r.proj.family, &mut errors, &mut warnings);
    errors.extend(
        spec.pod_affinity
            .type_error(RuleId::S8, fields::POD_AFFINITY),
    );
    if let Written::Ok(selector) = &spec.pod_affinity {
        s8_pod_affinity(selector, spec.application_pool, &mut errors);
    }
    (errors, warnings)
}

/// S1: the subnet is required, in the canonical form Spiderpool itself insists on.
fn s1_subnet(spec: &Spec, errors: &mut Vec<FieldError>) {
    match &spec.subnet {
        Written::Absent => errors.push(FieldError::required(RuleId::S1, fields::SUBNET, "")),
        Written::Wrong(w) => errors.push(w.error(RuleId::S1, fields::SUBNET)),
        // A non-canonical subnet is refused outright, so the parser's warnings add nothing.
        Written::Ok(Text { text, parsed }) => match parsed {
            Ok(p) => {
                let canonical = p.value.to_string();
                if canonical != *text {
                    errors.push(FieldError::invalid(
                        RuleId::S1,
                        fields::SUBNET,
                        *text,
                        format!("unformatted subnet {text}, please change it to {canonical}"),
                    ));
                }
            }
            Err(e) => errors.push(FieldError::invalid(
                RuleId::S1,
                fields::SUBNET,
                *text,
                e.to_string(),
            )),
        },
    }
}

/// S2: ipVersion names the subnet's family.
fn s2_ip_version(spec: &Spec, errors: &mut Vec<FieldError>) {
    errors.extend(spec.ip_version.type_error(RuleId::S2, fields::IP_VERSION));
    if let Some(v) = spec.ip_version.get() {
        if spec.version_family().is_none() {
            errors.push(FieldError::invalid(
                RuleId::S2,
                fields::IP_VERSION,
                v,
                "must be 4 or 6",
            ));
        }
    }
    if let (Some(c), Some(f)) = (spec.subnet(), spec.version_family()) {
        if c.family() != f {
            errors.push(FieldError::invalid(
                RuleId::S2,
                fields::IP_VERSION,
                spec.ip_version_value.cloned().unwrap_or(Value::Null),
                format!("does not match spec.subnet {c}, an {} subnet", c.family()),
            ));
        }
    }
}

/// S3: a list of IP-or-range entries, each a string that parses, of the subnet's family (else of
/// `ipVersion`'s) and inside it. The entries judged are the ones the reading considers
/// (`model::spider::held`): past `LIST_PROBLEMS` problems, one cause says how many were left.
fn s3_entries(
    list: &TextList<Entry>,
    family: Option<Family>,
    subnet: Option<Cidr>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    errors.extend(list.list.type_error(RuleId::S3, list.path));
    each_capped(
        RuleId::S3,
        list.path,
        list.len,
        &list.items,
        errors,
        |(path, item), errors| {
            let path = path.as_str();
            let (text, entry) = match item {
                Written::Absent => return,
                Written::Wrong(w) => return errors.push(w.error(RuleId::S3, path)),
                Written::Ok(Text { text, parsed }) => match parsed {
                    Ok(p) => {
                        warnings
                            .extend(p.warnings.iter().map(|w| Warning::new(RuleId::S3, path, w)));
                        (*text, p.value)
                    }
                    Err(e) => {
                        return errors.push(FieldError::invalid(
                            RuleId::S3,
                            path,
                            *text,
                            e.to_string(),
                        ))
                    }
                },
            };
            let detail = match fits(&entry, family, subnet) {
                Ok(()) => return,
                Err(Misfit::OtherFamily) => match subnet {
                    Some(c) => format!("IP family does not match spec.subnet {c}"),
                    None => "IP family does not match spec.ipVersion".to_string(),
                },
                Err(Misfit::OutsideSubnet(c)) => format!("must be inside spec.subnet {c}"),
            };
            errors.push(FieldError::invalid(RuleId::S3, path, text, detail));
        },
    );
}

/// S4: the gateway is of the pool's family, sits inside the subnet and is never handed out.
fn s4_gateway(
    spec: &Spec,
    r: &PoolReading,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    ip_findings(RuleId::S4, fields::GATEWAY, &spec.gateway, errors, warnings);
    let Some((text, gw)) = spec.gateway.ok().and_then(|t| Some((t.text, t.value()?))) else {
        return;
    };
    let mut invalid = |detail: String| {
        errors.push(FieldError::invalid(
            RuleId::S4,
            fields::GATEWAY,
            text,
            detail,
        ));
    };
    if r.proj.family.is_some_and(|f| f != gw.family) {
        return invalid(MIXED_GATEWAY.to_string());
    }
    if let Some(c) = spec.subnet() {
        if !is_link_local_gateway(gw) && !c.network.contains(gw.value) {
            invalid(format!("must be inside spec.subnet {c}"));
        }
    }
    if r.declared.difference(&r.excluded).contains(gw) {
        invalid(
            "must not be allocatable: it is in spec.ips and not in spec.excludeIPs".to_string(),
        );
    }
}

/// S3: addresses a pod should never get; Spiderpool does not skip them by itself.
fn s3_reserved(spec: &Spec, r: &PoolReading, warnings: &mut Vec<Warning>) {
    let Some(c) = spec
        .subnet()
        .filter(|c| !is_point_to_point(c.family(), c.prefix))
    else {
        return;
    };
    let fam = r.proj.family.unwrap_or(Family::V4);
    let usable = r.declared.difference(&r.excluded);
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

/// S7: `spec.routes`, as Spiderpool's webhook reads them: no default route (that is what
/// `spec.gateway` is for), no destination twice, each destination a CIDR of the pool's family,
/// each `gw` an IP inside `spec.subnet`. Destinations are compared as networks, so
/// `192.168.40.1/24` repeats `192.168.40.0/24`. `family` is the reading's (the first entry's
/// when the spec names none).
fn s7_routes(
    spec: &Spec,
    family: Option<Family>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    errors.extend(spec.routes.type_error(RuleId::S7, fields::ROUTES));
    let subnet = spec.subnet();
    let len = spec.routes.get().map_or(0, <[Value]>::len);
    let mut seen: Vec<(Cidr, usize)> = Vec::new();
    each_capped(
        RuleId::S7,
        fields::ROUTES,
        len,
        spec.routes().enumerate(),
        errors,
        |(i, route), errors| s7_route(i, &route, family, subnet, &mut seen, errors, warnings),
    );
}

fn s7_route(
    i: usize,
    route: &Route,
    family: Option<Family>,
    subnet: Option<Cidr>,
    seen: &mut Vec<(Cidr, usize)>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    let Some((dst, gw)) = &route.fields else {
        errors.push(
            Wrong {
                value: route.value,
                expected: Expected::Object,
            }
            .error(RuleId::S7, route.path.as_str()),
        );
        return;
    };
    let dst_path = fields::ROUTES.entry(i, fields::ROUTE_DST);
    match dst {
        Written::Absent => errors.push(FieldError::required(RuleId::S7, dst_path, "")),
        Written::Wrong(w) => errors.push(w.error(RuleId::S7, dst_path)),
        Written::Ok(Text { text, parsed }) => match parsed {
            Err(e) => errors.push(FieldError::invalid(
                RuleId::S7,
                dst_path,
                *text,
                e.to_string(),
            )),
            Ok(p) => {
                warnings.extend(
                    p.warnings
                        .iter()
                        .map(|w| Warning::new(RuleId::S7, dst_path.as_str(), w)),
                );
                let dst = p.value;
                if family.is_some_and(|f| f != dst.family()) {
                    let of = match subnet {
                        Some(c) => format!("spec.subnet {c}"),
                        None => fields::IP_VERSION.to_string(),
                    };
                    errors.push(FieldError::invalid(
                        RuleId::S7,
                        dst_path,
                        *text,
                        format!("IP family does not match {of}"),
                    ));
                } else if dst.prefix == 0 {
                    errors.push(FieldError::invalid(
                        RuleId::S7,
                        dst_path,
                        *text,
                        "is a default route: set spec.gateway instead",
                    ));
                } else if let Some((_, first)) = seen
                    .iter()
                    .find(|(c, _)| c.network == dst.network && c.prefix == dst.prefix)
                {
                    errors.push(FieldError::duplicate(
                        RuleId::S7,
                        dst_path,
                        *text,
                        format!("spec.routes[{first}] already routes {dst}"),
                    ));
                } else {
                    seen.push((dst, i));
                }
            }
        },
    }
    let gw_path = fields::ROUTES.entry(i, fields::ROUTE_GW);
    let (text, gw) = match gw {
        Written::Absent => return errors.push(FieldError::required(RuleId::S7, gw_path, "")),
        Written::Wrong(w) => return errors.push(w.error(RuleId::S7, gw_path)),
        Written::Ok(Text { text, parsed }) => match parsed {
            Err(e) => {
                return errors.push(FieldError::invalid(
                    RuleId::S7,
                    gw_path,
                    *text,
                    e.to_string(),
                ))
            }
            Ok(p) => {
                warnings.extend(
                    p.warnings
                        .iter()
                        .map(|w| Warning::new(RuleId::S7, gw_path.as_str(), w)),
                );
                (*text, p.value)
            }
        },
    };
    if family.is_some_and(|f| f != gw.family) {
        errors.push(FieldError::invalid(
            RuleId::S7,
            gw_path,
            text,
            MIXED_GATEWAY,
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

/// S8: `spec.podAffinity` is a label selector Spiderpool can use. On a pool of its own making
/// (label [`OWNER_APPLICATION_LABEL`]) it may hold only the keys Spiderpool derives; on any other
/// pool it is a valid selector (keys qualified names, values label values, operators known) that
/// selects something: an empty selector would match every Pod.
fn s8_pod_affinity(selector: &Selector, application_pool: bool, errors: &mut Vec<FieldError>) {
    const AT: FieldPath = fields::POD_AFFINITY;
    errors.extend(
        selector
            .labels
            .type_error(RuleId::S8, format!("{AT}.{MATCH_LABELS}")),
    );
    errors.extend(
        selector
            .expressions
            .type_error(RuleId::S8, format!("{AT}.{MATCH_EXPRESSIONS}")),
    );
    let labels = selector.label_map();
    let expressions = selector.expression_list();
    if application_pool {
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
        s8_expression(e, &format!("{AT}.matchExpressions[{i}]"), errors);
    }
    if labels.map_or(0, |m| m.len()) + expressions.len() == 0 {
        errors.push(FieldError::invalid(
            RuleId::S8,
            AT,
            selector.value.clone(),
            "an empty selector matches every Pod: give matchLabels or matchExpressions, or leave podAffinity out",
        ));
    }
}

/// One `matchExpressions` requirement, as Kubernetes' `ValidateLabelSelectorRequirement` reads it
/// with label values checked.
fn s8_expression(e: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let Some(Expression {
        key,
        operator,
        values,
    }) = Expression::read(e)
    else {
        errors.push(
            Wrong {
                value: e,
                expected: Expected::Object,
            }
            .error(RuleId::S8, at),
        );
        return;
    };
    let key_at = format!("{at}.{KEY}");
    match key {
        Written::Absent => errors.push(FieldError::required(RuleId::S8, key_at, "")),
        Written::Wrong(w) => errors.push(w.error(RuleId::S8, key_at)),
        Written::Ok(k) => {
            if let Some(why) = label_key_problem(KubeVersion::NEWEST_TESTED, k) {
                errors.push(FieldError::invalid(RuleId::S8, key_at, k, why));
            }
        }
    }
    let values_at = format!("{at}.{VALUES}");
    errors.extend(values.type_error(RuleId::S8, values_at.as_str()));
    let values = values.get().unwrap_or_default();
    let op_at = format!("{at}.{OPERATOR}");
    errors.extend(operator.type_error(RuleId::S8, op_at.as_str()));
    match operator {
        Written::Ok("In" | "NotIn") if values.is_empty() => errors.push(FieldError::required(
            RuleId::S8,
            values_at.clone(),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        Written::Ok("Exists" | "DoesNotExist") if !values.is_empty() => {
            errors.push(FieldError::forbidden(
                RuleId::S8,
                values_at.clone(),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ));
        }
        Written::Ok("In" | "NotIn" | "Exists" | "DoesNotExist") | Written::Wrong(_) => {}
        Written::Ok(other) => errors.push(FieldError::invalid(
            RuleId::S8,
            op_at,
            other,
            "not a valid selector operator: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
        )),
        Written::Absent => errors.push(FieldError::required(RuleId::S8, op_at, "")),
    }
    for (j, v) in values.iter().enumerate() {
        let item = format!("{values_at}[{j}]");
        let Some(text) = v.as_str() else {
            errors.push(FieldError::invalid(
                RuleId::S8,
                item,
                v.clone(),
                "must be a string",
            ));
            continue;
        };
        if let Some(why) = label_value_problem(KubeVersion::NEWEST_TESTED, text) {
            errors.push(FieldError::invalid(RuleId::S8, item, text, why));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::spider::read_spec;
    use crate::model::test_support::{fixture, spider_pool as pool};
    use serde_json::json;

    fn capture(name: &str) -> Value {
        fixture(name)
    }

    /// The reading with its findings, as a review takes it (`validator::read_judged`).
    fn read_pool(obj: &Value) -> PoolReading {
        let (spec, mut r) = read_spec(crate::kinds::Kind::SpiderIPPool, obj);
        (r.errors, r.warnings) = findings(&spec, &r);
        r
    }

    fn texts(r: &PoolReading) -> Vec<String> {
        r.errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn captures_have_no_findings() {
        for name in ["spiderippool-create.json", "spiderippool-create-ipv6.json"] {
            let r = read_pool(&capture(name)["request"]["object"]);
            assert!(r.errors.is_empty(), "{name}: {:?}", texts(&r));
            assert!(r.warnings.is_empty(), "{name}: {:?}", r.warnings);
        }
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
    fn s3_a_long_list_is_judged_as_far_as_it_is_held() {
        // Entries off the subnet count towards the limit like entries that do not parse, and
        // the entries judged are the entries the reading held.
        let mut ips: Vec<Value> = (0..crate::model::read::LIST_PROBLEMS)
            .map(|_| json!("10.0.1.1"))
            .collect();
        ips.extend([json!("10.0.0.5"), json!("x")]);
        let r = read_pool(&pool(json!({"subnet": "10.0.0.0/24", "ips": ips})));
        assert_eq!(r.errors.len(), crate::model::read::LIST_PROBLEMS + 1);
        assert_eq!(
            r.errors.last().map(ToString::to_string).as_deref(),
            Some(
                "spec.ips: Forbidden: 2 more entries not checked after 1000 problems in this list"
            )
        );
        assert!(r.declared.is_empty());
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
}
