//! Who made an admission request, and how far their admitted writes may hold back others (X2).
//!
//! A pending entry is a reservation: until the watch shows the object, overlapping creates are
//! refused. Only the API server should be able to make one. With `--client-ca-file` every caller
//! that reaches the rules holds the API server's certificate (`Caller::Trusted`) and reserves for
//! the full TTL. Without it, anyone who can reach the port can post a review that was never a
//! real write, so a stranger's reservation is bounded:
//!
//! - it lasts `ttl` (5 s) instead of 30 s, and a retry of the same object does not extend it: a real
//!   write shows up through the watch well within that (which drops the entry early), a forged one
//!   never does;
//! - each of its entries that expires without the watch confirming it is a strike against the
//!   caller's address; an address with `strikes` (3) strikes within `window` (10 min) makes no more
//!   pending entries until the window ends, and its pending entries are dropped at once.
//!
//! So forged reviews from one address hold a given create back at most `strikes × ttl` (15 s) per
//! `window`, whatever their rate. What a legitimate but unauthenticated API server loses when its
//! own writes fail after admission (a later webhook denies, the name already exists) three times
//! in ten minutes is only the reservation: its requests are still judged against everything
//! stored, and what slips through in that window is reported by the audit (X4).

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How long a trusted caller's admitted object counts as existing before the watch shows it
/// (X2); a stranger's lasts `StrangerPolicy::ttl`.
pub const PENDING_TTL: Duration = Duration::from_secs(30);

/// Who sent an admission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// Authenticated as the API server (client certificate), or in-process (`check`, tests).
    Trusted,
    /// Anyone who reached the port: only the peer address is known.
    Stranger(IpAddr),
}

/// How strangers' pending entries are bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrangerPolicy {
    /// Lifetime of a stranger's pending entry, from its first admission.
    pub ttl: Duration,
    /// Unconfirmed expiries within `window` after which an address stops reserving.
    pub strikes: u32,
    pub window: Duration,
}

impl Default for StrangerPolicy {
    fn default() -> Self {
        StrangerPolicy {
            ttl: Duration::from_secs(5),
            strikes: 3,
            window: Duration::from_secs(600),
        }
    }
}

impl StrangerPolicy {
    /// Strangers reserve as trusted callers do (the 30 s TTL, no strikes): for a static view
    /// (`serve --dev`, `--state-from`), where no watch ever confirms a write, so every entry would
    /// expire unconfirmed and the strikes would bar every caller after three creates.
    pub fn unbounded() -> StrangerPolicy {
        StrangerPolicy {
            ttl: PENDING_TTL,
            strikes: u32::MAX,
            window: Duration::from_secs(600),
        }
    }
}

/// At most this many addresses are remembered; past it, records whose window ended are dropped,
/// so a caller cycling through addresses cannot grow memory without bound.
const MAX_ADDRESSES: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Record {
    strikes: u32,
    since: Instant,
}

/// Strikes per stranger address.
#[derive(Debug, Default)]
pub(crate) struct Strikes {
    by_addr: HashMap<IpAddr, Record>,
}

impl Strikes {
    /// Whether `addr` may make pending entries now.
    pub(crate) fn may_reserve(&self, policy: &StrangerPolicy, addr: IpAddr, now: Instant) -> bool {
        match self.by_addr.get(&addr) {
            Some(r) if now.saturating_duration_since(r.since) < policy.window => {
                r.strikes < policy.strikes
            }
            _ => true,
        }
    }

    /// Records one unconfirmed expiry; true when this strike bars the address.
    pub(crate) fn strike(&mut self, policy: &StrangerPolicy, addr: IpAddr, now: Instant) -> bool {
        if self.by_addr.len() >= MAX_ADDRESSES && !self.by_addr.contains_key(&addr) {
            self.by_addr
                .retain(|_, r| now.saturating_duration_since(r.since) < policy.window);
        }
        let record = self.by_addr.entry(addr).or_insert(Record {
            strikes: 0,
            since: now,
        });
        if now.saturating_duration_since(record.since) >= policy.window {
            *record = Record {
                strikes: 0,
                since: now,
            };
        }
        record.strikes += 1;
        record.strikes == policy.strikes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_barred_after_its_strikes_for_the_window() {
        let policy = StrangerPolicy::default();
        let mut strikes = Strikes::default();
        let a: IpAddr = "10.1.2.3".parse().unwrap();
        let b: IpAddr = "10.1.2.4".parse().unwrap();
        let t0 = Instant::now();
        assert!(!strikes.strike(&policy, a, t0));
        assert!(!strikes.strike(&policy, a, t0 + Duration::from_secs(5)));
        assert!(strikes.may_reserve(&policy, a, t0 + Duration::from_secs(6)));
        assert!(strikes.strike(&policy, a, t0 + Duration::from_secs(10)));
        assert!(!strikes.may_reserve(&policy, a, t0 + Duration::from_secs(11)));
        assert!(strikes.may_reserve(&policy, b, t0 + Duration::from_secs(11)));
        // The window ends: the address reserves again, and its strikes start over.
        let later = t0 + policy.window;
        assert!(strikes.may_reserve(&policy, a, later));
        assert!(!strikes.strike(&policy, a, later));
        assert!(strikes.may_reserve(&policy, a, later));
    }

    #[test]
    fn remembered_addresses_are_bounded() {
        let policy = StrangerPolicy::default();
        let mut strikes = Strikes::default();
        let t0 = Instant::now();
        for i in 0..MAX_ADDRESSES as u32 {
            strikes.strike(&policy, IpAddr::from(i.to_be_bytes()), t0);
        }
        let later = t0 + policy.window;
        strikes.strike(&policy, "192.0.2.1".parse().unwrap(), later);
        assert_eq!(strikes.by_addr.len(), 1);
    }
}
