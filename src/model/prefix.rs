//! Reader for `InClusterPrefixPool` and `GlobalInClusterPrefixPool` (`ipam.cluster.x-k8s.io`
//! v1alpha2): IPv6 pools that hand out whole sub-prefixes of `spec.allocationPrefixLength`
//! (default 64) from `spec.prefixes`, less any sub-prefix an entry of `spec.excludedPrefixes`
//! touches. Rules PP1–PP6.
//!
//! The allocatable set is the union of the sub-prefixes the provider could hand out, so overlap
//! (P10), held addresses (P8) and usage read these pools as they read every other pool: a
//! sub-prefix that an exclusion only partly covers is not allocatable and not in the set. The
//! gateway is informational (the provider copies it into every IPAddress) and blocks nothing.

use serde_json::Value;

use crate::address::{parse_cidr, parse_entry, AddrError, AddrSet, Family, Forms, IpRange};
use crate::field::{FieldError, Warning};
use crate::kinds::Kind;
use crate::model::paths::prefix_pool as fields;
use crate::model::pool::{projection, PoolEntry, PoolReading};
use crate::model::{read, Meta};
use crate::rule_id::RuleId;

/// What the provider uses when `allocationPrefixLength` is absent (its CRD default as well).
pub const DEFAULT_ALLOCATION_PREFIX_LENGTH: u8 = 64;

const NOT_A_CIDR: &str = "provided entry is not a valid IPv6 CIDR";
const NOT_AN_ENTRY: &str = "provided entry is not a valid IP, range, nor CIDR";
const V6_ONLY: &str = "only IPv6 prefixes are supported";
const V6_ONLY_EXCLUDED: &str = "only IPv6 excluded prefixes are supported";

/// `spec.allocationPrefixLength` as the provider reads it: absent means the default. Returns the
/// raw value too, for messages. A wrong type is None here (the reader reports it).
pub fn allocation_length(obj: &Value) -> Option<i64> {
    match read::get(obj, fields::ALLOCATION_PREFIX_LENGTH) {
        None => Some(i64::from(DEFAULT_ALLOCATION_PREFIX_LENGTH)),
        Some(v) => v.as_i64(),
    }
}

/// One parsed `spec.prefixes` entry.
struct Declared<'a> {
    path: String,
    text: &'a str,
    range: IpRange,
}

/// Reads a prefix pool of either kind.
pub(crate) fn read(kind: Kind, obj: &Value) -> PoolReading {
    let meta = Meta::read(obj);
    let mut errors = Vec::new();
    let mut warnings = Vec::new();

    // PP3: the length of every sub-prefix handed out.
    let length = match read::keep(
        read::integer(RuleId::PP3, obj, fields::ALLOCATION_PREFIX_LENGTH),
        &mut errors,
    ) {
        None if read::get(obj, fields::ALLOCATION_PREFIX_LENGTH).is_some() => None,
        None => Some(DEFAULT_ALLOCATION_PREFIX_LENGTH),
        Some(n) => match u8::try_from(n) {
            Ok(n @ 1..=128) => Some(n),
            _ => {
                errors.push(FieldError::invalid(
                    RuleId::PP3,
                    fields::ALLOCATION_PREFIX_LENGTH,
                    n,
                    "allocationPrefixLength must be between 1 and 128",
                ));
                None
            }
        },
    };

    // PP1, PP2, PP3: the prefixes.
    let list = read::keep(read::array(RuleId::PP1, obj, fields::PREFIXES), &mut errors);
    let all = list.unwrap_or_default();
    if all.is_empty() && !errors.iter().any(|e| e.path == fields::PREFIXES) {
        errors.push(FieldError::required(
            RuleId::PP1,
            fields::PREFIXES,
            "prefixes is required",
        ));
    }
    let mut declared_items = Vec::new();
    let before = errors.len();
    for (i, v) in all.iter().enumerate() {
        if read::list_full(
            RuleId::PP2,
            fields::PREFIXES,
            &mut errors,
            before,
            all.len() - i,
        ) {
            break;
        }
        let path = format!("spec.prefixes[{i}]");
        let Some(text) = read::item_text(RuleId::PP2, v, &path, &mut errors) else {
            continue;
        };
        let cidr = match parse_cidr(text) {
            Ok(p) => p,
            Err(e) => {
                let detail = match e {
                    AddrError::Invalid { .. } => NOT_A_CIDR.to_string(),
                    other => format!("{NOT_A_CIDR}: {other}"),
                };
                errors.push(FieldError::invalid(RuleId::PP2, path, text, detail));
                continue;
            }
        };
        let c = cidr.value;
        if c.family() != Family::V6 {
            errors.push(FieldError::invalid(RuleId::PP2, path, text, V6_ONLY));
            continue;
        }
        if c.has_host_bits() {
            errors.push(FieldError::invalid(
                RuleId::PP2,
                path.clone(),
                text,
                format!("CIDR must be network-aligned (the network is {c})"),
            ));
        } else {
            warnings.extend(
                cidr.warnings
                    .into_iter()
                    .map(|w| Warning::new(RuleId::PP2, path.clone(), w)),
            );
        }
        if let Some(len) = length.filter(|len| c.prefix > *len) {
            errors.push(FieldError::invalid(
                RuleId::PP3,
                path.clone(),
                text,
                format!("CIDR prefix length must be <= allocationPrefixLength ({len})"),
            ));
        }
        declared_items.push(Declared {
            path,
            text,
            range: c.network,
        });
    }
    let declared = AddrSet::from_ranges(Family::V6, declared_items.iter().map(|d| d.range));

    // PP4: the exclusions, each inside the pool.
    let excluded_list = read::keep(
        read::array(RuleId::PP4, obj, fields::EXCLUDED_PREFIXES),
        &mut errors,
    );
    let excluded_all = excluded_list.unwrap_or_default();
    let mut excluded = AddrSet::empty(Family::V6);
    let before = errors.len();
    for (i, v) in excluded_all.iter().enumerate() {
        let left = excluded_all.len() - i;
        if read::list_full(
            RuleId::PP4,
            fields::EXCLUDED_PREFIXES,
            &mut errors,
            before,
            left,
        ) {
            break;
        }
        let path = format!("spec.excludedPrefixes[{i}]");
        let Some(text) = read::item_text(RuleId::PP4, v, &path, &mut errors) else {
            continue;
        };
        let parse = parse_entry(text, Forms::ALL).map_err(|e| match e {
            AddrError::Invalid { .. } => NOT_AN_ENTRY.to_string(),
            other => format!("{NOT_AN_ENTRY}: {other}"),
        });
        let Some(entry) = read::parsed(RuleId::PP4, &path, text, parse, &mut errors, &mut warnings)
        else {
            continue;
        };
        if entry.family != Family::V6 {
            errors.push(FieldError::invalid(
                RuleId::PP4,
                path,
                text,
                V6_ONLY_EXCLUDED,
            ));
            continue;
        }
        let set = entry.to_set();
        // Judged only against entries that parsed: an exclusion is not blamed for a bad prefix.
        if !declared_items.is_empty() && !declared.contains_set(&set) {
            errors.push(FieldError::invalid(
                RuleId::PP4,
                path,
                text,
                "excluded entry must lie inside spec.prefixes",
            ));
        }
        excluded = excluded.union(&set);
    }

    // PP5: the gateway, informational but an IPv6 address.
    let (gw_text, gateway) = read::ip(
        RuleId::PP5,
        obj,
        fields::GATEWAY,
        &mut errors,
        &mut warnings,
    );
    let gateway = match (gw_text, gateway) {
        (Some(text), Some(gw)) if gw.family != Family::V6 => {
            errors.push(FieldError::invalid(
                RuleId::PP5,
                fields::GATEWAY,
                text,
                "provided gateway must be IPv6",
            ));
            None
        }
        (_, gw) => gw,
    };

    let free = declared.difference(&excluded);
    // A pool whose length is wrong is read as handing out every address it declares, so the
    // index still sees everything it could overlap.
    let allocatable = match length {
        Some(len) => free.whole_blocks(len),
        None => free,
    };

    // PP6: valid, but not what the author most likely meant.
    if let Some(len) = length {
        // Only the exclusions' doing: entries too small for one sub-prefix are PP3's.
        if allocatable.is_empty() && !declared.whole_blocks(len).is_empty() {
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
            if let Some(gw) = gateway.filter(|gw| allocatable.contains(*gw)) {
                warnings.push(Warning::new(
                    RuleId::PP6,
                    fields::GATEWAY,
                    format!("{gw} is inside spec.prefixes and, with /128 allocations, may be handed out to a claim"),
                ));
            }
        }
    }

    let family = (!declared_items.is_empty()).then_some(Family::V6);
    let entries = declared_items
        .iter()
        .map(|d| PoolEntry {
            path: d.path.clone(),
            text: d.text.to_string(),
            set: AddrSet::from_range(Family::V6, d.range),
        })
        .collect();
    PoolReading {
        proj: projection(kind, &meta, family, allocatable, gateway, length),
        declared,
        excluded,
        subnet: None,
        entries,
        declared_path: fields::PREFIXES,
        errors,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
