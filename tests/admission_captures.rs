//! Every recorded AdmissionReview (what real kube-apiservers sent, tests/fixtures/reviews/README.md)
//! through the real admission handler, against the static view the captures imply
//! (tests/fixtures/reviews/state.yaml); plus edited captures that break a rule, asserting the
//! whole answer and what kubectl would print from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use ipam_guard::admission::{Admission, Endpoint};
use ipam_guard::cli::explain::{kubectl_output, KubectlCall, Verb};
use ipam_guard::cluster::StaticView;
use ipam_guard::kinds::Kind;
use ipam_guard::rules::Options;
use serde_json::{json, Value};

/// The recorded sets, one per Kubernetes release, oldest first.
fn releases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reviews");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort_by_key(|d| {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        let minor = name.rsplit('.').next().and_then(|m| m.parse::<u32>().ok());
        minor.unwrap_or_else(|| panic!("{name} is not a release's folder"))
    });
    assert!(!dirs.is_empty());
    dirs
}

/// The newest release's set, where the edited-capture tests take their bodies.
fn fixtures() -> PathBuf {
    releases().pop().unwrap()
}

fn admission() -> Admission {
    let state = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reviews/state.yaml");
    let view = StaticView::load(&[state]).expect("state.yaml loads");
    Admission::new(Arc::new(view), Options::default())
}

fn load_from(dir: &Path, name: &str) -> Value {
    let path = dir.join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn load(name: &str) -> Value {
    load_from(&fixtures(), name)
}

fn review(a: &Admission, endpoint: Endpoint, body: &Value) -> Value {
    let sent = serde_json::to_vec(body).unwrap();
    let ans = a.review_now(endpoint, &sent);
    assert_eq!(
        ans.http_status,
        200,
        "{}",
        String::from_utf8_lossy(&ans.body)
    );
    let out: Value = serde_json::from_slice(&ans.body).unwrap();
    assert_eq!(out["kind"], "AdmissionReview");
    assert_eq!(out["apiVersion"], body["apiVersion"]);
    assert_eq!(out["response"]["uid"], body["request"]["uid"], "uid echoed");
    out["response"].clone()
}

/// What kubectl prints for `kubectl create -f <name>.yaml` answered with `response`: the one
/// renderer docs/rules.md and `ipam-guard explain` use, which crates/e2e/tests/e2e_live.rs compares
/// byte for byte with real kubectl against a real API server.
fn kubectl_render(response: &Value) -> String {
    let d = &response["status"]["details"];
    let kind = Kind::from_group_kind(d["group"].as_str().unwrap(), d["kind"].as_str().unwrap())
        .expect("a served kind");
    let name = d["name"].as_str().unwrap().to_string();
    let call = KubectlCall {
        verb: Verb::Create,
        kind,
        namespace: None,
        file: format!("{name}.yaml"),
        name,
    };
    kubectl_output(&call, response)
}

/// (capture, allowed, status code, rule ids that must appear among the causes)
const EXPECTED: &[(&str, bool, u64, &[&str])] = &[
    ("ipaddressclaim-create.json", true, 0, &[]),
    ("ipaddressclaim-create-v1alpha1.json", true, 0, &[]),
    ("ipaddressclaim-create-v1beta1.json", true, 0, &[]),
    ("ipaddressclaim-create-ssa.json", true, 0, &[]),
    ("ipaddressclaim-create-dryrun.json", true, 0, &[]),
    ("ipaddressclaim-update-label.json", true, 0, &[]),
    // The dry-run UPDATE re-points the claim back to pool-a: judged like any other (C4).
    (
        "ipaddressclaim-update-dryrun.json",
        false,
        422,
        &["spec.poolRef.kind", "spec.poolRef.name"],
    ),
    // C4: poolRef re-pointed from InClusterIPPool pool-a to GlobalInClusterIPPool global-pool-a.
    (
        "ipaddressclaim-update-spec.json",
        false,
        422,
        &["spec.poolRef.kind", "spec.poolRef.name"],
    ),
    ("ipaddressclaim-delete.json", true, 0, &[]),
    ("ipaddressclaim-delete-dryrun.json", true, 0, &[]),
    ("ipaddress-create.json", true, 0, &[]),
    ("ipaddress-create-v1alpha1.json", true, 0, &[]),
    ("ipaddress-create-v1beta1.json", true, 0, &[]),
    ("ipaddress-update-label.json", true, 0, &[]),
    // A10: spec.address 10.10.0.10 -> 10.10.0.11.
    ("ipaddress-update-spec.json", false, 422, &["spec.address"]),
    ("ipaddress-delete.json", true, 0, &[]),
    ("inclusterippool-create.json", true, 0, &[]),
    ("inclusterippool-create-v1alpha1.json", true, 0, &[]),
    ("inclusterippool-update-label.json", true, 0, &[]),
    // P9: addr-held (10.10.0.12) references pool-a.
    (
        "inclusterippool-delete.json",
        false,
        403,
        &["metadata.name"],
    ),
    ("globalinclusterippool-create.json", true, 0, &[]),
    ("globalinclusterippool-create-v1alpha1.json", true, 0, &[]),
    ("globalinclusterippool-update-label.json", true, 0, &[]),
    ("globalinclusterippool-update-spec.json", true, 0, &[]),
    ("globalinclusterippool-delete.json", true, 0, &[]),
];

#[test]
fn every_capture_gets_the_expected_decision() {
    let a = admission();
    for (dir, (file, allowed, code, fields)) in releases()
        .iter()
        .flat_map(|d| EXPECTED.iter().map(move |e| (d, e)))
    {
        let resp = review(&a, Endpoint::Validate, &load_from(dir, file));
        let file = &format!("{}/{file}", dir.file_name().unwrap().to_string_lossy());
        assert_eq!(resp["allowed"], *allowed, "{file}: {resp:#}");
        if *allowed {
            assert!(resp.get("status").is_none(), "{file}: {resp:#}");
        } else {
            assert_eq!(resp["status"]["code"], *code, "{file}: {resp:#}");
            let causes: Vec<&str> = resp["status"]["details"]["causes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["field"].as_str().unwrap())
                .collect();
            for f in *fields {
                assert!(causes.contains(f), "{file}: missing cause at {f}: {resp:#}");
            }
        }
    }
}

#[test]
fn every_capture_in_the_folder_is_answered() {
    // Captures not named in the table still get a well-formed answer (never a 400 or a 500).
    let a = admission();
    let mut answered = 0;
    for dir in releases() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let body = load_from(&dir, path.file_name().unwrap().to_str().unwrap());
            let resp = review(&a, Endpoint::Validate, &body);
            assert_ne!(resp["status"]["code"], 500, "{path:?}");
            assert_ne!(resp["status"]["code"], 503, "{path:?}");
            answered += 1;
        }
    }
    assert!(answered >= EXPECTED.len() * releases().len(), "{answered}");
}

#[test]
fn c4_denial_renders_in_kubectl_as_one_line_per_changed_field() {
    let a = admission();
    let resp = review(
        &a,
        Endpoint::Validate,
        &load("ipaddressclaim-update-spec.json"),
    );
    let status = &resp["status"];
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "IPAddressClaim");
    assert_eq!(status["details"]["group"], "ipam.cluster.x-k8s.io");
    assert_eq!(status["details"]["name"], "claim-a");
    assert!(status["message"]
        .as_str()
        .unwrap()
        .starts_with("IPAddressClaim.ipam.cluster.x-k8s.io \"claim-a\" is invalid: ["));
    let rendered = kubectl_render(&resp);
    assert_eq!(
        rendered,
        "The IPAddressClaim \"claim-a\" is invalid: \n\
         * spec.poolRef.kind: Invalid value: \"GlobalInClusterIPPool\": field is immutable (was \"InClusterIPPool\") [ipam-guard C4]\n\
         * spec.poolRef.name: Invalid value: \"global-pool-a\": field is immutable (was \"pool-a\") [ipam-guard C4]\n"
    );
    for c in status["details"]["causes"].as_array().unwrap() {
        assert_eq!(c["reason"], "FieldValueInvalid");
    }
}

#[test]
fn p9_delete_denial_is_forbidden_and_names_the_holder() {
    let a = admission();
    let resp = review(&a, Endpoint::Validate, &load("inclusterippool-delete.json"));
    let status = &resp["status"];
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["code"], 403);
    let msg = status["message"].as_str().unwrap();
    assert!(
        msg.starts_with("inclusterippools.ipam.cluster.x-k8s.io \"pool-a\" is forbidden: Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed."),
        "{msg}"
    );
    assert!(msg.contains("capture-ns/addr-held (10.10.0.12)"), "{msg}");
    assert!(msg.ends_with(" [ipam-guard P9]"), "{msg}");
    // kubectl prints this message whole for a 403, after its own prefix.
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Forbidden: Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed. Held by: capture-ns/addr-held (10.10.0.12) [ipam-guard P9]"
    );
}

#[test]
fn edited_captures_break_each_rule_family() {
    let a = admission();
    // C2: a namespace under poolRef.
    let mut claim = load("ipaddressclaim-create.json");
    claim["request"]["object"]["spec"]["poolRef"]["namespace"] = json!("other");
    let resp = review(&a, Endpoint::Validate, &claim);
    assert_eq!(resp["allowed"], false);
    let cause = &resp["status"]["details"]["causes"][0];
    assert_eq!(cause["reason"], "FieldValueForbidden");
    assert_eq!(cause["field"], "spec.poolRef.namespace");

    // A9: the address addr-held already has, written in another form is impossible for IPv4;
    // the same text is enough to prove the duplicate check.
    let mut addr = load("ipaddress-create.json");
    addr["request"]["object"]["spec"]["address"] = json!("10.10.0.12");
    addr["request"]["object"]["spec"]["claimRef"]["name"] = json!("claim-other");
    let resp = review(&a, Endpoint::Validate, &addr);
    assert_eq!(resp["allowed"], false, "{resp:#}");
    let causes = resp["status"]["details"]["causes"].as_array().unwrap();
    assert!(
        causes.iter().any(|c| c["reason"] == "FieldValueDuplicate"
            && c["field"] == "spec.address"
            && c["message"]
                .as_str()
                .unwrap()
                .contains("10.10.0.12 is already held by IPAddress capture-ns/addr-held")),
        "{resp:#}"
    );

    // A1 + A2: bad address and prefix, both reported in one answer.
    let mut addr = load("ipaddress-create.json");
    addr["request"]["object"]["spec"]["address"] = json!("10.10.0.010");
    addr["request"]["object"]["spec"]["prefix"] = json!(4294967320u64);
    let resp = review(&a, Endpoint::Validate, &addr);
    let fields: Vec<&str> = resp["status"]["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&"spec.address"), "{resp:#}");
    assert!(fields.contains(&"spec.prefix"), "{resp:#}");

    // P10: a second namespaced pool overlapping pool-a.
    let mut pool = load("inclusterippool-create.json");
    pool["request"]["name"] = json!("pool-b");
    pool["request"]["object"]["metadata"]["name"] = json!("pool-b");
    pool["request"]["object"]["spec"]["addresses"] = json!(["10.10.0.0/24"]);
    let resp = review(&a, Endpoint::Validate, &pool);
    assert_eq!(resp["allowed"], false, "{resp:#}");
    let rendered = kubectl_render(&resp);
    assert_eq!(
        rendered,
        "The InClusterIPPool \"pool-b\" is invalid: spec.addresses[0]: Invalid value: \"10.10.0.0/24\": overlaps InClusterIPPool capture-ns/pool-a (10.10.0.10-10.10.0.20, 10.10.0.32-10.10.0.47) [ipam-guard P10]\n"
    );
    // The README shows exactly this, after the command that caused it.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("$ kubectl create -f pool-b.yaml\n{rendered}```")),
        "README's example is not what kubectl prints:\n{rendered}"
    );
}

#[test]
fn v1beta1_review_is_answered_in_v1beta1() {
    let a = admission();
    let mut body = load("ipaddressclaim-create.json");
    body["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let resp = review(&a, Endpoint::Validate, &body);
    assert_eq!(resp["allowed"], true);
}

#[test]
fn m1_mutation_fills_api_group_as_a_base64_json_patch() {
    let a = admission();
    let mut body = load("mutating/ipaddress-create.json");
    let spec = &mut body["request"]["object"]["spec"];
    spec["poolRef"].as_object_mut().unwrap().remove("apiGroup");
    let resp = review(&a, Endpoint::Mutate, &body);
    assert_eq!(resp["allowed"], true);
    assert_eq!(resp["patchType"], "JSONPatch");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(resp["patch"].as_str().expect("patch is a base64 string"))
        .unwrap();
    let ops: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        ops,
        json!([{"op": "add", "path": "/spec/poolRef/apiGroup", "value": "ipam.cluster.x-k8s.io"}])
    );
    // Idempotent: the patched object needs no further patch.
    let patch: json_patch::Patch = serde_json::from_value(ops).unwrap();
    json_patch::patch(&mut body["request"]["object"], &patch).unwrap();
    let again = review(&a, Endpoint::Mutate, &body);
    assert!(again.get("patch").is_none(), "{again:#}");
}

#[test]
fn mutating_captures_as_sent_need_no_patch_or_get_the_label() {
    let a = admission();
    for file in [
        "mutating/ipaddress-create.json",
        "mutating/ipaddress-create-v1alpha1.json",
        "mutating/ipaddress-create-v1beta1.json",
        "mutating/ipaddress-update-label.json",
        "mutating/ipaddress-update-spec.json",
    ] {
        let resp = review(&a, Endpoint::Mutate, &load(file));
        assert_eq!(resp["allowed"], true, "{file}");
        assert!(resp.get("patch").is_none(), "{file}: {resp:#}");
    }
}

#[test]
fn c3_warning_names_ipam_guard_and_the_rule() {
    let a = admission();
    let mut claim = load("ipaddressclaim-create.json");
    claim["request"]["object"]["spec"]["poolRef"]["name"] = json!("no-such-pool");
    let resp = review(&a, Endpoint::Validate, &claim);
    assert_eq!(resp["allowed"], true, "{resp:#}");
    // kubectl prints each entry as `Warning: <entry>`.
    assert_eq!(
        resp["warnings"],
        json!([
            "spec.poolRef.name: InClusterIPPool capture-ns/no-such-pool not found [ipam-guard C3]"
        ])
    );
}
