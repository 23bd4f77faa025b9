//! Lease checks: who holds which bucket as relays join, leave, fall silent and stay busy,
//! and what an acquisition reports beside its buckets.

use std::time::Duration;

use super::fixture::StoreFixture;
use super::support::{LEASE, acquire, acquire_busy, assert_disjoint, at};

/// One relay alone gets every bucket and keeps them on re-acquisition.
pub async fn single_relay_owns_every_bucket(fx: &impl StoreFixture) {
    let store = fx.store().await;
    let all: Vec<i32> = (0..8).collect();
    assert_eq!(
        acquire(&store, "relay-a", at(0)).await,
        all,
        "store contract: a lone relay owns every bucket"
    );
    assert_eq!(
        acquire(&store, "relay-a", at(5)).await,
        all,
        "store contract: re-acquisition keeps the leases"
    );
}

/// A newcomer gets nothing while the owner's leases are live; the owner releases its
/// surplus on its next acquisition and the newcomer then claims exactly that.
pub async fn live_lease_is_never_granted_twice(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    let held_a = acquire(&a, "relay-a", at(0)).await;
    let held_b = acquire(&b, "relay-b", at(1)).await;
    assert_disjoint("live lease", &[&held_a, &held_b]);
    assert!(
        held_b.is_empty(),
        "store contract: live leases are not taken: b got {held_b:?}"
    );
    let held_a = acquire(&a, "relay-a", at(2)).await;
    assert_eq!(
        held_a.len(),
        4,
        "store contract: an owner above its share releases the surplus: {held_a:?}"
    );
    let held_b = acquire(&b, "relay-b", at(3)).await;
    assert_eq!(
        held_b.len(),
        4,
        "store contract: released buckets are claimable: {held_b:?}"
    );
    assert_disjoint("after release", &[&held_a, &held_b]);
}

/// A lease is live up to the millisecond before its expiry: a relay that asks then gets
/// nothing of it, even when it is owed a share; at the expiry itself the lease is free.
pub async fn lease_is_live_until_its_expiry(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    let held_a = acquire(&a, "relay-a", at(0)).await;
    assert_eq!(held_a.len(), 8);
    let just_before = at(30).saturating_sub(Duration::from_millis(1));
    let held_b = acquire(&b, "relay-b", just_before).await;
    assert_disjoint("one millisecond before expiry", &[&held_a, &held_b]);
    assert!(
        held_b.is_empty(),
        "store contract: a lease 1 ms before its expiry is live and not taken: b got {held_b:?}"
    );
    assert_eq!(
        acquire(&b, "relay-b", at(30)).await,
        (0..8).collect::<Vec<_>>(),
        "store contract: at its expiry a silent relay's lease is taken over"
    );
}

/// A relay that stops heartbeating loses its buckets once its leases expire.
pub async fn expired_lease_is_taken_over(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    assert_eq!(acquire(&a, "relay-a", at(0)).await.len(), 8);
    let early = acquire(&b, "relay-b", at(29)).await;
    assert!(
        early.is_empty(),
        "store contract: no takeover before expiry: {early:?}"
    );
    let late = acquire(&b, "relay-b", at(31)).await;
    assert_eq!(
        late,
        (0..8).collect::<Vec<_>>(),
        "store contract: expired leases of a dead relay are taken over"
    );
}

/// Shares settle at 3/3/2 with three relays and 4/4 after one leaves; at no instant do
/// two relays hold one bucket.
pub async fn fair_share_converges_as_relays_join_and_leave(fx: &impl StoreFixture) {
    let relays = ["relay-a", "relay-b", "relay-c"];
    let stores = [fx.store().await, fx.store().await, fx.store().await];
    let mut held: Vec<Vec<i32>> = vec![Vec::new(); 3];
    let mut second = 0;
    for _round in 0..4 {
        for (i, store) in stores.iter().enumerate() {
            second += 1;
            held[i] = acquire(store, relays[i], at(second)).await;
            let views: Vec<&[i32]> = held.iter().map(Vec::as_slice).collect();
            assert_disjoint("three relays", &views);
        }
    }
    let sizes: Vec<usize> = held.iter().map(Vec::len).collect();
    assert_eq!(
        sizes,
        [3, 3, 2],
        "store contract: three relays settle at their fair shares: {held:?}"
    );
    // relay-c stops. Once its heartbeat and leases are older than the lease, the others
    // split everything.
    held[2].clear();
    for _round in 0..6 {
        second += 10;
        for i in 0..2 {
            held[i] = acquire(&stores[i], relays[i], at(second)).await;
        }
    }
    let views: Vec<&[i32]> = held.iter().map(Vec::as_slice).collect();
    assert_disjoint("after leave", &views);
    assert_eq!(
        (held[0].len(), held[1].len()),
        (4, 4),
        "store contract: survivors split the buckets: {held:?}"
    );
}
/// A busy bucket above the share stays with its relay (reported as surplus) until an
/// acquisition no longer names it busy; only then can another relay take it.
pub async fn busy_buckets_are_kept_above_the_share(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    let all: Vec<i32> = (0..8).collect();
    assert_eq!(acquire(&a, "relay-a", at(0)).await, all);
    // relay-b joins: a's share drops to 4, buckets 4..8 are above it.
    assert_eq!(acquire(&b, "relay-b", at(1)).await, Vec::<i32>::new());
    let kept = acquire_busy(&a, "relay-a", at(2), &[6]).await;
    assert_eq!(
        kept.held,
        vec![0, 1, 2, 3, 6],
        "store contract: a busy bucket above the share is kept, the others released"
    );
    assert_eq!(
        kept.surplus,
        vec![6],
        "store contract: the kept bucket is surplus"
    );
    assert_eq!(
        acquire(&b, "relay-b", at(3)).await,
        vec![4, 5, 7],
        "store contract: the busy bucket is not granted to another relay"
    );
    let quiet = acquire_busy(&a, "relay-a", at(4), &[]).await;
    assert_eq!(quiet.held, vec![0, 1, 2, 3]);
    assert!(quiet.surplus.is_empty());
    assert_eq!(
        acquire(&b, "relay-b", at(5)).await,
        vec![4, 5, 6, 7],
        "store contract: released once it is no longer busy"
    );
}

/// An acquisition reports the heartbeat found under the caller's id before it wrote its
/// own: none at first, then the caller's previous one, and whatever another process
/// wrote under the same id (what the duplicate-id check judges). Other ids' heartbeats
/// are not reported.
pub async fn acquisition_reports_the_heartbeat_it_replaced(fx: &impl StoreFixture) {
    let (a, twin) = (fx.store().await, fx.store().await);
    let before = |acquired: crate::store::Acquired| acquired.heartbeat_before;
    assert_eq!(
        before(acquire_busy(&a, "relay-a", at(0), &[]).await),
        None,
        "store contract: a new id has no heartbeat yet"
    );
    assert_eq!(
        before(acquire_busy(&twin, "relay-b", at(1), &[]).await),
        None,
        "store contract: another id's heartbeat is not reported"
    );
    assert_eq!(
        before(acquire_busy(&a, "relay-a", at(2), &[]).await),
        Some(at(0)),
        "store contract: the caller's previous heartbeat is reported"
    );
    assert_eq!(
        before(acquire_busy(&twin, "relay-a", at(3), &[]).await),
        Some(at(2)),
        "store contract: a second process under the same id sees the first one's heartbeat"
    );
    assert_eq!(
        before(acquire_busy(&a, "relay-a", at(4), &[]).await),
        Some(at(3)),
        "store contract: and the first sees the second's"
    );
}

/// When the caller's claims fall short of its share because other relays hold live
/// leases, the acquisition names the buckets, their holder and expiry, as planned by
/// [`plan_acquisition`](crate::plan_acquisition).
pub async fn acquisition_reports_the_buckets_it_waits_for(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    assert_eq!(acquire(&a, "relay-a", at(0)).await.len(), 8);
    let newcomer = acquire_busy(&b, "relay-b", at(1), &[]).await;
    assert!(newcomer.held.is_empty());
    assert_eq!(
        newcomer
            .waiting
            .iter()
            .map(|w| (w.bucket, w.holder.as_str(), w.until, w.holder_live))
            .collect::<Vec<_>>(),
        (0..4)
            .map(|b| (b, "relay-a", at(0).saturating_add(LEASE), true))
            .collect::<Vec<_>>(),
        "store contract: the newcomer waits for its share of relay-a's live leases"
    );
    // relay-a hands its surplus over; relay-b claims it and waits no more.
    assert_eq!(acquire(&a, "relay-a", at(2)).await, vec![0, 1, 2, 3]);
    let settled = acquire_busy(&b, "relay-b", at(3), &[]).await;
    assert_eq!(settled.held, vec![4, 5, 6, 7]);
    assert!(
        settled.waiting.is_empty(),
        "store contract: nothing to wait for once the share is held: {:?}",
        settled.waiting
    );
}
