//! The checker's own address arithmetic, on std alone (it shares no code with ipam-guard's):
//! an address is its family and its value as a u128; a set is sorted, merged inclusive runs.

use std::net::IpAddr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    fn bits(self) -> u32 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }
}

pub fn parse_ip(text: &str) -> Option<(Family, u128)> {
    match text.trim().parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) => Some((Family::V4, u128::from(u32::from(v4)))),
        IpAddr::V6(v6) => Some((Family::V6, u128::from(v6))),
    }
}

/// Inclusive runs `(family, first, last)`, sorted, none touching another of its family.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set(Vec<(Family, u128, u128)>);

impl Set {
    pub fn one(ip: (Family, u128)) -> Set {
        Set(vec![(ip.0, ip.1, ip.1)])
    }

    /// `a`, `a-b` or `a/n` (host bits ignored, as the whole block counts); None if it does not
    /// parse or `a-b` is reversed or mixes families.
    pub fn parse_entry(text: &str) -> Option<Set> {
        let text = text.trim();
        if let Some((a, b)) = text.split_once('-') {
            let (fa, a) = parse_ip(a)?;
            let (fb, b) = parse_ip(b)?;
            return (fa == fb && a <= b).then(|| Set(vec![(fa, a, b)]));
        }
        if let Some((a, len)) = text.split_once('/') {
            let (f, a) = parse_ip(a)?;
            let len: u32 = len.parse().ok()?;
            if len > f.bits() {
                return None;
            }
            let host = f.bits() - len;
            let mask = if host >= 128 {
                u128::MAX
            } else {
                (1u128 << host) - 1
            };
            return Some(Set(vec![(f, a & !mask, a | mask)]));
        }
        parse_ip(text).map(Set::one)
    }

    /// The union of entries; None if any does not parse.
    pub fn parse_all<'a>(entries: impl IntoIterator<Item = &'a String>) -> Option<Set> {
        let mut out = Set::default();
        for e in entries {
            out = out.union(&Set::parse_entry(e)?);
        }
        Some(out)
    }

    fn normalize(mut runs: Vec<(Family, u128, u128)>) -> Set {
        runs.sort();
        let mut out: Vec<(Family, u128, u128)> = Vec::new();
        for (f, a, b) in runs {
            match out.last_mut() {
                Some(last) if last.0 == f && a <= last.2.saturating_add(1) => {
                    last.2 = last.2.max(b);
                }
                _ => out.push((f, a, b)),
            }
        }
        Set(out)
    }

    pub fn union(&self, other: &Set) -> Set {
        Set::normalize(self.0.iter().chain(other.0.iter()).copied().collect())
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let mut out = Vec::new();
        for &(f, a, b) in &self.0 {
            for &(g, c, d) in &other.0 {
                if f == g && a.max(c) <= b.min(d) {
                    out.push((f, a.max(c), b.min(d)));
                }
            }
        }
        Set::normalize(out)
    }

    pub fn difference(&self, other: &Set) -> Set {
        let mut out = Vec::new();
        for &(f, a, b) in &self.0 {
            let mut pieces = vec![(a, b)];
            for &(g, c, d) in &other.0 {
                if f != g {
                    continue;
                }
                pieces = pieces
                    .into_iter()
                    .flat_map(|(x, y)| {
                        let mut keep = Vec::new();
                        if d < x || c > y {
                            keep.push((x, y));
                        } else {
                            if c > x {
                                keep.push((x, c - 1));
                            }
                            if d < y {
                                keep.push((d + 1, y));
                            }
                        }
                        keep
                    })
                    .collect();
            }
            out.extend(pieces.into_iter().map(|(x, y)| (f, x, y)));
        }
        Set::normalize(out)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, ip: (Family, u128)) -> bool {
        self.0
            .iter()
            .any(|&(f, a, b)| f == ip.0 && a <= ip.1 && ip.1 <= b)
    }

    pub fn intersects(&self, other: &Set) -> bool {
        !self.intersection(other).is_empty()
    }
}

impl std::fmt::Display for Set {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |fam: Family, v: u128| match fam {
            Family::V4 => std::net::Ipv4Addr::from(v as u32).to_string(),
            Family::V6 => std::net::Ipv6Addr::from(v).to_string(),
        };
        let runs: Vec<String> = self
            .0
            .iter()
            .map(|&(fam, a, b)| match a == b {
                true => show(fam, a),
                false => format!("{}-{}", show(fam, a), show(fam, b)),
            })
            .collect();
        f.write_str(&runs.join(", "))
    }
}

/// What a pool can hand out, by the in-cluster provider's reading (docs/rules.md, A8 and P10):
/// its declared addresses, minus the excluded ones, the gateway, and (unless
/// `allocateReservedIPAddresses`) the network and broadcast addresses of the IPv4 subnet of its
/// prefix (the subnet of its lowest address, P5). None when an entry does not parse.
pub fn allocatable(p: &super::model::PoolSpec) -> Option<Set> {
    let declared = Set::parse_all(&p.addresses)?;
    let mut out = declared.difference(&Set::parse_all(&p.excluded)?);
    if let Some(g) = p.gateway.as_deref().and_then(parse_ip) {
        out = out.difference(&Set::one(g));
    }
    let lowest = declared.0.first().copied();
    if let Some((Family::V4, low, _)) = lowest {
        if !p.allocate_reserved && p.prefix <= 30 {
            let host = 32 - p.prefix;
            let mask = (1u128 << host) - 1;
            let (net, bcast) = (low & !mask, low | mask);
            out = out
                .difference(&Set::one((Family::V4, net)))
                .difference(&Set::one((Family::V4, bcast)));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Set {
        Set::parse_entry(text).unwrap()
    }

    #[test]
    fn entries_parse_as_the_providers_write_them() {
        assert_eq!(s("10.0.0.5").to_string(), "10.0.0.5");
        assert_eq!(s("10.0.0.5-10.0.0.9").to_string(), "10.0.0.5-10.0.0.9");
        assert_eq!(s("10.0.0.16/29").to_string(), "10.0.0.16-10.0.0.23");
        assert_eq!(s("2001:db8::/127").to_string(), "2001:db8::-2001:db8::1");
        assert!(Set::parse_entry("10.0.0.9-10.0.0.5").is_none());
        assert!(Set::parse_entry("10.0.0.1-2001:db8::1").is_none());
        assert!(Set::parse_entry("10.0.0.256").is_none());
    }

    #[test]
    fn set_arithmetic() {
        let a = s("10.0.0.5-10.0.0.20");
        assert_eq!(
            a.difference(&s("10.0.0.10")).to_string(),
            "10.0.0.5-10.0.0.9, 10.0.0.11-10.0.0.20"
        );
        assert_eq!(
            a.intersection(&s("10.0.0.18-10.0.0.30")).to_string(),
            "10.0.0.18-10.0.0.20"
        );
        assert!(!a.intersects(&s("10.0.0.21-10.0.0.30")));
        assert!(!a.intersects(&s("::a-::14")), "families never meet");
        assert_eq!(
            a.union(&s("10.0.0.21")).to_string(),
            "10.0.0.5-10.0.0.21",
            "touching runs merge"
        );
        assert!(a.contains(parse_ip("10.0.0.20").unwrap()));
        assert!(!a.contains(parse_ip("10.0.0.21").unwrap()));
    }

    #[test]
    fn allocatable_leaves_out_gateway_exclusions_and_reserved() {
        let p = super::super::model::PoolSpec {
            addresses: vec!["10.0.0.0-10.0.0.10".into(), "10.0.0.255".into()],
            excluded: vec!["10.0.0.5".into()],
            gateway: Some("10.0.0.1".into()),
            prefix: 24,
            allocate_reserved: false,
            space: "default".into(),
        };
        assert_eq!(
            allocatable(&p).unwrap().to_string(),
            "10.0.0.2-10.0.0.4, 10.0.0.6-10.0.0.10"
        );
    }
}
