//! Failures and backoff: each lane backs off alone, for longer with each failure in a
//! row, and only its own success resets it; hints never cut a backoff short.

use super::*;

#[test]
fn partial_acknowledgement_deletes_the_prefix_then_backs_off() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(h.briefs(), ["publish 0 [1, 2]", "fetch 0 after 2 limit 4"]);
    h.publish_failed(0, 1);
    // The delete waits for the lane's store call (the fetch behind the failed batch).
    h.fetched(0, rows(0, 3..=4));
    assert_eq!(
        h.briefs(),
        ["delete 0 [1]"],
        "only the acknowledged prefix is deleted"
    );
    h.deleted(0);
    assert_eq!(h.cmd(), None, "backing off");
    assert_eq!(h.m.poll_timeout(), Some(Monotonic::from_millis(1_000)));
    h.hint(0);
    assert_eq!(h.cmd(), None, "hints do not cut a backoff short");
    h.at(999);
    assert_eq!(h.cmd(), None);
    h.at(1_000);
    let briefs = h.briefs();
    assert!(
        briefs.contains(&"fetch 0 from head limit 2".to_string()),
        "{briefs:?}"
    );
    assert!(
        !briefs.iter().any(|b| b.starts_with("publish")),
        "the batch fetched behind the failure is gone: {briefs:?}"
    );
    assert_eq!(lane_backoffs(&h.events(), 0), [(1_000, 1)]);
}

#[test]
fn an_acknowledgement_of_part_of_the_batch_without_error_is_still_a_failure() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.cmds();
    h.fetched(0, rows(0, 1..=2));
    h.cmds();
    h.published(
        0,
        PublishOutcome {
            acknowledged: 1,
            error: None,
        },
    );
    let events = h.events();
    assert!(events.iter().any(|e| matches!(
        e,
        RelayEvent::Published {
            bucket: 0,
            attempted: 2,
            acknowledged: 1,
            failed: true,
            ..
        }
    )));
    assert_eq!(lane_backoffs(&events, 0), [(1_000, 1)]);
}

#[test]
fn an_overstated_acknowledgement_is_clamped_to_the_batch() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.cmds();
    h.fetched(0, rows(0, 1..=1));
    assert_eq!(h.briefs(), ["publish 0 [1]"]);
    h.published(
        0,
        PublishOutcome {
            acknowledged: 7,
            error: None,
        },
    );
    assert_eq!(h.briefs(), ["delete 0 [1]"]);
    assert_eq!(lane_backoffs(&h.events(), 0), []);
}

#[test]
fn a_lanes_backoff_grows_while_it_keeps_failing_and_resets_only_on_its_own_success() {
    let mut h = TestRelay::renewing();
    let mut w = World::owning(&[0, 1]);
    w.add(0, 3);
    w.fail_fetch.insert(0);
    // Bucket 1 gets a row at every wake-up and publishes it: it succeeds all along, as
    // do the probes every second and the renewals and acquisitions every 10 s.
    w.trickle = vec![1];
    w.tick = Some(250);
    h.run(&mut w, 30_000);
    assert_eq!(
        h.logged_backoffs(0),
        [
            (0, 1_000, 1),
            (1_000, 2_000, 2),
            (3_000, 4_000, 3),
            (7_000, 8_000, 4),
            (15_000, 16_000, 5)
        ],
        "1, 2, 4, 8, 16 x error_backoff, each retry at the end of the last backoff"
    );
    let failures = [0, 1_000, 3_000, 7_000, 15_000, 31_000];
    for pair in failures.windows(2) {
        assert!(
            w.publishes_of(1)
                .iter()
                .any(|(t, _)| *t > pair[0] && *t < pair[1]),
            "bucket 1 published between {} and {}: {:?}",
            pair[0],
            pair[1],
            w.publishes_of(1)
        );
    }
    assert!(h.logged().iter().any(|e| matches!(e, RelayEvent::Joined)));
    assert_eq!(h.logged_backoffs(1), [], "bucket 1 never failed");
    // The store recovers: at 31 s the lane drains its bucket, a success of its own.
    w.fail_fetch.clear();
    h.run(&mut w, 31_500);
    assert_eq!(w.pending_in(0), 0);
    // The next failure starts the count over.
    w.fail_fetch.insert(0);
    w.add(0, 1);
    h.hint(0);
    h.run(&mut w, 31_600);
    let backoffs = h.logged_backoffs(0);
    assert_eq!(backoffs.len(), 6, "{backoffs:?}");
    assert_eq!(
        backoffs.last().map(|(_, delay, count)| (*delay, *count)),
        Some((1_000, 1)),
        "{backoffs:?}"
    );
}

#[test]
fn a_failing_lane_never_delays_another() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetch_failed(0);
    h.at(200);
    h.hint(0);
    h.hint(1);
    assert_eq!(
        h.briefs(),
        ["fetch 1 from head limit 2"],
        "bucket 1 starts while bucket 0 backs off (and its hint is ignored)"
    );
    h.fetched(1, rows(1, 1..=2));
    assert_eq!(h.briefs(), ["publish 1 [1, 2]", "fetch 1 after 2 limit 4"]);
    // Bucket 0's backoff ends while bucket 1 is busy: it does not wait for bucket 1.
    h.at(1_000);
    let commands = h.cmds();
    let briefs: Vec<String> = commands.iter().map(brief).collect();
    assert!(
        briefs.contains(&"fetch 0 from head limit 2".to_string()),
        "{briefs:?}"
    );
    if briefs.iter().any(|b| b.starts_with("probe")) {
        h.m.handle(h.now, Outcome::Probed(Ok(vec![])));
    }
    h.fetched(0, rows(0, 5..=5));
    assert_eq!(h.briefs(), ["publish 0 [5]"]);
    // Bucket 0 fails again, while bucket 1's publish and fetch are in flight.
    h.publish_failed(0, 0);
    h.fetched(1, rows(1, 3..=4));
    h.acked(1, 2);
    assert_eq!(
        h.briefs(),
        ["delete 1 [1, 2]", "publish 1 [3, 4]"],
        "bucket 1 goes on as if nothing happened"
    );
    let events = h.events();
    assert_eq!(lane_backoffs(&events, 0), [(1_000, 1), (2_000, 2)]);
    assert_eq!(lane_backoffs(&events, 1), []);
    assert!(events.iter().any(|e| matches!(
        e,
        RelayEvent::StoreFailed {
            operation: "next_batch",
            bucket: Some(0),
            ..
        }
    )));
}

/// The driver sleeps until `poll_timeout` and then polls: a deadline that is already past
/// while nothing is due would have it spin until the next outcome arrives.
#[test]
fn poll_timeout_is_never_in_the_past_while_a_lane_recovers_from_a_backoff() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.cmds();
    h.fetch_failed(0);
    assert_eq!(h.m.poll_timeout(), Some(Monotonic::from_millis(1_000)));
    h.at(1_000);
    for command in h.cmds() {
        if matches!(command, Command::ProbePending { .. }) {
            h.m.handle(h.now, Outcome::Probed(Ok(vec![0])));
        }
    }
    // The retry fetch is in flight; nothing is due until an outcome arrives.
    h.at(1_500);
    assert_eq!(h.cmd(), None);
    let deadline = h.m.poll_timeout().expect("the leases have a deadline");
    assert!(
        millis(deadline) > 1_500,
        "deadline {deadline} is in the past at 1500 ms with nothing to do"
    );
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(h.briefs(), ["publish 0 [1, 2]", "fetch 0 after 2 limit 4"]);
    h.at(1_600);
    let deadline = h.m.poll_timeout().expect("the leases have a deadline");
    assert!(
        millis(deadline) > 1_600,
        "deadline {deadline} is in the past at 1600 ms with nothing to do"
    );
}

/// The same deadline while the lane, its backoff over, waits for a slot held by another
/// lane: nothing is due for it until that lane lets go, which an outcome reports.
#[test]
fn poll_timeout_is_never_in_the_past_while_a_lane_waits_for_a_slot() {
    let mut h = TestRelay::new(options().max_concurrent_lanes(1).build().unwrap(), RENEWING);
    h.start(&[0, 1], &[0, 1]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetch_failed(0);
    assert_eq!(h.briefs(), ["fetch 1 from head limit 2"]);
    h.fetched(1, rows(1, 11..=12));
    assert_eq!(
        h.briefs(),
        ["publish 1 [11, 12]", "fetch 1 after 12 limit 4"]
    );
    h.at(1_000);
    for command in h.cmds() {
        assert!(
            lane_of(&command).is_none(),
            "the slot is taken: {command:?}"
        );
        if matches!(command, Command::ProbePending { .. }) {
            h.m.handle(h.now, Outcome::Probed(Ok(vec![0, 1])));
        }
    }
    h.at(1_500);
    assert_eq!(h.cmd(), None);
    let deadline = h.m.poll_timeout().expect("the leases have a deadline");
    assert!(
        millis(deadline) > 1_500,
        "deadline {deadline} is in the past at 1500 ms with nothing to do"
    );
}
