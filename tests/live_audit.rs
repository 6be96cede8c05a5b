//! `audit` (X4) against the fake API server: stored objects that would be denied now are reported
//! with check's rule ids, file `cluster`; unreadable kinds make the exit code 2. (The periodic
//! audit of `serve`, which judges the view instead, is `stored_audit.rs`'s.)

mod live_support;

use ipam_guard::judge::audit;
use ipam_guard::judge::stored::Judged;
use ipam_guard::judge::{Finding, Severity};
use ipam_guard::kinds::Kind;
use ipam_guard::rules::Options;
use live_support::*;

async fn cluster_with_slipped_objects() -> FakeApi {
    let api = FakeApi::start().await;
    for k in [
        Kind::IPAddressClaim,
        Kind::IPAddress,
        Kind::InClusterIPPool,
        Kind::GlobalInClusterIPPool,
        Kind::VSphereMachine,
    ] {
        api.serve(k);
    }
    // Stored before the webhook was installed: two pools sharing 10.0.0.15-10.0.0.20 and two
    // addresses holding 10.0.0.12.
    api.apply(in_cluster_pool("ns", "pool-a", &["10.0.0.10-10.0.0.20"]));
    api.apply(in_cluster_pool("ns", "pool-b", &["10.0.0.15-10.0.0.30"]));
    api.apply(ip_address("ns", "addr-1", "10.0.0.12", "pool-a"));
    api.apply(ip_address("ns", "addr-2", "10.0.0.12", "pool-a"));
    api.apply(claim("ns", "addr-1", "pool-a"));
    api.apply(claim("ns", "addr-2", "pool-a"));
    api
}

fn rules_of(findings: &[Finding], severity: Severity) -> Vec<&'static str> {
    let mut r: Vec<&'static str> = findings
        .iter()
        .filter(|f| f.severity == severity)
        .map(|f| f.rule)
        .collect();
    r.sort();
    r.dedup();
    r
}

#[tokio::test]
async fn x4_audit_reports_stored_overlaps_and_duplicates() {
    let api = cluster_with_slipped_objects().await;
    let outcome = audit::audit(&api.client(), Options::default()).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    let denied = rules_of(&outcome.findings, Severity::Deny);
    assert!(denied.contains(&"P10"), "{:#?}", outcome.findings);
    assert!(denied.contains(&"A9"), "{:#?}", outcome.findings);
    for f in &outcome.findings {
        assert_eq!(f.subject.file.as_deref(), Some("cluster"));
    }
    // Both sides of each conflict are reported: each is judged as if created next to the other.
    let p10: Vec<String> = outcome
        .findings
        .iter()
        .filter(|f| f.rule == "P10")
        .map(|f| f.subject.key.to_string())
        .collect();
    assert!(
        p10.contains(&"InClusterIPPool ns/pool-a".to_string()),
        "{p10:?}"
    );
    assert!(
        p10.contains(&"InClusterIPPool ns/pool-b".to_string()),
        "{p10:?}"
    );
    let text = outcome
        .findings
        .iter()
        .find(|f| f.rule == "A9")
        .unwrap()
        .to_string();
    assert!(text.starts_with("cluster: IPAddress ns/addr-"), "{text}");
    assert!(text.ends_with("[A9]"), "{text}");
    assert_eq!(outcome.summary.exit_code(), 1);
    assert_eq!(
        outcome.summary.objects.get(&Kind::InClusterIPPool),
        Some(&2)
    );
    assert_eq!(outcome.summary.objects.get(&Kind::IPAddress), Some(&2));
}

#[tokio::test]
async fn x4_a_namespace_audit_judges_its_objects_against_the_whole_cluster() {
    let api = cluster_with_slipped_objects().await;
    // Another namespace's pool overlapping ns's pools in the same address space, and an address
    // there holding 10.0.0.12 too: ns's objects are refused because of it, and it is not judged.
    api.apply(in_cluster_pool("other", "pool-c", &["10.0.0.18-10.0.0.19"]));
    api.apply(ip_address("other", "addr-9", "10.0.0.40", "pool-c"));
    let whole = audit::audit(&api.client(), Options::default()).await;
    let ns = audit::audit_judging(
        &api.client(),
        Options::default(),
        Judged::Namespace("ns".into()),
    )
    .await;
    assert!(ns.errors.is_empty(), "{:?}", ns.errors);
    let lines = |findings: &[Finding], only_ns: bool| {
        findings
            .iter()
            .filter(|f| !only_ns || f.subject.key.namespace() == Some("ns"))
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(lines(&ns.findings, false), lines(&whole.findings, true));
    assert!(
        lines(&ns.findings, false)
            .iter()
            .any(|l| l.contains("pool-a") && l.contains("other/pool-c")),
        "{:#?}",
        ns.findings
    );
    assert!(
        whole
            .findings
            .iter()
            .any(|f| f.subject.key.namespace() == Some("other")),
        "the other namespace has findings of its own"
    );
    // Only ns's objects were judged: the others were kept as what they count for.
    assert_eq!(ns.summary.objects.get(&Kind::InClusterIPPool), Some(&2));
    assert_eq!(whole.summary.objects.get(&Kind::InClusterIPPool), Some(&3));
}

#[tokio::test]
async fn x4_audit_of_a_clean_cluster_exits_0() {
    let api = FakeApi::start().await;
    api.serve(Kind::InClusterIPPool);
    api.serve(Kind::IPAddress);
    api.apply(in_cluster_pool("ns", "pool-a", &["10.0.0.10-10.0.0.20"]));
    let outcome = audit::audit(&api.client(), Options::default()).await;
    assert!(outcome.errors.is_empty());
    assert_eq!(
        rules_of(&outcome.findings, Severity::Deny),
        Vec::<&str>::new()
    );
    assert_eq!(outcome.summary.exit_code(), 0);
}

#[tokio::test]
async fn x4_audit_without_a_cluster_exits_2() {
    let client = {
        let api = FakeApi::start().await;
        api.client()
    };
    let outcome = audit::audit(&client, Options::default()).await;
    assert_eq!(outcome.errors.len(), 1, "{:?}", outcome.errors);
    assert!(outcome.errors[0].contains("discovery"));
    assert_eq!(outcome.summary.exit_code(), 2);
}

/// Progress (a line per kind: objects read, rate) goes to stderr only when it is a terminal: the
/// binary under a pseudo-terminal (`script`) shows it, piped (CI logs) or with `--quiet` it does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_only_on_a_terminal() {
    let api = cluster_with_slipped_objects().await;
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: f\n  cluster: {{server: 'http://{}'}}\n\
             users:\n- name: u\n  user: {{}}\ncontexts:\n- name: f\n  context: {{cluster: f, user: u}}\n\
             current-context: f\n",
            api.addr
        ),
    )
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_ipam-guard");
    let kc = kc.to_str().unwrap().to_string();
    let run = move |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            let o = std::process::Command::new(args[0].clone())
                .args(&args[1..])
                .stdin(std::process::Stdio::null())
                .output()
                .expect("run");
            (
                String::from_utf8_lossy(&o.stdout).to_string(),
                String::from_utf8_lossy(&o.stderr).to_string(),
            )
        })
    };
    let piped = run(vec![
        bin.into(),
        "audit".into(),
        "--kubeconfig".into(),
        kc.clone(),
    ])
    .await
    .unwrap();
    assert!(piped.0.contains("[P10]"), "{piped:?}");
    assert!(!piped.1.contains("objects in"), "{}", piped.1);
    // `script` gives the command a terminal for stdin, stdout and stderr alike, and copies what
    // it writes to its own stdout.
    let command = |quiet: &str| format!("{bin} audit --kubeconfig {kc} {quiet}");
    let tty = run(vec![
        "script".into(),
        "-qec".into(),
        command(""),
        "/dev/null".into(),
    ])
    .await
    .unwrap();
    assert!(tty.0.contains("[P10]"), "{tty:?}");
    assert!(tty.0.contains("IPAddress: 2 objects in"), "{}", tty.0);
    let quiet = run(vec![
        "script".into(),
        "-qec".into(),
        command("--quiet"),
        "/dev/null".into(),
    ])
    .await
    .unwrap();
    assert!(quiet.0.contains("[P10]"), "{quiet:?}");
    assert!(!quiet.0.contains("objects in"), "{}", quiet.0);
}
