//! One address and one run of addresses. Values are `u128` whatever the family, so every
//! operation above this is the same code for IPv4 and IPv6.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::text::Canonical;

// === Family ===

/// An IP family. Sets and ranges never mix families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    /// Address width in bits: 32 or 128.
    pub fn bits(self) -> u8 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }

    /// The last address of the family as a value.
    pub fn max(self) -> u128 {
        match self {
            Family::V4 => u128::from(u32::MAX),
            Family::V6 => u128::MAX,
        }
    }

    /// `"IPv4"` or `"IPv6"`.
    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }

    /// The family of a `std` address (an IPv4-mapped IPv6 address counts as IPv6).
    pub fn of(ip: IpAddr) -> Family {
        match ip {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// === Ip ===

/// One address: a family and its value (`value <= family.max()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ip {
    pub family: Family,
    pub value: u128,
}

impl Ip {
    /// An address of `family`; a value beyond the family's last address is clamped to it.
    pub fn new(family: Family, value: u128) -> Ip {
        debug_assert!(value <= family.max(), "{value} is not an {family} value");
        Ip {
            family,
            value: value.min(family.max()),
        }
    }

    /// A faithful conversion: an IPv4-mapped IPv6 address stays IPv6 (the parser denies those).
    pub fn from_std(ip: IpAddr) -> Ip {
        match ip {
            IpAddr::V4(a) => Ip {
                family: Family::V4,
                value: u128::from(u32::from(a)),
            },
            IpAddr::V6(a) => Ip {
                family: Family::V6,
                value: u128::from(a),
            },
        }
    }

    /// The `std` address; an out-of-range IPv4 value (only reachable through the public
    /// fields) saturates rather than wrapping.
    pub fn to_std(self) -> IpAddr {
        match self.family {
            Family::V4 => IpAddr::V4(Ipv4Addr::from(
                u32::try_from(self.value).unwrap_or(u32::MAX),
            )),
            Family::V6 => IpAddr::V6(Ipv6Addr::from(self.value)),
        }
    }

    /// Whether this is an IPv6 address in `::ffff:0:0/96`.
    pub fn is_ipv4_mapped(self) -> bool {
        self.mapped_v4().is_some()
    }

    /// The IPv4 address an IPv4-mapped IPv6 address names.
    pub(super) fn mapped_v4(self) -> Option<Ipv4Addr> {
        match self.family {
            Family::V6 => Ipv6Addr::from(self.value).to_ipv4_mapped(),
            Family::V4 => None,
        }
    }
}

impl From<IpAddr> for Ip {
    fn from(ip: IpAddr) -> Ip {
        Ip::from_std(ip)
    }
}

impl From<Ip> for IpAddr {
    fn from(ip: Ip) -> IpAddr {
        ip.to_std()
    }
}

impl fmt::Display for Ip {
    /// Canonical text: dotted quad, or RFC 5952 IPv6 as `std` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self.family {
            // An out-of-range IPv4 value (only reachable through the public fields) saturates,
            // as `to_std` does.
            Family::V4 => Canonical::v4(u32::try_from(self.value).unwrap_or(u32::MAX)),
            Family::V6 => Canonical::v6(self.value),
        };
        f.pad(text.as_str())
    }
}

// === IpRange ===

/// An inclusive run of address values, `start <= end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpRange {
    pub start: u128,
    pub end: u128,
}

impl IpRange {
    /// The run `start..=end`. Callers pass ordered bounds; reversed ones are a bug (asserted in
    /// debug builds) and are put in order rather than bringing a webhook down in release builds.
    pub fn new(start: u128, end: u128) -> Self {
        debug_assert!(start <= end, "IpRange::new({start}, {end}) is reversed");
        IpRange {
            start: start.min(end),
            end: start.max(end),
        }
    }

    /// The run holding one value.
    pub fn single(value: u128) -> Self {
        IpRange {
            start: value,
            end: value,
        }
    }

    /// Whether `v` lies in the run.
    pub fn contains(&self, v: u128) -> bool {
        self.start <= v && v <= self.end
    }

    /// Whether the runs share at least one value.
    pub fn intersects(&self, other: &IpRange) -> bool {
        self.start <= other.end && other.start <= self.end
    }

    /// The shared values, if any.
    pub fn intersection(&self, other: &IpRange) -> Option<IpRange> {
        let start = self.start.max(other.start);
        let end = self.end.min(other.end);
        (start <= end).then_some(IpRange { start, end })
    }

    /// Number of values, saturating (`0..=u128::MAX` has 2^128 and reports `u128::MAX`).
    pub fn size(&self) -> u128 {
        self.end.saturating_sub(self.start).saturating_add(1)
    }
}
