//! The growth curve of the commands that read a whole cluster: `audit`,
//! `audit -n trial-guard`, `usage` and `check --kubeconfig FILE`, each a whole process under
//! `/usr/bin/time -v` (wall, CPU user + sys, peak RSS), at growing sizes of the data
//! `crates/e2e/tests/e2e_cluster_reads.rs` stores (InClusterIPPools of 10 IPAddresses each in
//! namespace `scale`, three addresses and one pool in `trial-guard`), against a stand-in list
//! server in this process. Prints markdown rows for docs/performance.md ("Cluster reads").
//!
//! ```sh
//! cargo build --release --bin ipam-guard
//! cargo bench --bench cluster_reads_growth -- --pools 10000,20000,40000,100000 --runs 2
//! ```
//!
//! Knobs: `--pools` (comma-separated pool counts, 10 addresses each; default
//! `10000,20000,40000`), `--runs` (runs of each command per size, default 1), `--bin` (the
//! binary measured; default the `ipam-guard` cargo builds beside this bench, with release
//! settings), `--hold` (after the last size, print the kubeconfig and keep serving until
//! interrupted).
//!
//! Why a stand-in: a real kube-apiserver holding 440k objects sat at 13.9 GB, its LISTs were cut
//! at its 60 s request timeout and loading it took 27 minutes. What a command
//! costs itself (its CPU, its peak RSS) depends on what the LIST returns, not on who serves it.
//! The stand-in answers what kube-apiserver v1.36 answers to the requests these commands make,
//! over HTTPS and HTTP/1.1 (what kube-rs speaks): discovery (`/apis`, `/apis/GROUP/VERSION`)
//! from the upstream CRDs the e2e suites install, `/version`, the CRDs themselves (as stored:
//! metadata and an `Established` status), and one `resourceVersion=0` LIST per kind, compact
//! JSON with sorted keys, items in key order (namespace, then name), each item with the
//! metadata the API server adds (`creationTimestamp`, `generation`, `managedFields`, `name`,
//! `namespace`, `resourceVersion`, `uid`). The LIST bodies are generated while they stream out,
//! in 64 KiB chunks: the server holds no object. Any other request is answered 404 and named in
//! the output. It is not kube-apiserver: it serves the lists in a fraction of the time (no
//! watch cache, no conversion, no GC), so only the commands' CPU and memory carry over, and
//! their wall time is the floor a quick API server would give.

#[path = "../crates/e2e/tests/e2e/mod.rs"]
mod e2e;

use std::convert::Infallible;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

const NS: &str = "scale";
const SMALL: &str = "trial-guard";
const PER_POOL: usize = 10;
const GROUP: &str = "ipam.cluster.x-k8s.io";
/// When every object was created, as the API server stamps it (no rule here reads the age of an
/// address or a pool; H1 reads a claim's, and there are no claims).
const CREATED: &str = "2026-11-25T06:00:00Z";
const CHUNK: usize = 64 * 1024;

// === What is served ===

/// One kind a CRD serves, as discovery and the LISTs need it.
struct Served {
    group: String,
    plural: String,
    singular: String,
    kind: String,
    list_kind: String,
    namespaced: bool,
    short_names: Value,
    categories: Value,
    /// Versions served, each with whether it has a status subresource.
    versions: Vec<(String, bool)>,
}

/// The stand-in's fixed answers: discovery, `/version`, the CRD list.
struct Api {
    kinds: Vec<Served>,
    crd_list: Bytes,
    /// Pools in `scale` now, and their indices in name order (`pool-1` < `pool-10` < `pool-2`).
    data: Mutex<Arc<Vec<u32>>>,
    /// Every LIST served: path, bytes, seconds from request to last byte.
    log: Mutex<Vec<(String, usize, f64)>>,
    /// Requests answered 404, and lists asked for other than as `resourceVersion=0`.
    unknown: Mutex<Vec<String>>,
}

impl Api {
    fn new() -> Api {
        let crds = e2e::crds().expect("the upstream CRDs (../shared/fixtures/crds)");
        let mut kinds = Vec::new();
        let mut items = Vec::new();
        for (n, c) in crds.iter().enumerate() {
            let mut crd: Value = serde_yaml_ng::from_str(&c.text).expect("a CRD");
            let spec = crd["spec"].clone();
            let names = spec["names"].clone();
            let versions: Vec<(String, bool)> = spec["versions"]
                .as_array()
                .expect("versions")
                .iter()
                .filter(|v| v["served"] == true)
                .map(|v| {
                    let status = v["subresources"]["status"].is_object();
                    (v["name"].as_str().unwrap().to_string(), status)
                })
                .collect();
            let storage = spec["versions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["storage"] == true)
                .map(|v| v["name"].clone())
                .unwrap_or(Value::Null);
            let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
            kinds.push(Served {
                group: s(&spec["group"]),
                plural: s(&names["plural"]),
                singular: s(&names["singular"]),
                kind: s(&names["kind"]),
                list_kind: s(&names["listKind"]),
                namespaced: spec["scope"] == "Namespaced",
                short_names: names.get("shortNames").cloned().unwrap_or(json!([])),
                categories: names.get("categories").cloned().unwrap_or(json!([])),
                versions,
            });
            let condition = |ty: &str, reason: &str| {
                json!({"lastTransitionTime": CREATED, "message": "", "reason": reason,
                       "status": "True", "type": ty})
            };
            crd["metadata"]["creationTimestamp"] = json!(CREATED);
            crd["metadata"]["generation"] = json!(1);
            crd["metadata"]["resourceVersion"] = json!((200 + n).to_string());
            crd["metadata"]["uid"] = json!(uid(1_000_000_000 + n));
            crd["spec"]["conversion"] = json!({"strategy": "None"});
            crd["status"] = json!({
                "acceptedNames": names.clone(),
                "conditions": [condition("NamesAccepted", "NoConflicts"),
                               condition("Established", "InitialNamesAccepted")],
                "storedVersions": [storage],
            });
            items.push(crd);
        }
        let crd_list = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "items": items,
            "kind": "CustomResourceDefinitionList", "metadata": {"resourceVersion": "1000"}
        });
        Api {
            kinds,
            crd_list: Bytes::from(serde_json::to_vec(&crd_list).unwrap()),
            data: Mutex::new(Arc::new(Vec::new())),
            log: Mutex::new(Vec::new()),
            unknown: Mutex::new(Vec::new()),
        }
    }

    /// From now on `scale` holds `pools` pools of 10 addresses each.
    fn resize(&self, pools: usize) {
        let mut order: Vec<u32> = (0..pools as u32).collect();
        order.sort_by_cached_key(|i| i.to_string());
        *self.data.lock().unwrap() = Arc::new(order);
    }

    fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for k in &self.kinds {
            let i = match out.iter().position(|(g, _)| *g == k.group) {
                Some(i) => i,
                None => {
                    out.push((k.group.clone(), Vec::new()));
                    out.len() - 1
                }
            };
            for (v, _) in &k.versions {
                if !out[i].1.contains(v) {
                    out[i].1.push(v.clone());
                }
            }
        }
        // Newest first, as kube-apiserver orders a group's versions (its preferred first).
        for (_, vs) in &mut out {
            vs.sort_by_key(|v| std::cmp::Reverse(version_rank(v)));
        }
        out
    }
}

/// Kubernetes version priority: GA over beta over alpha, then the higher numbers.
fn version_rank(v: &str) -> (u8, u32, u32) {
    let rest = v.trim_start_matches('v');
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (level, minor) = if let Some(m) = tail.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = tail.strip_prefix("alpha") {
        (0, m)
    } else {
        (2, "0")
    };
    (level, major, minor.parse().unwrap_or(0))
}

/// A uid as the API server writes one (a random-looking UUID), from the object's number.
fn uid(n: usize) -> String {
    let h = (n as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let l = h.rotate_left(29) ^ 0x5851_F42D_4C95_7F2D;
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        h & 0xfff,
        l >> 52,
        l & 0xffff_ffff_ffff
    )
}

/// The subnet of pool `i`, as `load_pools_from` lays them out.
fn net(i: usize) -> String {
    let block = i / 250;
    format!("{}.{}.{}", 10 + block / 150, 100 + block % 150, i % 250)
}

/// `metadata` as the API server returns it, `managedFields` of one create by kube-rs included.
fn write_meta(out: &mut String, api_version: &str, name: &str, ns: &str, n: usize, fields: &str) {
    let _ = write!(
        out,
        r#""metadata":{{"creationTimestamp":"{CREATED}","generation":1,"managedFields":[{{"apiVersion":"{api_version}","fieldsType":"FieldsV1","fieldsV1":{{"f:spec":{fields}}},"manager":"unknown","operation":"Update","time":"{CREATED}"}}],"name":"{name}","namespace":"{ns}","resourceVersion":"{}","uid":"{}"}}"#,
        1000 + n,
        uid(n)
    );
}

fn write_address(
    out: &mut String,
    api_version: &str,
    ns: &str,
    name: &str,
    address: &str,
    pool: &str,
    n: usize,
) {
    let gateway = format!("{}.1", address.rsplit_once('.').unwrap().0);
    let _ = write!(out, r#"{{"apiVersion":"{api_version}","kind":"IPAddress","#);
    write_meta(
        out,
        api_version,
        name,
        ns,
        n,
        r#"{".":{},"f:address":{},"f:claimRef":{".":{},"f:name":{}},"f:gateway":{},"f:poolRef":{".":{},"f:apiGroup":{},"f:kind":{},"f:name":{}},"f:prefix":{}}"#,
    );
    let _ = write!(
        out,
        r#","spec":{{"address":"{address}","claimRef":{{"name":"{name}"}},"gateway":"{gateway}","poolRef":{{"apiGroup":"{GROUP}","kind":"InClusterIPPool","name":"{pool}"}},"prefix":24}}}}"#
    );
}

fn write_pool(
    out: &mut String,
    api_version: &str,
    ns: &str,
    name: &str,
    range: &str,
    gateway: &str,
    n: usize,
) {
    let _ = write!(
        out,
        r#"{{"apiVersion":"{api_version}","kind":"InClusterIPPool","#
    );
    write_meta(
        out,
        api_version,
        name,
        ns,
        n,
        r#"{".":{},"f:addresses":{},"f:gateway":{},"f:prefix":{}}"#,
    );
    let _ = write!(
        out,
        r#","spec":{{"addresses":["{range}"],"gateway":"{gateway}","prefix":24}}}}"#
    );
}

#[derive(Clone, Copy, PartialEq)]
enum Which {
    Addresses,
    Pools,
    Empty,
}

/// One LIST body, written item by item as it is sent: `scale` in name order, then `trial-guard`.
struct ListBody {
    which: Which,
    api_version: String,
    list_kind: String,
    order: Arc<Vec<u32>>,
    next: usize,
    total: usize,
    started: Instant,
    sent: usize,
    path: String,
    api: Arc<Api>,
    done: bool,
}

/// Item `k` of a LIST of `which` in version `av`, `order` the pools of `scale` in name order.
fn write_item(out: &mut String, which: Which, av: &str, order: &[u32], k: usize) {
    let in_scale = match which {
        Which::Addresses => order.len() * PER_POOL,
        _ => order.len(),
    };
    if k >= in_scale {
        let s = k - in_scale;
        match which {
            Which::Addresses => {
                let name = ["a", "b", "c"][s];
                let addr = format!("192.168.77.{}", 10 + s);
                write_address(out, av, SMALL, name, &addr, "small", 2_000_000 + s);
            }
            _ => write_pool(
                out,
                av,
                SMALL,
                "small",
                "192.168.77.10-192.168.77.20",
                "192.168.77.1",
                2_000_010,
            ),
        }
        return;
    }
    match which {
        Which::Addresses => {
            let i = order[k / PER_POOL] as usize;
            let j = k % PER_POOL;
            let net = net(i);
            let name = format!("addr-{i}-{j}");
            let addr = format!("{net}.{}", 10 + j);
            write_address(
                out,
                av,
                NS,
                &name,
                &addr,
                &format!("pool-{i}"),
                i * 11 + j + 1,
            );
        }
        _ => {
            let i = order[k] as usize;
            let net = net(i);
            let range = format!("{net}.10-{net}.{}", 10 + PER_POOL);
            write_pool(
                out,
                av,
                NS,
                &format!("pool-{i}"),
                &range,
                &format!("{net}.1"),
                i * 11,
            );
        }
    }
}

impl Iterator for ListBody {
    type Item = Result<Frame<Bytes>, Infallible>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut out = String::with_capacity(CHUNK + 4096);
        if self.next == 0 {
            let _ = write!(out, r#"{{"apiVersion":"{}","items":["#, self.api_version);
        }
        while out.len() < CHUNK && self.next < self.total {
            if self.next > 0 {
                out.push(',');
            }
            let (which, av) = (self.which, self.api_version.as_str());
            write_item(&mut out, which, av, &self.order, self.next);
            self.next += 1;
        }
        if self.next == self.total {
            let _ = write!(
                out,
                r#"],"kind":"{}","metadata":{{"continue":"","resourceVersion":"3000000"}}}}"#,
                self.list_kind
            );
            self.done = true;
            self.next += 1;
        }
        self.sent += out.len();
        if self.done {
            let secs = self.started.elapsed().as_secs_f64();
            let entry = (self.path.clone(), self.sent, secs);
            self.api.log.lock().unwrap().push(entry);
        }
        Some(Ok(Frame::data(Bytes::from(out))))
    }
}

// === The server ===

type Body = BoxBody<Bytes, Infallible>;

fn json_response(status: u16, body: Bytes) -> http::Response<Body> {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(body).boxed())
        .unwrap()
}

fn value(v: &Value) -> http::Response<Body> {
    json_response(200, Bytes::from(serde_json::to_vec(v).unwrap()))
}

fn not_found() -> http::Response<Body> {
    let mut r = value(
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": "the server could not find the requested resource",
        "reason": "NotFound", "details": {}, "code": 404}),
    );
    *r.status_mut() = http::StatusCode::NOT_FOUND;
    r
}

fn answer(api: &Arc<Api>, path: &str, query: &str) -> http::Response<Body> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["version"] => value(&json!({
            "major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36",
            "minCompatibilityMajor": "1", "minCompatibilityMinor": "35", "gitVersion": "v1.36.2",
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": CREATED, "goVersion": "go1.25.5", "compiler": "gc",
            "platform": "linux/amd64"
        })),
        ["apis"] => {
            let groups: Vec<Value> = api
                .groups()
                .iter()
                .map(|(g, vs)| group_json(g, vs))
                .collect();
            value(&json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["apis", group] => match api.groups().iter().find(|(g, _)| g == group) {
            Some((g, vs)) => value(&group_json(g, vs)),
            None => not_found(),
        },
        ["apis", group, version] => {
            let mut resources = Vec::new();
            for k in api.kinds.iter().filter(|k| k.group == *group) {
                let Some((_, status)) = k.versions.iter().find(|(v, _)| v == version) else {
                    continue;
                };
                resources.push(json!({
                    "name": k.plural, "singularName": k.singular, "namespaced": k.namespaced,
                    "kind": k.kind, "verbs": ["delete", "deletecollection", "get", "list", "patch",
                    "create", "update", "watch"], "shortNames": k.short_names,
                    "categories": k.categories, "storageVersionHash": "AAAAAAAAAAA="
                }));
                if *status {
                    resources.push(json!({
                        "name": format!("{}/status", k.plural), "singularName": "",
                        "namespaced": k.namespaced, "kind": k.kind,
                        "verbs": ["get", "patch", "update"]
                    }));
                }
            }
            if resources.is_empty() {
                return not_found();
            }
            value(&json!({"kind": "APIResourceList", "apiVersion": "v1",
                          "groupVersion": format!("{group}/{version}"), "resources": resources}))
        }
        ["apis", "apiextensions.k8s.io", "v1", "customresourcedefinitions"] => {
            json_response(200, api.crd_list.clone())
        }
        ["apis", group, version, plural] => {
            let Some(k) = api.kinds.iter().find(|k| {
                k.group == *group
                    && k.plural == *plural
                    && k.versions.iter().any(|(v, _)| v == version)
            }) else {
                return not_found();
            };
            if !query.split('&').any(|q| q == "resourceVersion=0") || query.contains("watch") {
                api.unknown.lock().unwrap().push(format!("{path}?{query}"));
            }
            let which = match (k.group.as_str(), k.plural.as_str()) {
                (GROUP, "ipaddresses") => Which::Addresses,
                (GROUP, "inclusterippools") => Which::Pools,
                _ => Which::Empty,
            };
            let order = api.data.lock().unwrap().clone();
            let total = match which {
                Which::Addresses => order.len() * PER_POOL + 3,
                Which::Pools => order.len() + 1,
                Which::Empty => 0,
            };
            let body = ListBody {
                which,
                api_version: format!("{group}/{version}"),
                list_kind: k.list_kind.clone(),
                order,
                next: 0,
                total,
                started: Instant::now(),
                sent: 0,
                path: path.to_string(),
                api: api.clone(),
                done: false,
            };
            http::Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(StreamBody::new(futures::stream::iter(body)).boxed())
                .unwrap()
        }
        _ => {
            api.unknown.lock().unwrap().push(format!("{path}?{query}"));
            not_found()
        }
    }
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": vs,
           "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// Serves `api` over HTTPS (a fresh self-signed certificate) on a loopback port; the port.
async fn serve(api: Arc<Api>) -> u16 {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = key.cert.der().clone();
    let private = rustls_pki_types::PrivateKeyDer::Pkcs8(key.signing_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert], private)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, api) = (acceptor.clone(), api.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let path = req.uri().path().to_string();
                        let query = req.uri().query().unwrap_or_default().to_string();
                        let api = api.clone();
                        async move { Ok::<_, Infallible>(answer(&api, &path, &query)) }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    port
}

// === Measuring ===

/// One whole process under `/usr/bin/time -v`, its stdout to `out`.
struct Timed {
    wall: f64,
    cpu: f64,
    rss_mib: f64,
    code: i32,
    /// The command's own last line on stderr (its summary), before `time`'s report.
    said: String,
}

fn timed(args: &[&str], out: &Path) -> Timed {
    let run = Command::new("/usr/bin/time")
        .arg("-v")
        .args(args)
        .stdout(std::fs::File::create(out).expect("stdout file"))
        .stderr(Stdio::piped())
        .output()
        .expect("/usr/bin/time");
    let err = String::from_utf8_lossy(&run.stderr);
    let e2e::measure::TimeV { wall, cpu, rss_mib } = e2e::measure::time_v(&err);
    let said = err
        .lines()
        .take_while(|l| !l.trim_start().starts_with("Command being timed"))
        .filter(|l| !l.trim().is_empty())
        .last()
        .unwrap_or_default()
        .to_string();
    Timed {
        wall,
        cpu,
        rss_mib,
        code: run.status.code().unwrap_or(-1),
        said,
    }
}

/// Bytes the same list would take pretty-printed, as kube-apiserver answers curl (its user
/// agent): what curl's LIST sizes from a real API server count. Items sit two levels deep.
fn pretty_bytes(compact_item: &str) -> usize {
    let v: Value = serde_json::from_str(compact_item).unwrap();
    let pretty = serde_json::to_string_pretty(&v).unwrap();
    pretty.len() + 4 * pretty.lines().count() + 2
}

/// One raw LIST of each served kind (its newest served version) with curl: seconds in all,
/// and the lists over 1 MB (seconds, bytes).
fn raw_lists(api: &Api, port: u16) -> (f64, Vec<String>) {
    let mut total = 0.0;
    let mut parts = Vec::new();
    for k in &api.kinds {
        let Some((version, _)) = k.versions.iter().max_by_key(|(v, _)| version_rank(v)) else {
            continue;
        };
        let url = format!(
            "https://127.0.0.1:{port}/apis/{}/{version}/{}?resourceVersion=0",
            k.group, k.plural
        );
        let (secs, bytes) = e2e::measure::curl_get(&url);
        total += secs;
        if bytes > 1e6 {
            parts.push(format!("{} {secs:.2} s, {:.0} MB", k.plural, bytes / 1e6));
        }
    }
    (total, parts)
}

fn main() {
    let sizes: Vec<usize> = e2e::measure::flag("--pools")
        .unwrap_or_else(|| "10000,20000,40000".to_string())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let runs: usize = e2e::measure::flag("--runs")
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let bin =
        e2e::measure::flag("--bin").unwrap_or_else(|| env!("CARGO_BIN_EXE_ipam-guard").to_string());
    let hold = std::env::args().any(|a| a == "--hold");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let api = Arc::new(Api::new());
    let port = rt.block_on(serve(api.clone()));
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\n\
             clusters:\n- name: s\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\n\
             users:\n- name: s\n  user:\n    token: {}\n\
             contexts:\n- name: s\n  context:\n    cluster: s\n    user: s\n\
             current-context: s\n",
            e2e::TOKEN
        ),
    )
    .unwrap();
    let file = dir.path().join("pool.yaml");
    let pool =
        e2e::api::in_cluster_pool(SMALL, "new", "192.168.78.10-192.168.78.20", "192.168.78.1");
    std::fs::write(&file, serde_json::to_string(&pool).unwrap()).unwrap();
    let out = dir.path().join("stdout");
    let (kc, file) = (kc.to_str().unwrap(), file.to_str().unwrap());
    let commands: [(&str, Vec<&str>); 4] = [
        ("audit", vec!["audit", "--kubeconfig", kc]),
        (
            "audit -n trial-guard",
            vec!["audit", "--kubeconfig", kc, "-n", SMALL],
        ),
        ("usage", vec!["usage", "--kubeconfig", kc]),
        (
            "check --kubeconfig pool.yaml",
            vec!["check", "--kubeconfig", kc, file],
        ),
    ];
    println!("stand-in list server on 127.0.0.1:{port}; binary {bin}; {runs} run(s) per size");
    for pools in sizes {
        api.resize(pools);
        let addresses = pools * PER_POOL;
        let mut sample = String::new();
        write_item(
            &mut sample,
            Which::Addresses,
            &format!("{GROUP}/v1beta2"),
            &[0],
            0,
        );
        let pretty_mb = (pretty_bytes(&sample) * addresses) as f64 / 1e6;
        let (raw, parts) = raw_lists(&api, port);
        println!(
            "\n## {pools} pools + {addresses} IPAddresses\n\nraw LIST per kind (curl): {raw:.2} s ({}); \
             pretty-printed, as kube-apiserver answers curl, the IPAddresses would be ≈ {pretty_mb:.0} MB; load {}\n",
            parts.join("; "),
            e2e::measure::load()
        );
        println!("| run | command | wall | cpu (user + sys) | peak RSS | exit | its LISTs, served in | load |");
        println!("|---|---|---|---|---|---|---|---|");
        for run in 0..runs {
            for (name, args) in &commands {
                let before = api.log.lock().unwrap().len();
                let mut all = vec![bin.as_str()];
                all.extend(args.iter().copied());
                let t = timed(&all, &out);
                let lists: Vec<String> = api.log.lock().unwrap()[before..]
                    .iter()
                    .filter(|(_, bytes, _)| *bytes > 1_000_000)
                    .map(|(path, bytes, secs)| {
                        let plural = path.rsplit('/').next().unwrap_or_default();
                        format!("{plural} {secs:.2} s ({:.0} MB)", *bytes as f64 / 1e6)
                    })
                    .collect();
                println!(
                    "| {run} | `{name}` | {:.1} s | {:.1} s | {:.0} MiB | {} | {} | {} |",
                    t.wall,
                    t.cpu,
                    t.rss_mib,
                    t.code,
                    lists.join(", "),
                    e2e::measure::load()
                );
                if run == 0 {
                    let size = std::fs::metadata(&out).map_or(0, |m| m.len());
                    eprintln!("  {name}: stdout {size} bytes; stderr: {}", t.said);
                }
            }
        }
    }
    let unknown = api.unknown.lock().unwrap().clone();
    if !unknown.is_empty() {
        println!("\nrequests the stand-in does not answer as a list: {unknown:?}");
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap_or_default();
    println!("\nthe stand-in's own peak RSS: {hwm}");
    if hold {
        println!("holding: --kubeconfig {kc}");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}
