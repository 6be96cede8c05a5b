//! The checker's own tests: each defect it must find, injected into a made-up history.
use super::*;

fn pool(name: &str, range: &str) -> Spec {
    let _ = name;
    Spec::Pool(PoolSpec {
        addresses: vec![range.to_string()],
        excluded: Vec::new(),
        gateway: Some("10.50.0.1".into()),
        prefix: 24,
        allocate_reserved: false,
        space: DEFAULT_SPACE.into(),
    })
}

fn addr(ip: &str, pool: &str) -> Spec {
    Spec::Address(AddressSpec {
        ip: ip.into(),
        pool: Key::new(Kind::Pool, pool),
        claim: format!("claim-{ip}"),
    })
}

fn rec(
    method: Method,
    key: Key,
    spec: Option<Spec>,
    send: f64,
    answer: f64,
    outcome: Outcome,
    message: &str,
) -> Record {
    Record {
        client: 0,
        tag: "test",
        method,
        key,
        spec,
        send,
        answer,
        outcome,
        status: 0,
        message: message.into(),
        uid: Some(format!("uid-{send}")),
    }
}

fn run(history: &[Record]) -> Findings {
    check(&Input {
        history,
        during: &[],
        last: &[],
        faults: &[],
        ttl: 5.0,
        slack: 2.0,
        no_decider: 2.5,
    })
}

fn a(name: &str) -> Key {
    Key::new(Kind::Address, name)
}

fn p(name: &str) -> Key {
    Key::new(Kind::Pool, name)
}

/// The defect this soak was written for: a stored address hidden by an AlreadyExists
/// re-create, and a second address stored at its address.
#[test]
fn a_duplicate_stored_after_an_already_exists_is_a_violation() {
    let h = vec![
        rec(
            Method::Create,
            p("pool-0"),
            Some(pool("pool-0", "10.50.0.10-10.50.0.20")),
            0.0,
            0.1,
            Outcome::Done,
            "",
        ),
        rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.11", "pool-0")),
            1.0,
            1.1,
            Outcome::Done,
            "",
        ),
        rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.12", "pool-0")),
            2.0,
            2.1,
            Outcome::AlreadyExists,
            "",
        ),
        rec(
            Method::Create,
            a("addr-2"),
            Some(addr("10.50.0.11", "pool-0")),
            2.2,
            2.3,
            Outcome::Done,
            "",
        ),
    ];
    let f = run(&h);
    assert_eq!(f.violations.len(), 1, "{f:#?}");
    assert!(f.violations[0].contains("duplicate address"), "{f:#?}");
    assert_eq!(f.after_refused_write, 1, "{f:#?}");
    // Without the first address stored, nothing is wrong.
    let f = run(&h[2..]);
    assert!(f.violations.is_empty(), "{f:#?}");
}

#[test]
fn overlapping_pools_and_a_held_pool_deleted_are_violations() {
    let h = vec![
        rec(
            Method::Create,
            p("pool-0"),
            Some(pool("pool-0", "10.50.0.10-10.50.0.20")),
            0.0,
            0.1,
            Outcome::Done,
            "",
        ),
        rec(
            Method::Create,
            p("pool-1"),
            Some(pool("pool-1", "10.50.0.20-10.50.0.30")),
            1.0,
            1.1,
            Outcome::Done,
            "",
        ),
        rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.11", "pool-0")),
            2.0,
            2.1,
            Outcome::Done,
            "",
        ),
        rec(
            Method::Delete,
            p("pool-0"),
            None,
            3.0,
            3.1,
            Outcome::Done,
            "",
        ),
    ];
    let f = run(&h);
    assert_eq!(f.violations.len(), 2, "{f:#?}");
    assert!(f.violations[0].contains("overlapping pool"), "{f:#?}");
    assert!(f.violations[1].contains("P9"), "{f:#?}");
}

#[test]
fn p8_guards_only_what_the_pool_held() {
    let update = |range: &str, send: f64| {
        rec(
            Method::Update,
            p("pool-0"),
            Some(pool("pool-0", range)),
            send,
            send + 0.1,
            Outcome::Done,
            "",
        )
    };
    let mut h = vec![
        rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.40", "pool-0")),
            0.0,
            0.1,
            Outcome::Done,
            "",
        ),
        rec(
            Method::Create,
            p("pool-0"),
            Some(pool("pool-0", "10.50.0.10-10.50.0.20")),
            1.0,
            1.1,
            Outcome::Done,
            "",
        ),
        update("10.50.0.10-10.50.0.15", 2.0),
    ];
    assert!(
        run(&h).violations.is_empty(),
        "stored while its pool was absent"
    );
    h.push(update("10.50.0.30-10.50.0.45", 3.0));
    h.push(update("10.50.0.30-10.50.0.35", 4.0));
    let f = run(&h);
    assert_eq!(f.violations.len(), 1, "{f:#?}");
    assert!(f.violations[0].contains("(P8)"), "{f:#?}");
}

#[test]
fn a_call_that_may_have_changed_the_holder_makes_it_uncertain() {
    let h = vec![
        rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.11", "pool-0")),
            1.0,
            1.1,
            Outcome::Done,
            "",
        ),
        rec(
            Method::Delete,
            a("addr-1"),
            None,
            1.5,
            3.5,
            Outcome::NoAnswer,
            "",
        ),
        rec(
            Method::Create,
            a("addr-2"),
            Some(addr("10.50.0.11", "pool-0")),
            2.2,
            2.3,
            Outcome::Done,
            "",
        ),
    ];
    assert!(run(&h).violations.is_empty());
}

fn denied(key: Key, spec: Spec, send: f64, message: &str) -> Record {
    let ids = rule_ids(message);
    rec(
        Method::Create,
        key,
        Some(spec),
        send,
        send + 0.1,
        Outcome::Denied(ids),
        message,
    )
}

#[test]
fn a_refusal_naming_an_object_long_gone_is_false() {
    let held = "spec.address: Duplicate value: \"10.50.0.11\": 10.50.0.11 is already held by IPAddress soak/addr-1 [ipam-guard A9]";
    let h = vec![
        rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.11", "pool-0")),
            1.0,
            1.1,
            Outcome::Done,
            "",
        ),
        rec(
            Method::Delete,
            a("addr-1"),
            None,
            2.0,
            2.1,
            Outcome::Done,
            "",
        ),
        denied(a("addr-2"), addr("10.50.0.11", "pool-0"), 20.0, held),
    ];
    let f = run(&h);
    assert_eq!(f.refusals_checked, 1);
    assert_eq!(f.false_refusals.len(), 1, "{f:#?}");
    // Within the slack of the delete, or of an admission within the TTL, it is explained.
    for send in [3.0, 5.5] {
        let mut h = h.clone();
        h[2] = denied(a("addr-2"), addr("10.50.0.11", "pool-0"), send, held);
        h.push(rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.11", "pool-0")),
            1.5,
            1.6,
            Outcome::AlreadyExists,
            "",
        ));
        assert!(run(&h).false_refusals.is_empty(), "at {send}");
    }
}

/// The definitions `History` answers quickly, answered slowly, straight from the words.
fn certain_by_definition<'a>(
    ops: &[&'a Record],
    a: f64,
    b: f64,
    but: Option<&Record>,
) -> Option<&'a Record> {
    ops.iter()
        .copied()
        .filter(|v| v.outcome == Outcome::Done && is_write(v) && v.answer < a)
        .filter(|v| !but.is_some_and(|x| std::ptr::eq(*v, x)))
        .find(|v| {
            !ops.iter().any(|j| {
                !std::ptr::eq(*j, *v)
                    && !but.is_some_and(|x| std::ptr::eq(*j, x))
                    && j.outcome.may_have_applied()
                    && j.answer > v.send
                    && j.send < b
            })
        })
}

fn present_by_definition(ops: &[&Record], ttl: f64, from: f64, to: f64, ip: &str) -> bool {
    ops.iter().any(|v| {
        let Some(spec) = &v.spec else { return false };
        if !is_write(v) || !v.outcome.may_have_been_admitted() {
            return false;
        }
        let mut until = v.answer + ttl;
        if v.outcome.may_have_applied() {
            let end = ops
                .iter()
                .filter(|j| j.outcome == Outcome::Done && j.send > v.answer)
                .map(|j| j.answer)
                .fold(f64::INFINITY, f64::min);
            until = until.max(end);
        }
        v.send <= to && until >= from && spec.address().is_some_and(|a| a.ip == ip)
    })
}

#[test]
fn the_quick_answers_are_the_definitions() {
    let outcomes = [
        Outcome::Done,
        Outcome::Done,
        Outcome::NoAnswer,
        Outcome::AlreadyExists,
        Outcome::NotFound,
        Outcome::Denied(vec!["A9".into()]),
    ];
    let methods = [Method::Create, Method::Create, Method::Delete];
    let ips = ["10.50.0.2", "10.50.0.3"];
    for seed in 0..300 {
        let mut rng = super::super::rng::Rng::new(seed);
        let n = rng.between(1, 14) as usize;
        let records: Vec<Record> = (0..n)
            .map(|_| {
                let send = rng.below(200) as f64 / 10.0;
                let answer = send + rng.between(1, 40) as f64 / 10.0;
                let method = *rng.pick(&methods);
                let spec =
                    (method != Method::Delete).then(|| addr(ips[rng.below(2) as usize], "pool-0"));
                rec(
                    method,
                    a("addr-1"),
                    spec,
                    send,
                    answer,
                    rng.pick(&outcomes).clone(),
                    "",
                )
            })
            .collect();
        let h = History::new(&records, 5.0, &|t| t + 5.0);
        let mut ops: Vec<&Record> = records.iter().collect();
        ops.sort_by(|x, y| x.send.total_cmp(&y.send));
        for _ in 0..40 {
            let x = rng.below(300) as f64 / 10.0;
            let y = x + rng.below(50) as f64 / 10.0;
            let but = (rng.chance(0.3)).then(|| *rng.pick(&ops));
            let quick = h
                .certain_but(&a("addr-1"), x, y, but)
                .map(|r| r as *const Record);
            let slow = certain_by_definition(&ops, x, y, but).map(|r| r as *const Record);
            assert_eq!(
                quick, slow,
                "seed {seed}: certain over [{x}, {y}] of {records:#?}"
            );
            let ip = *rng.pick(&ips);
            let quick = h.possibly_present(&a("addr-1"), x, y, |s| {
                s.address().is_some_and(|a| a.ip == ip)
            });
            let slow = present_by_definition(&ops, 5.0, x, y, ip);
            assert_eq!(
                quick, slow,
                "seed {seed}: present in [{x}, {y}] of {records:#?}"
            );
        }
    }
}

#[test]
fn a_pending_entry_outlives_its_ttl_only_by_the_watch_faults_it_meets() {
    assert_eq!(pending_until(10.0, 5.0, &[]), 15.0);
    assert_eq!(pending_until(10.0, 5.0, &[(1.0, 9.0), (16.0, 30.0)]), 15.0);
    assert_eq!(pending_until(10.0, 5.0, &[(12.0, 20.0)]), 23.0);
    assert_eq!(pending_until(10.0, 5.0, &[(8.0, 20.0), (22.0, 25.0)]), 28.0);

    let held = "spec.address: Duplicate value: \"10.50.0.11\": 10.50.0.11 is already held by IPAddress soak/addr-1 [ipam-guard A9]";
    let h = vec![
        rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.11", "pool-0")),
            1.0,
            1.1,
            Outcome::AlreadyExists,
            "",
        ),
        denied(a("addr-2"), addr("10.50.0.11", "pool-0"), 20.0, held),
    ];
    let restart = Fault {
        kind: super::super::faults::FaultKind::RestartApiServer,
        start: 2.0,
        end: 8.0,
        detail: String::new(),
        hit_the_decider: false,
        effect: None,
        missed: None,
    };
    let with = |faults: &[Fault]| {
        check(&Input {
            history: &h,
            during: &[],
            last: &[],
            faults,
            ttl: 5.0,
            slack: 2.0,
            no_decider: 2.5,
        })
    };
    let f = with(&[]);
    assert_eq!(
        (f.false_refusals.len(), f.stale_after_watch_fault.len()),
        (1, 0)
    );
    let f = with(std::slice::from_ref(&restart));
    assert_eq!(
        (f.false_refusals.len(), f.stale_after_watch_fault.len()),
        (0, 1)
    );
}

#[test]
fn an_admission_while_no_replica_can_decide_is_a_violation() {
    let h = vec![
        rec(
            Method::Create,
            p("pool-0"),
            Some(pool("pool-0", "10.50.0.10-10.50.0.20")),
            10.5,
            11.0,
            Outcome::Done,
            "",
        ),
        rec(
            Method::Create,
            p("pool-1"),
            Some(pool("pool-1", "10.50.0.30-10.50.0.40")),
            13.0,
            13.1,
            Outcome::Done,
            "",
        ),
    ];
    let kill = |hit_the_decider| Fault {
        kind: FaultKind::KillDecider,
        start: 10.0,
        end: 12.0,
        detail: String::new(),
        hit_the_decider,
        effect: None,
        missed: None,
    };
    let run_with = |fault: Fault| {
        check(&Input {
            history: &h,
            during: &[],
            last: &[],
            faults: &[fault],
            ttl: 5.0,
            slack: 2.0,
            no_decider: 2.5,
        })
    };
    let f = run_with(kill(true));
    assert_eq!(f.violations.len(), 1, "{f:#?}");
    assert!(f.violations[0].contains("pool-0"), "{f:#?}");
    assert!(run_with(kill(false)).violations.is_empty());
}

#[test]
fn a_refusal_on_an_entry_a_handover_kept_past_its_ttl_stays_false_and_says_so() {
    let held = "spec.address: Duplicate value: \"10.50.0.11\": 10.50.0.11 is already held by IPAddress soak/addr-1 [ipam-guard A9]";
    let h = vec![
        rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.11", "pool-0")),
            36.1,
            36.2,
            Outcome::AlreadyExists,
            "",
        ),
        denied(a("addr-2"), addr("10.50.0.11", "pool-0"), 43.4, held),
    ];
    let handover = Fault {
        kind: FaultKind::TermDecider,
        start: 41.0,
        end: 43.2,
        detail: String::new(),
        hit_the_decider: false,
        effect: None,
        missed: None,
    };
    let f = check(&Input {
        history: &h,
        during: &[],
        last: &[],
        faults: std::slice::from_ref(&handover),
        ttl: 5.0,
        slack: 2.0,
        no_decider: 2.5,
    });
    assert_eq!(
        (f.false_refusals.len(), f.false_after_handover),
        (1, 1),
        "{f:#?}"
    );
    assert!(
        f.false_refusals[0].contains("whole pending TTL again"),
        "{f:#?}"
    );
}

#[test]
fn denial_messages_are_read() {
    let p10 = "spec.addresses[0]: Invalid value: \"10.50.0.15-10.50.0.30\": overlaps InClusterIPPool soak/pool-1 (10.50.0.15-10.50.0.20, 10.50.0.22), GlobalInClusterIPPool gpool-0 (10.50.0.30) [ipam-guard P10]";
    let cs = causes(p10);
    assert_eq!(cs.len(), 1);
    let n = named(&cs[0].0, &cs[0].1).unwrap();
    assert_eq!(
        n,
        vec![
            Named::Pool(
                p("pool-1"),
                Set::parse_all(&[
                    "10.50.0.15-10.50.0.20".to_string(),
                    "10.50.0.22".to_string()
                ])
            ),
            Named::Pool(
                Key::new(Kind::GlobalPool, "gpool-0"),
                Set::parse_entry("10.50.0.30")
            ),
        ]
    );
    let p9 = "metadata.name: Forbidden: Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed. Held by: soak/addr-1 (10.50.0.11), soak/addr-2 (10.50.0.12) [ipam-guard P9]";
    let cs = causes(p9);
    assert_eq!(
        named(&cs[0].0, &cs[0].1).unwrap(),
        vec![
            Named::Holder(a("addr-1"), "10.50.0.11".into()),
            Named::Holder(a("addr-2"), "10.50.0.12".into())
        ]
    );
    let two = "x: 10.50.0.11 is already held by IPAddress soak/addr-1 [ipam-guard A9], y: something [ipam-guard A6]";
    let cs = causes(two);
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[1].0, "A6");
    assert!(named("A6", &cs[1].1).is_none());
    assert!(named(
        "A9",
        "10.50.0.11 is already held by IPAddress soak/a, IPAddress soak/b and 3 more"
    )
    .is_none());
}

/// A write the API server gave up on while ipam-guard's answer was held (its webhook timeout)
/// may have been admitted: a refusal naming it is explained until the pending TTL from that
/// answer, and false after; the timeout is no allow, and a violation after it names it.
#[test]
fn a_write_refused_by_the_webhook_timeout_holds_its_entry_until_the_ttl() {
    let held = "spec.address: Duplicate value: \"10.50.0.11\": 10.50.0.11 is already held by IPAddress soak/addr-1 [ipam-guard A9]";
    let timed_out = rec(
        Method::Create,
        a("addr-1"),
        Some(addr("10.50.0.11", "pool-0")),
        1.0,
        11.0,
        Outcome::WebhookTimeout,
        "failed calling webhook \"validate.ipam-guard.io\": context deadline exceeded",
    );
    let (outcome, _, _) = classify(&Ok((
        500,
        serde_json::json!({"message": timed_out.message.clone()}),
    )));
    assert_eq!(outcome, Outcome::WebhookTimeout);
    assert!(!outcome.may_have_applied() && outcome.may_have_been_admitted());
    for (send, false_refusals) in [(4.0, 0), (15.5, 0), (19.0, 1)] {
        let h = vec![
            timed_out.clone(),
            denied(a("addr-2"), addr("10.50.0.11", "pool-0"), send, held),
        ];
        let f = run(&h);
        assert_eq!(f.refusals_checked, 1);
        assert_eq!(f.false_refusals.len(), false_refusals, "at {send}: {f:#?}");
        assert!(f.violations.is_empty(), "{f:#?}");
    }
    // The entry may have hidden a stored address: a duplicate stored right after it is still a
    // violation, and its text says what may have hidden it.
    let h = vec![
        rec(
            Method::Create,
            a("addr-1"),
            Some(addr("10.50.0.11", "pool-0")),
            0.0,
            0.1,
            Outcome::Done,
            "",
        ),
        timed_out.clone(),
        rec(
            Method::Create,
            a("addr-2"),
            Some(addr("10.50.0.11", "pool-0")),
            12.0,
            12.1,
            Outcome::Done,
            "",
        ),
    ];
    let f = run(&h);
    assert_eq!(f.violations.len(), 1, "{f:#?}");
    assert_eq!(f.after_refused_write, 1, "{f:#?}");
}
