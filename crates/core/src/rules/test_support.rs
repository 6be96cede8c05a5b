//! Helpers the rule tests share: captured reviews, a view built the way the server builds it
//! (objects → `model::project` → `Index`), and a judge that runs `rules::validate`.

use serde_json::{json, Value};

use crate::field::Verdict;
use crate::index::Index;
use crate::kinds::{Kind, CAPI_IPAM};
use crate::model::{project, Operation, Request};
use crate::rules::{validate, Ctx, Options, OverlapScope};

pub use crate::model::test_support::fixture;

/// `request.object` of a recorded review (`model::test_support::fixture`).
pub fn eco_object(name: &str) -> Value {
    fixture(name)["request"]["object"].clone()
}

/// `request.oldObject` of a recorded review.
pub fn eco_old_object(name: &str) -> Value {
    fixture(name)["request"]["oldObject"].clone()
}

/// A view holding `objects`, each projected as the server would.
pub fn index(objects: &[(Kind, &Value)]) -> Index {
    let mut ix = Index::new();
    for (kind, obj) in objects {
        ix.upsert(project(*kind, obj).expect("projectable"));
    }
    ix
}

/// `obj` in the address space `space`.
pub fn with_space(mut obj: Value, space: &str) -> Value {
    obj["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": space});
    obj
}

fn version_of(obj: &Value) -> &str {
    obj["apiVersion"]
        .as_str()
        .and_then(|v| v.rsplit_once('/'))
        .map_or("", |(_, v)| v)
}

/// Runs `rules::validate` on one request for `kind`, the version, namespace and name read from
/// the object.
pub fn judge(
    kind: Kind,
    op: Operation,
    obj: Option<&Value>,
    old: Option<&Value>,
    ix: &Index,
    options: Options,
) -> Verdict {
    let o = obj.or(old).unwrap();
    let req = Request {
        operation: op,
        kind,
        version: version_of(o),
        namespace: o["metadata"]["namespace"].as_str(),
        name: o["metadata"]["name"].as_str().unwrap_or_default(),
        object: obj,
        old_object: old,
        dry_run: false,
    };
    validate(
        &req,
        &Ctx {
            index: ix,
            options,
            now: std::time::Instant::now(),
        },
    )
}

pub fn create(kind: Kind, obj: &Value, ix: &Index) -> Verdict {
    judge(
        kind,
        Operation::Create,
        Some(obj),
        None,
        ix,
        Options::default(),
    )
}

pub fn create_with(kind: Kind, obj: &Value, ix: &Index, options: Options) -> Verdict {
    judge(kind, Operation::Create, Some(obj), None, ix, options)
}

pub fn update(kind: Kind, obj: &Value, old: &Value, ix: &Index) -> Verdict {
    judge(
        kind,
        Operation::Update,
        Some(obj),
        Some(old),
        ix,
        Options::default(),
    )
}

pub fn delete(kind: Kind, old: &Value, ix: &Index) -> Verdict {
    judge(
        kind,
        Operation::Delete,
        None,
        Some(old),
        ix,
        Options::default(),
    )
}

/// The denial causes as kubectl prints them.
pub fn errors(v: &Verdict) -> Vec<String> {
    v.errors.iter().map(ToString::to_string).collect()
}

/// The warnings as kubectl prints them.
pub fn warnings(v: &Verdict) -> Vec<String> {
    v.warnings.iter().map(ToString::to_string).collect()
}

// === builders the rule tests share ===

pub fn capture(name: &str) -> Value {
    fixture(name)
}

pub fn meta(ns: Option<&str>, name: &str) -> Value {
    match ns {
        Some(ns) => json!({"name": name, "namespace": ns}),
        None => json!({"name": name}),
    }
}

/// A v1alpha2 pool; `kind` decides whether `ns` is kept.
pub fn pool(kind: Kind, ns: &str, name: &str, spec: Value) -> Value {
    let ns = kind.namespaced().then_some(ns);
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": kind.name(),
        "metadata": meta(ns, name), "spec": spec})
}

pub fn ipool(ns: &str, name: &str, spec: Value) -> Value {
    pool(Kind::InClusterIPPool, ns, name, spec)
}

pub fn gpool(name: &str, spec: Value) -> Value {
    pool(Kind::GlobalInClusterIPPool, "", name, spec)
}

/// A v1beta2 IPAddress referencing an in-cluster pool.
pub fn addr(
    ns: &str,
    name: &str,
    address: &str,
    prefix: i64,
    pool_kind: &str,
    pool: &str,
) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": meta(Some(ns), name),
        "spec": {"address": address, "prefix": prefix, "claimRef": {"name": format!("claim-{name}")},
            "poolRef": {"apiGroup": CAPI_IPAM, "kind": pool_kind, "name": pool}}})
}

pub fn claim(ns: &str, name: &str, pool_kind: &str, pool: &str) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
        "metadata": meta(Some(ns), name),
        "spec": {"poolRef": {"apiGroup": CAPI_IPAM, "kind": pool_kind, "name": pool}}})
}

/// A review's request parts: (kind, operation, object, oldObject).
pub fn review(name: &str) -> (Kind, Operation, Option<Value>, Option<Value>) {
    let r = capture(name);
    let req = &r["request"];
    let kind = Kind::from_group_kind(
        req["kind"]["group"].as_str().unwrap(),
        req["kind"]["kind"].as_str().unwrap(),
    )
    .unwrap();
    let op = Operation::parse(req["operation"].as_str().unwrap()).unwrap();
    let obj = Some(req["object"].clone()).filter(|v| !v.is_null());
    let old = Some(req["oldObject"].clone()).filter(|v| !v.is_null());
    (kind, op, obj, old)
}

pub fn scope(s: OverlapScope) -> Options {
    Options {
        overlap_scope: s,
        ..Options::default()
    }
}

pub const NS: &str = "ns";
