//! The CEL backstop: ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`, Kubernetes
//! 1.30+) for the rules that read only the object being written, so they stay in force while the
//! webhook is unreachable or fails open, at no network cost. `ipam-guard policies` prints them and
//! `manifests/components/cel-backstop` holds that output.
//!
//! A policy must never refuse what the webhook allows: each expression says exactly what its rule
//! denies, or less. Where CEL cannot say a rule exactly (it reads other objects, ratchets on
//! what an update changed, or needs the strict address grammar in a form CEL lacks), the rule has
//! no policy and [`coverage`] says why; docs/rules.md prints that. Every policy fails open
//! (`failurePolicy: Ignore`): an expression that cannot be evaluated (a server without a library
//! function, an object of an unexpected shape) never turns into a denial.

use serde_json::{json, Value};

use crate::kinds::Kind;
use crate::model::paths::{address, claim, meta, metal3};
use crate::rule_id::{Effect, RuleId};

/// Namespaces the webhooks skip (manifests/webhooks.yaml): the policies skip them too, or they
/// would refuse there what the webhook lets through.
pub(crate) const SKIPPED_NAMESPACES: [&str; 2] = ["ipam-guard-system", "kube-system"];

/// The first Kubernetes minor release whose CEL has the IP library (`isIP`, `ip()`) in stored
/// expressions: added in 1.30, usable in 1.31 (a function is usable one release after it appears,
/// so that a rollback does not meet an expression it cannot compile).
pub(crate) const IP_LIBRARY_SINCE: u32 = 31;
/// ValidatingAdmissionPolicy v1 is GA in 1.30.
pub const POLICIES_SINCE: u32 = 30;

/// One `validations[]` entry.
#[derive(Debug, Clone)]
pub struct Check {
    /// Where the webhook's cause sits; the message starts with it.
    pub field: String,
    /// True when the object is acceptable.
    pub expression: String,
    /// Ends with `[ipam-guard <ID>]`.
    pub message: String,
}

/// One rule's policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub id: RuleId,
    pub kinds: &'static [Kind],
    pub operations: &'static [&'static str],
    pub checks: Vec<Check>,
    /// Uses the CEL IP library (Kubernetes 1.31+).
    pub ip_library: bool,
    /// What of the rule the policy leaves to the webhook, when it says only part of it.
    pub partial: Option<&'static str>,
}

impl Policy {
    /// `ipam-guard-c1`.
    pub fn name(&self) -> String {
        format!("ipam-guard-{}", self.id.as_str().to_ascii_lowercase())
    }

    /// The oldest Kubernetes minor release that evaluates this policy.
    pub fn since(&self) -> u32 {
        if self.ip_library {
            IP_LIBRARY_SINCE
        } else {
            POLICIES_SINCE
        }
    }
}

// === CEL pieces ===

/// `has(o.a) && has(o.a.b)` for `a.b`: each step guarded, so a missing parent is no error.
fn present(root: &str, path: &str) -> String {
    let parts: Vec<&str> = path.split('.').collect();
    (1..=parts.len())
        .map(|n| format!("has({root}.{})", parts[..n].join(".")))
        .collect::<Vec<_>>()
        .join(" && ")
}

fn at(root: &str, path: &str) -> String {
    format!("{root}.{path}")
}

fn signed(body: &str, id: RuleId) -> String {
    format!("{body} [ipam-guard {id}]")
}

/// C1, A5, MC1, MA2: the field is set and not empty (Required). The parent reference is the
/// reader's to require (its own check), so a missing parent is not reported here again.
fn required(id: RuleId, path: &str) -> Check {
    let parent = path.rsplit_once('.').map_or(path, |(p, _)| p);
    Check {
        field: path.to_string(),
        expression: format!(
            "!({}) || ({} && {} != '')",
            present("object", parent),
            present("object", path),
            at("object", path)
        ),
        message: signed("Required value", id),
    }
}

/// The reference object itself is present (`spec.poolRef: Required value`).
fn required_object(id: RuleId, path: &str) -> Check {
    Check {
        field: path.to_string(),
        expression: present("object", path),
        message: signed("Required value", id),
    }
}

/// C4, A10, MC3, MA3: one cause per changed leaf, as `ValidateImmutableField` reports it.
fn immutable(id: RuleId, path: &str) -> Check {
    let (new, old) = (present("object", path), present("oldObject", path));
    Check {
        field: path.to_string(),
        expression: format!(
            "({new}) == ({old}) && (!({new}) || {} == {})",
            at("object", path),
            at("oldObject", path)
        ),
        message: signed("Invalid value: field is immutable", id),
    }
}

/// MC2, MA2: a Metal3 reference's namespace, when set, is the object's own.
fn own_namespace(id: RuleId, path: &str) -> Check {
    Check {
        field: path.to_string(),
        expression: format!(
            "!({}) || {p} == '' || {p} == object.metadata.namespace",
            present("object", path),
            p = at("object", path)
        ),
        message: signed("Invalid value: must be the object's own namespace", id),
    }
}

const CLUSTER_NAME_LABEL: &str = crate::rules::mutate::CLUSTER_NAME_LABEL;

/// Kubernetes `IsDNS1123Subdomain`'s pattern (C1's `poolRef.name`).
const DNS1123_SUBDOMAIN: &str =
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

const CLAIM: &[Kind] = &[Kind::IPAddressClaim];
const ADDRESS: &[Kind] = &[Kind::IPAddress];
const M3_CLAIM: &[Kind] = &[Kind::Metal3IPClaim];
const M3_ADDRESS: &[Kind] = &[Kind::Metal3IPAddress];

/// Spec leaves of each kind whose spec is immutable, from the CRD schemas of every served
/// version (`tests/backstop.rs` checks them against the CRDs).
pub const CLAIM_LEAVES: &[&str] = &[
    claim::CLUSTER_NAME.as_str(),
    claim::POOL_REF_API_GROUP.as_str(),
    claim::POOL_REF_KIND.as_str(),
    claim::POOL_REF_NAME.as_str(),
];
pub const ADDRESS_LEAVES: &[&str] = &[
    address::ADDRESS.as_str(),
    address::CLAIM_REF_NAME.as_str(),
    address::GATEWAY.as_str(),
    address::POOL_REF_API_GROUP.as_str(),
    address::POOL_REF_KIND.as_str(),
    address::POOL_REF_NAME.as_str(),
    address::PREFIX.as_str(),
];
const REF_LEAVES: [&str; 7] = [
    "apiVersion",
    "fieldPath",
    "kind",
    "name",
    "namespace",
    "resourceVersion",
    "uid",
];

fn metal3_ref_leaves(reference: &str) -> Vec<String> {
    REF_LEAVES
        .iter()
        .map(|l| format!("spec.{reference}.{l}"))
        .collect()
}

/// Metal3 IPClaim's spec leaves.
pub fn metal3_claim_leaves() -> Vec<String> {
    metal3_ref_leaves("pool")
}

/// Metal3 IPAddress's spec leaves.
pub fn metal3_address_leaves() -> Vec<String> {
    let mut out: Vec<String> = [
        metal3::ADDRESS,
        metal3::DNS_SERVERS,
        metal3::GATEWAY,
        metal3::PREFIX,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    out.extend(metal3_ref_leaves("claim"));
    out.extend(metal3_ref_leaves("pool"));
    out.sort();
    out
}

/// Every policy, in catalogue order.
pub fn policies() -> Vec<Policy> {
    let pool_ref = |id| {
        let mut checks = vec![required_object(id, claim::POOL_REF.as_str())];
        for path in [
            claim::POOL_REF_API_GROUP,
            claim::POOL_REF_KIND,
            claim::POOL_REF_NAME,
        ] {
            checks.push(required(id, path.as_str()));
        }
        checks
    };
    let mut c1 = pool_ref(RuleId::C1);
    let name = "object.spec.poolRef.name";
    let name_set = format!(
        "!({}) || {name} == ''",
        present("object", claim::POOL_REF_NAME.as_str())
    );
    c1.push(Check {
        field: claim::POOL_REF_NAME.into(),
        expression: format!("{name_set} || size({name}) <= 253"),
        message: signed(
            "Invalid value: must be no more than 253 characters",
            RuleId::C1,
        ),
    });
    c1.push(Check {
        field: claim::POOL_REF_NAME.into(),
        expression: format!("{name_set} || {name}.matches('{DNS1123_SUBDOMAIN}')"),
        message: signed(
            "Invalid value: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            RuleId::C1,
        ),
    });

    let label = format!("object.metadata.labels['{CLUSTER_NAME_LABEL}']");
    let has_label = |root: &str| {
        format!("(has({root}.metadata.labels) && '{CLUSTER_NAME_LABEL}' in {root}.metadata.labels)")
    };
    let both = format!(
        "{} && {}",
        present("object", claim::CLUSTER_NAME.as_str()),
        has_label("object")
    );
    let cluster_changed = format!(
        "({a}) != ({b}) || (({a}) && object.spec.clusterName != oldObject.spec.clusterName)",
        a = present("object", claim::CLUSTER_NAME.as_str()),
        b = present("oldObject", claim::CLUSTER_NAME.as_str())
    );
    let label_changed = format!(
        "{a} != {b} || ({a} && {label} != oldObject.metadata.labels['{CLUSTER_NAME_LABEL}'])",
        a = has_label("object"),
        b = has_label("oldObject")
    );
    let c5 = Check {
        field: meta::LABELS.into(),
        expression: format!(
            "!(request.operation == 'CREATE' || {cluster_changed} || {label_changed}) || !({both}) || {label} == object.spec.clusterName"
        ),
        message: signed(
            &format!("Invalid value: label {CLUSTER_NAME_LABEL} must equal spec.clusterName"),
            RuleId::C5,
        ),
    };

    let mut a5 = vec![
        required_object(RuleId::A5, address::CLAIM_REF.as_str()),
        required(RuleId::A5, address::CLAIM_REF_NAME.as_str()),
    ];
    a5.extend(pool_ref(RuleId::A5));

    let a1 = Check {
        field: address::ADDRESS.into(),
        expression: format!(
            "!({}) || isIP(object.spec.address)",
            present("object", address::ADDRESS.as_str())
        ),
        message: signed("Invalid value: not a valid IP address", RuleId::A1),
    };

    let immutables = |id: RuleId, leaves: &[String]| -> Vec<Check> {
        leaves.iter().map(|l| immutable(id, l)).collect()
    };
    let owned = |v: &[&str]| -> Vec<String> { v.iter().map(|s| s.to_string()).collect() };

    vec![
        Policy {
            id: RuleId::C1,
            kinds: CLAIM,
            operations: &["CREATE"],
            checks: c1,
            ip_library: false,
            partial: None,
        },
        Policy {
            id: RuleId::C4,
            kinds: CLAIM,
            operations: &["UPDATE"],
            checks: immutables(RuleId::C4, &owned(CLAIM_LEAVES)),
            ip_library: false,
            partial: None,
        },
        Policy {
            id: RuleId::C5,
            kinds: CLAIM,
            operations: &["CREATE", "UPDATE"],
            checks: vec![c5],
            ip_library: false,
            partial: None,
        },
        Policy {
            id: RuleId::A1,
            kinds: ADDRESS,
            operations: &["CREATE"],
            checks: vec![a1],
            ip_library: true,
            partial: Some("the policy refuses what is not an IP address at all; the webhook also refuses a missing address and warns about IPv6 that is not in canonical form"),
        },
        Policy {
            id: RuleId::A5,
            kinds: ADDRESS,
            operations: &["CREATE"],
            checks: a5,
            ip_library: false,
            partial: None,
        },
        Policy {
            id: RuleId::A10,
            kinds: ADDRESS,
            operations: &["UPDATE"],
            checks: immutables(RuleId::A10, &owned(ADDRESS_LEAVES)),
            ip_library: false,
            partial: None,
        },
        Policy {
            id: RuleId::MC1,
            kinds: M3_CLAIM,
            operations: &["CREATE"],
            checks: vec![required(RuleId::MC1, metal3::POOL_NAME.as_str())],
            ip_library: false,
            partial: None,
        },
        Policy {
            id: RuleId::MC2,
            kinds: M3_CLAIM,
            operations: &["CREATE"],
            checks: vec![own_namespace(RuleId::MC2, metal3::POOL_NAMESPACE.as_str())],
            ip_library: false,
            partial: None,
        },
        Policy {
            id: RuleId::MC3,
            kinds: M3_CLAIM,
            operations: &["UPDATE"],
            checks: immutables(RuleId::MC3, &metal3_claim_leaves()),
            ip_library: false,
            partial: None,
        },
        Policy {
            id: RuleId::MA2,
            kinds: M3_ADDRESS,
            operations: &["CREATE"],
            checks: vec![
                required(RuleId::MA2, metal3::POOL_NAME.as_str()),
                required(RuleId::MA2, metal3::CLAIM_NAME.as_str()),
                own_namespace(RuleId::MA2, metal3::POOL_NAMESPACE.as_str()),
                own_namespace(RuleId::MA2, metal3::CLAIM_NAMESPACE.as_str()),
            ],
            ip_library: false,
            partial: None,
        },
        Policy {
            id: RuleId::MA3,
            kinds: M3_ADDRESS,
            operations: &["UPDATE"],
            checks: immutables(RuleId::MA3, &metal3_address_leaves()),
            ip_library: false,
            partial: None,
        },
    ]
}

/// How a rule is kept when the webhook is not asked.
#[derive(Debug, Clone)]
pub enum Coverage {
    /// A policy of that name says the rule (or, with `partial`, part of it).
    Policy {
        name: String,
        since: u32,
        partial: Option<&'static str>,
    },
    /// The rule reads only the object written, yet has no policy, for this reason.
    WebhookOnly(&'static str),
    /// Nothing to back up: the rule reads other objects, only warns, mutates or allows.
    NotApplicable(&'static str),
}

/// Why each single-object rule that can deny has no policy.
fn why_not(id: RuleId) -> &'static str {
    use RuleId::*;
    match id {
        C2 => "an API server prunes a `namespace` key under a CAPI reference through the CRD schema before any admission check, so a policy would never see it; `check`, `audit` and the webhook's direct reviews do",
        A2 | A3 | MA1 => "not written yet: CEL's IP library (`ip()`, `cidr()`, `containsIP()`) could say it, but the prefix bound by family, the \"room for a subnet\" threshold and the link-local gateway exemption each need their own check against the webhook on a real API server first; until then the webhook alone judges it",
        P1 | P2 | P3 | P4 | P5 | P6 | PP1 | PP2 | PP3 | PP4 | PP5 | MP1 | MP2 | MP3 | MP5 | S1
        | S2 | S3 | S4 | S7 | S8 | RI1 => "on UPDATE the webhook judges only what the update changes (a pool that already had the problem may still be updated), which a policy cannot say per entry, and a policy's message cannot name the entry's index as the webhook's field does; a policy for CREATE alone would also need ranges (`a-b`) and subnet arithmetic in CEL. The webhook alone judges it",
        CP2 => "not written yet: CEL's `cidr().containsIP()` (Kubernetes 1.31+) could say it for an IP endpoint, but a host name must pass and the cause must name the block; until a policy is checked against the webhook on a real API server the webhook alone judges it",
        PP7 | MA5 => "not written yet: the rule came after the policies were generated; until a policy is checked against the webhook on a real API server the webhook alone judges it",
        RI2 => "the CRD schema's `enum: [4, 6]` refuses any other ipVersion before a webhook is asked, and Spiderpool's own webhook refuses the change; a policy for the immutability is not written yet: until one is checked against the webhook on a real API server the webhook alone judges it",
        S6 => "`status.allocatedIPs` is a JSON string holding a map: CEL cannot parse it",
        C1 | C4 | C5 | A1 | A5 | A10 | MC1 | MC3 | MA2 | MA3 => "",
        REQ => "an API server always sends the objects; only a broken caller reaches this rule",
        _ => "",
    }
}

/// What backs `id` up without the webhook.
pub fn coverage(id: RuleId) -> Coverage {
    if let Some(p) = policies().into_iter().find(|p| p.id == id) {
        return Coverage::Policy {
            name: p.name(),
            since: p.since(),
            partial: p.partial,
        };
    }
    if id.reads_view() {
        return Coverage::NotApplicable("it reads other objects");
    }
    match id.effect() {
        Effect::Warn => Coverage::NotApplicable("it only warns"),
        Effect::Mutate => Coverage::NotApplicable("it mutates"),
        Effect::Allow => Coverage::NotApplicable("it only allows"),
        Effect::CheckOnly => Coverage::NotApplicable("`check` only"),
        Effect::AuditOnly => Coverage::NotApplicable("`audit` only"),
        Effect::Deny | Effect::DenyOrWarn if matches!(id, RuleId::X3 | RuleId::K1) => {
            Coverage::NotApplicable("it is about the webhook itself")
        }
        Effect::Deny | Effect::DenyOrWarn => Coverage::WebhookOnly(why_not(id)),
    }
}

// === manifests ===

fn resource_rules(p: &Policy) -> Vec<Value> {
    p.kinds
        .iter()
        .map(|k| {
            json!({
                "apiGroups": [k.group()],
                "apiVersions": k.info().versions,
                "resources": [k.plural()],
                "operations": p.operations,
                "scope": if k.namespaced() { "Namespaced" } else { "Cluster" },
            })
        })
        .collect()
}

fn labels() -> Value {
    json!({"app.kubernetes.io/name": "ipam-guard", "app.kubernetes.io/component": "cel-backstop"})
}

/// The ValidatingAdmissionPolicy and its binding, for one policy.
pub fn objects(p: &Policy) -> [Value; 2] {
    let name = p.name();
    let validations: Vec<Value> = p
        .checks
        .iter()
        .map(|c| {
            // A policy's validation has no field path of its own (that is CRD rules'): the field
            // leads the message, as kubectl prints a webhook's cause.
            json!({
                "expression": c.expression,
                "message": format!("{}: {}", c.field, c.message),
                "reason": "Invalid",
            })
        })
        .collect();
    [
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name, "labels": labels()},
            "spec": {
                "failurePolicy": "Ignore",
                "matchConstraints": {"matchPolicy": "Equivalent", "resourceRules": resource_rules(p)},
                "validations": validations,
            }
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": labels()},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchExpressions": [{
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": SKIPPED_NAMESPACES,
                }]}},
            }
        }),
    ]
}

/// Every policy and binding, for servers of minor release `minor` (`None`: every policy).
pub fn all_objects(minor: Option<u32>) -> Vec<Value> {
    policies()
        .iter()
        .filter(|p| minor.is_none_or(|m| p.since() <= m))
        .flat_map(objects)
        .collect()
}
