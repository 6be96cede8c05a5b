//! A clean step-down hands the decider's admissions to the next decider, so a rolling update
//! does not cost a pending TTL (30 s) of refused writes.
//!
//! Why this is as safe as waiting out the TTL: the old decider stops deciding (resigns) before it
//! releases the lease, so the list it serves afterwards is final. It lists every admission of the
//! last TTL, also those its own watch has since confirmed: the new decider's watch may lag behind
//! the old one's, so "confirmed there" does not mean "visible here". The new decider installs each
//! as a pending entry (re-projected from the object, as the old decider did) and only then starts
//! deciding. Admissions older than the TTL are not promised by X2 in any case. Only a decider that
//! was deciding offers a handover: one still waiting out a takeover lacks the crashed decider's
//! admissions, so its successor waits as it would have. If the list cannot
//! be fetched (the old process died, or it admitted more than it could keep), the new decider
//! falls back to waiting out the TTL.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::admission::DecisionRequest;

/// The peer route the next decider fetches the list from.
pub(crate) const PENDING_PATH: &str = "/pending";

/// At most this many admissions are kept (a burst of 100k creates within one TTL is far above
/// any real IPAM write rate); past it the list is incomplete and no handover is offered.
const CAP: usize = 100_000;

/// What `GET /pending` answers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Handover {
    #[serde(deserialize_with = "crate::admission::known_entries")]
    pub entries: Vec<DecisionRequest>,
}

/// The admissions of the last TTL, in order.
#[derive(Debug)]
pub(crate) struct Log {
    ttl: Duration,
    inner: Mutex<Inner>,
    stepped_down: AtomicBool,
    fetched: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Inner {
    entries: VecDeque<(Instant, DecisionRequest)>,
    /// Until then the list misses an admission dropped for the cap.
    incomplete_until: Option<Instant>,
}

impl Log {
    pub(crate) fn new(ttl: Duration) -> Self {
        Log {
            ttl,
            inner: Mutex::new(Inner::default()),
            stepped_down: AtomicBool::new(false),
            fetched: tokio::sync::Notify::new(),
        }
    }

    pub(crate) fn record(&self, now: Instant, request: DecisionRequest) {
        let mut inner = self.lock();
        self.prune(&mut inner, now);
        inner.entries.push_back((now, request));
        if inner.entries.len() > CAP {
            inner.entries.pop_front();
            inner.incomplete_until = Some(now + self.ttl);
        }
    }

    /// The list for the next decider: only once this replica has stepped down (so the list is
    /// final), and only when complete.
    pub(crate) fn handover(&self, now: Instant) -> Result<Handover, &'static str> {
        if !self.stepped_down.load(Ordering::SeqCst) {
            return Err("this replica has not stepped down as the decider");
        }
        let mut inner = self.lock();
        self.prune(&mut inner, now);
        if inner.incomplete_until.is_some_and(|t| now < t) {
            return Err("this replica admitted more than it could keep for a handover");
        }
        let entries = inner
            .entries
            .iter()
            .map(|(at, r)| DecisionRequest {
                admitted_ms_ago: Some(now.saturating_duration_since(*at).as_millis() as u64),
                ..r.clone()
            })
            .collect();
        self.fetched.notify_waiters();
        self.fetched.notify_one();
        Ok(Handover { entries })
    }

    pub(crate) fn step_down(&self) {
        self.stepped_down.store(true, Ordering::SeqCst);
    }

    /// Waits until the next decider fetched the list (or the caller's timeout).
    pub(crate) async fn fetched(&self) {
        self.fetched.notified().await;
    }

    fn prune(&self, inner: &mut Inner, now: Instant) {
        while inner
            .entries
            .front()
            .is_some_and(|(at, _)| now.saturating_duration_since(*at) >= self.ttl)
        {
            inner.entries.pop_front();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(name: &str) -> DecisionRequest {
        DecisionRequest {
            kind: crate::kinds::Kind::InClusterIPPool,
            version: "v1alpha2".into(),
            operation: crate::model::Operation::Create,
            namespace: Some("ns".into()),
            name: name.into(),
            object: None,
            old_object: None,
            dry_run: false,
            stranger: None,
            admitted_ms_ago: None,
        }
    }

    #[test]
    fn only_a_replica_that_stepped_down_hands_over_and_only_the_last_ttl() {
        let t0 = Instant::now();
        let log = Log::new(Duration::from_secs(30));
        log.record(t0, req("old"));
        log.record(t0 + Duration::from_secs(20), req("new"));
        assert!(log.handover(t0 + Duration::from_secs(31)).is_err());
        log.step_down();
        let list = log.handover(t0 + Duration::from_secs(31)).unwrap();
        let names: Vec<&str> = list.entries.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["new"]);
    }

    #[test]
    fn an_overflowing_log_offers_no_handover_until_the_dropped_entry_would_have_expired() {
        let t0 = Instant::now();
        let log = Log::new(Duration::from_secs(30));
        log.step_down();
        for i in 0..=CAP {
            log.record(t0, req(&format!("p{i}")));
        }
        assert!(log.handover(t0).is_err());
        assert!(log.handover(t0 + Duration::from_secs(30)).is_ok());
    }
}
