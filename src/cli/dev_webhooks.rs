//! `ipam-guard dev-webhooks`: the webhook configurations that send a real cluster's IPAM writes
//! to an ipam-guard running outside it (`serve --dev --kubeconfig`), for a trial before installing
//! (docs/trial.md). `url:` client configs with the dev CA as caBundle, rules from the kinds
//! table, and a namespaceSelector so only the namespaces named are judged. The selector reads the
//! `kubernetes.io/metadata.name` label, which API servers set on every namespace from v1.21 on;
//! on v1.20 the trial page labels its namespace itself.

use std::io::{self, Write};

use base64::Engine;
use serde_json::{json, Value};

use super::DevWebhooksArgs;
use crate::kinds::{Kind, KINDS};

/// The name both configurations carry: `kubectl delete` of it removes the trial.
pub const NAME: &str = "ipam-guard-dev";

/// Prints the two configurations as one YAML stream. Exit 2 when the CA cannot be read.
pub fn run(args: &DevWebhooksArgs) -> i32 {
    let ca_path = args.cert_dir.join("ca.crt");
    let ca = match std::fs::read(&ca_path) {
        Ok(ca) => ca,
        Err(e) => {
            eprintln!(
                "error: cannot read the dev CA {}: {e}; start `ipam-guard serve --dev` once (it makes it), or pass --cert-dir",
                ca_path.display()
            );
            return 2;
        }
    };
    let docs = configurations(args, &ca);
    let mut out = io::stdout().lock();
    for doc in docs {
        let yaml = serde_yaml_ng::to_string(&doc).expect("a JSON value is YAML");
        let _ = write!(out, "---\n{yaml}");
    }
    0
}

/// The validating and the mutating configuration.
pub fn configurations(args: &DevWebhooksArgs, ca_pem: &[u8]) -> [Value; 2] {
    let url = args.url.trim_end_matches('/');
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let selector = json!({"matchExpressions": [{
        "key": "kubernetes.io/metadata.name", "operator": "In", "values": args.namespace,
    }]});
    let webhook = |name: &str, path: &str, failure: &str, rules: Vec<Value>| {
        json!({
            "name": name,
            "clientConfig": {"url": format!("{url}{path}"), "caBundle": ca_bundle},
            "failurePolicy": failure,
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 2,
            "namespaceSelector": selector,
            "rules": rules,
        })
    };
    let rule = |k: Kind, operations: &[&str]| {
        json!({
            "apiGroups": [k.group()],
            "apiVersions": k.info().versions,
            "resources": [k.plural()],
            "operations": operations,
            "scope": if k.namespaced() { "Namespaced" } else { "Cluster" },
        })
    };
    let validating: Vec<Value> = KINDS
        .iter()
        .map(|k| rule(k.kind, k.kind.operations()))
        .collect();
    let mutating: Vec<Value> = KINDS
        .iter()
        .filter(|k| k.kind.mutated())
        .map(|k| rule(k.kind, &["CREATE", "UPDATE"]))
        .collect();
    let meta = json!({"name": NAME, "labels": {"app.kubernetes.io/name": "ipam-guard", "app.kubernetes.io/component": "dev-trial"}});
    // As installed: mutations only fill defaults, and /validate denies what they would have fixed.
    let mut mutate = webhook("mutate.dev.ipam-guard.io", "/mutate", "Ignore", mutating);
    mutate["reinvocationPolicy"] = json!("Never");
    [
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": meta,
            "webhooks": [webhook("validate.dev.ipam-guard.io", "/validate", "Fail", validating)],
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": meta,
            "webhooks": [mutate],
        }),
    ]
}
