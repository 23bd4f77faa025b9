//! The tokio driver against the in-memory store and publisher.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{wait_for, woken_only_options as options};

use outbox_core::driver::{Relay, RelayError};
use outbox_core::testing::contract::row;
use outbox_core::testing::{MemoryPublisher, MemoryStore};
use outbox_core::{
    CommitNotifier, Misconfiguration, OutboxMessage, RelayOptions, StoreCapabilities,
};

fn message(bucket: i32) -> OutboxMessage {
    row(bucket, 0)
}

#[tokio::test(start_paused = true)]
async fn publishes_and_deletes_existing_rows_at_start() {
    let store = MemoryStore::new();
    let publisher = MemoryPublisher::new();
    store.enqueue_all((0..8).flat_map(|b| (0..3).map(move |_| message(b))));
    let relay = Relay::spawn(store.clone(), publisher.clone(), options()).unwrap();
    assert!(
        wait_for(|| store.pending_count() == 0, Duration::from_secs(10)).await,
        "startup discovery drains the table"
    );
    assert_eq!(publisher.records().len(), 24);
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_commit_notification_wakes_the_idle_relay_before_its_poll() {
    let store = MemoryStore::new();
    let publisher = MemoryPublisher::new();
    let relay = Relay::spawn(store.clone(), publisher.clone(), options()).unwrap();
    // Let it acquire and go idle (its next poll is 30 s away).
    assert!(
        wait_for(
            || store.leases().iter().filter(|l| l.1.is_some()).count() == 8,
            Duration::from_secs(5)
        )
        .await
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let m = message(3);
    store.enqueue(m.clone());
    relay.notifier().notify_buckets(&[m.bucket]);
    assert!(
        wait_for(|| publisher.records().len() == 1, Duration::from_secs(10)).await,
        "woken by the notification, long before the 30 s poll"
    );
    assert!(wait_for(|| store.pending_count() == 0, Duration::from_secs(5)).await);
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_misconfigured_writer_stops_the_relay_with_a_fatal_error() {
    let store = MemoryStore::new();
    store.enqueue(message(12)); // bucket 12 with 8 buckets configured
    let relay = Relay::spawn(store.clone(), MemoryPublisher::new(), options()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), relay.join())
        .await
        .unwrap();
    match result {
        Err(RelayError::Misconfigured(Misconfiguration::BucketOutOfRange {
            bucket: 12,
            bucket_count: 8,
        })) => {}
        other => panic!("expected the fatal misconfiguration, got {other:?}"),
    }
    assert_eq!(store.pending_count(), 1, "nothing was dropped");
}

#[tokio::test(start_paused = true)]
async fn a_store_without_renewal_needs_a_publish_budget_at_start() {
    let store = MemoryStore::new().with_capabilities(StoreCapabilities {
        lease_renewal: false,
        backlog_metrics: false,
        lease_release: false,
        parking: false,
    });
    let result = Relay::spawn(store, MemoryPublisher::new(), options());
    assert!(matches!(
        result,
        Err(RelayError::Misconfigured(
            Misconfiguration::MissingPublishBudget
        ))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_store_that_cannot_park_needs_max_publish_attempts_none() {
    let store = MemoryStore::new().with_capabilities(StoreCapabilities {
        lease_renewal: true,
        backlog_metrics: false,
        lease_release: false,
        parking: false,
    });
    let result = Relay::spawn(store.clone(), MemoryPublisher::new(), options());
    assert!(matches!(
        result,
        Err(RelayError::Misconfigured(
            Misconfiguration::ParkingUnsupported
        ))
    ));
    let retry_forever = RelayOptions::builder()
        .max_publish_attempts(None)
        .build()
        .unwrap();
    let relay = Relay::spawn(store, MemoryPublisher::new(), retry_forever).unwrap();
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

#[test]
fn spawning_outside_a_runtime_is_an_error_not_a_panic() {
    let result = Relay::spawn(MemoryStore::new(), MemoryPublisher::new(), options());
    assert!(matches!(result, Err(RelayError::NoRuntime)));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_handle_keeps_the_relay_running() {
    let store = MemoryStore::new();
    let relay = Relay::spawn(store.clone(), MemoryPublisher::new(), options()).unwrap();
    let notifier = relay.notifier();
    drop(relay);
    assert!(
        wait_for(
            || store.leases().iter().any(|l| l.1.is_some()),
            Duration::from_secs(5)
        )
        .await
    );
    let m = message(1);
    store.enqueue(m.clone());
    notifier.notify_buckets(&[m.bucket]);
    assert!(wait_for(|| store.pending_count() == 0, Duration::from_secs(10)).await);
}

/// A publisher that takes its time, to exercise shutdown while a publish is in flight.
#[derive(Clone)]
struct SlowPublisher {
    inner: MemoryPublisher,
    delay: Duration,
}

impl outbox_core::Publisher for SlowPublisher {
    async fn publish(&self, batch: &[OutboxMessage]) -> outbox_core::PublishOutcome {
        tokio::time::sleep(self.delay).await;
        outbox_core::Publisher::publish(&self.inner, batch).await
    }
}

#[tokio::test(start_paused = true)]
async fn graceful_stop_lets_the_in_flight_publish_finish_and_deletes_its_rows() {
    let store = MemoryStore::new();
    let inner = MemoryPublisher::new();
    store.enqueue(message(2));
    let publisher = SlowPublisher {
        inner: inner.clone(),
        delay: Duration::from_millis(500),
    };
    let relay = Relay::spawn(store.clone(), publisher, options()).unwrap();
    assert!(
        wait_for(
            || inner.calls() == 0 && store.leases().iter().any(|l| l.1.is_some()),
            Duration::from_secs(5)
        )
        .await
    );
    tokio::time::sleep(Duration::from_millis(100)).await; // the publish is now in flight
    relay.stop(Duration::from_secs(30)).await.unwrap();
    assert_eq!(inner.records().len(), 1);
    assert_eq!(
        store.pending_count(),
        0,
        "the acknowledged row was deleted before stopping"
    );
}

#[tokio::test(start_paused = true)]
async fn an_abandoned_publish_deletes_nothing() {
    let store = MemoryStore::new();
    let inner = MemoryPublisher::new();
    store.enqueue(message(2));
    let publisher = SlowPublisher {
        inner: inner.clone(),
        delay: Duration::from_secs(600),
    };
    let relay = Relay::spawn(store.clone(), publisher, options()).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::time::timeout(
        Duration::from_secs(10),
        relay.stop(Duration::from_millis(50)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(inner.calls(), 0, "the publish never completed");
    assert_eq!(
        store.pending_count(),
        1,
        "nothing deleted without an acknowledgement"
    );
    assert!(
        store.leases().iter().all(|l| l.1.is_some()),
        "an abandoned publish may still land: the leases are kept until they run out"
    );
}

#[tokio::test(start_paused = true)]
async fn a_graceful_stop_hands_the_buckets_to_the_survivor_at_once() {
    // Leases of a minute, rebalancing every 200 ms: a takeover within seconds can only
    // come from the release, not from expiry.
    let options = |id: &str| {
        RelayOptions::builder()
            .relay_id(id)
            .schema(outbox_core::OutboxSchema::default()) // 8 buckets
            .lease_duration(Duration::from_secs(60))
            .lease_renew_interval(Duration::from_millis(200))
            .build()
            .unwrap()
    };
    let store = MemoryStore::new();
    let publisher = MemoryPublisher::new();
    let a = Relay::spawn(store.clone(), publisher.clone(), options("relay-a")).unwrap();
    let b = Relay::spawn(store.clone(), publisher.clone(), options("relay-b")).unwrap();
    let owners = |store: &MemoryStore, id: &str| {
        store
            .leases()
            .iter()
            .filter(|l| l.1.as_deref() == Some(id))
            .count()
    };
    assert!(
        wait_for(
            || owners(&store, "relay-a") == 4 && owners(&store, "relay-b") == 4,
            Duration::from_secs(10)
        )
        .await,
        "the two relays split the buckets: {:?}",
        store.leases()
    );
    a.stop(Duration::from_secs(5)).await.unwrap();
    assert!(
        !store.relays().iter().any(|(id, _)| id == "relay-a"),
        "the stopped relay's heartbeat is gone"
    );
    assert!(
        wait_for(|| owners(&store, "relay-b") == 8, Duration::from_secs(10)).await,
        "the survivor owns every bucket long before the minute-long leases expire: {:?}",
        store.leases()
    );
    store.enqueue_all((0..8).map(message));
    assert!(wait_for(|| store.pending_count() == 0, Duration::from_secs(10)).await);
    b.stop(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn two_outboxes_in_one_process_are_independent() {
    let (store_a, store_b) = (MemoryStore::new(), MemoryStore::new());
    let (pub_a, pub_b) = (MemoryPublisher::new(), MemoryPublisher::new());
    store_a.enqueue(message(1));
    store_b.enqueue_all([message(2), message(3)]);
    // Two outboxes carry two names, which also gives them two default relay ids.
    let named = |name: &str| {
        RelayOptions::builder()
            .metrics_name(name)
            .poll_interval(Duration::from_secs(30))
            .lease_duration(Duration::from_secs(60))
            .lease_renew_interval(Duration::from_secs(30))
            .build()
            .unwrap()
    };
    let a = Relay::spawn(store_a.clone(), pub_a.clone(), named("orders")).unwrap();
    let b = Relay::spawn(store_b.clone(), pub_b.clone(), named("billing")).unwrap();
    assert_ne!(a.relay_id(), b.relay_id());
    assert!(
        wait_for(
            || store_a.pending_count() == 0 && store_b.pending_count() == 0,
            Duration::from_secs(10)
        )
        .await
    );
    assert_eq!((pub_a.records().len(), pub_b.records().len()), (1, 2));
    a.stop(Duration::from_secs(5)).await.unwrap();
    b.stop(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn ready_after_the_first_acquisition_only() {
    let store = MemoryStore::new();
    store.set_fault_hook(Box::new(|_| {
        Some(outbox_core::StoreError::unavailable("down"))
    }));
    let relay = Relay::spawn(store.clone(), MemoryPublisher::new(), options()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !relay.is_ready(),
        "not ready while the store is unreachable"
    );
    store.clear_fault_hook();
    assert!(wait_for(|| relay.is_ready(), Duration::from_secs(10)).await);
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

/// The async shell executes parking end to end: a row the publisher refuses for good is
/// parked after `max_publish_attempts`, its key's later rows are parked behind it, the
/// other key flows; once repaired and requeued, the key arrives in commit order.
#[tokio::test(start_paused = true)]
async fn a_refused_row_is_parked_its_key_held_and_a_requeue_keeps_the_order() {
    use outbox_core::{EnqueueConfig, OutboxSchema, ParkReason, ParkedRows, ParkedSelection};

    let schema = OutboxSchema::builder().bucket_count(1).build().unwrap();
    let config = EnqueueConfig::from(schema.clone());
    let message = |key: &str, n: u8| {
        OutboxMessage::builder("t")
            .key(key)
            .value(vec![n])
            .build(&config)
            .unwrap()
    };
    let store = MemoryStore::new();
    let publisher = MemoryPublisher::new();
    let first_k = message("k", 1);
    publisher.reject(first_k.message_id);
    store.enqueue_all([
        first_k.clone(),
        message("j", 1),
        message("k", 2),
        message("j", 2),
        message("k", 3),
    ]);
    let options = RelayOptions::builder()
        .schema(schema)
        .max_publish_attempts(std::num::NonZeroU32::new(2))
        .poll_interval(Duration::from_millis(200))
        .error_backoff(Duration::from_millis(100))
        .build()
        .unwrap();
    let relay = Relay::spawn(store.clone(), publisher.clone(), options).unwrap();
    let keys_published = |key: &[u8]| -> Vec<u8> {
        publisher
            .records()
            .iter()
            .filter(|r| r.key.as_deref() == Some(key))
            .filter_map(|r| r.value.as_ref().map(|v| v[0]))
            .collect()
    };
    assert!(
        wait_for(
            || store.parked().len() == 3 && store.pending_count() == 0,
            Duration::from_secs(30)
        )
        .await,
        "k's three rows parked, j drained: parked {:?}, pending {}",
        store
            .parked()
            .iter()
            .map(|p| p.message.id)
            .collect::<Vec<_>>(),
        store.pending_count()
    );
    assert_eq!(keys_published(b"j"), [1, 2], "the other key flowed");
    assert!(
        keys_published(b"k").is_empty(),
        "nothing of k overtook its parked row"
    );
    let parked = store.parked();
    assert!(matches!(&parked[0].reason, ParkReason::Failed(f) if f.attempts == 2));
    assert!(parked[1..].iter().all(|p| p.reason
        == ParkReason::HeldBehind {
            blocking_id: parked[0].message.id
        }));

    publisher.accept(first_k.message_id);
    let requeued = store
        .requeue_parked(&ParkedSelection::Key(b"k".to_vec()))
        .await
        .unwrap();
    assert_eq!(requeued.len(), 3);
    assert!(
        wait_for(|| keys_published(b"k").len() == 3, Duration::from_secs(30)).await,
        "the requeued key drains"
    );
    assert_eq!(keys_published(b"k"), [1, 2, 3], "in commit order");
    assert!(store.parked().is_empty() && store.pending_count() == 0);
    relay.stop(Duration::from_secs(5)).await.unwrap();
}
