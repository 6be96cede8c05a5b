//! `ipam_guard_pool_addresses{kind,namespace,pool,state="allocatable|used"}`: how full each pool
//! is, read from the view at scrape time (`Index::pool_usage`, no API calls).
//!
//! Cardinality: two series per pool. With `--pool-metrics=all` (the default) every pool is
//! exported while there are at most `POOL_SERIES_LIMIT` of them; beyond that only the
//! `POOL_SERIES_LIMIT` fullest (by share used) are, and `ipam_guard_pool_metrics_omitted` says how
//! many were left out, so a dashboard can tell "not exported" from "not there". A pool that drops
//! out of the fullest set stops being exported until it is among them again.
//! `--pool-metrics=none` exports neither metric.

use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::cluster::ClusterView;
use crate::index::usage::PoolUsage;

/// At most this many pools are exported (two series each).
pub const POOL_SERIES_LIMIT: usize = 5_000;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    kind: String,
    /// Empty for cluster-scoped pools.
    namespace: String,
    pool: String,
    state: &'static str,
}

/// Registers the pool usage collector, exporting at most `limit` pools (the fullest).
pub fn register(registry: &mut Registry, view: Arc<dyn ClusterView>, limit: usize) {
    registry.register_collector(Box::new(PoolCollector { view, limit }));
}

struct PoolCollector {
    view: Arc<dyn ClusterView>,
    limit: usize,
}

impl fmt::Debug for PoolCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCollector")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl Collector for PoolCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        // Computed under the view's read lock, encoded after it is released.
        let usage = self.view.read().pool_usage();
        let kept = usage.len().min(self.limit);
        let mut family = encoder.encode_descriptor(
            "ipam_guard_pool_addresses",
            "Addresses of each pool: allocatable (declared - excluded - gateway - reserved) and used (held by an address object or recorded in the pool's status)",
            None,
            MetricType::Gauge,
        )?;
        // `usage` comes fullest first: the cut keeps the pools closest to running out.
        let (prefixes, addresses): (Vec<&PoolUsage>, Vec<&PoolUsage>) =
            usage[..kept].iter().partition(|u| u.sub_prefix.is_some());
        for u in addresses {
            encode_pool(&mut family, u)?;
        }
        // Prefix pools count sub-prefixes: a series of their own, so no sum over
        // ipam_guard_pool_addresses adds prefixes to addresses.
        let mut family = encoder.encode_descriptor(
            "ipam_guard_pool_prefixes",
            "Sub-prefixes of each prefix pool (InClusterPrefixPool, GlobalInClusterPrefixPool): allocatable (whole sub-prefixes of spec.prefixes less exclusions) and used (held by an IPAddress)",
            None,
            MetricType::Gauge,
        )?;
        for u in prefixes {
            encode_pool(&mut family, u)?;
        }
        let omitted = ConstGauge::new((usage.len() - kept) as i64);
        let metric = encoder.encode_descriptor(
            "ipam_guard_pool_metrics_omitted",
            "Pools left out of ipam_guard_pool_addresses by its cap on series (the fullest are kept)",
            None,
            omitted.metric_type(),
        )?;
        omitted.encode(metric)
    }
}

/// Two series of one pool: allocatable and used.
fn encode_pool(family: &mut MetricEncoder, u: &PoolUsage) -> Result<(), fmt::Error> {
    for (state, value) in [("allocatable", u.allocatable), ("used", u.used)] {
        let labels = PoolLabels {
            kind: u.key.kind.display_name(),
            namespace: u.key.namespace.as_deref().unwrap_or_default().to_string(),
            pool: u.key.name.to_string(),
            state,
        };
        // A float: a /64 holds 2^64 addresses, beyond any integer gauge.
        ConstGauge::new(value as f64).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Ledger;
    use crate::index::Index;
    use crate::kinds::Kind;
    use crate::model::project;
    use serde_json::json;

    fn view() -> Arc<dyn ClusterView> {
        let mut index = Index::new();
        let pool = |name: &str, addresses: serde_json::Value, prefix: u8| {
            json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"addresses": addresses, "prefix": prefix}})
        };
        for o in [
            pool("big", json!(["2001:db8::/64"]), 64),
            pool("small", json!(["10.0.0.10-10.0.0.13"]), 24),
            pool("half", json!(["10.0.1.10-10.0.1.11"]), 24),
        ] {
            index.upsert(project(Kind::InClusterIPPool, &o).unwrap());
        }
        let global = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
            "metadata": {"name": "g"}, "spec": {"addresses": ["10.9.0.1"], "prefix": 24}});
        index.upsert(project(Kind::GlobalInClusterIPPool, &global).unwrap());
        let address = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"address": "10.0.1.10", "prefix": 24, "claimRef": {"name": "a"},
                "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "half"}}});
        index.upsert(project(Kind::IPAddress, &address).unwrap());
        Arc::new(Ledger::new(index))
    }

    fn scrape(limit: usize) -> String {
        let mut registry = Registry::default();
        register(&mut registry, view(), limit);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    }

    #[test]
    fn every_pool_has_allocatable_and_used_series() {
        let text = scrape(POOL_SERIES_LIMIT);
        for line in [
            r#"ipam_guard_pool_addresses{kind="InClusterIPPool",namespace="ns",pool="half",state="allocatable"} 2.0"#,
            r#"ipam_guard_pool_addresses{kind="InClusterIPPool",namespace="ns",pool="half",state="used"} 1.0"#,
            r#"ipam_guard_pool_addresses{kind="InClusterIPPool",namespace="ns",pool="small",state="allocatable"} 4.0"#,
            r#"ipam_guard_pool_addresses{kind="InClusterIPPool",namespace="ns",pool="small",state="used"} 0.0"#,
            r#"ipam_guard_pool_addresses{kind="GlobalInClusterIPPool",namespace="",pool="g",state="allocatable"} 1.0"#,
            "ipam_guard_pool_metrics_omitted 0",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        // A /64: 2^64 less the subnet-router anycast address, as a float.
        let big = text
            .lines()
            .find_map(|l| {
                l.strip_prefix(r#"ipam_guard_pool_addresses{kind="InClusterIPPool",namespace="ns",pool="big",state="allocatable"} "#)
            })
            .expect("the /64 pool is exported");
        assert_eq!(big.parse::<f64>().unwrap(), ((1u128 << 64) - 1) as f64);
    }

    #[test]
    fn past_the_limit_only_the_fullest_pools_are_exported_and_the_rest_counted() {
        let text = scrape(2);
        let pools: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("ipam_guard_pool_addresses{") && l.contains("allocatable"))
            .map(|l| {
                l.split("pool=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
            })
            .collect();
        // half is 50% used; then the empty ones with the fewest free addresses: g (1 free).
        assert_eq!(pools, ["half", "g"], "{text}");
        assert!(text.contains("ipam_guard_pool_metrics_omitted 2"), "{text}");
    }

    #[test]
    fn prefix_pools_are_counted_in_sub_prefixes_under_their_own_name() {
        let mut index = Index::new();
        let pool = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterPrefixPool",
            "metadata": {"name": "v6"}, "spec": {"prefixes": ["fd00::/62"], "allocationPrefixLength": 64}});
        index.upsert(project(Kind::GlobalInClusterPrefixPool, &pool).unwrap());
        let address = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"address": "fd00:0:0:2::", "prefix": 64, "claimRef": {"name": "a"},
                "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "GlobalInClusterPrefixPool", "name": "v6"}}});
        index.upsert(project(Kind::IPAddress, &address).unwrap());
        let mut registry = Registry::default();
        register(
            &mut registry,
            Arc::new(Ledger::new(index)),
            POOL_SERIES_LIMIT,
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            r#"ipam_guard_pool_prefixes{kind="GlobalInClusterPrefixPool",namespace="",pool="v6",state="allocatable"} 4.0"#,
            r#"ipam_guard_pool_prefixes{kind="GlobalInClusterPrefixPool",namespace="",pool="v6",state="used"} 1.0"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(!text.contains("ipam_guard_pool_addresses{"), "{text}");
    }
}
