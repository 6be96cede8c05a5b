//! The CEL backstop (`ipam-guard policies`) and the webhooks' matchConditions, without an API
//! server: the committed components are what the generators print today, the policies cover
//! exactly the single-object rules the catalogue says they do, the immutable leaves are the CRDs'
//! own, and the condition table never calls a request irrelevant that a validator or mutator
//! would answer with anything. `crates/e2e/tests/e2e_backstop.rs` runs the generated CEL on real
//! API servers.

use std::path::{Path, PathBuf};

use ipam_guard::catalogue::{Effect, RULES};
use ipam_guard::cli::policies::{
    conditions_patch, policies_yaml, REFRESH_CONDITIONS, REFRESH_POLICIES,
};
use ipam_guard::cluster::StaticView;
use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::model::{Operation, Request};
use ipam_guard::rules::backstop::{self, Coverage};
use ipam_guard::rules::conditions::{matters, mutation_matters, validation_matters};
use ipam_guard::rules::{self, Ctx, Options, OverlapScope};
use serde_json::{json, Value};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn assert_fresh(path: &str, generated: &str, refresh: &str) {
    let committed = std::fs::read_to_string(root().join(path)).unwrap_or_default();
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "lengths differ".to_string(),
                |i| format!("first difference at line {}", i + 1),
            );
        panic!("{path} is stale ({first}). Refresh it with:\n    {refresh}\n");
    }
}

#[test]
fn cel_backstop_component_is_generated_from_the_catalogue() {
    assert_fresh(
        "manifests/components/cel-backstop/policies.yaml",
        &policies_yaml(None),
        REFRESH_POLICIES,
    );
}

#[test]
fn match_conditions_component_is_generated_from_the_rule_table() {
    assert_fresh(
        "manifests/components/match-conditions/webhooks-patch.yaml",
        &conditions_patch(),
        REFRESH_CONDITIONS,
    );
}

/// Each policy is for a rule that reads only the object written and can deny; its messages carry
/// the rule's id as the webhook's do; every other such rule says why it has none.
#[test]
fn policies_cover_single_object_denials_and_the_rest_say_why_not() {
    let policies = backstop::policies();
    assert!(!policies.is_empty());
    for p in &policies {
        assert!(!p.id.reads_view(), "{}", p.id);
        assert!(
            matches!(p.id.effect(), Effect::Deny | Effect::DenyOrWarn),
            "{}",
            p.id
        );
        assert!(!p.checks.is_empty(), "{}", p.id);
        for c in &p.checks {
            assert!(
                c.message.ends_with(&format!(" [ipam-guard {}]", p.id)),
                "{}: {}",
                p.id,
                c.message
            );
            assert!(c.field.starts_with("spec.") || c.field.starts_with("metadata."));
        }
        for op in p.operations {
            assert!(
                p.kinds.iter().all(|k| k.operations().contains(op)),
                "{}: {op} is not registered for its kinds",
                p.id
            );
        }
    }
    for rule in RULES {
        match backstop::coverage(rule.id) {
            Coverage::Policy { .. } => {}
            Coverage::WebhookOnly(why) => {
                assert!(!why.is_empty(), "{} needs a reason", rule.id);
                assert!(!rule.id.reads_view());
            }
            Coverage::NotApplicable(_) => {}
        }
    }
    // Policy names are unique.
    let mut names: Vec<String> = policies.iter().map(|p| p.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), policies.len());
}

/// The upstream CRDs, read in place beside the project (the repository holds no copy of them).
fn crd_dir() -> PathBuf {
    root().join("../shared/fixtures/crds")
}

fn leaves(schema: &Value, path: String, out: &mut Vec<String>) {
    match schema["properties"].as_object() {
        Some(props) if schema["type"] == "object" => {
            for (k, v) in props {
                leaves(v, format!("{path}.{k}"), out);
            }
        }
        _ => out.push(path),
    }
}

/// The spec leaves of every served version of the CRD in `file`.
fn spec_leaves(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(crd_dir().join(file)).unwrap();
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let crd: Value = serde::Deserialize::deserialize(doc).unwrap();
        if crd.is_null() {
            continue;
        }
        for v in crd["spec"]["versions"].as_array().unwrap() {
            let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
            leaves(spec, "spec".into(), &mut out);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// C4, A10, MC3 and MA3 report one cause per changed leaf; the policies check each leaf the CRDs
/// declare (an API server prunes any other).
#[test]
fn immutable_leaves_are_the_crds_spec_leaves() {
    if !crd_dir().is_dir() {
        eprintln!(
            "skipped: ../shared/fixtures/crds is absent; the immutable leaves are not compared with the providers' CRDs"
        );
        return;
    }
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        owned(backstop::CLAIM_LEAVES),
        spec_leaves("ipam.cluster.x-k8s.io_ipaddressclaims.yaml")
    );
    assert_eq!(
        owned(backstop::ADDRESS_LEAVES),
        spec_leaves("ipam.cluster.x-k8s.io_ipaddresses.yaml")
    );
    assert_eq!(
        backstop::metal3_claim_leaves(),
        spec_leaves("ipam.metal3.io_ipclaims.yaml")
    );
    assert_eq!(
        backstop::metal3_address_leaves(),
        spec_leaves("ipam.metal3.io_ipaddresses.yaml")
    );
}

// === matchConditions: the table against the validators and mutators ===

fn yaml_objects(text: &str) -> Vec<Value> {
    let loaded = ipam_guard::manifests::read_str("x.yaml", text);
    assert!(
        loaded.errors.is_empty(),
        "{:?}",
        loaded.errors.first().map(|e| e.to_string())
    );
    loaded.manifests.into_iter().map(|m| m.object).collect()
}

fn index_of(text: &str) -> Index {
    let loaded = ipam_guard::manifests::read_str("cluster.yaml", text);
    StaticView::from_manifests(loaded.manifests).into_index()
}

fn kind_of(obj: &Value) -> (Kind, String) {
    Kind::from_api_version(
        obj["apiVersion"].as_str().unwrap(),
        obj["kind"].as_str().unwrap(),
    )
    .unwrap()
}

/// Writes a kubectl user or a controller makes that touch metadata, plus a spec change.
type Perturbation = (&'static str, fn(&mut Value));

fn perturbations() -> Vec<Perturbation> {
    vec![
        ("nothing", |_| {}),
        ("a label", |o| {
            o["metadata"]["labels"]["example.com/team"] = json!("blue");
        }),
        ("the cluster-name label", |o| {
            o["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] = json!("prod");
        }),
        ("no labels", |o| {
            o["metadata"].as_object_mut().unwrap().remove("labels");
        }),
        ("an annotation", |o| {
            o["metadata"]["annotations"]["example.com/note"] = json!("x");
        }),
        ("the address space", |o| {
            o["metadata"]["annotations"]["ipam-guard.io/address-space"] = json!("blue");
        }),
        ("the ipAddress annotation", |o| {
            o["metadata"]["annotations"]["ipAddress"] = json!("10.0.0.300");
        }),
        ("a skip-delete annotation", |o| {
            o["metadata"]["annotations"]["ipam.cluster.x-k8s.io/skip-validate-delete-webhook"] =
                json!("");
        }),
        ("a finalizer", |o| {
            o["metadata"]["finalizers"] = json!(["example.com/hold"]);
        }),
        ("deletionTimestamp", |o| {
            o["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }),
        ("resourceVersion and generation", |o| {
            o["metadata"]["resourceVersion"] = json!("999");
            o["metadata"]["generation"] = json!(7);
            o["metadata"]["managedFields"] = json!([{"manager": "kubectl"}]);
        }),
        ("status", |o| {
            o["status"] = json!({"allocatedIPCount": 0});
        }),
        ("spec.clusterName", |o| {
            if o["spec"].is_object() {
                o["spec"]["clusterName"] = json!("staging");
            }
        }),
    ]
}

/// Every object of the catalogue's examples and the captured requests.
fn corpus() -> Vec<(Value, Option<Value>, String)> {
    let mut out = Vec::new();
    for rule in RULES {
        let e = &rule.example;
        let Ok(objs) = std::panic::catch_unwind(|| yaml_objects(e.object)) else {
            continue;
        };
        let old = e.old.map(|o| yaml_objects(o).remove(0));
        for o in objs {
            out.push((o, old.clone(), e.cluster.to_string()));
        }
        if !e.cluster.is_empty() {
            for o in yaml_objects(e.cluster) {
                out.push((o, None, e.cluster.to_string()));
            }
        }
    }
    // What a real API server sent (tests/fixtures/reviews/README.md).
    for entry in std::fs::read_dir(root().join("tests/fixtures/reviews/v1.36")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let review: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let req = &review["request"];
        let obj = if req["object"].is_object() {
            req["object"].clone()
        } else {
            req["oldObject"].clone()
        };
        if !obj.is_object()
            || Kind::from_api_version(
                obj["apiVersion"].as_str().unwrap_or(""),
                obj["kind"].as_str().unwrap_or(""),
            )
            .is_none()
        {
            continue;
        }
        let old = req["oldObject"]
            .is_object()
            .then(|| req["oldObject"].clone());
        out.push((obj, old, String::new()));
    }
    out
}

fn request<'a>(
    kind: Kind,
    version: &'a str,
    op: Operation,
    obj: Option<&'a Value>,
    old: Option<&'a Value>,
) -> Request<'a> {
    let src = obj.or(old).unwrap();
    Request {
        operation: op,
        kind,
        version,
        namespace: src["metadata"]["namespace"].as_str(),
        name: src["metadata"]["name"].as_str().unwrap_or(""),
        object: obj,
        old_object: old,
        dry_run: false,
    }
}

fn settings() -> [Options; 2] {
    [
        Options::default(),
        Options {
            overlap_scope: OverlapScope::Namespace,
            require_existing_pool: true,
            ..Options::default()
        },
    ]
}

/// For every object of the corpus and every metadata or spec write on top of it (UPDATE), and
/// every DELETE of it: when the table says the request cannot matter, the validator answers
/// nothing at all (no denial, no warning) and the mutator patches nothing.
#[test]
fn conditions_never_skip_a_request_a_rule_answers() {
    let (mut skipped, mut sent) = (0, 0);
    for (obj, old, cluster) in corpus() {
        let index = index_of(&cluster);
        let (kind, version) = kind_of(&obj);
        // An API server sends only the versions the webhooks register (K1 aside).
        if !kind.serves_version(&version) {
            continue;
        }
        let mut bases = vec![obj.clone()];
        bases.extend(old);
        for base in &bases {
            for (what, p) in perturbations() {
                for (what_old, q) in perturbations() {
                    let mut new = base.clone();
                    p(&mut new);
                    let mut stored = base.clone();
                    q(&mut stored);
                    let pairs = [
                        (Operation::Update, Some(&new), Some(&stored)),
                        (Operation::Delete, None, Some(&stored)),
                    ];
                    for (op, o, s) in pairs {
                        if op == Operation::Delete && !kind.operations().contains(&"DELETE") {
                            continue;
                        }
                        let empty = json!({});
                        let v_matters =
                            validation_matters(kind, op, o.unwrap_or(&empty), s.unwrap());
                        if v_matters {
                            sent += 1;
                        } else {
                            skipped += 1;
                            for options in settings() {
                                let ctx = Ctx {
                                    index: &index,
                                    options,
                                    now: std::time::Instant::now(),
                                };
                                let v = rules::validate(&request(kind, &version, op, o, s), &ctx);
                                assert!(
                                    v.errors.is_empty() && v.warnings.is_empty() && v.unavailable.is_none(),
                                    "{kind:?} {op:?} with {what} over a stored object with {what_old} is skipped by the conditions, yet the webhook says {:?} {:?}",
                                    v.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
                                    v.warnings.iter().map(ToString::to_string).collect::<Vec<_>>()
                                );
                            }
                        }
                        if op == Operation::Update
                            && kind.mutated()
                            && !mutation_matters(kind, op, &new)
                        {
                            let m = rules::mutate(&request(kind, &version, op, o, s));
                            assert!(
                                m.patch.is_empty() && m.warnings.is_empty() && m.errors.is_empty(),
                                "{kind:?} UPDATE with {what} is skipped by the mutating conditions, yet it patches {:?}",
                                m.patch
                            );
                        }
                    }
                }
            }
        }
    }
    // Both sides are exercised: the test would pass vacuously otherwise.
    assert!(
        skipped > 100 && sent > 100,
        "skipped {skipped}, sent {sent}"
    );
}

/// Every rule's example reaches the webhooks under the table (the e2e suite checks the same of
/// the generated CEL on a real API server).
#[test]
fn every_catalogue_example_matters() {
    for rule in RULES {
        let e = &rule.example;
        let Some(op) = Operation::parse(e.operation) else {
            continue;
        };
        let Ok(objs) = std::panic::catch_unwind(|| yaml_objects(e.object)) else {
            continue;
        };
        let obj = &objs[0];
        let (kind, _) = kind_of(obj);
        let old = e.old.map(|o| yaml_objects(o).remove(0));
        let (new, stored) = match op {
            Operation::Update => (obj.clone(), old.unwrap()),
            Operation::Delete => (json!({}), obj.clone()),
            _ => (obj.clone(), json!({})),
        };
        // An allowance (P11) is a write no rule can refuse: the API server need not ask.
        let expected = rule.effect() != Effect::Allow;
        assert_eq!(
            matters(kind, op, &new, &stored),
            expected,
            "{}: its example would {}reach ipam-guard",
            rule.id,
            if expected { "not " } else { "" }
        );
    }
}

// === the components, rendered ===

fn render(dir: &Path) -> Vec<Value> {
    let kubectl = std::env::var_os("KUBECTL").unwrap_or_else(|| "kubectl".into());
    let out = std::process::Command::new(kubectl)
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl on PATH (or KUBECTL) renders the manifests");
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// The example overlay puts both components on top of manifests/: every policy with its binding
/// (cluster-scoped, no namespace), and both webhooks with the generated matchConditions and
/// everything else of the base left as it was.
#[test]
fn example_overlay_renders_policies_and_match_conditions() {
    let base = render(&root().join("manifests"));
    let docs = render(&root().join("examples/install/cel-backstop"));
    let policies = backstop::policies();
    assert_eq!(docs.len(), base.len() + 2 * policies.len());
    for p in &policies {
        for kind in [
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ] {
            let o = docs
                .iter()
                .find(|o| o["kind"] == kind && o["metadata"]["name"] == p.name().as_str())
                .unwrap_or_else(|| panic!("{kind} {}", p.name()));
            assert!(o["metadata"]["namespace"].is_null(), "{o}");
        }
    }
    for (kind, conditions) in [
        (
            "ValidatingWebhookConfiguration",
            ipam_guard::rules::conditions::validating_conditions(),
        ),
        (
            "MutatingWebhookConfiguration",
            ipam_guard::rules::conditions::mutating_conditions(),
        ),
    ] {
        let with = docs.iter().find(|o| o["kind"] == kind).unwrap();
        let without = base.iter().find(|o| o["kind"] == kind).unwrap();
        // Every webhook of the configuration (the validating one has a second, for Clusters)
        // gets the same conditions, and the patch changes nothing else.
        let hooks = with["webhooks"].as_array().unwrap();
        assert!(!hooks.is_empty());
        let mut stripped = with.clone();
        for (i, hook) in hooks.iter().enumerate() {
            assert_eq!(hook["matchConditions"], Value::Array(conditions.clone()));
            stripped["webhooks"][i]
                .as_object_mut()
                .unwrap()
                .remove("matchConditions");
            assert!(without["webhooks"][i].get("matchConditions").is_none());
        }
        assert_eq!(&stripped, without, "the patch changes nothing else");
    }
}

// === the commands ===

fn ipam_guard(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .args(args)
        .output()
        .expect("run ipam-guard")
}

/// `--kube-version` picks what a server evaluates: 1.30 gets no policy that needs CEL's IP library,
/// an older server gets none (exit 2, saying why), and an unreadable version is an error.
#[test]
fn policies_follow_the_target_version() {
    let all = ipam_guard(&["policies"]);
    assert_eq!(all.status.code(), Some(0));
    assert_eq!(String::from_utf8(all.stdout).unwrap(), policies_yaml(None));
    let v130 =
        String::from_utf8(ipam_guard(&["policies", "--kube-version", "v1.30.4"]).stdout).unwrap();
    for p in backstop::policies() {
        let named = v130.contains(&format!("name: {}\n", p.name()));
        assert_eq!(named, !p.ip_library, "{}", p.name());
    }
    assert!(backstop::policies().iter().any(|p| p.ip_library));
    for (args, says) in [
        (
            &["policies", "--kube-version", "1.29"][..],
            "needs Kubernetes 1.30",
        ),
        (
            &["policies", "--webhook-conditions", "--kube-version", "1.27"],
            "need Kubernetes 1.30",
        ),
        (
            &["policies", "--kube-version", "soon"],
            "is not a Kubernetes version",
        ),
    ] {
        let o = ipam_guard(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty());
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{args:?}"
        );
    }
}

/// dev-webhooks adds matchConditions only for a server it knows to have them.
#[test]
fn dev_webhooks_add_match_conditions_from_1_30() {
    use ipam_guard::cli::dev_webhooks::configurations;
    use ipam_guard::cli::DevWebhooksArgs;
    let args = |v: Option<&str>| DevWebhooksArgs {
        url: "https://127.0.0.1:9443".into(),
        namespace: vec!["trial".into()],
        cert_dir: PathBuf::new(),
        kube_version: v.map(str::to_string),
    };
    for (v, with) in [
        (None, false),
        (Some("1.29"), false),
        (Some("1.30"), true),
        (Some("v1.36.2"), true),
    ] {
        let [validating, mutating] = configurations(&args(v), b"ca");
        for (conf, expected) in [
            (
                validating,
                ipam_guard::rules::conditions::validating_conditions(),
            ),
            (
                mutating,
                ipam_guard::rules::conditions::mutating_conditions(),
            ),
        ] {
            let got = &conf["webhooks"][0]["matchConditions"];
            if with {
                assert_eq!(got, &Value::Array(expected), "{v:?}");
            } else {
                assert!(got.is_null(), "{v:?}: {got}");
            }
        }
    }
}
