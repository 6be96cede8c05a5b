//! Helpers the rule tests share: captured reviews, a view built the way the server builds it
//! (objects → `model::project` → `Index`), and a judge that runs `rules::validate`.

use serde_json::{json, Value};

use crate::field::Verdict;
use crate::index::Index;
use crate::kinds::Kind;
use crate::model::{project, Operation, Projection, Request};
use crate::rules::{validate, Ctx, Options};

pub(crate) use crate::model::test_support::fixture;

/// `request.object` of an ecosystem capture (`tests/fixtures/eco/`).
pub(crate) fn eco_object(name: &str) -> Value {
    fixture("eco", name)["request"]["object"].clone()
}

/// `request.oldObject` of an ecosystem capture.
pub(crate) fn eco_old_object(name: &str) -> Value {
    fixture("eco", name)["request"]["oldObject"].clone()
}

/// A view holding `objects`, each projected as the server would.
pub(crate) fn index(objects: &[(Kind, &Value)]) -> Index {
    let mut ix = Index::new();
    for (kind, obj) in objects {
        match project(*kind, obj).expect("projectable") {
            Projection::Pool(p) => {
                ix.upsert_pool(p);
            }
            Projection::Address(a) => {
                ix.upsert_address(a);
            }
            Projection::Claim(c) => {
                ix.upsert_claim(c);
            }
        }
    }
    ix
}

/// `obj` in the address space `space` (SPEC §6).
pub(crate) fn with_space(mut obj: Value, space: &str) -> Value {
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
pub(crate) fn judge(
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
    validate(&req, &Ctx { index: ix, options })
}

pub(crate) fn create(kind: Kind, obj: &Value, ix: &Index) -> Verdict {
    judge(
        kind,
        Operation::Create,
        Some(obj),
        None,
        ix,
        Options::default(),
    )
}

pub(crate) fn create_with(kind: Kind, obj: &Value, ix: &Index, options: Options) -> Verdict {
    judge(kind, Operation::Create, Some(obj), None, ix, options)
}

pub(crate) fn update(kind: Kind, obj: &Value, old: &Value, ix: &Index) -> Verdict {
    judge(
        kind,
        Operation::Update,
        Some(obj),
        Some(old),
        ix,
        Options::default(),
    )
}

pub(crate) fn delete(kind: Kind, old: &Value, ix: &Index) -> Verdict {
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
pub(crate) fn errors(v: &Verdict) -> Vec<String> {
    v.errors.iter().map(ToString::to_string).collect()
}

/// The warnings as kubectl prints them.
pub(crate) fn warnings(v: &Verdict) -> Vec<String> {
    v.warnings.iter().map(ToString::to_string).collect()
}
