//! The install manifests agree with `crates/core/src/kinds.rs` and with what the server expects.
//!
//! Renders `manifests/` with `kubectl kustomize` (or a standalone `kustomize build`), then checks
//! the webhook registrations, RBAC, Deployment and certificate wiring. Every expectation about
//! kinds is derived from `ipam_guard::kinds::KINDS`, so adding a kind there without registering it
//! here fails. Needs kubectl on PATH (or `KUBECTL=/path/to/kubectl`); without it the tests fail
//! rather than pass silently.
//!
//! Rendering, the workload and the webhook rules are here; the rest in `manifests/`: `rbac`,
//! `wiring` (webhook settings, Service, certificate), `deployment`, `components`.
#[path = "manifests/components.rs"]
mod components;
#[path = "manifests/deployment.rs"]
mod deployment;
#[path = "manifests/rbac.rs"]
mod rbac;
#[path = "manifests/wiring.rs"]
mod wiring;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use clap::Parser;
use ipam_guard::cli::{Cli, Command as CliCommand, DeciderMode, LogFormat, ServeArgs};
use ipam_guard::kinds::{Kind, KindInfo, KINDS};
use serde::Deserialize;
use serde_json::Value;

/// The server drains in-flight requests for this long after `--shutdown-delay`.
const DRAIN_SECS: u64 = 30;
const CERT_MANAGER_INJECT_CA: &str = "cert-manager.io/inject-ca-from";
const NAME_LABEL: &str = "app.kubernetes.io/name";
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

// ---------------------------------------------------------------------------------------------
// Rendering

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

fn manifests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests")
}

fn render_text() -> String {
    render_dir(&manifests_dir())
}

fn render_dir(dir: &Path) -> String {
    let mut cmd = if let Some(kubectl) = std::env::var_os("KUBECTL")
        .map(PathBuf::from)
        .or_else(|| find_on_path("kubectl"))
    {
        let mut c = Command::new(kubectl);
        c.arg("kustomize").arg(dir);
        c
    } else if let Some(kustomize) = find_on_path("kustomize") {
        let mut c = Command::new(kustomize);
        c.arg("build").arg(dir);
        c
    } else {
        panic!(
            "kubectl is not on PATH (nor kustomize): the manifests test renders manifests/ with \
             `kubectl kustomize`. Install kubectl (https://kubernetes.io/docs/tasks/tools/), e.g.\n  \
             curl -fsSLo kubectl https://dl.k8s.io/release/v1.33.0/bin/linux/amd64/kubectl && \
             install -m 0755 kubectl /usr/local/bin/kubectl\nor point KUBECTL at a kubectl binary."
        );
    };
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("kustomize output is UTF-8")
}

/// Every rendered object, once per test binary.
fn objects() -> &'static [Value] {
    static OBJECTS: OnceLock<Vec<Value>> = OnceLock::new();
    OBJECTS.get_or_init(|| {
        let text = render_text();
        let mut docs = Vec::new();
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v = Value::deserialize(doc).expect("rendered manifests are valid YAML");
            if !v.is_null() {
                docs.push(v);
            }
        }
        assert!(!docs.is_empty(), "kustomize rendered nothing");
        docs
    })
}

fn all_of(kind: &str) -> Vec<&'static Value> {
    objects().iter().filter(|o| o["kind"] == kind).collect()
}

/// The one object of `kind`; panics when there is none or several.
fn only(kind: &str) -> &'static Value {
    let found = all_of(kind);
    assert_eq!(
        found.len(),
        1,
        "expected exactly one {kind}, rendered {}",
        found.len()
    );
    found[0]
}

fn named(kind: &str, namespace: Option<&str>, name: &str) -> Option<&'static Value> {
    objects().iter().find(|o| {
        o["kind"] == kind
            && o["metadata"]["name"] == name
            && o["metadata"]["namespace"].as_str() == namespace
    })
}

fn s<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what}: expected a string, got {v}"))
}

fn arr<'a>(v: &'a Value, what: &str) -> &'a [Value] {
    v.as_array()
        .unwrap_or_else(|| panic!("{what}: expected a list, got {v}"))
}

fn strings(v: &Value, what: &str) -> Vec<String> {
    arr(v, what)
        .iter()
        .map(|x| s(x, what).to_string())
        .collect()
}

fn name_of(o: &Value) -> &str {
    s(&o["metadata"]["name"], "metadata.name")
}

fn namespace_of(o: &Value) -> &str {
    s(&o["metadata"]["namespace"], "metadata.namespace")
}

/// Set difference report: what is expected but missing, and what is there but not expected.
fn assert_same_set<T: Ord + std::fmt::Debug>(
    what: &str,
    actual: &BTreeSet<T>,
    expected: &BTreeSet<T>,
) {
    let lines = |items: Vec<&T>| -> String {
        items
            .iter()
            .map(|x| format!("\n    {x:?}"))
            .collect::<String>()
    };
    let missing: Vec<_> = expected.difference(actual).collect();
    let extra: Vec<_> = actual.difference(expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what} do not match crates/core/src/kinds.rs\n  missing:{}\n  unexpected:{}",
        lines(missing),
        lines(extra)
    );
}

// ---------------------------------------------------------------------------------------------
// The workload: Deployment, its container and the flags it passes

struct Workload {
    deployment: &'static Value,
    pod: &'static Value,
    container: &'static Value,
    serve: ServeArgs,
}

fn workload() -> Workload {
    let deployment = only("Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let containers = arr(&pod["containers"], "containers");
    let container = containers
        .iter()
        .find(|c| c["name"] == "ipam-guard")
        .expect("a container named ipam-guard");
    assert!(
        container.get("command").is_none(),
        "the container must not override the image's ENTRYPOINT [\"/ipam-guard\"]"
    );
    let args = strings(&container["args"], "container args");
    let cli = Cli::try_parse_from(std::iter::once("ipam-guard".to_string()).chain(args.clone()))
        .unwrap_or_else(|e| {
            panic!("the Deployment's args {args:?} are not accepted by the CLI:\n{e}")
        });
    let CliCommand::Serve(serve) = cli.command else {
        panic!("the Deployment must run `serve`, got {args:?}");
    };
    Workload {
        deployment,
        pod,
        container,
        serve: *serve,
    }
}

fn container_port(container: &Value, name: &str) -> u16 {
    let port = arr(&container["ports"], "container ports")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no container port named {name}"));
    assert_eq!(port["protocol"].as_str().unwrap_or("TCP"), "TCP");
    port["containerPort"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or_else(|| panic!("container port {name}: bad containerPort"))
}

/// `":9443"` → 9443. Listen addresses carry no host (see `listeners_bind_every_family`).
fn listen_port(listen: &str) -> u16 {
    let (_, port) = listen
        .rsplit_once(':')
        .unwrap_or_else(|| panic!("listen address {listen:?} has no port"));
    port.parse()
        .unwrap_or_else(|_| panic!("listen address {listen:?}: bad port"))
}

/// The Service fronting the webhook: the one whose selector picks the Deployment's pods and
/// that has a port targeting the container's `webhook` port.
fn webhook_service(w: &Workload) -> &'static Value {
    let pod_labels = &w.deployment["spec"]["template"]["metadata"]["labels"];
    let services: Vec<_> = all_of("Service")
        .into_iter()
        .filter(|svc| selects(&svc["spec"]["selector"], pod_labels))
        .collect();
    assert_eq!(
        services.len(),
        1,
        "exactly one Service must select the pods"
    );
    services[0]
}

/// Whether a plain `key: value` selector (Service) matches `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    match selector.as_object() {
        Some(m) if !m.is_empty() => m.iter().all(|(k, v)| &labels[k] == v),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Webhook rules

/// One (group, version, resource, operation, scope) a webhook is registered for.
type Registration = (String, String, String, String, String);

fn scope_of(k: &KindInfo) -> &'static str {
    if k.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    }
}

fn expected_registrations(
    kinds: &[&KindInfo],
    ops: impl Fn(Kind) -> Vec<&'static str>,
) -> BTreeSet<Registration> {
    let mut want = BTreeSet::new();
    for k in kinds {
        for v in k.versions {
            for op in ops(k.kind) {
                want.insert((
                    k.group.to_string(),
                    v.to_string(),
                    k.plural.to_string(),
                    op.to_string(),
                    scope_of(k).to_string(),
                ));
            }
        }
    }
    want
}

/// Expands every rule of every webhook of `config_kind` into the requests it matches.
fn registrations(config_kind: &str) -> BTreeSet<Registration> {
    let mut got = BTreeSet::new();
    for config in all_of(config_kind) {
        for hook in arr(&config["webhooks"], "webhooks") {
            let rules = arr(&hook["rules"], "rules");
            assert!(!rules.is_empty(), "webhook {} has no rules", hook["name"]);
            for rule in rules {
                let groups = strings(&rule["apiGroups"], "apiGroups");
                let versions = strings(&rule["apiVersions"], "apiVersions");
                let resources = strings(&rule["resources"], "resources");
                let ops = strings(&rule["operations"], "operations");
                // Explicit scope: "*" (the default) would let a namespaced rule match a
                // cluster-scoped kind of the same group.
                let scope = s(&rule["scope"], "rule scope").to_string();
                for x in groups.iter().chain(&versions).chain(&resources).chain(&ops) {
                    assert!(!x.contains('*'), "{config_kind} rule {rule}: no wildcards");
                }
                for r in &resources {
                    assert!(
                        !r.contains('/'),
                        "{config_kind} rule {rule}: no subresources"
                    );
                }
                for g in &groups {
                    for v in &versions {
                        for r in &resources {
                            for op in &ops {
                                got.insert((
                                    g.clone(),
                                    v.clone(),
                                    r.clone(),
                                    op.clone(),
                                    scope.clone(),
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    got
}

#[test]
fn validating_rules_cover_exactly_the_kinds_table() {
    let all: Vec<&KindInfo> = KINDS.iter().collect();
    let want = expected_registrations(&all, |k| k.operations().to_vec());
    assert_same_set(
        "ValidatingWebhookConfiguration rules",
        &registrations("ValidatingWebhookConfiguration"),
        &want,
    );
    // DELETE reaches the webhook for pools only.
    for k in KINDS {
        assert_eq!(
            k.kind.operations().contains(&"DELETE"),
            k.pool,
            "{}",
            k.kind
        );
    }
}

#[test]
fn mutating_rules_cover_exactly_the_mutated_kinds() {
    let mutated: Vec<&KindInfo> = KINDS.iter().filter(|k| k.kind.mutated()).collect();
    assert!(!mutated.is_empty());
    // M1 on CREATE, M2 on CREATE and UPDATE; never DELETE.
    let want = expected_registrations(&mutated, |_| vec!["CREATE", "UPDATE"]);
    assert_same_set(
        "MutatingWebhookConfiguration rules",
        &registrations("MutatingWebhookConfiguration"),
        &want,
    );
}

// ---------------------------------------------------------------------------------------------
// Read by several parts: the serving Certificate, YAML documents of a rendered overlay

/// The Certificate whose Secret the pods mount.
fn serving_certificate(w: &Workload) -> &'static Value {
    let mounts = arr(&w.container["volumeMounts"], "volumeMounts");
    let cert_dir = w
        .serve
        .cert_dir
        .as_ref()
        .expect("the Deployment passes --cert-dir (the mount path)");
    let mount = mounts
        .iter()
        .find(|m| Path::new(s(&m["mountPath"], "mountPath")) == cert_dir.as_path())
        .unwrap_or_else(|| panic!("nothing is mounted at --cert-dir={}", cert_dir.display()));
    assert_eq!(
        mount["readOnly"], true,
        "the certificate mount is read-only"
    );
    let volume = arr(&w.pod["volumes"], "volumes")
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the certificate volume");
    let secret = s(
        &volume["secret"]["secretName"],
        "certificate volume secretName",
    );
    let ns = namespace_of(w.deployment);
    let certs: Vec<_> = all_of("Certificate")
        .into_iter()
        .filter(|c| c["spec"]["secretName"] == secret && namespace_of(c) == ns)
        .collect();
    assert_eq!(
        certs.len(),
        1,
        "exactly one Certificate writes Secret {ns}/{secret}"
    );
    certs[0]
}

fn docs_of(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("valid YAML"))
        .filter(|v| !v.is_null())
        .collect()
}
