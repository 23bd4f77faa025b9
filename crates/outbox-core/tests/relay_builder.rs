//! `Relay::builder`: the bound writer, the awaitable state, `drained` and `stop_on`,
//! against the in-memory store and publisher on tokio's paused clock.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{wait_for, woken_only_options as options};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt as _;
use outbox_core::driver::{Relay, RelayError, RelayHandle, RelayState, WaitError};
use outbox_core::testing::contract::row;
use outbox_core::testing::{MemoryPublisher, MemoryStore, Scripted};
use outbox_core::{
    Misconfiguration, OutboxMessage, PublishOutcome, Publisher, RelayOptions, StoreCapabilities,
};
use tokio::sync::{Semaphore, oneshot};
use tokio::time::Instant;

/// A memory publisher whose publishes wait for a permit: holds work in flight.
#[derive(Clone)]
struct Gated {
    inner: MemoryPublisher,
    gate: Arc<Semaphore>,
    started: Arc<AtomicUsize>,
}

impl Gated {
    fn new() -> Self {
        Gated {
            inner: MemoryPublisher::new(),
            gate: Arc::new(Semaphore::new(0)),
            started: Arc::default(),
        }
    }
}

impl Publisher for Gated {
    async fn publish(&self, batch: &[OutboxMessage]) -> PublishOutcome {
        self.started.fetch_add(1, Ordering::SeqCst);
        let _permit = self.gate.acquire().await.expect("gate open");
        self.inner.publish_now(batch)
    }
}

#[tokio::test(start_paused = true)]
async fn states_move_starting_ready_stopping_stopped() {
    let store = MemoryStore::new();
    let publisher = Gated::new();
    let relay = Relay::builder(store.clone(), publisher.clone())
        .options(options())
        .spawn()
        .unwrap();
    // Nothing has run yet on this single-threaded runtime.
    assert!(matches!(relay.state(), RelayState::Starting));
    assert!(!relay.is_ready());
    relay.ready().await.unwrap();
    assert!(matches!(relay.state(), RelayState::Ready));
    assert!(relay.is_ready());

    // A publish held in flight: the stop has to wait for it, in `Stopping`.
    relay.outbox().enqueue(row(2, 0));
    assert!(
        wait_for(
            || publisher.started.load(Ordering::SeqCst) == 1,
            Duration::from_secs(1)
        )
        .await
    );
    let mut states = relay.subscribe();
    relay.shutdown();
    tokio::time::timeout(
        Duration::from_secs(1),
        states.wait_for(|s| matches!(s, RelayState::Stopping)),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(
        matches!(relay.ready().await, Err(WaitError::Stopped)),
        "a stopping relay is no longer awaited as ready"
    );
    publisher.gate.add_permits(100);
    relay.join().await.unwrap();
    assert!(matches!(*states.borrow(), RelayState::Stopped));
    assert_eq!(
        publisher.inner.records().len(),
        1,
        "the in-flight work finished"
    );
    assert_eq!(store.pending_count(), 0);
}

/// `stop_on` with a signal that never comes, on a relay that is about to end by itself
/// (fail or panic): the relay ending ends the wait. Returns its result and final state.
async fn stop_on_a_never_coming_signal<W>(
    relay: RelayHandle<W>,
) -> (Result<(), RelayError>, RelayState) {
    let states = relay.subscribe();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        relay.stop_on(std::future::pending(), Duration::from_secs(5)),
    )
    .await
    .expect("stop_on returned once the relay ended by itself");
    let state = states.borrow().clone();
    (result, state)
}

#[tokio::test(start_paused = true)]
async fn a_fatal_error_is_the_failed_state_and_ends_stop_on() {
    let store = MemoryStore::new();
    store.enqueue(row(12, 0)); // bucket 12 with 8 buckets configured
    let relay = Relay::builder(store.clone(), MemoryPublisher::new())
        .options(options())
        .spawn()
        .unwrap();
    let (result, state) = stop_on_a_never_coming_signal(relay).await;
    assert!(matches!(
        result,
        Err(RelayError::Misconfigured(
            Misconfiguration::BucketOutOfRange { bucket: 12, .. }
        ))
    ));
    match state {
        RelayState::Failed(error) => assert!(matches!(
            *error,
            RelayError::Misconfigured(Misconfiguration::BucketOutOfRange { .. })
        )),
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(store.pending_count(), 1, "nothing was dropped");
}

#[tokio::test(start_paused = true)]
async fn stop_on_waits_for_the_signal_then_stops_gracefully() {
    let store = MemoryStore::new();
    let relay = Relay::builder(store.clone(), MemoryPublisher::new())
        .options(options())
        .spawn()
        .unwrap();
    relay.ready().await.unwrap();
    let states = relay.subscribe();
    let (signal, signalled) = oneshot::channel::<()>();
    let started = Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(45)).await;
        let _ = signal.send(());
    });
    relay
        .stop_on(
            async {
                let _ = signalled.await;
            },
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(45) && waited < Duration::from_secs(46),
        "stopped after {waited:?}, the signal came at 45 s"
    );
    assert!(matches!(*states.borrow(), RelayState::Stopped));
    assert!(
        store.leases().iter().all(|(_, owner, _)| owner.is_none()),
        "a graceful stop hands the leases back"
    );
    assert!(store.relays().is_empty(), "and deletes the heartbeat");
}

#[tokio::test(start_paused = true)]
async fn the_bound_writer_wakes_the_relay_before_its_poll() {
    let store = MemoryStore::new();
    let publisher = MemoryPublisher::new();
    let relay = Relay::builder(store.clone(), publisher.clone())
        .options(options())
        .spawn()
        .unwrap();
    relay.ready().await.unwrap();
    // Let the startup discovery finish; the next poll is 30 s away.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Control: a row committed without a notification waits for the poll.
    store.enqueue(row(5, 0));
    assert!(
        !wait_for(|| !publisher.records().is_empty(), Duration::from_secs(2)).await,
        "found without a wake-up: the poll interval is too short for this test"
    );
    let committed = Instant::now();
    relay.outbox().enqueue(row(3, 0));
    assert!(
        wait_for(|| !publisher.records().is_empty(), Duration::from_secs(1)).await,
        "the writer's commit woke the relay long before the 30 s poll"
    );
    assert!(committed.elapsed() < Duration::from_secs(1));
    let keys: Vec<_> = publisher.records().into_iter().map(|r| r.key).collect();
    assert_eq!(
        keys,
        vec![Some(b"key-3".to_vec())],
        "the hint named bucket 3 only; bucket 5 waits for its poll"
    );
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn drained_resolves_once_nothing_is_pending_and_ignores_parked_rows() {
    let store = MemoryStore::new();
    let publisher = MemoryPublisher::new();
    store.enqueue_all((0..8).flat_map(|b| (0..3).map(move |_| row(b, 0))));
    let poison = row(4, 0);
    publisher.reject(poison.message_id);
    store.enqueue(poison);
    let options = RelayOptions::builder()
        .poll_interval(Duration::from_secs(30))
        .max_publish_attempts(Some(NonZeroU32::new(1).unwrap()))
        .build()
        .unwrap();
    let relay = Relay::builder(store.clone(), publisher.clone())
        .options(options)
        .spawn()
        .unwrap();
    assert_eq!(
        store.pending_count(),
        25,
        "nothing published before the wait"
    );
    tokio::time::timeout(Duration::from_secs(30), relay.drained())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(store.pending_count(), 0);
    assert_eq!(publisher.records().len(), 24);
    assert_eq!(store.parked().len(), 1, "the parked row is not waited for");
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn drained_fails_when_the_relay_stops_with_rows_pending() {
    let store = MemoryStore::new();
    let publisher = MemoryPublisher::new();
    publisher.script(std::iter::repeat_n(
        Scripted::AckPrefix {
            acknowledged: 0,
            permanent: false,
        },
        10_000,
    ));
    store.enqueue(row(1, 0));
    let options = RelayOptions::builder()
        .max_publish_attempts(None)
        .build()
        .unwrap();
    let relay = Relay::builder(store.clone(), publisher)
        .options(options)
        .spawn()
        .unwrap();
    relay.ready().await.unwrap();
    let waiting = tokio::time::timeout(Duration::from_secs(5), relay.drained()).await;
    assert!(waiting.is_err(), "rows that keep failing are still pending");
    relay.shutdown();
    let result = tokio::time::timeout(Duration::from_secs(30), relay.drained())
        .await
        .unwrap();
    assert!(matches!(result, Err(WaitError::Stopped)), "{result:?}");
    relay.join().await.unwrap();
    assert_eq!(store.pending_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn drained_needs_the_backlog_capability() {
    let store = MemoryStore::new().with_capabilities(StoreCapabilities {
        lease_renewal: true,
        backlog_metrics: false,
        lease_release: true,
        parking: true,
    });
    let relay = Relay::builder(store, MemoryPublisher::new())
        .options(options())
        .spawn()
        .unwrap();
    let result = relay
        .drained()
        .now_or_never()
        .expect("answered at once, without waiting");
    assert!(matches!(result, Err(WaitError::BacklogUnsupported)));
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn companions_get_the_notifier_and_end_with_the_relay() {
    let store = MemoryStore::new();
    let publisher = MemoryPublisher::new();
    let alive = Arc::new(());
    let held = Arc::clone(&alive);
    let relay = Relay::builder(store.clone(), publisher.clone())
        .options(options())
        .companion(move |cx| {
            assert_eq!(cx.options().poll_interval(), Duration::from_secs(30));
            let notifier = cx.notifier();
            let task = cx.runtime().spawn(async move {
                let _held = held;
                // A remote hint after a while, as a transport's listener delivers one.
                tokio::time::sleep(Duration::from_secs(2)).await;
                notifier.receive_remote(6);
                std::future::pending::<()>().await;
            });
            vec![task]
        })
        .spawn()
        .unwrap();
    relay.ready().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    store.enqueue(row(6, 0));
    assert!(
        wait_for(|| publisher.records().len() == 1, Duration::from_secs(3)).await,
        "the companion's hint woke the relay before its poll"
    );
    assert_eq!(
        Arc::strong_count(&alive),
        2,
        "the companion runs beside the relay"
    );
    relay.stop(Duration::from_secs(5)).await.unwrap();
    tokio::task::yield_now().await;
    assert_eq!(
        Arc::strong_count(&alive),
        1,
        "and is aborted once it stopped"
    );
}

#[tokio::test(start_paused = true)]
async fn spawn_still_works_and_its_handle_has_no_writer() {
    let store = MemoryStore::new();
    let relay = Relay::spawn(store, MemoryPublisher::new(), options()).unwrap();
    let (): () = *relay.outbox();
    relay.ready().await.unwrap();
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

/// A publisher whose publish panics: a bug in the relay's task.
#[derive(Clone)]
struct Panicking;

impl Publisher for Panicking {
    async fn publish(&self, _batch: &[OutboxMessage]) -> PublishOutcome {
        panic!("publisher bug");
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_relay_task_is_the_failed_state() {
    let store = MemoryStore::new();
    store.enqueue(row(1, 0));
    let relay = Relay::builder(store.clone(), Panicking)
        .options(options())
        .spawn()
        .unwrap();
    let (result, state) = stop_on_a_never_coming_signal(relay).await;
    assert!(matches!(result, Err(RelayError::Panicked(_))), "{result:?}");
    match state {
        RelayState::Failed(error) => assert!(matches!(*error, RelayError::Panicked(_))),
        other => panic!("expected Failed, got {other:?}"),
    };
    assert_eq!(store.pending_count(), 1, "nothing was deleted");
}
