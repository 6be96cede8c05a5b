//! Which requests can matter to ipam-guard at all: for each kind, what an UPDATE can be judged or
//! mutated on and when a DELETE can be refused. The webhook configurations' `matchConditions`
//! (Kubernetes 1.30+) are generated from this table, so the API server does not call ipam-guard
//! for a write no rule can deny, warn about or mutate (a status-like metadata write, a finalizer
//! removal, a label ipam-guard does not read).
//!
//! The same table answers the question in Rust ([`matters`]); the tests check against every
//! validator and mutator that a request the table calls irrelevant gets an empty verdict, and the
//! e2e suite checks that the generated CEL lets every rule's example through on a real API server.
//! A condition may call ipam-guard more often than needed, never less.

use serde_json::{json, Value};

use crate::kinds::{Kind, ADDRESS_SPACE_ANNOTATION, KINDS};
use crate::model::metal3::IP_ADDRESS_ANNOTATION;
use crate::model::paths::meta;
use crate::model::pool::SKIP_DELETE_ANNOTATIONS;
use crate::model::spider::OWNER_APPLICATION_LABEL;
use crate::model::{read, Operation};
use crate::rules::mutate::CLUSTER_NAME_LABEL;
use crate::rules::util::same;

/// A part of an object that some UPDATE rule compares between the stored and the new object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The whole `spec`.
    Spec,
    /// One label, by key.
    Label(&'static str),
    /// One annotation, by key.
    Annotation(&'static str),
    /// One field, by its dotted path (`spec.controlPlaneEndpoint`): for kinds whose spec others
    /// write often (Cluster API's controllers write a Cluster's spec on every upgrade).
    Field(&'static str),
    /// Anything but `metadata`'s bookkeeping (`util::object_changed`): a declared kind's
    /// expressions may read any of the object.
    Object,
}

/// What one kind's rules read on UPDATE and DELETE.
#[derive(Debug, Clone, Copy)]
pub struct Reads {
    /// An UPDATE that changes none of these passes validation (every rule of the kind returns
    /// early on it: the X5 ratchet, and immutability rules that only look at what changed).
    pub update: &'static [Part],
    /// An UPDATE of an object being deleted (deletionTimestamp on either side) passes (P11).
    pub update_passes_while_deleting: bool,
    /// A DELETE of an object carrying one of these annotations passes (P9, MP4, S6).
    pub delete_skipped_by: &'static [&'static str],
    /// The mutating webhook can patch an UPDATE (M2): only claims.
    pub mutates_on_update: bool,
}

const POOL: Reads = Reads {
    update: &[Part::Spec, Part::Annotation(ADDRESS_SPACE_ANNOTATION)],
    update_passes_while_deleting: true,
    delete_skipped_by: &SKIP_DELETE_ANNOTATIONS,
    mutates_on_update: false,
};

const SPEC_ONLY: Reads = Reads {
    update: &[Part::Spec],
    update_passes_while_deleting: false,
    delete_skipped_by: &[],
    mutates_on_update: false,
};

/// The table: what each kind's validator (`rules::for_kind`) and mutator read on UPDATE/DELETE.
pub fn reads(kind: Kind) -> Reads {
    match kind {
        // C4 (spec), C5 (spec.clusterName and the cluster-name label); M2 on update.
        Kind::IPAddressClaim => Reads {
            update: &[Part::Spec, Part::Label(CLUSTER_NAME_LABEL)],
            update_passes_while_deleting: false,
            delete_skipped_by: &[],
            mutates_on_update: true,
        },
        // A10 and the ratcheted A1–A5.
        Kind::IPAddress => SPEC_ONLY,
        // MA3 and the ratcheted MA1–MA2; MA5 (the ipAddress annotation).
        Kind::Metal3IPAddress => Reads {
            update: &[Part::Spec, Part::Annotation(IP_ADDRESS_ANNOTATION)],
            ..SPEC_ONLY
        },
        // P1–P8/P10 (MP1–MP5, PP1–PP7) on a spec change, P10 on an address-space move, P11.
        Kind::InClusterIPPool
        | Kind::GlobalInClusterIPPool
        | Kind::InClusterPrefixPool
        | Kind::GlobalInClusterPrefixPool
        | Kind::Metal3IPPool => POOL,
        // As the other pools (S1–S9), and S8 reads the owner-application label: a pool that
        // gains or loses it is judged again.
        Kind::SpiderIPPool => Reads {
            update: &[
                Part::Spec,
                Part::Annotation(ADDRESS_SPACE_ANNOTATION),
                Part::Label(OWNER_APPLICATION_LABEL),
            ],
            ..POOL
        },
        // S1–S5, S9–S11 read the spec; P10 the address space.
        Kind::SpiderSubnet => POOL,
        // MC3 (spec), MC4 (the ipAddress annotation).
        Kind::Metal3IPClaim => Reads {
            update: &[Part::Spec, Part::Annotation(IP_ADDRESS_ANNOTATION)],
            update_passes_while_deleting: false,
            delete_skipped_by: &[],
            mutates_on_update: false,
        },
        // V1 reads spec.network (or spec.template.spec.network) only; SA3 the address space of
        // a machine's static addresses too.
        Kind::VSphereMachine => Reads {
            update: &[Part::Spec, Part::Annotation(ADDRESS_SPACE_ANNOTATION)],
            ..SPEC_ONLY
        },
        Kind::VSphereMachineTemplate => SPEC_ONLY,
        // RI1-RI3 and RI6 on a spec change or an address-space move; one on its way out passes.
        Kind::SpiderReservedIP => Reads {
            update: &[Part::Spec, Part::Annotation(ADDRESS_SPACE_ANNOTATION)],
            update_passes_while_deleting: true,
            delete_skipped_by: &[],
            mutates_on_update: false,
        },
        // MD1 reads spec.metaData and spec.networkData only.
        Kind::Metal3DataTemplate => SPEC_ONLY,
        // CP1, CP2, CP5: the endpoint, the networks and the address space, nothing else of a
        // Cluster's (or an infrastructure cluster's) spec; one on its way out passes (its
        // finalizers must come off).
        // As the other pools, but its expressions may read any field (docs/kinds.md).
        Kind::Declared(_) => Reads {
            update: &[Part::Object],
            ..POOL
        },
        Kind::Cluster | Kind::VSphereCluster | Kind::Metal3Cluster => Reads {
            update: &[
                Part::Field("spec.controlPlaneEndpoint"),
                Part::Field("spec.clusterNetwork"),
                Part::Annotation(ADDRESS_SPACE_ANNOTATION),
            ],
            update_passes_while_deleting: true,
            delete_skipped_by: &[],
            mutates_on_update: false,
        },
    }
}

// === impl Rust ===

fn changed(part: Part, obj: &Value, old: &Value) -> bool {
    match part {
        Part::Spec => !same(obj.get("spec"), old.get("spec")),
        Part::Object => crate::rules::util::object_changed(obj, old),
        Part::Field(path) => !same(field_at(obj, path), field_at(old, path)),
        Part::Label(k) => read::entry(obj, meta::LABELS, k) != read::entry(old, meta::LABELS, k),
        Part::Annotation(k) => {
            read::entry(obj, meta::ANNOTATIONS, k) != read::entry(old, meta::ANNOTATIONS, k)
        }
    }
}

/// The value at a dotted path (`spec.clusterNetwork`), if there.
pub(crate) fn field_at<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(obj, |o, k| o.get(k))
}

fn deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

fn has_annotation(obj: &Value, key: &str) -> bool {
    read::entry(obj, meta::ANNOTATIONS, key).is_some_and(Value::is_string)
}

/// Whether the validating webhook can say anything about this request (deny, warn or allow
/// with a finding); `obj` is the new object (UPDATE), `old` the stored one (UPDATE, DELETE).
pub fn validation_matters(kind: Kind, op: Operation, obj: &Value, old: &Value) -> bool {
    let r = reads(kind);
    match op {
        Operation::Update => {
            if r.update_passes_while_deleting && (deleting(obj) || deleting(old)) {
                return false;
            }
            r.update.iter().any(|p| changed(*p, obj, old))
        }
        Operation::Delete => !r.delete_skipped_by.iter().any(|a| has_annotation(old, a)),
        Operation::Create | Operation::Connect => true,
    }
}

/// Whether the mutating webhook can patch or warn about this request.
pub fn mutation_matters(kind: Kind, op: Operation, obj: &Value) -> bool {
    match op {
        Operation::Update => {
            reads(kind).mutates_on_update && {
                let cluster = obj
                    .pointer("/spec/clusterName")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty());
                cluster && read::entry(obj, meta::LABELS, CLUSTER_NAME_LABEL).is_none()
            }
        }
        _ => true,
    }
}

/// Both webhooks: whether the request can reach any rule.
pub fn matters(kind: Kind, op: Operation, obj: &Value, old: &Value) -> bool {
    validation_matters(kind, op, obj, old) || (kind.mutated() && mutation_matters(kind, op, obj))
}

// === impl CEL ===
//
// Every expression is written so it cannot fail on a missing field (`has()` before each step):
// a match condition that errors falls back to the webhook's failurePolicy, which for the
// validating webhook (Fail) would refuse the write.

/// `has(o.a) && has(o.a.b)` for `a.b`.
fn present(root: &str, path: &[&str]) -> String {
    (1..=path.len())
        .map(|n| format!("has({root}.{})", path[..n].join(".")))
        .collect::<Vec<_>>()
        .join(" && ")
}

/// A CEL string literal (single quotes; the keys here hold no quote or backslash).
fn lit(s: &str) -> String {
    debug_assert!(!s.contains('\'') && !s.contains('\\'));
    format!("'{s}'")
}

fn has_entry(root: &str, map: &str, key: &str) -> String {
    format!(
        "(has({root}.metadata.{map}) && {} in {root}.metadata.{map})",
        lit(key)
    )
}

fn entry_changed(map: &str, key: &str) -> String {
    let (a, b) = (
        has_entry("object", map, key),
        has_entry("oldObject", map, key),
    );
    format!(
        "({a} != {b} || ({a} && object.metadata.{map}[{k}] != oldObject.metadata.{map}[{k}]))",
        k = lit(key)
    )
}

fn part_changed(part: Part) -> String {
    match part {
        Part::Spec => "(has(object.spec) != has(oldObject.spec) || (has(object.spec) && object.spec != oldObject.spec))".to_string(),
        Part::Label(k) => entry_changed("labels", k),
        Part::Annotation(k) => entry_changed("annotations", k),
        // Every update changes `metadata.resourceVersion`: a condition cannot tell bookkeeping
        // from a change, so it calls for every update (more often than needed, never less).
        Part::Object => "true".to_string(),
        Part::Field(path) => {
            let keys: Vec<&str> = path.split('.').collect();
            let (now, before) = (present("object", &keys), present("oldObject", &keys));
            format!("(({now}) != ({before}) || (({now}) && object.{path} != oldObject.{path}))")
        }
    }
}

/// `request.resource` is one of `kinds`.
fn resource_is(kinds: &[Kind]) -> String {
    let names: Vec<String> = kinds
        .iter()
        .map(|k| lit(&format!("{}/{}", k.group(), k.plural())))
        .collect();
    format!(
        "(request.resource.group + '/' + request.resource.resource) in [{}]",
        names.join(", ")
    )
}

/// Kinds grouped by what their UPDATE reads, in table order.
fn update_groups() -> Vec<(Reads, Vec<Kind>)> {
    let mut groups: Vec<(Reads, Vec<Kind>)> = Vec::new();
    for info in KINDS {
        let r = reads(info.kind);
        match groups.iter_mut().find(|(g, _)| {
            g.update == r.update && g.update_passes_while_deleting == r.update_passes_while_deleting
        }) {
            Some((_, kinds)) => kinds.push(info.kind),
            None => groups.push((r, vec![info.kind])),
        }
    }
    groups
}

fn update_expression(r: &Reads) -> String {
    let changes: Vec<String> = r.update.iter().map(|p| part_changed(*p)).collect();
    let changes = format!("({})", changes.join(" || "));
    if r.update_passes_while_deleting {
        format!(
            "(!has(object.metadata.deletionTimestamp) && !has(oldObject.metadata.deletionTimestamp) && {changes})"
        )
    } else {
        changes
    }
}

/// The validating webhook's `matchConditions`: the API server calls it only when all are true.
pub fn validating_conditions() -> Vec<Value> {
    // An UPDATE of a kind not in the table (none today) is always sent.
    let mut update = String::from("request.operation != 'UPDATE'");
    let mut known = Vec::new();
    for (r, kinds) in update_groups() {
        update.push_str(&format!(
            " || ({} && {})",
            resource_is(&kinds),
            update_expression(&r)
        ));
        known.extend(kinds);
    }
    update.push_str(&format!(" || !({})", resource_is(&known)));

    let skipped: Vec<Kind> = KINDS
        .iter()
        .map(|k| k.kind)
        .filter(|k| !reads(*k).delete_skipped_by.is_empty())
        .collect();
    let annotations = SKIP_DELETE_ANNOTATIONS
        .iter()
        .map(|a| has_entry("oldObject", "annotations", a))
        .collect::<Vec<_>>()
        .join(" || ");
    let delete = format!(
        "request.operation != 'DELETE' || !({}) || !({annotations})",
        resource_is(&skipped)
    );
    debug_assert!(skipped
        .iter()
        .all(|k| reads(*k).delete_skipped_by == SKIP_DELETE_ANNOTATIONS));
    vec![
        json!({"name": "update-changes-what-a-rule-reads", "expression": update}),
        json!({"name": "delete-not-skipped-by-annotation", "expression": delete}),
    ]
}

/// The mutating webhook's `matchConditions`.
pub fn mutating_conditions() -> Vec<Value> {
    let mutated: Vec<Kind> = KINDS
        .iter()
        .map(|k| k.kind)
        .filter(|k| k.mutated() && reads(*k).mutates_on_update)
        .collect();
    let cluster = present("object", &["spec", "clusterName"]);
    let expression = format!(
        "request.operation != 'UPDATE' || ({} && {cluster} && object.spec.clusterName != '' && !{})",
        resource_is(&mutated),
        has_entry("object", "labels", CLUSTER_NAME_LABEL)
    );
    vec![json!({"name": "update-lacks-the-cluster-name-label", "expression": expression})]
}
