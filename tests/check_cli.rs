//! `ipam-guard check` through the real binary: output shapes (text and JSON), exit codes, and
//! every kind of input it reads or refuses. Fixtures: `tests/fixtures/check/` (see its NOTE.md).
//! As a gate on a real repository: `repo`; the release it speaks for: `kube_version`.

#[path = "check_cli/kube_version.rs"]
mod kube_version;
#[path = "check_cli/repo.rs"]
mod repo;

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
    // What was the whole output (an array) in earlier releases is `findings`; `line` is the field's.
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
        err.contains("read 7 objects from 3 files: 2 IPAddressClaim, 2 IPAddress, 1 InClusterIPPool, 1 GlobalInClusterIPPool, 1 Cluster"),
        "{err}"
    );
    // A Cluster is judged (its endpoint, CP1-CP4); Kubernetes' own kinds are not IPAM.
    assert!(
        err.contains("1 object skipped: not IPAM: 1 ConfigMap"),
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

/// A GitOps tree with a pool and Clusters: `check` reports what the webhook would refuse, on
/// both sides of an endpoint conflict (CP1 on the Cluster, CP3 on the pool) and CP2.
#[test]
fn clusters_endpoints_are_judged_against_the_pools_of_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("infra.yaml");
    std::fs::write(
        &file,
        "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: prod, namespace: team-a}
spec:
  controlPlaneEndpoint: {host: 10.0.0.20, port: 6443}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: staging, namespace: team-a}
spec:
  controlPlaneEndpoint: {host: 10.96.0.1, port: 6443}
  clusterNetwork:
    services: {cidrBlocks: [10.96.0.0/12]}
",
    )
    .unwrap();
    let o = check(&[file.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(code(&o), 1, "{out}{err}");
    for line in [
        "InClusterIPPool team-a/nodes: spec.addresses[0]: Invalid value: \"10.0.0.10-10.0.0.50\": can hand out 10.0.0.20, the control-plane endpoint of Cluster team-a/prod: exclude it (spec.excludedAddresses) [CP3]",
        "Cluster team-a/prod: spec.controlPlaneEndpoint.host: Invalid value: \"10.0.0.20\": 10.0.0.20 can be handed out by InClusterIPPool team-a/nodes",
        "Cluster team-a/staging: spec.controlPlaneEndpoint.host: Invalid value: \"10.96.0.1\": 10.96.0.1 lies in the cluster's own service network 10.96.0.0/12",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    assert!(
        err.contains("read 3 objects from 1 file: 1 InClusterIPPool, 2 Cluster"),
        "{err}"
    );
}

/// A GitOps tree with SpiderSubnets, pools carved from one and an in-cluster pool: `check`
/// reports what the webhook would refuse (S9, S10, S11, P10), on both sides, and no overlap
/// between a subnet and the pool carved from it inside it.
#[test]
fn spider_subnets_are_judged_against_the_pools_of_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("spider.yaml");
    std::fs::write(
        &file,
        "\
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderSubnet
metadata: {name: rack-a}
spec:
  subnet: 10.30.0.0/24
  ips: [10.30.0.10-10.30.0.100]
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderSubnet
metadata: {name: rack-b}
spec:
  subnet: 10.30.0.0/25
  ips: [10.30.0.101-10.30.0.110]
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-in}
spec:
  subnet: 10.30.0.0/24
  ips: [10.30.0.20-10.30.0.30]
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: pods-out}
spec:
  subnet: 10.30.0.0/24
  ips: [10.30.0.95-10.30.0.99, 10.30.0.200-10.30.0.210]
---
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: GlobalInClusterIPPool
metadata: {name: nodes}
spec:
  addresses: [10.30.0.60-10.30.0.70]
  gateway: 10.30.0.1
  prefix: 24
",
    )
    .unwrap();
    let o = check(&[file.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(code(&o), 1, "{out}{err}");
    for line in [
        "SpiderSubnet.spiderpool.spidernet.io rack-b: spec.subnet: Invalid value: \"10.30.0.0/25\": overlaps the subnet of SpiderSubnet.spiderpool.spidernet.io rack-a (10.30.0.0/24); SpiderSubnets never overlap, identical ones included [S10]",
        "SpiderIPPool.spiderpool.spidernet.io pods-out: spec.ips[1]: Invalid value: \"10.30.0.200-10.30.0.210\": 10.30.0.200-10.30.0.210 outside SpiderSubnet.spiderpool.spidernet.io rack-a",
        "GlobalInClusterIPPool nodes: spec.addresses[0]: Invalid value: \"10.30.0.60-10.30.0.70\": overlaps SpiderSubnet.spiderpool.spidernet.io rack-a (10.30.0.60-10.30.0.70) [P10]",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    // Inside rack-a, neither overlapping it (P10) nor outside it (S11).
    assert!(!out.contains("pods-in: spec.ips"), "{out}");
    assert!(!out.contains("pods-out: spec.ips[0]"), "{out}");
}

/// A GitOps tree's ReservedIPs and machines' static addresses are judged against its pools and
/// addresses as the webhook judges them (RI5, SA1, SA3), each side of a conflict reported.
#[test]
fn reserved_and_static_addresses_are_judged_against_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("infra.yaml");
    std::fs::write(
        &file,
        "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderReservedIP
metadata: {name: vip}
spec:
  ipVersion: 4
  ips: [10.0.0.20]
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: VSphereMachine
metadata: {name: db-0, namespace: team-a}
spec:
  template: ubuntu-2204
  network:
    devices:
      - networkName: vm-network
        ipAddrs: [10.0.0.30/24]
",
    )
    .unwrap();
    let o = check(&[file.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(code(&o), 1, "{out}{err}");
    for line in [
        "InClusterIPPool team-a/nodes: spec.addresses[0]: Invalid value: \"10.0.0.10-10.0.0.50\": can hand out 10.0.0.20, reserved by SpiderReservedIP vip: exclude it (spec.excludedAddresses) [RI5]",
        "InClusterIPPool team-a/nodes: spec.addresses[0]: Invalid value: \"10.0.0.10-10.0.0.50\": can hand out 10.0.0.30, the static address of VSphereMachine.infrastructure.cluster.x-k8s.io team-a/db-0: exclude it (spec.excludedAddresses) [SA2]",
        "VSphereMachine.infrastructure.cluster.x-k8s.io team-a/db-0: spec.network.devices[0].ipAddrs[0]: Invalid value: \"10.0.0.30/24\": 10.0.0.30 is allocatable in InClusterIPPool team-a/nodes: two machines would share it [SA3]",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

/// A pool kind ipam-guard is not built with, declared in an `AddressKinds` file (docs/kinds.md):
/// with `--kinds` its objects are judged as pools (P10 both ways), without it they are skipped.
#[test]
fn declared_pools_are_judged_against_the_pools_of_the_tree_with_kinds() {
    let tmp = tempfile::tempdir().unwrap();
    let kinds = tmp.path().join("kinds.yaml");
    std::fs::write(
        &kinds,
        r#"apiVersion: ipam-guard.io/v1alpha1
kind: AddressKinds
kinds:
- group: ipam.cluster.x-k8s.io
  kind: InfobloxIPPool
  versions: [v1alpha1]
  role: pool
  addresses: "object.spec.subnets.map(s, s.cidr)"
"#,
    )
    .unwrap();
    let tree = tmp.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let file = tree.join("pools.yaml");
    std::fs::write(
        &file,
        "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha2
kind: InClusterIPPool
metadata: {name: nodes, namespace: team-a}
spec:
  addresses: [10.0.0.10-10.0.0.50]
  gateway: 10.0.0.1
  prefix: 24
---
apiVersion: ipam.cluster.x-k8s.io/v1alpha1
kind: InfobloxIPPool
metadata: {name: pool-a, namespace: infra}
spec:
  instance: infoblox
  subnets:
  - cidr: 192.168.10.0/24
    gateway: 192.168.10.1
  - cidr: 10.0.0.0/26
    gateway: 10.0.0.1
",
    )
    .unwrap();
    let (kinds, file) = (kinds.to_str().unwrap(), file.to_str().unwrap());

    let o = check(&["--kinds", kinds, file]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(code(&o), 1, "{out}{err}");
    assert_eq!(
        lines(&o),
        [
            format!(
                r#"{file}:5: InClusterIPPool team-a/nodes: spec.addresses[0]: Invalid value: "10.0.0.10-10.0.0.50": overlaps InfobloxIPPool infra/pool-a (10.0.0.10-10.0.0.50) [P10]"#
            ),
            format!(
                r#"{file}:17: InfobloxIPPool infra/pool-a: spec.subnets[1].cidr: Invalid value: "10.0.0.0/26": overlaps InClusterIPPool team-a/nodes (10.0.0.10-10.0.0.50) [P10]"#
            ),
        ],
        "{err}"
    );
    assert!(
        err.contains("read 2 objects from 1 file: 1 InClusterIPPool, 1 InfobloxIPPool"),
        "{err}"
    );

    // Without the declaration the kind is one ipam-guard does not judge: skipped, nothing found.
    let o = check(&[file]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));

    // An object the expression cannot read is not judged: an input error, as an unreadable
    // document is, naming the object and the expression's problem.
    let broken = tree.join("broken.yaml");
    std::fs::write(
        &broken,
        "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha1
kind: InfobloxIPPool
metadata: {name: broken, namespace: infra}
spec:
  cidrs: [10.0.0.0/24]
",
    )
    .unwrap();
    let broken = broken.to_str().unwrap();
    let o = check(&["--kinds", kinds, broken]);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{}{err}", stdout(&o));
    assert!(
        err.contains(&format!(
            "error: {broken}: document 1: InfobloxIPPool infra/broken: not judged: addresses (object.spec.subnets.map(s, s.cidr)): evaluation failed: No such key: subnets"
        )),
        "{err}"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

/// A declaration file that cannot be used stops `check` before anything is judged: exit 2,
/// every problem named with its file and entry.
#[test]
fn a_bad_kinds_file_exits_2_naming_the_file_the_entry_and_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let kinds = tmp.path().join("kinds.yaml");
    std::fs::write(
        &kinds,
        r#"apiVersion: ipam-guard.io/v1alpha1
kind: AddressKinds
kinds:
- group: ipam.cluster.x-k8s.io
  kind: InfobloxIPPool
  versions: [v1alpha1]
  role: router
  addresses: "object.spec.subnets.map(s, s.cidr)"
- group: example.com
  kind: Pool
  versions: [v1]
  role: pool
  addresses: "object.spec.(addresses"
"#,
    )
    .unwrap();
    let kinds = kinds.to_str().unwrap();
    let o = check(&["--kinds", kinds, "examples/manifests"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{}{err}", stdout(&o));
    for want in [
        format!(
            r#"error: {kinds}: kinds[0] (InfobloxIPPool): unknown role "router", expected pool"#
        ),
        format!("error: {kinds}: kinds[1] (Pool): addresses: does not compile: "),
    ] {
        assert!(err.contains(&want), "{want}\n{err}");
    }
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let missing = tmp.path().join("missing.yaml");
    let o = check(&["--kinds", missing.to_str().unwrap(), "examples/manifests"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains(&format!("error: --kinds {}: ", missing.display())),
        "{}",
        stderr(&o)
    );
}

/// An IPAddress whose `poolRef` names a declared kind is judged against that pool (A8, A9).
#[test]
fn addresses_of_a_declared_pool_are_judged_against_it_with_kinds() {
    let tmp = tempfile::tempdir().unwrap();
    let kinds = tmp.path().join("kinds.yaml");
    std::fs::write(
        &kinds,
        r#"apiVersion: ipam-guard.io/v1alpha1
kind: AddressKinds
kinds:
- group: ipam.cluster.x-k8s.io
  kind: InfobloxIPPool
  versions: [v1alpha1]
  role: pool
  addresses: "object.spec.subnets.map(s, s.cidr)"
"#,
    )
    .unwrap();
    let file = tmp.path().join("addresses.yaml");
    let address = |name: &str, ip: &str| {
        format!(
            "\
apiVersion: ipam.cluster.x-k8s.io/v1beta2
kind: IPAddress
metadata: {{name: {name}, namespace: infra}}
spec:
  address: {ip}
  prefix: 24
  claimRef: {{name: {name}}}
  poolRef: {{apiGroup: ipam.cluster.x-k8s.io, kind: InfobloxIPPool, name: pool-a}}
"
        )
    };
    std::fs::write(
        &file,
        format!(
            "\
apiVersion: ipam.cluster.x-k8s.io/v1alpha1
kind: InfobloxIPPool
metadata: {{name: pool-a, namespace: infra}}
spec:
  subnets:
  - cidr: 10.0.0.0/26
---
{}---
{}---
{}",
            address("in-a", "10.0.0.5"),
            address("in-b", "10.0.0.5"),
            address("out", "10.0.1.5"),
        ),
    )
    .unwrap();
    let (kinds, file) = (kinds.to_str().unwrap(), file.to_str().unwrap());
    let o = check(&["--kinds", kinds, file]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(code(&o), 1, "{out}{err}");
    for line in [
        r#"IPAddress infra/out: spec.address: Invalid value: "10.0.1.5": not an allocatable address of InfobloxIPPool infra/pool-a: 10.0.0.0-10.0.0.63 [A8]"#,
        r#"IPAddress infra/in-b: spec.address: Duplicate value: "10.0.0.5": 10.0.0.5 is already held by IPAddress infra/in-a [A9]"#,
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}
