//! The reading itself: text → IP, range or CIDR, with the checks and warnings the module
//! documentation lists.

use std::net::Ipv6Addr;

use super::entry::{Cidr, Entry, EntryForm, FormKind, Forms, Parsed, RangeBound};
use super::error::AddrError;
use super::ip::{Family, Ip, IpRange};
use super::set::subnet_of;
use super::text::{zero_run, Canonical};

// === Parsing ===

/// An IP as read from text, before the entry-level checks.
struct IpText {
    ip: Ip,
    canonical: bool,
    /// IPv6 written with a dotted tail whose upper 96 bits are zero (`::10.0.0.1`).
    ipv4_compatible: bool,
}

/// Reads one IP, IPv4-mapped or not; the caller decides about mapped addresses because the
/// suggestion differs for an IP and a CIDR.
fn read_ip(s: &str) -> Result<IpText, AddrError> {
    if s.contains(':') {
        let (value, canonical) = match read_hex_v6(s.as_bytes()) {
            Some(hex) => (hex.value, hex.canonical),
            None => {
                let value =
                    s.parse::<Ipv6Addr>()
                        .map(u128::from)
                        .map_err(|_| AddrError::Invalid {
                            expected: Forms::IP,
                        })?;
                (value, Canonical::v6(value).as_str() == s)
            }
        };
        Ok(IpText {
            ip: Ip {
                family: Family::V6,
                value,
            },
            canonical,
            ipv4_compatible: s.contains('.') && value >> 32 == 0,
        })
    } else {
        Ok(IpText {
            ip: read_ipv4(s)?,
            canonical: true,
            ipv4_compatible: false,
        })
    }
}

/// IPv6 text of hex digits and colons only (no dotted tail), read in one pass: `std`'s reader,
/// which rolls back and retries per group, cost about 600 instructions an address, a third of
/// an IPv6 entry's reading. None for any other text, valid or not:
/// the caller then asks `std`, whose answer stands, so what is accepted stays exactly what `std`
/// accepts (a property test holds this reader to it).
fn read_hex_v6(b: &[u8]) -> Option<HexV6> {
    let mut groups = [0u16; 8];
    let mut n = 0;
    // Lowercase, without leading zeros: what the canonical form writes for each group.
    let mut minimal = true;
    // Where `::` stands among the groups.
    let mut gap = None;
    let mut i = 0;
    if b.starts_with(b"::") {
        gap = Some(0);
        i = 2;
    }
    while i < b.len() {
        let start = i;
        let mut group: u16 = 0;
        while let Some(d) = b.get(i).and_then(|&c| char::from(c).to_digit(16)) {
            if i - start == 4 || n == 8 {
                return None;
            }
            group = group << 4 | d as u16;
            i += 1;
        }
        if i == start {
            return None;
        }
        let leading_zero = b[start] == b'0' && i - start > 1;
        let capitals = b[start..i].iter().any(u8::is_ascii_uppercase);
        minimal &= !(leading_zero || capitals);
        groups[n] = group;
        n += 1;
        match b.get(i) {
            None => break,
            Some(b':') if b.get(i + 1) == Some(&b':') => {
                if gap.is_some() {
                    return None;
                }
                gap = Some(n);
                i += 2;
            }
            // A single colon goes on to a group: one at the end is no address.
            Some(b':') if i + 1 < b.len() => i += 1,
            Some(_) => return None,
        }
    }
    // Without `::` eight groups; with it at most seven, as it stands for one or more.
    let head = match gap {
        None if n == 8 => n,
        Some(at) if n <= 7 => at,
        _ => return None,
    };
    let mut value = 0u128;
    for &g in &groups[..head] {
        value = value << 16 | u128::from(g);
    }
    if head > 0 {
        value <<= 16 * (8 - n);
    }
    for &g in &groups[head..n] {
        value = value << 16 | u128::from(g);
    }
    // The text is the canonical form when its groups are and its `::` stands for the first
    // longest run of two or more zero groups (`text::Canonical::v6`), and the address is not
    // IPv4-mapped, whose canonical form is dotted: the same answer as writing that form and
    // comparing, which cost about 270 instructions an address.
    let written = gap.map(|at| (at, 8 - n));
    let canonical =
        minimal && value >> 32 != 0xffff && written == zero_run(&Ipv6Addr::from(value).segments());
    Some(HexV6 { value, canonical })
}

/// An IPv6 address read by `read_hex_v6`, and whether its text is the canonical form.
struct HexV6 {
    value: u128,
    canonical: bool,
}

/// Our own dotted-quad reader, so the error can say which rule was broken; it accepts exactly
/// what `std` accepts (a property test holds it to that).
fn read_ipv4(s: &str) -> Result<Ip, AddrError> {
    let invalid = AddrError::Invalid {
        expected: Forms::IP,
    };
    // One pass over the bytes: `split('.')` and `parse::<u8>` per octet were a third of what
    // reading an IPv4 text cost.
    let b = s.as_bytes();
    let mut octets: [&[u8]; 4] = [&[]; 4];
    let mut n = 0;
    let mut start = 0;
    for i in 0..=b.len() {
        if i < b.len() && b[i] != b'.' {
            if !b[i].is_ascii_digit() {
                return Err(invalid);
            }
            continue;
        }
        if n == 4 || i == start {
            return Err(invalid);
        }
        octets[n] = &b[start..i];
        n += 1;
        start = i + 1;
    }
    if n != 4 {
        return Err(invalid);
    }
    if octets.iter().any(|o| o.len() > 1 && o[0] == b'0') {
        return Err(AddrError::LeadingZeroOctet);
    }
    let mut value: u32 = 0;
    for o in octets {
        // Digits only, no leading zero: more than three of them is past 255 too.
        let octet = match o.len() {
            1..=3 => o.iter().fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0')),
            _ => u32::MAX,
        };
        if octet > 255 {
            return Err(AddrError::OctetTooLarge);
        }
        value = value << 8 | octet;
    }
    Ok(Ip {
        family: Family::V4,
        value: u128::from(value),
    })
}

/// A zone id follows `%` after an IPv6 address; only then do we name it, so `100%` stays
/// "not valid" rather than a puzzling zone message.
fn has_zone(s: &str) -> bool {
    let Some(p) = s.find('%') else {
        return false;
    };
    let head = &s[..p];
    let token = head.rsplit(['-', '/']).next().unwrap_or(head);
    token.parse::<Ipv6Addr>().is_ok()
}

fn not_canonical(written: &str, canonical: &str, ipv4_compatible: bool) -> String {
    let note = if ipv4_compatible {
        " (IPv4-compatible IPv6 notation is deprecated; this is an IPv6 address, not IPv4)"
    } else {
        ""
    };
    format!("\"{written}\" is not in canonical form, use \"{canonical}\"{note}")
}

/// What an entry's text turned out to be.
#[derive(Debug, PartialEq)]
enum Read {
    Ip(Ip),
    Range(Ip, Ip),
    Cidr(Cidr),
}

fn reject_mapped(t: IpText) -> Result<IpText, AddrError> {
    if let Some(v4) = t.ip.mapped_v4() {
        return Err(AddrError::Ipv4Mapped {
            use_instead: Some(v4.to_string()),
        });
    }
    Ok(t)
}

fn read_single(s: &str) -> Result<Parsed<Read>, AddrError> {
    let t = reject_mapped(read_ip(s)?)?;
    let mut warnings = Vec::new();
    if !t.canonical {
        warnings.push(not_canonical(s, &t.ip.to_string(), t.ipv4_compatible));
    }
    Ok(Parsed {
        value: Read::Ip(t.ip),
        warnings,
    })
}

fn read_range(s: &str) -> Result<Parsed<Read>, AddrError> {
    let Some((a, b)) = s.split_once('-') else {
        return Err(AddrError::RangeSeparators);
    };
    if b.contains('-') {
        return Err(AddrError::RangeSeparators);
    }
    if a.is_empty() {
        return Err(AddrError::RangeBoundMissing(RangeBound::Start));
    }
    if b.is_empty() {
        return Err(AddrError::RangeBoundMissing(RangeBound::End));
    }
    if s.contains('/') {
        return Err(AddrError::RangeOfCidrs);
    }
    let end_of = |bound: RangeBound, text: &str| {
        read_ip(text)
            .and_then(reject_mapped)
            .map_err(|reason| AddrError::RangeBoundInvalid {
                bound,
                reason: Box::new(reason),
            })
    };
    let start = end_of(RangeBound::Start, a)?;
    let end = end_of(RangeBound::End, b)?;
    if start.ip.family != end.ip.family {
        return Err(AddrError::RangeMixedFamilies);
    }
    if start.ip.value > end.ip.value {
        return Err(AddrError::RangeReversed {
            start: start.ip,
            end: end.ip,
        });
    }
    let mut warnings = Vec::new();
    if !start.canonical || !end.canonical {
        warnings.push(not_canonical(
            s,
            &format!("{}-{}", start.ip, end.ip),
            start.ipv4_compatible || end.ipv4_compatible,
        ));
    }
    Ok(Parsed {
        value: Read::Range(start.ip, end.ip),
        warnings,
    })
}

fn read_prefix(p: &str, family: Family) -> Result<u8, AddrError> {
    if p.is_empty() {
        return Err(AddrError::PrefixMissing);
    }
    if !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AddrError::PrefixInvalid { family });
    }
    if p.len() > 1 && p.starts_with('0') {
        return Err(AddrError::PrefixLeadingZero);
    }
    match p.parse::<u8>() {
        Ok(v) if v <= family.bits() => Ok(v),
        _ => Err(AddrError::PrefixInvalid { family }),
    }
}

fn read_cidr(s: &str) -> Result<Parsed<Read>, AddrError> {
    let Some((a, p)) = s.split_once('/') else {
        return Err(AddrError::CidrSeparators);
    };
    if p.contains('/') {
        return Err(AddrError::CidrSeparators);
    }
    if a.is_empty() {
        return Err(AddrError::CidrAddressMissing);
    }
    let t = read_ip(a).map_err(|e| match e {
        AddrError::Invalid { .. } => AddrError::CidrAddressInvalid,
        other => other,
    })?;
    let prefix = read_prefix(p, t.ip.family)?;
    if let Some(v4) = t.ip.mapped_v4() {
        let use_instead = (prefix >= 96).then(|| format!("{v4}/{}", prefix - 96));
        return Err(AddrError::Ipv4Mapped { use_instead });
    }
    let cidr = Cidr {
        ip: t.ip,
        prefix,
        network: subnet_of(t.ip, prefix),
    };
    let mut warnings = Vec::new();
    // The host-bits warning already names the canonical network, so one warning is enough.
    if cidr.has_host_bits() {
        warnings.push(format!("\"{s}\" has host bits set; it means {cidr}"));
    } else if !t.canonical {
        warnings.push(not_canonical(s, &cidr.to_string(), t.ipv4_compatible));
    }
    Ok(Parsed {
        value: Read::Cidr(cidr),
        warnings,
    })
}

fn read_entry(s: &str, forms: Forms) -> Result<Parsed<Read>, AddrError> {
    if s.is_empty() {
        return Err(AddrError::Empty);
    }
    // Most entries are a single IP: printable, and without the '%', '/' or '-' of a zone, a
    // CIDR or a range. One byte scan says so, where the checks below scan it four more times.
    if s.bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'%' | b'/' | b'-'))
    {
        return shaped(FormKind::Ip, read_single(s), forms);
    }
    read_any_entry(s, forms)
}

/// A non-empty entry of any shape, the shape found before its parts are read.
fn read_any_entry(s: &str, forms: Forms) -> Result<Parsed<Read>, AddrError> {
    // Printable ASCII, which every valid entry is, holds no whitespace: one byte scan instead of
    // the two char walks that find and place it.
    if !s.bytes().all(|b| b.is_ascii_graphic()) {
        if s.trim() != s {
            return Err(AddrError::OuterWhitespace);
        }
        if s.chars().any(char::is_whitespace) {
            return Err(AddrError::InnerWhitespace);
        }
    }
    if has_zone(s) {
        return Err(AddrError::ZoneId);
    }
    // Neither '-' nor '/' occurs in a valid IP (zones were ruled out above), so the shape is
    // known before the parts are read. A '/' followed by something prefix-like is a CIDR even
    // with a '-' in it (`10.0.0.0/-8` is a bad prefix, not a range).
    let kind = match s.rsplit_once('/') {
        Some((_, after)) if !after.contains(['.', ':']) => FormKind::Cidr,
        _ if s.contains('-') => FormKind::Range,
        Some(_) => FormKind::Cidr,
        None => FormKind::Ip,
    };
    let read = match kind {
        FormKind::Ip => read_single(s),
        FormKind::Range => read_range(s),
        FormKind::Cidr => read_cidr(s),
    };
    shaped(kind, read, forms)
}

/// An entry read in the shape `kind`, judged against the shapes its field takes.
fn shaped(
    kind: FormKind,
    read: Result<Parsed<Read>, AddrError>,
    forms: Forms,
) -> Result<Parsed<Read>, AddrError> {
    if !forms.allows(kind) {
        // Well-formed text in the wrong shape deserves to be told the shape; broken text in a
        // shape the field does not take is only "not a valid <what the field takes>".
        return Err(match read {
            Ok(_) => AddrError::FormNotAllowed {
                found: kind,
                expected: forms,
            },
            Err(_) => AddrError::Invalid { expected: forms },
        });
    }
    read.map_err(|e| match e {
        AddrError::Invalid { .. } => AddrError::Invalid { expected: forms },
        other => other,
    })
}

/// Parses a single IP (addresses, gateways): `not a valid IP address` and friends.
pub fn parse_ip(s: &str) -> Result<Parsed<Ip>, AddrError> {
    read_entry(s, Forms::IP).map(|p| {
        p.map(|r| match r {
            Read::Ip(ip) => ip,
            // Forms::IP admits nothing else; keep a total function anyway.
            Read::Range(a, _) => a,
            Read::Cidr(c) => c.ip,
        })
    })
}

/// Parses a CIDR (subnets). Host bits are a warning; `network` is the masked network.
pub fn parse_cidr(s: &str) -> Result<Parsed<Cidr>, AddrError> {
    let p = read_entry(s, Forms::CIDR)?;
    match p.value {
        Read::Cidr(c) => Ok(Parsed {
            value: c,
            warnings: p.warnings,
        }),
        // Forms::CIDR admits nothing else.
        Read::Ip(_) | Read::Range(..) => Err(AddrError::Invalid {
            expected: Forms::CIDR,
        }),
    }
}

/// Parses an entry in any of the forms `forms` allows.
pub fn parse_entry(s: &str, forms: Forms) -> Result<Parsed<Entry>, AddrError> {
    read_entry(s, forms).map(|p| {
        p.map(|r| match r {
            Read::Ip(ip) => Entry {
                family: ip.family,
                range: IpRange::single(ip.value),
                form: EntryForm::Ip,
            },
            Read::Range(a, b) => Entry {
                family: a.family,
                range: IpRange::new(a.value, b.value),
                form: EntryForm::Range,
            },
            Read::Cidr(c) => c.entry(),
        })
    })
}

/// Checks an integer prefix field against the family bound (A2).
pub fn check_prefix(family: Family, prefix: i64) -> Result<u8, AddrError> {
    if prefix < 0 {
        return Err(AddrError::PrefixNegative);
    }
    match u8::try_from(prefix) {
        Ok(p) if p <= family.bits() => Ok(p),
        _ => Err(AddrError::PrefixTooLarge(family)),
    }
}

#[cfg(test)]
mod entry_tests {
    use super::{read_any_entry, read_entry, Forms};
    use proptest::prelude::*;

    proptest! {
        /// The one-scan shortcut for a single IP answers what the shape-finding path does, on
        /// text of every shape, broken or not.
        #[test]
        fn a_plain_ip_is_read_as_any_entry_is(
            s in "[0-9a-fA-F:.%/ gx-]{1,41}|[0-9.]{1,18}|[0-9a-f:]{1,12}::[0-9a-f:.]{0,20}\
                |([0-9a-f]{1,4}:){0,3}:[0-9a-f]{0,4}[%/-][0-9a-z.:]{0,6}|([0-9]{1,3}\\.){3}[0-9]{1,3}[%/-][0-9.]{0,15}",
            forms in prop_oneof![Just(Forms::ALL), Just(Forms::IP), Just(Forms::IP_OR_RANGE), Just(Forms::CIDR)],
        ) {
            prop_assert_eq!(read_entry(&s, forms), read_any_entry(&s, forms));
        }
    }
}

#[cfg(test)]
mod hex_v6_tests {
    use super::read_hex_v6;
    use crate::address::text::Canonical;
    use proptest::prelude::*;
    use std::net::Ipv6Addr;

    fn std_reads(s: &str) -> Option<u128> {
        s.parse::<Ipv6Addr>().ok().map(u128::from)
    }

    fn value_of(s: &str) -> Option<u128> {
        read_hex_v6(s.as_bytes()).map(|hex| hex.value)
    }

    /// Whether the reader calls a text canonical is whether it equals the canonical form
    /// written out.
    fn canonical_as_written(s: &str) {
        if let Some(hex) = read_hex_v6(s.as_bytes()) {
            let written = Canonical::v6(hex.value);
            assert_eq!(
                hex.canonical,
                written.as_str() == s,
                "{s:?} (canonical {:?})",
                written.as_str()
            );
        }
    }

    #[test]
    fn reads_what_std_reads_at_the_edges() {
        for s in [
            "::",
            "::1",
            "1::",
            "1::2",
            "::ffff",
            "2001:db8::",
            "2001:DB8:0:11:FFFF:ffff:ffff:ffff",
            "0000:0000:0000:0000:0000:0000:0000:0000",
            "1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
            "1:2:3:4::6:7:8",
            "fe80::1:2",
            "0:0::0",
            // two runs of zeros as long: the first is the one written as `::`
            "1::1:0:0:1:1",
            "1:0:0:1::1:1",
            "0:0:1::1:1:1",
            "::1:0:0:1:1:1",
            // IPv4-mapped, whose canonical form is dotted
            "::ffff:a:1",
            "0:0:0:0:0:ffff:a:1",
            "::ffff:0:0",
            // and what std refuses
            "",
            ":",
            ":::",
            "1:::2",
            ":1::2",
            "1::2:",
            "1:",
            ":1",
            "1::2::3",
            "12345::",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7",
            "1::2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7:8::",
            "::1:2:3:4:5:6:7:8",
            "g::1",
            "1:2:3:4:5:6:7:8:",
            ":::1",
            "1::2:::",
        ] {
            assert_eq!(value_of(s), std_reads(s), "{s:?}");
            canonical_as_written(s);
        }
        // A dotted tail is std's to read.
        for s in [
            "::1.2.3.4",
            "::ffff:10.0.0.1",
            "1:2:3:4:5:6:1.2.3.4",
            "1.2.3.4",
        ] {
            assert_eq!(value_of(s), None, "{s:?}");
        }
    }

    proptest! {
        #[test]
        fn reads_exactly_what_std_reads(s in "[0-9a-fA-F:]{0,41}|(([0-9a-f]{0,5}):){1,9}[0-9a-fA-F]{0,5}|[0-9a-f:]{0,12}::[0-9a-f:]{0,30}") {
            prop_assert_eq!(value_of(&s), std_reads(&s));
            canonical_as_written(&s);
        }

        /// Addresses built as written: up to nine groups of one to four digits, `::` or not
        /// at any place.
        #[test]
        fn reads_groups_as_std_reads_them(
            groups in proptest::collection::vec("[0-9a-fA-F]{1,4}", 0..=9),
            gap in proptest::option::of(0usize..=9),
        ) {
            let s = match gap {
                Some(at) if at <= groups.len() => {
                    format!("{}::{}", groups[..at].join(":"), groups[at..].join(":"))
                }
                _ => groups.join(":"),
            };
            prop_assert_eq!(value_of(&s), std_reads(&s), "{}", s);
            canonical_as_written(&s);
        }

        /// Zero groups written every way (`0`, `00`, inside `::` or not), with and without
        /// leading zeros and capitals: the canonical answer is the written form's.
        #[test]
        fn canonical_is_what_the_written_form_says(
            groups in proptest::collection::vec(
                prop_oneof![Just("0"), Just("0"), Just("00"), Just("1"), Just("a"), Just("A"), Just("0f"), Just("ffff"), Just("db8")],
                0..=8,
            ),
            gap in proptest::option::of(0usize..=8),
        ) {
            let s = match gap {
                Some(at) if at <= groups.len() => {
                    format!("{}::{}", groups[..at].join(":"), groups[at..].join(":"))
                }
                _ => groups.join(":"),
            };
            canonical_as_written(&s);
        }

        #[test]
        fn leaves_anything_else_to_std(s in "[0-9a-f:.%/ gx-]{0,41}") {
            let ours = value_of(&s);
            if ours.is_some() {
                prop_assert_eq!(ours, std_reads(&s));
            } else if s.bytes().all(|b| b == b':' || b.is_ascii_hexdigit()) {
                prop_assert_eq!(std_reads(&s), None);
            }
        }
    }
}
