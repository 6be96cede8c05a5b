//! Why a text is not an address, worded as the detail of a Kubernetes field error.

use super::entry::{FormKind, Forms, RangeBound};
use super::ip::{Family, Ip};

// === Errors ===

/// Why a text is not an address. `Display` is the detail of a field error: lower case, no
/// trailing period, read after `<field>: Invalid value: "<text>": `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddrError {
    #[error("must not be empty")]
    Empty,
    #[error("leading or trailing whitespace is not allowed")]
    OuterWhitespace,
    #[error("whitespace is not allowed inside an address")]
    InnerWhitespace,
    /// Nothing more specific can be said (`abc`).
    #[error("not a valid {}", .expected.noun())]
    Invalid { expected: Forms },
    /// Well-formed, but the field does not take this form.
    #[error("{found} is not allowed here, expected {}", .expected.described())]
    FormNotAllowed { found: FormKind, expected: Forms },
    #[error("leading zeros are not allowed in an IPv4 octet")]
    LeadingZeroOctet,
    #[error("IPv4 octets must be between 0 and 255")]
    OctetTooLarge,
    #[error("zone ids are not allowed in an IP address")]
    ZoneId,
    /// `use_instead` is the IPv4 text meant, when there is one.
    #[error("IPv4-mapped IPv6 addresses are not allowed{}", use_instead_suffix(.use_instead))]
    Ipv4Mapped { use_instead: Option<String> },
    #[error("a range must contain exactly one '-'")]
    RangeSeparators,
    #[error("range {0} is missing")]
    RangeBoundMissing(RangeBound),
    #[error("invalid range {bound}: {reason}")]
    RangeBoundInvalid {
        bound: RangeBound,
        reason: Box<AddrError>,
    },
    #[error("range ends must be IP addresses, not CIDRs")]
    RangeOfCidrs,
    #[error("range ends are of different IP families")]
    RangeMixedFamilies,
    #[error("range start {start} is after range end {end}")]
    RangeReversed { start: Ip, end: Ip },
    #[error("a CIDR must contain exactly one '/'")]
    CidrSeparators,
    #[error("the address before '/' is missing")]
    CidrAddressMissing,
    #[error("the address before '/' is not a valid IP address")]
    CidrAddressInvalid,
    #[error("prefix length is missing after '/'")]
    PrefixMissing,
    #[error("leading zeros are not allowed in a prefix length")]
    PrefixLeadingZero,
    #[error(
        "prefix length must be a number between 0 and {} for an {} address",
        .family.bits(),
        .family.name()
    )]
    PrefixInvalid { family: Family },
    #[error("prefix cannot be negative")]
    PrefixNegative,
    #[error("prefix is too large for an {} address", .0.name())]
    PrefixTooLarge(Family),
}

fn use_instead_suffix(use_instead: &Option<String>) -> String {
    match use_instead {
        Some(v4) => format!(", use {v4}"),
        None => String::new(),
    }
}

impl AddrError {
    /// A stable snake_case name, for metric labels and logs.
    pub fn label(&self) -> &'static str {
        match self {
            AddrError::Empty => "empty",
            AddrError::OuterWhitespace | AddrError::InnerWhitespace => "whitespace",
            AddrError::Invalid { .. } => "invalid",
            AddrError::FormNotAllowed { .. } => "form_not_allowed",
            AddrError::LeadingZeroOctet => "leading_zero_octet",
            AddrError::OctetTooLarge => "octet_too_large",
            AddrError::ZoneId => "zone_id",
            AddrError::Ipv4Mapped { .. } => "ipv4_mapped",
            AddrError::RangeSeparators
            | AddrError::RangeBoundMissing(_)
            | AddrError::RangeBoundInvalid { .. }
            | AddrError::RangeOfCidrs => "invalid_range",
            AddrError::RangeMixedFamilies => "range_mixed_families",
            AddrError::RangeReversed { .. } => "range_reversed",
            AddrError::CidrSeparators
            | AddrError::CidrAddressMissing
            | AddrError::CidrAddressInvalid => "invalid_cidr",
            AddrError::PrefixMissing
            | AddrError::PrefixLeadingZero
            | AddrError::PrefixInvalid { .. } => "invalid_prefix",
            AddrError::PrefixNegative => "prefix_negative",
            AddrError::PrefixTooLarge(_) => "prefix_too_large",
        }
    }
}
