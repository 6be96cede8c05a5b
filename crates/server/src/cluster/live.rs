//! The live view (X1–X3): API discovery finds which kinds of `kinds::KINDS` the cluster
//! serves, one list-then-watch loop per served kind (`watch`) feeds one `Index` through
//! `model::project`, and the view is synced while every watch is healthy (`health`).
//!
//! - The first list of each kind is one `resourceVersion=0` list with no limit (the watch cache
//!   answers in seconds where a consistent paged list of 100k objects takes half a minute),
//!   decoded while it streams in (`list`). Relists never go back in time (see `watch`).
//! - A relist (`Init`, `InitApply`…, `InitDone`) upserts as it goes and removes the keys that did
//!   not come back only at `InitDone`, so nothing the old list held vanishes before the new list is
//!   complete (an object listed again replaces its old projection at once: it is the newer reading).
//! - A sick watch fails closed: the view reports not synced, so `/readyz` fails and view-dependent
//!   writes answer 503, and pending entries of that kind do not expire.
//! - A watch on CRDs (`crds`) wakes discovery the moment a kind we read is installed, removed or
//!   served in another version, and discovery looks again soon until it shows what the CRDs say
//!   (it lags them); it also runs every `discovery_interval` (60 s) as a backstop.
//! - Only projections are kept: objects are decoded without `managedFields` (`object`) and dropped
//!   once projected.

mod crds;
mod health;
pub mod list;
pub mod read;
mod watch;

pub use crds::resource as crd_resource;
pub(crate) use health::Source;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::ApiResource;
use kube::runtime::watcher::Event;
use kube::{Client, Config};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use self::health::Status;
use self::watch::{Backoff, Feed, Timing, WatchLoop};
use super::clock::{self, Clock};
use super::ledger::{Ledger, Seen};
use super::object::WatchedObject;
use super::trust::PENDING_TTL;
use super::{ClusterView, WatchHealth};
use crate::kinds::{Kind, KINDS};
use crate::model::{self, ObjKey};

/// How often API discovery runs when no CRD event wakes it (a backstop: the CRD watch is the
/// fast path).
pub(crate) const DISCOVERY_INTERVAL: Duration = Duration::from_secs(60);

/// A watch that shows no life (no list, watch start, event or bookmark) for longer is sick.
pub(crate) const HEALTH_BOUND: Duration = Duration::from_secs(30);

/// Each watch asks the server to end it after this long, so a quiet kind shows life well inside
/// `HEALTH_BOUND`.
pub(crate) const WATCH_TIMEOUT: Duration = Duration::from_secs(20);

/// While the CRDs say discovery is to change what is watched (a kind announced, dropped, or
/// served in another version), discovery looks again this soon, then twice as late each time
/// up to `discovery_interval`, until it agrees.
const DISCOVERY_CATCH_UP: Duration = Duration::from_millis(250);

/// Knobs of the live view; tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct LiveOptions {
    pub discovery_interval: Duration,
    /// How long an admitted object counts as existing before its watch event (X2).
    pub pending_ttl: Duration,
    /// Silence after which a watch counts as sick (fail closed).
    pub health_bound: Duration,
    /// `timeoutSeconds` of each watch request (whole seconds, at least 1); keep it below
    /// `health_bound`.
    pub watch_timeout: Duration,
    /// `--reuse-grace`: how long a released address stays unavailable to a new holder when its
    /// pool sets no grace of its own (R1). Zero: off.
    pub reuse_grace: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            discovery_interval: DISCOVERY_INTERVAL,
            pending_ttl: PENDING_TTL,
            health_bound: HEALTH_BOUND,
            watch_timeout: WATCH_TIMEOUT,
            reuse_grace: Duration::ZERO,
        }
    }
}

impl LiveOptions {
    fn timing(&self, clock: &Arc<dyn Clock>) -> Timing {
        Timing {
            watch_timeout: self.watch_timeout,
            bound: self.health_bound,
            clock: clock.clone(),
        }
    }
}

/// Kinds whose projections some rule reads (Metal3 IPClaims: the periodic audit's H1 and H2;
/// Clusters and infrastructure clusters: their endpoints, CP1-CP5; SpiderReservedIPs and
/// VSphereMachines: the addresses they hold outside pools, RI3-RI6 and SA1-SA3). The others
/// (VSphereMachineTemplate, Metal3DataTemplate) are judged only on their own content, so watching
/// them would cost memory and API load for nothing; `audit` still lists them.
pub fn watched(kind: Kind) -> bool {
    kind.is_pool()
        || matches!(
            kind,
            Kind::IPAddressClaim
                | Kind::IPAddress
                | Kind::Metal3IPAddress
                | Kind::Metal3IPClaim
                | Kind::Cluster
                | Kind::VSphereCluster
                | Kind::Metal3Cluster
                | Kind::SpiderReservedIP
                | Kind::VSphereMachine
        )
}

/// An error with each cause said once: kube's errors write their source into their own text, so
/// `{:#}` would repeat the root cause at every layer. A layer whose text an outer layer already
/// holds is left out.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    describe_chain(std::iter::successors(Some(e), |e| e.source()))
}

fn describe_chain<'a>(
    chain: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> String {
    let mut out = String::new();
    for layer in chain {
        let text = layer.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}

/// Why no Kubernetes client could be built; `describe` says it with its causes.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot read kubeconfig {}", path.display())]
    ReadKubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig (or the context asked for) does not make a usable configuration.
    #[error("{what}")]
    Kubeconfig {
        what: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error(
        "no cluster to talk to: not in a pod ({in_cluster}) and no usable KUBECONFIG or \
         ~/.kube/config ({kubeconfig}); pass --kubeconfig"
    )]
    NoCluster {
        in_cluster: String,
        kubeconfig: String,
    },
    #[error("cannot build a Kubernetes client")]
    Build(#[source] kube::Error),
}

/// Neither in a pod nor a kubeconfig at hand: both reasons, once each.
fn no_cluster(
    in_cluster: &dyn std::error::Error,
    infer: &kube::config::InferConfigError,
) -> ClientError {
    let kubeconfig = std::error::Error::source(infer)
        .map(describe)
        .unwrap_or_else(|| infer.to_string());
    ClientError::NoCluster {
        in_cluster: in_cluster.to_string(),
        kubeconfig,
    }
}

fn read_kubeconfig(path: &Path) -> Result<Kubeconfig, ClientError> {
    Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
        path: path.to_path_buf(),
        source,
    })
}

/// Builds a client: `--kubeconfig` when given, else in-cluster, else `KUBECONFIG` / `~/.kube/config`.
pub async fn client(kubeconfig: Option<&Path>) -> Result<Client, ClientError> {
    client_and_server(kubeconfig, None)
        .await
        .map(|(client, _)| client)
}

/// As `client`, in a named context of the kubeconfig (`--context`). With no kubeconfig path the
/// usual one (`KUBECONFIG`, `~/.kube/config`) is read; a context always means a kubeconfig.
/// Also names the API server it talks to, for messages that must say which server could not be
/// reached.
pub async fn client_and_server(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<(Client, String), ClientError> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let unusable = |what: String| move |source| ClientError::Kubeconfig { what, source };
    let config = match (kubeconfig, context) {
        (Some(path), _) => {
            let what = match context {
                Some(c) => format!("kubeconfig {}, context {c:?}", path.display()),
                None => format!("kubeconfig {}", path.display()),
            };
            Config::from_custom_kubeconfig(read_kubeconfig(path)?, &options)
                .await
                .map_err(unusable(what))?
        }
        (None, Some(context)) => Config::from_kubeconfig(&options)
            .await
            .map_err(unusable(format!("context {context:?}")))?,
        (None, None) => match Config::incluster() {
            Ok(config) => config,
            Err(in_cluster) => Config::infer()
                .await
                .map_err(|e| no_cluster(&in_cluster, &e))?,
        },
    };
    let server = config.cluster_url.to_string();
    let client = Client::try_from(config).map_err(ClientError::Build)?;
    Ok((client, server))
}

/// A failed API call, with the server named and the likely cause in words.
pub fn explain(server: &str, e: &kube::Error) -> String {
    let cause = match e {
        kube::Error::Api(s) if s.code == 401 => {
            "the server refused the credentials (expired token or certificate?)"
        }
        kube::Error::Api(s) if s.code == 403 => {
            "the credentials lack RBAC permission (list/watch on the IPAM kinds)"
        }
        kube::Error::Api(_) => "the server answered with an error",
        _ => {
            let text = format!("{e:?}");
            if text.contains("Connect") || text.contains("Connection refused") {
                "nothing answered: is the API server up, and reachable from here (VPN, proxy, firewall)?"
            } else if text.contains("certificate") || text.contains("Tls") || text.contains("tls") {
                "the TLS handshake failed: does the kubeconfig's certificate authority match the server?"
            } else if text.contains("dns") || text.contains("lookup") {
                "the server's name does not resolve"
            } else {
                "the request did not complete"
            }
        }
    };
    if server.is_empty() {
        format!("API server: {e}; {cause}")
    } else {
        format!("API server {server}: {e}; {cause}")
    }
}

/// Connects to the cluster (see `client`) and starts the live view. Returns at once: the view
/// reports `synced() == false` until discovery and every first list have finished.
pub async fn connect(kubeconfig: Option<&Path>) -> Result<Arc<LiveView>, ClientError> {
    let client = client(kubeconfig).await?;
    Ok(LiveView::start(client, LiveOptions::default()))
}

/// The `ApiResource` of a kind in one version, from the kinds table.
pub fn api_resource(kind: Kind, version: &str) -> ApiResource {
    let info = kind.info();
    ApiResource {
        group: info.group.to_string(),
        version: version.to_string(),
        api_version: format!("{}/{version}", info.group),
        kind: info.name.to_string(),
        plural: info.plural.to_string(),
    }
}

// === Discovery ===

/// Which kinds of the table the API server serves, each with the version to read: the storage
/// version (last in the table) when served, else the latest other served one.
pub async fn discover(client: &Client) -> Result<BTreeMap<Kind, String>, kube::Error> {
    let groups = client.list_api_groups().await?;
    let mut served: BTreeMap<Kind, String> = BTreeMap::new();
    for group in groups.groups {
        let ours: Vec<&crate::kinds::KindInfo> =
            KINDS.iter().filter(|k| k.group == group.name).collect();
        if ours.is_empty() {
            continue;
        }
        // plural -> versions serving it
        let mut plurals: HashMap<String, HashSet<String>> = HashMap::new();
        for gv in &group.versions {
            if !ours
                .iter()
                .any(|k| k.versions.contains(&gv.version.as_str()))
            {
                continue;
            }
            let resources = match client.list_api_group_resources(&gv.group_version).await {
                Ok(r) => r,
                // Removed between the two calls (a CRD being deleted): simply not served.
                Err(kube::Error::Api(s)) if s.code == 404 => continue,
                Err(e) => return Err(e),
            };
            for r in resources.resources {
                // Subresources (`ippools/status`) are not kinds.
                if !r.name.contains('/') {
                    plurals
                        .entry(r.name)
                        .or_default()
                        .insert(gv.version.clone());
                }
            }
        }
        for info in ours {
            let Some(versions) = plurals.get(info.plural) else {
                continue;
            };
            if let Some(v) = info.versions.iter().rev().find(|v| versions.contains(**v)) {
                served.insert(info.kind, (*v).to_string());
            }
        }
    }
    Ok(served)
}

// === Feeding the index ===

/// Turns one kind's watch events into index updates. Public so tests can drive it with
/// `watcher::Event`s and no API server.
///
/// Relisted objects replace the view's copy unconditionally: relists are made not older than
/// the last resourceVersion seen (`watch`), so the list is the newer reading.
#[derive(Debug)]
pub struct KindFeed {
    kind: Kind,
    resource: ApiResource,
    /// Keys listed since the last `Init`; `None` outside a relist.
    relist: Option<HashSet<ObjKey>>,
}

impl KindFeed {
    pub fn new(kind: Kind, version: &str) -> Self {
        KindFeed {
            kind,
            resource: api_resource(kind, version),
            relist: None,
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Applies one event; true at `InitDone` (the kind is listed completely).
    pub fn apply(&mut self, shared: &Ledger, event: Event<WatchedObject>) -> bool {
        match event {
            Event::Init => {
                self.relist = Some(HashSet::new());
                false
            }
            Event::InitApply(obj) => {
                if let Some(key) = self.upsert(shared, obj, true) {
                    self.relist.get_or_insert_with(HashSet::new).insert(key);
                }
                false
            }
            Event::InitDone => {
                let seen = self.relist.take().unwrap_or_default();
                shared.finish_relist(self.kind, &seen);
                true
            }
            Event::Apply(obj) => {
                self.upsert(shared, obj, false);
                false
            }
            Event::Delete(obj) => {
                if let Some(key) = self.key(&obj) {
                    shared.delete_seen(&key, &seen(&obj, false));
                }
                false
            }
        }
    }

    fn key(&self, obj: &WatchedObject) -> Option<ObjKey> {
        let name = obj.metadata.name.as_deref()?;
        Some(ObjKey::new(
            self.kind,
            obj.metadata.namespace.as_deref(),
            name,
        ))
    }

    fn upsert(&self, shared: &Ledger, obj: WatchedObject, listed: bool) -> Option<ObjKey> {
        let key = self.key(&obj)?;
        if obj.metadata.deletion_timestamp.is_some() {
            // An address's release begins when it or its claim starts to go (R1).
            shared.deleting(&key);
        }
        let seen = seen(&obj, listed);
        let value = obj.into_value(&self.resource);
        let projection = model::project(self.kind, &value);
        shared.apply_seen(&key, projection, &seen);
        Some(key)
    }
}

/// Which version of its object an event shows, for the pending versions of X2 (`Basis`).
fn seen(obj: &WatchedObject, listed: bool) -> Seen {
    Seen {
        uid: obj.metadata.uid.as_deref().map(Arc::from),
        resource_version: obj
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok()),
        listed,
    }
}

/// A `KindFeed` with the index it feeds, for a watch loop.
struct KindSink {
    feed: KindFeed,
    shared: Arc<Ledger>,
}

impl Feed for KindSink {
    fn event(&mut self, event: Event<WatchedObject>) {
        self.feed.apply(&self.shared, event);
    }
}

// === The view ===

/// A cluster view fed by watches. Dropping the last `Arc` stops discovery and every watcher.
pub struct LiveView {
    shared: Arc<Ledger>,
    status: Arc<Status>,
    clock: Arc<dyn Clock>,
    client: Client,
    _tasks: Vec<AbortOnDrop>,
}

impl std::fmt::Debug for LiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveView")
            .field("synced", &self.synced())
            .field("watched", &self.watching())
            .finish_non_exhaustive()
    }
}

impl LiveView {
    /// Starts discovery, the CRD watch and the kind watchers on the current tokio runtime.
    pub fn start(client: Client, options: LiveOptions) -> Arc<LiveView> {
        LiveView::start_with_clock(client, options, clock::system())
    }

    /// As `start`, reading the time of the pending window and the health bound from `clock`.
    pub fn start_with_clock(
        client: Client,
        options: LiveOptions,
        clock: Arc<dyn Clock>,
    ) -> Arc<LiveView> {
        let status = Arc::new(Status::new(options.health_bound));
        let shared = Arc::new(
            Ledger::with_ttl(Default::default(), options.pending_ttl)
                .with_reuse_grace(options.reuse_grace)
                .with_hold(status.clone())
                .with_clock(clock.clone()),
        );
        let wake = Arc::new(Notify::new());
        status.watch(Source::Crds, "");
        let crd_watch = tokio::spawn(
            WatchLoop {
                client: client.clone(),
                resource: crds::resource(),
                source: Source::Crds,
                version: String::new(),
                status: status.clone(),
                timing: options.timing(&clock),
                feed: crds::CrdFeed::new(status.clone(), wake.clone()),
            }
            .run(),
        );
        let discovery = tokio::spawn(discovery_loop(
            client.clone(),
            shared.clone(),
            status.clone(),
            wake,
            options,
            clock.clone(),
        ));
        // Admission sweeps before each decision; this only keeps object counts honest when no
        // request comes, and the health log current.
        let sweeper = {
            let shared = Arc::downgrade(&shared);
            let status = Arc::downgrade(&status);
            let every =
                (options.pending_ttl / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let (Some(shared), Some(status)) = (shared.upgrade(), status.upgrade()) else {
                        return;
                    };
                    let now = shared.now();
                    status.synced(now);
                    shared.sweep(now);
                }
            })
        };
        Arc::new(LiveView {
            shared,
            status,
            clock,
            client,
            _tasks: vec![
                AbortOnDrop(discovery),
                AbortOnDrop(crd_watch),
                AbortOnDrop(sweeper),
            ],
        })
    }

    /// The index, pending entries and decision lock (admission calls `reserve` on it).
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.shared
    }

    /// The client the view watches with (the periodic audit lists with it).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Kinds watched now, with the version read and whether their first list is done.
    pub fn watching(&self) -> Vec<(Kind, String, bool)> {
        self.status.kinds()
    }
}

impl ClusterView for LiveView {
    fn synced(&self) -> bool {
        self.status.synced(self.clock.now())
    }
    fn object_counts(&self) -> Vec<(Kind, usize)> {
        self.shared.read().counts()
    }
    fn read(&self) -> Box<dyn std::ops::Deref<Target = crate::index::Index> + '_> {
        // As `Ledger`'s: expired pending entries are gone from a reading admission judges on.
        self.shared.sweep(self.shared.now());
        Box::new(self.shared.read())
    }
    fn reserve(&self, f: &mut dyn FnMut(&crate::index::Index) -> Option<model::Projection>) {
        self.shared.reserve(|index| ((), f(index)));
    }
    fn watch_health(&self) -> Vec<WatchHealth> {
        self.status.health(self.clock.now())
    }
    fn now(&self) -> std::time::Instant {
        self.clock.now()
    }
    fn reserve_as(
        &self,
        caller: &super::Caller,
        basis: &super::Basis,
        f: &mut dyn FnMut(&crate::index::Index) -> Option<model::Projection>,
    ) {
        self.shared
            .reserve_as(caller, basis, |index| ((), f(index)));
    }
    fn is_pending(&self, key: &model::ObjKey) -> bool {
        self.shared.is_pending(key)
    }
    fn shown_gone(&self, key: &model::ObjKey, basis: &super::Basis) -> bool {
        self.shared.shown_gone(key, basis)
    }
}

/// Aborts the task when dropped, so dropping the view (or the discovery task) stops its children.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn discovery_loop(
    client: Client,
    shared: Arc<Ledger>,
    status: Arc<Status>,
    wake: Arc<Notify>,
    options: LiveOptions,
    clock: Arc<dyn Clock>,
) {
    // Kind -> (version, watcher task). Owned here: aborting this task drops and stops them all.
    let mut watchers: BTreeMap<Kind, (String, AbortOnDrop)> = BTreeMap::new();
    let mut failures = 0u32;
    let mut backoff = Backoff::new();
    let mut catch_up = DISCOVERY_CATCH_UP;
    loop {
        let failed = match discover(&client).await {
            Ok(served) => {
                failures = 0;
                backoff.reset();
                let served: BTreeMap<Kind, String> =
                    served.into_iter().filter(|(k, _)| watched(*k)).collect();
                reconcile(
                    &client,
                    &shared,
                    &status,
                    &mut watchers,
                    served,
                    options,
                    &clock,
                );
                false
            }
            Err(e) => {
                failures += 1;
                // The first failures are routine (API server restarting); keep logging them rarer.
                if failures.is_power_of_two() {
                    tracing::warn!(error = %e, failures, "API discovery failed; keeping the kinds watched so far");
                }
                true
            }
        };
        // What the CRD watch saw last shows in discovery moments later, and the CRD event that
        // woke this pass may come before it (a v1.20.2 did): while a CRD announces a kind
        // discovery does not list yet, serves a watched kind in another version than the one to
        // keep, or no CRD serves a watched kind any more, look again soon rather than in a
        // minute, backing off should discovery never agree. A failed discovery (the API server
        // away) is tried again as the watches retry, so a kind installed meanwhile is not left
        // for a minute.
        let waiting = !status.expected().is_empty()
            || (status.crds_listed()
                && watchers.iter().any(|(kind, (v, _))| {
                    awaits_discovery(*kind, v, status.announced(*kind), |version| {
                        status.crd_serves(*kind, version)
                    })
                }));
        let next = if failed {
            backoff.delay().min(options.discovery_interval)
        } else if waiting {
            let next = catch_up.min(options.discovery_interval);
            catch_up = (catch_up * 2).min(options.discovery_interval);
            next
        } else {
            catch_up = DISCOVERY_CATCH_UP;
            options.discovery_interval
        };
        tokio::select! {
            () = tokio::time::sleep(next) => {}
            // Something changed: what discovery is to show is new, so look soon again.
            () = wake.notified() => catch_up = DISCOVERY_CATCH_UP,
        }
    }
}

/// Whether the watch of `kind` in version `watched` moves to `listed`, the version discovery
/// lists the kind in now. A newer version is taken at once; an older one only once the CRDs no
/// longer serve `watched` (`crd_serves_watched`). Right after an API server restart discovery
/// can list a kind in an older version before the newer one (a v1.20.2 listed IPAddress at
/// v1beta1 only, for a moment): moving then would relist every object of the kind from a server
/// whose watch cache is still reading etcd, where the watch kept resumes (as a kind discovery
/// omits for a moment is kept).
fn moves_to(kind: Kind, watched: &str, listed: &str, crd_serves_watched: bool) -> bool {
    let rank = |v: &str| kind.info().versions.iter().position(|known| *known == v);
    listed != watched && (rank(listed) > rank(watched) || !crd_serves_watched)
}

/// Whether the CRDs, as last seen, say discovery is to change how `kind`, watched in version
/// `watched`, is read: no CRD serves it any more (`announced` false), or its CRD no longer serves
/// `watched`, or serves a version the table ranks above it.
fn awaits_discovery(
    kind: Kind,
    watched: &str,
    announced: bool,
    crd_serves: impl Fn(&str) -> bool,
) -> bool {
    let versions = kind.info().versions;
    let newer = match versions.iter().position(|known| *known == watched) {
        Some(at) => &versions[at + 1..],
        None => versions,
    };
    !announced || !crd_serves(watched) || newer.iter().any(|v| crd_serves(v))
}

fn reconcile(
    client: &Client,
    shared: &Arc<Ledger>,
    status: &Arc<Status>,
    watchers: &mut BTreeMap<Kind, (String, AbortOnDrop)>,
    served: BTreeMap<Kind, String>,
    options: LiveOptions,
    clock: &Arc<dyn Clock>,
) {
    // A kind discovery no longer lists is dropped only once its CRD is gone too: right after an
    // API server restart discovery can omit CRD groups for a moment, and dropping the kind then
    // would empty it from the view.
    let gone: Vec<Kind> = watchers
        .keys()
        .filter(|k| !served.contains_key(k) && !status.announced(**k))
        .copied()
        .collect();
    for kind in gone {
        watchers.remove(&kind);
        shared.clear_kind(kind);
        status.unwatch(Source::Kind(kind));
        tracing::info!(%kind, "no longer served: stopped watching and dropped its objects");
    }
    for (kind, version) in served {
        match watchers.get(&kind) {
            Some((v, _)) if *v == version => continue,
            Some((v, _)) if !moves_to(kind, v, &version, status.crd_serves(kind, v)) => {
                tracing::debug!(%kind, watched = %v, listed = %version, "discovery lists an older version only; its CRD still serves the one watched: keeping it");
                continue;
            }
            Some((v, _)) => {
                // Objects stay: the new watcher's first list replaces them at its InitDone.
                tracing::info!(%kind, from = %v, to = %version, "served version changed: watching the new one");
            }
            None => tracing::info!(%kind, %version, "watching"),
        }
        // Recorded before the task starts: its first list must find the entry to mark.
        status.watch(Source::Kind(kind), &version);
        let task = tokio::spawn(
            WatchLoop {
                client: client.clone(),
                resource: api_resource(kind, &version),
                source: Source::Kind(kind),
                version: version.clone(),
                status: status.clone(),
                timing: options.timing(clock),
                feed: KindSink {
                    feed: KindFeed::new(kind, &version),
                    shared: shared.clone(),
                },
            }
            .run(),
        );
        watchers.insert(kind, (version, AbortOnDrop(task)));
    }
    status.discovered();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_moves_to_a_newer_version_at_once_and_to_an_older_one_once_its_own_is_not_served() {
        let a = Kind::IPAddress;
        // Discovery lists the newer version: taken whatever the CRDs said last.
        assert!(moves_to(a, "v1beta1", "v1beta2", true));
        assert!(moves_to(a, "v1beta1", "v1beta2", false));
        // Discovery lists only the older one while the CRD still serves the one watched (an API
        // server just restarted): kept.
        assert!(!moves_to(a, "v1beta2", "v1beta1", true));
        // The CRD stopped serving it: moved.
        assert!(moves_to(a, "v1beta2", "v1beta1", false));
        assert!(!moves_to(a, "v1beta2", "v1beta2", false));
    }

    #[tokio::test]
    async fn a_kubeconfig_that_cannot_be_read_or_used_is_named_with_its_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let Err(e) = client(Some(&missing)).await else {
            panic!("a client from a missing kubeconfig");
        };
        assert!(matches!(e, ClientError::ReadKubeconfig { .. }), "{e:?}");
        let text = describe(&e);
        let head = format!("cannot read kubeconfig {}: ", missing.display());
        assert!(text.starts_with(&head), "{text}");
        assert!(text.to_lowercase().contains("no such file"), "{text}");

        let empty = dir.path().join("empty");
        std::fs::write(&empty, "apiVersion: v1\nkind: Config\n").unwrap();
        let Err(e) = client_and_server(Some(&empty), Some("nope")).await else {
            panic!("a client in a context the kubeconfig lacks");
        };
        assert!(matches!(e, ClientError::Kubeconfig { .. }), "{e:?}");
        let text = describe(&e);
        let head = format!("kubeconfig {}, context \"nope\": ", empty.display());
        assert!(text.starts_with(&head), "{text}");
        // Each cause once, however kube nests them.
        let layers: Vec<&str> = text.split(": ").collect();
        let mut once = layers.clone();
        once.sort_unstable();
        once.dedup();
        assert_eq!(once.len(), layers.len(), "{text}");
    }

    #[test]
    fn discovery_looks_again_soon_while_the_crds_say_a_watch_is_to_change() {
        let a = Kind::IPAddress;
        let serving = |served: &'static [&'static str]| move |v: &str| served.contains(&v);
        // Watched in the newest version the CRD serves: nothing to wait for.
        assert!(!awaits_discovery(
            a,
            "v1beta2",
            true,
            serving(&["v1beta1", "v1beta2"])
        ));
        assert!(!awaits_discovery(a, "v1beta1", true, serving(&["v1beta1"])));
        // The CRD serves the newer version again: discovery will list it moments later.
        assert!(awaits_discovery(
            a,
            "v1beta1",
            true,
            serving(&["v1beta1", "v1beta2"])
        ));
        assert!(awaits_discovery(a, "v1beta1", true, serving(&["v1beta2"])));
        // The CRD stopped serving the one watched.
        assert!(awaits_discovery(a, "v1beta2", true, serving(&["v1beta1"])));
        // The CRD is gone: discovery will stop listing the kind.
        assert!(awaits_discovery(a, "v1beta2", false, serving(&[])));
        // A version the table does not know is never the one to keep.
        assert!(awaits_discovery(a, "v9", true, serving(&["v9", "v1beta1"])));
    }
}
