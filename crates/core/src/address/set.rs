//! Set algebra over merged runs: every operation costs O(number of runs), so a `/8` or `::/0`
//! is as cheap as a `/30`.

use std::fmt;

use ipnet::IpNet;

use super::ip::{Family, Ip, IpRange};

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
    pub(crate) fn whole_blocks(&self, prefix: u8) -> AddrSet {
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
    pub(crate) fn count_blocks(&self, prefix: u8) -> u128 {
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
