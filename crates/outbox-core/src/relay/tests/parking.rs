//! Parking: a row the publisher blames for good is counted, parked at the limit, and its
//! key's later rows are parked behind it while other keys flow; errors that blame no row
//! never park; a hold an operator released is noticed and the lane reads from the head.

use std::num::NonZeroU32;
use std::sync::Arc;

use super::*;
use crate::park::{HoldKey, ParkOutcome, ParkPolicy, ParkReason, ParkRow};

const PARKING: StoreCapabilities = StoreCapabilities {
    lease_renewal: true,
    backlog_metrics: false,
    lease_release: false,
    parking: true,
};

fn keyed(bucket: i32, id: i64, key: &str) -> OutboxMessage {
    OutboxMessage {
        key: Some(key.as_bytes().to_vec()),
        ..row(bucket, id)
    }
}

/// Batch size 10 (the batches here are short: no fetch runs ahead), probes every minute,
/// two attempts before parking, the given policy; owns bucket 0, which
/// holds rows; has read the (empty) parked rows of bucket 0 and issued the first fetch.
fn parking_relay(policy: ParkPolicy) -> TestRelay {
    let mut h = TestRelay::new(
        options()
            .batch_size(10)
            .poll_interval(std::time::Duration::from_secs(60))
            .max_publish_attempts(NonZeroU32::new(2))
            .park_policy(policy)
            .build()
            .unwrap(),
        PARKING,
    );
    h.start(&[0], &[0]);
    assert_eq!(
        h.briefs(),
        ["load holds 0"],
        "a lane reads its bucket's parked rows before its first fetch of a term"
    );
    h.holds_loaded(0, Vec::new());
    assert_eq!(h.briefs(), ["fetch 0 from head limit 10"]);
    h
}

impl TestRelay {
    fn holds_loaded(&mut self, bucket: i32, groups: Vec<(Option<HoldKey>, i64)>) {
        self.m.handle(
            self.now,
            Outcome::HoldsLoaded {
                bucket,
                result: Ok(groups),
            },
        );
    }
    fn parked(&mut self, bucket: i32, outcome: ParkOutcome) {
        self.m.handle(
            self.now,
            Outcome::Parked {
                bucket,
                result: Ok(outcome),
            },
        );
    }
    /// Answers the publish in flight of `batch` with a permanent error blaming row `at`.
    fn blamed(&mut self, bucket: i32, batch: &[OutboxMessage], at: usize) {
        let error = PublishError::permanent(Some(batch[at].message_id), "record too large");
        self.published(bucket, PublishOutcome::partial(at, error));
    }
    /// The single command expected now, which must be a publish; returns its batch.
    fn expect_publish(&mut self) -> Arc<[OutboxMessage]> {
        match self.cmds().as_slice() {
            [Command::Publish { batch, .. }] => Arc::clone(batch),
            other => panic!(
                "expected one publish, got {:?}",
                other.iter().map(brief).collect::<Vec<_>>()
            ),
        }
    }
}

fn park_rows_of(commands: &[Command]) -> Vec<ParkRow> {
    commands
        .iter()
        .find_map(|c| match c {
            Command::ParkRows { rows, .. } => Some(rows.to_vec()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn a_blamed_row_is_parked_at_the_limit_and_the_bucket_flows_on() {
    let mut h = parking_relay(ParkPolicy::HoldKey);
    h.fetched(0, vec![keyed(0, 1, "k"), keyed(0, 2, "j")]);
    let batch = h.expect_publish();
    h.blamed(0, &batch, 0);
    assert!(h.briefs().is_empty(), "first failure: the lane backs off");
    h.at(1_000);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 10"]);
    h.fetched(0, vec![keyed(0, 1, "k"), keyed(0, 2, "j")]);
    let batch = h.expect_publish();
    h.blamed(0, &batch, 0);
    let commands = h.cmds();
    assert_eq!(
        commands.iter().map(brief).collect::<Vec<_>>(),
        ["park 0 [1]"],
        "second failure of the same row: parked at once, no backoff"
    );
    let rows = park_rows_of(&commands);
    let ParkReason::Failed(failure) = &rows[0].reason else {
        panic!("{rows:?}");
    };
    assert_eq!(failure.attempts, 2);
    assert_eq!(failure.first_failed_at, Timestamp::from_millis(0));
    assert_eq!(failure.last_failed_at, Timestamp::from_millis(1_000));
    assert!(failure.error.contains("record too large"), "{failure:?}");
    h.parked(
        0,
        ParkOutcome {
            parked: vec![1],
            ..ParkOutcome::default()
        },
    );
    assert!(h.events().iter().any(
        |e| matches!(e, RelayEvent::Parked { failed, held_behind: 0, .. } if failed.len() == 1 && failed[0].0 == 1)
    ));
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 10"],
        "a row is parked: the bucket is read from the head while anything is parked"
    );
    h.fetched(0, vec![keyed(0, 2, "j")]);
    assert_eq!(h.briefs(), ["publish 0 [2]"]);
}

/// Row 1 of key `k` parked; the lane then reads `[2 (j), 3 (k), 4 (j)]`.
fn after_parking_row_1(policy: ParkPolicy) -> (TestRelay, Vec<Command>) {
    let mut h = parking_relay(policy);
    for t in [0, 1_000] {
        h.at(t);
        if t > 0 {
            assert_eq!(h.briefs(), ["fetch 0 from head limit 10"]);
        }
        h.fetched(0, vec![keyed(0, 1, "k"), keyed(0, 2, "j")]);
        let batch = h.expect_publish();
        h.blamed(0, &batch, 0);
    }
    assert_eq!(h.briefs(), ["park 0 [1]"]);
    h.parked(
        0,
        ParkOutcome {
            parked: vec![1],
            ..ParkOutcome::default()
        },
    );
    assert_eq!(h.briefs(), ["fetch 0 from head limit 10"]);
    h.fetched(
        0,
        vec![keyed(0, 2, "j"), keyed(0, 3, "k"), keyed(0, 4, "j")],
    );
    let commands = h.cmds();
    (h, commands)
}

#[test]
fn under_hold_key_a_held_keys_later_rows_are_parked_behind_while_others_flow() {
    let (mut h, commands) = after_parking_row_1(ParkPolicy::HoldKey);
    let briefs: Vec<String> = commands.iter().map(brief).collect();
    assert_eq!(briefs, ["park 0 [3]", "publish 0 [2, 4]"]);
    assert_eq!(
        park_rows_of(&commands)[0].reason,
        ParkReason::HeldBehind { blocking_id: 1 }
    );
    h.parked(
        0,
        ParkOutcome {
            parked: vec![3],
            ..ParkOutcome::default()
        },
    );
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [2, 4]"]);
}

#[test]
fn under_skip_row_the_keys_later_rows_are_published() {
    let (_, commands) = after_parking_row_1(ParkPolicy::SkipRow);
    let briefs: Vec<String> = commands.iter().map(brief).collect();
    assert_eq!(
        briefs,
        ["publish 0 [2, 3, 4]"],
        "3 (key k) goes out: flow over order"
    );
}

#[test]
fn a_hold_released_by_an_operator_is_reloaded_and_the_rows_read_again_in_order() {
    let (mut h, _) = after_parking_row_1(ParkPolicy::HoldKey);
    // Meanwhile an operator requeued row 1: the store refuses to park 3 behind nothing.
    h.parked(
        0,
        ParkOutcome {
            released: vec![3],
            ..ParkOutcome::default()
        },
    );
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::HoldReleased { rows: 1, .. }))
    );
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [2, 4]"]);
    h.deleted(0);
    assert_eq!(
        h.briefs(),
        ["load holds 0"],
        "the view of the parked rows is stale: read it before fetching"
    );
    h.holds_loaded(0, Vec::new());
    assert_eq!(h.briefs(), ["fetch 0 from head limit 10"]);
    h.fetched(0, vec![keyed(0, 1, "k"), keyed(0, 3, "k")]);
    assert_eq!(
        h.briefs(),
        ["publish 0 [1, 3]"],
        "the requeued row goes first, under its original id"
    );
}

#[test]
fn errors_that_blame_no_row_never_park() {
    let mut h = parking_relay(ParkPolicy::HoldKey);
    let mut t = 0;
    for error in [
        PublishError::setup("authentication refused"),
        PublishError::retryable("leader moved"),
        PublishError::permanent(None, "no row named"),
        PublishError::permanent(Some(Uuid::nil()), "someone else"),
    ] {
        h.fetched(0, vec![keyed(0, 1, "k")]);
        let _ = h.expect_publish();
        h.published(0, PublishOutcome::partial(0, error));
        let mut next = Vec::new();
        while next.is_empty() {
            t += 1_000;
            h.at(t);
            next = h.cmds();
            for c in &next {
                if let Command::RenewLeases { buckets, .. } = c {
                    h.renewed(buckets, &[]);
                }
                assert!(!matches!(c, Command::ParkRows { .. }), "{}", brief(c));
            }
            next.retain(|c| matches!(c, Command::FetchBatch { .. }));
        }
    }
}

#[test]
fn without_max_publish_attempts_a_row_is_retried_forever() {
    let mut h = TestRelay::new(
        options()
            .batch_size(10)
            .max_publish_attempts(None)
            .build()
            .unwrap(),
        PARKING,
    );
    h.start(&[0], &[0]);
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 10"],
        "no parked rows to read"
    );
    let mut t = 0;
    for _ in 0..5 {
        h.fetched(0, vec![keyed(0, 1, "k")]);
        let batch = h.expect_publish();
        h.blamed(0, &batch, 0);
        let mut fetch = false;
        while !fetch {
            t += 1_000;
            h.at(t);
            for c in h.cmds() {
                match c {
                    Command::RenewLeases { buckets, .. } => h.renewed(&buckets, &[]),
                    Command::AcquireLeases { .. } => {
                        h.m.handle(h.now, Outcome::Acquired(Ok(vec![0].into())))
                    }
                    Command::ProbePending { .. } => h.m.handle(h.now, Outcome::Probed(Ok(vec![0]))),
                    Command::FetchBatch { .. } => fetch = true,
                    other => panic!("unexpected {}", brief(&other)),
                }
            }
        }
    }
}

#[test]
fn a_park_refused_for_a_lost_lease_gives_the_bucket_up() {
    let mut h = parking_relay(ParkPolicy::HoldKey);
    for t in [0, 1_000] {
        h.at(t);
        if t > 0 {
            assert_eq!(h.briefs(), ["fetch 0 from head limit 10"]);
        }
        h.fetched(0, vec![keyed(0, 1, "k")]);
        let batch = h.expect_publish();
        h.blamed(0, &batch, 0);
    }
    assert_eq!(h.briefs(), ["park 0 [1]"]);
    h.parked(
        0,
        ParkOutcome {
            lease_lost: true,
            ..ParkOutcome::default()
        },
    );
    assert_eq!(
        h.briefs(),
        ["acquire"],
        "nothing more in the bucket until an acquisition says it is ours"
    );
}

#[test]
fn a_failed_park_call_reloads_the_parked_rows_before_fetching() {
    let mut h = parking_relay(ParkPolicy::HoldKey);
    for t in [0, 1_000] {
        h.at(t);
        if t > 0 {
            assert_eq!(h.briefs(), ["fetch 0 from head limit 10"]);
        }
        h.fetched(0, vec![keyed(0, 1, "k")]);
        let batch = h.expect_publish();
        h.blamed(0, &batch, 0);
    }
    assert_eq!(h.briefs(), ["park 0 [1]"]);
    h.m.handle(
        h.now,
        Outcome::Parked {
            bucket: 0,
            result: Err(StoreError::unavailable("connection reset")),
        },
    );
    // The lane's second failure in a row: it backs off 2 s.
    h.at(2_999);
    assert!(h.briefs().is_empty());
    h.at(3_000);
    assert_eq!(
        h.briefs(),
        ["load holds 0"],
        "the park may have committed: its key may be held now"
    );
}

#[test]
fn a_store_that_promised_parking_but_answers_unsupported_fails_the_relay() {
    let options = options()
        .max_publish_attempts(NonZeroU32::new(2))
        .build()
        .unwrap();
    let mut h = TestRelay::new(options, PARKING);
    h.start(&[0], &[0]);
    assert_eq!(h.briefs(), ["load holds 0"]);
    h.m.handle(
        h.now,
        Outcome::HoldsLoaded {
            bucket: 0,
            result: Err(StoreError::Unsupported("parking")),
        },
    );
    let events: Vec<RelayEvent> = std::iter::from_fn(|| h.m.poll_event()).collect();
    assert!(
        events.iter().any(|e| matches!(e, RelayEvent::Fatal(_))),
        "a broken capability promise stops the relay instead of backing off forever: {events:?}"
    );
    h.at(60_000);
    assert!(h.briefs().is_empty(), "a failed relay issues nothing more");
}
