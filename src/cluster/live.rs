//! The live view (SPEC X1–X3): API discovery finds which kinds of `kinds::KINDS` the cluster
//! serves, one kube-runtime watcher per served kind feeds one `Index` through `model::project`,
//! and `synced` turns true once every watched kind has been listed.
//!
//! - Discovery runs at start and every `discovery_interval` (60 s): a CRD installed later gets a
//!   watcher at the next round; one removed has its watcher stopped and its objects dropped.
//! - The initial list and every relist use `resourceVersion=0` (`any_semantic`): the watch cache
//!   answers in seconds where a consistent paged list of 100k objects takes half a minute.
//! - A relist (`Init`, `InitApply`…, `InitDone`) upserts as it goes and removes the keys that did
//!   not come back only at `InitDone`, so nothing the old list held vanishes before the new list is
//!   complete (an object listed again replaces its old projection at once: it is the newer reading).
//! - Only projections are kept: objects are decoded without `managedFields` (`object`) and dropped
//!   once projected.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::ApiResource;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Config};
use tokio::task::JoinHandle;

use super::object::WatchedObject;
use super::shared::{Shared, PENDING_TTL};
use super::ClusterView;
use crate::kinds::{Kind, KINDS};
use crate::model::{self, ObjKey};

/// How often API discovery looks for CRDs installed or removed.
pub const DISCOVERY_INTERVAL: Duration = Duration::from_secs(60);

/// Knobs of the live view; tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct LiveOptions {
    pub discovery_interval: Duration,
    /// How long an admitted object counts as existing before its watch event (SPEC X2).
    pub pending_ttl: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            discovery_interval: DISCOVERY_INTERVAL,
            pending_ttl: PENDING_TTL,
        }
    }
}

/// Kinds whose projections some rule reads. The others (VSphereMachine*, Metal3 IPClaim) are
/// judged only on their own content, so watching them would cost memory and API load for nothing;
/// `audit` still lists them.
pub fn watched(kind: Kind) -> bool {
    kind.is_pool()
        || matches!(
            kind,
            Kind::IPAddressClaim | Kind::IPAddress | Kind::Metal3IPAddress
        )
}

/// Builds a client: `--kubeconfig` when given, else in-cluster, else `KUBECONFIG` / `~/.kube/config`.
pub async fn client(kubeconfig: Option<&Path>) -> anyhow::Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("kubeconfig {}", path.display()))?
        }
        None => match Config::incluster() {
            Ok(config) => config,
            Err(in_cluster) => Config::infer().await.with_context(|| {
                format!(
                    "no cluster to talk to: not in a pod ({in_cluster}) and no usable \
                     KUBECONFIG or ~/.kube/config; pass --kubeconfig"
                )
            })?,
        },
    };
    Client::try_from(config).context("cannot build a Kubernetes client")
}

/// Connects to the cluster (see `client`) and starts the live view. Returns at once: the view
/// reports `synced() == false` until discovery and every first list have finished.
pub async fn connect(kubeconfig: Option<&Path>) -> anyhow::Result<Arc<LiveView>> {
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
    pub fn apply(&mut self, shared: &Shared, event: Event<WatchedObject>) -> bool {
        match event {
            Event::Init => {
                self.relist = Some(HashSet::new());
                false
            }
            Event::InitApply(obj) => {
                if let Some(key) = self.upsert(shared, &obj) {
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
                self.upsert(shared, &obj);
                false
            }
            Event::Delete(obj) => {
                if let Some(key) = self.key(&obj) {
                    shared.delete(&key);
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

    fn upsert(&self, shared: &Shared, obj: &WatchedObject) -> Option<ObjKey> {
        let key = self.key(obj)?;
        let value = obj.to_value(&self.resource);
        let projection = model::project(self.kind, &value);
        shared.apply(&key, projection);
        Some(key)
    }
}

// === The view ===

/// A cluster view fed by watches. Dropping the last `Arc` stops discovery and every watcher.
pub struct LiveView {
    shared: Arc<Shared>,
    status: Arc<Status>,
    client: Client,
    _tasks: Vec<AbortOnDrop>,
}

impl std::fmt::Debug for LiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveView")
            .field("synced", &self.status.synced.load(Ordering::Relaxed))
            .field("watched", &self.watching())
            .finish_non_exhaustive()
    }
}

/// What readiness needs: discovery ran once, and every watched kind finished its first list.
#[derive(Debug, Default)]
struct Status {
    discovered: AtomicBool,
    synced: AtomicBool,
    /// Watched kind -> (version read, first list done).
    kinds: Mutex<BTreeMap<Kind, (String, bool)>>,
}

impl Status {
    fn update(&self, f: impl FnOnce(&mut BTreeMap<Kind, (String, bool)>)) {
        let mut kinds = self.kinds.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut kinds);
        let all = self.discovered.load(Ordering::SeqCst) && kinds.values().all(|(_, s)| *s);
        let was = self.synced.swap(all, Ordering::SeqCst);
        if all && !was {
            tracing::info!(kinds = kinds.len(), "cluster view synced");
        }
    }
}

impl LiveView {
    /// Starts discovery and the watchers on the current tokio runtime.
    pub fn start(client: Client, options: LiveOptions) -> Arc<LiveView> {
        let shared = Arc::new(Shared::with_ttl(Default::default(), options.pending_ttl));
        let status = Arc::new(Status::default());
        let discovery = tokio::spawn(discovery_loop(
            client.clone(),
            shared.clone(),
            status.clone(),
            options.discovery_interval,
        ));
        // Admission sweeps before each decision; this only keeps object counts honest when no
        // request comes.
        let sweeper = {
            let shared = Arc::downgrade(&shared);
            let every =
                (options.pending_ttl / 4).clamp(Duration::from_millis(10), Duration::from_secs(5));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    match shared.upgrade() {
                        Some(s) => s.sweep(Instant::now()),
                        None => return,
                    }
                }
            })
        };
        Arc::new(LiveView {
            shared,
            status,
            client,
            _tasks: vec![AbortOnDrop(discovery), AbortOnDrop(sweeper)],
        })
    }

    /// The index, pending entries and decision lock (admission calls `decide` on it).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The client the view watches with (the periodic audit lists with it).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Kinds watched now, with the version read and whether their first list is done.
    pub fn watching(&self) -> Vec<(Kind, String, bool)> {
        let kinds = self.status.kinds.lock().unwrap_or_else(|p| p.into_inner());
        kinds
            .iter()
            .map(|(k, (v, s))| (*k, v.clone(), *s))
            .collect()
    }
}

impl ClusterView for LiveView {
    fn synced(&self) -> bool {
        self.status.synced.load(Ordering::SeqCst)
    }
    fn object_counts(&self) -> Vec<(Kind, usize)> {
        self.shared.read().counts()
    }
    fn read(&self) -> Box<dyn std::ops::Deref<Target = crate::index::Index> + '_> {
        Box::new(self.shared.read())
    }
    fn decide(&self, f: &mut dyn FnMut(&crate::index::Index) -> Option<model::Projection>) {
        self.shared.decide(|index| ((), f(index)));
    }
    fn decide_as(
        &self,
        caller: &super::Caller,
        f: &mut dyn FnMut(&crate::index::Index) -> Option<model::Projection>,
    ) {
        self.shared.decide_as(caller, |index| ((), f(index)));
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
    shared: Arc<Shared>,
    status: Arc<Status>,
    interval: Duration,
) {
    // Kind -> (version, watcher task). Owned here: aborting this task drops and stops them all.
    let mut watchers: BTreeMap<Kind, (String, AbortOnDrop)> = BTreeMap::new();
    let mut failures = 0u32;
    loop {
        match discover(&client).await {
            Ok(served) => {
                failures = 0;
                let served: BTreeMap<Kind, String> =
                    served.into_iter().filter(|(k, _)| watched(*k)).collect();
                reconcile(&client, &shared, &status, &mut watchers, served);
            }
            Err(e) => {
                failures += 1;
                // The first failures are routine (API server restarting); keep logging them rarer.
                if failures.is_power_of_two() {
                    tracing::warn!(error = %e, failures, "API discovery failed; keeping the kinds watched so far");
                }
            }
        }
        tokio::time::sleep(interval).await;
    }
}

fn reconcile(
    client: &Client,
    shared: &Arc<Shared>,
    status: &Arc<Status>,
    watchers: &mut BTreeMap<Kind, (String, AbortOnDrop)>,
    served: BTreeMap<Kind, String>,
) {
    let gone: Vec<Kind> = watchers
        .keys()
        .filter(|k| !served.contains_key(k))
        .copied()
        .collect();
    for kind in gone {
        watchers.remove(&kind);
        shared.clear_kind(kind);
        status.update(|kinds| {
            kinds.remove(&kind);
        });
        tracing::info!(%kind, "no longer served: stopped watching and dropped its objects");
    }
    for (kind, version) in served {
        match watchers.get(&kind) {
            Some((v, _)) if *v == version => continue,
            Some((v, _)) => {
                // Objects stay: the new watcher's first list replaces them at its InitDone.
                tracing::info!(%kind, from = %v, to = %version, "served version changed: watching the new one");
            }
            None => tracing::info!(%kind, %version, "watching"),
        }
        // Recorded before the task starts: its first InitDone must find the entry to mark.
        status.update(|kinds| {
            let synced = kinds.get(&kind).is_some_and(|(_, s)| *s);
            kinds.insert(kind, (version.clone(), synced));
        });
        let task = tokio::spawn(watch_kind(
            client.clone(),
            kind,
            version.clone(),
            shared.clone(),
            status.clone(),
        ));
        watchers.insert(kind, (version, AbortOnDrop(task)));
    }
    status.discovered.store(true, Ordering::SeqCst);
    status.update(|_| {});
}

async fn watch_kind(
    client: Client,
    kind: Kind,
    version: String,
    shared: Arc<Shared>,
    status: Arc<Status>,
) {
    let mut feed = KindFeed::new(kind, &version);
    let api: Api<WatchedObject> = Api::all_with(client, &feed.resource);
    let config = watcher::Config::default().any_semantic();
    let mut events = pin!(watcher(api, config).default_backoff());
    let mut synced = false;
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                if feed.apply(&shared, event) && !synced {
                    status.update(|kinds| {
                        if let Some((v, s)) = kinds.get_mut(&kind) {
                            if *v == version {
                                *s = true;
                                synced = true;
                            }
                        }
                    });
                }
            }
            // 410 Gone: the watch fell out of the API server's window; the watcher relists.
            Err(watcher::Error::WatchError(s)) if s.code == 410 => {
                tracing::debug!(%kind, "watch expired (410 Gone): relisting");
            }
            Err(e) => tracing::warn!(%kind, error = %e, "watch failed; retrying with backoff"),
        }
    }
}

fn watcher(
    api: Api<WatchedObject>,
    config: watcher::Config,
) -> impl futures::Stream<Item = watcher::Result<Event<WatchedObject>>> + Send {
    kube::runtime::watcher(api, config)
}
