//! Who decides: a `coordination.k8s.io/v1` Lease, read and written with resourceVersion-guarded
//! replaces, and a state machine that turns what it saw into "may I decide right now".
//!
//! The state machine is pure (time is passed in), so the tests drive it through pauses, lost
//! renewals and takeovers without sleeping. The loop at the bottom feeds it from the API server.
//!
//! Why not a crate: `kube-leader-election` needs kube 4 (a second kube in the tree);
//! `kube-lease-manager` 0.13 fits kube 5 but reports leadership as a bool its own task updates,
//! so a process woken from a pause reads a stale `true` before that task runs. Fencing by time
//! needs the instant of the last successful renew, which is what this module keeps.
//!
//! Times, as client-go's leader election uses them (15 s lease, 10 s renew deadline, 2 s retry):
//! - another replica treats the lease as expired once the record has not changed, by its own
//!   monotonic clock, for the lease duration, counted from when its read of the record returned
//!   (`next`'s `now`: never an instant from before the read was answered);
//! - the holder decides only until `start of its last successful renew + renew deadline`, which
//!   is earlier than any other replica can see the lease expire (they saw that renew after it
//!   started). So a paused holder that wakes finds its window closed before it looks at anything.
//! - a new holder that took the lease over from another starts deciding only after the pending
//!   TTL (X2) has passed since it acquired: every decision of the old holder was made before
//!   the lease could expire, so by then each of its pending entries would have expired in the old
//!   holder too, and the new holder's view is at least as complete as the old holder's was.

use std::time::{Duration, Instant};

/// Durations of the election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub lease: Duration,
    pub renew_deadline: Duration,
    pub retry: Duration,
    /// How long an admitted object counts as pending (X2): a takeover waits this long.
    pub pending_ttl: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            lease: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry: Duration::from_secs(2),
            pending_ttl: crate::cluster::PENDING_TTL,
        }
    }
}

impl Timing {
    /// The renew deadline must end before the lease can expire elsewhere, and retries must fit in it.
    pub fn check(&self) -> Result<(), String> {
        if self.renew_deadline >= self.lease {
            return Err(format!(
                "the decider renew deadline ({:?}) must be shorter than the lease duration ({:?})",
                self.renew_deadline, self.lease
            ));
        }
        if self.retry >= self.renew_deadline {
            return Err(format!(
                "the decider retry period ({:?}) must be shorter than the renew deadline ({:?})",
                self.retry, self.renew_deadline
            ));
        }
        if self.lease.as_secs() < 1 {
            return Err("the decider lease duration must be at least 1s".to_string());
        }
        Ok(())
    }
}

/// The fields of a Lease the election reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// Empty when nobody holds it (released).
    pub holder: String,
    /// Where the holder takes decision requests (`host:port`).
    pub address: Option<String>,
    pub resource_version: String,
    /// The holder's renew time as written: a change of holder or renew time is a sign of life.
    pub renew_time: String,
}

/// What the loop should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// No Lease exists: create one holding it.
    Create,
    /// We hold it: write a new renew time.
    Renew,
    /// It is free or expired: take it over.
    Acquire,
    /// Someone else holds it and is alive.
    Follow,
}

/// Where this replica stands, for the request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Holder, renewed recently enough, past any takeover wait.
    Deciding,
    /// Holder, but still waiting until the given instant after a takeover.
    Waiting(Instant),
    /// Not (or no longer provably) the holder; the holder's address when one is alive.
    Following(Option<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Leading {
    /// Start of the write that acquired the lease: names this term of leadership.
    acquired: Instant,
    /// Start of the last successful write that proved we hold the lease.
    renewed: Instant,
    /// When decisions may start (acquire + pending TTL after a takeover).
    deciding_from: Instant,
}

/// The election state of one replica.
#[derive(Debug)]
pub struct Election {
    identity: String,
    timing: Timing,
    /// The last record seen and when it last changed (by our clock).
    observed: Option<(Record, Instant)>,
    leading: Option<Leading>,
    /// Stepped down for good (shutting down): keeps following, never takes the lease again.
    retired: bool,
    /// A create or acquire whose answer was lost (a timeout, a dropped connection) may still
    /// have landed: whether it was taking the lease from another holder. The next read that
    /// finds the lease naming us settles it.
    unanswered: Option<bool>,
}

/// A write that made this replica the holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acquired {
    /// The lease was held by another replica before (not created, not released): the new term
    /// waits out the pending TTL, and the takeover is counted.
    pub takeover: bool,
}

impl Election {
    pub fn new(identity: impl Into<String>, timing: Timing) -> Self {
        Election {
            identity: identity.into(),
            timing,
            observed: None,
            leading: None,
            retired: false,
            unanswered: None,
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// Reads the Lease as it is now (`None`: there is none) and says what to do. `now` must not
    /// be earlier than the answer to the read: a record dated back before it was written could
    /// look expired while its holder still decides.
    pub fn next(&mut self, now: Instant, lease: Option<&Record>) -> Step {
        let Some(record) = lease else {
            self.observed = None;
            return if self.retired {
                Step::Follow
            } else {
                Step::Create
            };
        };
        match &self.observed {
            Some((seen, _))
                if seen.holder == record.holder && seen.renew_time == record.renew_time =>
            {
                // Unchanged: keep the instant it last changed, but remember the newer version.
                if let Some((seen, _)) = &mut self.observed {
                    seen.resource_version = record.resource_version.clone();
                    seen.address = record.address.clone();
                }
            }
            _ => self.observed = Some((record.clone(), now)),
        }
        if self.retired {
            self.leading = None;
            return Step::Follow;
        }
        if record.holder == self.identity {
            return Step::Renew;
        }
        // Someone else holds it (or nobody does): whatever we believed, we are not leading. A
        // term of ours from before must not live on: if the acquisition below loses its answer
        // but lands, the next read finds the lease naming us, and that renew must start a new
        // term that waits out the pending TTL, not extend the old one.
        self.leading = None;
        if record.holder.is_empty() || self.expired(now) {
            return Step::Acquire;
        }
        // Our own earlier write, if one was unanswered, did not land or was overwritten.
        self.unanswered = None;
        Step::Follow
    }

    fn expired(&self, now: Instant) -> bool {
        self.observed.as_ref().is_some_and(|(_, changed)| {
            now.saturating_duration_since(*changed) >= self.timing.lease
        })
    }

    /// A write of `step` that started at `started` succeeded.
    ///
    /// `previous_holder` says whether the lease had been held by someone else (a takeover), which
    /// makes the new holder wait out the pending TTL before deciding. Returns `Some` when this
    /// made us the holder (a leadership change worth a log line and, for a takeover, a count).
    pub fn wrote(
        &mut self,
        step: &Step,
        started: Instant,
        previous_holder: bool,
    ) -> Option<Acquired> {
        if self.retired {
            // A write that raced with stepping down: the release follows it and wins.
            return None;
        }
        let unanswered = self.unanswered.take();
        match step {
            Step::Renew => match &mut self.leading {
                Some(l) => {
                    // The guarded replace succeeded: nobody wrote the lease since our last write,
                    // so nobody else decided meanwhile and our window simply extends.
                    l.renewed = started;
                    None
                }
                None => {
                    // The lease names us but this state does not: an acquisition whose answer
                    // was lost landed after all (the identity is fresh per process, so nothing
                    // else writes it). Whatever that write was, wait out the pending TTL: the
                    // admissions of a holder before it cannot be known.
                    self.leading = Some(Leading {
                        acquired: started,
                        renewed: started,
                        deciding_from: started + self.timing.pending_ttl,
                    });
                    Some(Acquired {
                        takeover: unanswered.unwrap_or(true),
                    })
                }
            },
            Step::Create | Step::Acquire => {
                let wait = if previous_holder {
                    self.timing.pending_ttl
                } else {
                    Duration::ZERO
                };
                self.leading = Some(Leading {
                    acquired: started,
                    renewed: started,
                    deciding_from: started + wait,
                });
                Some(Acquired {
                    takeover: previous_holder,
                })
            }
            Step::Follow => None,
        }
    }

    /// A write of `step` failed: a conflict means someone else wrote the lease (we are not the
    /// holder any more); other failures leave the time fence to end our window. A create or
    /// acquire without an answer may have landed: `previous_holder` is kept for the read that
    /// finds out.
    pub(crate) fn write_failed(&mut self, step: &Step, conflict: bool, previous_holder: bool) {
        if conflict {
            self.leading = None;
            self.unanswered = None;
        } else if matches!(step, Step::Create | Step::Acquire) {
            self.unanswered = Some(previous_holder);
        }
    }

    /// We give the lease up (shutdown): stop deciding now, before the release is written.
    /// Returns whether we were deciding at `now`: only then is our list of admissions complete
    /// enough to hand over. A holder still waiting out a takeover lacks the crashed decider's
    /// admissions, so its successor must wait too.
    pub(crate) fn resign(&mut self, now: Instant) -> bool {
        let deciding = self.standing(now) == Standing::Deciding;
        self.retired = true;
        self.leading = None;
        deciding
    }

    /// The current term of leadership (the instant it was acquired), if any.
    pub fn term(&self) -> Option<Instant> {
        self.leading.map(|l| l.acquired)
    }

    /// The previous decider handed its admissions over (see `handover`): the term that started
    /// at `term` may decide from `now` instead of waiting out the pending TTL. A later term (the
    /// lease was lost and won again meanwhile) is not shortened.
    pub(crate) fn handed_over(&mut self, term: Instant, now: Instant) -> bool {
        match &mut self.leading {
            Some(l) if l.acquired == term => {
                l.deciding_from = l.deciding_from.min(now);
                true
            }
            _ => false,
        }
    }

    /// Whether this replica may decide at `now`, and if not, who may.
    pub fn standing(&self, now: Instant) -> Standing {
        if let Some(l) = &self.leading {
            if now.saturating_duration_since(l.renewed) < self.timing.renew_deadline {
                return if now >= l.deciding_from {
                    Standing::Deciding
                } else {
                    Standing::Waiting(l.deciding_from)
                };
            }
        }
        let holder = self
            .observed
            .as_ref()
            .filter(|(r, _)| !r.holder.is_empty() && r.holder != self.identity)
            .filter(|_| !self.expired(now))
            .and_then(|(r, _)| r.address.clone());
        Standing::Following(holder)
    }

    /// The fence the request path checks: the instant after which this replica must not decide
    /// (None when it is not the holder), and the instant it may start.
    pub fn fence(&self) -> Option<(Instant, Instant)> {
        self.leading
            .as_ref()
            .map(|l| (l.renewed + self.timing.renew_deadline, l.deciding_from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn timing() -> Timing {
        Timing {
            lease: 15 * S,
            renew_deadline: 10 * S,
            retry: 2 * S,
            pending_ttl: 30 * S,
        }
    }

    fn rec(holder: &str, renew: &str, rv: &str) -> Record {
        Record {
            holder: holder.into(),
            address: Some(format!("{holder}:9444")),
            resource_version: rv.into(),
            renew_time: renew.into(),
        }
    }

    #[test]
    fn timing_defaults_are_controller_runtimes_and_consistent() {
        let t = Timing::default();
        assert_eq!(
            (t.lease, t.renew_deadline, t.retry),
            (15 * S, 10 * S, 2 * S)
        );
        assert!(t.check().is_ok());
        let bad = Timing {
            renew_deadline: 15 * S,
            ..t
        };
        assert!(bad.check().unwrap_err().contains("renew deadline"));
    }

    #[test]
    fn creating_a_fresh_lease_decides_at_once() {
        let t0 = Instant::now();
        let mut e = Election::new("a", timing());
        assert_eq!(e.next(t0, None), Step::Create);
        assert_eq!(
            e.wrote(&Step::Create, t0, false),
            Some(Acquired { takeover: false })
        );
        assert_eq!(e.standing(t0 + S), Standing::Deciding);
    }

    #[test]
    fn a_holder_that_misses_its_renew_deadline_stops_deciding_before_the_lease_expires() {
        let t0 = Instant::now();
        let mut a = Election::new("a", timing());
        a.next(t0, None);
        a.wrote(&Step::Create, t0, false);
        // Renewals fail (API server unreachable): nothing is written.
        a.write_failed(&Step::Renew, false, false);
        assert_eq!(a.standing(t0 + 9 * S), Standing::Deciding);
        assert!(matches!(a.standing(t0 + 10 * S), Standing::Following(_)));
        // A follower that saw our create at t0 may take over at t0 + 15 s at the earliest.
        let mut b = Election::new("b", timing());
        assert_eq!(b.next(t0, Some(&rec("a", "r0", "1"))), Step::Follow);
        assert_eq!(
            b.next(t0 + 14 * S, Some(&rec("a", "r0", "1"))),
            Step::Follow
        );
        assert_eq!(
            b.next(t0 + 15 * S, Some(&rec("a", "r0", "1"))),
            Step::Acquire
        );
    }

    #[test]
    fn a_paused_holder_wakes_up_fenced_and_follows_the_new_holder() {
        let t0 = Instant::now();
        let mut a = Election::new("a", timing());
        a.next(t0, None);
        a.wrote(&Step::Create, t0, false);
        // Paused (SIGSTOP) at t0 + 1 s for a minute; b took over meanwhile.
        let woke = t0 + 61 * S;
        // Before a's loop runs again, a request arrives: the fence alone refuses it.
        assert!(matches!(a.standing(woke), Standing::Following(_)));
        let (until, _) = a.fence().unwrap();
        assert!(until <= woke);
        // Its next read of the lease shows b: it follows b.
        assert_eq!(a.next(woke, Some(&rec("b", "r9", "9"))), Step::Follow);
        assert_eq!(a.standing(woke), Standing::Following(Some("b:9444".into())));
        // And a late renew of a's (guarded by the old version) conflicts: still not leading.
        a.write_failed(&Step::Renew, true, false);
        assert!(a.fence().is_none());
    }

    #[test]
    fn a_takeover_waits_out_the_pending_ttl_before_deciding() {
        let t0 = Instant::now();
        let mut b = Election::new("b", timing());
        assert_eq!(b.next(t0, Some(&rec("a", "r0", "1"))), Step::Follow);
        let t1 = t0 + 15 * S;
        assert_eq!(b.next(t1, Some(&rec("a", "r0", "1"))), Step::Acquire);
        assert_eq!(
            b.wrote(&Step::Acquire, t1, true),
            Some(Acquired { takeover: true })
        );
        assert_eq!(b.standing(t1), Standing::Waiting(t1 + 30 * S));
        // Keep renewing through the wait.
        for i in 1..=15u32 {
            let t = t1 + 2 * i * S;
            assert_eq!(
                b.next(t, Some(&rec("b", &format!("r{i}"), "2"))),
                Step::Renew
            );
            assert_eq!(b.wrote(&Step::Renew, t, true), None);
        }
        assert_eq!(b.standing(t1 + 29 * S), Standing::Waiting(t1 + 30 * S));
        assert_eq!(b.standing(t1 + 30 * S), Standing::Deciding);
    }

    /// Under load an acquiring replace can time out on our side but land, so the next read finds
    /// the lease naming us (the likely cause of a CI run that counted no takeover). That is still
    /// a takeover: counted, and waited out.
    #[test]
    fn a_takeover_whose_answer_was_lost_is_found_by_the_next_read() {
        let t0 = Instant::now();
        let mut b = Election::new("b", timing());
        b.next(t0, Some(&rec("a", "r0", "1")));
        let t1 = t0 + 15 * S;
        assert_eq!(b.next(t1, Some(&rec("a", "r0", "1"))), Step::Acquire);
        b.write_failed(&Step::Acquire, false, true);
        assert!(b.fence().is_none());
        let t2 = t1 + S;
        assert_eq!(b.next(t2, Some(&rec("b", "r1", "2"))), Step::Renew);
        assert_eq!(
            b.wrote(&Step::Renew, t2, false),
            Some(Acquired { takeover: true })
        );
        assert_eq!(b.standing(t2), Standing::Waiting(t2 + 30 * S));
        // Only once: the next renew extends the same term.
        assert_eq!(b.wrote(&Step::Renew, t2 + 2 * S, false), None);
    }

    /// A holder whose next read finds the lease released by another (taken and given back
    /// between two of its reads) starts a new term when it takes it: had its old term lived on,
    /// a lost answer to the acquisition would make the next renew extend it, and the replica
    /// would decide at once without the admissions of the holder in between.
    #[test]
    fn taking_the_lease_back_starts_a_new_term_even_when_the_answer_was_lost() {
        let t0 = Instant::now();
        let mut a = Election::new("a", timing());
        a.next(t0, None);
        a.wrote(&Step::Create, t0, false);
        let t1 = t0 + S;
        assert_eq!(a.next(t1, Some(&rec("", "r5", "5"))), Step::Acquire);
        assert!(a.fence().is_none(), "a released lease is no term of ours");
        a.write_failed(&Step::Acquire, false, true);
        let t2 = t1 + S;
        assert_eq!(a.next(t2, Some(&rec("a", "r6", "6"))), Step::Renew);
        assert_eq!(
            a.wrote(&Step::Renew, t2, false),
            Some(Acquired { takeover: true })
        );
        assert_eq!(a.standing(t2), Standing::Waiting(t2 + 30 * S));
    }

    #[test]
    fn a_create_whose_answer_was_lost_is_no_takeover_but_still_waits() {
        let t0 = Instant::now();
        let mut a = Election::new("a", timing());
        assert_eq!(a.next(t0, None), Step::Create);
        a.write_failed(&Step::Create, false, false);
        assert_eq!(a.next(t0 + S, Some(&rec("a", "r0", "1"))), Step::Renew);
        assert_eq!(
            a.wrote(&Step::Renew, t0 + S, false),
            Some(Acquired { takeover: false })
        );
        assert!(matches!(a.standing(t0 + S), Standing::Waiting(_)));
    }

    #[test]
    fn a_lost_answer_forgotten_after_a_conflict_counts_as_a_takeover() {
        // A conflict after the lost write says someone else wrote the lease since: whatever we
        // learn next, assume the worst.
        let t0 = Instant::now();
        let mut b = Election::new("b", timing());
        b.write_failed(&Step::Create, false, false);
        b.write_failed(&Step::Acquire, true, false);
        assert_eq!(
            b.wrote(&Step::Renew, t0, false),
            Some(Acquired { takeover: true })
        );
    }

    #[test]
    fn a_released_lease_is_taken_at_once_but_still_waits_out_the_pending_ttl() {
        let t0 = Instant::now();
        let mut b = Election::new("b", timing());
        b.next(t0, Some(&rec("a", "r0", "1")));
        assert_eq!(b.next(t0 + S, Some(&rec("", "r1", "2"))), Step::Acquire);
        b.wrote(&Step::Acquire, t0 + S, true);
        assert!(matches!(b.standing(t0 + 2 * S), Standing::Waiting(_)));
    }

    #[test]
    fn a_live_holder_is_followed_for_as_long_as_it_renews() {
        let t0 = Instant::now();
        let mut b = Election::new("b", timing());
        for i in 0..100u32 {
            let t = t0 + 2 * i * S;
            assert_eq!(
                b.next(t, Some(&rec("a", &format!("r{i}"), "1"))),
                Step::Follow
            );
        }
        assert_eq!(
            b.standing(t0 + 200 * S),
            Standing::Following(Some("a:9444".into()))
        );
    }

    #[test]
    fn a_dead_holders_address_is_not_offered() {
        let t0 = Instant::now();
        let mut b = Election::new("b", timing());
        b.next(t0, Some(&rec("a", "r0", "1")));
        assert_eq!(b.standing(t0 + 16 * S), Standing::Following(None));
    }

    #[test]
    fn a_handover_ends_the_wait_of_its_own_term_only() {
        let t0 = Instant::now();
        let mut b = Election::new("b", timing());
        b.next(t0, Some(&rec("", "r1", "2")));
        b.wrote(&Step::Acquire, t0, true);
        let term = b.term().unwrap();
        assert!(b.handed_over(term, t0 + S));
        assert_eq!(b.standing(t0 + S), Standing::Deciding);
        // Lost and won again: a late handover of the old term changes nothing.
        b.write_failed(&Step::Renew, true, false);
        b.next(t0 + 2 * S, Some(&rec("", "r2", "3")));
        b.wrote(&Step::Acquire, t0 + 2 * S, true);
        assert!(!b.handed_over(term, t0 + 3 * S));
        assert!(matches!(b.standing(t0 + 3 * S), Standing::Waiting(_)));
    }

    #[test]
    fn a_holder_still_waiting_out_a_takeover_offers_no_handover() {
        let t0 = Instant::now();
        let mut b = Election::new("b", timing());
        b.next(t0, Some(&rec("a", "r0", "1")));
        b.next(t0 + 15 * S, Some(&rec("a", "r0", "1")));
        b.wrote(&Step::Acquire, t0 + 15 * S, true);
        assert!(!b.resign(t0 + 20 * S));
    }

    #[test]
    fn resigning_stops_deciding_at_once_and_for_good_but_keeps_following() {
        let t0 = Instant::now();
        let mut a = Election::new("a", timing());
        a.next(t0, None);
        a.wrote(&Step::Create, t0, false);
        assert!(a.resign(t0));
        assert!(matches!(a.standing(t0), Standing::Following(_)));
        // A renew that raced with the release does not bring leadership back.
        assert_eq!(a.wrote(&Step::Renew, t0, false), None);
        assert!(a.fence().is_none());
        // Released: it never takes the lease again, and it forwards to the next decider.
        assert_eq!(a.next(t0 + S, Some(&rec("", "r1", "2"))), Step::Follow);
        assert_eq!(a.next(t0 + 2 * S, Some(&rec("b", "r2", "3"))), Step::Follow);
        assert_eq!(
            a.standing(t0 + 2 * S),
            Standing::Following(Some("b:9444".into()))
        );
        assert_eq!(
            a.next(t0 + 30 * S, Some(&rec("b", "r2", "3"))),
            Step::Follow
        );
        assert_eq!(a.next(t0 + 31 * S, None), Step::Follow);
    }
}
