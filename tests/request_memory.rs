//! Memory per pathological request (docs/robustness.md, O1), counted by a global allocator around one
//! `Admission::review` (peak live bytes above what was live before). One test, run in order, so
//! no other test's allocations mix into the count.
//!
//! `cargo test --test request_memory -- --nocapture` prints the table of docs/robustness.md.

use std::sync::Arc;

use ipam_guard::admission::{Admission, Endpoint};
use ipam_guard::cluster::StaticView;
use serde_json::{json, Value};

mod counting_alloc;
use counting_alloc::peak_during;

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

fn in_cluster(addresses: Vec<Value>) -> Vec<u8> {
    review(
        "InClusterIPPool",
        "ipam.cluster.x-k8s.io",
        "v1alpha2",
        json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"addresses": addresses, "prefix": 24, "gateway": "10.0.0.1"}
        }),
    )
}

/// (what, body, whether every entry is bad)
fn cases() -> Vec<(&'static str, Vec<u8>, bool)> {
    let v4 = |i: usize| format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    vec![
        (
            "InClusterIPPool, 750k entries \"x\"",
            in_cluster(vec![json!("x"); 750_000]),
            true,
        ),
        (
            "InClusterIPPool, 100k valid /32",
            in_cluster(
                (0..100_000)
                    .map(|i| json!(format!("{}/32", v4(i))))
                    .collect(),
            ),
            false,
        ),
        (
            "SpiderIPPool, 300k bad ips",
            review(
                "SpiderIPPool",
                "spiderpool.spidernet.io",
                "v2beta1",
                json!({
                    "apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
                    "metadata": {"name": "p"},
                    "spec": {"subnet": "10.0.0.0/8", "ips": vec![json!("x"); 300_000]}
                }),
            ),
            true,
        ),
        (
            "Metal3 IPPool, 100k pools with a bad start",
            review(
                "IPPool",
                "ipam.metal3.io",
                "v1alpha1",
                json!({
                    "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
                    "metadata": {"name": "p", "namespace": "ns"},
                    "spec": {"pools": vec![json!({"start": "x"}); 100_000], "prefix": 24}
                }),
            ),
            true,
        ),
    ]
}

#[test]
fn memory_per_pathological_request_is_bounded() {
    let admission = Admission::new(Arc::new(StaticView::empty()), Default::default());
    println!("| request | body | peak | peak / body | of which the JSON tree |");
    println!("|---|---:|---:|---:|---:|");
    for (what, body, bad) in cases() {
        let mut status = 0;
        let peak =
            peak_during(|| status = admission.review_now(Endpoint::Validate, &body).http_status);
        assert_eq!(status, 200, "{what}");
        let ratio = peak as f64 / body.len() as f64;
        let tree = peak_during(|| drop(serde_json::from_slice::<Value>(&body).unwrap()));
        println!(
            "| {what} | {:.1} MB | {:.1} MB | {ratio:.1}× | {:.1} MB |",
            body.len() as f64 / 1e6,
            peak as f64 / 1e6,
            tree as f64 / 1e6
        );
        // Beyond parsing, a list of bad entries costs a thousand causes, not one per entry (it
        // was 100× the body before the readers stopped at `LIST_PROBLEMS`).
        if bad {
            assert!(
                peak.saturating_sub(tree) <= 2 * body.len(),
                "{what}: {peak} bytes at peak, {tree} of them the JSON tree"
            );
        }
        // Every request, valid entries included: a regression guard on the reading itself.
        assert!(peak <= 60 * body.len(), "{what}: {ratio:.1}× its body");
    }
}
