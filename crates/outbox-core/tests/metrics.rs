//! The relay's instruments, observed through a recording `metrics` recorder while real
//! relays (tokio driver, in-memory store and publisher) run scripted scenarios.
//!
//! One recorder is installed per test process; every test uses its own metrics name, so
//! the tests also hold when a runner puts several of them in one process.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use metrics_util::registry::{AtomicStorage, Registry};
use outbox_core::driver::{Relay, RelayHandle};
use outbox_core::metrics::names;
use outbox_core::testing::contract::row;
use outbox_core::testing::{MemoryPublisher, MemoryStore, Scripted, StoreOp};
use outbox_core::{LeaseRequest, OutboxStore, RelayOptions, StoreError, Timestamp};

/// Records into atomics and reads them without resetting, so concurrent tests in one
/// process never disturb each other's readings.
#[derive(Clone)]
struct TestRecorder(Arc<Registry<Key, AtomicStorage>>);

impl Recorder for TestRecorder {
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

fn recorder() -> &'static TestRecorder {
    static RECORDER: OnceLock<TestRecorder> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let recorder = TestRecorder(Arc::new(Registry::atomic()));
        metrics::set_global_recorder(recorder.clone()).unwrap();
        recorder
    })
}

#[derive(Debug, Default)]
struct Observed {
    counters: HashMap<String, u64>,
    gauges: HashMap<String, f64>,
    histograms: HashMap<String, usize>,
}

/// Current totals of `name`'s instruments. A label other than `outbox.name` would be a
/// bug: checked here.
fn observe(name: &str) -> Observed {
    let registry = &recorder().0;
    let mut observed = Observed::default();
    let mine = |key: &Key| {
        let labels: Vec<_> = key.labels().collect();
        let matches = labels
            .iter()
            .any(|l| l.key() == names::LABEL && l.value() == name);
        if matches {
            assert_eq!(labels.len(), 1, "exactly one label on {}", key.name());
        }
        matches
    };
    for (key, counter) in registry.get_counter_handles() {
        if mine(&key) {
            observed
                .counters
                .insert(key.name().to_owned(), counter.load(Ordering::Acquire));
        }
    }
    for (key, gauge) in registry.get_gauge_handles() {
        if mine(&key) {
            observed.gauges.insert(
                key.name().to_owned(),
                f64::from_bits(gauge.load(Ordering::Acquire)),
            );
        }
    }
    for (key, histogram) in registry.get_histogram_handles() {
        if mine(&key) {
            observed
                .histograms
                .insert(key.name().to_owned(), histogram.data().len());
        }
    }
    observed
}

fn options(name: &str) -> outbox_core::RelayOptionsBuilder {
    recorder();
    RelayOptions::builder()
        .metrics_name(name)
        .poll_interval(Duration::from_millis(100))
        .lease_duration(Duration::from_secs(3))
        .lease_renew_interval(Duration::from_secs(1))
        .error_backoff(Duration::from_millis(50))
        .max_error_backoff(Duration::from_millis(200))
}

async fn eventually(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..500 {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

async fn stop(relay: RelayHandle) {
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_successful_batch() {
    let name = "m-success";
    let (store, publisher) = (MemoryStore::new(), MemoryPublisher::new());
    store.enqueue_all([row(3, 0), row(3, 1), row(3, 2)]);
    let relay = Relay::spawn(
        store.clone(),
        publisher.clone(),
        options(name).build().unwrap(),
    )
    .unwrap();
    assert!(eventually(|| store.pending_count() == 0).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let o = observe(name);
    assert_eq!(o.counters.get(names::PUBLISH_ACKNOWLEDGED), Some(&3));
    assert_eq!(
        o.counters
            .get(names::PUBLISH_FAILURES)
            .copied()
            .unwrap_or(0),
        0
    );
    assert_eq!(
        o.histograms.get(names::PUBLISH_DURATION),
        Some(&1),
        "one record per call, not per message"
    );
    assert!(
        o.histograms
            .get(names::CYCLE_DURATION)
            .copied()
            .unwrap_or(0)
            >= 1
    );
    assert_eq!(o.gauges.get(names::OWNED_BUCKETS), Some(&8.0));
    stop(relay).await;
    let after = observe(name);
    assert_eq!(
        after.gauges.get(names::OWNED_BUCKETS),
        Some(&0.0),
        "a stopped relay withdraws its buckets"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_publish_counts_once_and_acknowledgements_count_attempts() {
    let name = "m-failure";
    let (store, publisher) = (MemoryStore::new(), MemoryPublisher::new());
    publisher.script([Scripted::AckPrefix {
        acknowledged: 1,
        permanent: false,
    }]);
    store.enqueue_all([row(1, 0), row(1, 1), row(1, 2)]);
    let relay = Relay::spawn(
        store.clone(),
        publisher.clone(),
        options(name).build().unwrap(),
    )
    .unwrap();
    assert!(eventually(|| store.pending_count() == 0).await);
    let o = observe(name);
    assert_eq!(o.counters.get(names::PUBLISH_FAILURES), Some(&1));
    assert_eq!(
        o.counters.get(names::PUBLISH_ACKNOWLEDGED),
        Some(&3),
        "1 in the failed call, 2 in the retry"
    );
    assert_eq!(
        o.histograms.get(names::PUBLISH_DURATION),
        Some(&2),
        "failed calls are timed too"
    );
    stop(relay).await;
}

#[tokio::test(start_paused = true)]
async fn a_lease_expiry_is_counted_once() {
    let name = "m-expiry";
    let store = MemoryStore::new();
    let relay = Relay::spawn(
        store.clone(),
        MemoryPublisher::new(),
        options(name).build().unwrap(),
    )
    .unwrap();
    assert!(eventually(|| store.leases().iter().filter(|l| l.1.is_some()).count() == 8).await);
    // The database becomes unreachable: leases run out while acquisitions fail.
    store.set_fault_hook(Box::new(|_| Some(StoreError::unavailable("database down"))));
    tokio::time::sleep(Duration::from_secs(4)).await;
    let o = observe(name);
    assert_eq!(o.counters.get(names::LEASE_EXPIRATIONS), Some(&1));
    assert_eq!(o.gauges.get(names::OWNED_BUCKETS), Some(&0.0));
    store.clear_fault_hook();
    stop(relay).await;
}

#[tokio::test(start_paused = true)]
async fn backlog_samples_and_their_failures() {
    let name = "m-backlog";
    let store = MemoryStore::new();
    // Rows in a bucket nobody publishes quickly: a publisher that never returns.
    let publisher = Stuck;
    let created = Timestamp::now().saturating_sub(Duration::from_secs(60));
    let mut old = row(2, 0);
    old.created_at = created;
    let mut young = row(2, 1);
    young.created_at = Timestamp::now();
    store.enqueue_all([old, young]);
    let opts = options(name)
        .backlog_sampling(true)
        .metrics_collection_interval(Duration::from_millis(100))
        .metrics_collection_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let relay = Relay::spawn(store.clone(), publisher, opts).unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let o = observe(name);
    assert_eq!(o.gauges.get(names::PENDING_AVAILABLE), Some(&1.0));
    assert_eq!(o.gauges.get(names::PENDING_MESSAGES), Some(&2.0));
    let age = o.gauges.get(names::PENDING_OLDEST_AGE).copied().unwrap();
    assert!(
        (59.0..120.0).contains(&age),
        "age of the oldest row, got {age}"
    );
    store.set_fault_hook(Box::new(|op| {
        (op == StoreOp::PendingMetrics).then(|| StoreError::unavailable("timeout"))
    }));
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let o = observe(name);
    assert_eq!(
        o.gauges.get(names::PENDING_AVAILABLE),
        Some(&0.0),
        "a failed sample clears the snapshot"
    );
    assert!(
        o.gauges.get(names::PENDING_MESSAGES).unwrap().is_nan(),
        "count omitted, not zero"
    );
    assert!(
        o.gauges.get(names::PENDING_OLDEST_AGE).unwrap().is_nan(),
        "age omitted, not zero"
    );
    store.clear_fault_hook();
    relay.stop(Duration::from_millis(100)).await.unwrap();
}

// Paused time: the other relay hands its leases back (a stored wall-clock expiry would
// need the wall clock to run, and tokio's paused clock moves the monotonic side alone).
#[tokio::test(start_paused = true)]
async fn bucket_zero_sampling_follows_the_lease() {
    let name = "m-bucket-zero";
    let store = MemoryStore::new();
    // Another relay ("zzz", ranked last) holds every bucket, then stops.
    let other = LeaseRequest {
        relay_id: "zzz",
        bucket_count: 2,
        lease_duration: Duration::from_secs(30),
        now: Timestamp::now(),
        busy: &[],
    };
    assert_eq!(store.acquire_leases(&other).await.unwrap().held, vec![0, 1]);
    let opts = options(name)
        .schema(
            outbox_core::OutboxSchema::builder()
                .bucket_count(2)
                .build()
                .unwrap(),
        )
        .backlog_sampling(true)
        .collect_metrics_on_bucket_zero_owner_only(true)
        .metrics_collection_interval(Duration::from_millis(100))
        .metrics_collection_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let relay = Relay::spawn(store.clone(), MemoryPublisher::new(), opts).unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let before = observe(name);
    assert_eq!(
        before.gauges.get(names::PENDING_AVAILABLE),
        Some(&0.0),
        "not the bucket-zero owner: no sample"
    );
    // The other relay stops and hands its leases back; ours takes bucket 0 over at its
    // next acquisition and starts sampling.
    store.release_leases("zzz").await.unwrap();
    assert!(
        eventually(|| store
            .leases()
            .iter()
            .any(|l| l.0 == 0 && l.1.as_deref() == Some(relay.relay_id())))
        .await
    );
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let after = observe(name);
    assert_eq!(after.gauges.get(names::PENDING_AVAILABLE), Some(&1.0));
    assert_eq!(after.gauges.get(names::PENDING_MESSAGES), Some(&0.0));
    assert_eq!(
        after.gauges.get(names::PENDING_OLDEST_AGE),
        Some(&0.0),
        "a known empty backlog has age 0"
    );
    stop(relay).await;
}

#[tokio::test(start_paused = true)]
async fn two_relays_with_one_name_sum_their_buckets() {
    let name = "m-two";
    let store = MemoryStore::new();
    let a = Relay::spawn(
        store.clone(),
        MemoryPublisher::new(),
        options(name).relay_id("m-two-a").build().unwrap(),
    )
    .unwrap();
    let b = Relay::spawn(
        store.clone(),
        MemoryPublisher::new(),
        options(name).relay_id("m-two-b").build().unwrap(),
    )
    .unwrap();
    let split = || {
        let leases = store.leases();
        let of = |id: &str| leases.iter().filter(|l| l.1.as_deref() == Some(id)).count();
        of(a.relay_id()) == 4 && of(b.relay_id()) == 4
    };
    assert!(eventually(split).await, "the relays split the buckets");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let o = observe(name);
    assert_eq!(
        o.gauges.get(names::OWNED_BUCKETS),
        Some(&8.0),
        "4 + 4, summed per name"
    );
    stop(a).await;
    stop(b).await;
}

/// A publisher whose calls never finish.
struct Stuck;

impl outbox_core::Publisher for Stuck {
    async fn publish(&self, _: &[outbox_core::OutboxMessage]) -> outbox_core::PublishOutcome {
        std::future::pending().await
    }
}

/// The in-memory store behind a slow link for lease calls only: each acquisition and
/// renewal is answered `latency` after it was sent (on tokio's paused clock).
#[derive(Clone)]
struct SlowLeaseCalls {
    inner: MemoryStore,
    latency: Duration,
}

impl OutboxStore for SlowLeaseCalls {
    fn capabilities(&self) -> outbox_core::StoreCapabilities {
        self.inner.capabilities()
    }

    async fn acquire_leases(
        &self,
        request: &LeaseRequest<'_>,
    ) -> Result<outbox_core::Acquired, StoreError> {
        tokio::time::sleep(self.latency).await;
        self.inner.acquire_leases(request).await
    }

    async fn buckets_with_pending(
        &self,
        owned: &[i32],
        bucket_count: u32,
    ) -> Result<Vec<i32>, StoreError> {
        self.inner.buckets_with_pending(owned, bucket_count).await
    }

    async fn next_batch(
        &self,
        bucket: i32,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<outbox_core::OutboxMessage>, StoreError> {
        self.inner.next_batch(bucket, after, limit).await
    }

    async fn delete_published(
        &self,
        bucket: i32,
        published: &[outbox_core::OutboxMessage],
    ) -> Result<(), StoreError> {
        self.inner.delete_published(bucket, published).await
    }

    async fn renew_leases(
        &self,
        request: &LeaseRequest<'_>,
        buckets: &[i32],
    ) -> Result<outbox_core::RenewOutcome, StoreError> {
        tokio::time::sleep(self.latency).await;
        self.inner.renew_leases(request, buckets).await
    }

    async fn release_leases(&self, relay_id: &str) -> Result<(), StoreError> {
        self.inner.release_leases(relay_id).await
    }

    async fn park_rows(
        &self,
        request: &outbox_core::park::ParkRequest<'_>,
    ) -> Result<outbox_core::park::ParkOutcome, StoreError> {
        self.inner.park_rows(request).await
    }

    async fn parked_holds(
        &self,
        bucket: i32,
    ) -> Result<Vec<(Option<outbox_core::park::HoldKey>, i64)>, StoreError> {
        self.inner.parked_holds(bucket).await
    }

    async fn pending_metrics(&self) -> Result<Option<outbox_core::PendingMetrics>, StoreError> {
        self.inner.pending_metrics().await
    }
}

/// Enqueues rows at a steady pace for `for_how_long` while the relay runs on `store`.
async fn feed_rows(store: &MemoryStore, for_how_long: Duration) -> usize {
    let mut fed = 0;
    let start = tokio::time::Instant::now();
    while start.elapsed() < for_how_long {
        store.enqueue(row((fed % 8) as i32, fed as u64));
        fed += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    fed
}

#[tokio::test(start_paused = true)]
async fn lease_calls_slower_than_the_renew_interval_allows_keep_the_leases() {
    // Lease 3 s, renewal every 2 s, every lease call answered after 1.2 s: a renewal
    // started on the interval would land at 3.2 s, after the lease it renews. Started
    // against the deadline (minus 1.5 × the observed call time) it lands in time.
    let name = "m-slow-lease-calls";
    let store = MemoryStore::new();
    let slow = SlowLeaseCalls {
        inner: store.clone(),
        latency: Duration::from_millis(1_200),
    };
    let relay = Relay::spawn(
        slow,
        MemoryPublisher::new(),
        options(name)
            .lease_renew_interval(Duration::from_secs(2))
            .build()
            .unwrap(),
    )
    .unwrap();
    let fed = feed_rows(&store, Duration::from_secs(30)).await;
    let drained = eventually(|| store.pending_count() == 0).await;
    assert!(drained);
    assert_eq!(store.deleted_ids().len(), fed, "every row published");
    let o = observe(name);
    assert_eq!(
        o.counters.get(names::LEASE_EXPIRATIONS),
        Some(&0),
        "no lease ran out"
    );
    assert_eq!(o.counters.get(names::LEASE_SLOW_CALLS), Some(&0));
    assert_eq!(o.gauges.get(names::OWNED_BUCKETS), Some(&8.0));
    stop(relay).await;
}

#[tokio::test(start_paused = true)]
async fn lease_calls_of_half_the_lease_are_counted_as_slow() {
    let name = "m-slow-lease-half";
    let store = MemoryStore::new();
    let slow = SlowLeaseCalls {
        inner: store.clone(),
        latency: Duration::from_millis(1_600),
    };
    let relay = Relay::spawn(slow, MemoryPublisher::new(), options(name).build().unwrap()).unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let o = observe(name);
    let slow_calls = o
        .counters
        .get(names::LEASE_SLOW_CALLS)
        .copied()
        .unwrap_or(0);
    assert!(slow_calls >= 3, "every lease call is slow: {slow_calls}");
    stop(relay).await;
}
