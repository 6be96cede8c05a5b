//! An address's canonical text, written on the stack: the dotted quad, or RFC 5952 IPv6 exactly
//! as `std` writes it. `std`'s `Display` goes through the formatting machinery once per group
//! and into a `String`; reading an IPv6 field compares its text with the canonical one, and that
//! comparison was half of what reading the field cost (about 3,100 of 6,200 instructions).

use std::net::Ipv6Addr;

/// The longest canonical text: eight groups of four hex digits and seven colons.
const MAX: usize = 39;

/// The canonical text of one address.
pub(crate) struct Canonical {
    buf: [u8; MAX],
    len: usize,
}

impl Canonical {
    pub(crate) fn v4(value: u32) -> Canonical {
        let mut t = Canonical::empty();
        t.dotted(value);
        t
    }

    pub(crate) fn v6(value: u128) -> Canonical {
        let mut t = Canonical::empty();
        t.groups_of(value);
        t
    }

    fn empty() -> Canonical {
        Canonical {
            buf: [0; MAX],
            len: 0,
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII digits, hex letters, dots and colons are ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }

    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    fn push_str(&mut self, s: &[u8]) {
        self.buf[self.len..self.len + s.len()].copy_from_slice(s);
        self.len += s.len();
    }

    fn dotted(&mut self, v: u32) {
        for (i, octet) in v.to_be_bytes().into_iter().enumerate() {
            if i > 0 {
                self.push(b'.');
            }
            if octet >= 100 {
                self.push(b'0' + octet / 100);
            }
            if octet >= 10 {
                self.push(b'0' + octet / 10 % 10);
            }
            self.push(b'0' + octet % 10);
        }
    }

    fn hex(&mut self, group: u16) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut started = false;
        for shift in [12, 8, 4, 0] {
            let d = usize::from((group >> shift) & 0xf);
            if d != 0 || started || shift == 0 {
                self.push(DIGITS[d]);
                started = true;
            }
        }
    }

    fn groups(&mut self, groups: &[u16]) {
        for (i, &g) in groups.iter().enumerate() {
            if i > 0 {
                self.push(b':');
            }
            self.hex(g);
        }
    }

    /// `std`'s rule: an IPv4-mapped address as `::ffff:a.b.c.d`; otherwise the first longest
    /// run of two or more zero groups written as `::`, every group in lowercase hex without
    /// leading zeros.
    fn groups_of(&mut self, value: u128) {
        let a = Ipv6Addr::from(value);
        if let Some(v4) = a.to_ipv4_mapped() {
            self.push_str(b"::ffff:");
            self.dotted(u32::from(v4));
            return;
        }
        let groups = a.segments();
        match zero_run(&groups) {
            Some((start, len)) => {
                self.groups(&groups[..start]);
                self.push_str(b"::");
                self.groups(&groups[start + len..]);
            }
            None => self.groups(&groups),
        }
    }
}

/// The first longest run of two or more zero groups, as (start, length): what `::` stands for in
/// the canonical form.
pub(super) fn zero_run(groups: &[u16; 8]) -> Option<(usize, usize)> {
    let (mut best, mut start, mut len) = ((0, 0), 0, 0);
    for (i, &g) in groups.iter().enumerate() {
        if g == 0 {
            if len == 0 {
                start = i;
            }
            len += 1;
            if len > best.1 {
                best = (start, len);
            }
        } else {
            len = 0;
        }
    }
    (best.1 > 1).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    fn same_as_std(a: Ipv6Addr) -> bool {
        Canonical::v6(u128::from(a)).as_str() == a.to_string()
    }

    /// Every pattern of zero and non-zero groups, with group values that test each digit count.
    #[test]
    fn every_zero_pattern_is_written_as_std_writes_it() {
        for mask in 0u32..256 {
            for filler in [1u16, 0xf, 0x10, 0xabc, 0x1000, 0xffff] {
                let mut groups = [0u16; 8];
                for (i, g) in groups.iter_mut().enumerate() {
                    if mask & (1 << i) != 0 {
                        *g = filler.wrapping_add(i as u16);
                    }
                }
                assert!(same_as_std(Ipv6Addr::from(groups)), "{groups:x?}");
            }
        }
    }

    #[test]
    fn mapped_compatible_and_edges() {
        for text in [
            "::",
            "::1",
            "1::",
            "::ffff:10.0.0.1",
            "::ffff:0.0.0.0",
            "::10.0.0.1",
            "::ffff:ffff:ffff",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "2001:db8:0:11:ffff:ffff:ffff:ffff",
        ] {
            assert!(same_as_std(text.parse().unwrap()), "{text}");
        }
        for text in ["0.0.0.0", "255.255.255.255", "10.0.100.9", "1.20.3.199"] {
            let a: Ipv4Addr = text.parse().unwrap();
            assert_eq!(Canonical::v4(u32::from(a)).as_str(), text);
        }
    }

    proptest! {
        #[test]
        fn any_address_is_written_as_std_writes_it(v6: u128, v4: u32, zeros: u8) {
            // Clear some groups so runs of zeros are common, not one in 2^16.
            let mut groups = Ipv6Addr::from(v6).segments();
            for (i, g) in groups.iter_mut().enumerate() {
                if zeros & (1 << i) != 0 {
                    *g = 0;
                }
            }
            prop_assert!(same_as_std(Ipv6Addr::from(groups)));
            let ours = Canonical::v4(v4);
            prop_assert_eq!(ours.as_str(), Ipv4Addr::from(v4).to_string());
        }
    }
}
