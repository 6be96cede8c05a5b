//! Metal3 `IPClaim` and `IPAddress` (MC1–MC2, MA1–MA2) as read, and what the index keeps of an
//! `IPAddress`.

use serde_json::Value;

use super::IP_ADDRESS_ANNOTATION;
use crate::address::Ip;
use crate::field::{FieldError, FieldPath, Warning};
use crate::kinds::Kind;
use crate::model::paths::{self, metal3 as fields};
use crate::model::{read, AddressProj, ClaimProj, ObjKey, PoolRef};
use crate::rule_id::RuleId;

// === IPClaim ===

/// A Metal3 `IPClaim` as read.
#[derive(Debug, Clone, Default)]
pub struct ClaimReading<'a> {
    pub pool_name: Option<&'a str>,
    pub pool_namespace: Option<&'a str>,
    /// The `ipAddress` annotation as written, and the address when it parses.
    pub requested: Option<&'a str>,
    /// Fields of the wrong type.
    pub errors: Vec<FieldError>,
}

/// Reads a Metal3 `IPClaim`.
pub fn read_claim(obj: &Value) -> ClaimReading<'_> {
    let mut errors = Vec::new();
    let mut s =
        |rule: RuleId, path: FieldPath| read::keep(read::string(rule, obj, path), &mut errors);
    let pool_name = s(RuleId::MC1, fields::POOL_NAME);
    let pool_namespace = s(RuleId::MC2, fields::POOL_NAMESPACE);
    let requested =
        read::entry(obj, paths::meta::ANNOTATIONS, IP_ADDRESS_ANNOTATION).and_then(Value::as_str);
    ClaimReading {
        pool_name,
        pool_namespace,
        requested,
        errors,
    }
}

/// What the index keeps of an IPClaim: its pool (always an `IPPool` of the claim's namespace).
pub fn project_claim(obj: &Value, key: ObjKey) -> ClaimProj {
    let pool = read::get(obj, fields::POOL_NAME)
        .and_then(Value::as_str)
        .unwrap_or_default();
    ClaimProj {
        pool_ref: PoolRef {
            api_group: Kind::Metal3IPPool.group().to_string(),
            kind: Kind::Metal3IPPool.name().to_string(),
            name: pool.to_string(),
        },
        created: crate::model::creation_timestamp(obj),
        bound: crate::model::has_name(obj, fields::STATUS_ADDRESS_NAME),
        key,
    }
}

// === IPAddress ===

/// A Metal3 `IPAddress` spec as read: each field parsed once.
#[derive(Debug, Clone, Default)]
pub struct AddressReading<'a> {
    pub address_text: Option<&'a str>,
    pub address: Option<Ip>,
    /// `spec.prefix` as written (never narrowed), and checked against the address's family.
    pub prefix_raw: Option<&'a Value>,
    pub prefix: Option<u8>,
    pub gateway_text: Option<&'a str>,
    pub gateway: Option<Ip>,
    pub pool_name: Option<&'a str>,
    pub pool_namespace: Option<&'a str>,
    pub claim_name: Option<&'a str>,
    pub claim_namespace: Option<&'a str>,
    /// Problems of one field on its own: MA1 address, prefix, gateway; MA2 types.
    pub errors: Vec<FieldError>,
    pub warnings: Vec<Warning>,
}

/// Reads a Metal3 `IPAddress`.
pub fn read_address(obj: &Value) -> AddressReading<'_> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let (address_text, address) = read::ip(
        RuleId::MA1,
        obj,
        fields::ADDRESS,
        &mut errors,
        &mut warnings,
    );
    if address_text.is_none() && !errors.iter().any(|e| e.path == fields::ADDRESS) {
        errors.push(FieldError::required(RuleId::MA1, fields::ADDRESS, ""));
    }
    let (gateway_text, gateway) = read::ip(
        RuleId::MA1,
        obj,
        fields::GATEWAY,
        &mut errors,
        &mut warnings,
    );
    let prefix_raw = read::get(obj, fields::PREFIX);
    // Unlike CAPI's, a Metal3 prefix is optional.
    let family = address.or(gateway).map(|ip| ip.family);
    let prefix = read::prefix(RuleId::MA1, obj, fields::PREFIX, family, &mut errors);
    let mut s = |path: FieldPath| read::keep(read::string(RuleId::MA2, obj, path), &mut errors);
    let pool_name = s(fields::POOL_NAME);
    let pool_namespace = s(fields::POOL_NAMESPACE);
    let claim_name = s(fields::CLAIM_NAME);
    let claim_namespace = s(fields::CLAIM_NAMESPACE);
    AddressReading {
        address_text,
        address,
        prefix_raw,
        prefix,
        gateway_text,
        gateway,
        pool_name,
        pool_namespace,
        claim_name,
        claim_namespace,
        errors,
        warnings,
    }
}

/// What the index keeps of a Metal3 address. ip-address-manager looks its addresses up in the
/// pool's own namespace, so the pool is keyed there whatever `spec.pool.namespace` says (MA2
/// denies a different one).
pub fn project_address(obj: &Value, key: ObjKey) -> AddressProj {
    let ip = read::ip_value(obj, fields::ADDRESS);
    let name = |path: FieldPath| {
        read::get(obj, path)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    AddressProj {
        pool: name(fields::POOL_NAME)
            .map(|n| ObjKey::new(Kind::Metal3IPPool, key.namespace.as_deref(), n)),
        claim: name(fields::CLAIM_NAME).map(std::sync::Arc::from),
        ip,
        key,
    }
}
