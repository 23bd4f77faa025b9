use super::*;

const LEASE: Duration = Duration::from_secs(30);
const NOW: Timestamp = Timestamp::from_millis(1_765_000_000_000);

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn before(s: u64) -> Timestamp {
    NOW.saturating_sub(secs(s))
}

fn after(s: u64) -> Timestamp {
    NOW.saturating_add(secs(s))
}

fn held(owner: &str, until: Timestamp) -> LeaseRow {
    LeaseRow {
        owner: Some(owner.to_owned()),
        expires_at: until,
    }
}

fn rows(count: u64, oldest: Timestamp) -> BucketRows {
    BucketRows {
        count,
        oldest: Some(oldest),
    }
}

fn snapshot() -> StatusSnapshot {
    let mut s = StatusSnapshot::default();
    s.leases.relays.insert("a".into(), before(2));
    s.leases.relays.insert("b".into(), before(29));
    s.leases.relays.insert("old".into(), before(300));
    s.leases.leases.insert(0, held("a", after(28)));
    s.leases.leases.insert(1, held("b", after(1)));
    s.leases.leases.insert(2, held("old", before(270)));
    s.leases.leases.insert(3, LeaseRow::free());
    s.leases.leases.insert(9, held("a", after(28)));
    s
}

fn relay<'a>(status: &'a OutboxStatus, id: &str) -> &'a RelayStatus {
    status.relays.iter().find(|r| r.relay_id == id).unwrap()
}

#[test]
fn relays_are_alive_by_the_fair_split_rule() {
    let status = OutboxStatus::assemble(&snapshot(), 5, LEASE, NOW);
    let ids: Vec<&str> = status.relays.iter().map(|r| r.relay_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "old"]);
    let a = relay(&status, "a");
    assert!(a.alive);
    assert_eq!(a.age, secs(2));
    assert_eq!(
        a.fair_share,
        Some(3),
        "5 buckets over a and b: a ranks first"
    );
    assert_eq!(relay(&status, "b").fair_share, Some(2));
    let old = relay(&status, "old");
    assert!(!old.alive);
    assert_eq!(old.fair_share, None);
    assert_eq!(old.age, secs(300));
    assert_eq!(status.alive_relays().count(), 2);
}

#[test]
fn the_liveness_boundary_is_the_planners() {
    for (seen, lease) in [(before(30), LEASE), (before(29), LEASE), (NOW, secs(1))] {
        let mut s = StatusSnapshot::default();
        s.leases.relays.insert("r".into(), seen);
        let status = OutboxStatus::assemble(&s, 4, lease, NOW);
        assert_eq!(
            status.relays[0].alive,
            relay_is_live(seen, NOW, lease),
            "seen {seen}, lease {lease:?}"
        );
        // The planner gives a relay that is not live no share of its own.
        let plan = crate::plan_acquisition(&s.leases, "zz", NOW, lease, 4);
        let counted = plan.share < 4;
        assert_eq!(status.relays[0].alive, counted, "seen {seen}");
    }
    let mut s = StatusSnapshot::default();
    s.leases.relays.insert("r".into(), before(30));
    assert!(
        !OutboxStatus::assemble(&s, 4, LEASE, NOW).relays[0].alive,
        "exactly a lease old is stale"
    );
}

#[test]
fn leases_are_held_expired_free_or_missing() {
    let status = OutboxStatus::assemble(&snapshot(), 5, LEASE, NOW);
    let lease = |b: usize| status.buckets[b].lease.clone();
    assert_eq!(
        lease(0),
        LeaseState::Held {
            owner: "a".into(),
            expires_at: after(28),
            left: secs(28),
            owner_alive: true
        }
    );
    assert_eq!(lease(1).holder(), Some("b"));
    assert_eq!(
        lease(2),
        LeaseState::Expired {
            owner: "old".into(),
            expired_at: before(270),
            ago: secs(270)
        }
    );
    assert_eq!(lease(3), LeaseState::Free);
    assert_eq!(lease(4), LeaseState::Missing);
    assert_eq!(status.buckets.len(), 5);
    assert_eq!(relay(&status, "a").owned, [0], "bucket 9 is out of range");
    assert!(relay(&status, "old").owned.is_empty(), "its lease expired");
}

#[test]
fn a_lease_expiring_now_is_expired_as_the_planner_sees_it() {
    let mut s = StatusSnapshot::default();
    s.leases.leases.insert(0, held("a", NOW));
    let status = OutboxStatus::assemble(&s, 1, LEASE, NOW);
    assert!(matches!(
        status.buckets[0].lease,
        LeaseState::Expired { .. }
    ));
    let plan = crate::plan_acquisition(&s.leases, "b", NOW, LEASE, 1);
    assert_eq!(plan.claim, [0], "the planner claims it too");
}

#[test]
fn a_held_lease_of_a_stale_relay_says_so() {
    let mut s = StatusSnapshot::default();
    s.leases.relays.insert("gone".into(), before(40));
    s.leases.leases.insert(0, held("gone", after(5)));
    let status = OutboxStatus::assemble(&s, 1, LEASE, NOW);
    assert!(matches!(
        status.buckets[0].lease,
        LeaseState::Held {
            owner_alive: false,
            ..
        }
    ));
    assert_eq!(relay(&status, "gone").owned, [0]);
}

#[test]
fn pending_and_parked_rows_per_bucket() {
    let mut s = snapshot();
    s.pending.insert(0, rows(12, before(3)));
    s.pending.insert(3, rows(1, before(60)));
    s.parked.insert(0, rows(2, before(100)));
    let status = OutboxStatus::assemble(&s, 5, LEASE, NOW);
    let b0 = &status.buckets[0];
    assert_eq!((b0.pending, b0.parked), (12, 2));
    assert_eq!(b0.oldest_pending, Some(before(3)));
    assert_eq!(b0.oldest_pending_age, Some(secs(3)));
    assert_eq!(status.buckets[1].pending, 0);
    assert_eq!(status.buckets[1].oldest_pending_age, None);
    assert_eq!(status.pending(), 13);
    assert_eq!(status.parked(), 2);
    assert_eq!(status.oldest_pending_age(), Some(secs(60)));
    let unowned: Vec<i32> = status.unowned_with_pending().map(|b| b.bucket).collect();
    assert_eq!(unowned, [3], "bucket 3 is free and holds a row");
    assert!(status.out_of_range.is_empty());
    assert_eq!(status.out_of_range_rows(), 0);
}

#[test]
fn rows_outside_the_bucket_count_are_listed_apart() {
    let mut s = StatusSnapshot::default();
    s.pending.insert(-1, rows(1, before(1)));
    s.pending.insert(1, rows(4, before(1)));
    s.pending.insert(4, rows(3, before(1)));
    s.pending.insert(7, BucketRows::default());
    s.parked.insert(4, rows(2, before(1)));
    s.parked.insert(9, rows(1, before(1)));
    let status = OutboxStatus::assemble(&s, 4, LEASE, NOW);
    assert_eq!(
        status.out_of_range,
        [
            OutOfRange {
                bucket: -1,
                pending: 1,
                parked: 0
            },
            OutOfRange {
                bucket: 4,
                pending: 3,
                parked: 2
            },
            OutOfRange {
                bucket: 9,
                pending: 0,
                parked: 1
            },
        ]
    );
    assert_eq!(status.out_of_range_rows(), 7);
    assert_eq!(
        status.pending(),
        4,
        "only rows of 0..4 count as pending here"
    );
}

#[test]
fn a_heartbeat_from_the_future_has_no_age() {
    let mut s = StatusSnapshot::default();
    s.leases.relays.insert("skewed".into(), after(3));
    let status = OutboxStatus::assemble(&s, 1, LEASE, NOW);
    assert_eq!(status.relays[0].age, Duration::ZERO);
    assert!(status.relays[0].alive);
}
