//! `ipam-guard usage PATH...` through the real binary: the table (fullest first, a bar per pool),
//! JSON, exit codes. The figures of `tests/fixtures/usage/pools.yaml` are worked out below by
//! hand; `tests/pool_usage.rs` checks the counting itself against a brute-force count.

use std::process::{Command, Output};

use serde_json::{json, Value};

const POOLS: &str = "tests/fixtures/usage/pools.yaml";

fn usage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("usage")
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

/// What `usage -o json` must say of the fixture, fullest first:
/// - link6: 2001:db8:21::/127 hands out both addresses (RFC 6164), both held;
/// - nodes: 10.20.0.0/28 less 10.20.0.8-11 (excluded), .1 (gateway), .0 and .15 (network,
///   broadcast) = 9; 8 held, and 10.20.0.9 held although excluded (outside);
/// - p2p: 10.20.1.0/31 hands out both; 1 held;
/// - v6-nodes: a /64 less the subnet-router anycast address and the gateway; 2 held.
pub fn expected() -> Value {
    let six4 = (1u128 << 64) - 2;
    json!([
        {"kind": "InClusterIPPool", "namespace": "team-a", "name": "link6", "family": "IPv6",
            "allocatable": 2, "used": 2, "free": 0, "share_used": 1.0, "outside": 0},
        {"kind": "InClusterIPPool", "namespace": "team-a", "name": "nodes", "family": "IPv4",
            "allocatable": 9, "used": 8, "free": 1, "share_used": 8.0 / 9.0, "outside": 1},
        {"kind": "InClusterIPPool", "namespace": "team-a", "name": "p2p", "family": "IPv4",
            "allocatable": 2, "used": 1, "free": 1, "share_used": 0.5, "outside": 0},
        {"kind": "GlobalInClusterIPPool", "namespace": null, "name": "v6-nodes", "family": "IPv6",
            "allocatable": six4 as u64, "used": 2, "free": (six4 - 2) as u64,
            "share_used": 2.0 / six4 as f64, "outside": 0},
    ])
}

/// The fields `expected` names, taken from an entry of the output.
pub fn comparable(out: &Value) -> Value {
    Value::Array(
        out.as_array()
            .expect("a JSON array")
            .iter()
            .map(|e| {
                let mut o = serde_json::Map::new();
                for k in [
                    "kind",
                    "namespace",
                    "name",
                    "family",
                    "allocatable",
                    "used",
                    "free",
                    "share_used",
                    "outside",
                ] {
                    o.insert(k.to_string(), e[k].clone());
                }
                Value::Object(o)
            })
            .collect(),
    )
}

#[test]
fn usage_json_of_files_has_each_pools_figures_fullest_first() {
    let o = usage(&["-o", "json", POOLS]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(comparable(&out), expected());
    assert_eq!(out[0]["group"], "ipam.cluster.x-k8s.io");
    assert_eq!(out[0]["address_space"], "default");
    assert_eq!(stderr(&o), "4 pools, 1 at least 90% used\n");
}

#[test]
fn usage_text_is_a_table_with_a_bar_per_pool() {
    let o = usage(&[POOLS]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "\
POOL                                     ALLOCATABLE  USED                  FREE   USED%
InClusterIPPool team-a/link6                       2     2                     0  100.0%  [####################]
InClusterIPPool team-a/nodes                       9     8                     1   88.9%  [##################..] (+1 held, not allocatable)
InClusterIPPool team-a/p2p                         2     1                     1   50.0%  [##########..........]
GlobalInClusterIPPool v6-nodes  18446744073709551614     2  18446744073709551612   <0.1%  [#...................]
"
    );
}

#[test]
fn unreadable_input_is_exit_2_with_the_rest_still_counted() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, "apiVersion: [unclosed\n").unwrap();
    let pools = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(POOLS);
    let o = usage(&[
        "-o",
        "json",
        pools.to_str().unwrap(),
        broken.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("broken.yaml"), "{}", stderr(&o));
    let out: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(out.as_array().unwrap().len(), 4);
}

#[test]
fn kubeconfig_and_paths_do_not_mix() {
    let o = usage(&["--kubeconfig", "/nonexistent", POOLS]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

/// Prefix pools are counted in the sub-prefixes they hand out, and the output says so.
#[test]
fn prefix_pools_are_counted_in_sub_prefixes() {
    const FILE: &str = "tests/fixtures/usage/prefix-pools.yaml";
    let o = usage(&[FILE]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "\
POOL                                 ALLOCATABLE  USED  FREE  USED%
InClusterPrefixPool team-a/nodes-v6            3     1     2  33.3%  [#######.............] /64 sub-prefixes (+1 held, not allocatable)
"
    );
    let o = usage(&["-o", "json", FILE]);
    let out: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(out[0]["unit"], "sub-prefixes");
    assert_eq!(out[0]["allocation_prefix_length"], 64);
    assert_eq!(out[0]["allocatable"], 3);
    assert_eq!(out[0]["used"], 1);
    assert_eq!(out[0]["outside"], 1);
}

#[test]
fn usage_selects_by_namespace_and_kind_and_shows_the_top_n() {
    let names = |o: &Output| -> Vec<String> {
        let out: Value = serde_json::from_str(&stdout(o)).unwrap();
        out.as_array()
            .unwrap()
            .iter()
            .map(|p| {
                format!(
                    "{} {}",
                    p["kind"].as_str().unwrap(),
                    p["name"].as_str().unwrap()
                )
            })
            .collect()
    };
    let o = usage(&[POOLS, "-o", "json", "-n", "team-a"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        names(&o),
        [
            "InClusterIPPool link6",
            "InClusterIPPool nodes",
            "InClusterIPPool p2p"
        ]
    );
    assert_eq!(stderr(&o), "3 pools, 1 at least 90% used\n");
    let o = usage(&[POOLS, "-o", "json", "--kind", "globalinclusterippools"]);
    assert_eq!(names(&o), ["GlobalInClusterIPPool v6-nodes"]);
    let o = usage(&[
        POOLS,
        "-o",
        "json",
        "--kind",
        "InClusterIPPool",
        "--top",
        "2",
    ]);
    assert_eq!(
        names(&o),
        ["InClusterIPPool link6", "InClusterIPPool nodes"],
        "the fullest first"
    );
    assert_eq!(
        stderr(&o),
        "3 pools, 1 at least 90% used (the 2 fullest shown: --top)\n"
    );
    let o = usage(&[POOLS, "--top", "1"]);
    assert_eq!(stdout(&o).lines().count(), 2, "{}", stdout(&o));
    let o = usage(&[POOLS, "--kind", "IPAddress"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--kind IPAddress: not a pool kind; one of InClusterIPPool"),
        "{}",
        stderr(&o)
    );
}
