//! Readiness of the live view, per watch: the view is synced only while discovery has run, every
//! watched kind has finished its first list, every kind a CRD announced is watched, and no watch
//! (the CRD watch included) is sick.
//!
//! A watch is sick when its last attempt failed, or when it has shown no life for longer than
//! `bound`. Life is anything that proves the API server still talks to us: a list or watch that
//! started, an event, a bookmark, a watch the server ended at its timeout. Watches ask the server
//! to end them well inside `bound`, so a quiet but healthy kind never looks silent.
//!
//! Every method takes `now`: the view passes its clock's time, tests drive time themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::cluster::ledger::PendingHold;
use crate::cluster::WatchHealth;
use crate::kinds::Kind;

/// What a watch feeds: one kind of the table, or the CRDs that announce new kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Source {
    Crds,
    Kind(Kind),
}

impl Source {
    pub fn label(self) -> String {
        match self {
            Source::Crds => "CustomResourceDefinition".to_string(),
            Source::Kind(k) => k.display_name(),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

/// Why a list was made (`ipam_guard_view_relists_total{cause}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ListCause {
    /// The first list of a watch.
    Initial,
    /// The watch's resourceVersion fell out of the server's window (410 Gone).
    Expired,
    /// The watch ended with another error event, or the previous list failed.
    Error,
}

impl ListCause {
    pub fn as_str(self) -> &'static str {
        match self {
            ListCause::Initial => "initial",
            ListCause::Expired => "expired",
            ListCause::Error => "error",
        }
    }
}

#[derive(Debug, Clone)]
struct Watch {
    /// The version read (empty for the CRD watch); reports of an older watcher are ignored.
    version: String,
    listed: bool,
    failed: bool,
    last_life: Option<Instant>,
    lists: BTreeMap<ListCause, u64>,
}

impl Watch {
    fn new(version: String) -> Self {
        Watch {
            version,
            listed: false,
            failed: false,
            last_life: None,
            lists: BTreeMap::new(),
        }
    }

    fn healthy(&self, now: Instant, bound: Duration) -> bool {
        self.listed
            && !self.failed
            && self
                .last_life
                .is_some_and(|t| now.saturating_duration_since(t) <= bound)
    }
}

#[derive(Debug, Default)]
struct Inner {
    discovered: bool,
    /// Kinds a CRD says are served, not yet picked up by discovery.
    expected: BTreeSet<Kind>,
    /// The versions the CRDs serve each watched kind in, as the CRD watch saw them last.
    crd_versions: BTreeSet<(Kind, &'static str)>,
    watches: BTreeMap<Source, Watch>,
    /// Last answer of `synced`, to log transitions once.
    was_synced: bool,
}

/// Shared by the discovery loop, every watch task and the readers (`/readyz`, admission, metrics).
#[derive(Debug)]
pub struct Status {
    bound: Duration,
    inner: Mutex<Inner>,
}

impl Status {
    pub fn new(bound: Duration) -> Self {
        Status {
            bound,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the view may be trusted now (X3).
    pub fn synced(&self, now: Instant) -> bool {
        let mut inner = self.lock();
        let sick: Vec<Source> = inner
            .watches
            .iter()
            .filter(|(_, w)| !w.healthy(now, self.bound))
            .map(|(s, _)| *s)
            .collect();
        let missing: Vec<Kind> = inner
            .expected
            .iter()
            .filter(|k| !inner.watches.contains_key(&Source::Kind(**k)))
            .copied()
            .collect();
        let synced = inner.discovered
            && inner.watches.contains_key(&Source::Crds)
            && sick.is_empty()
            && missing.is_empty();
        if synced != inner.was_synced {
            inner.was_synced = synced;
            if synced {
                tracing::info!(watches = inner.watches.len(), "cluster view synced");
            } else {
                let sick: Vec<String> = sick.iter().map(|s| s.label()).collect();
                let missing: Vec<String> = missing.iter().map(|k| k.display_name()).collect();
                tracing::warn!(?sick, ?missing, "cluster view not synced: failing closed");
            }
        }
        synced
    }

    /// Discovery has run once: the set of watched kinds is known.
    pub(crate) fn discovered(&self) {
        self.lock().discovered = true;
    }

    /// A CRD announces a served kind we watch; until discovery picks it up the view is not synced.
    /// Remembered while the CRD lasts, watched or not: should discovery lose the kind for a moment
    /// (an API server that restarts serves its CRD groups a little after it answers), the view
    /// keeps the kind instead of dropping it and calling itself synced without it.
    pub fn expect(&self, kind: Kind) {
        let mut inner = self.lock();
        let watched = inner.watches.contains_key(&Source::Kind(kind));
        if inner.expected.insert(kind) && !watched {
            tracing::info!(%kind, "a CRD announces a new kind: not synced until it is watched");
        }
    }

    /// Whether a CRD announces `kind` now.
    pub(crate) fn announced(&self, kind: Kind) -> bool {
        self.lock().expected.contains(&kind)
    }

    /// The versions the CRDs serve the watched kinds in now.
    pub(crate) fn crds_serve(&self, versions: BTreeSet<(Kind, &'static str)>) {
        self.lock().crd_versions = versions;
    }

    /// Whether the CRD watch has listed, so `announced` and `crd_serves` say what the CRDs do.
    pub(crate) fn crds_listed(&self) -> bool {
        self.lock()
            .watches
            .get(&Source::Crds)
            .is_some_and(|w| w.listed)
    }

    /// Whether a CRD serves `kind` in `version`, as the CRD watch saw it last.
    pub(crate) fn crd_serves(&self, kind: Kind, version: &str) -> bool {
        self.lock()
            .crd_versions
            .iter()
            .any(|(k, v)| *k == kind && *v == version)
    }

    /// The CRD that announced `kind` is gone (or no longer serves a version we read).
    pub(crate) fn unexpect(&self, kind: Kind) {
        self.lock().expected.remove(&kind);
    }

    /// Kinds announced by CRDs but not watched yet.
    pub fn expected(&self) -> Vec<Kind> {
        let inner = self.lock();
        inner
            .expected
            .iter()
            .filter(|k| !inner.watches.contains_key(&Source::Kind(**k)))
            .copied()
            .collect()
    }

    /// Starts tracking a watch. A kind whose served version changes keeps its `listed` state:
    /// its objects stay in the index until the new watch's first list replaces them.
    pub fn watch(&self, source: Source, version: &str) {
        let mut inner = self.lock();
        let entry = inner
            .watches
            .entry(source)
            .or_insert_with(|| Watch::new(version.to_string()));
        entry.version = version.to_string();
    }

    /// Stops tracking a watch (its kind is no longer served).
    pub(crate) fn unwatch(&self, source: Source) {
        self.lock().watches.remove(&source);
    }

    fn with(&self, source: Source, version: &str, f: impl FnOnce(&mut Watch)) {
        let mut inner = self.lock();
        if let Some(w) = inner.watches.get_mut(&source) {
            if w.version == version {
                f(w);
            }
        }
    }

    /// A list or watch request was answered, or an event or bookmark arrived.
    pub fn alive(&self, source: Source, version: &str, now: Instant) {
        self.with(source, version, |w| {
            w.failed = false;
            w.last_life = Some(now);
        });
    }

    /// A list of `source` starts, for `cause`.
    pub fn listing(&self, source: Source, version: &str, cause: ListCause) {
        self.with(source, version, |w| *w.lists.entry(cause).or_default() += 1);
    }

    /// A list of `source` finished: its objects are all in the index.
    pub fn listed(&self, source: Source, version: &str, now: Instant) {
        self.with(source, version, |w| {
            w.listed = true;
            w.failed = false;
            w.last_life = Some(now);
        });
    }

    /// A list or watch request failed, or the watch went silent: sick until the next success.
    pub fn failed(&self, source: Source, version: &str) {
        self.with(source, version, |w| w.failed = true);
    }

    /// Watched kinds with their version and whether their first list is done.
    pub fn kinds(&self) -> Vec<(Kind, String, bool)> {
        self.lock()
            .watches
            .iter()
            .filter_map(|(s, w)| match s {
                Source::Kind(k) => Some((*k, w.version.clone(), w.listed)),
                Source::Crds => None,
            })
            .collect()
    }

    /// Per-watch health for metrics.
    pub fn health(&self, now: Instant) -> Vec<WatchHealth> {
        self.lock()
            .watches
            .iter()
            .map(|(s, w)| WatchHealth {
                kind: s.label(),
                healthy: w.healthy(now, self.bound),
                last_event_age: w.last_life.map(|t| now.saturating_duration_since(t)),
                lists: w.lists.iter().map(|(c, n)| (c.as_str(), *n)).collect(),
            })
            .collect()
    }
}

/// Pending entries (X2) of a kind whose watch is sick, or not yet listed, do not expire: the
/// watch that would confirm or refute them is not running, and dropping them would let a second
/// overlapping write through.
impl PendingHold for Status {
    fn holds(&self, kind: Kind, now: Instant) -> bool {
        let inner = self.lock();
        match inner.watches.get(&Source::Kind(kind)) {
            Some(w) => !w.healthy(now, self.bound),
            None => inner.expected.contains(&kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view's default bound, which manifests/README.md states as 30 s.
    const BOUND: Duration = crate::cluster::live::HEALTH_BOUND;
    const V: &str = "v1beta2";

    #[test]
    fn the_default_bound_is_30_s_and_watches_end_well_inside_it() {
        assert_eq!(BOUND, Duration::from_secs(30));
        assert!(crate::cluster::live::WATCH_TIMEOUT < BOUND);
    }

    fn ready_status(t0: Instant) -> Status {
        let s = Status::new(BOUND);
        s.watch(Source::Crds, "");
        s.listed(Source::Crds, "", t0);
        s.watch(Source::Kind(Kind::IPAddress), V);
        s.discovered();
        s
    }

    #[test]
    fn synced_needs_discovery_crds_and_every_first_list() {
        let t0 = Instant::now();
        let s = Status::new(BOUND);
        assert!(!s.synced(t0));
        s.watch(Source::Kind(Kind::IPAddress), V);
        s.discovered();
        assert!(!s.synced(t0), "not listed yet");
        s.listed(Source::Kind(Kind::IPAddress), V, t0);
        assert!(!s.synced(t0), "the CRD watch is not running");
        s.watch(Source::Crds, "");
        s.listed(Source::Crds, "", t0);
        assert!(s.synced(t0));
    }

    #[test]
    fn a_failed_watch_is_unready_until_it_comes_back() {
        let t0 = Instant::now();
        let s = ready_status(t0);
        let k = Source::Kind(Kind::IPAddress);
        s.listed(k, V, t0);
        assert!(s.synced(t0));
        s.failed(k, V);
        assert!(!s.synced(t0));
        assert!(s.holds(Kind::IPAddress, t0));
        assert!(!s.holds(Kind::InClusterIPPool, t0), "not watched, not held");
        s.alive(k, V, t0 + Duration::from_secs(1));
        assert!(s.synced(t0 + Duration::from_secs(1)));
        assert!(!s.holds(Kind::IPAddress, t0 + Duration::from_secs(1)));
    }

    #[test]
    fn silence_beyond_the_bound_is_sick_and_life_heals_it() {
        let t0 = Instant::now();
        let s = ready_status(t0);
        let k = Source::Kind(Kind::IPAddress);
        s.listed(k, V, t0);
        let crds_alive = |t| s.alive(Source::Crds, "", t);
        crds_alive(t0 + BOUND);
        assert!(s.synced(t0 + BOUND), "at the bound: still fine");
        let late = t0 + BOUND + Duration::from_millis(1);
        crds_alive(late);
        assert!(!s.synced(late));
        assert!(s.holds(Kind::IPAddress, late));
        let health = s.health(late);
        let ip = health.iter().find(|h| h.kind == "IPAddress").unwrap();
        assert!(!ip.healthy);
        assert_eq!(ip.last_event_age, Some(BOUND + Duration::from_millis(1)));
        s.alive(k, V, late);
        assert!(s.synced(late));
    }

    #[test]
    fn reports_of_a_replaced_version_are_ignored() {
        let t0 = Instant::now();
        let s = ready_status(t0);
        let k = Source::Kind(Kind::IPAddress);
        s.listed(k, "v1alpha1", t0);
        assert!(!s.synced(t0), "an old watcher's list does not count");
        s.listed(k, V, t0);
        assert!(s.synced(t0));
    }

    #[test]
    fn a_kind_announced_by_a_crd_blocks_sync_until_watched_and_listed() {
        let t0 = Instant::now();
        let s = ready_status(t0);
        s.listed(Source::Kind(Kind::IPAddress), V, t0);
        assert!(s.synced(t0));
        s.expect(Kind::SpiderIPPool);
        assert!(!s.synced(t0));
        assert!(s.holds(Kind::SpiderIPPool, t0));
        assert_eq!(s.expected(), vec![Kind::SpiderIPPool]);
        s.watch(Source::Kind(Kind::SpiderIPPool), "v2beta1");
        assert!(!s.synced(t0), "watched, first list not done");
        s.listed(Source::Kind(Kind::SpiderIPPool), "v2beta1", t0);
        assert!(s.synced(t0));
        s.expect(Kind::IPAddress);
        assert!(s.synced(t0), "already watched: nothing to wait for");
    }

    #[test]
    fn a_kind_whose_crd_is_still_there_is_missed_if_its_watch_goes() {
        let t0 = Instant::now();
        let s = ready_status(t0);
        s.listed(Source::Kind(Kind::IPAddress), V, t0);
        s.expect(Kind::SpiderIPPool);
        s.watch(Source::Kind(Kind::SpiderIPPool), "v2beta1");
        s.listed(Source::Kind(Kind::SpiderIPPool), "v2beta1", t0);
        assert!(s.synced(t0));
        // Discovery lost it for a moment (an API server restarting): the CRD still announces it,
        // so the view is not synced without it.
        assert!(s.announced(Kind::SpiderIPPool));
        s.unwatch(Source::Kind(Kind::SpiderIPPool));
        assert!(!s.synced(t0));
        // Its CRD deleted: no longer expected.
        s.unexpect(Kind::SpiderIPPool);
        assert!(!s.announced(Kind::SpiderIPPool));
        assert!(s.synced(t0));
    }

    #[test]
    fn lists_are_counted_by_cause() {
        let t0 = Instant::now();
        let s = ready_status(t0);
        let k = Source::Kind(Kind::IPAddress);
        s.listing(k, V, ListCause::Initial);
        s.listing(k, V, ListCause::Expired);
        s.listing(k, V, ListCause::Expired);
        let health = s.health(t0);
        let ip = health.iter().find(|h| h.kind == "IPAddress").unwrap();
        assert_eq!(ip.lists, vec![("initial", 1), ("expired", 2)]);
    }
}
