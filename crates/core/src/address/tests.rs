use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::*;

fn v4(s: &str) -> u128 {
    u128::from(u32::from(s.parse::<Ipv4Addr>().unwrap()))
}

fn v6(s: &str) -> u128 {
    u128::from(s.parse::<Ipv6Addr>().unwrap())
}

fn err(s: &str, forms: Forms) -> String {
    match parse_entry(s, forms) {
        Ok(p) => panic!("{s:?} parsed as {:?}", p.value),
        Err(e) => e.to_string(),
    }
}

fn ok(s: &str, forms: Forms) -> Parsed<Entry> {
    parse_entry(s, forms).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn set(family: Family, runs: &[(u128, u128)]) -> AddrSet {
    AddrSet::from_ranges(family, runs.iter().map(|&(a, b)| IpRange::new(a, b)))
}

#[test]
fn accepts_valid_entries_in_canonical_form_without_warnings() {
    // (text, family, the run it covers as `format_range` writes it)
    #[rustfmt::skip]
    let cases: &[(&str, Family, &str)] = &[
        ("10.0.0.1", Family::V4, "10.0.0.1"),
        ("0.0.0.0", Family::V4, "0.0.0.0"),
        ("255.255.255.255", Family::V4, "255.255.255.255"),
        ("10.0.0.1-10.0.0.9", Family::V4, "10.0.0.1-10.0.0.9"),
        ("10.0.0.5-10.0.0.5", Family::V4, "10.0.0.5"),
        ("10.0.0.0/24", Family::V4, "10.0.0.0-10.0.0.255"),
        ("0.0.0.0/0", Family::V4, "0.0.0.0-255.255.255.255"),
        ("10.0.0.0/31", Family::V4, "10.0.0.0-10.0.0.1"),
        ("10.0.0.7/32", Family::V4, "10.0.0.7"),
        ("::1", Family::V6, "::1"),
        ("::", Family::V6, "::"),
        ("2001:db8::1", Family::V6, "2001:db8::1"),
        ("fe80::1", Family::V6, "fe80::1"),
        ("::/0", Family::V6, "::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
        ("2001:db8::/127", Family::V6, "2001:db8::-2001:db8::1"),
        ("2001:db8::5/128", Family::V6, "2001:db8::5"),
        ("2001:db8::/48", Family::V6, "2001:db8::-2001:db8:0:ffff:ffff:ffff:ffff:ffff"),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            Family::V6, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Family::V6, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
    ];
    for &(text, family, run) in cases {
        let p = ok(text, Forms::ALL);
        assert_eq!(p.value.family, family, "{text}");
        assert_eq!(format_range(family, p.value.range), run, "{text}");
        let form = match (text.split_once('/'), text.contains('-')) {
            (Some((_, prefix)), _) => EntryForm::Cidr {
                prefix: prefix.parse().unwrap(),
            },
            (None, true) => EntryForm::Range,
            (None, false) => EntryForm::Ip,
        };
        assert_eq!(p.value.form, form, "{text}");
        assert!(p.warnings.is_empty(), "{text}: {:?}", p.warnings);
        assert_eq!(canonical_entry_text(&p.value), text);
    }
    let top = ok(
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        Forms::ALL,
    );
    assert_eq!(top.value.range, IpRange::new(u128::MAX - 15, u128::MAX));
    assert_eq!(
        ok("2001:db8::/127", Forms::ALL).value.range.end,
        v6("2001:db8::1")
    );
}

#[test]
fn denies_malformed_text_with_a_specific_detail() {
    #[rustfmt::skip]
    let cases: &[(&str, Forms, &str)] = &[
        ("", Forms::ALL, "must not be empty"),
        ("", Forms::IP, "must not be empty"),
        (" 10.0.0.1", Forms::IP, "leading or trailing whitespace is not allowed"),
        ("10.0.0.1 ", Forms::IP, "leading or trailing whitespace is not allowed"),
        ("10.0.0.1\n", Forms::IP, "leading or trailing whitespace is not allowed"),
        ("10.0.0.1 - 10.0.0.9", Forms::ALL, "whitespace is not allowed inside an address"),
        ("10.0.0.0/ 24", Forms::ALL, "whitespace is not allowed inside an address"),
        ("abc", Forms::IP, "not a valid IP address"),
        ("abc", Forms::ALL, "not a valid IP address, range or CIDR"),
        ("abc", Forms::IP_OR_RANGE, "not a valid IP address or range"),
        ("abc", Forms::CIDR, "not a valid CIDR"),
        ("1.2.3", Forms::IP, "not a valid IP address"),
        ("1.2.3.4.5", Forms::IP, "not a valid IP address"),
        ("1.2.3.4.", Forms::IP, "not a valid IP address"),
        ("+1.2.3.4", Forms::IP, "not a valid IP address"),
        ("0x0a.0.0.1", Forms::IP, "not a valid IP address"),
        ("100%", Forms::IP, "not a valid IP address"),
        ("[::1]", Forms::IP, "not a valid IP address"),
        (":::", Forms::IP, "not a valid IP address"),
        ("1::2::3", Forms::IP, "not a valid IP address"),
        ("00001::1", Forms::IP, "not a valid IP address"),
        ("10.0.0.01", Forms::IP, "leading zeros are not allowed in an IPv4 octet"),
        ("010.0.0.1", Forms::ALL, "leading zeros are not allowed in an IPv4 octet"),
        ("10.0.0.00", Forms::IP, "leading zeros are not allowed in an IPv4 octet"),
        ("10.0.0.256", Forms::IP, "IPv4 octets must be between 0 and 255"),
        ("10.0.0.99999999999999999999", Forms::IP, "IPv4 octets must be between 0 and 255"),
        ("fe80::1%eth0", Forms::IP, "zone ids are not allowed in an IP address"),
        ("fe80::1%eth-0", Forms::ALL, "zone ids are not allowed in an IP address"),
        ("fe80::%eth0/64", Forms::ALL, "zone ids are not allowed in an IP address"),
        ("fe80::1-fe80::2%1", Forms::ALL, "zone ids are not allowed in an IP address"),
        ("::ffff:10.0.0.1", Forms::IP, "IPv4-mapped IPv6 addresses are not allowed, use 10.0.0.1"),
        ("::ffff:a00:1", Forms::ALL, "IPv4-mapped IPv6 addresses are not allowed, use 10.0.0.1"),
        ("::FFFF:0:0", Forms::IP, "IPv4-mapped IPv6 addresses are not allowed, use 0.0.0.0"),
        ("::ffff:10.0.0.0/104", Forms::ALL, "IPv4-mapped IPv6 addresses are not allowed, use 10.0.0.0/8"),
        ("::ffff:0:0/96", Forms::CIDR, "IPv4-mapped IPv6 addresses are not allowed, use 0.0.0.0/0"),
        ("::ffff:0:0/80", Forms::CIDR, "IPv4-mapped IPv6 addresses are not allowed"),
        ("::1-::ffff:10.0.0.1", Forms::ALL,
            "invalid range end: IPv4-mapped IPv6 addresses are not allowed, use 10.0.0.1"),
        ("1.2.3.4-", Forms::ALL, "range end is missing"),
        ("-1.2.3.4", Forms::ALL, "range start is missing"),
        ("-", Forms::ALL, "range start is missing"),
        ("1.2.3.4--1.2.3.5", Forms::ALL, "a range must contain exactly one '-'"),
        ("1.2.3.4-1.2.3.5-1.2.3.6", Forms::ALL, "a range must contain exactly one '-'"),
        ("1.2.3.4-abc", Forms::ALL, "invalid range end: not a valid IP address"),
        ("1.2.3.04-1.2.3.5", Forms::ALL,
            "invalid range start: leading zeros are not allowed in an IPv4 octet"),
        ("10.0.0.0/24-10.0.0.255", Forms::ALL, "range ends must be IP addresses, not CIDRs"),
        ("10.0.0.1-::1", Forms::ALL, "range ends are of different IP families"),
        ("::1-10.0.0.1", Forms::IP_OR_RANGE, "range ends are of different IP families"),
        ("10.0.0.9-10.0.0.1", Forms::ALL, "range start 10.0.0.9 is after range end 10.0.0.1"),
        ("2001:db8::9-2001:DB8::1", Forms::ALL,
            "range start 2001:db8::9 is after range end 2001:db8::1"),
        ("1.2.3.4/", Forms::ALL, "prefix length is missing after '/'"),
        ("/24", Forms::ALL, "the address before '/' is missing"),
        ("abc/24", Forms::ALL, "the address before '/' is not a valid IP address"),
        ("10.0.0.01/24", Forms::CIDR, "leading zeros are not allowed in an IPv4 octet"),
        ("1.2.3.4/24/8", Forms::ALL, "a CIDR must contain exactly one '/'"),
        ("1.2.3.4/033", Forms::ALL, "leading zeros are not allowed in a prefix length"),
        ("1.2.3.0/024", Forms::ALL, "leading zeros are not allowed in a prefix length"),
        ("1.2.3.0/00", Forms::ALL, "leading zeros are not allowed in a prefix length"),
        ("1.2.3.4/33", Forms::ALL, "prefix length must be a number between 0 and 32 for an IPv4 address"),
        ("1.2.3.4/+8", Forms::ALL, "prefix length must be a number between 0 and 32 for an IPv4 address"),
        ("1.2.3.4/-8", Forms::ALL, "prefix length must be a number between 0 and 32 for an IPv4 address"),
        ("1.2.3.4/-8", Forms::CIDR, "prefix length must be a number between 0 and 32 for an IPv4 address"),
        ("10.0.0.1-10.0.0.9/24", Forms::ALL, "the address before '/' is not a valid IP address"),
        ("::/0-::1", Forms::ALL, "range ends must be IP addresses, not CIDRs"),
        ("1.2.3.4/x", Forms::ALL, "prefix length must be a number between 0 and 32 for an IPv4 address"),
        ("1.2.3.4/99999999999999999999", Forms::ALL,
            "prefix length must be a number between 0 and 32 for an IPv4 address"),
        ("::/129", Forms::ALL, "prefix length must be a number between 0 and 128 for an IPv6 address"),
        ("::/256", Forms::ALL, "prefix length must be a number between 0 and 128 for an IPv6 address"),
        // The right shape for another field.
        ("10.0.0.0/24", Forms::IP, "a CIDR is not allowed here, expected an IP address"),
        ("10.0.0.1-10.0.0.2", Forms::IP, "a range is not allowed here, expected an IP address"),
        ("10.0.0.0/24", Forms::IP_OR_RANGE,
            "a CIDR is not allowed here, expected an IP address or a range"),
        ("10.0.0.1", Forms::CIDR, "a single IP address is not allowed here, expected a CIDR"),
        ("10.0.0.01/24", Forms::IP, "not a valid IP address"),
        ("10.0.0.01", Forms::CIDR, "not a valid CIDR"),
    ];
    for &(text, forms, want) in cases {
        assert_eq!(err(text, forms), want, "{text:?} as {forms:?}");
    }
}

#[test]
fn warns_about_non_canonical_ipv6_with_the_canonical_text() {
    #[rustfmt::skip]
    let cases: &[(&str, Forms, &str)] = &[
        ("2001:DB8::1", Forms::IP, "2001:db8::1"),
        ("2001:0db8::1", Forms::IP, "2001:db8::1"),
        ("2001:db8:0:0:0:0:0:1", Forms::IP, "2001:db8::1"),
        ("2001:db8:0:0:1:0:0:1", Forms::IP, "2001:db8::1:0:0:1"),
        ("1::2:3:4:5:6:7", Forms::IP, "1:0:2:3:4:5:6:7"),
        ("0::0", Forms::IP, "::"),
        ("64:ff9b::10.0.0.1", Forms::IP, "64:ff9b::a00:1"),
        ("2001:DB8::/32", Forms::CIDR, "2001:db8::/32"),
        ("0::/0", Forms::ALL, "::/0"),
        ("2001:db8::1-2001:DB8::9", Forms::ALL, "2001:db8::1-2001:db8::9"),
    ];
    for &(text, forms, canonical) in cases {
        let p = ok(text, forms);
        let want = format!("\"{text}\" is not in canonical form, use \"{canonical}\"");
        assert_eq!(p.warnings, vec![want], "{text}");
        assert_eq!(canonical_entry_text(&p.value), canonical);
        let again = ok(canonical, forms);
        assert_eq!(again.value, p.value, "{text}");
        assert!(again.warnings.is_empty(), "{text}");
    }
    let p = ok("::10.0.0.1", Forms::IP);
    assert_eq!(
        p.warnings,
        vec![
            "\"::10.0.0.1\" is not in canonical form, use \"::a00:1\" (IPv4-compatible IPv6 \
             notation is deprecated; this is an IPv6 address, not IPv4)"
        ]
    );
}

#[test]
fn ipv4_compatible_ipv6_is_the_ipv6_address_it_spells() {
    let p = parse_ip("::10.0.0.1").unwrap();
    assert_eq!(p.value, Ip::new(Family::V6, 0x0a00_0001));
    assert_eq!(p.value.to_string(), "::a00:1");
}

#[test]
fn host_bits_are_a_warning_naming_the_network() {
    let p = parse_cidr("10.0.0.1/24").unwrap();
    assert_eq!(
        p.warnings,
        vec!["\"10.0.0.1/24\" has host bits set; it means 10.0.0.0/24"]
    );
    assert_eq!(p.value.ip, Ip::new(Family::V4, v4("10.0.0.1")));
    assert_eq!(p.value.prefix, 24);
    assert_eq!(
        p.value.network,
        IpRange::new(v4("10.0.0.0"), v4("10.0.0.255"))
    );
    assert!(p.value.has_host_bits());
    assert_eq!(p.value.to_string(), "10.0.0.0/24");

    let e = ok("10.0.0.1/24", Forms::ALL);
    assert_eq!(e.value.range, p.value.network);
    assert_eq!(canonical_entry_text(&e.value), "10.0.0.0/24");

    // Host bits and non-canonical text: one warning, whose network is canonical.
    let p = parse_cidr("2001:DB8::1/64").unwrap();
    assert_eq!(
        p.warnings,
        vec!["\"2001:DB8::1/64\" has host bits set; it means 2001:db8::/64"]
    );

    let p = parse_cidr("10.1.2.3/0").unwrap();
    assert_eq!(p.value.network, IpRange::new(0, Family::V4.max()));
    let p = parse_cidr("ffff::1/0").unwrap();
    assert_eq!(p.value.network, IpRange::new(0, u128::MAX));
}

#[test]
fn parse_ip_and_parse_cidr_return_their_values() {
    let p = parse_ip("10.0.0.5").unwrap();
    assert_eq!(p.value, Ip::new(Family::V4, v4("10.0.0.5")));
    assert!(p.warnings.is_empty());
    let p = parse_ip("2001:DB8::1").unwrap();
    assert_eq!(p.value.to_string(), "2001:db8::1");
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(
        parse_ip("10.0.0.256").unwrap_err(),
        AddrError::OctetTooLarge
    );
    assert_eq!(
        parse_ip("x").unwrap_err().to_string(),
        "not a valid IP address"
    );
    let c = parse_cidr("::/0").unwrap().value;
    assert_eq!(
        (c.ip, c.prefix, c.network),
        (Ip::new(Family::V6, 0), 0, IpRange::new(0, u128::MAX))
    );
    assert_eq!(c.entry().to_set().len(), u128::MAX);
}

#[test]
fn check_prefix_bounds_by_family() {
    assert_eq!(check_prefix(Family::V4, 0), Ok(0));
    assert_eq!(check_prefix(Family::V4, 32), Ok(32));
    assert_eq!(check_prefix(Family::V6, 128), Ok(128));
    let msg = |f, p| check_prefix(f, p).unwrap_err().to_string();
    assert_eq!(msg(Family::V4, -1), "prefix cannot be negative");
    assert_eq!(msg(Family::V4, i64::MIN), "prefix cannot be negative");
    assert_eq!(
        msg(Family::V4, 33),
        "prefix is too large for an IPv4 address"
    );
    assert_eq!(
        msg(Family::V6, 129),
        "prefix is too large for an IPv6 address"
    );
    // Never wraps: 256 + 24 is not /24.
    assert_eq!(
        msg(Family::V4, 280),
        "prefix is too large for an IPv4 address"
    );
    assert_eq!(
        msg(Family::V6, i64::MAX),
        "prefix is too large for an IPv6 address"
    );
}

#[test]
fn subnet_of_covers_network_and_broadcast() {
    let ip = Ip::new(Family::V4, v4("10.1.2.3"));
    assert_eq!(subnet_of(ip, 0), IpRange::new(0, 0xffff_ffff));
    assert_eq!(
        subnet_of(ip, 8),
        IpRange::new(v4("10.0.0.0"), v4("10.255.255.255"))
    );
    assert_eq!(
        subnet_of(ip, 31),
        IpRange::new(v4("10.1.2.2"), v4("10.1.2.3"))
    );
    assert_eq!(subnet_of(ip, 32), IpRange::single(v4("10.1.2.3")));
    let ip = Ip::new(Family::V6, u128::MAX);
    assert_eq!(subnet_of(ip, 0), IpRange::new(0, u128::MAX));
    assert_eq!(subnet_of(ip, 127), IpRange::new(u128::MAX - 1, u128::MAX));
    assert_eq!(subnet_of(ip, 128), IpRange::single(u128::MAX));
}

#[test]
fn ip_converts_to_and_from_std() {
    for text in [
        "10.0.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "::",
        "2001:db8::1",
        "::ffff:10.0.0.1",
    ] {
        let std: IpAddr = text.parse().unwrap();
        let ip = Ip::from_std(std);
        assert_eq!(ip.to_std(), std);
        assert_eq!(ip.to_string(), std.to_string());
    }
    assert!(Ip::from_std("::ffff:10.0.0.1".parse().unwrap()).is_ipv4_mapped());
    assert!(!Ip::from_std("10.0.0.1".parse().unwrap()).is_ipv4_mapped());
    assert_eq!(Family::V4.name(), "IPv4");
    assert_eq!(Family::V6.to_string(), "IPv6");
    assert_eq!((Family::V4.bits(), Family::V6.bits()), (32, 128));
    assert_eq!(
        (Family::V4.max(), Family::V6.max()),
        (0xffff_ffff, u128::MAX)
    );
}

#[test]
fn sets_merge_overlapping_and_adjacent_runs() {
    let s = set(
        Family::V4,
        &[(5, 9), (1, 3), (4, 4), (20, 30), (25, 26), (12, 12)],
    );
    assert_eq!(
        s.ranges(),
        &[
            IpRange::new(1, 9),
            IpRange::new(12, 12),
            IpRange::new(20, 30)
        ]
    );
    assert_eq!(s.len(), 9 + 1 + 11);
    assert_eq!(
        s.to_string(),
        "0.0.0.1-0.0.0.9, 0.0.0.12, 0.0.0.20-0.0.0.30"
    );
    assert_eq!(s.display_limited(2), "0.0.0.1-0.0.0.9, 0.0.0.12 and 1 more");
    assert_eq!(s.display_limited(3), s.to_string());
    assert_eq!(s.display_limited(0), "0.0.0.1-0.0.0.9 and 2 more");
    assert_eq!(AddrSet::empty(Family::V6).to_string(), "none");
    assert_eq!(
        format_range(Family::V4, IpRange::single(v4("10.0.0.5"))),
        "10.0.0.5"
    );
    assert_eq!(format_range(Family::V6, IpRange::new(1, 9)), "::1-::9");
}

#[test]
fn sets_work_at_the_last_ipv6_address() {
    let max = u128::MAX;
    let full = AddrSet::full(Family::V6);
    assert_eq!(full.ranges(), &[IpRange::new(0, max)]);
    assert_eq!(full.len(), max);
    assert_eq!(full.last(), Some(Ip::new(Family::V6, max)));

    let top = set(Family::V6, &[(max - 9, max), (max - 20, max - 10)]);
    assert_eq!(top.ranges(), &[IpRange::new(max - 20, max)]);
    assert!(top.contains(Ip::new(Family::V6, max)));

    let mut s = full.clone();
    s.remove(IpRange::single(max));
    assert_eq!(s.ranges(), &[IpRange::new(0, max - 1)]);
    s.remove(IpRange::single(0));
    assert_eq!(s.ranges(), &[IpRange::new(1, max - 1)]);
    s.insert(IpRange::new(max, max));
    assert_eq!(s.ranges(), &[IpRange::new(1, max)]);
    s.insert(IpRange::single(0));
    assert_eq!(s, full);

    assert_eq!(full.difference(&top).ranges(), &[IpRange::new(0, max - 21)]);
    assert!(full.difference(&full).is_empty());
    assert_eq!(full.intersection(&top), top);
    assert!(full.intersects(&top));
    assert!(full.contains_set(&top));
    assert!(!top.contains_set(&full));
    assert_eq!(top.union(&set(Family::V6, &[(0, max - 21)])), full);
    assert_eq!(
        top.to_string(),
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffeb-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
    );
}

#[test]
fn sets_of_different_families_never_mix_or_panic() {
    let a = set(Family::V4, &[(0, 10)]);
    let b = set(Family::V6, &[(0, 10)]);
    assert_eq!(a.union(&b), a);
    assert_eq!(a.difference(&b), a);
    assert!(a.intersection(&b).is_empty());
    assert_eq!(a.intersection(&b).family(), Family::V4);
    assert!(!a.intersects(&b));
    assert!(!a.contains_set(&b));
    assert!(a.contains_set(&AddrSet::empty(Family::V6)));
    assert!(!a.contains(Ip::new(Family::V6, 5)));
    assert!(a.contains(Ip::new(Family::V4, 5)));
}

#[test]
fn ipv4_sets_are_clipped_to_the_family() {
    let s = AddrSet::from_ranges(
        Family::V4,
        [
            IpRange::new(0xffff_fff0, 0x1_0000_0005),
            IpRange::new(1 << 40, 1 << 41),
        ],
    );
    assert_eq!(s.ranges(), &[IpRange::new(0xffff_fff0, 0xffff_ffff)]);
    let mut s = AddrSet::empty(Family::V4);
    s.insert(IpRange::new(1 << 40, 1 << 41));
    assert!(s.is_empty());
}

#[test]
fn a_slash_8_costs_what_a_slash_30_costs() {
    let big = parse_entry("10.0.0.0/8", Forms::ALL)
        .unwrap()
        .value
        .to_set();
    let mut s = big.clone();
    s.remove(IpRange::single(v4("10.0.0.0")));
    s.remove(IpRange::single(v4("10.255.255.255")));
    assert_eq!(s.ranges().len(), 1);
    assert_eq!(s.len(), (1 << 24) - 2);
    let wide = parse_entry("2001:db8::/32", Forms::ALL)
        .unwrap()
        .value
        .to_set();
    assert_eq!(wide.len(), 1 << 96);
}

#[test]
fn whole_blocks_keep_only_sub_prefixes_the_set_covers_entirely() {
    let d = |s: &str| v6(s);
    // fd00::/62 minus one address of its second /64: three /64s stay whole.
    let declared = set(
        Family::V6,
        &[(d("fd00::"), d("fd00:0:0:3:ffff:ffff:ffff:ffff"))],
    );
    let mut free = declared.clone();
    free.remove(IpRange::single(d("fd00:0:0:1::5")));
    let blocks = free.whole_blocks(64);
    assert_eq!(
        blocks.to_string(),
        "fd00::-fd00::ffff:ffff:ffff:ffff, fd00:0:0:2::-fd00::3:ffff:ffff:ffff:ffff"
    );
    assert_eq!(free.count_blocks(64), 3);
    assert_eq!(declared.count_blocks(64), 4);
    // A run smaller than one block holds none; /128 blocks are single addresses.
    let small = set(Family::V6, &[(d("fd00::1"), d("fd00::ff"))]);
    assert!(small.whole_blocks(64).is_empty());
    assert_eq!(small.count_blocks(128), 255);
    // The whole family, at either end of the value range, without overflow.
    let all = AddrSet::full(Family::V6);
    assert_eq!(all.count_blocks(64), 1u128 << 64);
    assert_eq!(all.count_blocks(1), 2);
    assert_eq!(all.count_blocks(0), 1);
    assert_eq!(all.count_blocks(128), u128::MAX);
    let top = set(Family::V6, &[(u128::MAX - 5, u128::MAX)]);
    assert_eq!(
        top.whole_blocks(127).to_string(),
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffa-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
    );
    assert!(is_block_start(Ip::new(Family::V6, d("fd00:0:0:1::")), 64));
    assert!(!is_block_start(Ip::new(Family::V6, d("fd00:0:0:1::1")), 64));
}

#[test]
fn an_address_is_written_as_std_writes_it_padding_included() {
    for text in ["10.0.0.1", "2001:db8::1", "::ffff:10.0.0.1", "fd00:0:0:1::"] {
        let std: IpAddr = text.parse().unwrap();
        let ip = Ip::from_std(std);
        assert_eq!(ip.to_string(), std.to_string());
        assert_eq!(format!("[{ip:>30}]"), format!("[{std:>30}]"));
        assert_eq!(format!("[{ip:<30}]"), format!("[{std:<30}]"));
    }
    let past = Ip {
        family: Family::V4,
        value: u128::from(u32::MAX) + 7,
    };
    assert_eq!(past.to_string(), "255.255.255.255");
}

/// The IPv4 reader's one pass, against the reading it replaced (split on dots, then `u8` per
/// octet) and against `std`, on text made of digits and dots.
mod ipv4_text {
    use super::*;
    use proptest::prelude::*;

    fn by_parts(s: &str) -> Result<u32, AddrError> {
        let parts: Vec<&str> = s.split('.').collect();
        if parts.len() != 4
            || parts
                .iter()
                .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(AddrError::Invalid {
                expected: Forms::IP,
            });
        }
        if parts.iter().any(|p| p.len() > 1 && p.starts_with('0')) {
            return Err(AddrError::LeadingZeroOctet);
        }
        let mut value = 0u32;
        for p in parts {
            value = value << 8 | u32::from(p.parse::<u8>().map_err(|_| AddrError::OctetTooLarge)?);
        }
        Ok(value)
    }

    proptest! {
        #[test]
        fn reads_as_before_and_as_std(s in "[0-9.]{1,18}|[0-9]{1,4}\\.[0-9]{1,4}\\.[0-9]{1,4}\\.[0-9]{1,4}") {
            let ours = parse_ip(&s).map(|p| p.value);
            match by_parts(&s) {
                Ok(v) => prop_assert_eq!(ours, Ok(Ip::new(Family::V4, u128::from(v)))),
                Err(e) => prop_assert_eq!(ours.map_err(|e| e.to_string()), Err(e.to_string())),
            }
            let std = s.parse::<Ipv4Addr>().ok().map(|a| u128::from(u32::from(a)));
            prop_assert_eq!(parse_ip(&s).ok().map(|p| p.value.value), std);
        }
    }
}
