use std::sync::Arc;
use std::sync::atomic::Ordering;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString};
use metrics_util::registry::{AtomicStorage, Registry};

use super::*;
use crate::store::PendingMetrics;

/// Reads values without resetting them.
struct Reading(Arc<Registry<Key, AtomicStorage>>);

impl Recorder for Reading {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        self.0
            .get_or_create_counter(key, |c| Counter::from_arc(Arc::clone(c)))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        self.0
            .get_or_create_gauge(key, |g| Gauge::from_arc(Arc::clone(g)))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        self.0
            .get_or_create_histogram(key, |h| Histogram::from_arc(Arc::clone(h)))
    }
}

fn gauge(reading: &Reading, name: &str, label: &str) -> f64 {
    let key = Key::from_parts(
        name.to_owned(),
        vec![Label::new(names::LABEL, label.to_owned())],
    );
    reading
        .0
        .get_gauge_handles()
        .get(&key)
        .map_or(f64::NAN, |g| f64::from_bits(g.load(Ordering::Acquire)))
}

#[test]
fn relays_sharing_a_name_sum_buckets_and_take_the_backlog_maximum() {
    let reading = Reading(Arc::new(Registry::atomic()));
    let now = Timestamp::from_millis(100_000);
    metrics::with_local_recorder(&reading, || {
        let a = RelayMetrics::new("agg", "relay-a");
        let b = RelayMetrics::new("agg", "relay-b");
        a.on_event(&RelayEvent::OwnershipChanged {
            owned: vec![0, 1, 2],
        });
        b.on_event(&RelayEvent::OwnershipChanged { owned: vec![3] });
        assert_eq!(gauge(&reading, names::OWNED_BUCKETS, "agg"), 4.0);

        let sample = |count, oldest_ms| {
            BacklogSnapshot::Available(PendingMetrics {
                count,
                oldest_created_at: Some(Timestamp::from_millis(oldest_ms)),
                parked_count: None,
                oldest_parked_at: None,
            })
        };
        a.set_backlog(sample(10, 90_000), now);
        b.set_backlog(sample(12, 95_000), now);
        assert_eq!(
            gauge(&reading, names::PENDING_MESSAGES, "agg"),
            12.0,
            "maximum, not sum"
        );
        assert_eq!(
            gauge(&reading, names::PENDING_OLDEST_AGE, "agg"),
            10.0,
            "oldest row over both samples"
        );
        assert_eq!(gauge(&reading, names::PENDING_AVAILABLE, "agg"), 1.0);

        b.set_backlog(BacklogSnapshot::Unavailable, now);
        assert_eq!(
            gauge(&reading, names::PENDING_MESSAGES, "agg"),
            10.0,
            "a failed sample drops out"
        );
        a.set_backlog(BacklogSnapshot::Unavailable, now);
        assert_eq!(gauge(&reading, names::PENDING_AVAILABLE, "agg"), 0.0);
        assert!(
            gauge(&reading, names::PENDING_MESSAGES, "agg").is_nan(),
            "no sample: NaN, not zero"
        );

        a.set_backlog(
            BacklogSnapshot::Available(PendingMetrics {
                count: 5,
                oldest_created_at: None,
                parked_count: None,
                oldest_parked_at: None,
            }),
            now,
        );
        assert_eq!(gauge(&reading, names::PENDING_MESSAGES, "agg"), 5.0);
        assert!(
            gauge(&reading, names::PENDING_OLDEST_AGE, "agg").is_nan(),
            "count without timestamps: no age"
        );

        drop(a);
        assert_eq!(
            gauge(&reading, names::OWNED_BUCKETS, "agg"),
            1.0,
            "a stopped relay withdraws its buckets"
        );
        assert_eq!(
            gauge(&reading, names::PENDING_AVAILABLE, "agg"),
            0.0,
            "and its sample"
        );
        drop(b);
        assert_eq!(gauge(&reading, names::OWNED_BUCKETS, "agg"), 0.0);
    });
}
