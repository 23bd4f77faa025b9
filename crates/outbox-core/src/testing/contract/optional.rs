//! Checks of the optional capabilities (renewal, release, the backlog sample). A store
//! without the capability gets [`CheckOutcome::NotApplicable`] naming it, which the
//! suite counts and reports; a store that claims it must pass.

use std::time::Duration;

use super::fixture::StoreFixture;
use super::report::{Capability, CheckOutcome};
use super::support::{T0, acquire, assert_disjoint, at, release, request, row};
use crate::store::OutboxStore;

/// Renewal extends what is still held and reports what was taken over.
pub async fn renewal_extends_held_leases_and_reports_lost_ones(
    fx: &impl StoreFixture,
) -> CheckOutcome {
    let (a, b) = (fx.store().await, fx.store().await);
    if !a.capabilities().lease_renewal {
        return CheckOutcome::NotApplicable(Capability::LeaseRenewal);
    }
    let held = acquire(&a, "relay-a", at(0)).await;
    let renewed = a.renew_leases(&request("relay-a", at(10)), &held).await;
    let renewed = renewed.unwrap_or_else(|e| panic!("store contract: renew failed: {e}"));
    assert_eq!(
        renewed.renewed, held,
        "store contract: held leases are renewed"
    );
    assert!(renewed.lost.is_empty());
    // Renewed at 10 s, so valid until 40 s and the heartbeat is fresh: no takeover at 35 s.
    assert!(
        acquire(&b, "relay-b", at(35)).await.is_empty(),
        "store contract: a renewed lease is not taken over"
    );
    // At 41 s relay-a is neither live nor holding unexpired leases.
    assert_eq!(acquire(&b, "relay-b", at(41)).await.len(), 8);
    let late = a.renew_leases(&request("relay-a", at(42)), &held).await;
    let late = late.unwrap_or_else(|e| panic!("store contract: renew failed: {e}"));
    assert!(
        late.renewed.is_empty(),
        "store contract: a lost lease is not renewed: {late:?}"
    );
    assert_eq!(
        late.lost, held,
        "store contract: renewal reports lost leases"
    );
    CheckOutcome::Passed
}

/// A relay that hands its leases back is out of the fair share at once: the others split
/// its buckets on their next acquisition, long before its leases would have expired. A
/// release touches only the releasing relay's leases.
pub async fn released_leases_are_taken_at_once(fx: &impl StoreFixture) -> CheckOutcome {
    let relays = ["relay-a", "relay-b", "relay-c"];
    let stores = [fx.store().await, fx.store().await, fx.store().await];
    if !stores[0].capabilities().lease_release {
        return CheckOutcome::NotApplicable(Capability::LeaseRelease);
    }
    let mut held: Vec<Vec<i32>> = vec![Vec::new(); 3];
    for second in 0..3 {
        for (i, store) in stores.iter().enumerate() {
            held[i] = acquire(store, relays[i], at(second * 3 + i as u64)).await;
        }
    }
    let sizes: Vec<usize> = held.iter().map(Vec::len).collect();
    assert_eq!(sizes, [3, 3, 2], "store contract: settled shares: {held:?}");
    // A relay that holds nothing (or never existed) releases nothing of the others'.
    release(&stores[2], "relay-unknown").await;
    let renewed = stores[0]
        .renew_leases(&request("relay-a", at(10)), &held[0])
        .await
        .unwrap_or_else(|e| panic!("store contract: renew failed: {e}"));
    assert_eq!(
        renewed.renewed, held[0],
        "store contract: a release by another relay id leaves these leases alone"
    );
    release(&stores[2], "relay-c").await;
    release(&stores[2], "relay-c").await;
    held[2].clear();
    // One second later, well inside the released leases' original 30 s.
    held[0] = acquire(&stores[0], "relay-a", at(11)).await;
    held[1] = acquire(&stores[1], "relay-b", at(12)).await;
    let views: Vec<&[i32]> = held.iter().map(Vec::as_slice).collect();
    assert_disjoint("after release", &views);
    assert_eq!(
        (held[0].len(), held[1].len()),
        (4, 4),
        "store contract: released buckets go to the others at once: {held:?}"
    );
    CheckOutcome::Passed
}

/// The backlog sample counts every bucket and dates the oldest row.
pub async fn backlog_metrics_count_and_age(fx: &impl StoreFixture) -> CheckOutcome {
    let store = fx.store().await;
    if !store.capabilities().backlog_metrics {
        return CheckOutcome::NotApplicable(Capability::BacklogMetrics);
    }
    let empty = store
        .pending_metrics()
        .await
        .unwrap_or_else(|e| panic!("store contract: pending_metrics failed: {e}"));
    let empty = empty.unwrap_or_else(|| {
        panic!("store contract: a store with the capability samples an empty table")
    });
    assert_eq!(empty.count, 0);
    fx.insert_committed(vec![row(0, 100), row(5, 50), row(7, 200)])
        .await;
    let sample = store.pending_metrics().await.ok().flatten();
    let sample = sample.unwrap_or_else(|| panic!("store contract: no backlog sample"));
    assert_eq!(
        sample.count, 3,
        "store contract: the backlog counts every bucket"
    );
    let oldest = sample.oldest_created_at.unwrap_or_else(|| {
        panic!("store contract: a backlog sample of pending rows dates the oldest of them")
    });
    assert_eq!(
        oldest,
        T0.saturating_add(Duration::from_millis(50)),
        "store contract: the oldest row dates the backlog"
    );
    CheckOutcome::Passed
}
