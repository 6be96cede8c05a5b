//! `ipam-guard policies`: the CEL backstop (`rules::backstop`) as YAML, and with
//! `--webhook-conditions` the kustomize patch that gives the webhook configurations their
//! matchConditions (`rules::conditions`). `manifests/components/cel-backstop` and
//! `manifests/components/match-conditions` hold this output; `tests/backstop.rs` fails when they
//! are stale.

use std::io::Write;

use serde_json::{json, Value};

use super::PoliciesArgs;
use crate::rules::{backstop, conditions};

/// The commands that refresh the two components.
pub const REFRESH_POLICIES: &str =
    "cargo run -q -- policies > manifests/components/cel-backstop/policies.yaml";
pub const REFRESH_CONDITIONS: &str = "cargo run -q -- policies --webhook-conditions > manifests/components/match-conditions/webhooks-patch.yaml";

/// matchConditions are GA (on by default, v1 API) from this minor release.
pub const MATCH_CONDITIONS_SINCE: u32 = 30;

/// The minor release of a Kubernetes version written `1.30`, `v1.30.2` or `1.30+`.
pub fn minor(version: &str) -> Option<u32> {
    let v = version.trim().trim_start_matches('v');
    let mut parts = v.split('.');
    if parts.next()? != "1" {
        return None;
    }
    let digits: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn yaml_stream(header: &str, docs: &[Value]) -> String {
    let mut out = String::from(header);
    for doc in docs {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(doc).expect("a JSON value is YAML"));
    }
    out
}

/// The policies and bindings, for a server of minor release `minor` (None: all).
pub fn policies_yaml(minor: Option<u32>) -> String {
    let header = format!(
        "# ValidatingAdmissionPolicies of ipam-guard's single-object rules (Kubernetes 1.30+; the\n\
         # policies using CEL's IP library need 1.31+). Generated from the rule catalogue by\n\
         #   {}\n\
         # do not edit by hand; docs/rules.md says which rules have a policy and why the others do not.\n",
        REFRESH_POLICIES
    );
    yaml_stream(&header, &backstop::all_objects(minor))
}

/// The webhooks of `manifests/webhooks.yaml`, their matchConditions added (a strategic merge
/// patch: webhooks merge by name).
pub fn conditions_patch() -> String {
    let header = format!(
        "# matchConditions for ipam-guard's webhooks (Kubernetes 1.30+): the API server skips the\n\
         # requests no rule can deny, warn about or mutate. Generated from the rule table by\n\
         #   {}\n\
         # do not edit by hand.\n",
        REFRESH_CONDITIONS
    );
    let docs = [
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "ipam-guard"},
            "webhooks": [
                {"name": "validate.ipam-guard.io", "matchConditions": conditions::validating_conditions()},
                {"name": "validate-clusters.ipam-guard.io", "matchConditions": conditions::validating_conditions()},
            ],
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "ipam-guard"},
            "webhooks": [{"name": "mutate.ipam-guard.io", "matchConditions": conditions::mutating_conditions()}],
        }),
    ];
    yaml_stream(&header, &docs)
}

/// Runs `policies`; exit 2 on a version it cannot read.
pub fn run(args: &PoliciesArgs) -> i32 {
    let minor = match args.kube_version.as_deref() {
        None => None,
        Some(v) => match minor(v) {
            Some(m) => Some(m),
            None => {
                eprintln!("error: --kube-version {v:?} is not a Kubernetes version such as 1.31");
                return 2;
            }
        },
    };
    let text = if args.webhook_conditions {
        if minor.is_some_and(|m| m < MATCH_CONDITIONS_SINCE) {
            eprintln!(
                "error: matchConditions need Kubernetes 1.{MATCH_CONDITIONS_SINCE} or newer; leave the component out for this server"
            );
            return 2;
        }
        conditions_patch()
    } else {
        if minor.is_some_and(|m| m < backstop::POLICIES_SINCE) {
            eprintln!(
                "error: ValidatingAdmissionPolicy v1 needs Kubernetes 1.{} or newer; the webhook alone judges on this server",
                backstop::POLICIES_SINCE
            );
            return 2;
        }
        policies_yaml(minor)
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_kubectl_prints_them() {
        assert_eq!(minor("1.30"), Some(30));
        assert_eq!(minor("v1.36.2"), Some(36));
        assert_eq!(minor("1.28+"), Some(28));
        assert_eq!(minor("v1.20.2-dirty"), Some(20));
        assert_eq!(minor("2.1"), None);
        assert_eq!(minor("latest"), None);
    }
}
