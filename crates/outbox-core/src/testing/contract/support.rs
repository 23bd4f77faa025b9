//! The suite's clock, its rows and the lease calls every check makes, each failing with
//! a message that names the call.

use std::collections::BTreeSet;
use std::time::Duration;

use uuid::Uuid;

use crate::message::OutboxMessage;
use crate::store::{Acquired, LeaseRequest, OutboxStore};
use crate::time::Timestamp;

/// The bucket count every check runs with.
pub(super) const BUCKETS: u32 = 8;
/// How long a lease lasts in every check.
pub(super) const LEASE: Duration = Duration::from_secs(30);
/// A fixed, realistic instant: the suite's clock starts here.
pub(super) const T0: Timestamp = Timestamp::from_millis(1_765_000_000_000);

/// `seconds` after [`T0`].
pub(super) fn at(seconds: u64) -> Timestamp {
    T0.saturating_add(Duration::from_secs(seconds))
}

/// A lease request of `relay_id` at `now`, nothing busy.
pub(super) fn request(relay_id: &str, now: Timestamp) -> LeaseRequest<'_> {
    LeaseRequest {
        relay_id,
        bucket_count: BUCKETS,
        lease_duration: LEASE,
        now,
        busy: &[],
    }
}

/// A row for `bucket` created at `created_ms` after T0.
pub fn row(bucket: i32, created_ms: u64) -> OutboxMessage {
    OutboxMessage {
        id: 0,
        message_id: Uuid::now_v7(),
        bucket,
        topic: "contract".into(),
        key: Some(format!("key-{bucket}").into_bytes()),
        value: Some(vec![7; 16]),
        headers: None,
        partition: None,
        created_at: T0.saturating_add(Duration::from_millis(created_ms)),
        store_ref: None,
    }
}

/// The buckets `relay` holds after an acquisition at `now`.
pub(super) async fn acquire<S: OutboxStore>(store: &S, relay: &str, now: Timestamp) -> Vec<i32> {
    acquire_busy(store, relay, now, &[]).await.held
}

/// An acquisition at `now` that names `busy` buckets.
pub(super) async fn acquire_busy<S: OutboxStore>(
    store: &S,
    relay: &str,
    now: Timestamp,
    busy: &[i32],
) -> Acquired {
    let request = LeaseRequest {
        busy,
        ..request(relay, now)
    };
    match store.acquire_leases(&request).await {
        Ok(acquired) => acquired,
        Err(e) => panic!("store contract: acquire_leases for {relay} failed: {e}"),
    }
}

/// Hands back every lease of `relay`.
pub(super) async fn release<S: OutboxStore>(store: &S, relay: &str) {
    if let Err(e) = store.release_leases(relay).await {
        panic!("store contract: release_leases({relay}) failed: {e}");
    }
}

/// Panics when a bucket appears in two of `sets` (each a live relay's holding).
pub(super) fn assert_disjoint(name: &str, sets: &[&[i32]]) {
    let mut seen = BTreeSet::new();
    for set in sets {
        for bucket in *set {
            assert!(
                seen.insert(*bucket),
                "store contract `{name}`: bucket {bucket} granted to two live relays: {sets:?}"
            );
        }
    }
}
