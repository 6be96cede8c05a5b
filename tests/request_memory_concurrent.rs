//! Memory per pathological request under concurrency (docs/robustness.md, O1): 16 pathological reviews at once, on 16 worker threads (a big
//! node: tokio starts one per core whatever the pod's CPU limit), stay within the Deployment's
//! 256 Mi because judging waits for a budget of body bytes (`Config::judging_budget`). Counted by
//! a global allocator (peak live bytes of the whole process: server, client and bodies).
//!
//! `cargo test --test request_memory_concurrent -- --nocapture` prints the figures.

mod counting_alloc;
mod server_support;

use bytes::Bytes;
use ipam_guard::server::CertFiles;
use serde_json::json;
use server_support::*;

const REQUESTS: usize = 16;
const LIMIT: usize = 256 << 20;

fn bad_pool() -> Bytes {
    let body = serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "u", "operation": "CREATE", "name": "p", "namespace": "ns",
            "kind": {"group": "ipam.cluster.x-k8s.io", "version": "v1alpha2", "kind": "InClusterIPPool"},
            "object": {
                "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
                "metadata": {"name": "p", "namespace": "ns"},
                "spec": {"addresses": vec![json!("x"); 750_000], "prefix": 24}
            }
        }
    }))
    .unwrap();
    Bytes::from(body)
}

/// Peak live bytes while `REQUESTS` copies of a 3 MB bad pool are reviewed at once.
async fn peak_with_budget(budget: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    config.judging_budget = budget;
    let server = TestServer::start(config).await;
    let body = bad_pool();
    let mut conns = Vec::new();
    for _ in 0..REQUESTS {
        conns.push(
            Conn::open(server.addrs.webhook, &ca.der, Proto::H1)
                .await
                .unwrap(),
        );
    }
    let base = counting_alloc::reset_peak();
    let sends = conns.into_iter().map(|mut c| {
        let body = body.clone();
        tokio::spawn(async move {
            let reply = c
                .send(post("/validate", Some("application/json"), body))
                .await
                .unwrap();
            assert_eq!(reply.status, 200);
            assert_eq!(reply.json()["response"]["allowed"], false);
        })
    });
    for s in sends.collect::<Vec<_>>() {
        s.await.unwrap();
    }
    let peak = counting_alloc::peak_since(base);
    server.stop().await;
    peak
}

#[tokio::test(flavor = "multi_thread", worker_threads = 16)]
async fn sixteen_pathological_reviews_at_once_stay_under_the_pod_limit() {
    let bounded = peak_with_budget(ipam_guard::server::JUDGING_BUDGET).await;
    let unbounded = peak_with_budget(usize::MAX).await;
    println!(
        "{REQUESTS} reviews of a 3 MB pool of 750k bad entries at once: peak {:.0} MiB with the \
         judging budget, {:.0} MiB without",
        bounded as f64 / (1 << 20) as f64,
        unbounded as f64 / (1 << 20) as f64
    );
    assert!(bounded < LIMIT, "{bounded} bytes at peak");
}
