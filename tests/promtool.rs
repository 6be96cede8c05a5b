//! The PrometheusRule of manifests/monitoring evaluated by Prometheus itself: its `spec` (the
//! plain rules file inside the custom resource) is written beside `tests/promtool/alerts_test.yaml`
//! and `promtool test rules` runs the cases there on input series, with every alert both firing
//! and staying quiet. promtool comes from Debian's `prometheus` package (`.ci/run` installs it);
//! `PROMTOOL=/path/to/promtool` picks another. Without it the test fails under CI (`CI` set) and
//! otherwise skips, saying so.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const RULE: &str = "manifests/monitoring/prometheusrule.yaml";
const CASES: &str = "tests/promtool/alerts_test.yaml";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn promtool() -> Option<PathBuf> {
    std::env::var_os("PROMTOOL").map(PathBuf::from).or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join("promtool"))
            .find(|p| p.is_file())
    })
}

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn run(promtool: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new(promtool)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", promtool.display()))
}

fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The alerts of the PrometheusRule, and for the cases file the alerts some case expects to fire
/// and those some case expects to stay quiet.
fn alerts(rule: &Value) -> BTreeSet<String> {
    rule["spec"]["groups"]
        .as_array()
        .expect("spec.groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules").iter())
        .filter_map(|r| r["alert"].as_str().map(str::to_string))
        .collect()
}

fn cases(cases: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut firing, mut quiet) = (BTreeSet::new(), BTreeSet::new());
    for test in cases["tests"].as_array().expect("tests") {
        for case in test["alert_rule_test"].as_array().into_iter().flatten() {
            let name = case["alertname"].as_str().expect("alertname").to_string();
            let expected = case["exp_alerts"].as_array().map_or(0, Vec::len);
            if expected == 0 {
                quiet.insert(name);
            } else {
                firing.insert(name);
            }
        }
    }
    (firing, quiet)
}

#[test]
fn every_alert_has_a_case_that_fires_and_one_that_stays_quiet() {
    let rule = yaml(RULE);
    let names = alerts(&rule);
    assert!(names.len() >= 4, "{names:?}");
    let (firing, quiet) = cases(&yaml(CASES));
    for name in &names {
        assert!(firing.contains(name), "{CASES}: no case where {name} fires");
        assert!(
            quiet.contains(name),
            "{CASES}: no case where {name} stays quiet"
        );
    }
    for name in firing.union(&quiet) {
        assert!(
            names.contains(name),
            "{CASES}: {name} is not an alert of {RULE}"
        );
    }
}

#[test]
fn promtool_test_rules_passes_on_the_prometheusrule() {
    let Some(promtool) = promtool() else {
        let why = "promtool not found (Debian: apt-get install prometheus; or set PROMTOOL)";
        if std::env::var_os("CI").is_some() {
            panic!("{why}: CI must run the PrometheusRule through promtool (.ci/run installs it)");
        }
        eprintln!("SKIPPED promtool_test_rules_passes_on_the_prometheusrule: {why}");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The custom resource's `spec` is exactly a Prometheus rules file (`groups:`).
    let rule = yaml(RULE);
    std::fs::write(
        dir.path().join("rules.yaml"),
        serde_yaml_ng::to_string(&rule["spec"]).unwrap(),
    )
    .unwrap();
    let cases = std::fs::read_to_string(root().join(CASES)).unwrap();
    std::fs::write(dir.path().join("alerts_test.yaml"), &cases).unwrap();

    let check = run(&promtool, dir.path(), &["check", "rules", "rules.yaml"]);
    assert!(
        check.status.success(),
        "promtool check rules: {}",
        said(&check)
    );
    let test = run(
        &promtool,
        dir.path(),
        &["test", "rules", "alerts_test.yaml"],
    );
    assert!(
        test.status.success(),
        "promtool test rules: {}",
        said(&test)
    );

    // promtool really evaluates: a quiet case turned into a firing one must fail.
    let broken = cases.replacen(
        "        alertname: IPAMPoolNearlyExhausted\n        exp_alerts: []\n",
        "        alertname: IPAMPoolNearlyExhausted\n        exp_alerts:\n          - exp_labels: {severity: warning}\n",
        1,
    );
    assert_ne!(broken, cases, "the quiet case to break is in {CASES}");
    std::fs::write(dir.path().join("broken_test.yaml"), broken).unwrap();
    let test = run(
        &promtool,
        dir.path(),
        &["test", "rules", "broken_test.yaml"],
    );
    assert!(
        !test.status.success(),
        "promtool passed a wrong expectation: {}",
        said(&test)
    );
}
