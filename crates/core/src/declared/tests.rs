use serde_json::json;

use super::*;
use crate::address::{AddrSet, Family};

const HEAD: &str = "apiVersion: ipam-guard.io/v1alpha1\nkind: AddressKinds\nkinds:\n";

fn file(entries: &str) -> String {
    format!("{HEAD}{entries}")
}

const INFOBLOX: &str = r#"- group: ipam.example.com
  kind: InfobloxIPPool
  versions: [v1alpha1]
  role: pool
  addresses: "object.spec.subnets.map(s, s.cidr)"
  excluded: "has(object.spec.excluded) ? object.spec.excluded : []"
  protectDelete: true
"#;

fn one(entry: &str) -> Declaration {
    let mut d = parse("kinds.yaml", &file(entry)).unwrap();
    assert_eq!(d.len(), 1);
    d.remove(0)
}

fn errors(text: &str) -> Vec<String> {
    parse("kinds.yaml", text)
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn v4(text: &[&str]) -> AddrSet {
    let mut set = AddrSet::empty(Family::V4);
    for t in text {
        let e = crate::address::parse_entry(t, crate::address::Forms::ALL)
            .unwrap()
            .value;
        set.insert(e.range);
    }
    set
}

#[test]
fn a_good_declaration_reads_a_pool() {
    let d = one(INFOBLOX);
    assert_eq!(d.group, "ipam.example.com");
    assert_eq!(d.kind, "InfobloxIPPool");
    assert_eq!(d.plural, "infobloxippools");
    assert!(d.namespaced);
    assert!(d.protect_delete);
    assert_eq!(d.role, Role::Pool);
    let pool = json!({"spec": {
        "subnets": [{"cidr": "10.0.0.0/24"}, {"cidr": "10.0.1.0-10.0.1.9"}, {"cidr": "fd00::1"}],
        "excluded": ["10.0.0.0/30", "10.0.0.255"],
    }});
    let got = d.pool_addresses(&pool).unwrap();
    assert_eq!(got.v4, v4(&["10.0.0.4-10.0.0.254", "10.0.1.0-10.0.1.9"]));
    assert_eq!(got.v6.len(), 1);
    // `excluded` is optional in the object as the expression says.
    let plain = json!({"spec": {"subnets": [{"cidr": "10.0.0.0/30"}]}});
    assert_eq!(d.pool_addresses(&plain).unwrap().v4, v4(&["10.0.0.0/30"]));
}

#[test]
fn kubernetes_ip_functions_are_there() {
    let d = one(r#"- group: example.com
  kind: Pool
  versions: [v1]
  role: pool
  namespaced: false
  plural: pools
  addresses: "object.spec.cidrs.filter(c, isCIDR(c) && cidr(c).prefixLength() >= 24 && ip.isCanonical(string(cidr(c).ip()))).map(c, string(cidr(c).masked()))"
"#);
    assert!(!d.namespaced);
    let got = d
        .pool_addresses(&json!({"spec": {"cidrs": ["10.0.0.7/24", "10.1.0.0/16", "junk"]}}))
        .unwrap();
    assert_eq!(got.v4, v4(&["10.0.0.0/24"]));
}

#[test]
fn plurals_follow_kubebuilder() {
    for (kind, plural) in [
        ("InfobloxIPPool", "infobloxippools"),
        ("IPAddress", "ipaddresses"),
        ("Policy", "policies"),
        ("Gateway", "gateways"),
        ("Box", "boxes"),
        ("Patch", "patches"),
        ("Mesh", "meshes"),
    ] {
        assert_eq!(default_plural(kind), plural, "{kind}");
    }
}

#[test]
fn each_bad_declaration_is_named() {
    let cases: &[(String, &str)] = &[
        ("kinds: [".to_owned(), "kinds.yaml: "),
        (
            "apiVersion: v1\nkind: ConfigMap\nkinds: []\n".to_owned(),
            "kinds.yaml: expected apiVersion ipam-guard.io/v1alpha1 and kind AddressKinds",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: [v1]\n  role: pool\n  addresses: \"[]\"\n  colour: red\n"),
            "kinds.yaml: kinds[0] (A): unknown field `colour`",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: [v1]\n  role: router\n  addresses: \"[]\"\n"),
            "kinds.yaml: kinds[0] (A): unknown role \"router\", expected pool",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: [v1]\n  role: holder\n  addresses: \"[]\"\n"),
            "kinds.yaml: kinds[0] (A): role holder: not supported yet",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: [v1]\n  role: reserved\n  addresses: \"[]\"\n"),
            "kinds.yaml: kinds[0] (A): role reserved: not supported yet",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: [v1]\n  role: pool\n"),
            "kinds.yaml: kinds[0] (A): missing addresses",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: [v1]\n  role: pool\n  addresses: \"object.spec.(\"\n"),
            "kinds.yaml: kinds[0] (A): addresses: does not compile: 1:13: Syntax error: no viable alternative at input '.('",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: [v1]\n  role: pool\n  addresses: \"[]\"\n  excluded: \"1 +\"\n"),
            "kinds.yaml: kinds[0] (A): excluded: does not compile",
        ),
        (
            file("- group: ipam.cluster.x-k8s.io\n  kind: InClusterIPPool\n  versions: [v1]\n  role: pool\n  addresses: \"[]\"\n"),
            "kinds.yaml: kinds[0] (InClusterIPPool): InClusterIPPool of group ipam.cluster.x-k8s.io is a kind ipam-guard judges itself",
        ),
        (
            file("- group: g.io\n  versions: [v1]\n  role: pool\n  addresses: \"[]\"\n"),
            "kinds.yaml: kinds[0]: missing field `kind`",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: []\n  role: pool\n  addresses: \"[]\"\n"),
            "kinds.yaml: kinds[0] (A): versions must name at least one version",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: [v1]\n  role: pool\n  addresses: \"lists.range(100)\"\n"),
            "kinds.yaml: kinds[0] (A): addresses: function lists.range is not allowed",
        ),
        (
            file("- group: g.io\n  kind: A\n  versions: [v1]\n  role: pool\n  addresses: \"[]\"\n- group: g.io\n  kind: A\n  versions: [v1]\n  role: pool\n  addresses: \"[]\"\n"),
            "kinds.yaml: kinds[1] (A): A of group g.io is declared twice",
        ),
    ];
    for (text, want) in cases {
        let got = errors(text);
        assert!(
            got.iter().any(|e| e.starts_with(want)),
            "want {want:?}, got {got:?}"
        );
    }
}

#[test]
fn every_bad_entry_is_reported_at_once() {
    let text = file(
        "- group: g.io\n  kind: A\n  versions: [v1]\n  role: router\n  addresses: \"[]\"\n\
         - group: g.io\n  kind: B\n  versions: [v1]\n  role: pool\n  addresses: \"[]\"\n\
         - group: g.io\n  kind: C\n  versions: [v1]\n  role: pool\n",
    );
    let got = errors(&text);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].starts_with("kinds.yaml: kinds[0] (A)"));
    assert!(got[1].starts_with("kinds.yaml: kinds[2] (C)"));
}

/// A declaration with the expression `addresses`.
fn with(addresses: &str) -> Result<Declaration, Vec<DeclError>> {
    let quoted = serde_json::to_string(addresses).unwrap();
    parse(
        "kinds.yaml",
        &file(&format!(
            "- group: g.io\n  kind: A\n  versions: [v1]\n  role: pool\n  addresses: {quoted}\n"
        )),
    )
    .map(|mut d| d.remove(0))
}

fn eval_err(addresses: &str, object: serde_json::Value) -> String {
    with(addresses)
        .unwrap()
        .pool_addresses(&object)
        .unwrap_err()
        .to_string()
}

#[test]
fn hostile_expressions_are_refused_at_load() {
    let refused = |src: &str, want: &str| {
        let got = with(src).unwrap_err()[0].to_string();
        assert!(got.contains(want), "{src:.60}: want {want:?}, got {got:?}");
    };
    refused(
        &format!("{}1{}", "(".repeat(5000), ")".repeat(5000)),
        "longer than",
    );
    refused(
        &format!("{}1{}", "[".repeat(100), "]".repeat(100)),
        "brackets nest 100 deep",
    );
    refused(&"!".repeat(4000), "does not compile");
    refused(
        "object.a.map(x, object.a.map(y, object.a.map(z, object.a.map(w, 'x'))))",
        "comprehensions nest 4 deep",
    );
    refused("'a'.replace('', 'aaaa')", "function replace is not allowed");
    refused("A{b: 1}", "message literals are not supported");
    refused(
        "lists.range(1000000000).map(i, string(i))",
        "function lists.range is not allowed",
    );
    refused("", "empty");
}

#[test]
fn hostile_objects_and_results_are_errors_not_panics() {
    // Deep nesting in the object.
    let mut deep = json!("10.0.0.1");
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let got = eval_err("object.spec", json!({"spec": deep}));
    assert!(got.contains("nested deeper than 64"), "{got}");

    // Growth through nested comprehensions over a large list: refused by the cost estimate.
    let big: Vec<u32> = (0..2000).collect();
    let got = eval_err(
        "object.l.map(a, object.l.map(b, string(a))).flatten()",
        json!({"l": big}),
    );
    assert!(got.starts_with("addresses (object.l.map"), "{got}");
    assert!(got.contains("estimated cost"), "{got}");

    // The same expression over a small list runs and is judged on its result.
    let got = eval_err(
        "object.l.map(a, object.l.map(b, string(a))).flatten()",
        json!({"l": [1, 2]}),
    );
    assert!(
        got.contains("[0]: Invalid value: \"1\": not a valid"),
        "{got}"
    );

    // Too many entries.
    let many: Vec<String> = (0..10_001)
        .map(|i| format!("10.{}.{}.1", i / 256, i % 256))
        .collect();
    let got = eval_err("object.l", json!({ "l": many }));
    assert!(got.contains("10001 entries, more than 10000"), "{got}");

    // Wrong types.
    let got = eval_err("object.s", json!({"s": "10.0.0.1"}));
    assert!(
        got.contains("returned string, expected a list of strings"),
        "{got}"
    );
    let got = eval_err("object.l", json!({"l": [1]}));
    assert!(
        got.contains("[0]: returned int, expected a string"),
        "{got}"
    );
    let got = eval_err("object.l", json!({"l": [true]}));
    assert!(
        got.contains("[0]: returned bool, expected a string"),
        "{got}"
    );
    let got = eval_err("[cidr(object.c).masked()]", json!({"c": "10.0.0.0/8"}));
    assert!(
        got.contains(
            "[0]: returned an ip or cidr value, expected a string (convert it with string())"
        ),
        "{got}"
    );
    let got = eval_err("object.l", json!({"l": [["10.0.0.1"]]}));
    assert!(
        got.contains("[0]: returned list, expected a string"),
        "{got}"
    );

    // Not addresses.
    for bad in [
        "10.0.0.300",
        "10.0.0.9-10.0.0.1",
        "010.0.0.1",
        "fe80::1%eth0",
        "",
    ] {
        let got = eval_err("object.l", json!({ "l": [bad] }));
        assert!(got.contains("[0]: Invalid value"), "{bad}: {got}");
    }

    // A field the object does not have, a failing function: errors naming the expression.
    let got = eval_err("object.spec.missing", json!({"spec": {}}));
    assert!(
        got.starts_with("addresses (object.spec.missing): evaluation failed"),
        "{got}"
    );
    let got = eval_err("[string(cidr(object.c))]", json!({"c": "nope"}));
    assert!(got.contains("evaluation failed"), "{got}");
    let got = eval_err("[string(1 / object.z)]", json!({"z": 0}));
    assert!(got.contains("evaluation failed"), "{got}");
}

#[test]
fn long_chains_stay_within_the_stack() {
    // Chains as long as the source admits: the parser recurses once per link, which overflowed a
    // test thread's stack (an abort, not a panic) before compiling moved to a thread of its own.
    for chain in [
        format!("object{}", ".a".repeat(2000)),
        format!("[{}1 < 0 ? '10.0.0.1' : '10.0.0.2']", "1 - ".repeat(1000)),
    ] {
        let got = with(&chain).unwrap_err()[0].to_string();
        assert!(got.contains("deep, more than 100"), "{got}");
    }
    // Within the depth limit evaluation needs ~1 KiB a level: it runs on a 256 KiB stack.
    let chain = format!("[{}1 < 0 ? '10.0.0.1' : '10.0.0.2']", "1 - ".repeat(96));
    let d = with(&chain).unwrap();
    let got = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || d.pool_addresses(&json!({})).unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(got.v4, v4(&["10.0.0.1"]));
}

#[test]
fn the_cost_estimate_admits_plain_lists_and_bounds_comprehensions() {
    let list = |n: usize| -> serde_json::Value {
        let l: Vec<String> = (0..n)
            .map(|i| format!("10.{}.{}.1", i / 256, i % 256))
            .collect();
        json!({ "l": l })
    };
    // No comprehension: linear, the entry cap is the bound.
    let plain = with("object.l").unwrap();
    assert_eq!(
        plain.pool_addresses(&list(10_000)).unwrap().v4.len(),
        10_000
    );
    // A `map` copies its result as it grows: a hundred items run, a thousand are refused.
    let mapped = with("object.l.map(x, x + '/32')").unwrap();
    assert_eq!(mapped.pool_addresses(&list(100)).unwrap().v4.len(), 100);
    let got = mapped.pool_addresses(&list(1000)).unwrap_err().to_string();
    assert!(got.contains("estimated cost"), "{got}");
    // A list joined to itself is as long as the joins make it: refused though each part is short.
    let joined = format!("({}).map(x, x + '/32')", vec!["object.l"; 20].join(" + "));
    let got = with(&joined)
        .unwrap()
        .pool_addresses(&list(100))
        .unwrap_err()
        .to_string();
    assert!(got.contains("estimated cost"), "{got}");
}

#[test]
fn the_registry_numbers_kinds_across_files() {
    let a = file(INFOBLOX);
    let b = file(
        "- group: metallb.io\n  kind: IPAddressPool\n  versions: [v1beta1]\n  role: pool\n  addresses: \"object.spec.addresses\"\n",
    );
    let r = Registry::load(&[("a.yaml".into(), a.clone()), ("b.yaml".into(), b)]).unwrap();
    assert_eq!(r.len(), 2);
    let i = r.find("metallb.io", "IPAddressPool").unwrap();
    let d = r.get(i).unwrap();
    assert_eq!(d.display_name(), "IPAddressPool");
    assert_eq!(d.plural, "ipaddresspools");
    assert!(d.serves_version("v1beta1") && !d.serves_version("v1"));
    assert_eq!(r.file(i), Some("b.yaml"));
    assert_eq!(r.find("metallb.io", "InfobloxIPPool"), None);

    // The same kind in two files: the second is refused, naming the first.
    let got = Registry::load(&[("a.yaml".into(), a.clone()), ("c.yaml".into(), a)]).unwrap_err();
    assert_eq!(
        got[0].to_string(),
        "c.yaml: kinds[0] (InfobloxIPPool): InfobloxIPPool of group ipam.example.com is already declared in a.yaml"
    );
}

#[test]
fn json_numbers_are_ints_as_the_api_server_gives_them() {
    let d =
        with("object.spec.prefix > 24 && object.spec.prefix + 1 == 29 ? [object.spec.net] : []")
            .unwrap();
    let got = d
        .pool_addresses(&json!({"spec": {"prefix": 28, "net": "10.0.0.0/28"}}))
        .unwrap();
    assert_eq!(got.v4, v4(&["10.0.0.0/28"]));
}

#[test]
fn the_metallb_example_reads_a_pool_shaped_as_metallb_documents_it() {
    let text = include_str!("../../../../examples/kinds/metallb.yaml");
    let d = parse("examples/kinds/metallb.yaml", text)
        .unwrap()
        .remove(0);
    assert_eq!(
        (d.group.as_str(), d.plural.as_str()),
        ("metallb.io", "ipaddresspools")
    );
    let pool = json!({
        "apiVersion": "metallb.io/v1beta1",
        "kind": "IPAddressPool",
        "metadata": {"name": "first-pool", "namespace": "metallb-system"},
        "spec": {
            "addresses": ["192.168.10.0/24", "192.168.9.1-192.168.9.5", "fc00:f853:ccd:e799::/124"],
            "avoidBuggyIPs": true,
        },
    });
    let got = d.pool_addresses(&pool).unwrap();
    assert_eq!(got.v4, v4(&["192.168.10.0/24", "192.168.9.1-192.168.9.5"]));
    assert_eq!(got.v6.len(), 16);
}
