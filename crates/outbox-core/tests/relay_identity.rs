//! Relay identity through the tokio driver: a restart under the same id takes its
//! predecessor's leases at once; two live relays under one id stop.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::wait_for;
use std::time::Duration;

use outbox_core::driver::{Relay, RelayError};
use outbox_core::testing::contract::row;
use outbox_core::testing::{MemoryPublisher, MemoryStore};
use outbox_core::{LeaseRequest, Misconfiguration, OutboxStore, RelayOptions, Timestamp};

const LEASE: Duration = Duration::from_secs(30);

fn options(id: &str) -> RelayOptions {
    RelayOptions::builder()
        .relay_id(id)
        .poll_interval(Duration::from_millis(200))
        .lease_duration(LEASE)
        .lease_renew_interval(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// What a relay killed right after its acquisition leaves behind: every lease, owned and
/// unexpired, and a fresh heartbeat.
async fn crashed_predecessor(store: &MemoryStore, id: &str) {
    let acquired = store
        .acquire_leases(&LeaseRequest {
            relay_id: id,
            bucket_count: 8,
            lease_duration: LEASE,
            now: Timestamp::now(),
            busy: &[],
        })
        .await
        .unwrap();
    assert_eq!(acquired.held.len(), 8);
}

#[tokio::test(start_paused = true)]
async fn a_restart_under_the_same_id_publishes_at_once() {
    let store = MemoryStore::new();
    crashed_predecessor(&store, "host-outbox").await;
    store.enqueue_all((0..8).map(|b| row(b, 0)));
    let relay = Relay::spawn(
        store.clone(),
        MemoryPublisher::new(),
        options("host-outbox"),
    )
    .unwrap();
    assert!(
        wait_for(|| store.pending_count() == 0, Duration::from_secs(2)).await,
        "the restarted relay takes its own leases back, well inside the 30 s lease"
    );
    assert!(
        !relay.is_finished(),
        "a crashed predecessor is no duplicate"
    );
    // And it keeps running through several acquisitions.
    tokio::time::sleep(Duration::from_secs(35)).await;
    assert!(!relay.is_finished());
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_restart_under_a_new_id_waits_for_the_old_leases() {
    let store = MemoryStore::new();
    crashed_predecessor(&store, "relay-old").await;
    store.enqueue_all((0..8).map(|b| row(b, 0)));
    let relay = Relay::spawn(store.clone(), MemoryPublisher::new(), options("relay-new")).unwrap();
    // (The driver's wall clock is the system's, which tokio's paused clock does not
    // move: the leases are never seen to expire here, so only the wait is checked.)
    assert!(
        !wait_for(|| store.pending_count() == 0, Duration::from_secs(2)).await,
        "the other id's leases hold the rows"
    );
    assert!(!relay.is_finished());
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

/// On the real clock: heartbeats are wall-clock milliseconds, which tokio's paused clock
/// does not move, and twins writing the same millisecond cannot be told apart.
#[tokio::test]
async fn two_live_relays_under_one_id_stop_with_a_duplicate_error() {
    let twin = || {
        RelayOptions::builder()
            .relay_id("twin")
            .lease_duration(Duration::from_millis(600))
            .lease_renew_interval(Duration::from_millis(100))
            .build()
            .unwrap()
    };
    let store = MemoryStore::new();
    let a = Relay::spawn(store.clone(), MemoryPublisher::new(), twin()).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b = Relay::spawn(store.clone(), MemoryPublisher::new(), twin()).unwrap();
    for relay in [a, b] {
        let result = tokio::time::timeout(Duration::from_secs(10), relay.join())
            .await
            .unwrap();
        match result {
            Err(RelayError::Misconfigured(Misconfiguration::DuplicateRelayId {
                relay_id, ..
            })) => assert_eq!(relay_id, "twin"),
            other => panic!("expected a duplicate relay id, got {other:?}"),
        }
    }
}
