//! One pool's figures as `usage --output json` writes them; `usage --free` nests the same object
//! beside the free ranges, so both commands' readers parse one shape.

use serde::Serialize;

use crate::index::usage::PoolUsage;

/// One pool as JSON. Sizes are integers (up to 2^128 − 1; readers that parse numbers as doubles
/// round the largest ones).
#[derive(Debug, Serialize)]
pub struct UsageEntry {
    pub kind: String,
    pub group: &'static str,
    pub namespace: Option<String>,
    pub name: String,
    pub address_space: String,
    /// `IPv4`, `IPv6`, or null when the spec names no valid address.
    pub family: Option<&'static str>,
    pub allocatable: u128,
    pub used: u128,
    pub free: u128,
    /// 0.0 to 1.0; 1.0 for a pool that can hand out nothing.
    pub share_used: f64,
    /// Addresses held by objects referencing the pool outside what it hands out.
    pub outside: u128,
    /// What the figures count: `addresses`, or `sub-prefixes` for a prefix pool.
    pub unit: &'static str,
    /// For a prefix pool, the length of the sub-prefixes counted; else null.
    pub allocation_prefix_length: Option<u8>,
}

impl From<&PoolUsage> for UsageEntry {
    fn from(u: &PoolUsage) -> Self {
        UsageEntry {
            kind: u.key.kind.name().to_string(),
            group: u.key.kind.group(),
            namespace: u.key.namespace.as_deref().map(str::to_string),
            name: u.key.name.to_string(),
            address_space: u.space.to_string(),
            family: u.family.map(|f| f.name()),
            allocatable: u.allocatable,
            used: u.used,
            free: u.free(),
            share_used: u.share_used(),
            outside: u.outside,
            unit: if u.sub_prefix.is_some() {
                "sub-prefixes"
            } else {
                "addresses"
            },
            allocation_prefix_length: u.sub_prefix,
        }
    }
}
