use super::*;

/// Both clocks at `ms` (the wall clock's epoch is the monotonic origin here).
fn t(ms: i64) -> Now {
    Now::new(Timestamp::from_millis(ms), m(ms))
}

fn m(ms: i64) -> Monotonic {
    Monotonic::from_millis(u64::try_from(ms).unwrap())
}

fn leases() -> Leases {
    Leases::new(
        m(0),
        Duration::from_millis(30_000),
        Duration::from_millis(10_000),
        true,
    )
}

#[test]
fn validity_counts_from_the_start_of_the_call() {
    let mut l = leases();
    l.on_acquired(t(1_000), m(1_000), [1, 2]);
    assert!(l.is_valid(1, t(30_999)));
    assert!(
        !l.is_valid(1, t(31_000)),
        "expiry is start + lease, exclusive"
    );
    assert!(!l.is_valid(3, t(2_000)), "not owned");
    assert_eq!(l.next_acquire_at(), m(11_000));
}

#[test]
fn renewal_does_not_move_the_rebalance_deadline() {
    let mut l = leases();
    l.on_acquired(t(0), m(0), [0, 1, 2]);
    let lost = l.on_renewed(
        t(10_000),
        &RenewOutcome {
            renewed: vec![0, 2],
            lost: vec![1],
        },
    );
    assert_eq!(lost, vec![1]);
    assert_eq!(l.owned().iter().copied().collect::<Vec<_>>(), vec![0, 2]);
    assert_eq!(l.valid_until(), Timestamp::from_millis(40_000));
    assert_eq!(
        l.next_acquire_at(),
        m(10_000),
        "rebalancing keeps its own deadline"
    );
    assert_eq!(l.next_renew_at(), m(20_000));
}

#[test]
fn unaccounted_buckets_in_a_renewal_are_dropped() {
    let mut l = leases();
    l.on_acquired(t(0), m(0), [0, 1]);
    let lost = l.on_renewed(
        t(5_000),
        &RenewOutcome {
            renewed: vec![0],
            lost: vec![],
        },
    );
    assert_eq!(lost, vec![1]);
    assert!(!l.is_valid(1, t(6_000)));
}

#[test]
fn expiry_drops_everything_once() {
    let mut l = leases();
    l.on_acquired(t(0), m(0), [4, 5]);
    assert_eq!(l.expire_if_due(t(29_999)), 0);
    assert_eq!(l.expire_if_due(t(30_000)), 2);
    assert_eq!(
        l.expire_if_due(t(30_001)),
        0,
        "an empty set does not expire again"
    );
    assert!(l.acquire_due(m(30_000)));
}

#[test]
fn a_lease_runs_out_by_whichever_clock_says_so_first() {
    let mut l = leases();
    l.on_acquired(t(0), m(0), [1]);
    let wall_stepped_back = Now::new(Timestamp::from_millis(10_000), m(30_000));
    assert!(
        !l.is_valid(1, wall_stepped_back),
        "the monotonic clock bounds a lease the wall clock would stretch"
    );
    let wall_stepped_ahead = Now::new(Timestamp::from_millis(30_000), m(10_000));
    assert!(
        !l.is_valid(1, wall_stepped_ahead),
        "the stored expiry by the wall clock is what the other relays see"
    );
    assert_eq!(
        l.remaining(Now::new(Timestamp::from_millis(5_000), m(20_000))),
        Duration::from_secs(10)
    );
    assert_eq!(l.expire_if_due(wall_stepped_back), 1);
}

#[test]
fn ownership_changes_are_reported() {
    let mut l = leases();
    assert_eq!(
        l.on_acquired(t(0), m(0), [1]),
        OwnershipChange {
            gained: true,
            changed: true
        }
    );
    assert_eq!(
        l.on_acquired(t(1), m(1), [1]),
        OwnershipChange {
            gained: false,
            changed: false
        }
    );
    assert_eq!(
        l.on_acquired(t(2), m(2), []),
        OwnershipChange {
            gained: false,
            changed: true
        }
    );
}

#[test]
fn a_slow_store_moves_the_renewal_ahead_of_the_interval() {
    // Lease 6 s, renew every 5 s: calls of 2 s would land the interval's renewal at
    // 7 s, past the deadline.
    let mut l = Leases::new(
        m(0),
        Duration::from_millis(6_000),
        Duration::from_millis(5_000),
        true,
    );
    assert_eq!(l.record_call(m(0), m(2_000)), None);
    l.on_acquired(t(0), m(2_000), [1]);
    assert_eq!(l.next_renew_at(), m(3_000));
    assert!(
        l.record_call(m(3_000), m(6_000)).is_some(),
        "half a lease is slow"
    );
}

#[test]
fn with_renewal_a_slow_acquisition_leaves_an_interval_before_the_next() {
    let mut l = leases();
    // Started at 0, answered at 15 s: longer than the 10 s renew interval.
    l.on_acquired(t(0), m(15_000), [1]);
    assert!(!l.acquire_due(m(24_999)));
    assert!(l.acquire_due(m(25_000)));
    // Renewal still counts from the start: the lease was written at 0.
    assert!(l.renew_due(m(10_000)));
    let mut without = Leases::new(
        m(0),
        Duration::from_millis(30_000),
        Duration::from_millis(10_000),
        false,
    );
    without.on_acquired(t(0), m(15_000), [1]);
    assert!(without.acquire_due(m(10_000)));
}
