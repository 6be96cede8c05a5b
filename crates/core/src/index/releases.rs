//! Addresses released recently (R1): when an address object goes, the view remembers which
//! address it held, which object held it, through which pool and address space, when it went and
//! how long the reuse grace that applied to it was, so that a new holder of the same address in
//! the same space can be refused until the grace is over (top-of-rack switches keep the old
//! owner's ARP/NDP entry and black-hole the new one).
//!
//! Bounded: a release is kept until its grace ends and never more than [`MAX_RELEASES`] of them
//! at once (beyond that, the one whose grace ends soonest goes first). Only the latest release of
//! an address per address space counts. What is not remembered is not refused (fail-safe): a
//! restart, a release past its grace, or one pushed out by the cap.
//!
//! Costs: record and expire O(log n) amortised, lookup O(1) expected (the releases of one address
//! are a list of one, or one per address space).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::FastMap;
use crate::address::Ip;
use crate::model::ObjKey;

/// At most this many releases are remembered at once: 800 a second for a minute's grace, far
/// beyond any real churn. At the measured size of one release (docs/performance.md, "Memory"),
/// the cap is at most 25 MiB.
pub const MAX_RELEASES: usize = 50_000;

/// One address given back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub ip: Ip,
    /// The address object that held it (`IPAddress team-a/web-0`).
    pub holder: ObjKey,
    /// The claim that object fulfilled: re-creating the same object for the same claim is not a
    /// new holder.
    pub claim: Option<Arc<str>>,
    /// The pool the holder referenced, when it is a known pool kind.
    pub pool: Option<ObjKey>,
    /// The address space the address was released in (its pool's when it went).
    pub space: Arc<str>,
    /// When the view saw the release begin.
    pub at: Instant,
    /// The reuse grace that applied when it was released.
    pub grace: Duration,
    /// Whether `grace` is the pool's own `addressReuseGracePeriodSeconds` (else `--reuse-grace`).
    pub from_pool: bool,
}

impl Release {
    /// When the grace ends.
    pub fn until(&self) -> Instant {
        self.at + self.grace
    }
}

/// The latest release of each address per address space, and the order in which they end.
#[derive(Debug, Clone, Default)]
pub struct Releases {
    /// Releases of each address, each with the number of its slot in `ends`.
    by_ip: FastMap<Ip, Vec<(Release, u64)>>,
    /// (end of grace, address, slot number), soonest first. A slot whose release was replaced
    /// (the address released again in the same space) is stale and skipped when it comes up.
    ends: BinaryHeap<Reverse<(Instant, Ip, u64)>>,
    next: u64,
    len: usize,
}

impl Releases {
    /// Remembers `release` (a zero grace is nothing to remember), replacing an earlier release
    /// of the same address in the same space. Beyond [`MAX_RELEASES`], forgets the releases
    /// whose grace ends soonest.
    pub fn record(&mut self, release: Release) {
        if release.grace.is_zero() {
            return;
        }
        let slot = self.next;
        self.next += 1;
        let ip = release.ip;
        self.ends.push(Reverse((release.until(), ip, slot)));
        // Nearly every address has one release: a list of one, not the four a first push
        // would reserve (that alone was 900 B per release).
        let list = self
            .by_ip
            .entry(ip)
            .or_insert_with(|| Vec::with_capacity(1));
        match list.iter_mut().find(|(r, _)| r.space == release.space) {
            Some(held) => *held = (release, slot),
            None => {
                list.push((release, slot));
                self.len += 1;
            }
        }
        while self.len > MAX_RELEASES {
            let Some(Reverse((_, ip, slot))) = self.ends.pop() else {
                break;
            };
            self.forget(ip, slot);
        }
        // Stale slots (addresses released again within their grace) must not outgrow the
        // releases themselves.
        if self.ends.len() > 2 * self.len.max(1024) {
            let live: Vec<_> = self
                .by_ip
                .iter()
                .flat_map(|(ip, list)| list.iter().map(|(r, s)| Reverse((r.until(), *ip, *s))))
                .collect();
            self.ends = BinaryHeap::from(live);
        }
    }

    /// Forgets every release whose grace has ended by `now`.
    pub fn expire(&mut self, now: Instant) {
        while let Some(&Reverse((until, ip, slot))) = self.ends.peek() {
            if until > now {
                break;
            }
            self.ends.pop();
            self.forget(ip, slot);
        }
    }

    /// When the next release's grace ends (it may be a stale slot: expiring then is harmless).
    pub fn next_end(&self) -> Option<Instant> {
        self.ends.peek().map(|Reverse((until, _, _))| *until)
    }

    /// The remembered releases of `ip`, in any address space.
    pub fn of(&self, ip: Ip) -> impl Iterator<Item = &Release> + '_ {
        self.by_ip
            .get(&ip)
            .into_iter()
            .flatten()
            .map(|(release, _)| release)
    }

    /// Releases remembered now.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops the release recorded in `slot`, if it is still the one held for `ip`.
    fn forget(&mut self, ip: Ip, slot: u64) {
        let Some(list) = self.by_ip.get_mut(&ip) else {
            return;
        };
        if let Some(pos) = list.iter().position(|(_, s)| *s == slot) {
            list.swap_remove(pos);
            self.len -= 1;
        }
        if list.is_empty() {
            self.by_ip.remove(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::{parse_ip, Family};
    use crate::kinds::Kind;

    fn ip(s: &str) -> Ip {
        parse_ip(s).unwrap().value
    }

    fn release(addr: Ip, name: &str, space: &str, at: Instant, grace: u64) -> Release {
        Release {
            ip: addr,
            holder: ObjKey::new(Kind::IPAddress, Some("ns"), name),
            claim: Some(Arc::from(name)),
            pool: None,
            space: Arc::from(space),
            at,
            grace: Duration::from_secs(grace),
            from_pool: false,
        }
    }

    fn holders(r: &Releases, addr: Ip) -> Vec<String> {
        let mut out: Vec<String> = r.of(addr).map(|r| r.holder.name.to_string()).collect();
        out.sort();
        out
    }

    #[test]
    fn r1_the_latest_release_per_space_counts_and_ended_ones_are_forgotten() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let a = ip("10.0.0.5");
        let mut r = Releases::default();
        r.record(release(a, "old", "default", t0, 60));
        r.record(release(ip("10.0.0.6"), "b", "default", t0, 10));
        r.record(release(a, "other-space", "dc2", t0, 60));
        assert_eq!(holders(&r, a), ["old", "other-space"]);
        // Released again later in the same space: the newer release replaces the older.
        r.record(release(a, "newer", "default", t0 + s(30), 60));
        assert_eq!(holders(&r, a), ["newer", "other-space"]);
        assert_eq!(r.len(), 3);

        r.expire(t0 + s(10));
        assert!(
            r.of(ip("10.0.0.6")).next().is_none(),
            "its grace ended at 10 s"
        );
        r.expire(t0 + s(60));
        assert_eq!(
            holders(&r, a),
            ["newer"],
            "the older slot's end leaves the newer alone"
        );
        r.expire(t0 + s(89));
        assert_eq!(holders(&r, a), ["newer"]);
        r.expire(t0 + s(90));
        assert!(r.is_empty());
        assert!(r.by_ip.is_empty());
        assert_eq!(r.next_end(), None);
    }

    #[test]
    fn r1_a_zero_grace_is_not_remembered() {
        let mut r = Releases::default();
        r.record(release(ip("10.0.0.5"), "a", "default", Instant::now(), 0));
        assert!(r.is_empty());
    }

    #[test]
    fn r1_never_more_than_the_cap_and_the_soonest_ending_go_first() {
        let t0 = Instant::now();
        let mut r = Releases::default();
        let v4 = |i: u32| Ip::new(Family::V4, u128::from(0x0a00_0000 + i));
        // The first ten have the shortest grace: they are the ones forgotten.
        for i in 0..(MAX_RELEASES as u32 + 10) {
            let grace = if i < 10 { 5 } else { 3600 };
            r.record(release(v4(i), "x", "default", t0, grace));
        }
        assert_eq!(r.len(), MAX_RELEASES);
        assert!(r.of(v4(9)).next().is_none());
        assert!(r.of(v4(10)).next().is_some());
        assert!(r.of(v4(MAX_RELEASES as u32 + 9)).next().is_some());
    }

    #[test]
    fn r1_stale_slots_of_one_address_released_over_and_over_stay_bounded() {
        let t0 = Instant::now();
        let mut r = Releases::default();
        let a = ip("2001:db8::5");
        for i in 0..10_000u64 {
            r.record(release(
                a,
                "x",
                "default",
                t0 + Duration::from_millis(i),
                3600,
            ));
        }
        assert_eq!(r.len(), 1);
        assert!(r.ends.len() <= 2 * 1024 + 1, "{}", r.ends.len());
    }
}
