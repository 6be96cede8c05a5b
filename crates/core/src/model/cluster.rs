//! Reader for Cluster API's `Cluster` (`cluster.x-k8s.io` v1beta1 and v1beta2, which spell these
//! fields alike): the control-plane endpoint, an address the cluster holds outside every pool,
//! and the pod and service networks, which are the cluster's own (CP1-CP5). The infrastructure
//! clusters (CAPV's `VSphereCluster`, Metal3's `Metal3Cluster`) carry the same endpoint at the
//! same path, and are read the same way.

use std::sync::Arc;

use serde_json::Value;

use crate::address::{parse_cidr, parse_ip, Cidr, Ip};
use crate::field::FieldPath;
use crate::kinds::{Kind, ADDRESS_SPACE_ANNOTATION};
use crate::model::paths::cluster as fields;
use crate::model::{read, Meta, ObjKey};

/// Annotation on an `IPAddressClaim` (or Metal3 `IPClaim`) naming the Cluster, in the claim's
/// namespace, whose control-plane endpoint the claim asks for: the address it gets is that
/// endpoint's own, not a second holder of it (CP1, CP4).
pub(crate) const ENDPOINT_CLAIM_ANNOTATION: &str = "ipam-guard.io/control-plane-endpoint-of";

/// The label Cluster API puts on the objects of a cluster, naming the Cluster.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// Which of a Cluster's own networks a CIDR block belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    Pods,
    Services,
}

impl Network {
    pub fn path(self) -> FieldPath {
        match self {
            Network::Pods => fields::POD_CIDRS,
            Network::Services => fields::SERVICE_CIDRS,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Network::Pods => "pod",
            Network::Services => "service",
        }
    }
}

/// What the index keeps of a Cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterProj {
    pub key: ObjKey,
    /// The Cluster it belongs to, in its namespace: its own name for a Cluster; for an
    /// infrastructure cluster the label `cluster.x-k8s.io/cluster-name`, else its owner of kind
    /// `Cluster`, else its own name. Endpoints of one cluster never conflict with each other.
    pub cluster: Arc<str>,
    /// The address space of the endpoint (annotation `ipam-guard.io/address-space`, else
    /// `default`).
    pub space: Arc<str>,
    /// An infrastructure cluster without its own address-space annotation: its endpoint is in
    /// the address space of its Cluster ([`crate::index::Index::space_of_cluster`]), since
    /// providers and ClusterClass topologies create it without copying the Cluster's annotations.
    pub inherits: bool,
    /// `spec.controlPlaneEndpoint.host` when it is an IP address; a host name holds none.
    pub endpoint: Option<Ip>,
    /// The pod and service CIDR blocks that parse.
    pub networks: Vec<(Network, Cidr)>,
}

impl ClusterProj {
    /// The first of the cluster's own networks holding `ip`.
    pub(crate) fn network_of(&self, ip: Ip) -> Option<(Network, Cidr)> {
        self.networks
            .iter()
            .copied()
            .find(|(_, c)| c.family() == ip.family && c.network.contains(ip.value))
    }
}

/// The endpoint host as written: its text and, when that is an IP address, the address.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Endpoint<'a> {
    pub text: &'a str,
    pub ip: Option<Ip>,
}

/// `spec.controlPlaneEndpoint.host`, when it is a non-empty string.
pub fn endpoint(obj: &Value) -> Option<Endpoint<'_>> {
    let text = read::get(obj, fields::ENDPOINT_HOST)?.as_str()?;
    (!text.is_empty()).then(|| Endpoint {
        text,
        ip: parse_ip(text).ok().map(|p| p.value),
    })
}

/// The CIDR blocks of one network that parse, each with its index in the list. Blocks that do
/// not parse are Cluster API's own webhook's to refuse.
pub fn blocks(obj: &Value, network: Network) -> Vec<(usize, Cidr)> {
    read::get(obj, network.path())
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((i, parse_cidr(b.as_str()?).ok()?.value)))
        .collect()
}

/// What the index keeps of a Cluster.
pub fn project(obj: &Value, key: ObjKey) -> ClusterProj {
    let networks = [Network::Pods, Network::Services]
        .into_iter()
        .flat_map(|n| blocks(obj, n).into_iter().map(move |(_, c)| (n, c)))
        .collect();
    let meta = Meta::read(obj);
    let owner = || {
        obj.pointer("/metadata/ownerReferences")?
            .as_array()?
            .iter()
            .find(|r| r.get("kind").and_then(Value::as_str) == Some("Cluster"))?
            .get("name")?
            .as_str()
    };
    let cluster = match key.kind {
        Kind::Cluster => None,
        _ => meta.label(CLUSTER_NAME_LABEL).or_else(owner),
    }
    .filter(|s| !s.is_empty())
    .map_or_else(|| key.name.clone(), Arc::from);
    let own_space = meta
        .annotation(ADDRESS_SPACE_ANNOTATION)
        .is_some_and(|s| !s.is_empty());
    let inherits = key.kind != Kind::Cluster && !own_space;
    ClusterProj {
        key,
        cluster,
        space: Arc::from(meta.address_space()),
        inherits,
        endpoint: endpoint(obj).and_then(|e| e.ip),
        networks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_an_ip_endpoint_and_both_networks() {
        let obj = json!({
            "metadata": {"name": "prod", "namespace": "team-a",
                         "annotations": {"ipam-guard.io/address-space": "dc1"}},
            "spec": {
                "controlPlaneEndpoint": {"host": "10.0.0.5", "port": 6443},
                "clusterNetwork": {
                    "pods": {"cidrBlocks": ["192.168.0.0/16", "nonsense"]},
                    "services": {"cidrBlocks": ["10.96.0.0/12"]}
                }
            }
        });
        let p = project(&obj, ObjKey::new(Kind::Cluster, Some("team-a"), "prod"));
        assert_eq!(&*p.space, "dc1");
        assert_eq!(p.endpoint.map(|ip| ip.to_string()), Some("10.0.0.5".into()));
        assert_eq!(p.networks.len(), 2);
        let inside = parse_ip("10.96.0.1").unwrap().value;
        assert_eq!(
            p.network_of(inside).map(|(n, _)| n),
            Some(Network::Services)
        );
    }

    #[test]
    fn a_host_name_holds_no_address() {
        let obj = json!({"metadata": {"name": "prod"},
                         "spec": {"controlPlaneEndpoint": {"host": "api.example.com"}}});
        let e = endpoint(&obj).unwrap();
        assert_eq!((e.text, e.ip), ("api.example.com", None));
        let p = project(&obj, ObjKey::new(Kind::Cluster, None, "prod"));
        assert_eq!((p.endpoint, p.networks.len()), (None, 0));
        assert_eq!(&*p.space, "default");
    }
}
