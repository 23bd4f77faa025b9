//! The workers and the relay registration against the in-process `MemoryBus`, whose
//! faults can be injected exactly; the same scenarios then run on the real services in
//! `postgres.rs` and `redis.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{LONG_POLL, await_subscribed, options, record, scenarios, wait_until};
use outbox_core::CommitNotifier;
use outbox_core::driver::LocalNotifier;
use outbox_core::testing::contract::row;
use outbox_core::testing::{MemoryPublisher, MemoryStore};
use outbox_notify::testing::MemoryBus;
use outbox_notify::{
    Backoff, NoRuntime, NotificationTransport, TransportError, spawn_relay_with_transport,
    spawn_workers,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_in_one_relay_wakes_the_owner_in_another() {
    let bus = MemoryBus::new();
    let latencies = scenarios::commit_in_a_wakes_owner_b(|| bus.transport()).await;
    eprintln!("wake-up latencies: {latencies:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_foreign_and_unknown_hints() {
    let bus = MemoryBus::new();
    scenarios::duplicate_foreign_and_unknown_hints(|| bus.transport()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn received_hints_are_not_rebroadcast() {
    let bus = MemoryBus::new();
    scenarios::received_hints_are_not_rebroadcast(|| bus.transport()).await;
}

/// The bus with a round trip per send, as any network service has: an instant send
/// would let the sender spin beside the committers, which measures the scheduler rather
/// than the coalescing.
struct WithRoundTrip(outbox_notify::testing::MemoryTransport);

impl NotificationTransport for WithRoundTrip {
    async fn publish(&self, buckets: &[i32]) -> Result<(), TransportError> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        self.0.publish(buckets).await
    }

    async fn listen(&self, on_hint: &(dyn Fn(i32) + Send + Sync)) -> Result<(), TransportError> {
        self.0.listen(on_hint).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_commits_is_coalesced() {
    let bus = MemoryBus::new();
    let sends = scenarios::burst_is_coalesced(|| WithRoundTrip(bus.transport())).await;
    eprintln!("10,000 commits, {sends} sends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_listen_waits_for_running_callbacks() {
    let bus = MemoryBus::new();
    scenarios::cancel_while_callbacks_run(|| bus.transport()).await;
    assert_eq!(bus.subscriptions(), 0, "the subscription was released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_round_trip() {
    let bus = MemoryBus::new();
    scenarios::payloads_round_trip(|| bus.transport(), async |raw: &str| bus.send_raw(raw)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_relay_stops_the_workers() {
    let bus = MemoryBus::new();
    scenarios::stopping_the_relay_stops_the_workers(bus.transport(), 1, async || {
        bus.subscriptions()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_send_drops_its_batch_and_backs_off() {
    let bus = MemoryBus::new();
    let (received, observing) = record(Arc::new(bus.transport()));
    await_subscribed(&bus.transport(), &received, 7).await;
    received.clear();

    let notifier = Arc::new(LocalNotifier::new(8));
    let backoff = Backoff::new(Duration::from_millis(300), Duration::from_millis(300)).unwrap();
    let workers = spawn_workers(Arc::new(bus.transport()), Arc::clone(&notifier), backoff).unwrap();
    let before = bus.publish_calls();
    bus.fail_next_publishes(1);
    notifier.notify_buckets(&[1]);
    assert!(wait_until(Duration::from_secs(5), || bus.publish_calls() == before + 1).await);
    let failed_at = Instant::now();
    // Committed during the backoff: coalesces into the next batch.
    notifier.notify_buckets(&[2]);
    notifier.notify_buckets(&[2]);
    assert!(wait_until(Duration::from_secs(5), || received.ids().contains(&2)).await);
    assert!(
        failed_at.elapsed() >= Duration::from_millis(250),
        "the next send did not wait for the backoff"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        received.ids(),
        vec![2],
        "the failed batch was dropped, not retried"
    );
    assert_eq!(bus.publish_calls(), before + 2);
    workers.abort();
    observing.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_closed_subscription_is_restarted() {
    let bus = MemoryBus::new();
    bus.fail_next_listens(2);
    let store = MemoryStore::new();
    let published = MemoryPublisher::new();
    let relay = spawn_relay_with_transport(
        store.clone(),
        published.clone(),
        options("restart", LONG_POLL),
        bus.transport(),
    )
    .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || {
            bus.listen_calls() == 3 && bus.subscriptions() == 1 && relay.is_ready()
        })
        .await,
        "two failed subscriptions, then a live one"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.enqueue(row(3, 0));
    bus.send_raw("3");
    assert!(wait_until(Duration::from_secs(5), || published.records().len() == 1).await);

    bus.disconnect_all();
    assert!(
        wait_until(Duration::from_secs(10), || {
            bus.listen_calls() == 4 && bus.subscriptions() == 1
        })
        .await,
        "a closed subscription is opened again"
    );
    store.enqueue(row(5, 0));
    bus.send_raw("5");
    assert!(wait_until(Duration::from_secs(5), || published.records().len() == 2).await);
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

/// A transport whose subscription ends at once, as a broken adapter's might.
struct EndsAtOnce(Arc<AtomicUsize>);

impl NotificationTransport for EndsAtOnce {
    async fn publish(&self, _buckets: &[i32]) -> Result<(), TransportError> {
        Ok(())
    }

    async fn listen(&self, _on_hint: &(dyn Fn(i32) + Send + Sync)) -> Result<(), TransportError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_that_ends_is_restarted_after_a_backoff() {
    let calls = Arc::new(AtomicUsize::new(0));
    let backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(400)).unwrap();
    let notifier = Arc::new(LocalNotifier::new(8));
    let workers =
        spawn_workers(Arc::new(EndsAtOnce(Arc::clone(&calls))), notifier, backoff).unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    workers.abort();
    // 100 + 200 + 400 + 400 + ... ms: a handful of calls, not a busy loop.
    let n = calls.load(Ordering::SeqCst);
    assert!((3..=8).contains(&n), "{n} subscriptions in 1.5 s");
}

#[test]
fn spawning_workers_needs_a_runtime() {
    let bus = MemoryBus::new();
    let result = spawn_workers(
        Arc::new(bus.transport()),
        Arc::new(LocalNotifier::new(8)),
        Backoff::default(),
    );
    assert_eq!(result.err(), Some(NoRuntime));
    let relay = spawn_relay_with_transport(
        MemoryStore::new(),
        MemoryPublisher::new(),
        options("no-runtime", LONG_POLL),
        bus.transport(),
    );
    assert!(matches!(
        relay,
        Err(outbox_core::driver::RelayError::NoRuntime)
    ));
}

/// `Relay::builder(..).transport(t).spawn()`: the transport is attached as a companion,
/// and a commit through relay A's bound writer (`outbox()`) to a bucket relay B owns
/// wakes B through the bus long before B's poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builder_attaches_a_transport_and_its_writer_broadcasts() {
    use outbox_core::driver::Relay;
    use outbox_notify::RelayBuilderExt as _;

    let bus = MemoryBus::new();
    let store = MemoryStore::new();
    let (published_a, published_b) = (MemoryPublisher::new(), MemoryPublisher::new());
    let id = outbox_core::Uuid::now_v7().simple().to_string();
    let a = Relay::builder(store.clone(), published_a.clone())
        .options(options(&format!("a-{id}"), LONG_POLL))
        .transport(bus.transport())
        .spawn()
        .unwrap();
    let b = Relay::builder(store.clone(), published_b.clone())
        .options(options(&format!("b-{id}"), LONG_POLL))
        .transport(bus.transport())
        .spawn()
        .unwrap();
    let owned = |relay: &str| -> Vec<i32> {
        store
            .leases()
            .into_iter()
            .filter(|(_, owner, _)| owner.as_deref() == Some(relay))
            .map(|(bucket, _, _)| bucket)
            .collect()
    };
    let split = wait_until(Duration::from_secs(30), || {
        owned(a.relay_id()).len() == 4 && owned(b.relay_id()).len() == 4
    })
    .await;
    assert!(split, "the relays did not split the buckets");
    assert_eq!(bus.subscriptions(), 2, "both relays' listeners run");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let bucket = owned(b.relay_id())[0];

    // Control: committed without a hint, B does not find the row before its poll.
    store.enqueue(row(bucket, 0));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(published_b.records().is_empty(), "found without a hint");

    // Through A's bound writer: A does not own the bucket, only the broadcast wakes B.
    a.outbox().enqueue(row(bucket, 0));
    assert!(
        wait_until(Duration::from_secs(10), || published_b.records().len() == 2).await,
        "B was not woken by the commit in A"
    );
    assert!(
        started.elapsed() < LONG_POLL,
        "polling may have found the rows"
    );
    assert!(published_a.records().is_empty());
    a.stop(Duration::from_secs(5)).await.unwrap();
    b.stop(Duration::from_secs(5)).await.unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || bus.subscriptions() == 0).await,
        "stopping the relays stopped their listeners"
    );
}
