use super::collect::FileResult;
use super::parse::{json_value_lines, yaml_document_lines};
use super::*;

fn parse_json(file: &Arc<str>, text: &str) -> FileResult {
    super::parse::parse_json(file, text, &super::collect::Each::served(&|m| m))
}

fn errors(l: &Loaded) -> Vec<String> {
    l.errors.iter().map(|e| e.to_string()).collect()
}

#[test]
fn multi_document_lists_and_unknown_kinds() {
    let l = read_str(
        "x.yaml",
        r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
---
apiVersion: v1
kind: List
items:
- apiVersion: ipam.cluster.x-k8s.io/v1beta2
  kind: IPAddressClaim
  metadata: {name: a, namespace: ns}
- apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
  kind: Metal3Machine
  metadata: {name: c}
---
---
- apiVersion: ipam.cluster.x-k8s.io/v1alpha2
  kind: GlobalInClusterIPPool
  metadata: {name: g, namespace: ignored}
"#,
    );
    assert_eq!(errors(&l), Vec::<String>::new());
    assert_eq!(l.manifests.len(), 2);
    assert_eq!(
        l.manifests[0].source.to_string(),
        "x.yaml: document 2: items[0]"
    );
    assert_eq!(l.manifests[0].key.ns_name(), "ns/a");
    assert_eq!(l.manifests[1].key.ns_name(), "g");
    assert_eq!(
        l.manifests[1].source.to_string(),
        "x.yaml: document 4: items[0]"
    );
    // Kubernetes' own kinds are not IPAM; a provider's kind is one ipam-guard does not judge.
    assert_eq!(l.not_ipam.get("ConfigMap"), Some(&1));
    assert_eq!(
        l.skipped
            .get("Metal3Machine.infrastructure.cluster.x-k8s.io"),
        Some(&1)
    );
    assert!(l.skipped_at.iter().all(|(_, k)| k != "ConfigMap"));
}

#[test]
fn namespace_defaults_for_namespaced_kinds() {
    let l = read_str(
        "x.yaml",
        "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\n",
    );
    assert_eq!(l.manifests[0].namespace(), Some("default"));
    assert_eq!(l.manifests[0].object["metadata"]["namespace"], "default");
}

#[test]
fn bad_documents_name_file_and_document() {
    let cases = [
        ("foo: [", "x.yaml: document 1: not valid YAML: "),
        ("kind: IPAddress\nmetadata: {name: a}\n", "x.yaml: document 1: apiVersion is missing"),
        ("apiVersion: ipam.cluster.x-k8s.io/v1beta2\n", "x.yaml: document 1: kind is missing"),
        ("apiVersion: 5\nkind: IPPool\n", "x.yaml: document 1: apiVersion must be a string, found a number"),
        (
            "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAdress\nmetadata: {name: a}\n",
            "x.yaml: document 1: no matches for kind \"IPAdress\" in version \"ipam.cluster.x-k8s.io/v1beta2\" (did you mean \"IPAddress\"?)",
        ),
        (
            "apiVersion: ipam.metal3.io/v1alpha1\nkind: IPclaim\nmetadata: {name: a}\n",
            "x.yaml: document 1: no matches for kind \"IPclaim\" in version \"ipam.metal3.io/v1alpha1\" (did you mean \"IPClaim\"?)\n",
        ),
        (
            "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {namespace: n}\n",
            "x.yaml: document 1: metadata.name is missing",
        ),
        (
            "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: foo\n",
            "x.yaml: document 1: metadata must be an object, found a string",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\nspec: {prefix: 99999999999999999999}\n",
            "x.yaml: document 2: spec.prefix: 99999999999999999999 does not fit in a 64-bit integer",
        ),
        (
            "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\nspec: {prefix: 9999999999999999999999999999999999999999999}\n",
            "x.yaml: document 1: spec.prefix: 1e43 does not fit in a 64-bit integer",
        ),
        (
            "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\nspec: {prefix: .nan}\n",
            "x.yaml: document 1: spec.prefix: NaN is not a number JSON can hold (line 4",
        ),
        (
            "apiVersion: v1\nkind: List\nitems: [5]\n",
            "x.yaml: document 1: items[0]: expected an object, found a number",
        ),
    ];
    for (text, want) in cases {
        let l = read_str("x.yaml", text);
        let got = errors(&l);
        assert_eq!(got.len(), 1, "{text:?}: {got:?}");
        // A want ending in a newline is the whole message.
        let (got_text, want) = match want.strip_suffix('\n') {
            Some(w) => (got[0].clone() + "\n", format!("{w}\n")),
            None => (got[0].clone(), want.to_string()),
        };
        assert!(
            got_text.starts_with(&want),
            "{text:?}: {got:?} does not start with {want:?}"
        );
    }
}

#[test]
fn documents_that_are_not_kubernetes_objects_are_counted_not_errors() {
    // Helm values, Renovate and CI files, scalars, an Ansible-style list, a kind of ours
    // nowhere in sight.
    let cases = [
        "replicaCount: 2\nimage: {repository: foo}\n",
        "--- just text\n",
        "---\n42\n",
        "- hosts: all\n  tasks: []\n- 5\n",
        "apiVersion: 5\nkind: X\n",
        "kind: Pipeline\nsteps: []\n",
        "apiVersion: tekton.dev/v1\nsteps: []\n",
    ];
    for text in cases {
        let l = read_str("x.yaml", text);
        assert!(l.errors.is_empty(), "{text:?}: {:?}", errors(&l));
        assert!(l.manifests.is_empty());
        assert!(l.not_objects >= 1, "{text:?}");
    }
}

#[test]
fn every_object_knows_the_line_its_document_starts_on() {
    let text = "# pools\n\napiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3Machine\nmetadata: {name: c}\n---\n\
                apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\n\
                --- # next\nfoo: bar\n...\n---\napiVersion: v1\nkind: List\n\
                items:\n- apiVersion: ipam.cluster.x-k8s.io/v1beta2\n  kind: IPAddress\n  metadata: {name: b}\n";
    let l = read_str("x.yaml", text);
    assert!(l.errors.is_empty(), "{:?}", errors(&l));
    let at: Vec<(Option<usize>, Option<usize>)> = l
        .manifests
        .iter()
        .map(|m| (m.source.document, m.source.line))
        .collect();
    assert_eq!(at, [(Some(2), Some(7)), (Some(4), Some(14))]);
    assert_eq!(l.skipped_at.len(), 1);
    assert_eq!(l.skipped_at[0].0.line, Some(3));
    assert_eq!(yaml_document_lines("--- {a: 1}\n---\nb: 2\n"), [1, 3]);
    assert_eq!(
        json_value_lines("\n{\"a\": 1}\n{\n\"b\": 2}\n  [1]"),
        [2, 3, 5]
    );
    assert_eq!(json_value_lines("{}"), [1]);
}

#[test]
fn yaml_values_stay_as_written_and_numbers_whole() {
    let l = read_str(
        "x.yaml",
        "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddress\nmetadata: {name: a}\nspec: {prefix: 4294967320, address: yes, gateway: 012, big: 18446744073709551615, neg: -5, f: 24.5}\n",
    );
    assert_eq!(errors(&l), Vec::<String>::new());
    let spec = &l.manifests[0].object["spec"];
    assert_eq!(spec["prefix"].as_u64(), Some(4294967320));
    assert_eq!(spec["address"], "yes");
    assert_eq!(spec["gateway"], "012");
    assert_eq!(spec["big"].as_u64(), Some(u64::MAX));
    assert_eq!(spec["neg"].as_i64(), Some(-5));
    assert_eq!(spec["f"].as_f64(), Some(24.5));
}

#[test]
fn yaml_merges_tags_scalar_keys_and_duplicates() {
    let l = read_str(
        "x.yaml",
        "base: &ref {address: 10.0.0.1, prefix: 24}\n\
         apiVersion: !custom ipam.cluster.x-k8s.io/v1beta2\n\
         kind: IPAddress\n\
         metadata: {name: a, labels: {1: one, true: yes}}\n\
         spec:\n  <<: *ref\n  prefix: 25\n",
    );
    assert_eq!(errors(&l), Vec::<String>::new());
    let o = &l.manifests[0].object;
    assert_eq!(o["spec"]["address"], "10.0.0.1");
    assert_eq!(
        o["spec"]["prefix"], 25,
        "explicit keys win over merged ones"
    );
    assert_eq!(o["metadata"]["labels"]["1"], "one");
    assert_eq!(o["metadata"]["labels"]["true"], "yes");

    let l = read_str("x.yaml", "apiVersion: v1\nkind: ConfigMap\nkind: Secret\n");
    assert_eq!(errors(&l).len(), 1);
    assert!(
        errors(&l)[0].contains("duplicate key \"kind\""),
        "{:?}",
        errors(&l)
    );
}

#[test]
fn json_numbers_are_checked_and_streams_read() {
    let file: Arc<str> = Arc::from("x.json");
    let r = parse_json(
        &file,
        r#"{"apiVersion":"ipam.cluster.x-k8s.io/v1beta2","kind":"IPAddress","metadata":{"name":"a"},"spec":{"prefix":99999999999999999999}}"#,
    );
    assert_eq!(r.errors.len(), 1);
    assert_eq!(
        r.errors[0].to_string(),
        "x.json: document 1: spec.prefix: 1e20 does not fit in a 64-bit integer (line 1 column 126)"
    );
    let r = parse_json(
        &file,
        r#"[{"apiVersion":"v1","kind":"ConfigMap","data":{"x":[1, 1e400]}}]"#,
    );
    assert_eq!(r.errors.len(), 1);
    assert!(
        r.errors[0]
            .to_string()
            .starts_with("x.json: document 1: not valid JSON: number out of range"),
        "{}",
        r.errors[0]
    );
    // Values one after another, as `kubectl get -o json` of several objects prints them.
    let r = parse_json(
        &file,
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}\n\n{\"apiVersion\":\"v1\",\"kind\":\"Secret\"}\n  ",
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.not_ipam.len(), 2);
    let r = parse_json(&file, "");
    assert!(r.errors.is_empty() && r.skipped.is_empty() && r.not_ipam.is_empty());
    let r = parse_json(&file, "{\"apiVersion\": \"v1\", \"kind\": \"Secret\"} x");
    assert_eq!(r.errors.len(), 1);
    assert!(
        r.errors[0]
            .to_string()
            .starts_with("x.json: document 2: not valid JSON"),
        "{}",
        r.errors[0]
    );
}

/// Bookkeeping no rule reads is not kept, but it is still read: a broken value or a key given
/// twice there is reported as before.
#[test]
fn unread_metadata_is_checked_then_dropped() {
    let l = read_str(
        "x.yaml",
        r#"
apiVersion: v1
kind: List
items:
- apiVersion: ipam.cluster.x-k8s.io/v1beta2
  kind: IPAddressClaim
  metadata:
    name: a
    namespace: ns
    uid: 0b7f
    labels: {x: y}
    managedFields: [{manager: kubectl}]
    ownerReferences: [{kind: Machine, name: m}]
    deletionTimestamp: "2026-11-21T23:22:32Z"
  status: {addressRef: {name: a}}
"#,
    );
    assert!(l.errors.is_empty(), "{:?}", errors(&l));
    let object = &l.manifests[0].object;
    assert_eq!(
        object["metadata"],
        serde_json::json!({"name": "a", "namespace": "ns", "uid": "0b7f", "labels": {"x": "y"},
                           "deletionTimestamp": "2026-11-21T23:22:32Z"})
    );
    assert_eq!(object["status"]["addressRef"]["name"], "a");
    let l = read_str(
        "x.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, uid: a, uid: b}\n",
    );
    assert_eq!(errors(&l).len(), 1, "{:?}", errors(&l));
    let l = read_str(
        "x.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, generation: 99999999999999999999}\n",
    );
    assert!(
        errors(&l)[0].contains("metadata.generation"),
        "{:?}",
        errors(&l)
    );
}

/// `kubectl get -o json` writes `items` before `kind`: the items are read one by one as they
/// come, and kept once the document turns out to be a list.
#[test]
fn a_list_is_read_item_by_item_whatever_the_key_order() {
    let file: Arc<str> = Arc::from("x.json");
    let text = r#"{"apiVersion": "v1", "items": [
        {"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim", "metadata": {"name": "a", "namespace": "ns"}},
        5,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    ], "kind": "List", "metadata": {"resourceVersion": ""}}"#;
    let seen = std::sync::Mutex::new(Vec::new());
    let each = |m: Manifest| {
        seen.lock().unwrap().push(m.key.ns_name());
        m
    };
    let r = super::parse::parse_json(&file, text, &super::collect::Each::served(&each));
    assert_eq!(seen.into_inner().unwrap(), ["ns/a"]);
    assert_eq!(
        r.manifests[0].source.to_string(),
        "x.json: document 1: items[0]"
    );
    let problems: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        ["x.json: document 1: items[1]: expected an object, found a number"]
    );
    assert_eq!(r.not_ipam.get("ConfigMap"), Some(&1));

    // An empty or null `items`, in either format, is an empty list; `items` given twice is
    // refused as any duplicate key is, and nothing of that document is kept.
    for text in [
        r#"{"apiVersion": "v1", "items": [], "kind": "List"}"#,
        r#"{"apiVersion": "v1", "items": null, "kind": "List"}"#,
        "apiVersion: v1\nitems: []\nkind: List\n",
    ] {
        let l = read_str("x", text);
        assert!(l.errors.is_empty() && l.manifests.is_empty(), "{text}");
        assert_eq!(l.not_objects, 0, "{text}");
    }
    let l = read_str(
        "x.yaml",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: ipam.cluster.x-k8s.io/v1beta2\n  kind: IPAddress\n  metadata: {name: a}\nitems: []\n",
    );
    assert!(l.manifests.is_empty());
    assert!(errors(&l)[0].contains("duplicate key"), "{:?}", errors(&l));
    // A list cut short is an error of its document; what it held is not judged on half a read.
    let r = parse_json(
        &file,
        r#"{"apiVersion": "v1", "items": [{"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress", "metadata": {"name": "a"}}], "kind": "List", "metadata": {"#,
    );
    assert!(r.manifests.is_empty());
    assert_eq!(r.errors.len(), 1);
}

/// An object that is not a list but has a top-level `items` sequence keeps it: the document is
/// read again whole (the schema check then sees the field), in YAML and JSON, also when it is
/// not the first document of its file.
#[test]
fn items_of_an_object_that_is_not_a_list_stay_in_the_object() {
    let object = "apiVersion: ipam.cluster.x-k8s.io/v1beta2\nkind: IPAddressClaim\nmetadata: {name: a, namespace: ns}\nitems: [1, {b: 2}]\n";
    let l = read_str("x.yaml", &format!("a: 1\n---\n{object}"));
    assert!(l.errors.is_empty(), "{:?}", errors(&l));
    assert_eq!(l.manifests.len(), 1);
    assert_eq!(
        l.manifests[0].object["items"],
        serde_json::json!([1, {"b": 2}])
    );
    assert_eq!(l.manifests[0].source.to_string(), "x.yaml: document 2");
    let file: Arc<str> = Arc::from("x.json");
    let r = parse_json(
        &file,
        r#"{"a": 1}
        {"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim", "items": [], "metadata": {"name": "a", "namespace": "ns"}}"#,
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.manifests.len(), 1);
    assert_eq!(r.manifests[0].object["items"], serde_json::json!([]));
}
