//! Leases lost while several lanes are busy, and lease calls slower than the renew
//! interval.
//!
//! These tests do not pin down when an acquisition runs relative to busy lanes: any
//! acquisition the machine asks for is answered, whenever it comes.

use std::time::Duration;

use super::*;

fn sorted(mut briefs: Vec<String>) -> Vec<String> {
    briefs.sort();
    briefs
}

#[test]
fn a_renewal_that_loses_some_buckets_stops_their_lanes_and_the_others_go_on() {
    let mut h = TestRelay::quiet();
    // Answered at 0.5 s: the renewal is due at 10 s, the next acquisition at 10.5 s.
    h.join_at(500, &[0, 1, 2], &[0, 1, 2]);
    assert_eq!(h.cmds().len(), 3);
    h.fetched(0, rows(0, 1..=2));
    h.fetched(1, rows(1, 11..=11));
    h.fetched(2, rows(2, 21..=22));
    assert_eq!(
        sorted(h.briefs()),
        [
            "fetch 0 after 2 limit 4",
            "fetch 2 after 22 limit 4",
            "publish 0 [1, 2]",
            "publish 1 [11]",
            "publish 2 [21, 22]",
        ]
    );
    h.at(10_000);
    assert_eq!(h.briefs(), ["renew [0, 1, 2]"]);
    h.renewed(&[2], &[0, 1]);
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::LeaseExpired { buckets: 2 }))
    );
    assert_eq!(
        h.m.publishing_buckets(),
        [0, 1, 2],
        "publishes in flight are still awaited"
    );
    // Every call in flight comes back, the lost lanes' as successes.
    h.fetched(0, rows(0, 3..=4));
    h.acked(0, 2);
    h.acked(1, 1);
    h.fetched(2, rows(2, 23..=24));
    h.acked(2, 2);
    let events = h.events();
    for bucket in [0, 1] {
        assert!(
            events
                .iter()
                .any(|e| matches!(e, RelayEvent::Published { bucket: b, failed: false, .. } if *b == bucket)),
            "bucket {bucket}'s result is accepted: {events:?}"
        );
    }
    let mut seen = Vec::new();
    for _ in 0..10 {
        let commands = h.cmds();
        if commands.is_empty() {
            break;
        }
        for command in commands {
            assert!(
                !matches!(lane_of(&command), Some(0 | 1)),
                "nothing for a lost bucket: {command:?}"
            );
            seen.push(brief(&command));
            match command {
                Command::AcquireLeases { .. } => {
                    h.m.handle(h.now, Outcome::Acquired(Ok(vec![2].into())));
                }
                Command::DeletePublished { bucket: 2, .. } => h.deleted(2),
                _ => {}
            }
        }
    }
    assert!(
        seen.contains(&"delete 2 [21, 22]".to_string())
            && seen.contains(&"publish 2 [23, 24]".to_string()),
        "bucket 2 goes on: {seen:?}"
    );
}

#[test]
fn leases_running_out_by_the_clock_stop_every_busy_lane() {
    let mut h = TestRelay::quiet();
    h.join_at(500, &[0, 1], &[0, 1]);
    assert_eq!(h.cmds().len(), 2);
    h.fetched(0, rows(0, 1..=2));
    h.fetched(1, rows(1, 11..=11));
    assert_eq!(
        sorted(h.briefs()),
        [
            "fetch 0 after 2 limit 4",
            "publish 0 [1, 2]",
            "publish 1 [11]"
        ]
    );
    h.at(10_000);
    assert_eq!(h.briefs(), ["renew [0, 1]"]);
    h.m.handle(
        h.now,
        Outcome::Renewed(Err(StoreError::unavailable("db down"))),
    );
    // Nothing answers until the leases (written at 0 for 30 s) have run out.
    h.at(30_000);
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::LeaseExpired { buckets: 2 }))
    );
    h.acked(0, 2);
    h.fetched(0, rows(0, 3..=4));
    h.acked(1, 1);
    let briefs = h.briefs();
    assert!(
        briefs.iter().all(|b| b == "acquire"),
        "no delete, no publish, no fetch: {briefs:?}"
    );
    assert!(briefs.contains(&"acquire".to_string()), "{briefs:?}");
    // Won back: the new term starts from the head (rows 1, 2 and 11 were not deleted).
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0, 1].into())));
    assert_eq!(h.briefs(), ["probe [0, 1]"]);
    h.m.handle(h.now, Outcome::Probed(Ok(vec![0, 1])));
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 2", "fetch 1 from head limit 2"]
    );
}

#[test]
fn a_renewal_in_flight_does_not_hold_the_lanes_up() {
    let mut h = TestRelay::quiet();
    h.join_at(500, &[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(h.briefs(), ["publish 0 [1, 2]", "fetch 0 after 2 limit 4"]);
    h.at(10_000);
    assert_eq!(h.briefs(), ["renew [0]"]);
    h.at(10_100);
    h.fetched(0, rows(0, 3..=4));
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [1, 2]", "publish 0 [3, 4]"]);
}

#[test]
fn a_renewal_slower_than_the_renew_interval_does_not_stop_the_lanes_while_the_lease_is_valid() {
    let mut h = TestRelay::renewing();
    // Answered at 0.5 s: the renewal is due at 10 s, the next acquisition at 10.5 s.
    h.join_at(500, &[0, 1], &[]);
    let mut w = World::owning(&[0, 1]);
    // Writers commit to both buckets and hint every half second; the renewal issued at
    // 10 s is answered only at 25 s (the lease, written at 0, is valid until 30 s).
    w.trickle = vec![0, 1];
    w.tick = Some(500);
    w.hold_renewals = true;
    h.run(&mut w, 25_000);
    let held: Vec<(i64, String)> = w.held.iter().map(|(t, c)| (*t, brief(c))).collect();
    assert_eq!(held, [(10_000, "renew [0, 1]".to_string())]);
    for bucket in [0, 1] {
        let last = w.publishes_of(bucket).last().map(|(t, _)| *t);
        assert!(
            last.is_some_and(|t| t >= 24_000),
            "bucket {bucket} last published at {last:?}: the lanes stopped while the \
             renewal was out"
        );
    }
    h.renewed(&[0, 1], &[]);
    assert_eq!(h.m.lease_valid_until(), Timestamp::from_millis(40_000));
}

#[test]
fn discovery_keeps_its_deadline_while_a_renewal_is_in_flight() {
    let mut h = TestRelay::new(
        options()
            .poll_interval(Duration::from_millis(300))
            .build()
            .unwrap(),
        RENEWING,
    );
    // Answered at 0.9 s: probes are due every 0.3 s from 0.9 s, the renewal at 10 s and
    // the next acquisition at 10.9 s.
    h.join_at(900, &[0], &[]);
    h.at(9_900);
    assert_eq!(h.briefs(), ["probe [0]"]);
    h.m.handle(h.now, Outcome::Probed(Ok(vec![])));
    h.at(10_000);
    assert_eq!(h.briefs(), ["renew [0]"]);
    assert_eq!(
        h.m.poll_timeout(),
        Some(Monotonic::from_millis(10_200)),
        "the next probe is due at 10.2 s, renewal or not"
    );
    h.at(10_200);
    assert_eq!(h.briefs(), ["probe [0]"]);
}
