//! Where each kind's fields are, named once. A reader finds a field and a cause names
//! it through the same constant, so the two cannot drift apart, and the test below checks every
//! constant against the kinds' schemas (`schema::Schemas::builtin`, itself compared with the
//! providers' CRDs): a misspelt path fails there, not in front of a user as "Required value".
//!
//! Constants marked "in an entry" are relative to one element of a list (`spec.pools[i]`); a
//! cause about them is named with [`FieldPath::entry`].

use crate::field::FieldPath;

const fn p(dotted: &'static str) -> FieldPath {
    FieldPath::new(dotted)
}

pub const SPEC: FieldPath = p("spec");

/// Object metadata, the same for every kind.
pub mod meta {
    use super::*;
    pub const NAME: FieldPath = p("metadata.name");
    pub const NAMESPACE: FieldPath = p("metadata.namespace");
    pub(crate) const LABELS: FieldPath = p("metadata.labels");
    pub(crate) const ANNOTATIONS: FieldPath = p("metadata.annotations");
    pub(crate) const CREATION_TIMESTAMP: FieldPath = p("metadata.creationTimestamp");
}

/// The keys of a typed reference (`poolRef`, Metal3 `pool`), in the reference.
pub mod reference {
    use super::*;
    pub(crate) const API_GROUP: FieldPath = p("apiGroup");
    pub const KIND: FieldPath = p("kind");
    pub const NAME: FieldPath = p("name");
    pub const NAMESPACE: FieldPath = p("namespace");
}

/// The keys of a label selector (`metav1.LabelSelector`, Spiderpool `spec.podAffinity`), in it.
pub mod selector {
    use super::*;
    pub(crate) const MATCH_LABELS: FieldPath = p("matchLabels");
    pub(crate) const MATCH_EXPRESSIONS: FieldPath = p("matchExpressions");
    /// In an entry of `matchExpressions`.
    pub const KEY: FieldPath = p("key");
    pub(crate) const OPERATOR: FieldPath = p("operator");
    pub const VALUES: FieldPath = p("values");
}

/// Cluster API `IPAddressClaim` (`ipam.cluster.x-k8s.io`).
pub mod claim {
    use super::*;
    pub const POOL_REF: FieldPath = p("spec.poolRef");
    pub(crate) const POOL_REF_API_GROUP: FieldPath = p("spec.poolRef.apiGroup");
    pub(crate) const POOL_REF_KIND: FieldPath = p("spec.poolRef.kind");
    pub(crate) const POOL_REF_NAME: FieldPath = p("spec.poolRef.name");
    pub(crate) const POOL_REF_NAMESPACE: FieldPath = p("spec.poolRef.namespace");
    pub const CLUSTER_NAME: FieldPath = p("spec.clusterName");
    pub(crate) const ADDRESS_REF: FieldPath = p("status.addressRef");
    pub(crate) const ADDRESS_REF_NAME: FieldPath = p("status.addressRef.name");
}

/// Cluster API `IPAddress` (`ipam.cluster.x-k8s.io`).
pub mod address {
    use super::*;
    pub const ADDRESS: FieldPath = p("spec.address");
    pub const PREFIX: FieldPath = p("spec.prefix");
    pub const GATEWAY: FieldPath = p("spec.gateway");
    pub const CLAIM_REF: FieldPath = p("spec.claimRef");
    pub(crate) const CLAIM_REF_NAME: FieldPath = p("spec.claimRef.name");
    pub(crate) const CLAIM_REF_NAMESPACE: FieldPath = p("spec.claimRef.namespace");
    pub const POOL_REF: FieldPath = p("spec.poolRef");
    pub(crate) const POOL_REF_NAMESPACE: FieldPath = p("spec.poolRef.namespace");
    pub(crate) const POOL_REF_API_GROUP: FieldPath = p("spec.poolRef.apiGroup");
    pub(crate) const POOL_REF_KIND: FieldPath = p("spec.poolRef.kind");
    pub(crate) const POOL_REF_NAME: FieldPath = p("spec.poolRef.name");
}

/// `InClusterIPPool` and `GlobalInClusterIPPool`, v1alpha1 and v1alpha2.
pub mod in_cluster {
    use super::*;
    pub const ADDRESSES: FieldPath = p("spec.addresses");
    pub const GATEWAY: FieldPath = p("spec.gateway");
    pub const PREFIX: FieldPath = p("spec.prefix");
    /// v1alpha2 only, as the two below.
    pub(crate) const EXCLUDED_ADDRESSES: FieldPath = p("spec.excludedAddresses");
    pub(crate) const ALLOCATE_RESERVED: FieldPath = p("spec.allocateReservedIPAddresses");
    pub const REUSE_GRACE: FieldPath = p("spec.addressReuseGracePeriodSeconds");
    /// v1alpha1's other way to declare the addresses.
    pub const SUBNET: FieldPath = p("spec.subnet");
    pub(crate) const START: FieldPath = p("spec.start");
    pub const END: FieldPath = p("spec.end");
}

/// `InClusterPrefixPool` and `GlobalInClusterPrefixPool`.
pub mod prefix_pool {
    use super::*;
    pub const PREFIXES: FieldPath = p("spec.prefixes");
    pub(crate) const EXCLUDED_PREFIXES: FieldPath = p("spec.excludedPrefixes");
    pub(crate) const ALLOCATION_PREFIX_LENGTH: FieldPath = p("spec.allocationPrefixLength");
    pub const GATEWAY: FieldPath = p("spec.gateway");
}

/// Metal3 `IPPool`, `IPClaim` and `IPAddress` (`ipam.metal3.io`).
pub mod metal3 {
    use super::*;
    pub const POOLS: FieldPath = p("spec.pools");
    pub const PREFIX: FieldPath = p("spec.prefix");
    pub const GATEWAY: FieldPath = p("spec.gateway");
    pub(crate) const DNS_SERVERS: FieldPath = p("spec.dnsServers");
    pub const PRE_ALLOCATIONS: FieldPath = p("spec.preAllocations");
    pub(crate) const ALLOCATION_STRATEGY: FieldPath = p("spec.allocationStrategy");
    pub(crate) const NAME_PREFIX: FieldPath = p("spec.namePrefix");
    /// In an entry of `spec.pools`.
    pub(crate) const ENTRY_START: FieldPath = p("start");
    pub(crate) const ENTRY_END: FieldPath = p("end");
    pub(crate) const ENTRY_SUBNET: FieldPath = p("subnet");
    pub(crate) const ENTRY_PREFIX: FieldPath = p("prefix");
    pub(crate) const ENTRY_GATEWAY: FieldPath = p("gateway");
    pub(crate) const ENTRY_DNS_SERVERS: FieldPath = p("dnsServers");
    /// `IPClaim` and `IPAddress`.
    pub(crate) const POOL_NAME: FieldPath = p("spec.pool.name");
    pub(crate) const POOL_NAMESPACE: FieldPath = p("spec.pool.namespace");
    /// `IPAddress`.
    pub const ADDRESS: FieldPath = p("spec.address");
    pub(crate) const CLAIM_NAME: FieldPath = p("spec.claim.name");
    pub(crate) const CLAIM_NAMESPACE: FieldPath = p("spec.claim.namespace");
    /// `IPClaim`: the address the provider recorded.
    pub(crate) const STATUS_ADDRESS: FieldPath = p("status.address");
    pub(crate) const STATUS_ADDRESS_NAME: FieldPath = p("status.address.name");
}

/// Spiderpool `SpiderIPPool` (`spiderpool.spidernet.io`).
pub mod spider {
    use super::*;
    pub const SUBNET: FieldPath = p("spec.subnet");
    pub const IP_VERSION: FieldPath = p("spec.ipVersion");
    pub const IPS: FieldPath = p("spec.ips");
    pub const EXCLUDE_IPS: FieldPath = p("spec.excludeIPs");
    pub const GATEWAY: FieldPath = p("spec.gateway");
    pub(crate) const ROUTES: FieldPath = p("spec.routes");
    pub(crate) const POD_AFFINITY: FieldPath = p("spec.podAffinity");
    pub(crate) const ALLOCATED_IP_COUNT: FieldPath = p("status.allocatedIPCount");
    pub(crate) const ALLOCATED_IPS: FieldPath = p("status.allocatedIPs");
    /// In an entry of `spec.routes`.
    pub(crate) const ROUTE_DST: FieldPath = p("dst");
    pub(crate) const ROUTE_GW: FieldPath = p("gw");
}

/// CAPV `VSphereMachine` and `VSphereMachineTemplate` (`infrastructure.cluster.x-k8s.io`).
pub(crate) mod capv {
    use super::*;
    pub(crate) const NETWORK: FieldPath = p("spec.network");
    pub const DEVICES: FieldPath = p("spec.network.devices");
    /// A template nests the machine spec under `spec.template.spec`.
    pub(crate) const TEMPLATE_NETWORK: FieldPath = p("spec.template.spec.network");
    pub(crate) const TEMPLATE_DEVICES: FieldPath = p("spec.template.spec.network.devices");
    /// In a device.
    pub(crate) const ADDRESSES_FROM_POOLS: FieldPath = p("addressesFromPools");
    /// In a device: static addresses in CIDR form (SA1-SA3).
    pub(crate) const IP_ADDRS: FieldPath = p("ipAddrs");
}

/// Spiderpool `SpiderReservedIP` (`spiderpool.spidernet.io`): addresses Spiderpool never hands out.
pub(crate) mod reserved_ip {
    use super::*;
    pub const IP_VERSION: FieldPath = p("spec.ipVersion");
    pub const IPS: FieldPath = p("spec.ips");
}

/// Cluster API `Cluster` (`cluster.x-k8s.io`): the fields that hold or reserve addresses.
pub mod cluster {
    use super::*;
    pub(crate) const ENDPOINT_HOST: FieldPath = p("spec.controlPlaneEndpoint.host");
    pub(crate) const POD_CIDRS: FieldPath = p("spec.clusterNetwork.pods.cidrBlocks");
    pub(crate) const SERVICE_CIDRS: FieldPath = p("spec.clusterNetwork.services.cidrBlocks");
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map, Value};

    use super::*;
    use crate::kube_version::KubeVersion;
    use crate::schema::Schemas;

    /// Every path a reader uses, with the kinds and versions whose schema declares it, and the
    /// list it is relative to (for the "in an entry" constants).
    fn table() -> Vec<(
        &'static str,
        &'static str,
        &'static [&'static str],
        Vec<String>,
    )> {
        const CAPI: &str = "ipam.cluster.x-k8s.io";
        const CAPI_VERSIONS: &[&str] = &["v1alpha1", "v1beta1", "v1beta2"];
        const POOL_VERSIONS: &[&str] = &["v1alpha1", "v1alpha2"];
        const METAL3: &str = "ipam.metal3.io";
        const SPIDER: &str = "spiderpool.spidernet.io";
        const CAPV: &str = "infrastructure.cluster.x-k8s.io";
        const CAPV_VERSIONS: &[&str] = &["v1beta1", "v1beta2"];
        let s = |ps: &[FieldPath]| ps.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        let entry = |list: FieldPath, ps: &[FieldPath]| {
            ps.iter()
                .map(|p| format!("{list}[].{p}"))
                .collect::<Vec<_>>()
        };
        let mut rows = vec![
            (
                CAPI,
                "IPAddressClaim",
                CAPI_VERSIONS,
                s(&[
                    claim::POOL_REF,
                    claim::POOL_REF_API_GROUP,
                    claim::POOL_REF_KIND,
                    claim::POOL_REF_NAME,
                    claim::ADDRESS_REF_NAME,
                ]),
            ),
            (
                CAPI,
                "IPAddressClaim",
                &["v1beta1", "v1beta2"],
                s(&[claim::CLUSTER_NAME]),
            ),
            (
                CAPI,
                "IPAddress",
                CAPI_VERSIONS,
                s(&[
                    address::ADDRESS,
                    address::PREFIX,
                    address::GATEWAY,
                    address::CLAIM_REF,
                    address::CLAIM_REF_NAME,
                    address::POOL_REF,
                    address::POOL_REF_API_GROUP,
                    address::POOL_REF_KIND,
                    address::POOL_REF_NAME,
                ]),
            ),
            (
                METAL3,
                "IPPool",
                &["v1alpha1"],
                [
                    s(&[
                        metal3::POOLS,
                        metal3::PREFIX,
                        metal3::GATEWAY,
                        metal3::DNS_SERVERS,
                        metal3::PRE_ALLOCATIONS,
                    ]),
                    entry(
                        metal3::POOLS,
                        &[
                            metal3::ENTRY_START,
                            metal3::ENTRY_END,
                            metal3::ENTRY_SUBNET,
                            metal3::ENTRY_PREFIX,
                            metal3::ENTRY_GATEWAY,
                            metal3::ENTRY_DNS_SERVERS,
                        ],
                    ),
                ]
                .concat(),
            ),
            (
                METAL3,
                "IPClaim",
                &["v1alpha1"],
                s(&[
                    metal3::POOL_NAME,
                    metal3::POOL_NAMESPACE,
                    metal3::STATUS_ADDRESS_NAME,
                ]),
            ),
            (
                METAL3,
                "IPAddress",
                &["v1alpha1"],
                s(&[
                    metal3::ADDRESS,
                    metal3::PREFIX,
                    metal3::GATEWAY,
                    metal3::POOL_NAME,
                    metal3::POOL_NAMESPACE,
                    metal3::CLAIM_NAME,
                    metal3::CLAIM_NAMESPACE,
                ]),
            ),
            (
                SPIDER,
                "SpiderIPPool",
                &["v2beta1"],
                [
                    s(&[
                        spider::SUBNET,
                        spider::IP_VERSION,
                        spider::IPS,
                        spider::EXCLUDE_IPS,
                        spider::GATEWAY,
                        spider::ROUTES,
                        spider::POD_AFFINITY,
                        spider::ALLOCATED_IP_COUNT,
                        spider::ALLOCATED_IPS,
                    ]),
                    entry(spider::ROUTES, &[spider::ROUTE_DST, spider::ROUTE_GW]),
                    vec![format!(
                        "{}.{}",
                        spider::POD_AFFINITY,
                        selector::MATCH_LABELS
                    )],
                    entry(
                        FieldPath::new("spec.podAffinity.matchExpressions"),
                        &[selector::KEY, selector::OPERATOR, selector::VALUES],
                    ),
                ]
                .concat(),
            ),
            (
                SPIDER,
                "SpiderSubnet",
                &["v2beta1"],
                [
                    s(&[
                        spider::SUBNET,
                        spider::IP_VERSION,
                        spider::IPS,
                        spider::EXCLUDE_IPS,
                        spider::GATEWAY,
                        spider::ROUTES,
                    ]),
                    entry(spider::ROUTES, &[spider::ROUTE_DST, spider::ROUTE_GW]),
                ]
                .concat(),
            ),
            (
                SPIDER,
                "SpiderReservedIP",
                &["v2beta1"],
                s(&[reserved_ip::IP_VERSION, reserved_ip::IPS]),
            ),
            (
                CAPV,
                "VSphereMachine",
                CAPV_VERSIONS,
                [
                    s(&[capv::NETWORK, capv::DEVICES]),
                    entry(capv::DEVICES, &[capv::ADDRESSES_FROM_POOLS, capv::IP_ADDRS]),
                ]
                .concat(),
            ),
            (
                CAPV,
                "VSphereMachineTemplate",
                CAPV_VERSIONS,
                [
                    s(&[capv::TEMPLATE_NETWORK, capv::TEMPLATE_DEVICES]),
                    entry(capv::TEMPLATE_DEVICES, &[capv::ADDRESSES_FROM_POOLS]),
                ]
                .concat(),
            ),
        ];
        for kind in [
            "InClusterIPPool",
            "GlobalInClusterIPPool",
            "InClusterPrefixPool",
            "GlobalInClusterPrefixPool",
        ] {
            if kind.contains("Prefix") {
                rows.push((
                    CAPI,
                    kind,
                    &["v1alpha2"],
                    s(&[
                        prefix_pool::PREFIXES,
                        prefix_pool::EXCLUDED_PREFIXES,
                        prefix_pool::ALLOCATION_PREFIX_LENGTH,
                        prefix_pool::GATEWAY,
                    ]),
                ));
                continue;
            }
            rows.push((
                CAPI,
                kind,
                POOL_VERSIONS,
                s(&[
                    in_cluster::ADDRESSES,
                    in_cluster::GATEWAY,
                    in_cluster::PREFIX,
                ]),
            ));
            rows.push((
                CAPI,
                kind,
                &["v1alpha1"],
                s(&[in_cluster::SUBNET, in_cluster::START, in_cluster::END]),
            ));
            rows.push((
                CAPI,
                kind,
                &["v1alpha2"],
                s(&[
                    in_cluster::EXCLUDED_ADDRESSES,
                    in_cluster::ALLOCATE_RESERVED,
                    in_cluster::REUSE_GRACE,
                ]),
            ));
        }
        rows
    }

    /// An object holding a value at `path` (`[]` steps into a one-element list).
    fn object_with(path: &str) -> Value {
        let mut value = Value::String("x".into());
        for key in path.rsplit('.') {
            let (key, list) = match key.strip_suffix("[]") {
                Some(k) => (k, true),
                None => (key, false),
            };
            if list {
                value = Value::Array(vec![value]);
            }
            let mut m = Map::new();
            m.insert(key.to_string(), value);
            value = Value::Object(m);
        }
        value
    }

    #[test]
    fn every_path_is_a_field_of_its_kind() {
        let schemas = Schemas::builtin();
        let mut checked = 0;
        for (group, kind, versions, paths) in table() {
            for version in versions {
                for path in &paths {
                    let mut obj = object_with(path);
                    let o = obj.as_object_mut().unwrap();
                    o.insert("apiVersion".into(), json!(format!("{group}/{version}")));
                    o.insert("kind".into(), json!(kind));
                    o.insert("metadata".into(), json!({"name": "a", "namespace": "n"}));
                    let errors = schemas
                        .validate_as(KubeVersion::NEWEST_TESTED, group, kind, version, &obj)
                        .unwrap_or_else(|| panic!("no schema for {group}/{version} {kind}"));
                    let unknown: Vec<_> = errors
                        .iter()
                        .filter(|e| e.message.contains("unknown field"))
                        .collect();
                    assert!(
                        unknown.is_empty(),
                        "{kind} {version}: {path} is not a field: {unknown:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 60, "only {checked} paths checked");
    }

    #[test]
    fn a_misspelt_path_is_caught() {
        let obj = json!({
            "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
            "metadata": {"name": "a", "namespace": "n"},
            "spec": {"gatway": "x"},
        });
        let errors = Schemas::builtin()
            .validate("ipam.cluster.x-k8s.io", "IPAddress", "v1beta2", &obj)
            .unwrap();
        assert!(errors.iter().any(|e| e.message.contains("unknown field")));
    }

    #[test]
    fn entry_paths_name_the_entry() {
        assert_eq!(
            metal3::POOLS.entry(2, metal3::ENTRY_START),
            "spec.pools[2].start"
        );
        assert_eq!(in_cluster::ADDRESSES.index(0), "spec.addresses[0]");
        assert_eq!(
            meta::ANNOTATIONS.key("ipAddress"),
            "metadata.annotations[ipAddress]"
        );
    }
}
