//! `ipam-guard dev-webhooks`: the webhook configurations that send a real cluster's IPAM writes
//! to an ipam-guard running outside it (`serve --dev --kubeconfig`), for a trial before installing
//! (docs/trial.md). `url:` client configs with the dev CA as caBundle, rules from the kinds
//! table, and selectors so the trial touches only what it was given: namespaced kinds in the
//! namespaces named (a namespaceSelector on the `kubernetes.io/metadata.name` label, which API
//! servers set on every namespace from v1.21 on; on v1.20 the trial page labels its namespace), cluster-scoped kinds only when labelled
//! `ipam-guard.io/trial: "true"` (an objectSelector: a namespaceSelector does not apply to them,
//! so without it another team's SpiderIPPool would go through the trial). Both fail open
//! (`failurePolicy: Ignore`): a trial whose `serve` is stopped must not block anyone's writes.

use std::io::{self, Write};

use base64::Engine;
use serde_json::{json, Value};

use super::DevWebhooksArgs;
use crate::kinds::{Kind, KINDS};
use crate::rules::conditions;

/// The name both configurations carry: `kubectl delete` of it removes the trial.
pub const NAME: &str = "ipam-guard-dev";

/// The label that opts a cluster-scoped object (GlobalInClusterIPPool, SpiderIPPool) into the
/// trial.
pub const TRIAL_LABEL: &str = "ipam-guard.io/trial";

/// Prints the two configurations as one YAML stream. Exit 2 when the URL is not `https://` or
/// the CA cannot be read.
pub fn run(args: &DevWebhooksArgs) -> i32 {
    if let Err(e) = check_url(&args.url) {
        eprintln!("error: --url {:?}: {e}", args.url);
        return 2;
    }
    for ns in args.namespace.iter().filter(|ns| ns.starts_with("kube-")) {
        eprintln!(
            "warning: --namespace {ns}: a namespace of Kubernetes' own components; a trial is \
             best run in a namespace of its own (e.g. ipam-trial)"
        );
    }
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
    if let Some(v) = args.kube_version.as_deref() {
        if super::policies::minor(v).is_none() {
            eprintln!("error: --kube-version {v:?} is not a Kubernetes version such as 1.31");
            return 2;
        }
    }
    let docs = configurations(args, &ca);
    let mut out = io::stdout().lock();
    for doc in docs {
        let yaml = serde_yaml_ng::to_string(&doc).expect("a JSON value is YAML");
        let _ = write!(out, "---\n{yaml}");
    }
    0
}

/// The API server calls webhooks over TLS only: an `http://` URL would be refused when the
/// configuration is applied, or worse, be a typo of the port that serves probes.
fn check_url(url: &str) -> Result<(), &'static str> {
    let Some(rest) = url.strip_prefix("https://") else {
        return Err("the API server calls webhooks over HTTPS only; give an https:// URL");
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err("no host");
    }
    Ok(())
}

/// The validating and the mutating configuration.
pub fn configurations(args: &DevWebhooksArgs, ca_pem: &[u8]) -> [Value; 2] {
    let url = args.url.trim_end_matches('/');
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let in_namespaces = json!({"matchExpressions": [{
        "key": "kubernetes.io/metadata.name", "operator": "In", "values": args.namespace,
    }]});
    let labelled = json!({"matchLabels": {TRIAL_LABEL: "true"}});
    // Fail open: the trial runs on a laptop, and its being stopped must not block writes.
    let webhook = |name: &str, path: &str, rules: Vec<Value>, namespaced: bool| {
        let mut w = json!({
            "name": name,
            "clientConfig": {"url": format!("{url}{path}"), "caBundle": ca_bundle},
            "failurePolicy": "Ignore",
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 2,
            "rules": rules,
        });
        if namespaced {
            w["namespaceSelector"] = in_namespaces.clone();
        } else {
            w["objectSelector"] = labelled.clone();
        }
        w
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
    let rules_for = |namespaced: bool, mutated_only: bool| -> Vec<Value> {
        KINDS
            .iter()
            .filter(|k| k.namespaced == namespaced && (!mutated_only || k.kind.mutated()))
            .map(|k| {
                if mutated_only {
                    rule(k.kind, &["CREATE", "UPDATE"])
                } else {
                    rule(k.kind, k.kind.operations())
                }
            })
            .collect()
    };
    // One webhook per scope, each with its selector; a scope without kinds gets none (an empty
    // rule list is refused by the API server).
    let webhooks = |prefix: &str, path: &str, mutated_only: bool| -> Vec<Value> {
        let mut out = Vec::new();
        let namespaced = rules_for(true, mutated_only);
        if !namespaced.is_empty() {
            out.push(webhook(
                &format!("{prefix}.dev.ipam-guard.io"),
                path,
                namespaced,
                true,
            ));
        }
        let cluster = rules_for(false, mutated_only);
        if !cluster.is_empty() {
            out.push(webhook(
                &format!("{prefix}-cluster-scoped.dev.ipam-guard.io"),
                path,
                cluster,
                false,
            ));
        }
        out
    };
    let meta = json!({"name": NAME, "labels": {"app.kubernetes.io/name": "ipam-guard", "app.kubernetes.io/component": "dev-trial"}});
    let mut mutate = webhooks("mutate", "/mutate", true);
    for w in &mut mutate {
        w["reinvocationPolicy"] = json!("Never");
    }
    let mut validate = webhooks("validate", "/validate", false);
    // Only a server known to have them gets matchConditions: an older one refuses or drops the
    // field, and which it does depends on its version and the client's field validation.
    let conditions = args
        .kube_version
        .as_deref()
        .and_then(super::policies::minor)
        .is_some_and(|m| m >= super::policies::MATCH_CONDITIONS_SINCE);
    if conditions {
        for w in &mut validate {
            w["matchConditions"] = Value::Array(conditions::validating_conditions());
        }
        for w in &mut mutate {
            w["matchConditions"] = Value::Array(conditions::mutating_conditions());
        }
    }
    [
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": meta,
            "webhooks": validate,
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": meta,
            "webhooks": mutate,
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: &str) -> DevWebhooksArgs {
        DevWebhooksArgs {
            url: url.into(),
            namespace: vec!["ipam-trial".into()],
            cert_dir: "./certs/dev".into(),
            kube_version: None,
        }
    }

    #[test]
    fn only_https_urls_with_a_host() {
        assert!(check_url("https://127.0.0.1:9443").is_ok());
        assert!(check_url("http://127.0.0.1:9443").is_err());
        assert!(check_url("127.0.0.1:9443").is_err());
        assert!(check_url("https://").is_err());
    }

    #[test]
    fn cluster_scoped_kinds_only_by_label_and_everything_fails_open() {
        let [validating, mutating] = configurations(&args("https://127.0.0.1:9443/"), b"ca");
        for config in [&validating, &mutating] {
            for w in config["webhooks"].as_array().unwrap() {
                assert_eq!(w["failurePolicy"], "Ignore", "{w}");
                let scopes: Vec<&Value> = w["rules"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| &r["scope"])
                    .collect();
                if w.get("objectSelector").is_some() {
                    assert!(w.get("namespaceSelector").is_none(), "{w}");
                    assert_eq!(w["objectSelector"]["matchLabels"][TRIAL_LABEL], "true");
                    assert!(scopes.iter().all(|s| *s == "Cluster"), "{w}");
                } else {
                    assert!(scopes.iter().all(|s| *s == "Namespaced"), "{w}");
                    assert_eq!(
                        w["namespaceSelector"]["matchExpressions"][0]["values"][0],
                        "ipam-trial"
                    );
                }
            }
        }
        let names: Vec<&str> = validating["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "validate.dev.ipam-guard.io",
                "validate-cluster-scoped.dev.ipam-guard.io"
            ]
        );
        // Mutations only touch namespaced claims and addresses.
        assert_eq!(mutating["webhooks"].as_array().unwrap().len(), 1);
    }
}
