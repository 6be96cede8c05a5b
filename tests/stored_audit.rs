//! X4 in the pod: `serve --audit-interval` judges what the view holds (`rules::stored`)
//! instead of listing the cluster again. Over the broken examples, what it finds agrees with
//! `check` for every rule a projection can answer.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipam_guard::cluster::{ClusterView, StaticView};
use ipam_guard::judge::audit::{self, ClusterFindings};
use ipam_guard::judge::{self, Finding, Severity};
use ipam_guard::rules::Options;
use ipam_guard::server::audit::{periodic, register_violations, Outputs, ViolationLabels};
use prometheus_client::registry::Registry;

/// What the projections answer exactly as admission words it.
const SAME_TEXT: &[&str] = &["A7", "A8", "A9", "MA4"];

fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/broken");
    [
        "a7-two-addresses-for-one-claim.yaml",
        "a8-address-outside-pool.yaml",
        "a9-duplicate-address.yaml",
        "ma4-address-outside-pool.yaml",
        "ma4-duplicate-of-capi-address.yaml",
        "p10-overlapping-pools.yaml",
        "p10-metal3-overlaps-spiderpool.yaml",
        "a8-sub-prefix-not-its-network-address.yaml",
        "p10-prefix-pool-overlaps-ip-pool.yaml",
    ]
    .iter()
    .map(|f| dir.join(f))
    .collect()
}

/// (rule, object, field, message) of the denials.
fn denials(findings: &[Finding], rules: &[&str]) -> BTreeSet<(String, String, String, String)> {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Deny && rules.contains(&f.rule))
        .map(|f| {
            (
                f.rule.to_string(),
                f.subject.key.to_string(),
                f.field.clone(),
                without_value(&f.message),
            )
        })
        .collect()
}

/// `Duplicate value: "2001:DB8::5": detail` → `Duplicate value: detail`: the view keeps the
/// parsed address, so it shows the canonical text where `check` shows what was written.
fn without_value(message: &str) -> String {
    match (message.split_once(": \""), message.split_once("\": ")) {
        (Some((kind, _)), Some((_, detail))) => format!("{kind}: {detail}"),
        _ => message.to_string(),
    }
}

#[test]
fn x4_the_view_audit_agrees_with_check_on_what_projections_answer() {
    // Each example on its own, so objects of one do not meet those of another.
    for path in examples() {
        let view = StaticView::load(std::slice::from_ref(&path)).unwrap();
        let (_, checked) = judge::judge(view.manifests().to_vec(), Options::default());
        let from_view = audit::judge_view(&view, Options::default());
        let name = path.file_name().unwrap().to_string_lossy().to_string();

        let want = denials(&checked, SAME_TEXT);
        let got = denials(&from_view.findings, SAME_TEXT);
        assert_eq!(got, want, "{name}");

        // P10: the same pools are found overlapping, naming the same other pools.
        let p10 = |fs: &[Finding]| -> BTreeSet<String> {
            fs.iter()
                .filter(|f| f.rule == "P10" && f.severity == Severity::Deny)
                .map(|f| f.subject.key.to_string())
                .collect()
        };
        assert_eq!(p10(&from_view.findings), p10(&checked), "{name}");
        for f in from_view.findings.iter().filter(|f| f.rule == "P10") {
            for other in checked
                .iter()
                .filter(|c| c.rule == "P10" && c.subject.key == f.subject.key)
            {
                let named = other.message.split("overlaps ").nth(1).unwrap_or_default();
                let first = named.split(' ').next().unwrap_or_default();
                assert!(
                    f.message.contains(first),
                    "{name}: {} vs {}",
                    f.message,
                    other.message
                );
            }
        }
        let found: usize = [want.len(), p10(&checked).len()].iter().sum();
        assert!(
            found > 0,
            "{name}: the example shows nothing the view can answer"
        );
    }
}

#[test]
fn x4_the_view_audit_of_clean_manifests_finds_nothing() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/manifests");
    let view = StaticView::load(&[dir]).unwrap();
    let outcome = audit::judge_view(&view, Options::default());
    assert!(outcome.findings.is_empty(), "{:?}", outcome.findings);
    assert!(outcome.summary.objects.values().sum::<usize>() > 0);
}

#[tokio::test]
async fn x4_periodic_view_audit_sets_violations_per_rule() {
    let view: Arc<dyn ClusterView> = Arc::new(StaticView::load(&examples()[5..6]).unwrap());
    let mut registry = Registry::default();
    let violations = register_violations(&mut registry);
    let task = tokio::spawn(periodic(
        view,
        Options::default(),
        Duration::from_millis(50),
        Outputs {
            violations: violations.clone(),
            findings: None,
            reports: None,
        },
    ));
    let start = Instant::now();
    let p10 = ViolationLabels { rule: "P10".into() };
    while violations.get_or_create(&p10).get() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no P10 violations reported"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        violations.get_or_create(&p10).get(),
        2,
        "both overlapping pools"
    );
    task.abort();
}

/// Process CPU seconds (user + system) from /proc/self/stat, at 100 ticks a second.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap()
}

/// The figure of manifests/README.md: `IPAM_GUARD_STATE=/tmp/state cargo test --test stored_audit
/// -- --ignored --nocapture`, with a state from `cargo run --example gen-state`.
#[test]
#[ignore = "needs a generated state in IPAM_GUARD_STATE"]
fn measure_view_audit() {
    let dir = PathBuf::from(std::env::var("IPAM_GUARD_STATE").expect("IPAM_GUARD_STATE"));
    let view = StaticView::load(&[dir]).unwrap();
    let objects: usize = view.object_counts().iter().map(|(_, n)| n).sum();
    for round in 0..3 {
        let (cpu, rss, wall) = (cpu_seconds(), rss_kib(), Instant::now());
        let outcome = audit::judge_view(&view, Options::default());
        println!(
            "round {round}: {objects} objects, {} findings, {:.2} s CPU, {:.2} s wall, RSS {} -> {} MiB",
            outcome.findings.len(),
            cpu_seconds() - cpu,
            wall.elapsed().as_secs_f64(),
            rss / 1024,
            rss_kib() / 1024
        );
    }
}

/// H1 in the periodic audit follows the clock: a claim without an address is stuck only once it
/// waited longer than `--stuck-after` (the time is a `ManualClock`'s, no sleeping).
#[test]
fn h1_the_periodic_audit_reports_a_claim_once_it_waited_longer_than_stuck_after() {
    use ipam_guard::cluster::clock::{Clock, ManualClock};
    let view = StaticView::from_manifests(
        ipam_guard::manifests::read_str(
            "stuck.yaml",
            "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: InClusterIPPool\n\
             metadata: {name: nodes, namespace: ns}\nspec: {addresses: [10.0.0.10-10.0.0.19], prefix: 24}\n\
             ---\napiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddressClaim\n\
             metadata: {name: web-0, namespace: ns, creationTimestamp: \"2026-11-24T10:00:00Z\"}\n\
             spec: {poolRef: {apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: nodes}}\n",
        )
        .manifests,
    );
    let created = std::time::UNIX_EPOCH + Duration::from_secs(1_795_514_400);
    let clock = ManualClock::at(created);
    clock.advance(Duration::from_secs(9 * 60));
    let h1 = |o: &ClusterFindings| o.findings.iter().filter(|f| f.rule == "H1").count();
    assert_eq!(
        h1(&audit::judge_view_at(
            &view,
            Options::default(),
            clock.wall()
        )),
        0
    );
    clock.advance(Duration::from_secs(2 * 60));
    let outcome = audit::judge_view_at(&view, Options::default(), clock.wall());
    assert_eq!(h1(&outcome), 1, "{:?}", outcome.findings);
    assert_eq!(outcome.findings[0].severity, Severity::Warn);
    assert_eq!(outcome.summary.denials, 0);
}
