//! Address text → sets of inclusive ranges: the one grammar every rule reads (SPEC §2).
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

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

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
    fn mapped_v4(self) -> Option<Ipv4Addr> {
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
        fmt::Display::fmt(&self.to_std(), f)
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

// === AddrSet ===

/// A sorted, merged (no overlapping and no adjacent runs) set of inclusive ranges of one family.
///
/// Because runs are merged, two sets are equal exactly when they hold the same addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AddrSet {
    family: Family,
    ranges: Vec<IpRange>,
}

/// Appends `r` (whose start is >= every start already in `out`), merging with the last run when
/// they overlap or touch.
fn push_run(out: &mut Vec<IpRange>, r: IpRange) {
    if let Some(last) = out.last_mut() {
        // `last.end == MAX` means nothing can come after it without touching.
        if last.end.checked_add(1).is_none_or(|next| r.start <= next) {
            last.end = last.end.max(r.end);
            return;
        }
    }
    out.push(r);
}

impl AddrSet {
    /// The set holding nothing.
    pub fn empty(family: Family) -> Self {
        AddrSet {
            family,
            ranges: Vec::new(),
        }
    }

    /// Every address of the family (`0.0.0.0/0` or `::/0`).
    pub fn full(family: Family) -> Self {
        AddrSet::from_range(family, IpRange::new(0, family.max()))
    }

    /// The set holding one run (clipped to the family).
    pub fn from_range(family: Family, r: IpRange) -> Self {
        AddrSet::from_ranges(family, [r])
    }

    /// Sorts and merges any runs; parts beyond the family's last address are dropped.
    pub fn from_ranges(family: Family, ranges: impl IntoIterator<Item = IpRange>) -> Self {
        let mut v: Vec<IpRange> = ranges.into_iter().filter_map(|r| clip(family, r)).collect();
        v.sort_unstable();
        let mut out = Vec::with_capacity(v.len());
        for r in v {
            push_run(&mut out, r);
        }
        AddrSet {
            family,
            ranges: out,
        }
    }

    /// The family every run belongs to.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The runs, sorted and merged.
    pub fn ranges(&self) -> &[IpRange] {
        &self.ranges
    }

    /// Whether the set holds no address.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Adds a run in O(log n + runs it absorbs).
    pub fn insert(&mut self, r: IpRange) {
        let Some(r) = clip(self.family, r) else {
            return;
        };
        // Runs strictly before `r` with a gap, and runs strictly after with a gap, stay.
        let i = self
            .ranges
            .partition_point(|x| x.end.saturating_add(1) < r.start);
        let j = self
            .ranges
            .partition_point(|x| x.start.saturating_sub(1) <= r.end);
        let merged = if i < j {
            IpRange {
                start: r.start.min(self.ranges[i].start),
                end: r.end.max(self.ranges[j - 1].end),
            }
        } else {
            r
        };
        self.ranges.splice(i..j, [merged]);
    }

    /// Removes a run in O(log n + runs it touches).
    pub fn remove(&mut self, r: IpRange) {
        let Some(r) = clip(self.family, r) else {
            return;
        };
        let i = self.ranges.partition_point(|x| x.end < r.start);
        let j = self.ranges.partition_point(|x| x.start <= r.end);
        if i >= j {
            return;
        }
        let (first, last) = (self.ranges[i], self.ranges[j - 1]);
        let mut keep = Vec::with_capacity(2);
        if first.start < r.start {
            keep.push(IpRange::new(first.start, r.start - 1));
        }
        if last.end > r.end {
            keep.push(IpRange::new(r.end + 1, last.end));
        }
        self.ranges.splice(i..j, keep);
    }

    /// Addresses in either set. Families never mix in callers; for a set of the other family
    /// the result is `self` unchanged (there is nothing of this family to add).
    pub fn union(&self, other: &AddrSet) -> AddrSet {
        if self.family != other.family {
            return self.clone();
        }
        let (a, b) = (&self.ranges, &other.ranges);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let take_a = j >= b.len() || (i < a.len() && a[i].start <= b[j].start);
            if take_a {
                push_run(&mut out, a[i]);
                i += 1;
            } else {
                push_run(&mut out, b[j]);
                j += 1;
            }
        }
        AddrSet {
            family: self.family,
            ranges: out,
        }
    }

    /// Addresses in `self` and not in `other`; a set of the other family removes nothing.
    pub fn difference(&self, other: &AddrSet) -> AddrSet {
        if self.family != other.family {
            return self.clone();
        }
        let b = &other.ranges;
        let mut out = Vec::with_capacity(self.ranges.len());
        let mut j = 0;
        for &a in &self.ranges {
            while j < b.len() && b[j].end < a.start {
                j += 1;
            }
            let mut cur = a.start;
            let mut alive = true;
            let mut k = j;
            while k < b.len() && b[k].start <= a.end {
                if b[k].start > cur {
                    out.push(IpRange::new(cur, b[k].start - 1));
                }
                if b[k].end >= a.end {
                    // `b[k]` may reach into the next run of `self`: keep `j` on it.
                    alive = false;
                    break;
                }
                // b[k].end < a.end <= MAX, so this cannot overflow.
                cur = b[k].end + 1;
                k += 1;
            }
            if alive {
                out.push(IpRange::new(cur, a.end));
            }
            j = k;
        }
        AddrSet {
            family: self.family,
            ranges: out,
        }
    }

    /// Addresses in both sets; empty for sets of different families.
    pub fn intersection(&self, other: &AddrSet) -> AddrSet {
        let mut out = Vec::new();
        if self.family == other.family {
            let (a, b) = (&self.ranges, &other.ranges);
            let (mut i, mut j) = (0, 0);
            while i < a.len() && j < b.len() {
                if let Some(r) = a[i].intersection(&b[j]) {
                    push_run(&mut out, r);
                }
                if a[i].end < b[j].end {
                    i += 1;
                } else {
                    j += 1;
                }
            }
        }
        AddrSet {
            family: self.family,
            ranges: out,
        }
    }

    /// Whether the sets share an address, by an O(n + m) walk without allocating.
    pub fn intersects(&self, other: &AddrSet) -> bool {
        if self.family != other.family {
            return false;
        }
        let (a, b) = (&self.ranges, &other.ranges);
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i].intersects(&b[j]) {
                return true;
            }
            if a[i].end < b[j].end {
                i += 1;
            } else {
                j += 1;
            }
        }
        false
    }

    /// Whether `ip` (of this family) is in the set, by binary search.
    pub fn contains(&self, ip: Ip) -> bool {
        if ip.family != self.family {
            return false;
        }
        let i = self.ranges.partition_point(|r| r.end < ip.value);
        self.ranges.get(i).is_some_and(|r| r.start <= ip.value)
    }

    /// Whether every address of `other` is in `self` (an empty set is in every set).
    pub fn contains_set(&self, other: &AddrSet) -> bool {
        if other.is_empty() {
            return true;
        }
        if self.family != other.family {
            return false;
        }
        let a = &self.ranges;
        let mut i = 0;
        for b in &other.ranges {
            while i < a.len() && a[i].end < b.start {
                i += 1;
            }
            // Runs are merged, so `b` must fit inside a single run.
            match a.get(i) {
                Some(r) if r.start <= b.start && b.end <= r.end => {}
                _ => return false,
            }
        }
        true
    }

    /// The lowest address.
    pub fn first(&self) -> Option<Ip> {
        self.ranges.first().map(|r| Ip::new(self.family, r.start))
    }

    /// The highest address.
    pub fn last(&self) -> Option<Ip> {
        self.ranges.last().map(|r| Ip::new(self.family, r.end))
    }

    /// Number of addresses, saturating (`::/0` has 2^128 and reports `u128::MAX`).
    pub fn len(&self) -> u128 {
        self.ranges
            .iter()
            .fold(0u128, |n, r| n.saturating_add(r.size()))
    }

    /// The aligned blocks of `prefix` (every `/64`, say) that lie wholly inside the set: what a
    /// pool handing out whole sub-prefixes can allocate. A block the set only partly covers is
    /// left out. Each run is trimmed inward to block boundaries, so this is O(runs).
    pub fn whole_blocks(&self, prefix: u8) -> AddrSet {
        let mask = block_mask(self.family, prefix);
        let ranges = self
            .ranges
            .iter()
            .filter_map(|r| {
                let start = if r.start & mask == 0 {
                    r.start
                } else {
                    (r.start | mask).checked_add(1)?
                };
                let end = if r.end & mask == mask {
                    r.end
                } else {
                    (r.end & !mask).checked_sub(1)?
                };
                (start <= end).then_some(IpRange { start, end })
            })
            .collect();
        AddrSet {
            family: self.family,
            ranges,
        }
    }

    /// How many aligned blocks of `prefix` lie wholly inside the set; exact where `len` would
    /// saturate (`::/0` holds 2^64 blocks of /64), saturating only past `u128::MAX`.
    pub fn count_blocks(&self, prefix: u8) -> u128 {
        let mask = block_mask(self.family, prefix);
        let shift = mask.count_ones();
        self.whole_blocks(prefix).ranges.iter().fold(0u128, |n, r| {
            let blocks = if shift >= 128 {
                1
            } else {
                ((r.end - r.start) >> shift).saturating_add(1)
            };
            n.saturating_add(blocks)
        })
    }

    /// Like `Display`, but at most `max_runs` runs (at least one) followed by `and N more`, for
    /// messages that must stay short whatever the pool looks like.
    pub fn display_limited(&self, max_runs: usize) -> String {
        let max_runs = max_runs.max(1);
        if self.ranges.len() <= max_runs {
            return self.to_string();
        }
        let shown: Vec<String> = self.ranges[..max_runs]
            .iter()
            .map(|r| format_range(self.family, *r))
            .collect();
        format!(
            "{} and {} more",
            shown.join(", "),
            self.ranges.len() - max_runs
        )
    }
}

/// The host bits of a block of `prefix` in `family` (a prefix past the family's width means a
/// single address).
pub fn block_mask(family: Family, prefix: u8) -> u128 {
    let shift = u32::from(family.bits().saturating_sub(prefix));
    if shift >= 128 {
        u128::MAX
    } else {
        (1u128 << shift) - 1
    }
}

/// Whether `ip` is the first address of its block of `prefix` (a sub-prefix's network address).
pub fn is_block_start(ip: Ip, prefix: u8) -> bool {
    ip.value & block_mask(ip.family, prefix) == 0
}

/// Puts bounds in order and cuts the run to the family; `None` when nothing is left.
fn clip(family: Family, r: IpRange) -> Option<IpRange> {
    let (start, end) = (r.start.min(r.end), r.start.max(r.end));
    (start <= family.max()).then(|| IpRange {
        start,
        end: end.min(family.max()),
    })
}

impl fmt::Display for AddrSet {
    /// `", "`-separated runs (`10.0.0.5`, `10.0.0.1-10.0.0.9`), or `none` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ranges.is_empty() {
            return f.write_str("none");
        }
        for (n, r) in self.ranges.iter().enumerate() {
            if n > 0 {
                f.write_str(", ")?;
            }
            write_range(f, self.family, *r)?;
        }
        Ok(())
    }
}

fn write_range(f: &mut impl fmt::Write, family: Family, r: IpRange) -> fmt::Result {
    if r.start == r.end {
        write!(f, "{}", Ip::new(family, r.start))
    } else {
        write!(f, "{}-{}", Ip::new(family, r.start), Ip::new(family, r.end))
    }
}

/// One run as text: `10.0.0.5` for a single address, `10.0.0.1-10.0.0.9` otherwise.
pub fn format_range(family: Family, r: IpRange) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_range(&mut s, family, r);
    s
}

/// The whole subnet of `ip` at `prefix`, network and broadcast addresses included. The prefix
/// is expected to be checked already; a larger one is treated as the full width.
pub fn subnet_of(ip: Ip, prefix: u8) -> IpRange {
    let bits = ip.family.bits();
    debug_assert!(prefix <= bits, "prefix /{prefix} for {}", ip.family);
    let net = net_of(ip, prefix.min(bits));
    IpRange {
        start: Ip::from_std(net.network()).value,
        end: Ip::from_std(net.broadcast()).value,
    }
}

/// `ip/prefix` as an `ipnet` network; `prefix` is within the family's width.
fn net_of(ip: Ip, prefix: u8) -> IpNet {
    IpNet::new(ip.to_std(), prefix).unwrap_or_else(|_| unreachable!("/{prefix} fits {}", ip.family))
}

// === Entries ===

/// How an entry was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryForm {
    Ip,
    Range,
    Cidr { prefix: u8 },
}

/// A parsed address entry: the range it covers (for a CIDR, the masked network) and its form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub family: Family,
    pub range: IpRange,
    pub form: EntryForm,
}

impl Entry {
    /// The entry as a one-run set.
    pub fn to_set(&self) -> AddrSet {
        AddrSet::from_range(self.family, self.range)
    }
}

impl fmt::Display for Entry {
    /// The canonical text, see [`canonical_entry_text`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let start = Ip::new(self.family, self.range.start);
        match self.form {
            EntryForm::Ip => write!(f, "{start}"),
            EntryForm::Range => write!(f, "{start}-{}", Ip::new(self.family, self.range.end)),
            EntryForm::Cidr { prefix } => write!(f, "{start}/{prefix}"),
        }
    }
}

/// The canonical way to write an entry: `ip`, `a-b` or `network/prefix`.
pub fn canonical_entry_text(e: &Entry) -> String {
    e.to_string()
}

/// A CIDR as written: the address before `/` (host bits and all), the prefix, and the masked
/// network it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    pub ip: Ip,
    pub prefix: u8,
    pub network: IpRange,
}

impl Cidr {
    /// The family of the address.
    pub fn family(&self) -> Family {
        self.ip.family
    }

    /// The network address (the masked `ip`).
    pub fn network_ip(&self) -> Ip {
        Ip::new(self.ip.family, self.network.start)
    }

    /// Whether the address has bits set below the prefix.
    pub fn has_host_bits(&self) -> bool {
        self.ip.value != self.network.start
    }

    /// The CIDR as an entry.
    pub fn entry(&self) -> Entry {
        Entry {
            family: self.ip.family,
            range: self.network,
            form: EntryForm::Cidr {
                prefix: self.prefix,
            },
        }
    }
}

impl fmt::Display for Cidr {
    /// The canonical text of the network it means: `10.0.0.0/24` for `10.0.0.1/24`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network_ip(), self.prefix)
    }
}

/// The forms of entry a field accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Forms {
    pub ip: bool,
    pub range: bool,
    pub cidr: bool,
}

impl Forms {
    /// A single IP, a range or a CIDR (pool entries).
    pub const ALL: Forms = Forms {
        ip: true,
        range: true,
        cidr: true,
    };
    /// A single IP only (addresses, gateways).
    pub const IP: Forms = Forms {
        ip: true,
        range: false,
        cidr: false,
    };
    /// A single IP or a range (Spiderpool `ips`).
    pub const IP_OR_RANGE: Forms = Forms {
        ip: true,
        range: true,
        cidr: false,
    };
    /// A CIDR only (subnets).
    pub const CIDR: Forms = Forms {
        ip: false,
        range: false,
        cidr: true,
    };

    fn allows(self, kind: FormKind) -> bool {
        match kind {
            FormKind::Ip => self.ip,
            FormKind::Range => self.range,
            FormKind::Cidr => self.cidr,
        }
    }

    fn kinds(self) -> impl Iterator<Item = FormKind> {
        [FormKind::Ip, FormKind::Range, FormKind::Cidr]
            .into_iter()
            .filter(move |k| self.allows(*k))
    }

    /// `IP address, range or CIDR`, as in `not a valid …`.
    fn noun(self) -> String {
        let words: Vec<&str> = self
            .kinds()
            .map(|k| match k {
                FormKind::Ip => "IP address",
                FormKind::Range => "range",
                FormKind::Cidr => "CIDR",
            })
            .collect();
        if words.is_empty() {
            "address".to_owned()
        } else {
            join_or(&words)
        }
    }

    /// `an IP address, a range or a CIDR`, as in `expected …`.
    fn described(self) -> String {
        let words: Vec<&str> = self
            .kinds()
            .map(|k| match k {
                FormKind::Ip => "an IP address",
                FormKind::Range => "a range",
                FormKind::Cidr => "a CIDR",
            })
            .collect();
        if words.is_empty() {
            "nothing".to_owned()
        } else {
            join_or(&words)
        }
    }
}

fn join_or(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The shape an entry was written in, before it is known to be valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormKind {
    Ip,
    Range,
    Cidr,
}

impl fmt::Display for FormKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FormKind::Ip => "a single IP address",
            FormKind::Range => "a range",
            FormKind::Cidr => "a CIDR",
        })
    }
}

/// Which end of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RangeBound {
    Start,
    End,
}

impl fmt::Display for RangeBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RangeBound::Start => "start",
            RangeBound::End => "end",
        })
    }
}

/// A value plus non-fatal findings (the SPEC's warnings), each a full sentence a kubectl user reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<T> {
    pub value: T,
    pub warnings: Vec<String>,
}

impl<T> Parsed<T> {
    /// Keeps the warnings, maps the value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Parsed<U> {
        Parsed {
            value: f(self.value),
            warnings: self.warnings,
        }
    }
}

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
        let a: Ipv6Addr = s.parse().map_err(|_| AddrError::Invalid {
            expected: Forms::IP,
        })?;
        let value = u128::from(a);
        Ok(IpText {
            ip: Ip {
                family: Family::V6,
                value,
            },
            canonical: a.to_string() == s,
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

/// Our own dotted-quad reader, so the error can say which rule was broken; it accepts exactly
/// what `std` accepts (a property test holds it to that).
fn read_ipv4(s: &str) -> Result<Ip, AddrError> {
    let invalid = AddrError::Invalid {
        expected: Forms::IP,
    };
    let mut octets = [""; 4];
    let mut n = 0;
    for part in s.split('.') {
        if n == 4 || part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid);
        }
        octets[n] = part;
        n += 1;
    }
    if n != 4 {
        return Err(invalid);
    }
    if octets.iter().any(|o| o.len() > 1 && o.starts_with('0')) {
        return Err(AddrError::LeadingZeroOctet);
    }
    let mut value: u32 = 0;
    for o in octets {
        let octet = match o.parse::<u8>() {
            Ok(v) => v,
            Err(_) => return Err(AddrError::OctetTooLarge),
        };
        value = value << 8 | u32::from(octet);
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
    if s.trim() != s {
        return Err(AddrError::OuterWhitespace);
    }
    if s.chars().any(char::is_whitespace) {
        return Err(AddrError::InnerWhitespace);
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

/// Checks an integer prefix field against the family bound (SPEC A2).
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
mod tests {
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
}
