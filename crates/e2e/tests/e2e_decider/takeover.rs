//! The decider goes away (killed, paused, shut down) and the next one takes over without ever
//! admitting two.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_killing_the_decider_never_admits_two_and_decisions_resume() {
    e2e::each_server(
        "x2_killing_the_decider_never_admits_two_and_decisions_resume",
        x2_killing_the_decider_never_admits_two_and_decisions_resume_against,
    )
    .await;
}

pub async fn x2_killing_the_decider_never_admits_two_and_decisions_resume_against(
    assets: e2e::Server,
) {
    let mut s = Setup::start(&assets, 3).await;
    let ca = s.pki.ca_der.clone();
    let d = s.decider().await;
    let range = "10.96.0.10-10.96.0.20";
    let mut n = 0;
    let mut bodies = |count: usize| -> Vec<Value> {
        (0..count)
            .map(|_| {
                n += 1;
                review(&pool(&format!("k-{n}"), range), false)
            })
            .collect()
    };
    // The decider admits one of a burst over all replicas, and dies before the API server has
    // written it (the write lands once the survivors have answered a burst without it, as a
    // slow write would).
    let first = burst(&s.webhooks(&[]), &ca, bodies(24)).await;
    let admitted: Vec<usize> = (0..first.len())
        .filter(|i| first[*i] == Answer::Allowed)
        .collect();
    assert_eq!(admitted.len(), 1, "{first:#?}");
    s.replicas[d].kill();
    let killed = Instant::now();
    let winner = pool(&format!("k-{}", admitted[0] + 1), range);
    let client = s.client.clone();
    let mut winner = Some(winner);
    let mut write = None;

    // Conflicting creates keep arriving at the survivors until decisions resume.
    let survivors = s.webhooks(&[d]);
    let mut resumed = None;
    let mut decided_after = 0;
    let mut refused = 0;
    while decided_after < 48 {
        assert!(killed.elapsed() < WAIT, "decisions did not resume");
        for a in burst(&survivors, &ca, bodies(8)).await {
            match a {
                Answer::Allowed => {
                    panic!("a second create of {range} was admitted after the decider died")
                }
                Answer::Denied(_, m) => {
                    assert!(m.contains("overlap"), "{m}");
                    resumed.get_or_insert(killed.elapsed());
                    decided_after += 1;
                }
                Answer::Unavailable(_) => refused += 1,
                Answer::Failed(e) => panic!("no answer from a survivor: {e}"),
            }
        }
        if let Some(winner) = winner.take() {
            let client = client.clone();
            write = Some(tokio::spawn(async move {
                let (status, body) = create(&client, &collection(&winner), &winner).await;
                assert_eq!(status, 201, "{body}");
            }));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    write.expect("the winner was written").await.unwrap();
    let resumed = resumed.unwrap();
    println!(
        "decider killed: decisions resumed after {resumed:?} ({refused} requests refused with 503 meanwhile; \
         lease 3s + pending TTL 5s unless E2E_DECIDER_DEFAULT_TIMING: 15s + 30s)"
    );
    let new = s.decider().await;
    assert_ne!(new, d);
    // A takeover is counted once even when the acquiring write's answer was lost (CI once saw
    // 0 here): the log says how the lease was won.
    assert_eq!(
        s.replicas[new]
            .metric("ipam_guard_decider_takeovers_total")
            .await,
        Some(1.0),
        "{}",
        election_log(&s.replicas[new])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_a_paused_decider_that_wakes_up_does_not_decide() {
    e2e::each_server(
        "x2_a_paused_decider_that_wakes_up_does_not_decide",
        x2_a_paused_decider_that_wakes_up_does_not_decide_against,
    )
    .await;
}

pub async fn x2_a_paused_decider_that_wakes_up_does_not_decide_against(assets: e2e::Server) {
    let s = Setup::start(&assets, 3).await;
    let ca = s.pki.ca_der.clone();
    let d = s.decider().await;
    s.replicas[d].signal("-STOP");
    // Another replica takes over and decides (after the lease expired and the pending TTL).
    let others = s.webhooks(&[d]);
    let mut i = 0;
    let last = Arc::new(std::sync::Mutex::new(None));
    eventually("another replica to decide", WAIT, || {
        i += 1;
        let body = review(&pool(&format!("probe-{i}"), "10.95.0.1-10.95.0.2"), true);
        let addr = others[i % others.len()];
        let ca = ca.clone();
        let last = last.clone();
        async move {
            let answer = send(addr, &ca, &body).await;
            let decided = answer.is_decided();
            *last.lock().unwrap() = Some((addr, answer));
            decided
        }
    })
    .await;
    let new = s.decider().await;
    assert_ne!(
        new,
        d,
        "the lease still names the paused replica, yet {:?} was decided:\n{}",
        last.lock().unwrap(),
        s.election_logs()
    );
    // Woken, the old decider gets its share of a conflicting burst. Twice: once with the API
    // server frozen, so its election loop cannot learn that it lost the lease and only the time
    // fence stands between it and a stale decision; then with the API server running.
    let all = s.webhooks(&[]);
    let apiserver = s.apiserver_pid();
    signal_pid("-STOP", &apiserver);
    s.replicas[d].signal("-CONT");
    for (round, frozen) in [(0, true), (1, false)] {
        if !frozen {
            signal_pid("-CONT", &apiserver);
        }
        let range = format!("10.95.{}.10-10.95.{}.20", round + 1, round + 1);
        let bodies = (0..64)
            .map(|i| review(&pool(&format!("w-{round}-{i}"), &range), false))
            .collect();
        let answers = burst(&all, &ca, bodies).await;
        let woken: Vec<&Answer> = answers.iter().skip(d).step_by(all.len()).collect();
        assert!(
            !woken.iter().any(|a| **a == Answer::Allowed && frozen),
            "the woken decider admitted on its own: {woken:#?}"
        );
        let admitted = answers.iter().filter(|a| **a == Answer::Allowed).count();
        // Frozen, the new decider may itself pass its renew deadline during the burst (then
        // nobody decides): at most one. Running, exactly one.
        if frozen {
            assert!(admitted <= 1, "{answers:#?}");
        } else {
            assert_eq!(admitted, 1, "{answers:#?}");
        }
        println!(
            "API server {}: woken decider's answers: {} refused (503), {} decided by the new decider; {admitted} admitted in all",
            if frozen { "frozen" } else { "running" },
            woken.iter().filter(|a| matches!(a, Answer::Unavailable(_))).count(),
            woken.iter().filter(|a| a.is_decided()).count()
        );
    }
    eventually(
        "the woken replica to report it is not the decider",
        WAIT,
        || async {
            s.replicas[d]
                .metric("ipam_guard_decider_is_leader")
                .await
                .is_some_and(|v| v == 0.0)
        },
    )
    .await;
    assert!(std::fs::read_to_string(&s.replicas[d].log)
        .unwrap()
        .contains("following the decider"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_a_decider_that_shuts_down_hands_its_admissions_to_the_next() {
    e2e::each_server(
        "x2_a_decider_that_shuts_down_hands_its_admissions_to_the_next",
        x2_a_decider_that_shuts_down_hands_its_admissions_to_the_next_against,
    )
    .await;
}

pub async fn x2_a_decider_that_shuts_down_hands_its_admissions_to_the_next_against(
    assets: e2e::Server,
) {
    let mut s = Setup::start(&assets, 2).await;
    let ca = s.pki.ca_der.clone();
    let d = s.decider().await;
    let other = s.replicas[1 - d].webhook;
    // Admitted by the decider, never written (the API server has not got to it yet): only the
    // pending entry stands for it.
    let range = "10.94.1.10-10.94.1.20";
    let first = review(&pool("handed-over", range), false);
    assert_eq!(send(other, &ca, &first).await, Answer::Allowed);

    s.replicas[d].signal("-TERM");
    let stopped = Instant::now();
    // The first decision the next decider makes already counts that admission: it took it over
    // instead of waiting out the pending TTL (after which the entry would be gone).
    let mut i = 0;
    let first_decided = loop {
        assert!(
            stopped.elapsed() < WAIT,
            "the other replica never decided:\n{}\n---\n{}",
            s.replicas[d].log_tail(30),
            s.replicas[1 - d].log_tail(30)
        );
        i += 1;
        let probe = review(&pool(&format!("probe-{i}"), range), true);
        let answer = send(other, &ca, &probe).await;
        if answer.is_decided() {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let resumed = stopped.elapsed();
    match &first_decided {
        Answer::Denied(_, m) => assert!(m.contains("overlap"), "{m}"),
        other => panic!(
            "the next decider did not know the handed-over admission: {other:?}\n{}\n---\n{}",
            election_log(&s.replicas[d]),
            election_log(&s.replicas[1 - d])
        ),
    }
    let exited = s.replicas[d]
        .wait_exit(WAIT)
        .await
        .expect("the decider did not exit on SIGTERM");
    assert!(exited.success(), "{exited}");
    assert!(std::fs::read_to_string(&s.replicas[d].log)
        .unwrap()
        .contains("released the decider lease"));
    assert!(std::fs::read_to_string(&s.replicas[1 - d].log)
        .unwrap()
        .contains("took over the previous decider's admissions"));
    assert_eq!(s.decider().await, 1 - d);
    println!("decider stopped (SIGTERM): the next one decided after {resumed:?}, with the handed-over admission");
}
