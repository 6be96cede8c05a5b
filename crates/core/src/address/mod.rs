//! Address text → sets of inclusive ranges: the one grammar every rule reads.
//!
//! The reading is the strict one Kubernetes CEL `ip()`/`cidr()` use, so a value we admit is a value
//! the API server's own validation would read the same way:
//! - IPv4 is a dotted quad of four decimal octets `0..=255` without leading zeros (`010.0.0.1` is
//!   ambiguous between octal and decimal across tools, so it is denied).
//! - IPv6 is any text `std::net::Ipv6Addr` reads, minus zone ids (`fe80::1%eth0`) and IPv4-mapped
//!   addresses (`::ffff:0:0/96`), which are denied everywhere because they name an IPv4 host in
//!   IPv6 clothing and would dodge the family checks. Text that is not the canonical RFC 5952 form
//!   (as `std` prints it) is accepted with a warning giving the canonical text.
//! - IPv4-compatible IPv6 (`::10.0.0.1`, deprecated by RFC 4291) is what CEL `ip()` accepts: the
//!   IPv6 address `::a00:1`. We accept it too, with the non-canonical warning plus a note that it
//!   is not an IPv4 address, rather than deny what the API server admits.
//! - A range is `a-b`: one `-`, same family, `a <= b`; a reversed range is denied, never swapped.
//! - A CIDR is `ip/prefix`, the prefix decimal without sign or leading zeros. Host bits are
//!   accepted with a warning naming the network; the range it covers is the masked network.
//!
//! Values are `u128` whatever the family, so every set operation is the same code for both and
//! costs O(number of runs): a `/8` or `::/0` is as cheap as a `/30`. Ranges are inclusive because
//! the last IPv6 address (`u128::MAX`) has no exclusive end; every `+ 1` on an end is guarded.
//!
//! The grammar is ours; the arithmetic is not: a CIDR's network and broadcast come from `ipnet`
//! (which reads far more leniently than the rules above, so it never sees text), mapped IPv6 from
//! `std`.
//!
//! One file per idea: `ip` (an address and a run), `set` (set algebra), `entry` (what a field's
//! text means), `grammar` (reading text), `text` (writing an address's canonical text), `error`
//! (why text is not an address).

mod entry;
mod error;
mod grammar;
mod ip;
mod set;
mod text;

pub use entry::{
    canonical_entry_text, Cidr, Entry, EntryForm, FormKind, Forms, Parsed, RangeBound,
};
pub use error::AddrError;
pub use grammar::{check_prefix, parse_cidr, parse_entry, parse_ip};
pub use ip::{Family, Ip, IpRange};
pub use set::{block_mask, format_range, is_block_start, subnet_of, AddrSet};

#[cfg(test)]
mod tests;
