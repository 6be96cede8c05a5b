//! What the soak writes and what it recorded: the kinds, keys and specs of its small universe,
//! and one history record per API call with the answer as the client saw it. Shared by the
//! workload (which writes them) and the checker (which reads only these and the API server's
//! lists, never ipam-guard's code).

use serde_json::{json, Value};

use super::cluster::NS;

pub const GROUP: &str = "ipam.cluster.x-k8s.io";
/// The annotation naming a pool's address space (docs/rules.md, P10); absent means `default`.
pub const SPACE_ANNOTATION: &str = "ipam-guard.io/address-space";
pub const DEFAULT_SPACE: &str = "default";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Pool,
    GlobalPool,
    Address,
    Claim,
}

impl Kind {
    /// The kind as ipam-guard's messages name it (`InClusterIPPool soak/pool-1`).
    pub fn word(self) -> &'static str {
        match self {
            Kind::Pool => "InClusterIPPool",
            Kind::GlobalPool => "GlobalInClusterIPPool",
            Kind::Address => "IPAddress",
            Kind::Claim => "IPAddressClaim",
        }
    }

    pub fn from_word(word: &str) -> Option<Kind> {
        [Kind::Pool, Kind::GlobalPool, Kind::Address, Kind::Claim]
            .into_iter()
            .find(|k| k.word() == word)
    }

    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Pool | Kind::GlobalPool => "ipam.cluster.x-k8s.io/v1alpha2",
            Kind::Address | Kind::Claim => "ipam.cluster.x-k8s.io/v1beta2",
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Kind::Pool => "inclusterippools",
            Kind::GlobalPool => "globalinclusterippools",
            Kind::Address => "ipaddresses",
            Kind::Claim => "ipaddressclaims",
        }
    }

    pub fn namespaced(self) -> bool {
        self != Kind::GlobalPool
    }

    pub fn is_pool(self) -> bool {
        matches!(self, Kind::Pool | Kind::GlobalPool)
    }

    pub fn collection(self) -> String {
        match self.namespaced() {
            true => format!(
                "/apis/{}/namespaces/{NS}/{}",
                self.api_version(),
                self.plural()
            ),
            false => format!("/apis/{}/{}", self.api_version(), self.plural()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub kind: Kind,
    pub name: String,
}

impl Key {
    pub fn new(kind: Kind, name: impl Into<String>) -> Key {
        Key {
            kind,
            name: name.into(),
        }
    }

    pub fn path(&self) -> String {
        format!("{}/{}", self.kind.collection(), self.name)
    }
}

impl std::fmt::Display for Key {
    /// As ipam-guard's messages print a key: `InClusterIPPool soak/pool-1`, `GlobalInClusterIPPool gpool-0`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind.namespaced() {
            true => write!(f, "{} {NS}/{}", self.kind.word(), self.name),
            false => write!(f, "{} {}", self.kind.word(), self.name),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PoolSpec {
    pub addresses: Vec<String>,
    pub excluded: Vec<String>,
    pub gateway: Option<String>,
    pub prefix: u32,
    pub allocate_reserved: bool,
    pub space: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AddressSpec {
    pub ip: String,
    pub pool: Key,
    pub claim: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    Pool(PoolSpec),
    Address(AddressSpec),
    Claim { pool: Key },
}

impl Spec {
    pub fn pool(&self) -> Option<&PoolSpec> {
        match self {
            Spec::Pool(p) => Some(p),
            _ => None,
        }
    }

    pub fn address(&self) -> Option<&AddressSpec> {
        match self {
            Spec::Address(a) => Some(a),
            _ => None,
        }
    }

    /// Reads a stored object's spec; None for one this soak cannot have written.
    pub fn from_object(kind: Kind, obj: &Value) -> Option<Spec> {
        let spec = &obj["spec"];
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let pool_ref = |v: &Value| -> Option<Key> {
            let kind = Kind::from_word(v["kind"].as_str()?)?;
            Some(Key::new(kind, v["name"].as_str()?))
        };
        Some(match kind {
            Kind::Pool | Kind::GlobalPool => Spec::Pool(PoolSpec {
                addresses: strings(&spec["addresses"]),
                excluded: strings(&spec["excludedAddresses"]),
                gateway: spec["gateway"].as_str().map(str::to_string),
                prefix: spec["prefix"].as_u64()? as u32,
                allocate_reserved: spec["allocateReservedIPAddresses"] == true,
                space: obj["metadata"]["annotations"][SPACE_ANNOTATION]
                    .as_str()
                    .unwrap_or(DEFAULT_SPACE)
                    .to_string(),
            }),
            Kind::Address => Spec::Address(AddressSpec {
                ip: spec["address"].as_str()?.to_string(),
                pool: pool_ref(&spec["poolRef"])?,
                claim: spec["claimRef"]["name"].as_str()?.to_string(),
            }),
            Kind::Claim => Spec::Claim {
                pool: pool_ref(&spec["poolRef"])?,
            },
        })
    }

    /// The object a client creates for `key` with this spec.
    pub fn object(&self, key: &Key) -> Value {
        let mut metadata = json!({"name": key.name});
        if key.kind.namespaced() {
            metadata["namespace"] = json!(NS);
        }
        let pool_ref = |p: &Key| json!({"apiGroup": GROUP, "kind": p.kind.word(), "name": p.name});
        let spec = match self {
            Spec::Pool(p) => {
                if p.space != DEFAULT_SPACE {
                    metadata["annotations"] = json!({ SPACE_ANNOTATION: p.space });
                }
                let mut spec = json!({"addresses": p.addresses, "prefix": p.prefix});
                if let Some(g) = &p.gateway {
                    spec["gateway"] = json!(g);
                }
                if !p.excluded.is_empty() {
                    spec["excludedAddresses"] = json!(p.excluded);
                }
                spec
            }
            Spec::Address(a) => json!({
                "address": a.ip, "prefix": 24, "gateway": "10.50.0.1",
                "claimRef": {"name": a.claim}, "poolRef": pool_ref(&a.pool)
            }),
            Spec::Claim { pool } => json!({"poolRef": pool_ref(pool)}),
        };
        json!({
            "apiVersion": key.kind.api_version(), "kind": key.kind.word(),
            "metadata": metadata, "spec": spec
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    Create,
    /// A merge patch of a pool's `spec.addresses` and `spec.excludedAddresses`.
    Update,
    Delete,
}

/// What a client saw of one call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// 2xx: stored (or deleted).
    Done,
    /// Denied by ipam-guard, with the rule ids its message names.
    Denied(Vec<String>),
    /// ipam-guard refused to judge (503: X3, or no decider within the timeout): fail closed.
    Unavailable,
    AlreadyExists,
    Conflict,
    NotFound,
    /// 422 from the API server's own validation (no ipam-guard rule).
    Invalid,
    /// 500 `failed calling webhook`: the API server could not get an answer (fail closed).
    WebhookFailed,
    /// `failed calling webhook` after the webhook's `timeoutSeconds`: the API server gave up
    /// waiting and refused the write (failurePolicy Fail). ipam-guard may have admitted it and
    /// hold it as pending until its TTL: a refused write, like an AlreadyExists.
    WebhookTimeout,
    /// 500 carrying a denial: ipam-guard answered with a server error.
    Webhook500,
    /// No HTTP answer (the API server was down, or 20 s passed): the outcome is unknown.
    NoAnswer,
    /// Anything else (the status is in the record).
    Other,
}

impl Outcome {
    /// Whether the write may have changed what is stored.
    pub fn may_have_applied(&self) -> bool {
        matches!(self, Outcome::Done | Outcome::NoAnswer | Outcome::Other)
    }

    /// Whether ipam-guard may have admitted the write (and so held a pending entry for it): all
    /// but its own refusals and the schema's, which come before validating admission. A
    /// NotFound may come after it: an update admitted against the object the API server read,
    /// which a DELETE removed before the update was stored.
    pub fn may_have_been_admitted(&self) -> bool {
        !matches!(
            self,
            Outcome::Denied(_) | Outcome::Unavailable | Outcome::Invalid
        )
    }

    pub fn label(&self) -> String {
        match self {
            Outcome::Denied(ids) => format!("denied {}", ids.join("+")),
            other => format!("{other:?}"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Record {
    pub client: usize,
    /// What the generator meant by it (`recreate-address`, `chase-pool`, …).
    pub tag: &'static str,
    pub method: Method,
    pub key: Key,
    /// The spec sent (creates), or the spec a successful update leaves (updates).
    pub spec: Option<Spec>,
    /// Seconds since the run began.
    pub send: f64,
    pub answer: f64,
    pub outcome: Outcome,
    pub status: u16,
    pub message: String,
    /// The stored object's uid, from a 2xx answer.
    pub uid: Option<String>,
}

/// Classifies one answer as `Outcome`, with the text a denial's causes are read from.
pub fn classify(result: &Result<(u16, Value), String>) -> (Outcome, u16, String) {
    let (status, body) = match result {
        Err(e) => return (Outcome::NoAnswer, 0, e.clone()),
        Ok((s, b)) => (*s, b),
    };
    let mut message = body["message"].as_str().unwrap_or_default().to_string();
    if !message.contains("[ipam-guard ") {
        for c in body["details"]["causes"].as_array().into_iter().flatten() {
            if let Some(m) = c["message"].as_str() {
                message.push('\n');
                message.push_str(m);
            }
        }
    }
    let ids = rule_ids(&message);
    let reason = body["reason"].as_str().unwrap_or_default();
    let outcome = match status {
        200..=299 => Outcome::Done,
        503 => Outcome::Unavailable,
        409 if reason == "AlreadyExists" => Outcome::AlreadyExists,
        409 => Outcome::Conflict,
        404 => Outcome::NotFound,
        500..=504 if message.contains("failed calling webhook") && timed_out(&message) => {
            Outcome::WebhookTimeout
        }
        500 if message.contains("failed calling webhook") => Outcome::WebhookFailed,
        500..=599 if message.contains("denied the request") => Outcome::Webhook500,
        400..=499 if ids.iter().any(|i| i == "X2" || i == "X3") => Outcome::Unavailable,
        400..=499 if !ids.is_empty() => Outcome::Denied(ids),
        422 => Outcome::Invalid,
        _ => Outcome::Other,
    };
    (outcome, status, message)
}

/// Whether a webhook call's error says it ran out of time (Go's net/http and context words).
fn timed_out(message: &str) -> bool {
    ["deadline exceeded", "Timeout exceeded", "timeout awaiting"]
        .iter()
        .any(|w| message.contains(w))
}

/// The ids of every `[ipam-guard ID]` in `text`, sorted, each once.
pub fn rule_ids(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = text
        .split("[ipam-guard ")
        .skip(1)
        .filter_map(|rest| rest.split_once(']').map(|(id, _)| id.to_string()))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}
