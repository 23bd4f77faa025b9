//! Finding work: discovery probes at the poll interval, hints, drained buckets, cycles.

use std::time::Duration;

use super::*;

#[test]
fn a_cycle_acquires_probes_fetches_publishes_and_deletes() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[1]);
    assert_eq!(h.briefs(), ["fetch 1 from head limit 2"]);
    h.fetched(1, rows(1, 1..=1));
    assert_eq!(
        h.briefs(),
        ["publish 1 [1]"],
        "a short batch drains the bucket"
    );
    h.acked(1, 1);
    assert_eq!(h.briefs(), ["delete 1 [1]"]);
    h.deleted(1);
    assert_eq!(h.cmd(), None, "drained, nothing due");
    assert_eq!(
        h.m.poll_timeout(),
        Some(Monotonic::from_millis(1_000)),
        "next discovery at the poll interval"
    );
}

#[test]
fn discovery_runs_at_the_poll_interval_while_lanes_are_busy() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(
        h.briefs(),
        ["publish 0 [1, 2]", "fetch 0 after 2 limit 4"],
        "a full batch keeps the lane ready"
    );
    h.at(1_000);
    assert_eq!(
        h.briefs(),
        ["probe [0, 1]"],
        "the probe does not wait for the busy lane"
    );
    h.m.handle(h.now, Outcome::Probed(Ok(vec![1])));
    assert_eq!(
        h.briefs(),
        ["fetch 1 from head limit 2"],
        "the probed lane starts beside the busy one"
    );
}

#[test]
fn hints_for_owned_buckets_skip_discovery() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[]);
    assert_eq!(h.cmd(), None);
    h.at(200);
    // A hint racing with the relay going idle: it stays pending and wins the next poll.
    h.hint(1);
    assert_eq!(h.briefs(), ["fetch 1 from head limit 2"]);
}

#[test]
fn a_hint_during_a_short_fetch_keeps_the_bucket_ready() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[1]);
    // The fetch reads one row (short of the batch size of 2); while it is in flight a
    // writer commits another row to bucket 1 and hints it.
    assert_eq!(h.briefs(), ["fetch 1 from head limit 2"]);
    h.hint(1);
    h.fetched(1, rows(1, 1..=1));
    // Without the hint the bucket would count as drained until the next probe.
    assert_eq!(h.briefs(), ["publish 1 [1]", "fetch 1 after 1 limit 3"]);
    h.fetched(1, Vec::new());
    h.acked(1, 1);
    assert_eq!(h.briefs(), ["delete 1 [1]"]);
    h.deleted(1);
    assert_eq!(
        h.cmd(),
        None,
        "an empty fetch with no new hint drains the bucket"
    );
}

#[test]
fn a_hint_before_the_fetch_is_issued_does_not_keep_the_bucket_ready() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[]);
    h.hint(1);
    assert_eq!(h.briefs(), ["fetch 1 from head limit 2"]);
    h.fetched(1, rows(1, 1..=1));
    assert_eq!(
        h.briefs(),
        ["publish 1 [1]"],
        "the fetch already saw the hinted commit"
    );
}

#[test]
fn foreign_and_unknown_hints() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[]);
    h.at(100);
    h.hint(5);
    assert_eq!(h.cmd(), None, "a bucket owned elsewhere is ignored");
    h.m.handle_hint(h.now, Hint::Unknown);
    assert_eq!(
        h.cmd(),
        Some(Command::ProbePending { buckets: vec![0] }),
        "unknown forces discovery"
    );
    h.m.handle(h.now, Outcome::Probed(Ok(vec![])));
    h.hint(42);
    assert_eq!(
        h.cmd(),
        Some(Command::ProbePending { buckets: vec![0] }),
        "an impossible bucket forces discovery"
    );
    assert_eq!(Hint::from_wire(-1), Hint::Unknown);
    assert_eq!(Hint::from_wire(3), Hint::Bucket(3));
}

#[test]
fn periodic_discovery_keeps_its_deadline_under_a_stream_of_hints() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[]);
    let mut probed_at = None;
    'steps: for step in 1..=15 {
        h.at(step * 100);
        h.hint(0);
        for command in h.cmds() {
            match command {
                Command::ProbePending { .. } => {
                    probed_at = Some(h.ms());
                    break 'steps;
                }
                Command::FetchBatch { bucket: 0, .. } => h.fetched(0, vec![]),
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    assert_eq!(
        probed_at,
        Some(1_000),
        "discovery ran on time despite hints"
    );
}

#[test]
fn a_failed_probe_is_retried_after_the_relay_backoff_and_lanes_go_on() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(h.briefs(), ["publish 0 [1, 2]", "fetch 0 after 2 limit 4"]);
    h.at(1_000);
    assert_eq!(h.briefs(), ["probe [0, 1]"]);
    h.m.handle(h.now, Outcome::Probed(Err(StoreError::unavailable("x"))));
    assert!(h.events().iter().any(|e| matches!(
        e,
        RelayEvent::BackingOff {
            bucket: None,
            consecutive_failures: 1,
            ..
        }
    )));
    h.fetched(0, rows(0, 3..=3));
    h.acked(0, 2);
    assert_eq!(
        h.briefs(),
        ["delete 0 [1, 2]", "publish 0 [3]"],
        "a relay-level failure does not stop a lane"
    );
    h.at(1_999);
    assert_eq!(h.briefs(), Vec::<String>::new());
    h.at(2_000);
    assert_eq!(h.briefs(), ["probe [0, 1]"]);
}

#[test]
fn a_cycle_spans_acquisition_to_idle_and_ends_at_backoff() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.at(40);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=1));
    assert_eq!(h.briefs(), ["publish 0 [1]"]);
    h.acked(0, 1);
    assert_eq!(h.briefs(), ["delete 0 [1]"]);
    h.deleted(0);
    h.at(70);
    assert_eq!(h.cmd(), None);
    let cycles: Vec<Duration> = h
        .events()
        .into_iter()
        .filter_map(|e| match e {
            RelayEvent::CycleCompleted { elapsed } => Some(elapsed),
            _ => None,
        })
        .collect();
    assert_eq!(
        cycles,
        vec![Duration::from_millis(70)],
        "one cycle from the first command to idle"
    );
    h.at(1_000);
    assert!(matches!(h.cmd(), Some(Command::ProbePending { .. })));
    h.at(1_005);
    h.m.handle(h.now, Outcome::Probed(Err(StoreError::unavailable("x"))));
    assert_eq!(h.cmd(), None);
    assert!(
        h.events().iter().any(|e| matches!(e, RelayEvent::CycleCompleted { elapsed } if *elapsed == Duration::from_millis(5))),
        "a failure ends the cycle before the backoff"
    );
}

/// Drained bucket 0 after publishing `[2]` (cursor 2), nothing in flight.
fn drained_with_cursor_at_2() -> TestRelay {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 2..=2));
    assert_eq!(h.briefs(), ["publish 0 [2]"]);
    h.acked(0, 1);
    assert_eq!(h.briefs(), ["delete 0 [2]"]);
    h.deleted(0);
    assert_eq!(h.cmd(), None, "drained");
    h
}

#[test]
fn a_cursor_read_that_contradicts_the_probe_is_read_again_from_the_head() {
    // A store that honoured the cursor wrongly (it once did, on PostgreSQL: a row below
    // the cursor committed late and every cursor read skipped it): the probe keeps
    // listing the bucket, the read past the cursor finds nothing, and nothing of the lane
    // is in flight. The row lies below the cursor; the lane reads from the head at once.
    let mut h = drained_with_cursor_at_2();
    h.at(1_000);
    assert_eq!(h.briefs(), ["probe [0]"]);
    h.m.handle(h.now, Outcome::Probed(Ok(vec![0])));
    assert_eq!(h.briefs(), ["fetch 0 after 2 limit 2"]);
    h.fetched(0, Vec::new());
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 2"],
        "the probe saw a row the cursor read did not: read from the head"
    );
    h.fetched(0, rows(0, 1..=1));
    assert_eq!(h.briefs(), ["publish 0 [1]"], "the stranded row goes out");
}

#[test]
fn an_empty_cursor_read_after_a_hint_does_not_read_the_head_again() {
    // A hint says only that something committed, maybe already read: an empty read past
    // the cursor then means drained, and the head is not read again.
    let mut h = drained_with_cursor_at_2();
    h.at(200);
    h.hint(0);
    assert_eq!(h.briefs(), ["fetch 0 after 2 limit 2"]);
    h.fetched(0, Vec::new());
    assert_eq!(h.cmd(), None, "drained");
    // Nor does a probe that found nothing.
    h.at(1_000);
    assert_eq!(h.briefs(), ["probe [0]"]);
    h.m.handle(h.now, Outcome::Probed(Ok(vec![])));
    assert_eq!(h.cmd(), None);
}
