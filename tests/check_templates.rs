//! `ipam-guard check` on cluster templates: fields holding `${…}` placeholders are
//! reported once per object as not judged, `--var`/`--env` render them as clusterctl does.
//! Fixtures: `tests/fixtures/check/templates/` (written for this file).

use std::process::{Command, Output};

const T: &str = "tests/fixtures/check/templates/cluster-template.yaml";
const BLOCK: &str = "tests/fixtures/check/templates/block-placeholder.yaml";

fn check(args: &[&str]) -> Output {
    check_env(args, &[])
}

fn check_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ipam-guard"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run ipam-guard")
}

fn out(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}
fn err(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}
fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

const VALUES: &[&str] = &[
    "--var",
    "CLUSTER_NAME=c1",
    "--var",
    "NAMESPACE=ns",
    "--var",
    "POOL_START=10.0.0.10",
    "--var",
    "POOL_END=10.0.0.20",
];

#[test]
fn template_placeholders_are_reported_once_per_object_and_judged_nowhere() {
    let o = check(&[T]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        vec![
            format!("info: {T}:3: InClusterIPPool ${{NAMESPACE}}/${{CLUSTER_NAME}}-nodes: not judged: unresolved ${{CLUSTER_NAME}} at metadata.name, ${{NAMESPACE}} at metadata.namespace, ${{POOL_START}} at spec.addresses[0], ${{GATEWAY}} at spec.gateway, ${{POOL_PREFIX:=24}} at spec.prefix [TEMPLATE]").as_str(),
            format!("info: {T}:14: IPAddressClaim ${{NAMESPACE}}/${{CLUSTER_NAME}}-cp-0: not judged: unresolved ${{CLUSTER_NAME}} at metadata.name, ${{NAMESPACE}} at metadata.namespace, ${{CLUSTER_NAME}} at spec.poolRef.name [TEMPLATE]").as_str(),
        ],
        "{text}"
    );
    assert!(
        err(&o).contains("2 objects with unresolved ${…} placeholders: those fields not judged"),
        "{}",
        err(&o)
    );
    assert!(err(&o).contains("0 denials, 0 warnings"), "{}", err(&o));

    // In JSON the finding has severity "info" and no field (it is about the object).
    let o = check(&["-o", "json", T]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(findings.len(), 2, "{v}");
    assert!(findings
        .iter()
        .all(|f| f["severity"] == "info" && f["rule"] == "TEMPLATE" && f["field"] == ""));
}

#[test]
fn template_strict_fails_on_placeholders_as_on_kinds_it_cannot_judge() {
    let o = check(&["--strict", T]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(
        err(&o).contains(&format!("error: {T}: document 2: IPAddressClaim ${{NAMESPACE}}/${{CLUSTER_NAME}}-cp-0: not judged: unresolved ${{CLUSTER_NAME}} at metadata.name")),
        "{}",
        err(&o)
    );
}

#[test]
fn template_vars_render_as_clusterctl_with_defaults() {
    // GATEWAY outside the default /24 around the pool: P6, now that the values are known.
    let mut args = VALUES.to_vec();
    args.extend(["--var", "GATEWAY=10.0.1.1", T]);
    let o = check(&args);
    assert_eq!(code(&o), 1, "{}{}", out(&o), err(&o));
    assert_eq!(
        out(&o).trim_end(),
        format!(
            r#"{T}:12: InClusterIPPool ns/c1-nodes: spec.gateway: Invalid value: "10.0.1.1": must be inside the pool's subnet 10.0.0.0/24 [P6]"#
        )
    );
    // A value for the defaulted variable wins over `${POOL_PREFIX:=24}`.
    let mut args = VALUES.to_vec();
    args.extend(["--var", "GATEWAY=10.0.1.1", "--var", "POOL_PREFIX=16", T]);
    let o = check(&args);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert_eq!(out(&o), "");

    // --env takes them from the environment; a --var wins over it.
    let mut args = VALUES.to_vec();
    args.extend(["--env", "--var", "GATEWAY=10.0.0.1", T]);
    let o = check_env(&args, &[("GATEWAY", "10.9.9.9")]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let o = check_env(
        &["--env", T],
        &[
            ("GATEWAY", "10.9.9.9"),
            ("CLUSTER_NAME", "c1"),
            ("NAMESPACE", "ns"),
            ("POOL_START", "10.0.0.10"),
            ("POOL_END", "10.0.0.20"),
        ],
    );
    assert_eq!(code(&o), 1, "{}{}", out(&o), err(&o));
    assert!(
        out(&o).contains(r#"Invalid value: "10.9.9.9""#),
        "{}",
        out(&o)
    );

    let o = check(&["--var", "NOEQUALS", T]);
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains(r#"--var "NOEQUALS": expected NAME=VALUE"#),
        "{}",
        err(&o)
    );
}

#[test]
fn template_a_file_that_is_yaml_only_once_rendered() {
    let o = check(&[BLOCK]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(
        err(&o).contains("(the file holds placeholders such as ${EXTRA_SPEC}: render it first, or give their values with --var NAME=VALUE or --env)"),
        "{}",
        err(&o)
    );
    let o = check(&["--var", "EXTRA_SPEC=", BLOCK]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    // Rendered text keeps its lines: a finding points where the file says.
    let o = check(&[
        "--var",
        "EXTRA_SPEC=  allocateReservedIPAddresses: notabool",
        "-o",
        "json",
        BLOCK,
    ]);
    assert_eq!(code(&o), 1, "{}{}", out(&o), err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["findings"][0]["line"], 11, "{v}");
}

#[test]
fn template_objects_named_by_placeholders_are_not_duplicates_of_each_other() {
    // Two templates both writing `${NAMESPACE}/${CLUSTER_NAME}-nodes`: who they will be is not
    // known, so neither is "defined again" (X4).
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("again.yaml");
    std::fs::copy(T, &copy).unwrap();
    let copy = copy.to_str().unwrap();
    let o = check(&[T, copy]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert!(!out(&o).contains("[X4]"), "{}", out(&o));
    // Rendered, they are one object twice.
    let mut args = VALUES.to_vec();
    args.extend(["--var", "GATEWAY=10.0.0.1", T, copy]);
    let o = check(&args);
    assert!(out(&o).contains("defined again"), "{}", out(&o));
}
