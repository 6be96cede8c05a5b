//! Regression tests for what the hostile corpus and the fuzzers found (docs/robustness.md
//! lists each finding with its fix). Each test names the input that misbehaved and the bound it
//! now keeps.

use std::sync::Arc;

use ipam_guard::admission::{Admission, Endpoint};
use ipam_guard::cluster::StaticView;
use ipam_guard::model::read::LIST_PROBLEMS;
use serde_json::{json, Value};

fn admission() -> Admission {
    Admission::new(Arc::new(StaticView::empty()), Default::default())
}

fn review(kind: &str, group: &str, version: &str, object: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "u", "operation": "CREATE", "name": "p", "namespace": "ns",
            "kind": {"group": group, "version": version, "kind": kind},
            "object": object
        }
    }))
    .unwrap()
}

fn pool_review(addresses: Vec<Value>) -> Vec<u8> {
    review(
        "InClusterIPPool",
        "ipam.cluster.x-k8s.io",
        "v1alpha2",
        json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"addresses": addresses, "prefix": 24}
        }),
    )
}

/// Found by the corpus: an InClusterIPPool with 100k entries that are not addresses. The
/// aggregate message deduplicated with a linear search (quadratic: 183 s in a debug build),
/// and every entry became a cause: a 390 KiB request made a 24 MB answer and 250 MB of
/// transient memory, so a handful of them could get the webhook OOM-killed.
#[test]
fn a_pool_of_100k_bad_entries_is_denied_quickly_with_a_bounded_answer() {
    const N: usize = 100_000;
    let body = pool_review((0..N).map(|i| json!(format!("x{i}"))).collect());
    // How long it takes is measured in `cargo bench --bench review -- hostile` (docs/performance.md);
    // what keeps it short is asserted below: the reader stops at LIST_PROBLEMS, and the answer
    // holds 100 causes and a count.
    let ans = admission().review_now(Endpoint::Validate, &body);
    assert_eq!(ans.http_status, 200);
    assert!(
        ans.body.len() < 64 * 1024,
        "answer of {} bytes",
        ans.body.len()
    );
    let out: Value = serde_json::from_slice(&ans.body).unwrap();
    let status = &out["response"]["status"];
    assert_eq!(out["response"]["allowed"], false);
    assert_eq!(status["code"], 422);
    let causes = status["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 101, "100 causes, then one counting the rest");
    assert_eq!(causes[0]["field"], "spec.addresses[0]");
    assert_eq!(causes[99]["field"], "spec.addresses[99]");
    assert_eq!(causes[100]["reason"], "FieldValueTooMany");
    assert_eq!(causes[100]["field"], "spec.addresses[100]");
    // The reader stops at LIST_PROBLEMS (O1) and adds one problem saying how many entries it
    // left unread: those are what the answer counts past its 100 causes.
    let hidden = LIST_PROBLEMS + 1 - 100;
    assert!(
        causes[100]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Too many: {hidden} more problems not shown"))
            && causes[100]["message"]
                .as_str()
                .unwrap()
                .ends_with(" [ipam-guard P2]"),
        "{}",
        causes[100]
    );
    let message = status["message"].as_str().unwrap();
    assert!(
        message.ends_with(&format!(
            ", and {hidden} more problems not shown [ipam-guard P2]]"
        )),
        "{}",
        &message[message.len().saturating_sub(200)..]
    );
    // Every one of them is still counted in the outcome's rules (metrics, logs).
    assert_eq!(ans.summary.unwrap().rules, ["P2"]);
}

/// Found by the corpus: a Metal3 IPPool with 100k pools outside its gateway's network got one
/// warning each (8.6 MB of warnings on an allowed answer).
#[test]
fn a_metal3_pool_with_100k_entries_gets_at_most_101_warnings() {
    const N: u32 = 100_000;
    let pools: Vec<Value> = (0..N)
        .map(|i| {
            let a = format!("10.{}.{}.{}", 100 + (i >> 16), (i >> 8) & 0xff, i & 0xff);
            json!({"start": a, "end": a, "prefix": 14})
        })
        .collect();
    let body = review(
        "IPPool",
        "ipam.metal3.io",
        "v1alpha1",
        json!({
            "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"pools": pools, "gateway": "192.168.1.1", "prefix": 24,
                "namePrefix": "p", "allocationStrategy": "sequential"}
        }),
    );
    let ans = admission().review_now(Endpoint::Validate, &body);
    assert_eq!(ans.http_status, 200);
    assert!(
        ans.body.len() < 64 * 1024,
        "answer of {} bytes",
        ans.body.len()
    );
    let out: Value = serde_json::from_slice(&ans.body).unwrap();
    assert_eq!(out["response"]["allowed"], true, "{out}");
    let warnings = out["response"]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 101);
    let last = warnings[100].as_str().unwrap();
    assert!(
        last.starts_with("and ")
            && last.ends_with(" more warnings not shown [ipam-guard MP1, MP2]"),
        "{last}"
    );
}

/// Under the cap nothing changes: every problem is its own cause.
#[test]
fn a_few_problems_are_all_shown() {
    let body = pool_review(vec![json!("x"), json!("x"), json!("10.0.0.1-10.0.0.0")]);
    let ans = admission().review_now(Endpoint::Validate, &body);
    let out: Value = serde_json::from_slice(&ans.body).unwrap();
    let causes = out["response"]["status"]["details"]["causes"]
        .as_array()
        .unwrap();
    assert_eq!(causes.len(), 3, "{out:#}");
    assert!(causes.iter().all(|c| c["reason"] != "FieldValueTooMany"));
    let message = out["response"]["status"]["message"].as_str().unwrap();
    assert!(!message.contains("more problems"), "{message}");
}

fn causes(answer: &ipam_guard::admission::Answer) -> Vec<String> {
    assert_eq!(answer.http_status, 200);
    let v: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(v["response"]["allowed"], false, "{v}");
    assert_eq!(v["response"]["status"]["code"], 422, "{v}");
    v["response"]["status"]["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["field"].as_str().unwrap(),
                c["message"].as_str().unwrap()
            )
        })
        .collect()
}

/// O5: a number past an f64 is denied at its field (422), not refused as unreadable JSON (400).
#[test]
fn a_number_past_an_f64_is_denied_at_its_field() {
    for number in ["1e400".to_string(), "-1E+999".to_string(), "9".repeat(400)] {
        let body = String::from_utf8(pool_review(vec![json!("10.0.0.1-10.0.0.9")]))
            .unwrap()
            .replacen(r#""prefix":24"#, &format!(r#""prefix":{number}"#), 1);
        let ans = admission().review_now(Endpoint::Validate, body.as_bytes());
        let causes = causes(&ans);
        assert!(
            causes.iter().any(|c| c.starts_with("spec.prefix ")
                && c.contains(&format!("Invalid value: \"{}", &number[..5]))
                && c.contains("must be an integer")),
            "{causes:?}"
        );
    }
}

/// O4: a Metal3 IPPool whose spec is not an object is denied at `spec` (it read as no pools).
#[test]
fn a_metal3_pool_whose_spec_is_not_an_object_is_denied_at_spec() {
    for spec in [json!(7), json!("pools"), json!([{"start": "10.0.0.1"}])] {
        let body = review(
            "IPPool",
            "ipam.metal3.io",
            "v1alpha1",
            json!({
                "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
                "metadata": {"name": "p", "namespace": "ns"},
                "spec": spec
            }),
        );
        let causes = causes(&admission().review_now(Endpoint::Validate, &body));
        assert!(
            causes
                .iter()
                .any(|c| c.starts_with("spec ") && c.contains("must be an object")),
            "{spec}: {causes:?}"
        );
    }
}
