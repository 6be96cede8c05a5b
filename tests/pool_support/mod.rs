//! Random in-cluster pools for the brute-force tests (`pool_usage`, `pool_free`): entries in
//! offsets from a base address, and the allocatable set (declared − excluded − gateway − reserved) by enumeration, written
//! independently of the crate's parser.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use ipam_guard::index::Index;
use ipam_guard::kinds::Kind;
use ipam_guard::model::project;
use proptest::prelude::*;
use serde_json::{json, Value};

pub const NS: &str = "ns";

pub fn text(v6: bool, value: u128) -> String {
    if v6 {
        Ipv6Addr::from(value).to_string()
    } else {
        Ipv4Addr::from(value as u32).to_string()
    }
}

pub fn base(v6: bool) -> u128 {
    if v6 {
        u128::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0))
    } else {
        u128::from(u32::from(Ipv4Addr::new(10, 1, 0, 0)))
    }
}

/// One entry of a pool's list, in offsets from `base`.
#[derive(Debug, Clone)]
pub enum E {
    One(u128),
    Range(u128, u128),
    /// An aligned CIDR: `len` addresses (a power of two) starting at a multiple of `len`.
    Cidr(u128, u32),
}

impl E {
    pub fn text(&self, v6: bool) -> String {
        let b = base(v6);
        match *self {
            E::One(a) => text(v6, b + a),
            E::Range(a, z) => format!("{}-{}", text(v6, b + a), text(v6, b + z)),
            E::Cidr(start, bits) => {
                let width = if v6 { 128 } else { 32 };
                format!("{}/{}", text(v6, b + start), width - bits)
            }
        }
    }
    /// The offsets this entry declares, read independently of the crate's parser.
    pub fn offsets(&self) -> Vec<u128> {
        match *self {
            E::One(a) => vec![a],
            E::Range(a, z) => (a..=z).collect(),
            E::Cidr(start, bits) => (start..start + (1 << bits)).collect(),
        }
    }
}

pub fn entry() -> impl Strategy<Value = E> {
    prop_oneof![
        (0..64u128).prop_map(E::One),
        (0..64u128, 0..12u128).prop_map(|(a, n)| E::Range(a, a + n)),
        (0..4u32, 0..16u128).prop_map(|(bits, i)| E::Cidr((i << bits) % 64, bits)),
    ]
}

#[derive(Debug, Clone)]
pub struct Pool {
    pub v6: bool,
    pub entries: Vec<E>,
    pub excluded: Vec<E>,
    pub gateway: Option<u128>,
    /// Host bits: the prefix is `width - host_bits`.
    pub host_bits: u32,
    pub allocate_reserved: bool,
}

impl Pool {
    pub fn prefix(&self) -> u32 {
        (if self.v6 { 128 } else { 32 }) - self.host_bits
    }

    pub fn object(&self, name: &str) -> Value {
        let mut spec = json!({
            "addresses": self.entries.iter().map(|e| e.text(self.v6)).collect::<Vec<_>>(),
            "prefix": self.prefix(),
        });
        if !self.excluded.is_empty() {
            spec["excludedAddresses"] = json!(self
                .excluded
                .iter()
                .map(|e| e.text(self.v6))
                .collect::<Vec<_>>());
        }
        if let Some(g) = self.gateway {
            spec["gateway"] = json!(text(self.v6, base(self.v6) + g));
        }
        if self.allocate_reserved {
            spec["allocateReservedIPAddresses"] = json!(true);
        }
        json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": {"name": name, "namespace": NS},
            "spec": spec,
        })
    }

    /// The allocatable set by enumeration: the offsets the pool can hand out.
    pub fn allocatable(&self) -> BTreeSet<u128> {
        let declared: BTreeSet<u128> = self.entries.iter().flat_map(E::offsets).collect();
        let excluded: BTreeSet<u128> = self.excluded.iter().flat_map(E::offsets).collect();
        let mut out: BTreeSet<u128> = declared.difference(&excluded).copied().collect();
        if let Some(g) = self.gateway {
            out.remove(&g);
        }
        let point_to_point = self.host_bits <= 1;
        if let Some(&lowest) = declared.iter().next() {
            if !self.allocate_reserved && !point_to_point {
                // The subnet of the prefix holding the lowest declared address (base is aligned
                // far beyond any prefix generated here).
                let size = 1u128 << self.host_bits;
                let network = lowest / size * size;
                out.remove(&network);
                if !self.v6 {
                    out.remove(&(network + size - 1));
                }
            }
        }
        out
    }
}

pub fn pool(v6: bool) -> impl Strategy<Value = Pool> {
    (
        prop::collection::vec(entry(), 1..4),
        prop::collection::vec(entry(), 0..3),
        prop::option::of(0..70u128),
        // /24../32 for IPv4, /120../128 for IPv6: /31, /32, /127 and /128 included.
        0..=8u32,
        any::<bool>(),
    )
        .prop_map(
            move |(entries, excluded, gateway, host_bits, allocate_reserved)| Pool {
                v6,
                entries,
                excluded,
                gateway,
                host_bits,
                allocate_reserved,
            },
        )
}

/// An index of `objects`, each projected as the view would.
pub fn index_of(objects: &[(Kind, Value)]) -> Index {
    let mut index = Index::new();
    for (kind, o) in objects {
        index.upsert(project(*kind, o).expect("a named object projects"));
    }
    index
}

/// Metal3's pool `m3`: 192.168.0.10–19, gateway .11.
pub fn metal3_pool() -> Value {
    json!({
        "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
        "metadata": {"name": "m3", "namespace": NS},
        "spec": {"namePrefix": "m3", "allocationStrategy": "sequential",
            "pools": [{"start": "192.168.0.10", "end": "192.168.0.19", "gateway": "192.168.0.11", "prefix": 24}]},
    })
}

/// Metal3's IPAddress `m3-0` of pool `m3` at `address`.
pub fn metal3_address(address: &str) -> Value {
    json!({
        "apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPAddress",
        "metadata": {"name": "m3-0", "namespace": NS},
        "spec": {"address": address, "prefix": 24,
            "pool": {"name": "m3", "namespace": NS}, "claim": {"name": "c0", "namespace": NS}},
    })
}
