//! A Prometheus exporter set up for the relay's instruments (feature `prometheus`).
//!
//! [`builder`] returns a `metrics-exporter-prometheus` builder with Prometheus naming
//! (`outbox.publish.duration` becomes `outbox_publish_duration_seconds`, counters get
//! `_total`) and real histogram buckets for the two duration histograms, so that the
//! alert rules in `docs/metrics.md` work as written. Serve
//! [`PrometheusHandle::render`](metrics_exporter_prometheus::PrometheusHandle::render)
//! on `/metrics` with any HTTP server.

use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder};

use super::names;

/// Bucket bounds (seconds) for publish and cycle durations: from a millisecond to two
/// minutes, the range between a local broker and a struggling cluster.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 120.0,
];

/// An exporter builder with the naming and buckets the documentation assumes.
pub fn builder() -> Result<PrometheusBuilder, BuildError> {
    PrometheusBuilder::new()
        .with_recommended_naming(true)
        .set_buckets_for_metric(
            Matcher::Full(names::PUBLISH_DURATION.to_owned()),
            &DURATION_BUCKETS,
        )?
        .set_buckets_for_metric(
            Matcher::Full(names::CYCLE_DURATION.to_owned()),
            &DURATION_BUCKETS,
        )
}
