//! Inclusive u128 runs owned by pools, cut into disjoint elementary segments.
//!
//! Why elementary segments rather than an interval tree: pools stored before install may overlap
//! (X4), so runs of different owners can overlap and a query must say what each owner shares
//! with the asked set. Cutting the line at every run boundary gives disjoint segments, each with the
//! sorted list of owners covering all of it; a std `BTreeMap` keyed by segment start then answers an
//! overlap query with one `range` scan (O(log n + k), k = segments visited) and the shared part of
//! each owner falls out of the scan directly. No custom balanced tree, no unsafe.
//!
//! Ends are inclusive so a run may end at `u128::MAX` (`::/0`): `end + 1` is always `checked_add`.
//!
//! Cost: memory is O(runs) while runs are disjoint, which is the steady state P10 enforces. Overlaps
//! that predate install cost one owner id per (segment, owner) pair, bounded by the number of
//! distinct boundaries times the overlap depth; identical ranges (the common "every namespace has
//! its own 192.168.1.0/24" case) share one segment.
//!
//! Invariants (checked by `check`): segments are disjoint and sorted, every segment has at least one
//! owner, owners are sorted and unique, and two adjacent segments never have equal owners (so
//! removing an owner restores the map a fresh build would give).

use std::collections::BTreeMap;

/// One elementary segment: `[start (the map key), end]`, covered by exactly `owners`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seg {
    end: u128,
    /// Sorted, unique, never empty.
    owners: Vec<u32>,
}

/// Disjoint segments keyed by their first value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SegmentMap {
    segs: BTreeMap<u128, Seg>,
}

impl SegmentMap {
    pub(crate) fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Number of elementary segments (tests and sizing).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.segs.len()
    }

    /// Adds `[start, end]` (inclusive) to `owner`. Adding a value the owner already covers is a no-op
    /// for that value.
    pub(crate) fn insert(&mut self, start: u128, end: u128, owner: u32) {
        debug_assert!(start <= end);
        self.split_at(start);
        if let Some(after) = end.checked_add(1) {
            self.split_at(after);
        }
        // After the splits every segment meeting [start, end] lies inside it.
        let mut touched = Vec::new();
        let mut gaps = Vec::new();
        // Next value not yet accounted for; None once u128::MAX has been passed.
        let mut cursor = Some(start);
        for (&s, seg) in self.segs.range_mut(start..=end) {
            if let Some(c) = cursor {
                if c < s {
                    gaps.push((c, s - 1));
                }
            }
            if let Err(pos) = seg.owners.binary_search(&owner) {
                seg.owners.insert(pos, owner);
            }
            touched.push(s);
            cursor = seg.end.checked_add(1);
        }
        if let Some(c) = cursor {
            if c <= end {
                gaps.push((c, end));
            }
        }
        for &(s, e) in &gaps {
            self.segs.insert(
                s,
                Seg {
                    end: e,
                    owners: vec![owner],
                },
            );
            touched.push(s);
        }
        self.merge_around(touched, end);
    }

    /// Takes `[start, end]` away from `owner`; segments left without owners disappear and
    /// neighbours that now have equal owners merge back.
    pub(crate) fn remove(&mut self, start: u128, end: u128, owner: u32) {
        debug_assert!(start <= end);
        // Runs are removed exactly as inserted, so these splits find nothing to do; they keep the
        // map correct should a caller remove a run that does not match a boundary.
        self.split_at(start);
        if let Some(after) = end.checked_add(1) {
            self.split_at(after);
        }
        let mut touched = Vec::new();
        let mut emptied = Vec::new();
        for (&s, seg) in self.segs.range_mut(start..=end) {
            if let Ok(pos) = seg.owners.binary_search(&owner) {
                seg.owners.remove(pos);
                if seg.owners.is_empty() {
                    emptied.push(s);
                } else {
                    touched.push(s);
                }
            } else {
                // Not ours: only a split we made above may need undoing.
                touched.push(s);
            }
        }
        for s in emptied {
            self.segs.remove(&s);
        }
        self.merge_around(touched, end);
    }

    /// Segments meeting `[start, end]`, clipped to it, in ascending order: `(start, end, owners)`.
    pub(crate) fn query(
        &self,
        start: u128,
        end: u128,
    ) -> impl Iterator<Item = (u128, u128, &[u32])> + '_ {
        // The only segment that may start before `start` and still reach it is the one just before.
        let first = self
            .segs
            .range(..start)
            .next_back()
            .filter(|(_, seg)| seg.end >= start);
        first
            .into_iter()
            .chain(self.segs.range(start..=end))
            .map(move |(&s, seg)| (s.max(start), seg.end.min(end), seg.owners.as_slice()))
    }

    /// Makes `at` the first value of a segment when it falls strictly inside one.
    fn split_at(&mut self, at: u128) {
        let Some((&s, seg)) = self.segs.range_mut(..at).next_back() else {
            return;
        };
        if seg.end < at {
            return;
        }
        let right = Seg {
            end: seg.end,
            owners: seg.owners.clone(),
        };
        // s < at, so at - 1 cannot underflow.
        seg.end = at - 1;
        debug_assert!(s <= seg.end);
        self.segs.insert(at, right);
    }

    /// Restores "no two adjacent segments with equal owners" at every boundary an edit may have
    /// changed: before each touched segment and after the edited run.
    fn merge_around(&mut self, mut touched: Vec<u128>, end: u128) {
        if let Some(after) = end.checked_add(1) {
            touched.push(after);
        }
        touched.sort_unstable();
        // Ascending, so a segment merged into its predecessor is looked up afresh by the next one.
        for s in touched {
            self.merge_with_prev(s);
        }
    }

    fn merge_with_prev(&mut self, s: u128) {
        let Some(seg) = self.segs.get(&s) else {
            return;
        };
        let Some((_, prev)) = self.segs.range(..s).next_back() else {
            return;
        };
        if prev.end.checked_add(1) != Some(s) || prev.owners != seg.owners {
            return;
        }
        let end = seg.end;
        self.segs.remove(&s);
        if let Some((_, prev)) = self.segs.range_mut(..s).next_back() {
            prev.end = end;
        }
    }

    /// Panics when an invariant is broken (tests only).
    pub(crate) fn check(&self) {
        let mut prev: Option<(u128, &Seg)> = None;
        for (&s, seg) in &self.segs {
            assert!(s <= seg.end, "segment {s}..={} is reversed", seg.end);
            assert!(!seg.owners.is_empty(), "segment {s} has no owner");
            assert!(
                seg.owners.windows(2).all(|w| w[0] < w[1]),
                "segment {s} owners not sorted/unique: {:?}",
                seg.owners
            );
            if let Some((ps, p)) = prev {
                assert!(p.end < s, "segments {ps} and {s} overlap");
                assert!(
                    !(p.end + 1 == s && p.owners == seg.owners),
                    "segments {ps} and {s} should have merged"
                );
            }
            prev = Some((s, seg));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(m: &SegmentMap) -> Vec<(u128, u128, Vec<u32>)> {
        m.check();
        m.segs
            .iter()
            .map(|(&s, seg)| (s, seg.end, seg.owners.clone()))
            .collect()
    }

    fn q(m: &SegmentMap, s: u128, e: u128) -> Vec<(u128, u128, Vec<u32>)> {
        m.query(s, e).map(|(a, b, o)| (a, b, o.to_vec())).collect()
    }

    #[test]
    fn disjoint_runs_stay_single_segments() {
        let mut m = SegmentMap::default();
        m.insert(10, 20, 1);
        m.insert(30, 40, 2);
        m.insert(21, 29, 3);
        assert_eq!(
            dump(&m),
            vec![(10, 20, vec![1]), (21, 29, vec![3]), (30, 40, vec![2])]
        );
        assert_eq!(q(&m, 0, 9), vec![]);
        assert_eq!(q(&m, 15, 22), vec![(15, 20, vec![1]), (21, 22, vec![3])]);
    }

    #[test]
    fn overlapping_runs_split_and_remove_merges_back() {
        let mut m = SegmentMap::default();
        m.insert(0, 100, 1);
        m.insert(50, 150, 2);
        m.insert(60, 70, 3);
        assert_eq!(
            dump(&m),
            vec![
                (0, 49, vec![1]),
                (50, 59, vec![1, 2]),
                (60, 70, vec![1, 2, 3]),
                (71, 100, vec![1, 2]),
                (101, 150, vec![2]),
            ]
        );
        m.remove(60, 70, 3);
        assert_eq!(
            dump(&m),
            vec![(0, 49, vec![1]), (50, 100, vec![1, 2]), (101, 150, vec![2])]
        );
        m.remove(50, 150, 2);
        assert_eq!(dump(&m), vec![(0, 100, vec![1])]);
        m.remove(0, 100, 1);
        assert!(m.is_empty());
    }

    #[test]
    fn identical_runs_share_one_segment() {
        let mut m = SegmentMap::default();
        for owner in 0..50 {
            m.insert(1000, 1255, owner);
        }
        assert_eq!(m.len(), 1);
        assert_eq!(q(&m, 1100, 1100)[0].2.len(), 50);
    }

    #[test]
    fn whole_u128_line_and_max_end() {
        let mut m = SegmentMap::default();
        m.insert(0, u128::MAX, 1);
        m.insert(u128::MAX, u128::MAX, 2);
        m.insert(u128::MAX - 10, u128::MAX, 3);
        assert_eq!(
            dump(&m),
            vec![
                (0, u128::MAX - 11, vec![1]),
                (u128::MAX - 10, u128::MAX - 1, vec![1, 3]),
                (u128::MAX, u128::MAX, vec![1, 2, 3]),
            ]
        );
        assert_eq!(
            q(&m, u128::MAX, u128::MAX),
            vec![(u128::MAX, u128::MAX, vec![1, 2, 3])]
        );
        m.remove(u128::MAX, u128::MAX, 2);
        m.remove(u128::MAX - 10, u128::MAX, 3);
        assert_eq!(dump(&m), vec![(0, u128::MAX, vec![1])]);
        m.remove(0, u128::MAX, 1);
        assert!(m.is_empty());
    }

    #[test]
    fn gap_filling_over_several_segments() {
        let mut m = SegmentMap::default();
        m.insert(10, 10, 1);
        m.insert(20, 25, 2);
        m.insert(0, u128::MAX, 3);
        assert_eq!(
            dump(&m),
            vec![
                (0, 9, vec![3]),
                (10, 10, vec![1, 3]),
                (11, 19, vec![3]),
                (20, 25, vec![2, 3]),
                (26, u128::MAX, vec![3]),
            ]
        );
        m.remove(10, 10, 1);
        m.remove(20, 25, 2);
        assert_eq!(dump(&m), vec![(0, u128::MAX, vec![3])]);
    }

    #[test]
    fn adjacent_runs_of_one_owner_merge() {
        let mut m = SegmentMap::default();
        m.insert(0, 9, 1);
        m.insert(10, 19, 1);
        assert_eq!(dump(&m), vec![(0, 19, vec![1])]);
    }

    /// Brute force over a tiny universe: every value's owner set must match.
    #[test]
    fn random_edits_match_brute_force() {
        const U: u128 = 24;
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut m = SegmentMap::default();
        let mut runs: Vec<(u128, u128, u32)> = Vec::new();
        for _ in 0..4000 {
            if runs.is_empty() || rnd(3) > 0 {
                let a = rnd(U as u64) as u128;
                let b = rnd(U as u64) as u128;
                let owner = rnd(6) as u32;
                let (s, e) = (a.min(b), a.max(b));
                // One run per owner value range, as the index inserts a pool's merged runs.
                if runs
                    .iter()
                    .any(|&(rs, re, o)| o == owner && rs <= e.saturating_add(1) && s <= re + 1)
                {
                    continue;
                }
                m.insert(s, e, owner);
                runs.push((s, e, owner));
            } else {
                let i = rnd(runs.len() as u64) as usize;
                let (s, e, o) = runs.swap_remove(i);
                m.remove(s, e, o);
            }
            m.check();
            for v in 0..U {
                let mut want: Vec<u32> = runs
                    .iter()
                    .filter(|&&(s, e, _)| s <= v && v <= e)
                    .map(|&(_, _, o)| o)
                    .collect();
                want.sort_unstable();
                want.dedup();
                let got: Vec<u32> = m.query(v, v).flat_map(|(_, _, o)| o.to_vec()).collect();
                assert_eq!(got, want, "value {v}");
            }
        }
    }
}
