//! A relabel records nothing (`Admission::relabel`): the API server's own label updates are
//! recognised as such, no projection of any kind reads labels, and an admitted relabel leaves
//! the view as it was, unless the object is pending, whose entry it replaces (X2).

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::envelope::decode;
use crate::kinds::Kind;
use crate::model::{project, projects_alike, Operation};

/// The reviews a real API server sent (`tests/fixtures/reviews/<release>/`, recorded by
/// crates/e2e/tests/e2e_capture.rs), by release and file name.
fn captures() -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/reviews");
    let mut out = Vec::new();
    for release in std::fs::read_dir(&root).unwrap() {
        let release = release.unwrap().path();
        if !release.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&release).unwrap() {
            let p = file.unwrap().path();
            if p.extension().is_some_and(|e| e == "json") {
                let name = p.strip_prefix(&root).unwrap().display().to_string();
                out.push((name, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_api_servers_label_updates_are_relabels_and_its_spec_updates_are_not() {
    let captures = captures();
    let (mut relabels, mut spec_updates) = (0, 0);
    for (name, body) in &captures {
        let Ok(env) = decode(body) else {
            panic!("{name} is not read")
        };
        let Some(kind) = Kind::from_group_kind(&env.group, &env.kind) else {
            continue;
        };
        if env.operation != Operation::Update {
            continue;
        }
        let (new, old) = (
            env.object.as_ref().unwrap(),
            env.old_object.as_ref().unwrap(),
        );
        if name.contains("update-label") {
            assert!(projects_alike(new, old), "{name}");
            assert_eq!(project(kind, new), project(kind, old), "{name}");
            relabels += 1;
        } else if name.contains("update-spec") {
            assert!(!projects_alike(new, old), "{name}");
            spec_updates += 1;
        }
    }
    // Per release: a relabel and a spec update of each of the ten kinds recorded.
    let releases = captures
        .iter()
        .map(|(name, _)| name.split('/').next().unwrap())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert!(releases >= 1);
    assert!(
        relabels == 10 * releases && spec_updates == 10 * releases,
        "{relabels} {spec_updates} over {releases} releases"
    );
}

/// Objects of the kinds the captures lack, labelled as their providers label them.
fn prefix_pools_and_an_application_pool() -> Vec<(Kind, Value)> {
    let prefix = |kind: &str| {
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": kind,
            "metadata": {"name": "p", "namespace": "ns", "labels": {"team": "a"}},
            "spec": {"prefixes": ["fd00::/62"], "allocationPrefixLength": 64}})
    };
    vec![
        (Kind::InClusterPrefixPool, prefix("InClusterPrefixPool")),
        (
            Kind::GlobalInClusterPrefixPool,
            prefix("GlobalInClusterPrefixPool"),
        ),
        (
            Kind::SpiderIPPool,
            json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
                "metadata": {"name": "auto-app-v4-eth0-1", "labels": {
                    "ipam.spidernet.io/owner-application-name": "app",
                    "ipam.spidernet.io/ippool-cidr": "10-6-0-0-16"}},
                "spec": {"subnet": "10.6.0.0/16", "ips": ["10.6.0.10-10.6.0.20"]}}),
        ),
    ]
}

#[test]
fn no_projection_reads_labels() {
    let mut objects = prefix_pools_and_an_application_pool();
    for (_, body) in captures() {
        let Ok(env) = decode(&body) else {
            panic!("a capture is not read")
        };
        if let Some(kind) = Kind::from_group_kind(&env.group, &env.kind) {
            objects.extend(
                [env.object, env.old_object]
                    .into_iter()
                    .flatten()
                    .map(|o| (kind, o)),
            );
        }
    }
    let mut projected = 0;
    for (kind, obj) in &objects {
        // Every label but the cluster-name label, which a claim's projection reads (CP5).
        let cluster = &obj["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"];
        let mut relabelled = obj.clone();
        relabelled["metadata"]["labels"] = json!({"ipam.spidernet.io/owner-application-name": "b"});
        let mut unlabelled = obj.clone();
        unlabelled["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("labels");
        if !cluster.is_null() {
            relabelled["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] = cluster.clone();
            unlabelled["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": cluster});
        }
        for other in [relabelled, unlabelled] {
            assert!(projects_alike(&other, obj), "{kind:?} {obj}");
            assert_eq!(
                project(*kind, &other),
                project(*kind, obj),
                "{kind:?} {obj}"
            );
        }
        projected += usize::from(project(*kind, obj).is_some());
    }
    assert!(projected >= 3, "only {projected} objects project");
}

fn pool_review(op: &str, new: &Value, old: &Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": "ipam.cluster.x-k8s.io", "version": "v1beta2",
            "kind": "InClusterIPPool"}, "operation": op, "name": "nodes", "namespace": "ns",
            "object": new, "oldObject": old}}),
    )
    .unwrap()
}

fn allowed(a: &super::Admission, body: &[u8]) -> bool {
    let out: Value =
        serde_json::from_slice(&a.review_now(super::Endpoint::Validate, body).body).unwrap();
    out["response"]["allowed"] == true
}

/// One UPDATE of the pool reviewed against a view whose entry for it is `seen`: whether it was
/// allowed, and how many pending entries the view holds after it.
fn pending_after_update(seen: &Value, new: &Value, old: &Value) -> (bool, usize) {
    use super::*;
    use crate::cluster::Ledger;
    use crate::index::Index;
    let mut index = Index::new();
    index.upsert(project(Kind::InClusterIPPool, seen).unwrap());
    let view = Arc::new(Ledger::new(index));
    let a = Admission::new(view.clone(), Options::default());
    (
        allowed(&a, &pool_review("UPDATE", new, old)),
        view.pending_len(),
    )
}

fn pool() -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "InClusterIPPool",
        "metadata": {"name": "nodes", "namespace": "ns", "labels": {"team": "a"},
            "annotations": {"note": "x"}},
        "spec": {"addresses": ["10.0.0.10-10.0.0.50"], "prefix": 24, "gateway": "10.0.0.1"}})
}

#[test]
fn an_admitted_relabel_records_nothing_and_other_updates_do() {
    let old = pool();
    // The view has not seen the pool's last change yet (its watch lags): an admitted change
    // would be recorded over it, a relabel leaves it for the watch to bring.
    let mut seen = old.clone();
    seen["spec"]["addresses"] = json!(["10.0.0.10-10.0.0.40"]);
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"]["team"] = json!("b");
    assert_eq!(pending_after_update(&seen, &relabelled, &old), (true, 0));

    let mut grown = relabelled.clone();
    grown["spec"]["addresses"] = json!(["10.0.0.10-10.0.0.60"]);
    assert_eq!(pending_after_update(&seen, &grown, &old), (true, 1));
    assert_eq!(pending_after_update(&old, &grown, &old), (true, 1));

    let mut moved = relabelled;
    moved["metadata"]["annotations"]["ipam-guard.io/address-space"] = json!("dc2");
    assert_eq!(pending_after_update(&seen, &moved, &old), (true, 1));
    assert_eq!(pending_after_update(&old, &moved, &old), (true, 1));
}

/// X2: a relabel of an object admitted a moment ago records nothing: the create's own pending
/// entry holds it until the watch shows it or its TTL passes.
#[test]
fn a_relabel_of_a_pending_object_leaves_its_entry() {
    use crate::cluster::{ClusterView, Ledger, ManualClock};
    use crate::index::Index;
    use std::time::Duration;
    let clock = ManualClock::new();
    let view = Arc::new(Ledger::new(Index::new()).with_clock(clock.clone()));
    let a = super::Admission::new(view.clone(), super::Options::default());
    let created = pool();
    assert!(allowed(&a, &pool_review("CREATE", &created, &Value::Null)));
    assert_eq!(view.pending_len(), 1);

    clock.advance(Duration::from_secs(20));
    let mut relabelled = created.clone();
    relabelled["metadata"]["labels"]["team"] = json!("b");
    assert!(allowed(&a, &pool_review("UPDATE", &relabelled, &created)));
    assert_eq!(view.pending_len(), 1, "the relabel adds no entry");
    // 30 s after the create: the create's entry ends at its own TTL.
    clock.advance(Duration::from_secs(9));
    view.sweep(ClusterView::now(&*view));
    assert_eq!(view.pending_len(), 1);
    clock.advance(Duration::from_secs(1));
    view.sweep(ClusterView::now(&*view));
    assert_eq!(view.pending_len(), 0);
}

/// X2: the review's uid (CREATE) and the resourceVersion an UPDATE replaces reach the ledger, so
/// the watch's events end exactly the writes they decide: the create's own object, any version
/// later than the one the update replaced; an older version ends nothing.
#[test]
fn the_watch_ends_a_pending_entry_by_the_reviews_uid_and_resource_version() {
    use crate::cluster::{Ledger, Seen};
    use crate::index::Index;
    use crate::model::ObjKey;
    let view = Arc::new(Ledger::new(Index::new()));
    let a = super::Admission::new(view.clone(), super::Options::default());
    let key = ObjKey::new(Kind::InClusterIPPool, Some("ns"), "nodes");
    let seen = |uid: &str, rv: u64| Seen {
        uid: Some(Arc::from(uid)),
        resource_version: Some(rv),
        listed: false,
    };
    let mut created = pool();
    created["metadata"]["uid"] = json!("u-1");
    assert!(allowed(&a, &pool_review("CREATE", &created, &Value::Null)));
    assert_eq!(view.pending_len(), 1);
    // Another object of the name (one created before, its create now refused): not this one.
    let stored = project(Kind::InClusterIPPool, &pool());
    view.apply_seen(&key, stored.clone(), &seen("u-0", 3));
    assert_eq!(view.pending_len(), 1);
    view.apply_seen(&key, stored, &seen("u-1", 4));
    assert_eq!(view.pending_len(), 0, "the create's own object");

    let mut old = created.clone();
    old["metadata"]["resourceVersion"] = json!("4");
    let mut grown = old.clone();
    grown["spec"]["addresses"] = json!(["10.0.0.10-10.0.0.90"]);
    assert!(allowed(&a, &pool_review("UPDATE", &grown, &old)));
    assert_eq!(view.pending_len(), 1);
    let stored = project(Kind::InClusterIPPool, &old);
    view.apply_seen(&key, stored.clone(), &seen("u-1", 4));
    assert_eq!(
        view.pending_len(),
        1,
        "the version it replaces ends nothing"
    );
    view.apply_seen(&key, stored, &seen("u-1", 5));
    assert_eq!(
        view.pending_len(),
        0,
        "a later version: landed or never will"
    );
}

/// X2 and A8: a pool's DELETE admitted holds the pool, marked as being deleted, until the watch
/// shows it gone: no new address is given out of it meanwhile, and its addresses stay held.
#[test]
fn an_admitted_pool_delete_gives_out_no_new_address_until_the_watch_shows_it() {
    use crate::cluster::Ledger;
    use crate::index::Index;
    let mut stored = pool();
    stored["metadata"]["uid"] = json!("u-1");
    stored["metadata"]["resourceVersion"] = json!("4");
    let mut index = Index::new();
    index.upsert(project(Kind::InClusterIPPool, &stored).unwrap());
    let view = Arc::new(Ledger::new(index));
    let a = super::Admission::new(view.clone(), super::Options::default());
    assert!(allowed(&a, &pool_review("DELETE", &Value::Null, &stored)));
    assert_eq!(view.pending_len(), 1);
    let address = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u-2"},
        "spec": {"address": "10.0.0.20", "prefix": 24, "gateway": "10.0.0.1",
            "claimRef": {"name": "a"},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "nodes"}}});
    let review = serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "r", "kind": {"group": "ipam.cluster.x-k8s.io", "version": "v1beta2",
            "kind": "IPAddress"}, "operation": "CREATE", "name": "a", "namespace": "ns",
            "object": address}}),
    )
    .unwrap();
    let out: Value =
        serde_json::from_slice(&a.review_now(super::Endpoint::Validate, &review).body).unwrap();
    assert_eq!(out["response"]["allowed"], false, "{out}");
    let message = out["response"]["status"]["message"].as_str().unwrap();
    assert!(message.contains("is being deleted"), "{message}");
    assert!(message.contains("[ipam-guard A8]"), "{message}");
}
