//! One watched resource: list, then watch from the list's resourceVersion, forever.
//!
//! Why not kube-runtime's `watcher`: it pages its lists (kube-core then drops
//! `resourceVersion=0`, so every list reads etcd page by page) and has no way to relist from a
//! given resourceVersion. This loop makes:
//!
//! - the first list one `resourceVersion=0` request with no limit: served from the watch cache;
//! - every relist `resourceVersion=<last seen>&resourceVersionMatch=NotOlderThan`. **Never back
//!   in time** is kept by the request, not by comparing objects: the server answers only from
//!   a state at least as new as everything the view has seen, so a relisted object may replace
//!   the view's copy and a key absent from it is really gone. Should the server not reach that
//!   version (a cache that cannot catch up: `504 Too large resource version`), the loop falls back
//!   to a consistent list (no resourceVersion), read from etcd and newest by definition;
//! - watches with bookmarks, resumed from the last seen resourceVersion when they end, and a
//!   relist only when the server says that version is gone (410) or sends another error event.
//!
//! Health (see `health`): every answered request, event and bookmark is life; a request that
//! fails, or a watch silent for longer than the bound, makes the source sick until the next
//! success. Watches ask the server to end them after `watch_timeout` (< bound), so a quiet kind
//! still shows life.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::WatchParams;
use kube::core::{ApiResource, WatchEvent};
use kube::runtime::watcher::Event;
use kube::{Api, Client};

use super::health::{ListCause, Source, Status};
use super::list::{self, unanswered, ListError};
use crate::cluster::clock::Clock;
use crate::cluster::WatchedObject;

/// Where a loop's events go. Called from a blocking thread during lists (hence `Send`).
pub(crate) trait Feed: Send + 'static {
    fn event(&mut self, event: Event<WatchedObject>);
}

/// Timing of a loop.
#[derive(Debug, Clone)]
pub struct Timing {
    /// Asked of the server for each watch (`timeoutSeconds`): life at least this often.
    pub watch_timeout: Duration,
    /// Silence longer than this is sickness; also the client-side read timeout of a watch.
    pub bound: Duration,
    /// What life is timed with (the view's clock, so tests can move it).
    pub clock: Arc<dyn Clock>,
}

/// Retries after failures: 250 ms doubling up to `MAX`, each wait jittered, back to the start
/// after a success.
///
/// The cap is what an outage costs after it ends: however long the API server was away, the next
/// attempt comes at most `MAX` after it answers again, and the relist follows at once. Jitter
/// (each wait drawn from its upper half) keeps a dozen watches, and the replicas of a Deployment,
/// from knocking on a restarting API server in lockstep.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
    rng: fastrand::Rng,
}

impl Backoff {
    pub const FIRST: Duration = Duration::from_millis(250);
    pub const MAX: Duration = Duration::from_secs(2);

    pub fn new() -> Self {
        Backoff {
            next: Self::FIRST,
            rng: fastrand::Rng::new(),
        }
    }

    /// With a fixed seed (tests).
    #[cfg(test)]
    pub(crate) fn with_seed(seed: u64) -> Self {
        Backoff {
            next: Self::FIRST,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    pub fn reset(&mut self) {
        self.next = Self::FIRST;
    }

    /// How long to wait before the next attempt: between half and all of the current step, which
    /// then doubles up to `MAX`.
    pub fn delay(&mut self) -> Duration {
        let step = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        step / 2 + step.mul_f64(self.rng.f64() / 2.0)
    }

    async fn wait(&mut self) {
        tokio::time::sleep(self.delay()).await;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

pub(crate) struct WatchLoop<F> {
    pub client: Client,
    pub resource: ApiResource,
    pub source: Source,
    /// The version the status knows this loop by (empty for the CRD watch).
    pub version: String,
    pub status: Arc<Status>,
    pub timing: Timing,
    pub feed: F,
}

/// The collection URL of a resource (every kind we read lives in a named group).
fn url(resource: &ApiResource) -> String {
    format!("/apis/{}/{}", resource.api_version, resource.plural)
}

/// The query of a list: the watch cache for the first, not older than `seen` for a relist.
pub(crate) fn list_query(seen: Option<&str>) -> String {
    match seen {
        None | Some("") => "resourceVersion=0".to_string(),
        Some(rv) => format!(
            "resourceVersion={}&resourceVersionMatch=NotOlderThan",
            form_encode(rv)
        ),
    }
}

fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The server cannot serve a list that new (its cache is behind and did not catch up in time).
fn too_new(e: &ListError) -> bool {
    e.status() == Some(504)
}

fn gone(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 410)
}

/// How a watch session ended.
enum Ended {
    /// Resume the watch from the last seen resourceVersion.
    Resume,
    /// Nothing came for longer than the bound: the source is sick, and the next watch start
    /// does not count as life (a server that accepts watches and then sends nothing would
    /// otherwise look healthy at every restart); only an event, a bookmark or the server ending
    /// the watch does.
    Silent,
    /// The stream broke: resume after a backoff (the next request tells whether the server is
    /// there; only a failed request makes the source sick).
    Broken,
    /// Relist, for this cause.
    Relist(ListCause),
}

impl<F: Feed> WatchLoop<F> {
    /// Runs until the task is aborted.
    pub async fn run(self) {
        let WatchLoop {
            client,
            resource,
            source,
            version,
            status,
            timing,
            feed,
        } = self;
        let mut feed = Some(feed);
        let mut seen: Option<String> = None;
        let mut cause = ListCause::Initial;
        let mut backoff = Backoff::new();
        // The API server did not answer the last request: it may be starting afresh.
        let mut unreached = false;
        loop {
            status.listing(source, &version, cause);
            match list_into(
                &client,
                &resource,
                source,
                &version,
                &status,
                &timing.clock,
                seen.as_deref(),
                unreached,
                &mut feed,
            )
            .await
            {
                Ok(rv) => {
                    seen = Some(rv);
                    unreached = false;
                    status.listed(source, &version, timing.clock.now());
                    backoff.reset();
                }
                Err(e) => {
                    // Sticky until a list completes: a server that has just come back answers
                    // before it serves our kinds (a 404 until its CRDs are loaded, a 503 while
                    // it starts), and such an answer says nothing about its watch cache; an
                    // unpaged list would then wait for that cache to read every object.
                    unreached = unreached || e.unanswered();
                    status.failed(source, &version);
                    tracing::warn!(%source, error = %e, "list failed; retrying");
                    if feed.is_none() {
                        // The decoder panicked and took the feed with it: nothing sane is left.
                        tracing::error!(%source, "list decoder lost its feed: stopping this watch");
                        return;
                    }
                    backoff.wait().await;
                    cause = ListCause::Error;
                    continue;
                }
            }
            let Some(f) = feed.as_mut() else { return };
            // After a silent session (or a failed request that followed one), only real traffic
            // proves the watch again.
            let mut doubted = false;
            cause = loop {
                let ended = watch_once(
                    &client, &resource, source, &version, &status, &timing, &mut seen, f, doubted,
                )
                .await;
                doubted = match &ended {
                    Ok(Ended::Silent) => true,
                    Ok(_) => false,
                    Err(_) => doubted,
                };
                match ended {
                    Ok(Ended::Resume | Ended::Silent) => backoff.reset(),
                    Ok(Ended::Broken) => backoff.wait().await,
                    Ok(Ended::Relist(cause)) => break cause,
                    Err(e) => {
                        status.failed(source, &version);
                        tracing::warn!(%source, error = %e, "watch failed; retrying");
                        backoff.wait().await;
                        // The API server did not answer at all (stopped, restarting): the next
                        // request goes to a server that may have started afresh, whose watch
                        // cache cannot resume from our version and makes watches and whole
                        // lists wait until it has read every object from etcd (a minute at
                        // 100k). A paged list is read from etcd at once: relist that way.
                        if unanswered(&e) {
                            unreached = true;
                            break ListCause::Error;
                        }
                    }
                }
            };
            tracing::debug!(%source, cause = cause.as_str(), "relisting");
        }
    }
}

/// One list into `feed` (Init, InitApply…, InitDone). Returns the list's resourceVersion.
#[allow(clippy::too_many_arguments)]
async fn list_into<F: Feed>(
    client: &Client,
    resource: &ApiResource,
    source: Source,
    version: &str,
    status: &Arc<Status>,
    clock: &Arc<dyn Clock>,
    seen: Option<&str>,
    paged: bool,
    feed: &mut Option<F>,
) -> Result<String, ListError> {
    let mut first = format!("{}?{}", url(resource), list_query(seen));
    // A server whose watch cache is still reading etcd answers a list with a limit from etcd
    // at once and makes one without wait for the cache (kube-apiserver's cacher).
    let page = paged.then_some(PAGE);
    if let Some(limit) = page {
        first.push_str(&format!("&limit={limit}"));
    }
    match list_once(
        client, &first, resource, page, source, version, status, clock, feed,
    )
    .await
    {
        Err(e) if seen.is_some() && too_new(&e) => {
            tracing::info!(%source, "the cache cannot serve the last seen version: listing from etcd");
            let url = url(resource);
            list_once(
                client, &url, resource, None, source, version, status, clock, feed,
            )
            .await
        }
        other => other,
    }
}

/// Objects per page of a relist after the API server was unreachable.
const PAGE: u32 = 5_000;

/// Pages a server may hand out in one list before the loop gives up on it.
const MAX_PAGES: usize = 100_000;

#[allow(clippy::too_many_arguments)]
async fn list_once<F: Feed>(
    client: &Client,
    url: &str,
    resource: &ApiResource,
    page: Option<u32>,
    source: Source,
    version: &str,
    status: &Arc<Status>,
    clock: &Arc<dyn Clock>,
    feed: &mut Option<F>,
) -> Result<String, ListError> {
    let Some(mut f) = feed.take() else {
        return Err(ListError::NoFeed);
    };
    f.event(Event::Init);
    let started = Instant::now();
    let sink = ListSink {
        feed: f,
        status: status.clone(),
        clock: clock.clone(),
        source,
        version: version.to_string(),
        items: 0,
        started,
        logged: started,
    };
    let (mut result, mut sink) = list::list_page(client, url, sink).await;
    // Further pages, each from the token of the one before (a continued list names no version).
    for _ in 0..MAX_PAGES {
        let token = match (&result, page) {
            (
                Ok(list::Listed {
                    next: Some(token), ..
                }),
                Some(_),
            ) => token.clone(),
            _ => break,
        };
        let (Some(limit), Some(s)) = (page, sink.take()) else {
            break;
        };
        let next = format!(
            "{}?limit={limit}&continue={}",
            self::url(resource),
            form_encode(&token)
        );
        (result, sink) = list::list_page(client, &next, s).await;
    }
    let items = sink.as_ref().map_or(0, |s| s.items);
    *feed = sink.map(|s| s.feed);
    let rv = result?.resource_version;
    tracing::info!(%source, objects = items, elapsed = ?started.elapsed(), "listed");
    // Only a complete list may say which keys are gone.
    if let Some(f) = feed.as_mut() {
        f.event(Event::InitDone);
    }
    Ok(rv)
}

/// Hands list items to the feed; items are life too, so a long list never looks like silence.
struct ListSink<F> {
    feed: F,
    status: Arc<Status>,
    clock: Arc<dyn Clock>,
    source: Source,
    version: String,
    items: u64,
    started: Instant,
    /// When progress was last logged: a long first sync says how far it got every few seconds.
    logged: Instant,
}

/// How often a long list logs its progress.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl<F: Feed> list::Items for ListSink<F> {
    fn item(&mut self, obj: WatchedObject) {
        self.feed.event(Event::InitApply(obj));
        self.items += 1;
        if self.items.is_multiple_of(1024) {
            self.status
                .alive(self.source, &self.version, self.clock.now());
            let now = Instant::now();
            if now.duration_since(self.logged) >= PROGRESS_EVERY {
                self.logged = now;
                tracing::info!(source = %self.source, objects = self.items, elapsed = ?now.duration_since(self.started), "listing");
            }
        }
    }
}

/// One watch request and its events, until the server ends it, it breaks, or it asks for a relist.
#[allow(clippy::too_many_arguments)]
async fn watch_once<F: Feed>(
    client: &Client,
    resource: &ApiResource,
    source: Source,
    version: &str,
    status: &Status,
    timing: &Timing,
    seen: &mut Option<String>,
    feed: &mut F,
    doubted: bool,
) -> Result<Ended, kube::Error> {
    let api: Api<WatchedObject> = Api::all_with(client.clone(), resource);
    let params =
        WatchParams::default().timeout(timing.watch_timeout.as_secs().clamp(1, 3600) as u32);
    let from = seen.clone().unwrap_or_else(|| "0".to_string());
    let stream = match api.watch(&params, &from).await {
        Ok(s) => s,
        Err(e) if gone(&e) => return Ok(Ended::Relist(ListCause::Expired)),
        Err(e) => return Err(e),
    };
    if !doubted {
        status.alive(source, version, timing.clock.now());
    }
    let mut stream = std::pin::pin!(stream);
    loop {
        let next = match tokio::time::timeout(timing.bound, stream.next()).await {
            Ok(next) => next,
            Err(_) => {
                // Not even a bookmark or the server's own timeout: the connection is dead.
                status.failed(source, version);
                tracing::warn!(%source, silent = ?timing.bound, "watch silent: restarting it");
                return Ok(Ended::Silent);
            }
        };
        let event = match next {
            // The server ended the watch (its timeout): resume from where we are.
            None => {
                status.alive(source, version, timing.clock.now());
                return Ok(Ended::Resume);
            }
            // A broken stream: the next watch request tells whether the server is there.
            Some(Err(e)) => {
                tracing::debug!(%source, error = %e, "watch stream broke: resuming");
                return Ok(Ended::Broken);
            }
            Some(Ok(event)) => event,
        };
        status.alive(source, version, timing.clock.now());
        match event {
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                note_version(seen, &obj);
                feed.event(Event::Apply(obj));
            }
            WatchEvent::Deleted(obj) => {
                note_version(seen, &obj);
                feed.event(Event::Delete(obj));
            }
            WatchEvent::Bookmark(b) => *seen = Some(b.metadata.resource_version),
            WatchEvent::Error(s) if s.code == 410 => return Ok(Ended::Relist(ListCause::Expired)),
            WatchEvent::Error(s) => {
                tracing::warn!(%source, code = s.code, message = %s.message, "watch error event: relisting");
                return Ok(Ended::Relist(ListCause::Error));
            }
        }
    }
}

fn note_version(seen: &mut Option<String>, obj: &WatchedObject) {
    if let Some(rv) = &obj.metadata.resource_version {
        *seen = Some(rv.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The time to the first attempt after an outage of `outage`, with attempts spaced by the
    /// backoff from the moment the API server went away (the injectable clock stands in for
    /// the sleeps).
    fn first_attempt_after(outage: Duration, seed: u64) -> Duration {
        let clock = crate::cluster::clock::ManualClock::new();
        let start = clock.now();
        let back = start + outage;
        let mut backoff = Backoff::with_seed(seed);
        while clock.now() < back {
            clock.advance(backoff.delay());
        }
        clock.now() - back
    }

    #[test]
    fn an_outage_of_any_length_costs_at_most_the_cap_once_it_ends() {
        for outage in [1, 7, 30, 120, 600] {
            for seed in 0..50 {
                let late = first_attempt_after(Duration::from_secs(outage), seed);
                assert!(
                    late <= Backoff::MAX,
                    "{outage} s outage, seed {seed}: {late:?}"
                );
            }
        }
    }

    #[test]
    fn waits_double_from_the_first_step_are_jittered_and_capped() {
        let mut b = Backoff::with_seed(7);
        let waits: Vec<Duration> = (0..40).map(|_| b.delay()).collect();
        // Each wait lies in the upper half of its step: 250 ms, 500 ms, 1 s, then the cap.
        let step = |i: usize| (Backoff::FIRST * 2u32.pow(i.min(10) as u32)).min(Backoff::MAX);
        for (i, w) in waits.iter().enumerate() {
            assert!(*w >= step(i) / 2 && *w <= step(i), "wait {i}: {w:?}");
        }
        // Not in lockstep: capped waits differ from one another.
        let capped: std::collections::BTreeSet<Duration> = waits[4..].iter().copied().collect();
        assert!(capped.len() > 20, "{capped:?}");
        // Two loops started together do not retry together.
        let mut other = Backoff::with_seed(8);
        let theirs: Vec<Duration> = (0..40).map(|_| other.delay()).collect();
        assert_ne!(waits, theirs);
        b.reset();
        assert!(b.delay() <= Backoff::FIRST);
    }

    #[test]
    fn first_list_reads_the_cache_and_relists_are_not_older_than_what_was_seen() {
        assert_eq!(list_query(None), "resourceVersion=0");
        assert_eq!(list_query(Some("")), "resourceVersion=0");
        assert_eq!(
            list_query(Some("12345")),
            "resourceVersion=12345&resourceVersionMatch=NotOlderThan"
        );
        assert_eq!(
            list_query(Some("a b&c")),
            "resourceVersion=a%20b%26c&resourceVersionMatch=NotOlderThan"
        );
    }
}
