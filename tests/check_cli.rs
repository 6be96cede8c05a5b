//! `ipam-guard check` through the real binary: output shapes (text and JSON), exit codes, and
//! every kind of input it reads or refuses. Fixtures: `tests/fixtures/check/` (see its NOTE.md).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

const FIXTURES: &str = "tests/fixtures/check";

fn check(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .args(args)
        .output()
        .expect("run ipam-guard")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}
fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}
fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}
fn lines(o: &Output) -> Vec<String> {
    stdout(o).lines().map(str::to_string).collect()
}

#[test]
fn x4_text_lines_name_file_kind_object_field_and_rule() {
    let o = check(&["examples/broken/p10-overlapping-pools.yaml"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let f = "examples/broken/p10-overlapping-pools.yaml";
    assert_eq!(
        lines(&o),
        vec![
            // Cluster-scoped: `<Kind> <name>`.
            format!(
                r#"{f}:9: GlobalInClusterIPPool shared: spec.addresses[0]: Invalid value: "10.30.0.128/25": overlaps InClusterIPPool cluster-b/nodes (10.30.0.150-10.30.0.160) [P10]"#
            ),
            // Namespaced: `<Kind> <namespace>/<name>`.
            format!(
                r#"{f}:21: InClusterIPPool cluster-b/nodes: spec.addresses[1]: Invalid value: "10.30.0.150-10.30.0.160": overlaps GlobalInClusterIPPool shared (10.30.0.150-10.30.0.160) [P10]"#
            ),
        ]
    );
    let err = stderr(&o);
    assert!(
        err.contains("read 2 objects from 1 file: 1 InClusterIPPool, 1 GlobalInClusterIPPool"),
        "{err}"
    );
    assert!(err.contains("2 denials, 0 warnings"), "{err}");
}

#[test]
fn x4_json_findings_with_the_spec_fields_and_a_summary() {
    let o = check(&["-o", "json", "examples/broken/a9-duplicate-address.yaml"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("stdout is JSON");
    let f = "examples/broken/a9-duplicate-address.yaml";
    // What was the whole output (an array) before issue 23 is `findings`; `line` is the field's.
    assert_eq!(
        v["summary"],
        json!({
            "files": 1,
            "objects": {"IPAddressClaim": 2, "IPAddress": 2, "InClusterIPPool": 1},
            "schema_only": {},
            "skipped": {"no_crd": {}, "not_ipam": {}, "not_objects": 0, "excluded": 0},
            "not_judged": 0, "denials": 2, "warnings": 1, "errors": 0
        })
    );
    assert_eq!(
        v["findings"],
        json!([
            {
                "file": f, "group": "ipam.cluster.x-k8s.io", "kind": "IPAddress",
                "namespace": "cluster-b", "name": "m-0", "field": "spec.address",
                "message": "Duplicate value: \"2001:db8:30::5\": 2001:db8:30::5 is already held by IPAddress cluster-b/m-1",
                "rule": "A9", "severity": "deny", "document": 4, "line": 42
            },
            {
                "file": f, "group": "ipam.cluster.x-k8s.io", "kind": "IPAddress",
                "namespace": "cluster-b", "name": "m-1", "field": "spec.address",
                "message": "Duplicate value: \"2001:DB8:30:0::5\": 2001:db8:30::5 is already held by IPAddress cluster-b/m-0",
                "rule": "A9", "severity": "deny", "document": 5, "line": 58
            },
            {
                "file": f, "group": "ipam.cluster.x-k8s.io", "kind": "IPAddress",
                "namespace": "cluster-b", "name": "m-1", "field": "spec.address",
                "message": "\"2001:DB8:30:0::5\" is not in canonical form, use \"2001:db8:30::5\"",
                "rule": "A1", "severity": "warn", "document": 5, "line": 58
            }
        ])
    );
}

#[test]
fn x4_json_cluster_scoped_namespace_is_null_and_no_finding_is_an_empty_list() {
    let o = check(&[
        "--output",
        "json",
        "examples/broken/p10-overlapping-pools.yaml",
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let v = &v["findings"];
    assert_eq!(v[0]["kind"], "GlobalInClusterIPPool");
    assert_eq!(v[0]["namespace"], Value::Null);
    assert_eq!(v[1]["namespace"], "cluster-b");

    let o = check(&["-o", "json", "examples/manifests"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = serde_json::from_str::<Value>(&stdout(&o)).unwrap();
    assert_eq!(v["findings"], json!([]));
    assert_eq!(v["summary"]["skipped"]["not_ipam"], json!({"Namespace": 1}));
}

#[test]
fn x4_valid_examples_pass_with_a_summary_on_stderr() {
    let o = check(&["examples/manifests"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(
        err.contains("read 8 objects from 5 files: 3 IPAddressClaim, 3 IPAddress, 1 InClusterIPPool, 1 GlobalInClusterIPPool"),
        "{err}"
    );
    assert!(
        err.contains("1 object skipped: not IPAM: 1 Namespace"),
        "{err}"
    );
    assert!(err.contains("0 denials, 0 warnings"), "{err}");
}

/// Every file under examples/broken/ is named after the rule it breaks (`p10-…`, `ma4-…`): that
/// rule denies it (V1 only ever warns, so its example passes with the warning).
#[test]
fn x4_each_broken_example_is_reported_under_its_rule() {
    const WARN_ONLY: &[&str] = &["V1"];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/broken");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "{files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let id = name.split('-').next().unwrap().to_uppercase();
        let rel = format!("examples/broken/{name}");
        let o = check(&[&rel]);
        let out = lines(&o);
        let tagged =
            |l: &&String| l.starts_with(&format!("{rel}:")) && l.ends_with(&format!(" [{id}]"));
        if WARN_ONLY.contains(&id.as_str()) {
            assert_eq!(code(&o), 0, "{rel}: {out:?}");
            let warned = out
                .iter()
                .filter_map(|l| l.strip_prefix("warning: "))
                .any(|l| tagged(&&l.to_string()));
            assert!(warned, "{rel}: no [{id}] warning in {out:?}");
        } else {
            assert_eq!(code(&o), 1, "{rel}: {out:?} {}", stderr(&o));
            assert!(
                out.iter().any(|l| tagged(&l)),
                "{rel}: no [{id}] denial in {out:?}"
            );
        }
    }
}

#[test]
fn x4_unreadable_input_exits_2_and_names_file_and_document() {
    let cases = [
        (
            "not-yaml.yaml",
            "document 1: not valid YAML: did not find expected ',' or '}' at line 4",
        ),
        ("no-kind.yaml", "document 2: kind is missing"),
        (
            "string-document.yaml",
            "document 1: expected an object, found a string",
        ),
        (
            "huge-number.yaml",
            "document 1: spec.prefix: 3.402823669209385e38 does not fit in a 64-bit integer",
        ),
        (
            "huge-number.json",
            "document 1: spec.prefix: 1.8446744073709552e19 does not fit in a 64-bit integer",
        ),
    ];
    for (file, want) in cases {
        let path = format!("{FIXTURES}/bad/{file}");
        let o = check(&[&path]);
        assert_eq!(code(&o), 2, "{file}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("error: {path}: {want}")),
            "{file}: {err}"
        );
        assert!(err.contains("1 input could not be read"), "{file}: {err}");
        assert!(!err.contains("panicked"), "{file}: {err}");
    }
}

#[test]
fn x4_exit_2_wins_over_a_denial_and_the_readable_files_are_still_judged() {
    let o = check(&[
        "examples/broken/p4-prefix-out-of-range.yaml",
        "tests/fixtures/check/bad/no-kind.yaml",
    ]);
    assert_eq!(code(&o), 2);
    assert!(stdout(&o).contains("[P4]"), "{}", stdout(&o));
}

#[test]
fn x4_missing_path_exits_2() {
    let o = check(&["tests/fixtures/check/no-such-dir"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("error: tests/fixtures/check/no-such-dir: cannot read: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn x4_reads_lists_multi_document_yaml_and_json_and_counts_unknown_kinds() {
    let o = check(&["tests/fixtures/check/mixed"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("read 6 objects from 3 files: 2 IPAddressClaim, 2 IPAddress, 1 InClusterIPPool, 1 GlobalInClusterIPPool"),
        "{err}"
    );
    // Cluster API's own kinds are not IPAM, as Kubernetes' are.
    assert!(
        err.contains("2 objects skipped: not IPAM: 1 Cluster.cluster.x-k8s.io, 1 ConfigMap"),
        "{err}"
    );
    assert!(!err.contains("kinds ipam-guard does not judge"), "{err}");
}

#[test]
fn x4_output_follows_file_then_document_order() {
    let dir = tempfile::tempdir().unwrap();
    let pool = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/broken/p4-prefix-out-of-range.yaml"),
    )
    .unwrap();
    // Written in reverse name order: the walk must still report a/ before b.yaml before c.yaml.
    for (file, name) in [
        ("c.yaml", "pool-c"),
        ("b.yaml", "pool-b"),
        ("a/z.yml", "pool-a"),
    ] {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, pool.replace("name: nodes", &format!("name: {name}"))).unwrap();
    }
    let o = Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .current_dir(dir.path())
        .args(["check", "."])
        .output()
        .unwrap();
    let mut names: Vec<String> = lines(&o)
        .iter()
        .map(|l| {
            // `file:line: Kind ns/name`: the line is each finding's field's, dropped here.
            let (place, rest) = l.split_once(": ").unwrap();
            let file = place.rsplit_once(':').unwrap().0;
            let who = rest.split(": ").next().unwrap();
            format!("{file}: {who}")
        })
        .collect();
    // Each pool has P4 and overlaps the others (P10): keep one line per object.
    names.dedup();
    assert_eq!(
        names,
        vec![
            "./a/z.yml: InClusterIPPool cluster-b/pool-a",
            "./b.yaml: InClusterIPPool cluster-b/pool-b",
            "./c.yaml: InClusterIPPool cluster-b/pool-c",
        ]
    );
}

#[test]
fn m1_m2_mutations_that_would_apply_are_warnings() {
    let o = check(&["tests/fixtures/check/mutations.yaml"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let f = "tests/fixtures/check/mutations.yaml";
    assert_eq!(
        lines(&o),
        vec![
            format!(
                r#"warning: {f}:20: IPAddressClaim ns-m/m-0: spec.poolRef.apiGroup: not set; the mutating webhook sets it to "ipam.cluster.x-k8s.io" [M1]"#
            ),
            format!(
                r#"warning: {f}:15: IPAddressClaim ns-m/m-0: metadata.labels[cluster.x-k8s.io/cluster-name]: not set; the mutating webhook sets it to "cluster-m" [M2]"#
            ),
        ]
    );
    assert!(stderr(&o).contains("0 denials, 2 warnings"));
}

#[test]
fn c3_missing_pool_warns_by_default_and_denies_with_require_existing_pool() {
    let o = check(&["tests/fixtures/check/missing-pool.yaml"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).starts_with("warning: "), "{}", stdout(&o));
    assert!(stdout(&o).trim_end().ends_with("[C3]"));

    let o = check(&[
        "--require-existing-pool",
        "tests/fixtures/check/missing-pool.yaml",
    ]);
    assert_eq!(code(&o), 1);
    assert!(!stdout(&o).starts_with("warning: "), "{}", stdout(&o));
    assert!(stdout(&o).trim_end().ends_with("[C3]"));
}

#[test]
fn p10_overlap_scope_off_lets_overlapping_pools_pass() {
    let o = check(&[
        "--overlap-scope",
        "off",
        "examples/broken/p10-overlapping-pools.yaml",
    ]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stderr(&o).contains("--overlap-scope off"), "{}", stderr(&o));
}

#[test]
fn kinds_outside_the_capi_group_are_written_kind_dot_group() {
    let o = check(&[
        "-o",
        "text",
        "tests/fixtures/check/metal3-unknown-version.yaml",
    ]);
    // The API server has no such version: kubectl would refuse the file (SCHEMA), and the rules
    // say they did not judge it (K1).
    assert_eq!(code(&o), 1);
    let out = stdout(&o);
    assert!(
        out.starts_with("tests/fixtures/check/metal3-unknown-version.yaml:3: IPPool.ipam.metal3.io metal3/provisioning: apiVersion: Unsupported value: \"ipam.metal3.io/v1alpha9\": no matches for kind \"IPPool\" in version \"ipam.metal3.io/v1alpha9\"; served versions: v1alpha1 [SCHEMA]\n"),
        "{out}"
    );
    assert!(
        out.contains("\nwarning: tests/fixtures/check/metal3-unknown-version.yaml:3: IPPool.ipam.metal3.io metal3/provisioning: "),
        "{out}"
    );
    assert!(stderr(&o).contains("1 IPPool.ipam.metal3.io"));

    let o = check(&[
        "-o",
        "json",
        "tests/fixtures/check/metal3-unknown-version.yaml",
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let v = &v["findings"];
    assert_eq!(v[0]["group"], "ipam.metal3.io");
    assert_eq!(v[0]["kind"], "IPPool");
    assert_eq!(v[0]["severity"], "deny");
    assert_eq!(v[1]["group"], "ipam.metal3.io");
    assert_eq!(v[1]["severity"], "warn");
    assert_eq!(v[1]["rule"], "K1");
}

#[test]
fn x4_an_object_defined_twice_is_flagged_once() {
    let o = check(&["tests/fixtures/check/duplicate.yaml"]);
    assert_eq!(code(&o), 0);
    let l = lines(&o);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(
        l[0].starts_with("warning: tests/fixtures/check/duplicate.yaml:25: IPAddressClaim ns-d/m-0: metadata.name: defined again (first at tests/fixtures/check/duplicate.yaml: document 1)"),
        "{}",
        l[0]
    );
}

#[test]
fn x4_reads_standard_input() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .args(["check", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/broken/p2-reversed-range.yaml"),
    )
    .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).starts_with("-:9: InClusterIPPool cluster-b/nodes: spec.addresses[0]: "),
        "{}",
        stdout(&o)
    );
}

// === check as a gate on a real repository (issue 17) ===

const REPO: &str = "tests/fixtures/check/repo";

#[test]
fn schema_a_folder_kubectl_would_reject_fails_with_the_field_named() {
    let o = check(&[&format!("{REPO}/typos/fields.yaml")]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let f = format!("{REPO}/typos/fields.yaml");
    assert_eq!(
        lines(&o),
        vec![
            format!(
                r#"{f}:11: InClusterIPPool mgmt/mgmt-nodes-2: spec.exludedAddresses: unknown field "spec.exludedAddresses" [SCHEMA]"#
            ),
            format!(
                r#"{f}:10: InClusterIPPool mgmt/mgmt-nodes-2: spec.gatway: unknown field "spec.gatway" [SCHEMA]"#
            ),
            format!(
                r#"{f}:16: IPAddressClaim mgmt/Claim_1: metadata.name: Invalid value: "Claim_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') [SCHEMA]"#
            ),
            format!(
                r#"{f}:20: IPAddressClaim mgmt/Claim_1: spec.extra: unknown field "spec.extra" [SCHEMA]"#
            ),
        ]
    );
    // Where each finding is, for editors and code scanning: its document, and its field's line.
    let o = check(&["-o", "json", &f]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let v = &v["findings"];
    assert_eq!((&v[0]["document"], &v[0]["line"]), (&json!(1), &json!(11)));
    assert_eq!((&v[3]["document"], &v[3]["line"]), (&json!(2), &json!(20)));
}

#[test]
fn schema_a_kind_typo_is_an_error_with_a_hint_in_every_format() {
    let f = format!("{REPO}/typos/kind.yaml");
    let o = check(&[&f]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!(
        r#"error: {f}: document 1: no matches for kind "InClusterIpPool" in version "ipam.cluster.x-k8s.io/v1alpha2" (did you mean "InClusterIPPool"?)"#
    )), "{}", stderr(&o));
    let o = check(&["-o", "json", &f]);
    assert_eq!(code(&o), 2);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["summary"]["errors"], 1);
    assert_eq!(
        v["findings"],
        json!([{
            "file": f, "group": null, "kind": null, "namespace": null, "name": null, "field": "",
            "message": "no matches for kind \"InClusterIpPool\" in version \"ipam.cluster.x-k8s.io/v1alpha2\" (did you mean \"InClusterIPPool\"?)",
            "rule": null, "severity": "error", "document": 1, "line": 1
        }])
    );
}

#[test]
fn a_real_repository_checks_cleanly_with_its_templates_excluded() {
    let o = check(&[REPO, "--exclude", "typos", "--exclude", "**/templates/**"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{}{err}", stdout(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(
        err.contains("read 1 object from 3 files: 1 InClusterIPPool"),
        "{err}"
    );
    assert!(
        err.contains("1 object skipped: not IPAM: 1 ConfigMap"),
        "{err}"
    );
    // values.yaml and renovate.json; the README is not a manifest file at all.
    assert!(
        err.contains("skipped 2 documents that are not Kubernetes objects"),
        "{err}"
    );
    assert!(err.contains("excluded 2 paths"), "{err}");

    // Unrendered Helm templates are not manifests: without the exclude they are an error.
    let o = check(&[REPO, "--exclude", "typos"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("templates/pool.yaml"), "{}", stderr(&o));
}

#[test]
fn strict_turns_skipped_kinds_into_errors_but_not_kubernetes_own() {
    // A ConfigMap is not IPAM: --strict has nothing to say about it.
    let dir = format!("{REPO}/clusters");
    let o = check(&["--strict", &dir]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 object skipped: not IPAM: 1 ConfigMap"),
        "{}",
        stderr(&o)
    );

    // A provider's kind ipam-guard does not judge, with no CRD at hand, is what it fails on.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("machines.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: racks\n---\n\
         apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3MachineTemplate\n\
         metadata:\n  name: rack-workers\n  namespace: racks\nspec:\n  template:\n    spec: {}\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let o = check(&["--strict", f]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "error: {f}: document 2: Metal3MachineTemplate.infrastructure.cluster.x-k8s.io is not a kind ipam-guard judges (--strict)"
        )),
        "{}",
        stderr(&o)
    );
    let o = check(&[f]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "1 object skipped: kinds ipam-guard does not judge, no CRD at hand: 1 Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn sarif_and_junit_carry_rule_file_and_line() {
    let f = format!("{REPO}/typos/fields.yaml");
    let k = format!("{REPO}/typos/kind.yaml");
    let o = check(&["-o", "sarif", &f, &k]);
    assert_eq!(code(&o), 2);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("SARIF is JSON");
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "ipam-guard");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{results:#?}");
    assert_eq!(results[0]["ruleId"], "SCHEMA");
    assert_eq!(results[0]["level"], "error");
    let loc = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], f.as_str());
    // The field's line, not its document's.
    assert_eq!(loc["region"]["startLine"], 11);
    assert_eq!(results[4]["ruleId"], "LOAD");
    let ids: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["LOAD", "SCHEMA"]);

    let o = check(&["-o", "junit", &f, &format!("{REPO}/clusters")]);
    assert_eq!(code(&o), 1);
    let xml = stdout(&o);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"ipam-guard\" tests=\"3\" failures=\"2\" errors=\"0\">"), "{xml}");
    assert!(xml.contains(r#"<testcase classname="tests/fixtures/check/repo/clusters/mgmt/pools.yaml" name="InClusterIPPool mgmt/mgmt-nodes" file="tests/fixtures/check/repo/clusters/mgmt/pools.yaml" line="1"/>"#), "{xml}");
    assert!(xml.contains(r#"<failure type="SCHEMA" message="spec.exludedAddresses: unknown field &quot;spec.exludedAddresses&quot; [SCHEMA]">"#), "{xml}");
    assert_eq!(xml.matches("<testcase").count(), 3);
    assert_eq!(xml.matches("</testcase>").count(), 2);
}

#[test]
fn crd_dir_validates_against_ones_own_crds() {
    let dir = tempfile::tempdir().unwrap();
    // Another release of the in-cluster provider, where the field is spelt `gatway`: the pool's
    // CRD as a user might keep it, cut down to the fields this test writes.
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: inclusterippools.ipam.cluster.x-k8s.io}
spec:
  group: ipam.cluster.x-k8s.io
  names: {kind: InClusterIPPool, plural: inclusterippools}
  scope: Namespaced
  versions:
  - name: v1alpha2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [addresses, prefix]
            properties:
              addresses: {type: array, items: {type: string}}
              prefix: {type: integer, minimum: 0, maximum: 128}
              gatway: {type: string}
"#;
    std::fs::write(dir.path().join("pools.yaml"), crd).unwrap();
    let crd_dir = dir.path().to_str().unwrap();
    let f = format!("{REPO}/typos/fields.yaml");
    let o = check(&["--crd-dir", crd_dir, &f]);
    let out = stdout(&o);
    assert!(
        out.contains("spec.exludedAddresses: unknown field"),
        "{out}"
    );
    assert!(!out.contains("spec.gatway"), "{out}");
    // The claim's CRD is not in that directory: nothing to validate it against.
    assert!(!out.contains("Claim_1"), "{out}");

    let empty = tempfile::tempdir().unwrap();
    let o = check(&["--crd-dir", empty.path().to_str().unwrap(), &f]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("no CustomResourceDefinition found"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_unreachable_api_server_is_named_with_the_likely_cause() {
    let dir = tempfile::tempdir().unwrap();
    // Port 1 on loopback: nothing listens there.
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}\n\
         users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
    )
    .unwrap();
    let kc = kubeconfig.to_str().unwrap();
    for args in [
        vec!["audit", "--kubeconfig", kc],
        vec!["check", "--kubeconfig", kc, "examples/manifests"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("API server https://127.0.0.1:1/"),
            "{args:?}: {err}"
        );
        assert!(err.contains("nothing answered"), "{args:?}: {err}");
    }
}

/// The built-in description and the providers' real CRDs (`--crd-dir`) give the same findings,
/// byte for byte, on every fixture, example and captured manifest.
#[test]
fn the_builtin_description_judges_as_the_providers_crds_do() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/fixtures");
    if !shared.join("crds").is_dir() {
        eprintln!("skipped: ../shared/fixtures/crds is absent; the built-in description is not compared with the providers' CRDs");
        return;
    }
    // Only the kinds ipam-guard judges: a CRD of another kind would change which kinds are
    // known (and so the "did you mean" hints), not the schemas compared.
    let crds = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(shared.join("crds")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let crd: Value = serde_yaml_ng::from_str(&text).unwrap();
        let judged = ipam_guard::kinds::KINDS
            .iter()
            .any(|k| k.group == crd["spec"]["group"] && k.name == crd["spec"]["names"]["kind"]);
        if judged {
            std::fs::write(crds.path().join(path.file_name().unwrap()), text).unwrap();
        }
    }
    let crd_dir = crds.path().to_str().unwrap();
    let manifests = shared.join("manifests");
    let manifests = manifests.to_str().unwrap();
    for input in [FIXTURES, "examples", manifests] {
        let builtin = check(&["-o", "json", input]);
        let real = check(&["-o", "json", "--crd-dir", crd_dir, input]);
        assert_eq!(stdout(&builtin), stdout(&real), "{input}");
        assert_eq!(code(&builtin), code(&real), "{input}");
        assert!(!stdout(&builtin).is_empty(), "{input}: nothing judged");
    }
    // And the comparison has something to compare: the fixtures hold schema findings.
    assert!(stdout(&check(&["-o", "json", FIXTURES])).contains("\"SCHEMA\""));
}

/// Files shaped like the providers' own examples and cluster templates (written here): every kind
/// ipam-guard does not judge is skipped and counted, never taken for a typo of one it serves.
const PROVIDER_TEMPLATES: &str = r#"apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: rack-a, namespace: metal}
spec:
  infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: Metal3Cluster, name: rack-a}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Cluster
metadata: {name: rack-a, namespace: metal}
spec:
  controlPlaneEndpoint: {host: 192.0.2.10, port: 6443}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3MachineTemplate
metadata: {name: rack-a-cp, namespace: metal}
spec:
  template:
    spec:
      dataTemplate: {name: rack-a-cp}
      image: {url: http://192.0.2.1/img.qcow2, checksum: http://192.0.2.1/img.qcow2.sum}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3DataTemplate
metadata: {name: rack-a-cp, namespace: metal}
spec:
  clusterName: rack-a
  networkData:
    networks:
      ipv4:
      - id: provisioning
        link: enp1s0
        ipAddressFromIPPool: provisioning-pool
---
apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata: {name: provisioning-pool, namespace: metal}
spec:
  clusterName: rack-a
  namePrefix: rack-a-prov
  pools:
  - {start: 192.0.2.100, end: 192.0.2.120}
  prefix: 24
  gateway: 192.0.2.1
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: VSphereCluster
metadata: {name: vs-a, namespace: metal}
spec:
  server: vcenter.example.com
---
apiVersion: ipam.cluster.x-k8s.io/v1beta1
kind: InfobloxIPPool
metadata: {name: ib, namespace: metal}
spec:
  instance: {name: ib-prod}
  networkView: default
  subnets: [{cidr: 198.51.100.0/24, gateway: 198.51.100.1}]
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderSubnet
metadata: {name: pods-subnet}
spec:
  subnet: 172.30.0.0/16
  ips: [172.30.0.10-172.30.0.200]
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderMultusConfig
metadata: {name: macvlan-eth1, namespace: kube-system}
spec:
  cniType: macvlan
  macvlan: {master: [eth1]}
---
apiVersion: v1
kind: Namespace
metadata: {name: metal}
"#;

#[test]
fn x4_provider_kinds_are_skipped_and_counted_never_typos() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("cluster-template.yaml");
    std::fs::write(&file, PROVIDER_TEMPLATES).unwrap();
    let f = file.to_str().unwrap();
    let o = check(&[f]);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{}{err}", stdout(&o));
    assert!(!err.contains("did you mean"), "{err}");
    assert!(
        err.contains("read 1 object from 1 file: 1 IPPool.ipam.metal3.io"),
        "{err}"
    );
    assert!(
        err.contains(
            "7 objects skipped: kinds ipam-guard does not judge, no CRD at hand: \
             1 InfobloxIPPool.ipam.cluster.x-k8s.io, \
             1 Metal3Cluster.infrastructure.cluster.x-k8s.io, \
             1 Metal3DataTemplate.infrastructure.cluster.x-k8s.io, \
             1 Metal3MachineTemplate.infrastructure.cluster.x-k8s.io, \
             1 SpiderMultusConfig.spiderpool.spidernet.io, 1 SpiderSubnet.spiderpool.spidernet.io, \
             1 VSphereCluster.infrastructure.cluster.x-k8s.io"
        ),
        "{err}"
    );
    assert!(
        err.contains("2 objects skipped: not IPAM: 1 Cluster.cluster.x-k8s.io, 1 Namespace"),
        "{err}"
    );

    // A near miss of a served kind that no provider publishes is still a typo.
    std::fs::write(
        &file,
        "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAdressClaim\nmetadata: {name: c}\n",
    )
    .unwrap();
    let o = check(&[f]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("(did you mean \"IPAddressClaim\"?)"),
        "{}",
        stderr(&o)
    );
}

/// With its CRD at hand, a kind ipam-guard does not judge is checked against that schema, and
/// nothing else.
#[test]
fn schema_a_kind_not_judged_is_checked_against_its_crd_when_given() {
    let tmp = tempfile::tempdir().unwrap();
    let crds = tmp.path().join("crds");
    std::fs::create_dir(&crds).unwrap();
    // A CRD written for this test: a data template with two known fields.
    std::fs::write(
        crds.join("datatemplates.yaml"),
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: metal3datatemplates.infrastructure.cluster.x-k8s.io}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: Metal3DataTemplate, plural: metal3datatemplates}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [clusterName]
            properties:
              clusterName: {type: string}
              templateReference: {type: string}
"#,
    )
    .unwrap();
    let file = tmp.path().join("templates.yaml");
    std::fs::write(
        &file,
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3DataTemplate\n\
         metadata: {name: dt, namespace: metal}\nspec:\n  clusterName: rack-a\n  clusterNmae: rack-b\n",
    )
    .unwrap();
    let (d, f) = (crds.to_str().unwrap(), file.to_str().unwrap());
    let o = check(&["--crd-dir", d, f]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "{f}:6: Metal3DataTemplate.infrastructure.cluster.x-k8s.io metal/dt: spec.clusterNmae: unknown field \"spec.clusterNmae\" [SCHEMA]\n"
        )
    );
    assert!(
        stderr(&o).contains(
            "1 object checked against their CRD's schema only: 1 Metal3DataTemplate.infrastructure.cluster.x-k8s.io"
        ),
        "{}",
        stderr(&o)
    );
    // --strict has nothing to say about a kind checked against its CRD.
    let o = check(&["--strict", "--crd-dir", d, f]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
}

/// The API server runs mutating admission before it checks the schema: a v1beta2 claim that names
/// an in-cluster pool kind without `poolRef.apiGroup` is completed by M1 and then holds. `check`
/// agrees: M1's patch is reported, the schema does not call the group missing.
#[test]
fn m1_fills_the_group_before_the_schema_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("claim.yaml");
    std::fs::write(
        &file,
        "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddressClaim\n\
         metadata: {name: web-0, namespace: apps}\n\
         spec:\n  poolRef: {kind: InClusterIPPool, name: nodes}\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let o = check(&[f]);
    let out = stdout(&o);
    assert!(!out.contains("[SCHEMA]"), "{out}");
    assert!(
        out.contains("spec.poolRef.apiGroup: not set; the mutating webhook sets it to \"ipam.cluster.x-k8s.io\" [M1]"),
        "{out}"
    );
}

// === the API server release check speaks for (issue 28) ===

/// Offline `check` speaks for the newest release the project tests against; `--kube-version`
/// picks another: v1.20 prunes unknown fields (a warning) where v1.36 refuses them.
#[test]
fn kube_version_picks_what_the_api_server_would_say() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.yaml");
    std::fs::write(
        &file,
        "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: InClusterIPPool\n\
         metadata: {name: typo, namespace: n, lables: {a: b}}\n\
         spec: {addresses: [10.51.0.10-10.51.0.20], prefix: 24, gatway: 10.51.0.1}\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();

    let o = check(&[f]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        lines(&o),
        vec![
            format!(
                r#"{f}:3: InClusterIPPool n/typo: metadata.lables: unknown field "metadata.lables" [SCHEMA]"#
            ),
            format!(
                r#"{f}:4: InClusterIPPool n/typo: spec.gatway: unknown field "spec.gatway" [SCHEMA]"#
            ),
        ]
    );
    assert_eq!(lines(&check(&["--kube-version", "v1.36.2", f])), lines(&o));

    let o = check(&["--kube-version", "1.20", f]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            r#"metadata.lables: unknown field "metadata.lables"; the API server drops it"#
        ) && out.contains(r#"spec.gatway: unknown field "spec.gatway"; the API server drops it"#),
        "{out}"
    );
    assert!(!stderr(&o).contains("note: Kubernetes"), "{}", stderr(&o));

    let o = check(&["--kube-version", "1.28", f]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: Kubernetes v1.28 is not a release the project tests against"),
        "{}",
        stderr(&o)
    );

    let o = check(&["--kube-version", "latest", f]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("--kube-version: \"latest\" is not a Kubernetes version"),
        "{}",
        stderr(&o)
    );
}

/// Each error says its cause once (issue 23): kube's errors carry their source in their text, so
/// printing the whole chain used to repeat "No such file or directory" at every layer.
#[test]
fn a_missing_kubeconfig_is_said_once() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("HOME", home.path())
            .output()
            .unwrap()
    };
    let missing = home.path().join("nope.yaml");
    for args in [
        vec!["audit"],
        vec!["usage"],
        vec![
            "check",
            "--kubeconfig",
            missing.to_str().unwrap(),
            "examples/manifests",
        ],
        vec!["check", "--context", "c", "examples/manifests"],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 2, "{args:?}");
        let err = stderr(&o);
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: {err}"
        );
        assert_eq!(
            err.lines().filter(|l| l.starts_with("error: ")).count(),
            1,
            "{args:?}: {err}"
        );
    }
    let err = stderr(&run(&["audit"]));
    assert!(
        err.starts_with("error: no cluster to talk to: not in a pod (")
            && err.contains("and no usable KUBECONFIG or ~/.kube/config (")
            && err.contains("); pass --kubeconfig"),
        "{err}"
    );
}
