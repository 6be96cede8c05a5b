//! Arbitrary bytes → `Admission::review` on both endpoints, against a small static view.
//!
//! A panic anywhere (a rule included: libfuzzer-sys aborts before `catch_unwind` can turn it
//! into a 500) is a finding. So is an answer outside the answer's contract: HTTP 200 or 400
//! with a JSON body; a 400 carries a message; a 200 echoes the uid and apiVersion, and never
//! says `allowed: true` together with an error code; a denial has between 1 and 101 causes.
//!
//! Raw mutation of JSON rarely reaches deep into an object of another kind, so when the input
//! is a review, it is also replayed as a different served kind/version/operation (chosen from
//! the bytes), which puts every reader in front of every other kind's shapes.
#![no_main]

use std::sync::{Arc, OnceLock};

use ipam_guard::admission::{Admission, Answer, Endpoint};
use ipam_guard::cluster::StaticView;
use ipam_guard::manifests;
use ipam_guard::rules::Options;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const KINDS: &[(&str, &str, &str)] = &[
    ("ipam.cluster.x-k8s.io", "v1alpha1", "IPAddressClaim"),
    ("ipam.cluster.x-k8s.io", "v1beta1", "IPAddressClaim"),
    ("ipam.cluster.x-k8s.io", "v1beta2", "IPAddressClaim"),
    ("ipam.cluster.x-k8s.io", "v1alpha1", "IPAddress"),
    ("ipam.cluster.x-k8s.io", "v1beta1", "IPAddress"),
    ("ipam.cluster.x-k8s.io", "v1beta2", "IPAddress"),
    ("ipam.cluster.x-k8s.io", "v1alpha1", "InClusterIPPool"),
    ("ipam.cluster.x-k8s.io", "v1alpha2", "InClusterIPPool"),
    ("ipam.cluster.x-k8s.io", "v1alpha1", "GlobalInClusterIPPool"),
    ("ipam.cluster.x-k8s.io", "v1alpha2", "GlobalInClusterIPPool"),
    ("ipam.metal3.io", "v1alpha1", "IPPool"),
    ("ipam.metal3.io", "v1alpha1", "IPClaim"),
    ("ipam.metal3.io", "v1alpha1", "IPAddress"),
    ("spiderpool.spidernet.io", "v2beta1", "SpiderIPPool"),
    (
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "VSphereMachine",
    ),
    (
        "infrastructure.cluster.x-k8s.io",
        "v1beta2",
        "VSphereMachineTemplate",
    ),
    // A version nobody serves: the warning path.
    ("ipam.cluster.x-k8s.io", "v9", "IPAddress"),
];

const OPERATIONS: &[&str] = &["CREATE", "UPDATE", "DELETE", "CONNECT"];

fn admission() -> &'static Admission {
    static ADMISSION: OnceLock<Admission> = OnceLock::new();
    ADMISSION.get_or_init(|| {
        let loaded = manifests::read_str("state.yaml", include_str!("../state.yaml"));
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let view = StaticView::from_manifests(loaded.manifests);
        Admission::new(Arc::new(view), Options::default())
    })
}

fuzz_target!(|data: &[u8]| {
    let a = admission();
    let parsed: Option<Value> = serde_json::from_slice(data).ok();
    for endpoint in [Endpoint::Validate, Endpoint::Mutate] {
        check(&a.review_now(endpoint, data), parsed.as_ref());
    }
    let Some(mut review) = parsed else { return };
    let Some(request) = review.get_mut("request").and_then(Value::as_object_mut) else {
        return;
    };
    // A cheap, stable choice from the bytes, so libFuzzer can steer it.
    let h = data.iter().fold(0usize, |h, b| {
        h.wrapping_mul(31).wrapping_add(usize::from(*b))
    });
    let (group, version, kind) = KINDS[h % KINDS.len()];
    request.insert(
        "kind".into(),
        json!({"group": group, "version": version, "kind": kind}),
    );
    request.insert(
        "operation".into(),
        json!(OPERATIONS[(h / KINDS.len()) % OPERATIONS.len()]),
    );
    if (h >> 12) & 1 == 1 {
        let object = request.remove("object");
        let old = request.remove("oldObject");
        if let Some(v) = object {
            request.insert("oldObject".into(), v);
        }
        if let Some(v) = old {
            request.insert("object".into(), v);
        }
    }
    let body = serde_json::to_vec(&review).expect("a Value serialises");
    for endpoint in [Endpoint::Validate, Endpoint::Mutate] {
        check(&a.review_now(endpoint, &body), Some(&review));
    }
});

fn check(answer: &Answer, input: Option<&Value>) {
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or_else(|e| {
        panic!(
            "answer body is not JSON ({e}): {:?}",
            String::from_utf8_lossy(&answer.body)
        )
    });
    match answer.http_status {
        400 => {
            assert!(
                body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "a 400 without a message: {body}"
            );
            assert!(answer.summary.is_none());
        }
        200 => {
            assert_eq!(body["kind"], "AdmissionReview", "{body}");
            let response = &body["response"];
            let uid = response["uid"].as_str().unwrap_or_default();
            assert!(!uid.is_empty(), "a 200 without a uid: {body}");
            if let Some(input) = input {
                assert_eq!(response["uid"], input["request"]["uid"], "uid not echoed");
                assert_eq!(
                    body["apiVersion"], input["apiVersion"],
                    "apiVersion not echoed"
                );
            }
            let allowed = response["allowed"]
                .as_bool()
                .unwrap_or_else(|| panic!("no allowed flag: {body}"));
            let code = response["status"]["code"].as_u64().unwrap_or(0);
            assert!(
                !(allowed && code >= 400),
                "allowed together with code {code}: {body}"
            );
            if !allowed {
                // The view is static and synced, so 503 cannot happen, and a 500 means a rule
                // panicked (which the fuzzer reports earlier anyway).
                assert!(
                    code == 403 || code == 422,
                    "a denial with code {code}: {body}"
                );
                assert!(
                    response.get("patch").is_none(),
                    "a denial with a patch: {body}"
                );
                let causes = response["status"]["details"]["causes"].as_array();
                assert!(
                    causes.is_some_and(|c| !c.is_empty() && c.len() <= 101),
                    "a denial without causes, or past the cap: {body}"
                );
            }
            let summary = answer.summary.as_ref().expect("a 200 has a summary");
            assert_eq!(summary.allowed, allowed);
            assert_eq!(
                u64::from(summary.code),
                code,
                "the summary's code is not the answer's"
            );
        }
        other => panic!("HTTP status {other}: {body}"),
    }
}
