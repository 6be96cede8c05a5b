//! The install manifests agree with `src/kinds.rs` and with what the server expects.
//!
//! Renders `manifests/` with `kubectl kustomize` (or a standalone `kustomize build`), then checks
//! the webhook registrations, RBAC, Deployment and certificate wiring. Every expectation about
//! kinds is derived from `ipam_guard::kinds::KINDS`, so adding a kind there without registering it
//! here fails. Needs kubectl on PATH (or `KUBECTL=/path/to/kubectl`); without it the tests fail
//! rather than pass silently.

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

/// The server drains in-flight requests for this long after `--shutdown-delay` (SPEC §10, issue 5).
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
        "{what} do not match src/kinds.rs\n  missing:{}\n  unexpected:{}",
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
    // SPEC §7: M1 on CREATE, M2 on CREATE and UPDATE; never DELETE.
    let want = expected_registrations(&mutated, |_| vec!["CREATE", "UPDATE"]);
    assert_same_set(
        "MutatingWebhookConfiguration rules",
        &registrations("MutatingWebhookConfiguration"),
        &want,
    );
}

// ---------------------------------------------------------------------------------------------
// RBAC

#[test]
fn cluster_role_grants_only_reads_of_served_kinds_and_crds() {
    let role = only("ClusterRole");
    let mut got = BTreeSet::new();
    for rule in arr(&role["rules"], "ClusterRole rules") {
        assert!(
            rule.get("nonResourceURLs").is_none(),
            "no nonResourceURLs: {rule}"
        );
        assert!(
            rule.get("resourceNames").is_none(),
            "no resourceNames: {rule}"
        );
        for g in strings(&rule["apiGroups"], "apiGroups") {
            for r in strings(&rule["resources"], "resources") {
                for v in strings(&rule["verbs"], "verbs") {
                    got.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    let mut want = BTreeSet::new();
    let reads = ["get", "list", "watch"];
    for k in KINDS {
        for v in reads {
            want.insert((k.group.to_string(), k.plural.to_string(), v.to_string()));
        }
    }
    // The CRD watch that starts a kind's watch when its CRD is installed.
    for v in reads {
        want.insert((
            "apiextensions.k8s.io".to_string(),
            "customresourcedefinitions".to_string(),
            v.to_string(),
        ));
    }
    assert_same_set("ClusterRole grants", &got, &want);

    // Bound to the ServiceAccount the pods run as.
    let w = workload();
    let sa_name = s(&w.pod["serviceAccountName"], "serviceAccountName");
    let ns = namespace_of(w.deployment);
    assert!(
        named("ServiceAccount", Some(ns), sa_name).is_some(),
        "ServiceAccount {ns}/{sa_name} is rendered"
    );
    assert_ne!(
        w.pod["automountServiceAccountToken"], false,
        "the live view needs the token"
    );
    let binding = only("ClusterRoleBinding");
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(binding["roleRef"]["name"], name_of(role));
    let subjects = arr(&binding["subjects"], "subjects");
    assert_eq!(subjects.len(), 1);
    assert_eq!(subjects[0]["kind"], "ServiceAccount");
    assert_eq!(subjects[0]["name"], sa_name);
    assert_eq!(subjects[0]["namespace"], ns);
}

/// SPEC X2 across replicas: the decider election needs get/create/update on one Lease, granted
/// by a namespaced Role in the install namespace (never cluster-wide), bound to the pods' account.
#[test]
fn decider_role_grants_only_leases_in_the_install_namespace() {
    let w = workload();
    let ns = namespace_of(w.deployment);
    let role = only("Role");
    assert_eq!(
        namespace_of(role),
        ns,
        "the Role is in the install namespace"
    );
    let mut got = BTreeSet::new();
    for rule in arr(&role["rules"], "Role rules") {
        for g in strings(&rule["apiGroups"], "apiGroups") {
            for r in strings(&rule["resources"], "resources") {
                for v in strings(&rule["verbs"], "verbs") {
                    got.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    let want: BTreeSet<_> = ["get", "create", "update"]
        .iter()
        .map(|v| {
            (
                "coordination.k8s.io".to_string(),
                "leases".to_string(),
                v.to_string(),
            )
        })
        .collect();
    assert_same_set("Role grants", &got, &want);
    let binding = only("RoleBinding");
    assert_eq!(namespace_of(binding), ns);
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(binding["roleRef"]["name"], name_of(role));
    let subjects = arr(&binding["subjects"], "subjects");
    assert_eq!(subjects.len(), 1);
    assert_eq!(subjects[0]["kind"], "ServiceAccount");
    assert_eq!(subjects[0]["name"], s(&w.pod["serviceAccountName"], "sa"));
    assert_eq!(subjects[0]["namespace"], ns);
}

/// The pods elect a decider (not `--decider=off`), learn their name, namespace and IP from the
/// downward API, expose the peer port, and their certificate works as a client certificate too.
#[test]
fn replicas_share_one_decider_over_mutual_tls() {
    let w = workload();
    assert_eq!(w.serve.decider.decider, DeciderMode::Lease);
    assert_eq!(w.serve.decider.decider_lease, "ipam-guard-decider");
    assert!(
        w.serve.decider.peer_advertise.is_none(),
        "the address comes from POD_IP"
    );
    assert_eq!(
        container_port(w.container, "peer"),
        listen_port(&w.serve.decider.peer_listen)
    );
    let env = arr(&w.container["env"], "container env");
    for (name, path) in [
        ("POD_NAME", "metadata.name"),
        ("POD_NAMESPACE", "metadata.namespace"),
        ("POD_IP", "status.podIP"),
    ] {
        let var = env
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("env {name} is set"));
        assert_eq!(var["valueFrom"]["fieldRef"]["fieldPath"], path, "{name}");
    }
    let cert = serving_certificate(&w);
    let usages = strings(&cert["spec"]["usages"], "usages");
    for want in ["server auth", "client auth"] {
        assert!(
            usages.iter().any(|u| u == want),
            "usages {usages:?} lack {want}"
        );
    }
    // The peer CA is the ca.crt cert-manager writes next to tls.crt in the mounted Secret.
    assert!(w.serve.decider.peer_ca_file.is_none());
}

// ---------------------------------------------------------------------------------------------
// Webhook settings, Service and certificate wiring

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

#[test]
fn webhooks_are_wired_to_the_service_and_certificate() {
    let w = workload();
    let ns = namespace_of(w.deployment);
    let service = webhook_service(&w);
    assert_eq!(namespace_of(service), ns);
    let cert = serving_certificate(&w);

    // The Service port the webhooks call must reach the container's webhook port.
    let webhook_port = container_port(w.container, "webhook");
    let service_ports = arr(&service["spec"]["ports"], "Service ports");
    let https = service_ports
        .iter()
        .find(|p| {
            p["targetPort"] == "webhook" || p["targetPort"].as_u64() == Some(webhook_port.into())
        })
        .expect("a Service port targeting the webhook port");
    assert_eq!(https["port"], 443);

    let dns = strings(&cert["spec"]["dnsNames"], "dnsNames");
    let svc = name_of(service);
    for want in [
        format!("{svc}.{ns}.svc"),
        format!("{svc}.{ns}.svc.cluster.local"),
    ] {
        assert!(
            dns.contains(&want),
            "Certificate dnsNames {dns:?} lack {want}"
        );
    }
    assert_eq!(cert["spec"]["privateKey"]["algorithm"], "ECDSA");
    assert_eq!(cert["spec"]["privateKey"]["size"], 256);
    issuer_chain_is_rendered(cert);

    let mut names = BTreeSet::new();
    for (config_kind, path, failure_policy) in [
        ("ValidatingWebhookConfiguration", "/validate", "Fail"),
        ("MutatingWebhookConfiguration", "/mutate", "Ignore"),
    ] {
        let config = only(config_kind);
        assert_eq!(
            config["metadata"]["annotations"][CERT_MANAGER_INJECT_CA],
            format!("{}/{}", namespace_of(cert), name_of(cert)),
            "{config_kind}: cainjector must read the serving Certificate"
        );
        let hooks = arr(&config["webhooks"], "webhooks");
        assert!(!hooks.is_empty());
        for hook in hooks {
            let name = s(&hook["name"], "webhook name");
            assert!(
                names.insert(name.to_string()),
                "duplicate webhook name {name}"
            );
            let ctx = format!("{config_kind} webhook {name}");
            let client = &hook["clientConfig"];
            assert!(
                client.get("url").is_none(),
                "{ctx}: call the Service, not a URL"
            );
            assert!(
                client.get("caBundle").is_none(),
                "{ctx}: caBundle is injected by cert-manager"
            );
            assert_eq!(client["service"]["name"], svc, "{ctx}");
            assert_eq!(client["service"]["namespace"], ns, "{ctx}");
            assert_eq!(client["service"]["path"], path, "{ctx}");
            assert_eq!(client["service"]["port"], https["port"], "{ctx}");
            assert_eq!(hook["sideEffects"], "None", "{ctx}");
            assert_eq!(
                hook["admissionReviewVersions"],
                serde_json::json!(["v1"]),
                "{ctx}"
            );
            assert_eq!(hook["timeoutSeconds"], 2, "{ctx}");
            assert_eq!(hook["failurePolicy"], failure_policy, "{ctx}");
            assert_eq!(hook["matchPolicy"], "Equivalent", "{ctx}");
            assert!(
                hook.get("objectSelector").is_none(),
                "{ctx}: an objectSelector would let labels opt out"
            );
            if config_kind == "MutatingWebhookConfiguration" {
                assert_ne!(
                    hook["reinvocationPolicy"], "IfNeeded",
                    "{ctx}: patches are idempotent, once is enough"
                );
            }

            // Off its own namespace and kube-system, and nothing else.
            let exprs = arr(
                &hook["namespaceSelector"]["matchExpressions"],
                "namespaceSelector",
            );
            assert_eq!(exprs.len(), 1, "{ctx}: one namespaceSelector expression");
            assert!(
                hook["namespaceSelector"].get("matchLabels").is_none(),
                "{ctx}"
            );
            assert_eq!(exprs[0]["key"], NAMESPACE_NAME_LABEL, "{ctx}");
            assert_eq!(exprs[0]["operator"], "NotIn", "{ctx}");
            let excluded: BTreeSet<String> =
                strings(&exprs[0]["values"], "values").into_iter().collect();
            let want: BTreeSet<String> = [ns.to_string(), "kube-system".to_string()].into();
            assert_eq!(excluded, want, "{ctx}: namespaces kept out of the webhook");
        }
    }
}

/// The serving Certificate's issuer (and, for a CA issuer, the CA's own Certificate) exist in
/// the same namespace, so cert-manager can actually issue it.
fn issuer_chain_is_rendered(cert: &Value) {
    let ns = namespace_of(cert);
    let mut cert = cert;
    for _ in 0..3 {
        let issuer_ref = &cert["spec"]["issuerRef"];
        assert_eq!(
            issuer_ref["kind"].as_str().unwrap_or("Issuer"),
            "Issuer",
            "a namespaced Issuer"
        );
        let issuer_name = s(&issuer_ref["name"], "issuerRef.name");
        let issuer = named("Issuer", Some(ns), issuer_name)
            .unwrap_or_else(|| panic!("Issuer {ns}/{issuer_name} is not rendered"));
        if issuer["spec"].get("selfSigned").is_some() {
            return;
        }
        let ca_secret = s(&issuer["spec"]["ca"]["secretName"], "CA issuer secretName");
        cert = all_of("Certificate")
            .into_iter()
            .find(|c| c["spec"]["secretName"] == ca_secret && namespace_of(c) == ns)
            .unwrap_or_else(|| panic!("no Certificate writes the CA Secret {ns}/{ca_secret}"));
        assert_eq!(cert["spec"]["isCA"], true, "the CA Certificate is a CA");
    }
    panic!("the issuer chain does not end in a selfSigned Issuer");
}

// ---------------------------------------------------------------------------------------------
// Deployment

#[test]
fn deployment_is_locked_down() {
    let w = workload();
    let spec = &w.deployment["spec"];
    assert_eq!(spec["replicas"], 2);

    let pod_sc = &w.pod["securityContext"];
    let sc = &w.container["securityContext"];
    // Container settings win over pod settings; either place counts.
    let effective = |key: &str| -> &Value {
        if sc.get(key).is_some() {
            &sc[key]
        } else {
            &pod_sc[key]
        }
    };
    assert_eq!(effective("runAsNonRoot"), true);
    assert_eq!(effective("runAsUser"), 65532);
    assert_eq!(effective("seccompProfile")["type"], "RuntimeDefault");
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert!(sc["capabilities"].get("add").is_none());
    assert_ne!(sc["privileged"], true);
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        assert_ne!(w.pod[host], true, "{host}");
    }

    // Termination: readiness off for --shutdown-delay, then the drain, all inside the grace period.
    let grace = w.pod["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("terminationGracePeriodSeconds is set");
    let needed = w.serve.shutdown_delay.as_secs() + DRAIN_SECS;
    assert!(
        grace > needed,
        "terminationGracePeriodSeconds {grace} must exceed shutdown delay + drain = {needed}"
    );

    // Ports named after the listeners, and the listeners on those ports.
    assert_eq!(
        container_port(w.container, "webhook"),
        listen_port(&w.serve.listen)
    );
    assert_eq!(
        container_port(w.container, "probes"),
        listen_port(&w.serve.probe_listen)
    );
    assert_eq!(
        container_port(w.container, "metrics"),
        listen_port(&w.serve.metrics_listen)
    );
    assert_eq!(w.serve.log_format, LogFormat::Json);
    assert!(!w.serve.dev, "--dev in a cluster");
    assert!(
        w.serve.state_from.is_empty(),
        "the cluster install uses the live view"
    );

    let probe_port = container_port(w.container, "probes");
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        let get = &w.container[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert!(
            get["port"] == "probes" || get["port"].as_u64() == Some(probe_port.into()),
            "{probe} must use the probe port, got {}",
            get["port"]
        );
        assert_eq!(get["scheme"].as_str().unwrap_or("HTTP"), "HTTP", "{probe}");
    }

    for kind in ["requests", "limits"] {
        for res in ["cpu", "memory"] {
            assert!(
                w.container["resources"][kind][res].is_string(),
                "resources.{kind}.{res} is set"
            );
        }
    }

    let image = ImageRef::parse(s(&w.container["image"], "image"));
    assert!(
        image.tag.is_some_and(|t| t != "latest") || image.digest.is_some(),
        "pin the image by tag or digest, got {image:?}"
    );

    // Spread across nodes (preferred, so a one-node cluster still runs both).
    let terms = arr(
        &w.pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
        "preferred pod anti-affinity",
    );
    let pod_labels = &spec["template"]["metadata"]["labels"];
    assert!(terms.iter().any(|t| {
        let term = &t["podAffinityTerm"];
        term["topologyKey"] == "kubernetes.io/hostname"
            && selects(&term["labelSelector"]["matchLabels"], pod_labels)
    }));

    // The certificate Secret the Certificate writes is the one mounted at --cert-dir.
    let cert = serving_certificate(&w);
    assert_eq!(namespace_of(cert), namespace_of(w.deployment));
}

/// An image reference `NAME[:TAG][@DIGEST]`, split as the runtime splits it.
#[derive(Debug, PartialEq)]
struct ImageRef<'a> {
    name: &'a str,
    tag: Option<&'a str>,
    digest: Option<&'a str>,
}

impl ImageRef<'_> {
    fn parse(image: &str) -> ImageRef<'_> {
        let (rest, digest) = match image.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest)),
            None => (image, None),
        };
        // A colon after the last slash starts the tag; one before it is a registry's port.
        let (name, tag) = match rest.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
            _ => (rest, None),
        };
        ImageRef { name, tag, digest }
    }
}

#[test]
fn image_ref_splits_name_tag_and_digest() {
    let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert_eq!(
        ImageRef::parse("registry.example.com:5000/team/ipam-guard"),
        ImageRef {
            name: "registry.example.com:5000/team/ipam-guard",
            tag: None,
            digest: None
        }
    );
    let with_both = format!("registry.example.com:5000/ipam-guard:0.1.0@{digest}");
    assert_eq!(
        ImageRef::parse(&with_both),
        ImageRef {
            name: "registry.example.com:5000/ipam-guard",
            tag: Some("0.1.0"),
            digest: Some(digest)
        }
    );
}

/// The image override README.md documents: an overlay's `images:` entry with `newName`, `newTag`
/// and `digest` reaches the Deployment as `NAME:TAG@DIGEST` (pulled by the digest), and changes
/// nothing else.
#[test]
fn own_image_overlay_pins_the_image_by_digest() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/install/own-image");
    let overlay: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap())
            .unwrap();
    let entry = &overlay["images"][0];
    let base = ImageRef::parse(s(&workload().container["image"], "image"));
    assert_eq!(
        entry["name"], base.name,
        "the overlay names the base's image"
    );
    let docs = docs_of(&render_dir(&dir));
    assert_eq!(docs.len(), objects().len());
    let deployment = docs.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let image = s(
        &deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "image",
    );
    assert_eq!(
        ImageRef::parse(image),
        ImageRef {
            name: s(&entry["newName"], "newName"),
            tag: Some(s(&entry["newTag"], "newTag")),
            digest: Some(s(&entry["digest"], "digest")),
        }
    );
    let digest = s(&entry["digest"], "digest");
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    assert!(hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    // Only the image differs from the base.
    let mut expected = only("Deployment").clone();
    expected["spec"]["template"]["spec"]["containers"][0]["image"] = image.into();
    assert_eq!(deployment, &expected);
}

/// SPEC §10: the manifests must work in IPv4-only, IPv6-only and dual-stack clusters. Listeners
/// are given as a bare `:PORT`, which the server binds on every family the pod has (`[::]`
/// dual-stack, falling back to `0.0.0.0` when the kernel has no IPv6). A literal `0.0.0.0`
/// misses IPv6-only clusters and a literal `[::]` fails where IPv6 is disabled.
#[test]
fn listeners_bind_every_family() {
    let w = workload();
    for (flag, listen) in [
        ("--listen", &w.serve.listen),
        ("--probe-listen", &w.serve.probe_listen),
        ("--metrics-listen", &w.serve.metrics_listen),
        ("--peer-listen", &w.serve.decider.peer_listen),
    ] {
        let (host, _) = listen.rsplit_once(':').expect("host:port");
        assert!(
            host.is_empty(),
            "{flag}={listen}: give the port only (:PORT) so every IP family is served"
        );
    }
}

#[test]
fn everything_is_labelled_namespaced_and_disruption_safe() {
    let w = workload();
    let ns = namespace_of(w.deployment);
    let namespace = only("Namespace");
    assert_eq!(name_of(namespace), ns);
    for o in objects() {
        let what = format!("{} {}", o["kind"], o["metadata"]["name"]);
        assert_eq!(
            o["metadata"]["labels"][NAME_LABEL], "ipam-guard",
            "{what} carries {NAME_LABEL}"
        );
        if let Some(obj_ns) = o["metadata"]["namespace"].as_str() {
            assert_eq!(obj_ns, ns, "{what} is in the install namespace");
        }
    }
    let pod_labels = &w.deployment["spec"]["template"]["metadata"]["labels"];
    assert_eq!(pod_labels[NAME_LABEL], "ipam-guard");
    assert!(selects(
        &w.deployment["spec"]["selector"]["matchLabels"],
        pod_labels
    ));

    let pdb = only("PodDisruptionBudget");
    assert_eq!(namespace_of(pdb), ns);
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert!(selects(&pdb["spec"]["selector"]["matchLabels"], pod_labels));

    let service = webhook_service(&w);
    let metrics = container_port(w.container, "metrics");
    assert!(
        arr(&service["spec"]["ports"], "Service ports")
            .iter()
            .any(|p| p["targetPort"] == "metrics"
                || p["targetPort"].as_u64() == Some(metrics.into())),
        "the Service exposes the metrics port"
    );
}

/// The binary itself accepts the Deployment's flags, listener forms included: starts
/// `ipam-guard serve` with the Deployment's args, changed only where a test machine differs from
/// a pod (`--dev` for an empty view and generated certificates in a temporary `--cert-dir`, port 0
/// for every listener), and expects it to serve: its probe listener answers /readyz with 200.
#[test]
fn binary_accepts_the_deployment_args() {
    let w = workload();
    let certs = tempfile::tempdir().expect("temporary cert dir");
    let mut args: Vec<String> = Vec::new();
    for arg in strings(&w.container["args"], "container args") {
        let arg = match arg.split_once('=') {
            Some((
                flag @ ("--listen" | "--probe-listen" | "--metrics-listen" | "--peer-listen"),
                value,
            )) => {
                let (host, _) = value.rsplit_once(':').expect("host:port");
                format!("{flag}={host}:0")
            }
            Some(("--cert-dir", _)) => format!("--cert-dir={}", certs.path().display()),
            _ => arg,
        };
        args.push(arg);
    }
    args.push("--dev".to_string());
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .args(&args)
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start ipam-guard");
    // Serving is shown, not waited out: `--dev` prints its listeners once all are bound, and the
    // probe listener then answers /readyz.
    let stdout = child.stdout.take().expect("piped stdout");
    let (lines, banner) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let probes = loop {
        match banner.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(line) => {
                if let Some(url) = line.trim().strip_prefix("probes:") {
                    break Some(url.trim().to_string());
                }
            }
            // Its stdout closed (it exited) or it printed nothing for 30 s.
            Err(_) => break None,
        }
    };
    let ready = probes.as_deref().map(readyz_status);
    let _ = child.kill();
    let out = child.wait_with_output().expect("collect ipam-guard output");
    assert!(
        ready == Some(200),
        "`ipam-guard {}` did not serve (probes: {probes:?}, /readyz: {ready:?}, exit: {}); the \
         Deployment passes these flags, so the pods would crash-loop. Listeners are given as a bare \
         \":PORT\" (every IP family: [::] dual-stack, 0.0.0.0 when the kernel has no IPv6; see \
         manifests/deployment.yaml).\nstderr:\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The HTTP status of `GET /readyz` at a probe URL the banner printed (`http://HOST:PORT/readyz`,
/// HOST possibly the unspecified address a bare `:PORT` binds): asked on IPv4 loopback.
fn readyz_status(url: &str) -> u16 {
    let port: u16 = url
        .trim_end_matches("/readyz")
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in the probe URL {url:?}"));
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the probes");
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    tcp.write_all(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("send GET /readyz");
    let mut reply = String::new();
    tcp.read_to_string(&mut reply)
        .expect("read the /readyz answer");
    reply
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {reply:?}"))
}

// ---------------------------------------------------------------------------------------------
// The optional NetworkPolicy component (manifests/components/network-policy), rendered through
// the example overlay that sets its two cluster-specific peers.

fn docs_of(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("valid YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

/// The ingress rule of `policy` for `port`; exactly one must exist.
fn rule_for(policy: &Value, port: u64) -> &Value {
    let rules: Vec<&Value> = policy["spec"]["ingress"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["ports"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["port"] == port))
        })
        .collect();
    assert_eq!(rules.len(), 1, "ingress rules for port {port}: {rules:?}");
    for p in rules[0]["ports"].as_array().unwrap() {
        assert_eq!(p["port"], port, "a rule admits one port only");
        assert_eq!(p["protocol"], "TCP");
    }
    rules[0]
}

#[test]
fn network_policy_component_admits_each_port_only_from_its_peers() {
    // The base does not carry it: clusters without a policy-enforcing CNI are not surprised.
    assert!(all_of("NetworkPolicy").is_empty());

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/install/network-policy");
    let docs = docs_of(&render_dir(&dir));
    // Everything of the base, plus the policy.
    assert_eq!(docs.len(), objects().len() + 1);
    let policies: Vec<&Value> = docs
        .iter()
        .filter(|o| o["kind"] == "NetworkPolicy")
        .collect();
    assert_eq!(policies.len(), 1);
    let policy = policies[0];

    // It selects the webhook pods, in their namespace.
    let w = workload();
    assert_eq!(
        policy["metadata"]["namespace"],
        w.deployment["metadata"]["namespace"]
    );
    let selector = policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .unwrap();
    assert!(!selector.is_empty());
    for (k, v) in selector {
        let labels = &w.deployment["spec"]["template"]["metadata"]["labels"];
        assert_eq!(&labels[k], v, "podSelector {k} matches the pod template");
    }
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_json::json!(["Ingress"])
    );

    // One rule per port; the container's ports are all covered, and the decider's 9444 too.
    let ingress = policy["spec"]["ingress"].as_array().unwrap();
    let container_ports: BTreeSet<u64> = w.container["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["containerPort"].as_u64().unwrap())
        .collect();
    let mut covered: BTreeSet<u64> = BTreeSet::new();
    for r in ingress {
        for p in r["ports"].as_array().expect("every rule names its ports") {
            covered.insert(p["port"].as_u64().unwrap());
        }
        assert!(
            !r["from"]
                .as_array()
                .expect("every rule names its peers")
                .is_empty(),
            "a rule without peers would admit everyone: {r}"
        );
    }
    assert!(
        covered.is_superset(&container_ports),
        "{covered:?} vs {container_ports:?}"
    );
    assert!(covered.contains(&9444));

    let peers = |port| rule_for(policy, port)["from"].as_array().unwrap().clone();
    // 9443: the API server only, as the overlay set it.
    assert_eq!(
        peers(9443),
        vec![serde_json::json!({"ipBlock": {"cidr": "192.168.10.0/24"}})]
    );
    // 8080: the monitoring namespace only.
    assert_eq!(
        peers(8080),
        vec![
            serde_json::json!({"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "monitoring"}}})
        ]
    );
    // 8081: the nodes (kubelet).
    assert_eq!(
        peers(8081),
        vec![serde_json::json!({"ipBlock": {"cidr": "192.168.0.0/16"}})]
    );
    // 9444: the same app's pods (same namespace: no namespaceSelector).
    assert_eq!(
        peers(9444),
        vec![serde_json::json!({"podSelector": {"matchLabels": {NAME_LABEL: "ipam-guard"}}})]
    );
}

#[test]
fn network_policy_component_alone_leaves_placeholders_that_are_not_cidrs() {
    let text = std::fs::read_to_string(
        manifests_dir().join("components/network-policy/networkpolicy.yaml"),
    )
    .unwrap();
    let policy = &docs_of(&text)[0];
    for port in [9443, 8081] {
        let cidr = rule_for(policy, port)["from"][0]["ipBlock"]["cidr"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(cidr.starts_with("SET-ME"), "{cidr}");
        assert!(cidr.parse::<ipnet_free::Cidr>().is_err(), "{cidr}");
    }
}

/// Just enough CIDR parsing to show a placeholder is not one.
mod ipnet_free {
    pub struct Cidr;
    impl std::str::FromStr for Cidr {
        type Err = ();
        fn from_str(s: &str) -> Result<Cidr, ()> {
            let (ip, len) = s.split_once('/').ok_or(())?;
            ip.parse::<std::net::IpAddr>().map_err(|_| ())?;
            len.parse::<u8>().map_err(|_| ())?;
            Ok(Cidr)
        }
    }
}

#[test]
fn deployment_runs_the_periodic_audit_from_the_view() {
    // SPEC X4 in the shipped install: the in-pod audit judges the view (tests/stored_audit.rs).
    let w = workload();
    assert_eq!(
        w.serve.audit_interval,
        Some(std::time::Duration::from_secs(600))
    );
}

#[test]
fn monitoring_component_adds_one_prometheus_rule_next_to_the_webhook() {
    assert!(
        all_of("PrometheusRule").is_empty(),
        "optional: not in the base"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/install/monitoring");
    let docs = docs_of(&render_dir(&dir));
    // The PrometheusRule and the ServiceMonitor.
    assert_eq!(docs.len(), objects().len() + 2);
    let rules: Vec<&Value> = docs
        .iter()
        .filter(|o| o["kind"] == "PrometheusRule")
        .collect();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0]["metadata"]["namespace"],
        workload().deployment["metadata"]["namespace"]
    );
    // What each alert names is checked against a running server in tests/alerts.rs.
    let alerts: Vec<&str> = rules[0]["spec"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .map(|r| r["alert"].as_str().unwrap())
        .collect();
    assert!(alerts.contains(&"IPAMGuardViolations"), "{alerts:?}");
    assert!(alerts.contains(&"IPAMPoolNearlyExhausted"), "{alerts:?}");
}

// ---------------------------------------------------------------------------------------------
// The optional PolicyReports component (manifests/components/policy-reports), rendered through
// examples/install/policy-reports.

/// `serve --policy-reports` lists, applies (patch, and create for an apply that creates) and
/// deletes the two report kinds; the component grants exactly that, cluster-wide (reports live in
/// every namespace with findings), to the pods' account, and adds the flag to the one container.
#[test]
fn policy_reports_component_grants_exactly_the_report_writes() {
    // The base does not carry it: clusters without the PolicyReport CRDs are not surprised.
    assert!(objects()
        .iter()
        .all(|o| o["metadata"]["name"] != "ipam-guard-policy-reports"));

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/install/policy-reports");
    let docs = docs_of(&render_dir(&dir));
    assert_eq!(
        docs.len(),
        objects().len() + 2,
        "a ClusterRole and its binding"
    );
    let of = |kind: &str, name: &str| -> &Value {
        let found: Vec<&Value> = docs
            .iter()
            .filter(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .collect();
        assert_eq!(found.len(), 1, "{kind} {name}");
        found[0]
    };
    let role = of("ClusterRole", "ipam-guard-policy-reports");
    let mut got = BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        assert!(rule.get("resourceNames").is_none(), "{rule}");
        for g in strings(&rule["apiGroups"], "apiGroups") {
            for r in strings(&rule["resources"], "resources") {
                for v in strings(&rule["verbs"], "verbs") {
                    got.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    let mut want = BTreeSet::new();
    for r in ["policyreports", "clusterpolicyreports"] {
        for v in ["list", "create", "patch", "delete"] {
            want.insert(("wgpolicyk8s.io".to_string(), r.to_string(), v.to_string()));
        }
    }
    assert_same_set("PolicyReport grants", &got, &want);

    let w = workload();
    let binding = of("ClusterRoleBinding", "ipam-guard-policy-reports");
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(binding["roleRef"]["name"], "ipam-guard-policy-reports");
    let subjects = binding["subjects"].as_array().unwrap();
    assert_eq!(subjects.len(), 1);
    assert_eq!(subjects[0]["kind"], "ServiceAccount");
    assert_eq!(subjects[0]["name"], s(&w.pod["serviceAccountName"], "sa"));
    assert_eq!(subjects[0]["namespace"], namespace_of(w.deployment));

    let deployment = of("Deployment", name_of(w.deployment));
    let args: Vec<String> = strings(
        &deployment["spec"]["template"]["spec"]["containers"][0]["args"],
        "args",
    );
    assert!(args.contains(&"--policy-reports".to_string()), "{args:?}");
    assert!(
        args.iter().any(|a| a.starts_with("--audit-interval")),
        "--policy-reports needs the periodic audit: {args:?}"
    );
}
