//! Property tests of `address`: the set algebra against a naive model over a small universe
//! (256 values, placed at the bottom of the space or against `u128::MAX`), and text round trips.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use ipam_guard::address::{
    canonical_entry_text, parse_cidr, parse_entry, parse_ip, AddrSet, Family, Forms, Ip, IpRange,
};
use proptest::prelude::*;

/// Where the 256-value universe sits: at zero, or ending at the family's last address.
#[derive(Debug, Clone, Copy)]
struct Universe {
    family: Family,
    base: u128,
}

impl Universe {
    fn value(self, offset: u8) -> u128 {
        self.base + u128::from(offset)
    }

    fn all(self) -> impl Iterator<Item = u128> {
        (0..=255u8).map(move |o| self.value(o))
    }
}

fn universe() -> impl Strategy<Value = Universe> {
    prop_oneof![
        Just(Universe {
            family: Family::V4,
            base: 0
        }),
        Just(Universe {
            family: Family::V4,
            base: Family::V4.max() - 255
        }),
        Just(Universe {
            family: Family::V6,
            base: 0
        }),
        Just(Universe {
            family: Family::V6,
            base: u128::MAX - 255
        }),
    ]
}

fn runs(u: Universe) -> impl Strategy<Value = Vec<IpRange>> {
    prop::collection::vec((any::<u8>(), any::<u8>()), 0..8).prop_map(move |v| {
        v.into_iter()
            .map(|(a, b)| IpRange::new(u.value(a.min(b)), u.value(a.max(b))))
            .collect()
    })
}

fn model(ranges: &[IpRange]) -> BTreeSet<u128> {
    ranges.iter().flat_map(|r| r.start..=r.end).collect()
}

fn model_of(s: &AddrSet) -> BTreeSet<u128> {
    model(s.ranges())
}

fn assert_normal(s: &AddrSet) {
    for r in s.ranges() {
        assert!(r.start <= r.end, "{r:?}");
        assert!(r.end <= s.family().max(), "{r:?}");
    }
    for w in s.ranges().windows(2) {
        // Sorted with a gap of at least one value: neither overlapping nor adjacent.
        assert!(w[0].end < u128::MAX && w[0].end + 1 < w[1].start, "{w:?}");
    }
}

fn two_sets() -> impl Strategy<Value = (Universe, Vec<IpRange>, Vec<IpRange>)> {
    universe().prop_flat_map(|u| (Just(u), runs(u), runs(u)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn from_ranges_is_sorted_merged_and_holds_the_same_values((u, a, _b) in two_sets()) {
        let s = AddrSet::from_ranges(u.family, a.clone());
        assert_normal(&s);
        let m = model(&a);
        prop_assert_eq!(model_of(&s), m.clone());
        prop_assert_eq!(s.len(), m.len() as u128);
        prop_assert_eq!(s.is_empty(), m.is_empty());
        prop_assert_eq!(s.first().map(|ip| ip.value), m.first().copied());
        prop_assert_eq!(s.last().map(|ip| ip.value), m.last().copied());
        for v in u.all() {
            prop_assert_eq!(s.contains(Ip { family: u.family, value: v }), m.contains(&v));
        }
    }

    #[test]
    fn binary_operations_match_the_model((u, a, b) in two_sets()) {
        let (sa, sb) = (AddrSet::from_ranges(u.family, a.clone()), AddrSet::from_ranges(u.family, b.clone()));
        let (ma, mb) = (model(&a), model(&b));

        let union = sa.union(&sb);
        assert_normal(&union);
        prop_assert_eq!(model_of(&union), &ma | &mb);

        let diff = sa.difference(&sb);
        assert_normal(&diff);
        prop_assert_eq!(model_of(&diff), &ma - &mb);

        let inter = sa.intersection(&sb);
        assert_normal(&inter);
        let mi = &ma & &mb;
        prop_assert_eq!(model_of(&inter), mi.clone());

        prop_assert_eq!(sa.intersects(&sb), !mi.is_empty());
        prop_assert_eq!(sb.intersects(&sa), !mi.is_empty());
        prop_assert_eq!(sa.contains_set(&sb), mb.is_subset(&ma));
        prop_assert_eq!(sb.contains_set(&sa), ma.is_subset(&mb));
        prop_assert_eq!(union.len(), (&ma | &mb).len() as u128);
        prop_assert_eq!(diff.len(), (&ma - &mb).len() as u128);
    }

    #[test]
    fn insert_and_remove_match_the_model((u, a, b) in two_sets()) {
        let mut s = AddrSet::from_ranges(u.family, a.clone());
        let mut m = model(&a);
        for (n, r) in b.iter().enumerate() {
            if n % 2 == 0 {
                s.insert(*r);
                m.extend(r.start..=r.end);
            } else {
                s.remove(*r);
                m.retain(|v| !r.contains(*v));
            }
            assert_normal(&s);
            prop_assert_eq!(model_of(&s), m.clone());
        }
        // Built incrementally or in one go, a set has one representation.
        prop_assert_eq!(s.clone(), AddrSet::from_ranges(u.family, s.ranges().to_vec()));
    }

    #[test]
    fn display_reparses_to_the_same_set((u, a, _b) in two_sets()) {
        let s = AddrSet::from_ranges(u.family, a);
        let text = s.to_string();
        if s.is_empty() {
            prop_assert_eq!(text, "none");
        } else {
            let mut back = AddrSet::empty(u.family);
            for run in text.split(", ") {
                let p = parse_entry(run, Forms::IP_OR_RANGE).unwrap();
                prop_assert!(p.warnings.is_empty());
                prop_assert_eq!(p.value.family, u.family);
                back.insert(p.value.range);
            }
            prop_assert_eq!(back, s);
        }
    }

    #[test]
    fn ipv4_text_round_trips(v in any::<u32>()) {
        let text = Ipv4Addr::from(v).to_string();
        let p = parse_ip(&text).unwrap();
        prop_assert!(p.warnings.is_empty());
        prop_assert_eq!(p.value, Ip { family: Family::V4, value: u128::from(v) });
        prop_assert_eq!(p.value.to_string(), text);
    }

    #[test]
    fn ipv6_text_round_trips(v in any::<u128>()) {
        prop_assume!(v >> 32 != 0xffff);
        let text = Ipv6Addr::from(v).to_string();
        let p = parse_ip(&text).unwrap();
        prop_assert!(p.warnings.is_empty());
        prop_assert_eq!(p.value, Ip { family: Family::V6, value: v });
        prop_assert_eq!(p.value.to_string(), text);
    }

    #[test]
    fn non_canonical_ipv6_text_warns_and_means_the_same_address(v in any::<u128>(), upper in any::<bool>()) {
        prop_assume!(v >> 32 != 0xffff);
        let full = Ipv6Addr::from(v).segments().map(|g| format!("{g:04x}")).join(":");
        let text = if upper { full.to_uppercase() } else { full };
        let p = parse_ip(&text).unwrap();
        prop_assert_eq!(p.value.value, v);
        let canonical = Ipv6Addr::from(v).to_string();
        // The fully written form is canonical only when no group has a leading zero (so none
        // is zero, nothing to compress) and no letter was upper-cased.
        let want = if text == canonical {
            vec![]
        } else {
            vec![format!("\"{text}\" is not in canonical form, use \"{canonical}\"")]
        };
        prop_assert_eq!(p.warnings, want);
    }

    #[test]
    fn ipv4_mapped_ipv6_is_always_denied(v in any::<u32>()) {
        let mapped = Ipv4Addr::from(v).to_ipv6_mapped();
        let e = parse_ip(&mapped.to_string()).unwrap_err();
        prop_assert_eq!(e.to_string(), format!("IPv4-mapped IPv6 addresses are not allowed, use {}", Ipv4Addr::from(v)));
        let hex = mapped.segments().map(|g| format!("{g:x}")).join(":");
        prop_assert!(parse_entry(&hex, Forms::ALL).is_err());
    }

    #[test]
    fn dotted_quads_are_read_exactly_as_std_reads_them(s in "[0-9]{1,4}\\.[0-9]{1,4}\\.[0-9]{1,4}\\.[0-9]{1,4}") {
        let ours = parse_ip(&s).ok().map(|p| p.value.to_std());
        let std = s.parse::<Ipv4Addr>().ok().map(std::net::IpAddr::V4);
        prop_assert_eq!(ours, std);
    }

    #[test]
    fn cidrs_round_trip_through_their_canonical_text(v in any::<u128>(), v6 in any::<bool>(), prefix in 0u8..=128) {
        let (family, value, prefix) = if v6 {
            (Family::V6, v, prefix)
        } else {
            (Family::V4, v & u128::from(u32::MAX), prefix % 33)
        };
        let ip = Ip { family, value };
        prop_assume!(!ip.is_ipv4_mapped());
        let written = format!("{ip}/{prefix}");
        let p = parse_cidr(&written).unwrap();
        prop_assert_eq!(p.value.ip, ip);
        prop_assert_eq!(p.value.prefix, prefix);
        prop_assert!(p.value.network.contains(value));
        prop_assert_eq!(p.value.network.start == value, p.warnings.is_empty());
        let canonical = p.value.to_string();
        let again = parse_cidr(&canonical).unwrap();
        prop_assert!(again.warnings.is_empty());
        prop_assert_eq!(again.value.network, p.value.network);
        let entry = parse_entry(&written, Forms::ALL).unwrap().value;
        prop_assert_eq!(canonical_entry_text(&entry), canonical);
    }

    #[test]
    fn parsing_never_panics_and_accepted_text_has_a_stable_canonical_form(
        s in prop_oneof!["[0-9a-fA-F:./%-]{0,40}", "\\PC{0,40}", "[0-9.]{1,16}(-[0-9.]{1,16})?(/[0-9+-]{0,4})?"],
    ) {
        if let Ok(p) = parse_entry(&s, Forms::ALL) {
            let canonical = canonical_entry_text(&p.value);
            let again = parse_entry(&canonical, Forms::ALL).unwrap();
            prop_assert_eq!(again.value, p.value);
            prop_assert!(again.warnings.is_empty());
            prop_assert_eq!(p.warnings.is_empty(), canonical == s);
        }
    }
}
