//! Every rule family end to end, on real-shaped AdmissionReview bodies (captures edited to fit the
//! state) against 10k pools, 100k claims and 100k addresses from `examples/gen-state.rs`:
//!
//! - `review/*`: `Admission::review`, bytes in to bytes out, through the `Ledger` view that
//!   `serve --state-from` uses (decision lock, pending entries for what is admitted);
//! - `decode/*`: only `serde_json::from_slice` of the same body, the floor under `review`;
//! - `rules/*`: only `rules::validate` on the decoded request, the part the index answers;
//! - `hostile/*`: bodies found by the hostile corpus (tests/hostile_regressions.rs), whose cost
//!   once grew with the square of their size.
//!
//! `cargo bench --bench review`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ipam_guard::admission::{Admission, Endpoint};
use ipam_guard::cluster::Ledger;
use ipam_guard::kinds::Kind;
use ipam_guard::model::{Operation, Request};
use ipam_guard::rules::{self, Ctx, Options};
use serde_json::{json, Value};

#[path = "support/mod.rs"]
mod support;

use support::{Case, State};

const POOLS: usize = 10_000;
const ADDRESSES: usize = 100_000;
const NAMESPACES: usize = 50;
/// Bodies per case; the benches use the first, `check` judges all.
const VARIANTS: usize = 2;

fn reviews(c: &mut Criterion) {
    let state = State::generate(POOLS, ADDRESSES, NAMESPACES, VARIANTS);
    let bodies = state.bodies(VARIANTS);
    let index = state.index.clone();
    let view = Arc::new(Ledger::new(state.index));
    let admission = Admission::new(view, Options::default());
    support::check(&bodies, &admission);
    let first = |case: Case| bodies.iter().find(|b| b.case == case).unwrap();

    let mut g = c.benchmark_group("review");
    for case in Case::ALL {
        let body = &first(case).bytes;
        g.bench_function(case.name(), |b| {
            b.iter(|| admission.review_now(Endpoint::Validate, black_box(body)))
        });
    }
    // The API server calls /mutate first for a claim create (M1, M2).
    let claim = &first(Case::ClaimCreate).bytes;
    g.bench_function("claim_create_mutate", |b| {
        b.iter(|| admission.review_now(Endpoint::Mutate, black_box(claim)))
    });
    g.finish();

    let mut g = c.benchmark_group("decode");
    for case in Case::ALL {
        let body = &first(case).bytes;
        g.bench_function(case.name(), |b| {
            b.iter(|| serde_json::from_slice::<Value>(black_box(body)).unwrap())
        });
    }
    g.finish();

    let ctx = Ctx {
        index: &index,
        options: Options::default(),
        now: std::time::Instant::now(),
    };
    let mut g = c.benchmark_group("rules");
    for case in Case::ALL {
        let review: Value = serde_json::from_slice(&first(case).bytes).unwrap();
        let req = request(&review);
        g.bench_function(case.name(), |b| {
            b.iter(|| rules::validate(black_box(&req), &ctx))
        });
    }
    g.finish();
}

/// An InClusterIPPool create with 100k entries that are not addresses: the reader stops at its
/// problem cap and the answer at 100 causes (once quadratic: 183 s in a debug build).
fn hostile(c: &mut Criterion) {
    let addresses: Vec<Value> = (0..100_000).map(|i| json!(format!("x{i}"))).collect();
    let body = serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "u", "operation": "CREATE", "name": "p", "namespace": "ns",
            "kind": {"group": "ipam.cluster.x-k8s.io", "version": "v1alpha2", "kind": "InClusterIPPool"},
            "object": {
                "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
                "metadata": {"name": "p", "namespace": "ns"},
                "spec": {"addresses": addresses, "prefix": 24}
            }
        }
    }))
    .unwrap();
    let admission = Admission::new(Arc::new(Ledger::default()), Options::default());
    let answer = admission.review_now(Endpoint::Validate, &body);
    assert!(answer.body.len() < 64 * 1024, "{} bytes", answer.body.len());
    let mut g = c.benchmark_group("hostile");
    g.bench_function("pool_100k_bad_entries", |b| {
        b.iter(|| admission.review_now(Endpoint::Validate, black_box(&body)))
    });
    g.finish();
}

/// The Metal3 and Spiderpool pools as a real API server sends their creates and updates
/// (`tests/fixtures/reviews/v1.36`), through the whole review against an empty view: what reading and
/// judging each kind's spec costs.
fn provider_pools(c: &mut Criterion) {
    let admission = Admission::new(Arc::new(Ledger::default()), Options::default());
    let mut g = c.benchmark_group("provider_pools");
    for name in [
        "metal3-ippool-create",
        "metal3-ippool-update-spec",
        "spiderippool-create",
        "spiderippool-update-spec",
    ] {
        let path = format!(
            "{}/tests/fixtures/reviews/v1.36/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let body = std::fs::read(&path).unwrap();
        assert_eq!(
            admission.review_now(Endpoint::Validate, &body).http_status,
            200
        );
        g.bench_function(name, |b| {
            b.iter(|| admission.review_now(Endpoint::Validate, black_box(&body)))
        });
    }
    g.finish();
}

/// The request as `admission` hands it to the rules.
fn request(review: &Value) -> Request<'_> {
    let r = &review["request"];
    fn s(v: &Value) -> &str {
        v.as_str().unwrap_or_default()
    }
    let obj = |k: &str| r.get(k).filter(|v| !v.is_null());
    Request {
        operation: Operation::parse(s(&r["operation"])).unwrap(),
        kind: Kind::from_group_kind(s(&r["kind"]["group"]), s(&r["kind"]["kind"])).unwrap(),
        version: s(&r["kind"]["version"]),
        namespace: r["namespace"].as_str(),
        name: s(&r["name"]),
        object: obj("object"),
        old_object: obj("oldObject"),
        dry_run: r["dryRun"].as_bool().unwrap_or(false),
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = reviews, hostile, provider_pools
}
criterion_main!(benches);
