//! Helpers shared by the transport test files: two relays on one outbox, a counting
//! transport wrapper, a cuttable TCP proxy, and the scenarios every transport must pass.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod proxy;
pub mod scenarios;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use outbox_core::driver::RelayHandle;
use outbox_core::testing::contract::row;
use outbox_core::testing::{MemoryPublisher, MemoryStore};
use outbox_core::{RelayOptions, Uuid};
use outbox_notify::{NotificationTransport, TransportError, spawn_relay_with_transport};

/// Long enough that a row found within a few seconds was found because of a hint.
pub const LONG_POLL: Duration = Duration::from_secs(30);

/// Relay options for the tests: 8 buckets, fast lease rebalancing (so two relays split
/// the buckets within a couple of seconds) and the given discovery poll interval. The
/// discovery deadline does not depend on rebalancing, so a long poll stays long.
pub fn options(relay_id: &str, poll: Duration) -> RelayOptions {
    RelayOptions::builder()
        .relay_id(relay_id)
        .schema(outbox_core::OutboxSchema::default()) // 8 buckets
        .poll_interval(poll)
        .lease_duration(Duration::from_secs(10))
        .lease_renew_interval(Duration::from_secs(1))
        .error_backoff(Duration::from_millis(100))
        .max_error_backoff(Duration::from_secs(1))
        .build()
        .unwrap()
}

/// Polls `condition` every 10 ms until it holds or `within` has passed.
pub async fn wait_until(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Like [`wait_until`] with an async condition, polled every 50 ms.
pub async fn wait_until_async(within: Duration, mut condition: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Two relays, "A" and "B", sharing one outbox (a shared in-memory store stands in for
/// the shared table), each with its own publisher and its own transport on one channel.
pub struct Pair {
    pub store: MemoryStore,
    pub a: RelayHandle,
    pub b: RelayHandle,
    pub published_a: MemoryPublisher,
    pub published_b: MemoryPublisher,
    /// When B finished its last discovery: B's next poll is due `poll` after this.
    pub ready_at: Instant,
}

impl Pair {
    /// Starts A, then B, and waits until they hold four buckets each and B has finished
    /// the discovery that gaining buckets triggers (so B's next poll is `poll` away).
    pub async fn start<T: NotificationTransport>(
        transport_a: T,
        transport_b: T,
        poll: Duration,
    ) -> Pair {
        let store = MemoryStore::new();
        let (published_a, published_b) = (MemoryPublisher::new(), MemoryPublisher::new());
        let id = Uuid::new_v4().simple().to_string();
        let a = spawn_relay_with_transport(
            store.clone(),
            published_a.clone(),
            options(&format!("a-{id}"), poll),
            transport_a,
        )
        .unwrap();
        let b = spawn_relay_with_transport(
            store.clone(),
            published_b.clone(),
            options(&format!("b-{id}"), poll),
            transport_b,
        )
        .unwrap();
        let pair = Pair {
            store,
            a,
            b,
            published_a,
            published_b,
            ready_at: Instant::now(),
        };
        let split = wait_until(Duration::from_secs(30), || {
            pair.owned_by_a().len() == 4 && pair.owned_by_b().len() == 4
        })
        .await;
        assert!(
            split,
            "the relays did not split the buckets: {:?}",
            pair.store.leases()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        Pair {
            ready_at: Instant::now(),
            ..pair
        }
    }

    fn owned_by(&self, relay: &RelayHandle) -> Vec<i32> {
        self.store
            .leases()
            .into_iter()
            .filter(|(_, owner, _)| owner.as_deref() == Some(relay.relay_id()))
            .map(|(bucket, _, _)| bucket)
            .collect()
    }

    pub fn owned_by_a(&self) -> Vec<i32> {
        self.owned_by(&self.a)
    }

    pub fn owned_by_b(&self) -> Vec<i32> {
        self.owned_by(&self.b)
    }

    /// Inserts a row in `bucket` without notifying anyone; returns its message id.
    pub fn enqueue(&self, bucket: i32) -> Uuid {
        let message = row(bucket, 0);
        let message_id = message.message_id;
        self.store.enqueue(message);
        message_id
    }

    pub fn published_by_a(&self, message_id: Uuid) -> usize {
        count(&self.published_a, message_id)
    }

    pub fn published_by_b(&self, message_id: Uuid) -> usize {
        count(&self.published_b, message_id)
    }

    pub async fn stop(self) {
        self.a.stop(Duration::from_secs(5)).await.unwrap();
        self.b.stop(Duration::from_secs(5)).await.unwrap();
    }
}

fn count(publisher: &MemoryPublisher, message_id: Uuid) -> usize {
    publisher
        .records()
        .iter()
        .filter(|r| r.message_id == message_id)
        .count()
}

/// Counts `publish` calls and records what was received, around any transport.
pub struct Counting<T> {
    inner: T,
    publishes: Arc<AtomicUsize>,
}

impl<T> Counting<T> {
    pub fn new(inner: T) -> (Self, Arc<AtomicUsize>) {
        let publishes = Arc::new(AtomicUsize::new(0));
        (
            Counting {
                inner,
                publishes: Arc::clone(&publishes),
            },
            publishes,
        )
    }
}

impl<T: NotificationTransport> NotificationTransport for Counting<T> {
    async fn publish(&self, buckets: &[i32]) -> Result<(), TransportError> {
        self.publishes.fetch_add(1, Ordering::SeqCst);
        self.inner.publish(buckets).await
    }

    async fn listen(&self, on_hint: &(dyn Fn(i32) + Send + Sync)) -> Result<(), TransportError> {
        self.inner.listen(on_hint).await
    }
}

/// Every id a callback received, in order.
#[derive(Clone, Default)]
pub struct Received(Arc<Mutex<Vec<i32>>>);

impl Received {
    pub fn push(&self, bucket: i32) {
        self.0.lock().unwrap().push(bucket);
    }

    pub fn ids(&self) -> Vec<i32> {
        self.0.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

/// Runs `transport.listen` in a task, recording every id, until aborted.
pub fn record<T: NotificationTransport>(
    transport: Arc<T>,
) -> (Received, tokio::task::JoinHandle<()>) {
    let received = Received::default();
    let sink = received.clone();
    let task = tokio::spawn(async move {
        let on_hint = move |bucket: i32| sink.push(bucket);
        // Ends only on failure; the test then sees missing ids.
        if let Err(error) = transport.listen(&on_hint).await {
            eprintln!("recording listener ended: {error}");
        }
    });
    (received, task)
}

/// Publishes a probe id until `received` has it: proves a subscription is live (a
/// broadcast sent before the subscription was set up is simply lost).
pub async fn await_subscribed<T: NotificationTransport>(
    sender: &T,
    received: &Received,
    probe: i32,
) {
    let live = wait_until_async(Duration::from_secs(20), async || {
        let _ = sender.publish(&[probe]).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        received.ids().contains(&probe)
    })
    .await;
    assert!(live, "the subscription never received the probe {probe}");
}
