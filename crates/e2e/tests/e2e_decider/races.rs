//! Conflicting creates spread over two and three replicas: exactly one of each round admitted.

use super::*;

/// `rounds` rounds of 64 concurrent creates of one pool range, then of one IPAddress, spread
/// over every replica: exactly one of each round is admitted, the rest denied by P10 / A9.
pub async fn conflicting_creates(n: usize, rounds: usize, test: &str) {
    e2e::each_server(test, |assets| {
        conflicting_creates_against(assets, n, rounds)
    })
    .await;
}

pub async fn conflicting_creates_against(assets: e2e::Server, n: usize, rounds: usize) {
    let s = Setup::start(&assets, n).await;
    // The pool the IPAddresses are taken from, stored for real so every view holds it.
    let (status, body) = create(
        &s.client,
        &collection(&pool("addresses", "10.99.0.10-10.99.255.200")),
        &json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": {"name": "addresses", "namespace": NS},
            "spec": {"addresses": ["10.99.0.10-10.99.255.200"], "prefix": 16, "gateway": "10.99.0.1"}
        }),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    for r in &s.replicas {
        eventually(&format!("{} to see the pool", r.name), WAIT, || async {
            r.metric("ipam_guard_view_objects{kind=\"InClusterIPPool\"}")
                .await
                .is_some_and(|v| v >= 1.0)
        })
        .await;
    }
    let all = s.webhooks(&[]);
    let mut unavailable = 0;
    for round in 0..rounds {
        // A range and an address of their own per round: earlier rounds' pending entries
        // (nothing is written to the API server here) must not decide this one.
        let range = format!("10.98.{round}.10-10.98.{round}.20");
        let pools = (0..64)
            .map(|i| review(&pool(&format!("p-{round}-{i}"), &range), false))
            .collect();
        let answers = burst(&all, &s.pki.ca_der, pools).await;
        check_one_admitted(
            &answers,
            &format!("pool round {round}"),
            "P10",
            &mut unavailable,
        );

        let ip = format!("10.99.{round}.50");
        let addresses = (0..64)
            .map(|i| review(&address(&format!("a-{round}-{i}"), &ip), false))
            .collect();
        let answers = burst(&all, &s.pki.ca_der, addresses).await;
        check_one_admitted(
            &answers,
            &format!("address round {round}"),
            "A9",
            &mut unavailable,
        );
    }
    println!(
        "{n} replicas, {rounds} rounds x 2 kinds x 64 creates: exactly one admitted each round; {unavailable} answers were 503"
    );
    // What the operator sees: one leader, forwards from the others with their latency.
    let d = s.decider().await;
    for (i, r) in s.replicas.iter().enumerate() {
        let leader = r.metric("ipam_guard_decider_is_leader").await;
        assert_eq!(leader, Some(if i == d { 1.0 } else { 0.0 }), "{}", r.name);
        if i != d {
            let ok = r
                .metric("ipam_guard_decider_forwards_total{result=\"ok\"}")
                .await
                .unwrap_or(0.0);
            let timed = r
                .metric("ipam_guard_decider_forward_duration_seconds_count")
                .await
                .unwrap_or(0.0);
            assert!(
                ok > 0.0 && timed >= ok,
                "{}: forwards {ok}, timed {timed}",
                r.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_two_replicas_admit_exactly_one_of_64_conflicting_creates() {
    conflicting_creates(
        2,
        20,
        "x2_two_replicas_admit_exactly_one_of_64_conflicting_creates",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_three_replicas_admit_exactly_one_of_64_conflicting_creates() {
    conflicting_creates(
        3,
        20,
        "x2_three_replicas_admit_exactly_one_of_64_conflicting_creates",
    )
    .await;
}
