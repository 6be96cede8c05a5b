//! Shared by the benches and `examples/loadgen.rs` (which includes this file by path): the cluster
//! state `examples/gen-state.rs` generates, loaded in memory the way `serve --state-from` loads it,
//! and AdmissionReview bodies edited from the reviews a real API server sent
//! (`tests/fixtures/reviews/v1.36/`, see its README) to fit it.
//!
//! Every body keeps the capture's envelope and metadata (managedFields, userInfo, options): a real
//! API server sends those, and decoding them is part of the cost. Only names, namespaces, uids,
//! annotations and specs are replaced.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use ipam_guard::address::{parse_entry, Family, Forms, Ip, IpRange};
use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::model::{self, ObjKey, PoolProj};
use serde_json::{json, Value};

// The one generator of synthetic state; its `main` is unused here.
#[allow(dead_code)]
#[path = "../../examples/gen-state.rs"]
mod gen_state;

pub use gen_state::Format;

/// Every review body carries this uid, so a load generator can stamp a fresh one in place.
pub const UID_PLACEHOLDER: &str = "00000000-0000-4000-8000-000000000000";

/// The generated objects alone, by (namespace, file) as gen-state writes them.
pub fn objects(
    pools: usize,
    addresses: usize,
    namespaces: usize,
) -> BTreeMap<(String, &'static str), Vec<Value>> {
    gen_state::generate(pools, addresses, namespaces).expect("gen-state refused")
}

/// The generated objects plus the claims the address creates fulfil, and the index built from them.
pub struct State {
    /// (namespace, file) → objects, as gen-state writes them.
    pub files: BTreeMap<(String, &'static str), Vec<Value>>,
    /// Claims without an address yet, for the `address_create` bodies (A6 finds them, A7 passes).
    pub extra_claims: Vec<Value>,
    pub index: Index,
    pub pools: usize,
    pub addresses: usize,
}

impl State {
    /// Generates `pools` pools and `addresses` addresses (each with its claim) over `namespaces`
    /// namespaces, plus `variants` spare claims per body kind, and indexes them all.
    pub fn generate(pools: usize, addresses: usize, namespaces: usize, variants: usize) -> State {
        let files = objects(pools, addresses, namespaces);
        let mut state = State {
            files,
            extra_claims: Vec::new(),
            index: Index::new(),
            pools,
            addresses,
        };
        for doc in state.files.values().flatten() {
            upsert(&mut state.index, doc);
        }
        let targets = state.pick_pools(variants);
        for (n, pool) in targets[Case::AddressCreate.slot()].iter().enumerate() {
            state
                .extra_claims
                .push(claim(pool, &format!("lg-claim-{n}")));
        }
        for (n, pool) in targets[Case::AddressCreateDuplicate.slot()]
            .iter()
            .enumerate()
        {
            state.extra_claims.push(claim(pool, &format!("lg-dup-{n}")));
        }
        for doc in &state.extra_claims {
            upsert(&mut state.index, doc);
        }
        state
    }

    /// Objects held, by kind: what a memory figure divides by.
    pub fn object_count(&self) -> usize {
        self.index.len()
    }

    /// Writes the state for `ipam-guard serve --state-from DIR` (the generator's own files plus
    /// `loadgen-claims.yaml`), so an external server judges the bodies as the in-process one does.
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        for ((namespace, what), docs) in &self.files {
            let (sub, name) = if namespace.is_empty() {
                (dir.to_path_buf(), format!("global-{what}"))
            } else {
                (dir.join(namespace), what.to_string())
            };
            std::fs::create_dir_all(&sub)?;
            gen_state::write(&sub, &name, Format::Yaml, docs)?;
        }
        gen_state::write(dir, "loadgen-claims", Format::Yaml, &self.extra_claims)
    }

    /// `per_case` namespaced pools for each body kind, no pool used twice: an update admitted for
    /// one pool (it stays pending) must not change what another body is judged against.
    fn pick_pools(&self, per_case: usize) -> Vec<Vec<PoolDoc>> {
        let mut out = vec![Vec::new(); Case::ALL.len()];
        if per_case == 0 {
            return out;
        }
        let candidates: Vec<&Value> = self
            .files
            .iter()
            .filter(|((ns, what), _)| !ns.is_empty() && *what == "pools")
            .flat_map(|(_, docs)| docs)
            .filter(|d| d["kind"] == "InClusterIPPool")
            .collect();
        // The spec update moves an `a-b` entry; gen-state writes half the pools that way.
        let ranged: Vec<&Value> = candidates
            .iter()
            .copied()
            .filter(|d| {
                d["spec"]["addresses"][0]
                    .as_str()
                    .is_some_and(|e| e.contains('-'))
            })
            .collect();
        let mut used = HashSet::new();
        for case in Case::ALL {
            let list = if case == Case::PoolUpdateSpec {
                &ranged
            } else {
                &candidates
            };
            // Spread over the whole state (families, spaces, namespaces), not its first pools.
            let step = (list.len() / (per_case * Case::ALL.len())).max(1);
            let picked: Vec<PoolDoc> = list
                .iter()
                .skip(case.slot())
                .step_by(step)
                .filter(|d| used.insert(d["metadata"]["name"].as_str().unwrap()))
                .take(per_case)
                .map(|d| self.pool_doc(d))
                .collect();
            assert_eq!(
                picked.len(),
                per_case,
                "not enough namespaced pools for {per_case} {} bodies: generate more pools",
                case.name()
            );
            out[case.slot()] = picked;
        }
        out
    }

    fn pool_doc(&self, doc: &Value) -> PoolDoc {
        let key = ObjKey::new(
            Kind::InClusterIPPool,
            doc["metadata"]["namespace"].as_str(),
            doc["metadata"]["name"].as_str().unwrap(),
        );
        let proj = self
            .index
            .pool(&key)
            .expect("generated pool indexed")
            .clone();
        PoolDoc {
            doc: doc.clone(),
            proj,
        }
    }

    /// The generated object of an address or pool, by key.
    fn doc(&self, key: &ObjKey, file: &str) -> &Value {
        let ns = key.namespace.as_deref().unwrap_or_default().to_string();
        self.files[&(ns, file_name(file))]
            .iter()
            .find(|d| d["metadata"]["name"] == *key.name)
            .expect("generated object")
    }

    /// The review bodies: `variants` of each case, each on its own pools and names.
    pub fn bodies(&self, variants: usize) -> Vec<Body> {
        let targets = self.pick_pools(variants);
        let mut out = Vec::new();
        for case in Case::ALL {
            for (n, pool) in targets[case.slot()].iter().enumerate() {
                let review = self.review(case, n, pool);
                let bytes = serde_json::to_vec(&review).unwrap();
                let uid_at = find(&bytes, UID_PLACEHOLDER.as_bytes()).expect("uid placeholder");
                out.push(Body {
                    case,
                    bytes,
                    uid_at,
                });
            }
        }
        out
    }

    fn review(&self, case: Case, n: usize, pool: &PoolDoc) -> Value {
        let ns = pool.namespace();
        let pname = pool.name();
        match case {
            Case::ClaimCreate => {
                let name = format!("lg-new-claim-{n}");
                let mut r = envelope("ipaddressclaim-create.json", ns, &name);
                let o = &mut r["request"]["object"];
                set_name(o, ns, &name);
                o["spec"] = json!({
                    "clusterName": ns,
                    "poolRef": {"apiGroup": GROUP, "kind": "InClusterIPPool", "name": pname},
                });
                r
            }
            Case::AddressCreate | Case::AddressCreateDuplicate => {
                let (name, claim, ip) = if case == Case::AddressCreate {
                    let ip = self.free_ip(&pool.proj);
                    (format!("lg-addr-{n}"), format!("lg-claim-{n}"), ip)
                } else {
                    let held = self.index.addresses_for_pool(&pool.proj.key);
                    let ip = held
                        .first()
                        .and_then(|a| a.ip)
                        .expect("pool holds addresses");
                    (format!("lg-dup-addr-{n}"), format!("lg-dup-{n}"), ip)
                };
                let mut r = envelope("ipaddress-create.json", ns, &name);
                let o = &mut r["request"]["object"];
                set_name(o, ns, &name);
                o["spec"] = json!({
                    "address": text(ip),
                    "prefix": pool.proj.prefix,
                    "gateway": pool.proj.gateway.map(text),
                    "claimRef": {"name": claim},
                    "poolRef": {"apiGroup": GROUP, "kind": "InClusterIPPool", "name": pname},
                });
                r
            }
            Case::PoolCreate => {
                let name = format!("lg-pool-{n}");
                assert!(n < 256, "one /24 of 172.16.0.0/16 per pool create");
                let spec = json!({
                    "addresses": [format!("172.16.{n}.10-172.16.{n}.20"), format!("172.16.{n}.32/28")],
                    "gateway": format!("172.16.{n}.1"),
                    "prefix": 24,
                });
                let mut r = envelope("inclusterippool-create.json", ns, &name);
                let o = &mut r["request"]["object"];
                set_name(o, ns, &name);
                o["spec"] = spec;
                r
            }
            Case::PoolCreateOverlap => {
                // A few addresses of a generated pool, in its address space: P10 names it.
                let name = format!("lg-overlap-{n}");
                let first = pool.proj.allocatable.ranges()[0].start;
                let fam = pool.proj.allocatable.family();
                let spec = json!({
                    "addresses": [format!("{}-{}", text(Ip::new(fam, first)), text(Ip::new(fam, first + 4)))],
                    "gateway": pool.proj.gateway.map(text),
                    "prefix": pool.proj.prefix,
                });
                let mut r = envelope("inclusterippool-create.json", ns, &name);
                let o = &mut r["request"]["object"];
                set_name(o, ns, &name);
                copy_annotations(o, &pool.doc);
                o["spec"] = spec;
                r
            }
            Case::PoolDeleteHeld => {
                let mut r = envelope("inclusterippool-delete.json", ns, pname);
                like_state(&mut r["request"]["oldObject"], &pool.doc);
                r
            }
            Case::PoolUpdateSpec => {
                let mut r = envelope("inclusterippool-update-spec.json", ns, pname);
                like_state(&mut r["request"]["oldObject"], &pool.doc);
                like_state(&mut r["request"]["object"], &pool.doc);
                r["request"]["object"]["spec"]["addresses"] = json!(shifted(&pool.doc));
                r
            }
            Case::PoolUpdateLabel => {
                let mut r = envelope("inclusterippool-update-label.json", ns, pname);
                like_state(&mut r["request"]["oldObject"], &pool.doc);
                like_state(&mut r["request"]["object"], &pool.doc);
                r
            }
            Case::AddressUpdateLabel => {
                let held = self.index.addresses_for_pool(&pool.proj.key);
                let a = held.first().expect("pool holds addresses");
                let doc = self.doc(&a.key, "addresses");
                let mut r = envelope("ipaddress-update-label.json", ns, &a.key.name);
                like_state(&mut r["request"]["oldObject"], doc);
                like_state(&mut r["request"]["object"], doc);
                r
            }
        }
    }

    /// The highest allocatable address of `pool` no address object holds.
    fn free_ip(&self, pool: &PoolProj) -> Ip {
        let fam = pool.allocatable.family();
        let last = pool.allocatable.last().expect("pool has addresses").value;
        (0..1024)
            .map(|d| Ip::new(fam, last - d))
            .find(|ip| pool.allocatable.contains(*ip) && self.index.holders(*ip).next().is_none())
            .expect("a free address near the top of the pool")
    }
}

/// A generated pool: its object and its projection.
#[derive(Clone)]
struct PoolDoc {
    doc: Value,
    proj: PoolProj,
}

impl PoolDoc {
    fn namespace(&self) -> &str {
        self.doc["metadata"]["namespace"].as_str().unwrap()
    }
    fn name(&self) -> &str {
        self.doc["metadata"]["name"].as_str().unwrap()
    }
}

/// The kinds of review in the load mix and the benches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Case {
    /// IPAddressClaim CREATE naming a pool that exists (C1–C5). Allowed.
    ClaimCreate,
    /// IPAddress CREATE of a free address of its claim's pool (A6–A9 all read the index). Allowed.
    AddressCreate,
    /// IPAddress CREATE of an address another IPAddress holds. Denied by A9 (422).
    AddressCreateDuplicate,
    /// InClusterIPPool CREATE in free space (P1–P7, P10 finds nothing). Allowed.
    PoolCreate,
    /// InClusterIPPool CREATE over a generated pool of its space. Denied by P10 (422).
    PoolCreateOverlap,
    /// InClusterIPPool DELETE of a pool addresses reference. Denied by P9 (403).
    PoolDeleteHeld,
    /// InClusterIPPool UPDATE moving its range down: P8 walks the pool's addresses, P10 probes the
    /// added part. Allowed.
    PoolUpdateSpec,
    /// InClusterIPPool UPDATE of a label (X5: no spec rule runs). Allowed.
    PoolUpdateLabel,
    /// IPAddress UPDATE of a label. Allowed.
    AddressUpdateLabel,
}

impl Case {
    pub const ALL: [Case; 9] = [
        Case::ClaimCreate,
        Case::AddressCreate,
        Case::AddressCreateDuplicate,
        Case::PoolCreate,
        Case::PoolCreateOverlap,
        Case::PoolDeleteHeld,
        Case::PoolUpdateSpec,
        Case::PoolUpdateLabel,
        Case::AddressUpdateLabel,
    ];

    fn slot(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Case::ClaimCreate => "claim_create",
            Case::AddressCreate => "address_create",
            Case::AddressCreateDuplicate => "address_create_duplicate",
            Case::PoolCreate => "pool_create",
            Case::PoolCreateOverlap => "pool_create_overlap",
            Case::PoolDeleteHeld => "pool_delete_held",
            Case::PoolUpdateSpec => "pool_update_spec",
            Case::PoolUpdateLabel => "pool_update_label",
            Case::AddressUpdateLabel => "address_update_label",
        }
    }

    /// Share of the load mix, in percent: machines come and go (claims, addresses, their label
    /// and finalizer updates); pools change rarely.
    pub fn weight(self) -> u32 {
        match self {
            Case::ClaimCreate | Case::AddressCreate | Case::AddressUpdateLabel => 20,
            Case::PoolUpdateSpec | Case::PoolUpdateLabel => 10,
            Case::AddressCreateDuplicate
            | Case::PoolCreate
            | Case::PoolCreateOverlap
            | Case::PoolDeleteHeld => 5,
        }
    }

    /// The answer a correct server gives: allowed, or the Status code of the denial.
    pub fn expect(self) -> Expect {
        match self {
            Case::AddressCreateDuplicate | Case::PoolCreateOverlap => Expect::Denied(422),
            Case::PoolDeleteHeld => Expect::Denied(403),
            _ => Expect::Allowed,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Allowed,
    Denied(u16),
}

impl Expect {
    /// Whether an AdmissionReview answer (compact JSON, as ipam-guard writes it) says this.
    /// A byte search rather than a parse: the client shares the server's two cores.
    pub fn matches(self, answer: &[u8]) -> bool {
        match self {
            Expect::Allowed => contains(answer, b"\"allowed\":true"),
            Expect::Denied(code) => {
                contains(answer, b"\"allowed\":false")
                    && contains(answer, format!("\"code\":{code}").as_bytes())
            }
        }
    }
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

/// Where `needle` first occurs. Compares only at positions whose first byte matches: a `memcmp`
/// call at every position took a quarter of the load generator's CPU.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, _) = needle.split_first()?;
    let last_start = haystack.len().checked_sub(needle.len())?;
    (0..=last_start)
        .filter(|&i| haystack[i] == first)
        .find(|&i| haystack[i..].starts_with(needle))
}

/// One review body, with the placeholder uid.
#[derive(Clone)]
pub struct Body {
    pub case: Case,
    pub bytes: Vec<u8>,
    /// Offset of `UID_PLACEHOLDER` in `bytes`.
    pub uid_at: usize,
}

/// Judges every body once against `admission` and panics on a wrong answer: the bodies must fit
/// the state before any figure taken with them means something.
pub fn check(bodies: &[Body], admission: &ipam_guard::admission::Admission) {
    let mut seen = HashSet::new();
    for b in bodies {
        let answer = admission.review_now(ipam_guard::admission::Endpoint::Validate, &b.bytes);
        assert!(
            answer.http_status == 200 && b.case.expect().matches(&answer.body),
            "{} answered {} {}",
            b.case.name(),
            answer.http_status,
            String::from_utf8_lossy(&answer.body)
        );
        seen.insert(b.case);
    }
    assert_eq!(seen.len(), Case::ALL.len());
}

// === helpers ===

const GROUP: &str = "ipam.cluster.x-k8s.io";

fn file_name(file: &str) -> &'static str {
    match file {
        "pools" => "pools",
        "claims" => "claims",
        _ => "addresses",
    }
}

fn upsert(index: &mut Index, doc: &Value) {
    let (kind, _) = Kind::from_api_version(
        doc["apiVersion"].as_str().unwrap_or_default(),
        doc["kind"].as_str().unwrap_or_default(),
    )
    .expect("a served kind");
    index.upsert(model::project(kind, doc).expect("an indexed kind"));
}

fn claim(pool: &PoolDoc, name: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1beta2"),
        "kind": "IPAddressClaim",
        "metadata": {"name": name, "namespace": pool.namespace()},
        "spec": {"poolRef": {"apiGroup": GROUP, "kind": "InClusterIPPool", "name": pool.name()}},
    })
}

fn capture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reviews/v1.36")
        .join(name);
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap()
}

fn envelope(capture_name: &str, ns: &str, name: &str) -> Value {
    let mut r = capture(capture_name);
    let req = &mut r["request"];
    req["uid"] = json!(UID_PLACEHOLDER);
    req["namespace"] = json!(ns);
    req["name"] = json!(name);
    r
}

fn set_name(obj: &mut Value, ns: &str, name: &str) {
    obj["metadata"]["name"] = json!(name);
    obj["metadata"]["namespace"] = json!(ns);
}

fn copy_annotations(obj: &mut Value, from: &Value) {
    let meta = obj["metadata"].as_object_mut().unwrap();
    match from["metadata"].get("annotations") {
        Some(a) => {
            meta.insert("annotations".into(), a.clone());
        }
        None => {
            meta.remove("annotations");
        }
    }
}

/// Makes a captured object the generated one: its name, namespace, uid, annotations and spec;
/// the capture's labels, managedFields and timestamps stay.
fn like_state(obj: &mut Value, doc: &Value) {
    let m = &doc["metadata"];
    set_name(
        obj,
        m["namespace"].as_str().unwrap(),
        m["name"].as_str().unwrap(),
    );
    obj["metadata"]["uid"] = m["uid"].clone();
    copy_annotations(obj, doc);
    obj["spec"] = doc["spec"].clone();
}

/// A range entry moved ten addresses down: ten added at the bottom (P10 probes them), ten taken
/// from the top (P8 walks the pool's addresses).
fn shifted(doc: &Value) -> Vec<String> {
    doc["spec"]["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = e.as_str().unwrap();
            let entry = parse_entry(s, Forms::ALL).expect("generated entry").value;
            let r: IpRange = entry.range;
            let (f, a, b) = (entry.family, r.start - 10, r.end - 10);
            format!("{}-{}", text(Ip::new(f, a)), text(Ip::new(f, b)))
        })
        .collect()
}

fn text(ip: Ip) -> String {
    ip.to_std().to_string()
}

/// The family of a generated pool, for labels.
pub fn family_name(f: Family) -> &'static str {
    match f {
        Family::V4 => "v4",
        Family::V6 => "v6",
    }
}
