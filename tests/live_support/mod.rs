//! A fake Kubernetes API server for the live view tests: plain HTTP on 127.0.0.1, port 0.
//!
//! It serves what kube-runtime's watcher and our discovery call: `/api`, `/apis`, `/apis/<group>`,
//! `/apis/<group>/<version>` (APIResourceList), and list / watch of the IPAM resources
//! (`?watch=true`: chunked JSON lines, one WatchEvent per line). Test hooks:
//! - `serve` / `unserve` a kind (a CRD installed or removed);
//! - `apply` / `delete` objects (watch events go to open watches), `delete_silently` (no event:
//!   only a relist can find out);
//! - `force_relist`: ends the open watches of a kind and answers the next watch with a
//!   `410 Gone` ERROR event, the way the watch cache does once a resourceVersion is too old;
//! - `hold_lists` / `release_list`: list requests of a kind wait until released, so a test can look
//!   at the view in the middle of a relist;
//! - `fail_discovery`: `GET /apis` answers 503, so discovery never completes;
//! - `stall_watches`: watch requests of a kind are accepted but never send a byte (a dead
//!   connection), `unstall_watches` ends that.
//!
//! CustomResourceDefinitions are served too (list and watch of
//! `apiextensions.k8s.io/v1/customresourcedefinitions`): `serve` / `unserve` add, change and delete
//! the kind's CRD, established. Watches end after their `timeoutSeconds`, as on a real server.
//!
//! Shapes follow a real kube-apiserver (APIGroupList, APIResourceList with a `/status` subresource,
//! list metadata.resourceVersion, the 410 Status).
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::Router;
use bytes::Bytes;
use http::StatusCode;
use ipam_guard::kinds::Kind;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};

type ObjName = (Option<String>, String);

#[derive(Default)]
struct St {
    /// Served kinds and the versions each serves.
    served: BTreeMap<Kind, Vec<&'static str>>,
    objects: BTreeMap<Kind, BTreeMap<ObjName, Value>>,
    rv: u64,
    /// Every event so far, for watches that resume from a resourceVersion.
    history: Vec<(u64, Kind, &'static str, Value)>,
    watches: Vec<(Kind, mpsc::UnboundedSender<Bytes>)>,
    gone: HashSet<Kind>,
    gates: HashMap<Kind, Arc<Semaphore>>,
    lists: HashMap<Kind, usize>,
    list_queries: HashMap<Kind, Vec<String>>,
    watch_calls: HashMap<Kind, usize>,
    discoveries: usize,
    crd_history: Vec<(u64, &'static str, Value)>,
    crd_watches: Vec<mpsc::UnboundedSender<Bytes>>,
    stalled: HashSet<Kind>,
    crds_forbidden: bool,
    failing: HashSet<Kind>,
    discovery_failing: bool,
    /// While set, discovery shows these served kinds, not `served` (a real API server's
    /// discovery lags its CRDs).
    discovery_frozen: Option<BTreeMap<Kind, Vec<&'static str>>>,
}

impl St {
    /// What discovery shows: what is served, or what was when it froze.
    fn discoverable(&self) -> &BTreeMap<Kind, Vec<&'static str>> {
        self.discovery_frozen.as_ref().unwrap_or(&self.served)
    }
}

/// The fake API server. Dropping it stops the server task.
pub struct FakeApi {
    pub addr: SocketAddr,
    st: Arc<Mutex<St>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeApi {
    pub async fn start() -> FakeApi {
        let st = Arc::new(Mutex::new(St {
            rv: 100,
            ..St::default()
        }));
        let app = Router::new().fallback(handle).with_state(st.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeApi { addr, st, task }
    }

    /// A kube client for this server (plain HTTP, loopback).
    pub fn client(&self) -> kube::Client {
        install_crypto();
        let url: http::Uri = format!("http://{}", self.addr).parse().unwrap();
        kube::Client::try_from(kube::Config::new(url)).unwrap()
    }

    fn st(&self) -> std::sync::MutexGuard<'_, St> {
        self.st.lock().unwrap()
    }

    /// Installs the kind's CRD with every version of the kinds table.
    pub fn serve(&self, kind: Kind) {
        self.serve_versions(kind, kind.info().versions);
    }

    pub fn serve_versions(&self, kind: Kind, versions: &[&'static str]) {
        let mut st = self.st();
        let existed = st.served.insert(kind, versions.to_vec()).is_some();
        st.rv += 1;
        let rv = st.rv;
        let crd = crd_json(kind, versions, rv);
        st.crd_event(if existed { "MODIFIED" } else { "ADDED" }, crd, rv);
    }

    /// Removes the kind's CRD: its objects go and its watches end, as a real API server does.
    pub fn unserve(&self, kind: Kind) {
        let mut st = self.st();
        let versions = st.served.remove(&kind).unwrap_or_default();
        st.objects.remove(&kind);
        st.watches.retain(|(k, _)| *k != kind);
        st.rv += 1;
        let rv = st.rv;
        st.crd_event("DELETED", crd_json(kind, &versions, rv), rv);
    }

    /// Watch requests of `kind` from now on are answered 200 and then stay silent, and the open
    /// ones stop sending (a connection that died without a reset).
    pub fn stall_watches(&self, kind: Kind) {
        let mut st = self.st();
        st.stalled.insert(kind);
        st.watches.retain(|(k, _)| *k != kind);
    }

    /// Ends the open watches of `kind` and answers new ones `500` until `unfail_watches`.
    pub fn fail_watches(&self, kind: Kind) {
        let mut st = self.st();
        st.failing.insert(kind);
        st.watches.retain(|(k, _)| *k != kind);
    }

    pub fn unfail_watches(&self, kind: Kind) {
        self.st().failing.remove(&kind);
    }

    /// Discovery keeps showing the kinds and versions served now, whatever CRDs change, until
    /// `thaw_discovery`: the lag of a real API server's discovery behind its CRDs, held open.
    pub fn freeze_discovery(&self) {
        let mut st = self.st();
        st.discovery_frozen = Some(st.served.clone());
    }

    pub fn thaw_discovery(&self) {
        self.st().discovery_frozen = None;
    }

    /// `GET /apis` is answered 503 (still counted in `discoveries`); everything else works.
    pub fn fail_discovery(&self) {
        self.st().discovery_failing = true;
    }

    /// CRD list and watch requests are answered 403 (RBAC without CRDs).
    pub fn forbid_crds(&self) {
        self.st().crds_forbidden = true;
    }

    pub fn unstall_watches(&self, kind: Kind) {
        self.st().stalled.remove(&kind);
    }

    /// Creates or updates an object (kind from its apiVersion/kind), sending ADDED or MODIFIED.
    pub fn apply(&self, mut obj: Value) {
        let kind = kind_of(&obj);
        let mut st = self.st();
        st.rv += 1;
        let rv = st.rv;
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        let name = name_of(&obj);
        let existed = st
            .objects
            .entry(kind)
            .or_default()
            .insert(name, obj.clone())
            .is_some();
        let ty = if existed { "MODIFIED" } else { "ADDED" };
        st.event(kind, ty, obj, rv);
    }

    /// Deletes an object, sending DELETED.
    pub fn delete(&self, kind: Kind, namespace: Option<&str>, name: &str) {
        let mut st = self.st();
        let key = (namespace.map(str::to_string), name.to_string());
        let Some(mut obj) = st.objects.get_mut(&kind).and_then(|m| m.remove(&key)) else {
            panic!("delete of a missing object {kind} {name}");
        };
        st.rv += 1;
        let rv = st.rv;
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        st.event(kind, "DELETED", obj, rv);
    }

    /// Deletes an object without any event (as if it went while the watch was down).
    pub fn delete_silently(&self, kind: Kind, namespace: Option<&str>, name: &str) {
        let mut st = self.st();
        let key = (namespace.map(str::to_string), name.to_string());
        st.objects.get_mut(&kind).and_then(|m| m.remove(&key));
        st.rv += 1;
    }

    /// Ends the open watches of `kind`; the next watch gets `410 Gone`, forcing a relist.
    pub fn force_relist(&self, kind: Kind) {
        let mut st = self.st();
        st.gone.insert(kind);
        st.watches.retain(|(k, _)| *k != kind);
    }

    /// From now on list requests of `kind` wait for `release_list`.
    pub fn hold_lists(&self, kind: Kind) {
        self.st().gates.insert(kind, Arc::new(Semaphore::new(0)));
    }

    /// Lets one held list (or the next one) of `kind` through.
    pub fn release_list(&self, kind: Kind) {
        if let Some(g) = self.st().gates.get(&kind) {
            g.add_permits(1);
        }
    }

    /// Lists of `kind` are no longer held.
    pub fn stop_holding(&self, kind: Kind) {
        if let Some(g) = self.st().gates.remove(&kind) {
            g.add_permits(1000);
        }
    }

    /// The query strings of the list requests of `kind`, in order.
    pub fn list_queries(&self, kind: Kind) -> Vec<String> {
        self.st()
            .list_queries
            .get(&kind)
            .cloned()
            .unwrap_or_default()
    }

    /// The current resourceVersion of the fake's store.
    pub fn resource_version(&self) -> u64 {
        self.st().rv
    }

    /// List requests received for `kind` (held ones included).
    pub fn lists(&self, kind: Kind) -> usize {
        self.st().lists.get(&kind).copied().unwrap_or(0)
    }

    pub fn watch_calls(&self, kind: Kind) -> usize {
        self.st().watch_calls.get(&kind).copied().unwrap_or(0)
    }

    /// `GET /apis` requests so far.
    pub fn discoveries(&self) -> usize {
        self.st().discoveries
    }

    /// Open watch streams of `kind`.
    pub fn open_watches(&self, kind: Kind) -> usize {
        let mut st = self.st();
        st.watches.retain(|(_, tx)| !tx.is_closed());
        st.watches.iter().filter(|(k, _)| *k == kind).count()
    }
}

impl St {
    fn crd_event(&mut self, ty: &'static str, crd: Value, rv: u64) {
        self.crd_history.push((rv, ty, crd.clone()));
        let line = watch_line(ty, &crd);
        self.crd_watches.retain(|tx| tx.send(line.clone()).is_ok());
    }

    fn event(&mut self, kind: Kind, ty: &'static str, obj: Value, rv: u64) {
        self.history.push((rv, kind, ty, obj.clone()));
        let line = watch_line(ty, &obj);
        self.watches
            .retain(|(k, tx)| *k != kind || tx.send(line.clone()).is_ok());
    }
}

/// The CRD of a kind, established, serving `versions` (the last one stored).
fn crd_json(kind: Kind, versions: &[&str], rv: u64) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"name": v, "served": true, "storage": i + 1 == versions.len()}))
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", kind.plural(), kind.group()), "resourceVersion": rv.to_string()},
        "spec": {"group": kind.group(), "names": {"plural": kind.plural(), "kind": kind.name()},
                 "scope": if kind.namespaced() {"Namespaced"} else {"Cluster"}, "versions": vs},
        "status": {"conditions": [{"type": "Established", "status": "True"}]}
    })
}

fn watch_line(ty: &str, obj: &Value) -> Bytes {
    let mut s = serde_json::to_string(&json!({"type": ty, "object": obj})).unwrap();
    s.push('\n');
    Bytes::from(s)
}

fn kind_of(obj: &Value) -> Kind {
    let (kind, _) = Kind::from_api_version(
        obj["apiVersion"].as_str().unwrap(),
        obj["kind"].as_str().unwrap(),
    )
    .expect("a kind of the table");
    kind
}

fn name_of(obj: &Value) -> ObjName {
    (
        obj["metadata"]["namespace"].as_str().map(str::to_string),
        obj["metadata"]["name"].as_str().unwrap().to_string(),
    )
}

pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

// === HTTP ===

fn status(code: StatusCode, reason: &str, message: &str) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code.as_u16()
    });
    (code, axum::Json(body)).into_response()
}

fn json_ok(v: Value) -> Response {
    (StatusCode::OK, axum::Json(v)).into_response()
}

async fn handle(State(st): State<Arc<Mutex<St>>>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let query: HashMap<String, String> = req
        .uri()
        .query()
        .map(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default();
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["api"] => json_ok(json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]
        })),
        ["apis"] => {
            let mut st = st.lock().unwrap();
            st.discoveries += 1;
            if st.discovery_failing {
                return status(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailable",
                    "discovery is failing (test hook)",
                );
            }
            let groups: Vec<Value> = groups(&st)
                .into_iter()
                .map(|(g, vs)| group_json(g, &vs))
                .collect();
            json_ok(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["apis", group] => {
            let st = st.lock().unwrap();
            match groups(&st).remove(group) {
                Some(vs) => json_ok(group_json(group, &vs)),
                None => status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    "the server could not find the requested resource",
                ),
            }
        }
        ["apis", group, version] => {
            let st = st.lock().unwrap();
            let resources: Vec<Value> = st
                .discoverable()
                .iter()
                .filter(|(k, vs)| k.group() == *group && vs.contains(version))
                .flat_map(|(k, _)| {
                    let verbs = json!(["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]);
                    [
                        json!({"name": k.plural(), "singularName": k.name().to_lowercase(), "namespaced": k.namespaced(),
                               "kind": k.name(), "verbs": verbs, "storageVersionHash": "x"}),
                        json!({"name": format!("{}/status", k.plural()), "singularName": "", "namespaced": k.namespaced(),
                               "kind": k.name(), "verbs": ["get", "patch", "update"]}),
                    ]
                })
                .collect();
            if resources.is_empty() {
                return status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    "the server could not find the requested resource",
                );
            }
            json_ok(json!({"kind": "APIResourceList", "apiVersion": "v1",
                           "groupVersion": format!("{group}/{version}"), "resources": resources}))
        }
        ["apis", "apiextensions.k8s.io", "v1", "customresourcedefinitions"]
            if st.lock().unwrap().crds_forbidden =>
        {
            status(
                StatusCode::FORBIDDEN,
                "Forbidden",
                "customresourcedefinitions.apiextensions.k8s.io is forbidden",
            )
        }
        ["apis", "apiextensions.k8s.io", "v1", "customresourcedefinitions"] => {
            if query.get("watch").is_some_and(|w| w == "true" || w == "1") {
                crd_watch(&st, &query)
            } else {
                let st = st.lock().unwrap();
                let items: Vec<Value> = st
                    .served
                    .iter()
                    .map(|(k, vs)| crd_json(*k, vs, st.rv))
                    .collect();
                json_ok(json!({
                    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinitionList",
                    "metadata": {"resourceVersion": st.rv.to_string()}, "items": items
                }))
            }
        }
        ["apis", group, version, plural] => {
            let kind = {
                let st = st.lock().unwrap();
                st.served
                    .iter()
                    .find(|(k, vs)| {
                        k.group() == *group && k.plural() == *plural && vs.contains(version)
                    })
                    .map(|(k, _)| *k)
            };
            let Some(kind) = kind else {
                return status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    "the server could not find the requested resource",
                );
            };
            let api_version = format!("{group}/{version}");
            if query.get("watch").is_some_and(|w| w == "true" || w == "1") {
                watch(&st, kind, &api_version, &query)
            } else {
                let raw = req.uri().query().unwrap_or_default().to_string();
                st.lock()
                    .unwrap()
                    .list_queries
                    .entry(kind)
                    .or_default()
                    .push(raw);
                list(&st, kind, &api_version).await
            }
        }
        _ => status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        ),
    }
}

/// Group -> versions served by some kind, in table order.
fn groups(st: &St) -> BTreeMap<&'static str, Vec<&'static str>> {
    let mut out: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
    for (k, vs) in st.discoverable() {
        let entry = out.entry(k.group()).or_default();
        for v in vs {
            if !entry.contains(v) {
                entry.push(v);
            }
        }
    }
    out
}

fn group_json(group: &str, versions: &[&str]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = vs.last().cloned().unwrap_or(Value::Null);
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": vs, "preferredVersion": preferred})
}

fn with_version(obj: &Value, api_version: &str) -> Value {
    let mut o = obj.clone();
    o["apiVersion"] = json!(api_version);
    o
}

async fn list(st: &Arc<Mutex<St>>, kind: Kind, api_version: &str) -> Response {
    let gate = {
        let mut st = st.lock().unwrap();
        *st.lists.entry(kind).or_default() += 1;
        st.gates.get(&kind).cloned()
    };
    if let Some(gate) = gate {
        // Bounded: a test that forgets to release fails instead of hanging.
        match tokio::time::timeout(Duration::from_secs(30), gate.acquire()).await {
            Ok(Ok(permit)) => permit.forget(),
            _ => {
                return status(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailable",
                    "list held too long",
                )
            }
        }
    }
    let st = st.lock().unwrap();
    let items: Vec<Value> = st
        .objects
        .get(&kind)
        .map(|m| m.values().map(|o| with_version(o, api_version)).collect())
        .unwrap_or_default();
    json_ok(json!({
        "apiVersion": api_version, "kind": format!("{}List", kind.name()),
        "metadata": {"resourceVersion": st.rv.to_string()},
        "items": items
    }))
}

fn watch(
    st: &Arc<Mutex<St>>,
    kind: Kind,
    api_version: &str,
    query: &HashMap<String, String>,
) -> Response {
    let mut st = st.lock().unwrap();
    *st.watch_calls.entry(kind).or_default() += 1;
    let from: u64 = query
        .get("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if st.failing.contains(&kind) {
        return status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "watch failed",
        );
    }
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    if st.stalled.contains(&kind) {
        // Kept open and silent: the sender lives as long as the stream is read.
        return stream_response(rx, Some(tx), None);
    }
    if st.gone.remove(&kind) {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("too old resource version: {from} ({})", st.rv),
            "reason": "Expired", "code": 410
        });
        let _ = tx.send(watch_line("ERROR", &status));
        drop(tx);
    } else {
        for (rv, k, ty, obj) in &st.history {
            if *k == kind && *rv > from {
                let _ = tx.send(watch_line(ty, &with_version(obj, api_version)));
            }
        }
        st.watches.push((kind, tx));
    }
    stream_response(rx, None, timeout_of(query))
}

fn timeout_of(query: &HashMap<String, String>) -> Option<Duration> {
    query
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .map(Duration::from_secs)
}

fn crd_watch(st: &Arc<Mutex<St>>, query: &HashMap<String, String>) -> Response {
    let mut st = st.lock().unwrap();
    let from: u64 = query
        .get("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    for (rv, ty, crd) in &st.crd_history {
        if *rv > from {
            let _ = tx.send(watch_line(ty, crd));
        }
    }
    st.crd_watches.push(tx);
    stream_response(rx, None, timeout_of(query))
}

/// A chunked watch response fed by `rx`, ended after `timeout` like a real server's watch.
fn stream_response(
    rx: mpsc::UnboundedReceiver<Bytes>,
    keep: Option<mpsc::UnboundedSender<Bytes>>,
    timeout: Option<Duration>,
) -> Response {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let stream = futures::stream::unfold((rx, keep), move |(mut rx, keep)| async move {
        let next = match deadline {
            Some(d) => tokio::time::timeout_at(d, rx.recv()).await.ok().flatten(),
            None => rx.recv().await,
        };
        next.map(|b| (Ok::<_, std::io::Error>(b), (rx, keep)))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from_stream(stream))
        .unwrap()
}

// === Helpers for tests ===

/// How many objects of `kind` the view holds.
pub fn count(view: &ipam_guard::cluster::live::LiveView, kind: Kind) -> usize {
    use ipam_guard::cluster::ClusterView;
    view.object_counts()
        .into_iter()
        .find(|(k, _)| *k == kind)
        .map_or(0, |(_, n)| n)
}

/// Polls `cond` every 20 ms until it holds or `within` passes; panics with `what` on timeout.
pub async fn wait_for(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    let mut polls = 0u32;
    while !cond() {
        polls += 1;
        assert!(
            start.elapsed() < within && polls < 100_000,
            "timed out after {:?} waiting for {what}",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn in_cluster_pool(ns: &str, name: &str, addresses: &[&str]) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}"),
                     "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]},
        "spec": {"addresses": addresses, "prefix": 24, "gateway": "10.0.0.1"}
    })
}

pub fn global_pool(name: &str, addresses: &[&str]) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
        "metadata": {"name": name, "uid": format!("uid-{name}")},
        "spec": {"addresses": addresses, "prefix": 24, "gateway": "10.0.0.1"}
    })
}

pub fn ip_address(ns: &str, name: &str, address: &str, pool: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}")},
        "spec": {
            "address": address, "prefix": 24, "gateway": "10.0.0.1",
            "claimRef": {"name": name},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": pool}
        }
    })
}

pub fn claim(ns: &str, name: &str, pool: &str) -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}")},
        "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": pool}}
    })
}
