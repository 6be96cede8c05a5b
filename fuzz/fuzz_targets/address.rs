//! Entry text → sets, and the set algebra on what came out.
//!
//! Input: lines of entry text. Lines before the first empty line feed set A, the rest set B
//! (one pair of sets per family). Every line goes through each parser; every pair of sets is
//! checked against identities that hold for any sets, so a wrong merge or an off-by-one at
//! `u128::MAX` shows up as a failed assertion rather than needing a model.
#![no_main]

use ipam_guard::address::{
    canonical_entry_text, format_range, parse_cidr, parse_entry, parse_ip, AddrSet, EntryForm,
    Family, Forms, Ip, IpRange,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut a = Sets::new();
    let mut b = Sets::new();
    let mut into_b = false;
    for line in text.split('\n') {
        if line.is_empty() {
            into_b = true;
            continue;
        }
        let target = if into_b { &mut b } else { &mut a };
        parse_line(line, target);
    }
    for family in [Family::V4, Family::V6] {
        let (x, y) = (a.get(family), b.get(family));
        check_normal(x);
        check_normal(y);
        check_pair(x, y);
        check_pair(y, x);
    }
});

/// One set per family, built two ways: by `insert` one entry at a time and by `from_ranges`.
struct Sets {
    v4: (AddrSet, Vec<IpRange>),
    v6: (AddrSet, Vec<IpRange>),
}

impl Sets {
    fn new() -> Sets {
        Sets {
            v4: (AddrSet::empty(Family::V4), Vec::new()),
            v6: (AddrSet::empty(Family::V6), Vec::new()),
        }
    }

    fn add(&mut self, family: Family, r: IpRange) {
        let slot = match family {
            Family::V4 => &mut self.v4,
            Family::V6 => &mut self.v6,
        };
        slot.0.insert(r);
        slot.1.push(r);
    }

    fn get(&self, family: Family) -> &AddrSet {
        let slot = match family {
            Family::V4 => &self.v4,
            Family::V6 => &self.v6,
        };
        let bulk = AddrSet::from_ranges(family, slot.1.iter().copied());
        assert_eq!(slot.0, bulk, "insert one by one and from_ranges disagree");
        &slot.0
    }
}

fn parse_line(line: &str, sets: &mut Sets) {
    let all = parse_entry(line, Forms::ALL);
    // The narrower parsers accept a subset of what ALL accepts, and read it the same way.
    for forms in [Forms::IP, Forms::IP_OR_RANGE, Forms::CIDR] {
        match parse_entry(line, forms) {
            Ok(p) => {
                let wide = all
                    .as_ref()
                    .expect("a narrower form accepted what ALL refused");
                assert_eq!(p.value, wide.value);
                assert_eq!(p.warnings, wide.warnings);
            }
            Err(e) => {
                let _ = (e.to_string(), e.label());
            }
        }
    }
    match parse_ip(line) {
        Ok(ip) => {
            let e = all.as_ref().expect("parse_ip accepted what ALL refused");
            assert_eq!(e.value.form, EntryForm::Ip);
            assert_eq!(e.value.range, IpRange::single(ip.value.value));
            assert!(!ip.value.is_ipv4_mapped(), "a mapped address was accepted");
        }
        Err(e) => {
            let _ = (e.to_string(), e.label());
        }
    }
    match parse_cidr(line) {
        Ok(c) => {
            let e = all.as_ref().expect("parse_cidr accepted what ALL refused");
            assert_eq!(e.value, c.value.entry());
            assert!(c.value.prefix <= c.value.family().bits());
            assert!(c.value.network.contains(c.value.ip.value));
            let reread = parse_cidr(&c.value.to_string()).expect("a CIDR's canonical text parses");
            assert_eq!(reread.value.network, c.value.network);
            assert!(reread.warnings.is_empty(), "{:?}", reread.warnings);
        }
        Err(e) => {
            let _ = (e.to_string(), e.label());
        }
    }
    let Ok(parsed) = all else { return };
    let e = parsed.value;
    assert!(e.range.start <= e.range.end, "{e:?}");
    assert!(e.range.end <= e.family.max(), "{e:?}");
    if let EntryForm::Cidr { prefix } = e.form {
        let host_bits = u32::from(e.family.bits() - prefix);
        // A CIDR covers exactly 2^host_bits addresses starting on a multiple of that.
        if host_bits < 128 {
            assert_eq!(e.range.size(), 1u128 << host_bits, "{e:?}");
            assert_eq!(e.range.start % (1u128 << host_bits), 0, "{e:?}");
        } else {
            assert_eq!((e.range.start, e.range.end), (0, u128::MAX));
        }
    }
    let canonical = canonical_entry_text(&e);
    let again = parse_entry(&canonical, Forms::ALL)
        .unwrap_or_else(|err| panic!("canonical text {canonical:?} of {line:?} fails: {err}"));
    assert_eq!(again.value, e, "{canonical:?}");
    assert!(
        again.warnings.is_empty(),
        "canonical text {canonical:?} warns: {:?}",
        again.warnings
    );
    sets.add(e.family, e.range);
}

/// Sorted, inside the family, and merged: neither overlapping nor touching runs.
fn check_normal(s: &AddrSet) {
    for r in s.ranges() {
        assert!(r.start <= r.end && r.end <= s.family().max(), "{r:?}");
    }
    for w in s.ranges().windows(2) {
        assert!(w[0].end < u128::MAX && w[0].end + 1 < w[1].start, "{w:?}");
    }
    assert_eq!(
        s.first().map(|ip| ip.value),
        s.ranges().first().map(|r| r.start)
    );
    assert_eq!(
        s.last().map(|ip| ip.value),
        s.ranges().last().map(|r| r.end)
    );
    let _ = (s.to_string(), s.display_limited(3), s.len());
    // A run's text reads back as the same run, unless an end is IPv4-mapped (which the grammar
    // refuses on purpose; sets built by difference can end there).
    for r in s.ranges().iter().take(16) {
        let ends = [Ip::new(s.family(), r.start), Ip::new(s.family(), r.end)];
        if ends.iter().any(|ip| ip.is_ipv4_mapped()) {
            continue;
        }
        let text = format_range(s.family(), *r);
        let back = parse_entry(&text, Forms::IP_OR_RANGE)
            .unwrap_or_else(|e| panic!("{text:?} does not read back: {e}"));
        assert_eq!(back.value.range, *r, "{text:?}");
    }
}

fn check_pair(a: &AddrSet, b: &AddrSet) {
    let union = a.union(b);
    let inter = a.intersection(b);
    let diff = a.difference(b);
    for s in [&union, &inter, &diff] {
        check_normal(s);
    }

    assert_eq!(union, b.union(a), "union is not commutative");
    assert_eq!(inter, b.intersection(a), "intersection is not commutative");
    assert!(union.contains_set(a) && union.contains_set(b));
    assert!(a.contains_set(&inter) && b.contains_set(&inter));
    assert!(a.contains_set(&diff));
    assert!(!diff.intersects(b), "A - B still meets B");
    assert!(!diff.intersects(&inter));
    assert_eq!(diff.union(&inter), *a, "(A - B) + (A & B) != A");
    assert_eq!(a.intersects(b), !inter.is_empty());
    assert_eq!(a.contains_set(b), b.difference(a).is_empty());
    assert_eq!(a.contains_set(b), inter == *b);
    assert_eq!(union.difference(b), diff, "(A + B) - B != A - B");

    // The incremental operations agree with the bulk ones.
    let mut grown = a.clone();
    let mut shrunk = a.clone();
    for r in b.ranges() {
        grown.insert(*r);
        shrunk.remove(*r);
    }
    assert_eq!(grown, union, "insert disagrees with union");
    assert_eq!(shrunk, diff, "remove disagrees with difference");

    if let (Some(lu), Some(li)) = (
        union.len().checked_add(inter.len()),
        a.len().checked_add(b.len()),
    ) {
        if union.len() < u128::MAX && a.len() < u128::MAX && b.len() < u128::MAX {
            assert_eq!(lu, li, "|A + B| + |A & B| != |A| + |B|");
        }
    }

    // Membership at every boundary of B, and one step either side, against a linear scan.
    for r in b.ranges().iter().take(32) {
        for v in [
            r.start.checked_sub(1),
            Some(r.start),
            Some(r.end),
            r.end.checked_add(1),
        ]
        .into_iter()
        .flatten()
        {
            if v > a.family().max() {
                continue;
            }
            let ip = Ip::new(a.family(), v);
            let scan = a.ranges().iter().any(|x| x.contains(v));
            assert_eq!(a.contains(ip), scan, "contains({ip}) disagrees with a scan");
            assert_eq!(union.contains(ip), scan || b.contains(ip));
            assert_eq!(inter.contains(ip), scan && b.contains(ip));
            assert_eq!(diff.contains(ip), scan && !b.contains(ip));
        }
    }
}
