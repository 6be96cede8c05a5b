//! `InClusterPrefixPool` and `GlobalInClusterPrefixPool` on their own: PP1–PP6, judged
//! on the spec as `model::prefix` decodes it and the reading it makes of it. PP7 and what every
//! pool kind shares are `rules::pool`.

use crate::address::{AddrError, Family};
use crate::field::{FieldError, Warning};
use crate::model::paths::prefix_pool as fields;
use crate::model::pool::PoolReading;
use crate::model::prefix::Spec;
use crate::model::written::{Text, Written};
use crate::rule_id::RuleId;
use crate::rules::util::{each_capped, ip_findings};

const NOT_A_CIDR: &str = "provided entry is not a valid IPv6 CIDR";
const NOT_AN_ENTRY: &str = "provided entry is not a valid IP, range, nor CIDR";
const V6_ONLY: &str = "only IPv6 prefixes are supported";
const V6_ONLY_EXCLUDED: &str = "only IPv6 excluded prefixes are supported";

/// `base`, followed by what exactly is wrong when the parser knows more than "not valid".
fn detail(base: &str, e: &AddrError) -> String {
    match e {
        AddrError::Invalid { .. } => base.to_string(),
        other => format!("{base}: {other}"),
    }
}

/// What the spec says on its own, in the order a reader meets it: the causes (PP1–PP5) and the
/// warnings (PP6, and address texts that are not canonical).
pub(crate) fn findings(spec: &Spec, r: &PoolReading) -> (Vec<FieldError>, Vec<Warning>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let length = spec.length();

    // PP3: the length of every sub-prefix handed out.
    match spec.length {
        Written::Wrong(w) => errors.push(w.error(RuleId::PP3, fields::ALLOCATION_PREFIX_LENGTH)),
        Written::Ok(n) if length.is_none() => errors.push(FieldError::invalid(
            RuleId::PP3,
            fields::ALLOCATION_PREFIX_LENGTH,
            n,
            "allocationPrefixLength must be between 1 and 128",
        )),
        _ => {}
    }

    // PP1, PP2, PP3: the prefixes.
    let prefixes = &spec.prefixes;
    errors.extend(prefixes.list.type_error(RuleId::PP1, fields::PREFIXES));
    if prefixes.len == 0 && !matches!(prefixes.list, Written::Wrong(_)) {
        errors.push(FieldError::required(
            RuleId::PP1,
            fields::PREFIXES,
            "prefixes is required",
        ));
    }
    each_capped(
        RuleId::PP2,
        fields::PREFIXES,
        prefixes.len,
        &prefixes.items,
        &mut errors,
        |(path, item), errors| {
            let (text, cidr) = match item {
                Written::Absent => return,
                Written::Wrong(w) => return errors.push(w.error(RuleId::PP2, path.as_str())),
                Written::Ok(Text { text, parsed }) => match parsed {
                    Ok(p) => (*text, p),
                    Err(e) => {
                        return errors.push(FieldError::invalid(
                            RuleId::PP2,
                            path.as_str(),
                            *text,
                            detail(NOT_A_CIDR, e),
                        ))
                    }
                },
            };
            let c = cidr.value;
            if c.family() != Family::V6 {
                return errors.push(FieldError::invalid(
                    RuleId::PP2,
                    path.as_str(),
                    text,
                    V6_ONLY,
                ));
            }
            if c.has_host_bits() {
                errors.push(FieldError::invalid(
                    RuleId::PP2,
                    path.as_str(),
                    text,
                    format!("CIDR must be network-aligned (the network is {c})"),
                ));
            } else {
                warnings.extend(
                    cidr.warnings
                        .iter()
                        .map(|w| Warning::new(RuleId::PP2, path.as_str(), w)),
                );
            }
            if let Some(len) = length.filter(|len| c.prefix > *len) {
                errors.push(FieldError::invalid(
                    RuleId::PP3,
                    path.as_str(),
                    text,
                    format!("CIDR prefix length must be <= allocationPrefixLength ({len})"),
                ));
            }
        },
    );

    // PP4: the exclusions, each inside the pool.
    let excluded = &spec.excluded;
    errors.extend(
        excluded
            .list
            .type_error(RuleId::PP4, fields::EXCLUDED_PREFIXES),
    );
    each_capped(
        RuleId::PP4,
        fields::EXCLUDED_PREFIXES,
        excluded.len,
        &excluded.items,
        &mut errors,
        |(path, item), errors| {
            let (text, entry) = match item {
                Written::Absent => return,
                Written::Wrong(w) => return errors.push(w.error(RuleId::PP4, path.as_str())),
                Written::Ok(Text { text, parsed }) => match parsed {
                    Ok(p) => {
                        warnings.extend(
                            p.warnings
                                .iter()
                                .map(|w| Warning::new(RuleId::PP4, path.as_str(), w)),
                        );
                        (*text, p.value)
                    }
                    Err(e) => {
                        return errors.push(FieldError::invalid(
                            RuleId::PP4,
                            path.as_str(),
                            *text,
                            detail(NOT_AN_ENTRY, e),
                        ))
                    }
                },
            };
            if entry.family != Family::V6 {
                return errors.push(FieldError::invalid(
                    RuleId::PP4,
                    path.as_str(),
                    text,
                    V6_ONLY_EXCLUDED,
                ));
            }
            // Judged only against entries that parsed: an exclusion is not blamed for a bad prefix.
            if !r.entries.is_empty() && !r.declared.contains_set(&entry.to_set()) {
                errors.push(FieldError::invalid(
                    RuleId::PP4,
                    path.as_str(),
                    text,
                    "excluded entry must lie inside spec.prefixes",
                ));
            }
        },
    );

    // PP5: the gateway, informational but an IPv6 address.
    ip_findings(
        RuleId::PP5,
        fields::GATEWAY,
        &spec.gateway,
        &mut errors,
        &mut warnings,
    );
    if let Some(t) = spec.gateway.ok() {
        if t.value().is_some_and(|gw| gw.family != Family::V6) {
            errors.push(FieldError::invalid(
                RuleId::PP5,
                fields::GATEWAY,
                t.text,
                "provided gateway must be IPv6",
            ));
        }
    }

    // PP6: valid, but not what the author most likely meant.
    if let Some(len) = length {
        let allocatable = &r.proj.allocatable;
        // Only the exclusions' doing: entries too small for one sub-prefix are PP3's.
        if allocatable.is_empty() && !r.declared.whole_blocks(len).is_empty() {
            warnings.push(Warning::new(
                RuleId::PP6,
                fields::EXCLUDED_PREFIXES,
                format!(
                    "the pool has no allocatable /{len}: every /{len} of spec.prefixes overlaps an excluded entry"
                ),
            ));
        }
        if len == 128 {
            warnings.push(Warning::new(
                RuleId::PP6,
                fields::ALLOCATION_PREFIX_LENGTH,
                "allocationPrefixLength 128 hands out single addresses; InClusterIPPool does that with a gateway kept out",
            ));
            if let Some(gw) = r.proj.gateway.filter(|gw| allocatable.contains(*gw)) {
                warnings.push(Warning::new(
                    RuleId::PP6,
                    fields::GATEWAY,
                    format!("{gw} is inside spec.prefixes and, with /128 allocations, may be handed out to a claim"),
                ));
            }
        }
    }
    (errors, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Kind;
    use crate::model::prefix::read_spec;
    use serde_json::{json, Value};

    /// The reading with the findings, as a review takes it (`rules::validator::read_judged`).
    fn read(kind: Kind, obj: &Value) -> PoolReading {
        let (spec, mut r) = read_spec(kind, obj);
        (r.errors, r.warnings) = findings(&spec, &r);
        r
    }

    fn pool(spec: Value) -> Value {
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterPrefixPool",
            "metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    fn texts(r: &PoolReading) -> Vec<String> {
        r.errors.iter().map(ToString::to_string).collect()
    }

    fn warnings(r: &PoolReading) -> Vec<String> {
        r.warnings
            .iter()
            .map(|w| format!("{}: {}", w.path, w.message))
            .collect()
    }

    #[test]
    fn a_valid_pool_hands_out_whole_sub_prefixes() {
        let r = read(
            Kind::InClusterPrefixPool,
            &pool(
                json!({"prefixes": ["fd00::/62"], "excludedPrefixes": ["fd00:0:0:1::5"],
                "gateway": "fd00::1"}),
            ),
        );
        assert!(r.errors.is_empty(), "{:?}", texts(&r));
        assert!(r.warnings.is_empty(), "{:?}", warnings(&r));
        assert_eq!(r.proj.prefix, Some(64));
        assert_eq!(r.proj.allocatable.count_blocks(64), 3);
        // The gateway blocks nothing: fd00::/64 is allocatable.
        assert!(r.proj.allocatable.contains(r.proj.gateway.unwrap()));
        assert_eq!(r.entries[0].path, "spec.prefixes[0]");
    }

    #[test]
    fn pp1_pp2_pp3_entries() {
        let r = read(Kind::InClusterPrefixPool, &pool(json!({"prefixes": []})));
        assert_eq!(
            texts(&r),
            ["spec.prefixes: Required value: prefixes is required"]
        );
        let r = read(
            Kind::InClusterPrefixPool,
            &pool(
                json!({"prefixes": ["10.0.0.0/8", "fd00::1/48", "fd00:1::/72", "nope", "fd00:2::1"],
                "allocationPrefixLength": 64}),
            ),
        );
        assert_eq!(
            texts(&r),
            [
                r#"spec.prefixes[0]: Invalid value: "10.0.0.0/8": only IPv6 prefixes are supported"#,
                r#"spec.prefixes[1]: Invalid value: "fd00::1/48": CIDR must be network-aligned (the network is fd00::/48)"#,
                r#"spec.prefixes[2]: Invalid value: "fd00:1::/72": CIDR prefix length must be <= allocationPrefixLength (64)"#,
                r#"spec.prefixes[3]: Invalid value: "nope": provided entry is not a valid IPv6 CIDR"#,
                r#"spec.prefixes[4]: Invalid value: "fd00:2::1": provided entry is not a valid IPv6 CIDR: a single IP address is not allowed here, expected a CIDR"#,
            ]
        );
        for bad in [0, 129, -1] {
            let r = read(
                Kind::InClusterPrefixPool,
                &pool(json!({"prefixes": ["fd00::/48"], "allocationPrefixLength": bad})),
            );
            assert_eq!(
                texts(&r),
                [format!("spec.allocationPrefixLength: Invalid value: {bad}: allocationPrefixLength must be between 1 and 128")]
            );
        }
    }

    #[test]
    fn pp4_excluded_entries_parse_and_lie_inside() {
        let r = read(
            Kind::InClusterPrefixPool,
            &pool(json!({"prefixes": ["fd00::/48"],
                "excludedPrefixes": ["fd00::/64", "fd00::10-fd00::20", "10.0.0.1", "fd01::/64", "x"]})),
        );
        assert_eq!(
            texts(&r),
            [
                r#"spec.excludedPrefixes[2]: Invalid value: "10.0.0.1": only IPv6 excluded prefixes are supported"#,
                r#"spec.excludedPrefixes[3]: Invalid value: "fd01::/64": excluded entry must lie inside spec.prefixes"#,
                r#"spec.excludedPrefixes[4]: Invalid value: "x": provided entry is not a valid IP, range, nor CIDR"#,
            ]
        );
        // fd00::/64 is excluded (twice over); 2^16 - 1 /64s remain.
        assert_eq!(r.proj.allocatable.count_blocks(64), (1 << 16) - 1);
    }

    #[test]
    fn pp5_gateway_is_ipv6_and_pp6_warnings() {
        let r = read(
            Kind::InClusterPrefixPool,
            &pool(json!({"prefixes": ["fd00::/48"], "gateway": "10.0.0.1"})),
        );
        assert_eq!(
            texts(&r),
            [r#"spec.gateway: Invalid value: "10.0.0.1": provided gateway must be IPv6"#]
        );
        let r = read(
            Kind::InClusterPrefixPool,
            &pool(
                json!({"prefixes": ["fd00::/120"], "allocationPrefixLength": 128, "gateway": "fd00::1"}),
            ),
        );
        assert!(r.errors.is_empty(), "{:?}", texts(&r));
        let w = warnings(&r);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[1].starts_with("spec.gateway: fd00::1 is inside spec.prefixes"),
            "{w:?}"
        );
        let r = read(
            Kind::InClusterPrefixPool,
            &pool(json!({"prefixes": ["fd00::/64"], "excludedPrefixes": ["fd00::1"]})),
        );
        assert_eq!(
            warnings(&r),
            ["spec.excludedPrefixes: the pool has no allocatable /64: every /64 of spec.prefixes overlaps an excluded entry"]
        );
        assert!(r.proj.allocatable.is_empty());
    }
}
