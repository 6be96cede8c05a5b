//! The server's metrics, registered into the `Registry` the caller built (no globals).
//!
//! Names follow controller-runtime's webhook metrics so existing dashboards work. prometheus-client
//! appends `_total` to counters and the unit to `register_with_unit` names: register the stem.

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::admission::{Admission, Endpoint, Summary};
use crate::kinds::{Kind, CAPI_IPAM};

/// Reviews take tens of microseconds: the low buckets must resolve 50 µs.
const LATENCY_BUCKETS: [f64; 12] = [
    0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.1, 1.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ListenerLabels {
    listener: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusedLabels {
    listener: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    webhook: &'static str,
    code: u16,
}

/// Borrowed where the value is known at compile time: a lookup of an existing series then
/// allocates nothing (most reviews are allowed CAPI kinds with no rule).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    kind: Cow<'static, str>,
    operation: &'static str,
    decision: &'static str,
    rule: String,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The series every request of one webhook touches, found in their families at its first
/// request and kept: a family lookup hashes the labels (SipHash) under a lock, three of them a
/// review, 0.85k instructions. They are the families' own series,
/// so the scrape shows the same counts; a webhook nobody called still has no series.
#[derive(Debug, Default)]
struct Webhook {
    in_flight: OnceLock<Gauge>,
    /// `code="200"`, the code of every answered review; other codes go through the family.
    answered: OnceLock<Counter>,
    latency: OnceLock<Histogram>,
}

/// The `decision="allowed"` series of each served kind and operation with no rule (most
/// reviews), kept as `Webhook`'s are.
type Allowed = [[OnceLock<Counter>; 4]; Kind::ALL.len()];

#[derive(Debug)]
pub(crate) struct Metrics {
    webhooks: [Webhook; 2],
    allowed: Allowed,
    requests: Family<RequestLabels, Counter>,
    latency: Family<WebhookLabels, Histogram, fn() -> Histogram>,
    in_flight: Family<WebhookLabels, Gauge>,
    decisions: Family<DecisionLabels, Counter>,
    connections: Family<ListenerLabels, Gauge>,
    refused: Family<RefusedLabels, Counter>,
    pub(crate) tls_not_after: Gauge,
    pub(crate) tls_reload_errors: Counter,
}

impl Metrics {
    pub(crate) fn register(registry: &mut Registry, admission: &Admission) -> Metrics {
        let m = Metrics {
            webhooks: Default::default(),
            allowed: Default::default(),
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            in_flight: Family::default(),
            decisions: Family::default(),
            connections: Family::default(),
            refused: Family::default(),
            tls_not_after: Gauge::default(),
            tls_reload_errors: Counter::default(),
        };
        registry.register(
            "controller_runtime_webhook_requests",
            "Admission requests by webhook path and HTTP status code",
            m.requests.clone(),
        );
        registry.register_with_unit(
            "controller_runtime_webhook_latency",
            "Time spent answering an admission request, body read included",
            Unit::Seconds,
            m.latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Admission requests being answered now",
            m.in_flight.clone(),
        );
        registry.register(
            "ipam_guard_decisions",
            "Validation decisions, one per rule id behind a denial or warning (rule=\"\" when none)",
            m.decisions.clone(),
        );
        registry.register(
            "ipam_guard_connections",
            "Connections accepted and open now, per listener (the webhook listener holds at most 1,024; more wait in the kernel's accept queue)",
            m.connections.clone(),
        );
        registry.register(
            "ipam_guard_connections_refused",
            "Connections closed right after accept (reason=\"per_source\": the peer address already held --max-connections-per-source)",
            m.refused.clone(),
        );
        registry.register_with_unit(
            "ipam_guard_tls_certificate_not_after",
            "notAfter of the serving certificate, Unix time",
            Unit::Seconds,
            m.tls_not_after.clone(),
        );
        registry.register(
            "ipam_guard_tls_reload_errors",
            "Rotated certificate/key pairs refused (unreadable, unparsable or mismatched)",
            m.tls_reload_errors.clone(),
        );
        registry.register_collector(Box::new(ViewCollector {
            admission: admission.clone(),
        }));
        m
    }

    fn webhook(&self, endpoint: Endpoint) -> &Webhook {
        &self.webhooks[match endpoint {
            Endpoint::Validate => 0,
            Endpoint::Mutate => 1,
        }]
    }

    /// Counts a request in flight until the guard drops (also on a cancelled request future).
    pub(crate) fn in_flight(&self, endpoint: Endpoint) -> InFlight {
        let gauge = self
            .webhook(endpoint)
            .in_flight
            .get_or_init(|| {
                self.in_flight.get_or_create_owned(&WebhookLabels {
                    webhook: endpoint.path(),
                })
            })
            .clone();
        gauge.inc();
        InFlight { gauge }
    }

    /// What a listener's accept loop reports: open connections and refusals.
    pub(crate) fn listener(&self, listener: &'static str) -> ListenerMetrics {
        ListenerMetrics {
            open: self
                .connections
                .get_or_create_owned(&ListenerLabels { listener }),
            per_source_refused: self.refused.get_or_create_owned(&RefusedLabels {
                listener,
                reason: "per_source",
            }),
        }
    }

    pub(crate) fn observe(&self, endpoint: Endpoint, code: u16, elapsed: Duration) {
        let webhook = endpoint.path();
        let cached = self.webhook(endpoint);
        let count = |code| {
            self.requests
                .get_or_create_owned(&RequestLabels { webhook, code })
        };
        match code {
            200 => cached.answered.get_or_init(|| count(200)).inc(),
            other => count(other).inc(),
        };
        cached
            .latency
            .get_or_init(|| self.latency.get_or_create_owned(&WebhookLabels { webhook }))
            .observe(elapsed.as_secs_f64());
    }

    pub(crate) fn decision(&self, summary: &Summary) {
        let decision = if !summary.allowed {
            "denied"
        } else if summary.warnings > 0 {
            "warned"
        } else {
            "allowed"
        };
        let labels = |kind| DecisionLabels {
            kind,
            operation: summary.operation.as_str(),
            decision,
            rule: String::new(),
        };
        let kept = summary
            .served
            .filter(|_| decision == "allowed" && summary.rules.is_empty());
        // Looked up, not indexed: a kind added without a row here is counted the long way.
        let cell = kept.and_then(|kind| {
            let ops = self.allowed.get(kind.built_in_index()?)?;
            Some((kind, ops.get(summary.operation as usize)?))
        });
        if let Some((kind, cell)) = cell {
            let count = || {
                let labels = labels(kind_label(Some(kind), ""));
                self.decisions.get_or_create_owned(&labels)
            };
            cell.get_or_init(count).inc();
            return;
        }
        let mut labels = labels(kind_label(summary.served, &summary.kind));
        if summary.rules.is_empty() {
            self.decisions.get_or_create(&labels).inc();
        }
        for rule in &summary.rules {
            labels.rule.clone_from(rule);
            self.decisions.get_or_create(&labels).inc();
        }
    }
}

/// One listener's series, handed to its accept loop.
#[derive(Clone, Debug, Default)]
pub(crate) struct ListenerMetrics {
    pub(crate) open: Gauge,
    pub(crate) per_source_refused: Counter,
}

/// Kinds as `check` writes them, so Metal3's IPAddress does not merge with CAPI's.
fn kind_label(served: Option<Kind>, kind: &str) -> Cow<'static, str> {
    match served {
        Some(k) if k.group() == CAPI_IPAM => Cow::Borrowed(k.name()),
        Some(k) => Cow::Owned(k.display_name()),
        None => Cow::Owned(kind.to_string()),
    }
}

/// Decrements the in-flight gauge when dropped.
pub(crate) struct InFlight {
    gauge: Gauge,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

// === impl ViewCollector ===

/// Reads the view at scrape time, so the numbers are never staler than the scrape.
struct ViewCollector {
    admission: Admission,
}

impl fmt::Debug for ViewCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ViewCollector").finish_non_exhaustive()
    }
}

impl Collector for ViewCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let view = self.admission.view();
        let objects = Family::<Vec<(&'static str, String)>, Gauge>::default();
        for (kind, count) in view.object_counts() {
            objects
                .get_or_create(&vec![("kind", kind.display_name())])
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        if !objects.is_empty() {
            let metric = encoder.encode_descriptor(
                "ipam_guard_view_objects",
                "Objects held in the cluster view, by kind",
                None,
                objects.metric_type(),
            )?;
            objects.encode(metric)?;
        }
        encode_watch_health(&mut encoder, &view.watch_health())?;
        let synced = ConstGauge::new(i64::from(view.synced()));
        let metric = encoder.encode_descriptor(
            "ipam_guard_view_synced",
            "1 once the cluster view has synced every watched kind",
            None,
            synced.metric_type(),
        )?;
        synced.encode(metric)
    }
}

/// `ipam_guard_view_watch_healthy`, `ipam_guard_view_last_event_age_seconds` and
/// `ipam_guard_view_relists_total`, one series per watch (and list cause).
fn encode_watch_health(
    encoder: &mut DescriptorEncoder,
    health: &[crate::cluster::WatchHealth],
) -> Result<(), fmt::Error> {
    if health.is_empty() {
        return Ok(());
    }
    let healthy = Family::<Vec<(&'static str, String)>, Gauge>::default();
    let age =
        Family::<Vec<(&'static str, String)>, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    let lists = Family::<Vec<(&'static str, String)>, Counter>::default();
    for h in health {
        let kind = vec![("kind", h.kind.clone())];
        healthy.get_or_create(&kind).set(i64::from(h.healthy));
        if let Some(a) = h.last_event_age {
            age.get_or_create(&kind).set(a.as_secs_f64());
        }
        for (cause, n) in &h.lists {
            lists
                .get_or_create(&vec![
                    ("kind", h.kind.clone()),
                    ("cause", cause.to_string()),
                ])
                .inc_by(*n);
        }
    }
    let metric = encoder.encode_descriptor(
        "ipam_guard_view_watch_healthy",
        "1 while the watch of this kind is healthy (listed, not failed, not silent beyond its bound)",
        None,
        healthy.metric_type(),
    )?;
    healthy.encode(metric)?;
    let metric = encoder.encode_descriptor(
        "ipam_guard_view_last_event_age",
        "Time since the watch of this kind last showed life (list, watch start, event or bookmark)",
        Some(&Unit::Seconds),
        age.metric_type(),
    )?;
    age.encode(metric)?;
    let metric = encoder.encode_descriptor(
        "ipam_guard_view_relists",
        "Lists made by the watch of this kind, by cause (initial, expired = 410 Gone, error)",
        None,
        lists.metric_type(),
    )?;
    lists.encode(metric)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use prometheus_client::encoding::text::encode;

    use super::*;
    use crate::cluster::StaticView;
    use crate::rules::Options;

    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    }

    #[test]
    fn the_series_kept_per_webhook_are_the_scraped_ones() {
        let admission = Admission::new(Arc::new(StaticView::empty()), Options::default());
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry, &admission);
        let held = m.in_flight(Endpoint::Validate);
        for code in [200, 200, 400] {
            let _in_flight = m.in_flight(Endpoint::Validate);
            m.observe(Endpoint::Validate, code, Duration::from_micros(40));
        }
        m.observe(Endpoint::Mutate, 200, Duration::from_micros(40));
        let scrape = || {
            let mut text = String::new();
            encode(&mut text, &registry).unwrap();
            text
        };
        let text = scrape();
        let requests = |webhook: &str, code: u16| {
            let series = format!(
                r#"controller_runtime_webhook_requests_total{{webhook="{webhook}",code="{code}"}}"#
            );
            sample(&text, &series)
        };
        assert_eq!(requests("/validate", 200), Some(2.0), "{text}");
        assert_eq!(requests("/validate", 400), Some(1.0), "{text}");
        assert_eq!(requests("/mutate", 200), Some(1.0), "{text}");
        let latency = r#"controller_runtime_webhook_latency_seconds_count{webhook="/validate"}"#;
        assert_eq!(sample(&text, latency), Some(3.0), "{text}");
        let in_flight = r#"controller_runtime_webhook_requests_in_flight{webhook="/validate"}"#;
        assert_eq!(sample(&text, in_flight), Some(1.0), "{text}");
        drop(held);
        assert_eq!(sample(&scrape(), in_flight), Some(0.0));
    }

    fn summary(
        served: Option<Kind>,
        kind: &'static str,
        allowed: bool,
        rules: &[&str],
    ) -> Summary<'static> {
        Summary {
            uid: "u".into(),
            group: "g".into(),
            kind: kind.into(),
            served,
            namespace: None,
            name: "x".into(),
            operation: crate::model::Operation::Create,
            allowed,
            code: if allowed { 0 } else { 422 },
            rules: rules.iter().map(|r| r.to_string()).collect(),
            warnings: 0,
            patched: false,
            dry_run: false,
            user: "".into(),
            groups: Vec::new(),
        }
    }

    #[test]
    fn decisions_kept_per_kind_are_the_scraped_ones() {
        let admission = Admission::new(Arc::new(StaticView::empty()), Options::default());
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry, &admission);
        for _ in 0..2 {
            m.decision(&summary(Some(Kind::IPAddress), "IPAddress", true, &[]));
            m.decision(&summary(
                Some(Kind::Metal3IPAddress),
                "IPAddress",
                true,
                &[],
            ));
        }
        m.decision(&summary(Some(Kind::IPAddress), "IPAddress", false, &["A7"]));
        m.decision(&summary(None, "Deployment", true, &[]));
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        let decisions = |kind: &str, decision: &str, rule: &str| {
            let series = format!(
                r#"ipam_guard_decisions_total{{kind="{kind}",operation="CREATE",decision="{decision}",rule="{rule}"}}"#
            );
            sample(&text, &series)
        };
        assert_eq!(decisions("IPAddress", "allowed", ""), Some(2.0), "{text}");
        assert_eq!(
            decisions("IPAddress.ipam.metal3.io", "allowed", ""),
            Some(2.0),
            "{text}"
        );
        assert_eq!(decisions("IPAddress", "denied", "A7"), Some(1.0), "{text}");
        assert_eq!(decisions("Deployment", "allowed", ""), Some(1.0), "{text}");
    }
}
