//! Metal3 `IPClaim` and `IPAddress` as read (judged by `rules::metal3`: MC1–MC2, MA1–MA2), and what the index keeps of an
//! `IPAddress`.

use serde_json::Value;

use super::IP_ADDRESS_ANNOTATION;
use crate::field::FieldPath;
use crate::kinds::Kind;
use crate::model::paths::{self, metal3 as fields};
use crate::model::written::{self, AddressFields, AddressPaths, Written};
use crate::model::{read, AddressProj, ClaimProj, ObjKey, PoolRef};

// === IPClaim ===

/// A Metal3 `IPClaim` as read.
#[derive(Debug, Clone)]
pub struct ClaimReading<'a> {
    pub pool_name: Written<'a, &'a str>,
    pub pool_namespace: Written<'a, &'a str>,
    /// The `ipAddress` annotation, when it is a string.
    pub requested: Option<&'a str>,
}

/// Reads a Metal3 `IPClaim`.
pub fn read_claim(obj: &Value) -> ClaimReading<'_> {
    ClaimReading {
        pool_name: written::string(obj, fields::POOL_NAME),
        pool_namespace: written::string(obj, fields::POOL_NAMESPACE),
        requested: read::entry(obj, paths::meta::ANNOTATIONS, IP_ADDRESS_ANNOTATION)
            .and_then(Value::as_str),
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
        endpoint_of: crate::model::endpoint_of(obj),
        cluster: crate::model::claim_cluster(obj),
    }
}

// === IPAddress ===

/// A Metal3 `IPAddress` spec as read: each field parsed once.
#[derive(Debug, Clone)]
pub struct AddressReading<'a> {
    /// `spec.address`, `spec.prefix`, `spec.gateway`.
    pub spec: AddressFields<'a>,
    pub pool_name: Written<'a, &'a str>,
    pub pool_namespace: Written<'a, &'a str>,
    pub claim_name: Written<'a, &'a str>,
    pub claim_namespace: Written<'a, &'a str>,
}

/// Where a Metal3 `IPAddress` keeps its address, prefix and gateway.
pub const ADDRESS_PATHS: AddressPaths = AddressPaths {
    address: fields::ADDRESS,
    prefix: fields::PREFIX,
    gateway: fields::GATEWAY,
};

/// Reads a Metal3 `IPAddress`.
pub fn read_address(obj: &Value) -> AddressReading<'_> {
    AddressReading {
        spec: AddressFields::read(obj, ADDRESS_PATHS),
        pool_name: written::string(obj, fields::POOL_NAME),
        pool_namespace: written::string(obj, fields::POOL_NAMESPACE),
        claim_name: written::string(obj, fields::CLAIM_NAME),
        claim_namespace: written::string(obj, fields::CLAIM_NAMESPACE),
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
