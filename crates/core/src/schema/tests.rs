use serde_json::{json, Value};

use super::*;

fn check(api_version: &str, kind: &str, object: Value) -> Vec<(String, String)> {
    check_as(KubeVersion::NEWEST_TESTED, api_version, kind, object)
        .into_iter()
        .map(|(path, message, _)| (path, message))
        .collect()
}

/// `check` as a server of release `target` answers: path, message, and whether only a warning.
fn check_as(
    target: KubeVersion,
    api_version: &str,
    kind: &str,
    object: Value,
) -> Vec<(String, String, bool)> {
    let (group, version) = api_version.rsplit_once('/').unwrap();
    let mut full = json!({"apiVersion": api_version, "kind": kind});
    full.as_object_mut()
        .unwrap()
        .extend(object.as_object().unwrap().clone());
    Schemas::builtin()
        .validate_as(target, group, kind, version, &full)
        .expect("a served version")
        .into_iter()
        .map(|e| (e.path, e.message, e.warning))
        .collect()
}

fn v1_20() -> KubeVersion {
    KubeVersion::parse("1.20").unwrap()
}

fn pool(spec: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
}

const POOL_V: &str = "ipam.cluster.x-k8s.io/v1alpha2";

#[test]
fn a_valid_pool_passes() {
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        pool(json!({"addresses": ["10.0.0.10-10.0.0.20"], "prefix": 24, "gateway": "10.0.0.1"})),
    );
    assert_eq!(errors, vec![]);
}

#[test]
fn unknown_fields_are_named_with_their_path() {
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        pool(
            json!({"addresses": ["10.0.0.10"], "prefix": 24, "gatway": "10.0.0.1",
                    "exludedAddresses": []}),
        ),
    );
    assert_eq!(
        errors,
        vec![
            (
                "spec.exludedAddresses".to_string(),
                "unknown field \"spec.exludedAddresses\"".to_string()
            ),
            (
                "spec.gatway".to_string(),
                "unknown field \"spec.gatway\"".to_string()
            ),
        ]
    );
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        json!({"metadata": {"name": "p", "lables": {}}, "spec": {"addresses": ["10.0.0.1"], "prefix": 24}, "extra": 1}),
    );
    assert_eq!(
        errors,
        vec![
            (
                "metadata.lables".to_string(),
                "unknown field \"metadata.lables\"".to_string()
            ),
            ("extra".to_string(), "unknown field \"extra\"".to_string()),
        ]
    );
}

#[test]
fn a_release_without_strict_field_validation_prunes_unknown_fields() {
    let errors = check_as(
        v1_20(),
        POOL_V,
        "InClusterIPPool",
        json!({"metadata": {"name": "p", "lables": {}}, "spec": {"addresses": ["10.0.0.1"], "prefix": 24, "gatway": "x"}}),
    );
    assert_eq!(
        errors,
        vec![
            (
                "metadata.lables".to_string(),
                "unknown field \"metadata.lables\"; the API server drops it".to_string(),
                true
            ),
            (
                "spec.gatway".to_string(),
                "unknown field \"spec.gatway\"; the API server drops it".to_string(),
                true
            ),
        ]
    );
}

#[test]
fn types_required_and_bounds_read_as_the_api_server_writes_them() {
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        pool(json!({"addresses": "10.0.0.1", "prefix": "24"})),
    );
    assert_eq!(
        errors,
        vec![
            (
                "spec.addresses".to_string(),
                "Invalid value: \"10.0.0.1\": spec.addresses in body must be of type array: \"string\""
                    .to_string()
            ),
            (
                "spec.prefix".to_string(),
                "Invalid value: \"24\": spec.prefix in body must be of type integer: \"string\""
                    .to_string()
            ),
        ]
    );
    let errors = check(POOL_V, "InClusterIPPool", pool(json!({"prefix": 24})));
    assert_eq!(
        errors,
        vec![("spec.addresses".to_string(), "Required value".to_string())]
    );
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        pool(json!({"addresses": ["10.0.0.1"], "prefix": 129})),
    );
    assert_eq!(
        errors,
        vec![(
            "spec.prefix".to_string(),
            "Invalid value: 129: spec.prefix in body should be less than or equal to 128"
                .to_string()
        )]
    );
}

#[test]
fn enums_patterns_and_lengths() {
    // Metal3 IPPool: allocationStrategy is not an enum in every release; namePrefix has no
    // bounds. Use the CAPI claim's poolRef (minLength 1, maxLength 253, pattern on name).
    let claim = |pool_ref: Value| {
        check(
            "ipam.cluster.x-k8s.io/v1beta2",
            "IPAddressClaim",
            json!({"metadata": {"name": "c"}, "spec": {"poolRef": pool_ref}}),
        )
    };
    assert_eq!(
        claim(json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"})),
        vec![]
    );
    let errors = claim(
        json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "Not_A_Name"}),
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "spec.poolRef.name");
    assert!(
        errors[0]
            .1
            .starts_with("Invalid value: \"Not_A_Name\": spec.poolRef.name in body should match '"),
        "{errors:?}"
    );
    let errors =
        claim(json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": ""}));
    assert!(
        errors.contains(&(
            "spec.poolRef.name".to_string(),
            "Invalid value: \"\": spec.poolRef.name in body should be at least 1 chars long"
                .to_string()
        )),
        "{errors:?}"
    );
    let long = "a".repeat(254);
    let errors = claim(
        json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": long}),
    );
    assert!(
        errors.contains(&(
            "spec.poolRef.name".to_string(),
            "Too long: may not be longer than 253".to_string()
        )),
        "{errors:?}"
    );
}

#[test]
fn metadata_names_are_dns_subdomains() {
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        json!({"metadata": {"name": "Bad_Name", "namespace": "ns"},
               "spec": {"addresses": ["10.0.0.1"], "prefix": 24}}),
    );
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].0, "metadata.name");
    assert!(errors[0]
        .1
        .starts_with("Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"));
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        json!({"metadata": {"name": "ok.name-1", "namespace": "ns",
                            "labels": {"a/b/c": "x", "ok": "not ok!"}},
               "spec": {"addresses": ["10.0.0.1"], "prefix": 24}}),
    );
    let fields: Vec<&str> = errors.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(fields, ["metadata.labels", "metadata.labels"], "{errors:?}");
    assert!(errors[0]
        .1
        .starts_with("Invalid value: \"a/b/c\": a valid label key must consist"));
    let older = check_as(
        v1_20(),
        POOL_V,
        "InClusterIPPool",
        json!({"metadata": {"name": "p", "labels": {"a/b/c": "x"}}, "spec": {"addresses": ["10.0.0.1"], "prefix": 24}}),
    );
    assert!(older[0]
        .1
        .starts_with("Invalid value: \"a/b/c\": a qualified name must consist"));
}

#[test]
fn nulls_are_pruned_and_int_or_string_takes_both() {
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        pool(json!({"addresses": ["10.0.0.1"], "prefix": 24, "gateway": null})),
    );
    assert_eq!(errors, vec![]);
    // An integral float is an integer to the API server's decoder.
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        pool(json!({"addresses": ["10.0.0.1"], "prefix": 24.0})),
    );
    assert_eq!(errors, vec![]);
    let errors = check(
        POOL_V,
        "InClusterIPPool",
        pool(json!({"addresses": ["10.0.0.1"], "prefix": 24.5})),
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
}

#[test]
fn lookups_name_what_is_wrong() {
    let s = Schemas::builtin();
    match s.lookup("ipam.cluster.x-k8s.io", "InClusterIPPool", "v1") {
        Lookup::UnservedVersion { served } => assert_eq!(served, ["v1alpha1", "v1alpha2"]),
        other => panic!("{other:?}"),
    }
    match s.lookup("ipam.cluster.x-k8s.io", "InClusterIpPool", "v1alpha2") {
        Lookup::UnknownKind { known } => {
            assert_eq!(closest("InClusterIpPool", &known), Some("InClusterIPPool"))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.lookup("apps", "Deployment", "v1"),
        Lookup::UnknownGroup
    ));
    assert_eq!(
        closest("Deployment", &["IPAddress", "IPAddressClaim"]),
        None
    );
}

#[test]
fn a_crd_file_of_ones_own_is_read_as_the_api_server_reads_it() {
    let mut s = Schemas::default();
    let crd: Value = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"group": "example.com", "names": {"kind": "Thing"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                     "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}}}}}}},
                   {"name": "v0", "served": false, "storage": false}]}});
    s.add_crd(&crd).unwrap();
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
                     "spec": {"size": 0, "colour": "red"}});
    let errors = s.validate("example.com", "Thing", "v1", &obj).unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(matches!(
        s.lookup("example.com", "Thing", "v0"),
        Lookup::UnservedVersion { .. }
    ));
    assert!(s.add_crd(&json!({"kind": "ConfigMap"})).is_err());
}
