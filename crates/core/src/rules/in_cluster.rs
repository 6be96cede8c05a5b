//! `InClusterIPPool` and `GlobalInClusterIPPool` on their own: P1–P7, judged on the
//! spec as `model::incluster` decodes it and the reading it makes of it. What every pool kind
//! shares (P8–P11) is `rules::pool`.

use serde_json::Value;

use crate::address::{AddrError, AddrSet, Entry, Family, IpRange};
use crate::field::{FieldError, FieldPath, Warning};
use crate::model::incluster::{families, subnet_bound, Form, OffBound, Spec};
use crate::model::paths::in_cluster as fields;
use crate::model::pool::{
    has_room_for_subnet, is_link_local_gateway, is_point_to_point, subnet_text, PoolReading,
    TextList,
};
use crate::model::written::{IpText, Text, Written};
use crate::rule_id::RuleId;
use crate::rules::util::{each_capped, ip_findings, prefix_in_family};

const NOT_AN_ENTRY: &str = "provided address is not a valid IP, range, nor CIDR";
const MIXED: &str = "provided addresses are of mixed IP families";
const MIXED_GATEWAY: &str = "provided gateway and addresses are of mixed IP families";
const MIXED_EXCLUDED: &str = "addresses and excluded addresses are of mixed IP families";
const OTHER_SUBNET: &str = "provided address belongs to a different subnet than others";

/// What the spec says on its own, in the order a reader meets it: the causes (P1–P6) and the
/// warnings (P7, and address texts that are not canonical).
pub(crate) fn findings(spec: &Spec, r: &PoolReading) -> (Vec<FieldError>, Vec<Warning>) {
    let mut f = Findings::default();
    match &spec.form {
        Form::List {
            addresses,
            beside,
            excluded,
            allocate_reserved,
        } => f.list_form(
            spec,
            r,
            addresses,
            beside,
            excluded.as_ref(),
            allocate_reserved,
        ),
        Form::Subnet { subnet, start, end } => f.subnet_form(spec, r, subnet, start, end),
    }
    (f.errors, f.warnings)
}

#[derive(Default)]
struct Findings {
    errors: Vec<FieldError>,
    warnings: Vec<Warning>,
}

/// P2's text, followed by what exactly is wrong when the parser knows more than "not valid".
fn entry_detail(e: &AddrError) -> String {
    match e {
        AddrError::Invalid { .. } => NOT_AN_ENTRY.to_string(),
        other => format!("{NOT_AN_ENTRY}: {other}"),
    }
}

impl Findings {
    fn ip(&mut self, rule: RuleId, path: FieldPath, field: &Written<IpText>) {
        ip_findings(rule, path, field, &mut self.errors, &mut self.warnings);
    }

    /// P2: the list is a list of strings, each an IP, a range or a CIDR.
    fn p2_list(&mut self, list: &TextList<Entry>) {
        self.errors
            .extend(list.list.type_error(RuleId::P2, list.path));
        let warnings = &mut self.warnings;
        each_capped(
            RuleId::P2,
            list.path,
            list.len,
            &list.items,
            &mut self.errors,
            |(path, item), errors| match item {
                Written::Absent => {}
                Written::Wrong(w) => errors.push(w.error(RuleId::P2, path.as_str())),
                Written::Ok(Text { text, parsed }) => match parsed {
                    Ok(p) => warnings.extend(
                        p.warnings
                            .iter()
                            .map(|w| Warning::new(RuleId::P2, path.as_str(), w)),
                    ),
                    Err(e) => errors.push(FieldError::invalid(
                        RuleId::P2,
                        path.as_str(),
                        *text,
                        entry_detail(e),
                    )),
                },
            },
        );
    }

    /// P4: the prefix is an integer within the family's bound; None when it is not.
    fn p4_in_family(&mut self, spec: &Spec, raw: i64, family: Option<Family>) -> Option<u8> {
        let p = prefix_in_family(RuleId::P4, fields::PREFIX, raw, spec.prefix_value, family);
        match p {
            Ok(p) => Some(p),
            Err(e) => {
                self.errors.push(e);
                None
            }
        }
    }

    fn list_form(
        &mut self,
        spec: &Spec,
        r: &PoolReading,
        addresses: &TextList<Entry>,
        beside: &[(&'static str, FieldPath, &Value)],
        excluded: Option<&TextList<Entry>>,
        allocate_reserved: &Written<bool>,
    ) {
        self.p2_list(addresses);
        // P1: addresses are required.
        let empty = addresses.list.get().is_none_or(<[Value]>::is_empty);
        if empty && !matches!(addresses.list, Written::Wrong(_)) {
            let detail = if spec.v1alpha1 {
                "addresses or subnet is required"
            } else {
                "addresses is required"
            };
            self.errors
                .push(FieldError::required(RuleId::P1, fields::ADDRESSES, detail));
        }
        for (key, path, value) in beside {
            self.errors.push(FieldError::invalid(
                RuleId::P1,
                *path,
                (*value).clone(),
                format!("{key} may not be used with addresses"),
            ));
        }
        if let Some(excluded) = excluded {
            self.p2_list(excluded);
        }
        self.errors
            .extend(allocate_reserved.type_error(RuleId::P7, fields::ALLOCATE_RESERVED));
        self.ip(RuleId::P6, fields::GATEWAY, &spec.gateway);
        self.errors
            .extend(spec.prefix.type_error(RuleId::P4, fields::PREFIX));

        // P3: families never mix.
        let items = addresses.entries();
        let excluded_items = excluded.map(TextList::entries).unwrap_or_default();
        let excluded_value = || excluded.map_or(Value::Array(Vec::new()), TextList::value);
        let (d4, d6) = families(&items);
        let (x4, x6) = families(&excluded_items);
        if d4 && d6 {
            self.errors.push(FieldError::invalid(
                RuleId::P3,
                fields::ADDRESSES,
                addresses.value(),
                MIXED,
            ));
        }
        if x4 && x6 {
            self.errors.push(FieldError::invalid(
                RuleId::P3,
                fields::EXCLUDED_ADDRESSES,
                excluded_value(),
                MIXED,
            ));
        }
        if (d4 && x6) || (d6 && x4) {
            self.errors.push(FieldError::invalid(
                RuleId::P3,
                fields::EXCLUDED_ADDRESSES,
                excluded_value(),
                MIXED_EXCLUDED,
            ));
        }
        let family = r.proj.family;

        // P4: required, and within the family's bound.
        let prefix = match &spec.prefix {
            Written::Ok(p) => self.p4_in_family(spec, *p, family),
            Written::Wrong(_) => None,
            Written::Absent => {
                let detail = if spec.v1alpha1 {
                    "prefix is required when using addresses"
                } else {
                    "prefix is required"
                };
                self.errors
                    .push(FieldError::required(RuleId::P4, fields::PREFIX, detail));
                None
            }
        };

        // P5: one subnet for every entry (judged only when the families agree).
        if let (Some(subnet), false) = (r.subnet, d4 && d6) {
            for i in &items {
                if !(subnet.start <= i.entry.range.start && i.entry.range.end <= subnet.end) {
                    self.errors.push(FieldError::invalid(
                        RuleId::P5,
                        i.path.as_ref(),
                        i.text,
                        OTHER_SUBNET,
                    ));
                }
            }
        }
        self.gateway_checks(spec, family, r.subnet, prefix);

        // P7: an exclusion that excludes nothing is most likely a typo.
        for i in &excluded_items {
            if Some(i.entry.family) == family && !r.declared.intersects(&i.entry.to_set()) {
                self.warnings.push(Warning::new(
                    RuleId::P7,
                    i.path.as_ref(),
                    "excluded address is outside spec.addresses",
                ));
            }
        }
        self.p7(r, family, prefix, allocate_reserved.get().unwrap_or(false));
    }

    fn subnet_form(
        &mut self,
        spec: &Spec,
        r: &PoolReading,
        subnet: &Written<Text<crate::address::Cidr>>,
        start: &Written<IpText>,
        end: &Written<IpText>,
    ) {
        self.errors
            .extend(subnet.type_error(RuleId::P2, fields::SUBNET));
        self.ip(RuleId::P2, fields::START, start);
        self.ip(RuleId::P2, fields::END, end);
        self.ip(RuleId::P6, fields::GATEWAY, &spec.gateway);
        self.errors
            .extend(spec.prefix.type_error(RuleId::P4, fields::PREFIX));
        let raw_prefix = spec.raw_prefix();

        // The subnet: written, or the one of `prefix` around `start`.
        match subnet {
            Written::Ok(Text { text, parsed }) => match parsed {
                Ok(p) => self.warnings.extend(
                    p.warnings
                        .iter()
                        .map(|w| Warning::new(RuleId::P2, fields::SUBNET, w)),
                ),
                Err(e) => self.errors.push(FieldError::invalid(
                    RuleId::P2,
                    fields::SUBNET,
                    *text,
                    e.to_string(),
                )),
            },
            _ => match (start.ok().and_then(Text::value), raw_prefix) {
                (Some(s), Some(p)) => {
                    self.p4_in_family(spec, p, Some(s.family));
                }
                _ => self.errors.push(FieldError::required(
                    RuleId::P1,
                    fields::SUBNET,
                    "subnet is required when addresses is empty",
                )),
            },
        }

        let Some((family, cidr, subnet_prefix)) = spec.subnet_form_cidr() else {
            // Without a subnet there is nothing to declare; report what else is wrong on its own.
            if let Some(p) = raw_prefix {
                self.p4_in_family(spec, p, None);
            }
            return;
        };
        if let (Some(p), Written::Ok(_)) = (raw_prefix, subnet) {
            if self.p4_in_family(spec, p, Some(family)).is_some() && p != i64::from(subnet_prefix) {
                self.errors.push(FieldError::invalid(
                    RuleId::P4,
                    fields::PREFIX,
                    p,
                    "does not match prefix of spec.subnet",
                ));
            }
        }

        // Each bound: of the subnet's family and inside it, else the default is used for the set.
        let mut bound = |w: &Written<IpText>, path: FieldPath| -> Option<u128> {
            let t = w.ok()?;
            match subnet_bound(t.value()?, family, cidr) {
                Ok(v) => Some(v),
                Err(OffBound::OtherFamily) => {
                    self.errors
                        .push(FieldError::invalid(RuleId::P3, path, t.text, MIXED));
                    None
                }
                Err(OffBound::OutsideSubnet) => {
                    self.errors.push(FieldError::invalid(
                        RuleId::P5,
                        path,
                        t.text,
                        "address is not part of spec.subnet",
                    ));
                    None
                }
            }
        };
        let start_v = bound(start, fields::START);
        let end_v = bound(end, fields::END);
        if let (Some(s), Some(e), Some(t)) = (start_v, end_v, end.ok()) {
            if s > e {
                self.errors.push(FieldError::invalid(
                    RuleId::P2,
                    fields::END,
                    t.text,
                    "must not be before spec.start",
                ));
            }
        }
        let prefix = Some(subnet_prefix);
        self.gateway_checks(spec, Some(family), Some(cidr), prefix);
        self.p7(r, Some(family), prefix, false);
    }

    /// P6: the gateway's family, and its place inside the subnet when the prefix leaves room.
    fn gateway_checks(
        &mut self,
        spec: &Spec,
        family: Option<Family>,
        subnet: Option<IpRange>,
        prefix: Option<u8>,
    ) {
        let Some(t) = spec.gateway.ok() else {
            return;
        };
        let (Some(gw), Some(family)) = (t.value(), family) else {
            return;
        };
        if gw.family != family {
            self.errors.push(FieldError::invalid(
                RuleId::P3,
                fields::GATEWAY,
                t.text,
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
                    t.text,
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
        r: &PoolReading,
        family: Option<Family>,
        prefix: Option<u8>,
        allocate_reserved: bool,
    ) {
        let declared: &AddrSet = &r.declared;
        if !declared.is_empty() && r.proj.allocatable.is_empty() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Kind;
    use crate::model::incluster::read_spec;
    use serde_json::json;

    fn texts(version: &str, spec: Value) -> Vec<String> {
        let obj = json!({"apiVersion": format!("ipam.cluster.x-k8s.io/{version}"),
            "kind": "InClusterIPPool", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec});
        let (spec, r) = read_spec(Kind::InClusterIPPool, &obj);
        findings(&spec, &r)
            .0
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn v1alpha1_subnet_form_problems() {
        assert_eq!(
            texts(
                "v1alpha1",
                json!({"subnet": "10.0.0.0/24", "start": "10.0.1.1", "end": "fd00::1", "prefix": 25})
            ),
            [
                "spec.prefix: Invalid value: 25: does not match prefix of spec.subnet",
                r#"spec.start: Invalid value: "10.0.1.1": address is not part of spec.subnet"#,
                r#"spec.end: Invalid value: "fd00::1": provided addresses are of mixed IP families"#,
            ]
        );
        assert!(texts(
            "v1alpha1",
            json!({"subnet": "10.0.0.0/24", "gateway": "10.0.0.1"})
        )
        .is_empty());
    }

    #[test]
    fn v1alpha1_subnet_of_start_and_prefix() {
        // No subnet: `prefix` around `start` makes one, checked in start's family.
        assert!(texts("v1alpha1", json!({"start": "10.0.0.5", "prefix": 24})).is_empty());
        assert_eq!(
            texts("v1alpha1", json!({"start": "10.0.0.5"})),
            ["spec.subnet: Required value: subnet is required when addresses is empty"]
        );
        assert_eq!(
            texts("v1alpha1", json!({"start": "10.0.0.5", "prefix": 40})),
            ["spec.prefix: Invalid value: 40: prefix is too large for an IPv4 address"]
        );
    }

    #[test]
    fn v1alpha2_ignores_v1alpha1_fields() {
        assert_eq!(
            texts("v1alpha2", json!({"subnet": "10.0.0.0/24", "prefix": 24})),
            ["spec.addresses: Required value: addresses is required"]
        );
    }

    #[test]
    fn a_long_bad_list_says_what_it_did_not_check() {
        let bad: Vec<Value> = (0..crate::model::read::LIST_PROBLEMS + 5)
            .map(|_| json!("x"))
            .collect();
        let t = texts("v1alpha2", json!({"addresses": bad, "prefix": 24}));
        assert_eq!(t.len(), crate::model::read::LIST_PROBLEMS + 1);
        assert_eq!(
            t.last().unwrap(),
            "spec.addresses: Forbidden: 5 more entries not checked after 1000 problems in this list"
        );
    }
}
