//! Leases: validity from the start of the call, expiry by the local clock, renewal
//! beside the lanes, no delete after a lost lease, relay-level backoff, ownership events.

use super::*;
use crate::error::Misconfiguration;

#[test]
fn lease_validity_is_rechecked_after_the_fetch() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.at(30_000); // the lease (from t=0) ran out while the fetch was in flight
    h.fetched(0, rows(0, 1..=1));
    let briefs = h.briefs();
    assert!(
        !briefs.iter().any(|b| b.starts_with("publish")),
        "no publish without a valid lease: {briefs:?}"
    );
    assert!(briefs.contains(&"acquire".to_string()), "{briefs:?}");
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::LeaseExpired { buckets: 1 }))
    );
}

#[test]
fn lease_is_measured_from_before_acquisition() {
    let mut h = TestRelay::renewing();
    assert_eq!(
        h.cmd(),
        Some(Command::AcquireLeases {
            now: h.now.wall,
            busy: vec![]
        })
    );
    h.at(5_000); // slow acquisition
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0].into())));
    assert_eq!(h.m.lease_valid_until(), Timestamp::from_millis(30_000));
    assert!(h.m.may_act_on(0, at(29_999)));
    assert!(!h.m.may_act_on(0, at(30_000)), "expiry is exclusive");
}

#[test]
fn renewal_runs_beside_the_publishes_of_several_lanes() {
    let mut h = TestRelay::quiet();
    // Answered at 0.5 s: the next acquisition is due at 10.5 s, the renewal at 10 s.
    h.join_at(500, &[0, 1], &[0, 1]);
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 2", "fetch 1 from head limit 2"]
    );
    h.fetched(0, rows(0, 1..=1));
    h.fetched(1, rows(1, 2..=2));
    assert_eq!(h.briefs(), ["publish 0 [1]", "publish 1 [2]"]);
    h.at(10_000);
    assert_eq!(h.briefs(), ["renew [0, 1]"], "beside both publishes");
    h.renewed(&[0, 1], &[]);
    assert_eq!(
        h.m.lease_valid_until(),
        Timestamp::from_millis(40_000),
        "renewed from the start of the renewal"
    );
    h.at(10_100);
    h.acked(0, 1);
    h.acked(1, 1);
    assert_eq!(h.briefs(), ["delete 0 [1]", "delete 1 [2]"]);
}

#[test]
fn a_lease_lost_during_a_publish_deletes_nothing() {
    let mut h = TestRelay::quiet();
    h.join_at(500, &[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=1));
    assert_eq!(h.briefs(), ["publish 0 [1]"]);
    h.at(10_000);
    assert_eq!(h.briefs(), ["renew [0]"]);
    h.renewed(&[], &[0]);
    let briefs = h.briefs();
    assert!(briefs.iter().all(|b| b == "acquire"), "{briefs:?}");
    h.acked(0, 1);
    let briefs = h.briefs();
    assert!(
        briefs.iter().all(|b| b == "acquire"),
        "no delete after losing the lease: {briefs:?}"
    );
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RelayEvent::LeaseExpired { buckets: 1 }))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        RelayEvent::Published {
            bucket: 0,
            acknowledged: 1,
            ..
        }
    )));
}

#[test]
fn a_lease_expiring_during_a_publish_deletes_nothing() {
    let mut h = TestRelay::quiet();
    h.join_at(500, &[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=1));
    assert_eq!(h.briefs(), ["publish 0 [1]"]);
    h.at(10_000);
    assert_eq!(h.briefs(), ["renew [0]"]);
    h.m.handle(
        h.now,
        Outcome::Renewed(Err(StoreError::unavailable("db down"))),
    );
    // The store stays unreachable past the lease (written at 0 for 30 s).
    h.at(30_000);
    assert_eq!(h.m.owned().count(), 0);
    h.acked(0, 1);
    let briefs = h.briefs();
    assert!(
        !briefs.iter().any(|b| b.starts_with("delete")),
        "{briefs:?}"
    );
    assert!(briefs.contains(&"acquire".to_string()), "{briefs:?}");
}

#[test]
fn relay_level_store_errors_back_off_exponentially_and_recover() {
    let mut h = TestRelay::renewing();
    assert!(matches!(h.cmd(), Some(Command::AcquireLeases { .. })));
    h.m.handle(
        h.now,
        Outcome::Acquired(Err(StoreError::unavailable("down"))),
    );
    assert_eq!(h.m.poll_timeout(), Some(Monotonic::from_millis(1_000)));
    h.at(1_000);
    assert!(matches!(h.cmd(), Some(Command::AcquireLeases { .. })));
    h.m.handle(
        h.now,
        Outcome::Acquired(Err(StoreError::unavailable("down"))),
    );
    assert_eq!(
        h.m.poll_timeout(),
        Some(Monotonic::from_millis(3_000)),
        "second failure waits twice as long"
    );
    let backoffs: Vec<(Option<i32>, u128, u32)> = h
        .events()
        .iter()
        .filter_map(|e| match e {
            RelayEvent::BackingOff {
                bucket,
                delay,
                consecutive_failures,
                ..
            } => Some((*bucket, delay.as_millis(), *consecutive_failures)),
            _ => None,
        })
        .collect();
    assert_eq!(backoffs, [(None, 1_000, 1), (None, 2_000, 2)]);
    h.at(3_000);
    assert!(matches!(h.cmd(), Some(Command::AcquireLeases { .. })));
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0].into())));
    assert_eq!(h.cmd(), Some(Command::ProbePending { buckets: vec![0] }));
}

#[test]
fn a_failed_acquisition_leaves_the_relay_owning_nothing_until_the_next_one() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[]);
    let now = h.idle_until_acquisition();
    h.events();
    // The store may have applied the call (releasing bucket 1 to a newcomer) before the
    // error reached us: bucket 1 may be someone else's already.
    h.m.handle(
        now,
        Outcome::Acquired(Err(StoreError::unavailable("connection reset"))),
    );
    assert!(!h.m.may_act_on(0, h.now) && !h.m.may_act_on(1, h.now));
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::OwnershipChanged { owned } if owned.is_empty()))
    );
    let retry = h.m.poll_timeout().unwrap();
    h.at(millis(retry));
    assert!(matches!(h.cmd(), Some(Command::AcquireLeases { .. })));
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0].into())));
    assert!(h.m.may_act_on(0, h.now) && !h.m.may_act_on(1, h.now));
}

#[test]
fn misconfiguration_stops_the_relay() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[]);
    h.at(1_000);
    assert!(matches!(h.cmd(), Some(Command::ProbePending { .. })));
    let error = Misconfiguration::BucketOutOfRange {
        bucket: 9,
        bucket_count: 8,
    };
    h.m.handle(h.now, Outcome::Probed(Err(error.clone().into())));
    assert_eq!(h.cmd(), None);
    assert_eq!(h.m.poll_timeout(), None);
    assert!(h.m.is_finished());
    assert_eq!(h.m.fatal_error(), Some(&error));
    assert!(h.events().iter().any(|e| matches!(e, RelayEvent::Fatal(_))));
}

#[test]
fn a_misconfiguration_reported_by_a_lane_stops_every_lane() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[0, 1]);
    assert_eq!(h.cmds().len(), 2);
    let error = Misconfiguration::BucketOutOfRange {
        bucket: 9,
        bucket_count: 8,
    };
    h.fetched(1, rows(1, 1..=1));
    h.m.handle(
        h.now,
        Outcome::Fetched {
            bucket: 0,
            result: Err(error.clone().into()),
        },
    );
    assert_eq!(
        h.briefs(),
        Vec::<String>::new(),
        "not even bucket 1's publish"
    );
    assert_eq!(h.m.fatal_error(), Some(&error));
    assert_eq!(h.m.poll_timeout(), None);
}

#[test]
fn a_relay_without_buckets_only_waits_for_the_next_ownership_refresh() {
    let mut h = TestRelay::renewing();
    h.start(&[], &[]);
    assert_eq!(h.cmd(), None);
    assert_eq!(
        h.m.poll_timeout(),
        Some(Monotonic::from_millis(10_000)),
        "no per-second polling timer"
    );
    h.m.handle_hint(h.now, Hint::Unknown);
    h.m.handle_hint(h.now, Hint::Bucket(3));
    assert_eq!(
        h.cmd(),
        None,
        "hints give no work to a relay that owns nothing"
    );
    h.at(10_000);
    assert_eq!(
        h.cmd(),
        Some(Command::AcquireLeases {
            now: h.now.wall,
            busy: vec![]
        }),
        "still heartbeating"
    );
}

#[test]
fn a_long_poll_interval_is_capped_by_the_renewal_deadline() {
    let mut h = TestRelay::quiet();
    h.start(&[0], &[]);
    assert_eq!(h.cmd(), None);
    assert_eq!(h.m.poll_timeout(), Some(Monotonic::from_millis(10_000)));
}

#[test]
fn readiness_and_every_ownership_change_are_events() {
    // The driver decides nothing: its readiness flag and its notifier's owned set follow
    // these events alone, so each change must be reported, whatever caused it.
    let mut h = TestRelay::renewing();
    h.start(&[], &[]);
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [RelayEvent::Joined, RelayEvent::OwnershipChanged { owned }, ..] if owned.is_empty()
        ),
        "the first answer makes the (empty) owned set known: {events:?}"
    );
    let now = h.idle_until_acquisition();
    h.m.handle(now, Outcome::Acquired(Ok(vec![3].into())));
    let events = h.events();
    assert!(
        !events.iter().any(|e| matches!(e, RelayEvent::Joined)),
        "joined once"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RelayEvent::OwnershipChanged { owned } if owned == &[3]))
    );
    // Renewals never answer: the lease runs out by the local clock.
    h.at(now.wall.as_millis() + 30_000);
    for command in h.cmds() {
        assert!(
            lane_of(&command).is_none(),
            "no work on an expired lease: {command:?}"
        );
    }
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RelayEvent::OwnershipChanged { owned } if owned.is_empty())),
        "an expiry is an ownership change too: {events:?}"
    );
    assert_eq!(h.m.owned().count(), 0);
}

/// Lease 30 s, renewal every 20 s, every lease call answered after 11 s. On the clock
/// face the renewal would start at 20 s and land at 31 s, after the 30 s deadline of the
/// leases it renews. Against the deadline it starts at 30 s − 1.5 × 11 s = 13.5 s.
#[test]
fn slow_lease_calls_start_the_renewal_against_the_deadline() {
    let mut h = TestRelay::new(
        options()
            .poll_interval(std::time::Duration::from_secs(60))
            .lease_renew_interval(std::time::Duration::from_secs(20))
            .build()
            .unwrap(),
        RENEWING,
    );
    assert_eq!(h.briefs(), ["acquire"]);
    h.at(11_000);
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0].into())));
    assert_eq!(h.briefs(), ["probe [0]"]);
    h.m.handle(h.now, Outcome::Probed(Ok(vec![])));
    assert_eq!(millis(h.m.poll_timeout().unwrap()), 13_500);
    h.at(13_499);
    assert_eq!(h.cmd(), None);
    h.at(13_500);
    assert_eq!(h.briefs(), ["renew [0]"]);
    h.at(24_500);
    h.renewed(&[0], &[]);
    assert_eq!(h.m.lease_valid_until(), Timestamp::from_millis(43_500));
    // Next: 43.5 s − 16.5 s = 27 s, before the interval's 33.5 s.
    h.at(26_999);
    assert_eq!(h.cmd(), None);
    h.at(27_000);
    assert_eq!(h.briefs(), ["renew [0]"]);
    h.at(38_000);
    h.renewed(&[0], &[]);
    assert!(h.m.may_act_on(0, at(38_000)), "never lost");
    assert!(
        !h.events().iter().any(|e| matches!(
            e,
            RelayEvent::LeaseExpired { .. } | RelayEvent::LeaseCallSlow { .. }
        )),
        "11 s is under half the lease: not slow"
    );
}

#[test]
fn a_lease_call_of_half_the_lease_is_reported_slow() {
    let mut h = TestRelay::quiet();
    assert_eq!(h.briefs(), ["acquire"]);
    h.at(15_000);
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0].into())));
    let slow: Vec<_> = h
        .events()
        .into_iter()
        .filter_map(|e| match e {
            RelayEvent::LeaseCallSlow { operation, call } => Some((operation, call.took)),
            _ => None,
        })
        .collect();
    assert_eq!(
        slow,
        [("acquire_leases", std::time::Duration::from_secs(15))]
    );
}

/// A renewal deadline that passes while an acquisition is in flight cannot start until
/// the acquisition answers; the wake-up deadline must not sit in the past meanwhile, or
/// the driver spins.
#[test]
fn poll_timeout_is_never_in_the_past_while_a_slow_acquisition_runs() {
    let mut h = TestRelay::quiet();
    h.start(&[0], &[]);
    h.at(10_000);
    assert_eq!(
        h.briefs(),
        ["acquire"],
        "before the renewal due at the same time"
    );
    h.at(25_000); // the acquisition is still out; the renewal was due at 10 s
    assert_eq!(h.cmd(), None);
    let deadline = h.m.poll_timeout().expect("the leases have a deadline");
    assert!(
        millis(deadline) > 25_000,
        "deadline {deadline} is in the past at 25 s with nothing to do"
    );
}
