//! The decider's metrics, registered into the caller's `Registry` (no globals).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// A forwarded decision costs a loopback or pod-network round trip: 50 µs to the 2 s budget.
const FORWARD_BUCKETS: [f64; 13] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.1, 0.5, 1.0, 2.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ForwardLabels {
    /// `ok` (the decider answered), `unavailable` (it answered that it cannot decide now),
    /// `no_decider` (none known), `error` (connection or protocol failure), `timeout`.
    pub(crate) result: &'static str,
}

/// Cheap to clone: every field is a shared handle.
#[derive(Clone, Debug)]
pub(crate) struct DeciderMetrics {
    pub(crate) is_leader: Gauge,
    pub(crate) forwards: Family<ForwardLabels, Counter>,
    pub(crate) forward_duration: Histogram,
    pub(crate) takeovers: Counter,
}

impl DeciderMetrics {
    pub(crate) fn new() -> Self {
        DeciderMetrics {
            is_leader: Gauge::default(),
            forwards: Family::default(),
            forward_duration: Histogram::new(FORWARD_BUCKETS),
            takeovers: Counter::default(),
        }
    }

    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "ipam_guard_decider_is_leader",
            "1 while this replica holds the decider lease (X2)",
            self.is_leader.clone(),
        );
        registry.register(
            "ipam_guard_decider_forwards",
            "Decisions sent to the decider, by result",
            self.forwards.clone(),
        );
        registry.register_with_unit(
            "ipam_guard_decider_forward_duration",
            "Time from sending a decision to the decider until its answer",
            Unit::Seconds,
            self.forward_duration.clone(),
        );
        registry.register(
            "ipam_guard_decider_takeovers",
            "Times this replica took the decider lease over from another holder",
            self.takeovers.clone(),
        );
    }

    pub(crate) fn forwarded(&self, result: &'static str) {
        self.forwards.get_or_create(&ForwardLabels { result }).inc();
    }
}
