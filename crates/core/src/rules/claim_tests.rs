//! `IPAddressClaim` rules (C1–C5), named after the ids they cover.

use serde_json::{json, Value};

use crate::field::{ErrorType, Verdict};
use crate::index::Index;
use crate::kinds::Kind;
use crate::rules::test_support::*;
use crate::rules::Options;

// === IPAddressClaim ===

#[test]
fn c1_pool_ref_fields_required_in_every_version() {
    for version in ["v1alpha1", "v1beta1", "v1beta2"] {
        let cases: [(Value, &[&str]); 4] = [
            (
                json!({"poolRef": {"kind": "InClusterIPPool", "name": "p"}}),
                &["spec.poolRef.apiGroup: Required value"],
            ),
            (
                json!({"poolRef": {"apiGroup": "", "kind": "", "name": ""}}),
                &[
                    "spec.poolRef.apiGroup: Required value",
                    "spec.poolRef.kind: Required value",
                    "spec.poolRef.name: Required value",
                ],
            ),
            (json!({}), &["spec.poolRef: Required value"]),
            (
                json!({"poolRef": "pool-a"}),
                &[r#"spec.poolRef: Invalid value: "pool-a": must be an object"#],
            ),
        ];
        for (spec, want) in cases {
            let obj = json!({"apiVersion": format!("ipam.cluster.x-k8s.io/{version}"),
                "kind": "IPAddressClaim", "metadata": {"name": "c", "namespace": NS}, "spec": spec});
            let v = create(Kind::IPAddressClaim, &obj, &Index::new());
            assert_eq!(errors(&v), want, "{version} {spec}");
            if want[0].contains("Required") {
                assert!(v.errors.iter().all(|e| e.kind == ErrorType::Required));
            }
        }
    }
}

#[test]
fn c1_pool_ref_name_must_be_a_dns1123_subdomain() {
    let obj = claim(NS, "c", "InClusterIPPool", "Pool_A");
    let v = create(Kind::IPAddressClaim, &obj, &Index::new());
    assert_eq!(
        errors(&v),
        [
            r#"spec.poolRef.name: Invalid value: "Pool_A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
        ]
    );
}

#[test]
fn c2_namespace_in_a_reference_is_forbidden() {
    let mut obj = claim(NS, "c", "InClusterIPPool", "p");
    obj["spec"]["poolRef"]["namespace"] = json!("other");
    let p = ipool(NS, "p", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let v = create(
        Kind::IPAddressClaim,
        &obj,
        &index(&[(Kind::InClusterIPPool, &p)]),
    );
    assert_eq!(
        errors(&v),
        ["spec.poolRef.namespace: Forbidden: references must stay in the object's namespace"]
    );
    assert_eq!(v.errors[0].kind.reason(), "FieldValueForbidden");
    // IPAddress references too.
    let mut a = addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p");
    a["spec"]["claimRef"]["namespace"] = json!("other");
    let v = create(Kind::IPAddress, &a, &index(&[(Kind::InClusterIPPool, &p)]));
    assert_eq!(
        errors(&v),
        ["spec.claimRef.namespace: Forbidden: references must stay in the object's namespace"]
    );
}

#[test]
fn c3_missing_pool_warns_by_default_and_denies_when_required() {
    let obj = claim(NS, "c", "InClusterIPPool", "pool-a");
    // A pool of that name in another namespace is not the claim's pool.
    let elsewhere = ipool(
        "other",
        "pool-a",
        json!({"addresses": ["10.0.0.0/24"], "prefix": 24}),
    );
    let ix = index(&[(Kind::InClusterIPPool, &elsewhere)]);
    let v = create(Kind::IPAddressClaim, &obj, &ix);
    assert!(v.allowed());
    assert_eq!(
        warnings(&v),
        ["spec.poolRef.name: InClusterIPPool ns/pool-a not found"]
    );
    let strict = Options {
        require_existing_pool: true,
        ..Options::default()
    };
    let v = create_with(Kind::IPAddressClaim, &obj, &ix, strict);
    assert_eq!(
        errors(&v),
        [r#"spec.poolRef.name: Invalid value: "pool-a": InClusterIPPool ns/pool-a not found"#]
    );
    // A global pool is found from any namespace.
    let g = gpool("g", json!({"addresses": ["10.1.0.0/24"], "prefix": 24}));
    let obj = claim(NS, "c", "GlobalInClusterIPPool", "g");
    let v = create_with(
        Kind::IPAddressClaim,
        &obj,
        &index(&[(Kind::GlobalInClusterIPPool, &g)]),
        strict,
    );
    assert!(v.allowed() && v.warnings.is_empty(), "{:?}", warnings(&v));
}

#[test]
fn c3_known_group_with_unknown_kind_warns() {
    let obj = claim(NS, "c", "InClusterPool", "p");
    let v = create(Kind::IPAddressClaim, &obj, &Index::new());
    assert_eq!(
        warnings(&v),
        ["spec.poolRef.kind: InClusterPool is not a pool kind of ipam.cluster.x-k8s.io (pool kinds: InClusterIPPool, GlobalInClusterIPPool, InClusterPrefixPool, GlobalInClusterPrefixPool)"]
    );
    // Another provider's group is none of our business.
    let mut obj = claim(NS, "c", "InfobloxIPPool", "p");
    obj["spec"]["poolRef"]["apiGroup"] = json!("ipam.cluster.x-k8s.io.infoblox.com");
    let v = create(Kind::IPAddressClaim, &obj, &Index::new());
    assert!(v.allowed() && v.warnings.is_empty());
}

#[test]
fn c4_each_changed_field_is_its_own_cause() {
    let (kind, op, obj, old) = review("ipaddressclaim-update-spec.json");
    let v = judge(
        kind,
        op,
        obj.as_ref(),
        old.as_ref(),
        &Index::new(),
        Options::default(),
    );
    assert_eq!(
        errors(&v),
        [
            r#"spec.poolRef.kind: Invalid value: "GlobalInClusterIPPool": field is immutable (was "InClusterIPPool")"#,
            r#"spec.poolRef.name: Invalid value: "global-pool-a": field is immutable (was "pool-a")"#,
        ]
    );
    assert!(v.errors.iter().all(|e| e.rule == "C4"));
}

#[test]
fn c4_metadata_updates_pass_even_with_an_old_invalid_spec() {
    let (kind, op, obj, old) = review("ipaddressclaim-update-label.json");
    let v = judge(
        kind,
        op,
        obj.as_ref(),
        old.as_ref(),
        &Index::new(),
        Options::default(),
    );
    assert_eq!(v, Verdict::default());
    // X5: a claim stored without apiGroup (v1beta1) is not denied for it on a label update.
    let mut old = claim(NS, "c", "InClusterIPPool", "p");
    old["apiVersion"] = json!("ipam.cluster.x-k8s.io/v1beta1");
    old["spec"]["poolRef"]
        .as_object_mut()
        .unwrap()
        .remove("apiGroup");
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"tier": "gold"});
    assert_eq!(
        update(Kind::IPAddressClaim, &new, &old, &Index::new()),
        Verdict::default()
    );
}

#[test]
fn c5_cluster_name_and_label_agree() {
    let mut obj = claim(NS, "c", "InClusterIPPool", "p");
    obj["spec"]["clusterName"] = json!("workload-1");
    obj["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": "workload-2"});
    let p = ipool(NS, "p", json!({"addresses": ["10.0.0.0/24"], "prefix": 24}));
    let ix = index(&[(Kind::InClusterIPPool, &p)]);
    let v = create(Kind::IPAddressClaim, &obj, &ix);
    assert_eq!(
        errors(&v),
        [
            r#"metadata.labels: Invalid value: "workload-2": label cluster.x-k8s.io/cluster-name must equal spec.clusterName "workload-1""#
        ]
    );

    // UPDATE: judged when the label changes …
    let mut old = obj.clone();
    old["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": "workload-1"});
    let v = update(Kind::IPAddressClaim, &obj, &old, &ix);
    assert_eq!(v.rules(), ["C5"]);
    // … not when an old disagreement is carried along by an unrelated change.
    let mut new = obj.clone();
    new["metadata"]["annotations"] = json!({"note": "x"});
    assert!(update(Kind::IPAddressClaim, &new, &obj, &ix).allowed());
}
