//! Captured reviews for the readers' tests (the rule tests reuse them).

use serde_json::Value;

/// A Metal3 `IPPool` with `spec`.
pub fn metal3_pool(spec: Value) -> Value {
    serde_json::json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
        "metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
}

/// A `SpiderIPPool` with `spec`.
pub fn spider_pool(spec: Value) -> Value {
    serde_json::json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
        "metadata": {"name": "p"}, "spec": spec})
}

/// A review a real API server sent, from the newest recorded set (`tests/fixtures/reviews/v1.36/`,
/// recorded by crates/e2e/tests/e2e_capture.rs; its README says how).
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../tests/fixtures/reviews/v1.36/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}
