//! Rule-by-rule tests of the relay machine with explicit times.

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::{Command, Hint, Outcome, RelayEvent, RelayMachine};
use crate::error::{Misconfiguration, PublishError, StoreError};
use crate::message::OutboxMessage;
use crate::options::RelayOptions;
use crate::publisher::PublishOutcome;
use crate::store::{RenewOutcome, StoreCapabilities};
use crate::time::{Monotonic, Now, Timestamp};

const RENEWING: StoreCapabilities = StoreCapabilities {
    lease_renewal: true,
    backlog_metrics: false,
    lease_release: false,
};
const NO_RENEWAL: StoreCapabilities = StoreCapabilities {
    lease_renewal: false,
    backlog_metrics: false,
    lease_release: false,
};
const RELEASING: StoreCapabilities = StoreCapabilities {
    lease_renewal: true,
    backlog_metrics: false,
    lease_release: true,
};

fn options() -> crate::options::RelayOptionsBuilder {
    RelayOptions::builder().relay_id("r1").batch_size(2)
}

fn rows(bucket: i32, ids: std::ops::RangeInclusive<i64>) -> Vec<OutboxMessage> {
    ids.map(|id| OutboxMessage {
        id,
        message_id: Uuid::now_v7(),
        bucket,
        topic: "t".into(),
        key: None,
        value: None,
        headers: None,
        partition: None,
        created_at: Timestamp::EPOCH,
        store_ref: None,
    })
    .collect()
}

/// Both clocks at `ms`: the tests run the wall clock from the epoch and the monotonic
/// clock from its origin, in step.
fn at(ms: i64) -> Now {
    Now::new(
        Timestamp::from_millis(ms),
        Monotonic::from_millis(u64::try_from(ms).unwrap()),
    )
}

fn millis(instant: Monotonic) -> i64 {
    i64::try_from(instant.since_origin().as_millis()).unwrap()
}

/// A machine under test and the instant the test has moved it to.
struct TestRelay {
    m: RelayMachine,
    now: Now,
}

impl TestRelay {
    fn new(options: RelayOptions, caps: StoreCapabilities) -> TestRelay {
        TestRelay {
            m: RelayMachine::new(options, caps, at(0)).unwrap(),
            now: at(0),
        }
    }
    fn renewing() -> TestRelay {
        TestRelay::new(options().build().unwrap(), RENEWING)
    }
    fn at(&mut self, ms: i64) -> &mut Self {
        self.now = at(ms);
        self.m.handle_timeout(self.now);
        self
    }
    fn cmd(&mut self) -> Option<Command> {
        self.m.poll_command(self.now)
    }
    fn events(&mut self) -> Vec<RelayEvent> {
        std::iter::from_fn(|| self.m.poll_event()).collect()
    }
    /// Acquire `owned`, then answer the probe with `pending`.
    fn start(&mut self, owned: &[i32], pending: &[i32]) {
        assert_eq!(
            self.cmd(),
            Some(Command::AcquireLeases { now: self.now.wall })
        );
        self.m
            .handle(self.now, Outcome::Acquired(Ok(owned.to_vec())));
        if owned.is_empty() {
            return;
        }
        assert_eq!(
            self.cmd(),
            Some(Command::ProbePending {
                buckets: owned.to_vec()
            })
        );
        self.m
            .handle(self.now, Outcome::Probed(Ok(pending.to_vec())));
    }
    fn expect_fetch(&mut self, bucket: i32) {
        assert_eq!(
            self.cmd(),
            Some(Command::FetchBatch {
                bucket,
                after: None,
                limit: 2
            }),
            "expected a fetch of bucket {bucket}"
        );
    }
    fn expect_publish(&mut self) -> (i32, Arc<[OutboxMessage]>) {
        match self.cmd() {
            Some(Command::Publish { bucket, batch }) => (bucket, batch),
            other => panic!("expected a publish, got {other:?}"),
        }
    }
    fn expect_mark(&mut self) -> (i32, usize) {
        match self.cmd() {
            Some(Command::DeletePublished { bucket, count, .. }) => (bucket, count),
            other => panic!("expected a delete, got {other:?}"),
        }
    }
    /// Sleeps from deadline to deadline, answering discovery probes with nothing, until
    /// the machine asks for its next acquisition; returns that acquisition's instant.
    fn idle_until_acquisition(&mut self) -> Now {
        loop {
            let wake = self.m.poll_timeout().unwrap();
            self.at(millis(wake));
            match self.cmd() {
                Some(Command::AcquireLeases { .. }) => return self.now,
                Some(Command::ProbePending { .. }) => {
                    self.m.handle(self.now, Outcome::Probed(Ok(vec![])))
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    /// Fetch → publish → ack all → delete, for one bucket.
    fn drain_batch(&mut self, bucket: i32, batch: Vec<OutboxMessage>) {
        self.expect_fetch(bucket);
        let n = batch.len();
        self.m.handle(self.now, Outcome::Fetched(Ok(batch)));
        self.expect_publish();
        self.m
            .handle(self.now, Outcome::Published(PublishOutcome::all(n)));
        assert_eq!(self.expect_mark(), (bucket, n));
        self.m.handle(self.now, Outcome::Deleted(Ok(())));
    }
}

#[test]
fn a_cycle_acquires_probes_fetches_publishes_and_deletes() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[1]);
    h.drain_batch(1, rows(1, 1..=1));
    assert_eq!(h.cmd(), None, "drained, nothing due");
    assert_eq!(
        h.m.poll_timeout(),
        Some(Monotonic::from_millis(1_000)),
        "next discovery at the poll interval"
    );
}

#[test]
fn each_ready_bucket_gets_one_batch_per_sweep_and_full_buckets_stay_ready() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[0, 1]);
    h.drain_batch(0, rows(0, 1..=2)); // full batch: bucket 0 stays ready
    h.drain_batch(1, rows(1, 3..=3)); // partial: bucket 1 drained
    h.drain_batch(0, rows(0, 4..=5)); // next sweep without another probe
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(vec![])));
    assert_eq!(h.cmd(), None);
}

#[test]
fn a_single_bucket_drains_until_rebalancing_is_due() {
    let mut h = TestRelay::renewing();
    h.start(&[3], &[3]);
    h.drain_batch(3, rows(3, 1..=2));
    h.at(500);
    h.drain_batch(3, rows(3, 3..=4));
    h.at(10_000);
    // Renewal interval passed: the next thing after the sweep is an acquisition.
    assert_eq!(h.cmd(), Some(Command::AcquireLeases { now: h.now.wall }));
}

#[test]
fn discovery_runs_at_the_poll_interval_while_busy() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.drain_batch(0, rows(0, 1..=2));
    h.at(1_000);
    assert_eq!(h.cmd(), Some(Command::ProbePending { buckets: vec![0] }));
}

#[test]
fn lease_validity_is_rechecked_after_the_fetch() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.expect_fetch(0);
    h.at(30_000); // lease (from t=0) ran out while the fetch was in flight
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=1))));
    assert_eq!(
        h.cmd(),
        Some(Command::AcquireLeases { now: h.now.wall }),
        "no publish without a valid lease"
    );
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::LeaseExpired { buckets: 1 }))
    );
}

#[test]
fn lease_is_measured_from_before_acquisition() {
    let mut h = TestRelay::renewing();
    assert_eq!(h.cmd(), Some(Command::AcquireLeases { now: h.now.wall }));
    h.at(5_000); // slow acquisition
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0])));
    assert_eq!(h.m.lease_valid_until(), Timestamp::from_millis(30_000));
}

#[test]
fn renewal_runs_alongside_a_publish_and_nothing_else_does() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[0, 1]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=2))));
    h.expect_publish();
    assert_eq!(
        h.cmd(),
        None,
        "no second publish or store call while publishing"
    );
    h.at(10_000);
    assert_eq!(
        h.cmd(),
        Some(Command::RenewLeases {
            now: h.now.wall,
            buckets: vec![0, 1]
        })
    );
    assert_eq!(h.cmd(), None);
    h.m.handle(
        h.now,
        Outcome::Renewed(Ok(RenewOutcome {
            renewed: vec![0, 1],
            lost: vec![],
        })),
    );
    assert_eq!(h.m.lease_valid_until(), Timestamp::from_millis(40_000));
    h.at(15_000);
    h.m.handle(h.now, Outcome::Published(PublishOutcome::all(2)));
    assert_eq!(h.expect_mark(), (0, 2));
    h.m.handle(h.now, Outcome::Deleted(Ok(())));
    // The renewal did not postpone rebalancing (due at 10 s): it runs after the sweep,
    // which still has bucket 1 to visit.
    h.expect_fetch(1);
    h.m.handle(h.now, Outcome::Fetched(Ok(vec![])));
    assert_eq!(h.cmd(), Some(Command::AcquireLeases { now: h.now.wall }));
}

#[test]
fn a_lease_lost_during_a_publish_deletes_nothing() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=2))));
    h.expect_publish();
    h.at(10_000);
    assert!(matches!(h.cmd(), Some(Command::RenewLeases { .. })));
    h.m.handle(
        h.now,
        Outcome::Renewed(Ok(RenewOutcome {
            renewed: vec![],
            lost: vec![0],
        })),
    );
    assert_eq!(
        h.cmd(),
        None,
        "the publish is still awaited; nothing starts beside it"
    );
    h.m.handle(h.now, Outcome::Published(PublishOutcome::all(2)));
    assert_eq!(
        h.cmd(),
        Some(Command::AcquireLeases { now: h.now.wall }),
        "no delete after losing the lease"
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
            acknowledged: 2,
            ..
        }
    )));
}

#[test]
fn a_lease_expiring_during_a_publish_deletes_nothing() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=2))));
    h.expect_publish();
    h.at(10_000);
    assert!(matches!(h.cmd(), Some(Command::RenewLeases { .. })));
    h.m.handle(
        h.now,
        Outcome::Renewed(Err(StoreError::unavailable("db down"))),
    );
    // Renewal keeps failing; the store is unreachable past the lease.
    h.at(31_000);
    assert_eq!(h.m.owned().count(), 0);
    h.m.handle(h.now, Outcome::Published(PublishOutcome::all(2)));
    assert_eq!(h.cmd(), Some(Command::AcquireLeases { now: h.now.wall }));
}

#[test]
fn partial_acknowledgement_deletes_the_prefix_then_backs_off() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=2))));
    h.expect_publish();
    h.m.handle(
        h.now,
        Outcome::Published(PublishOutcome::partial(
            1,
            PublishError::retryable("leader moved"),
        )),
    );
    assert_eq!(
        h.expect_mark(),
        (0, 1),
        "only the acknowledged prefix is deleted"
    );
    h.m.handle(h.now, Outcome::Deleted(Ok(())));
    assert_eq!(h.cmd(), None, "backing off");
    assert_eq!(h.m.poll_timeout(), Some(Monotonic::from_millis(1_000)));
    h.m.handle_hint(h.now, Hint::Bucket(0));
    assert_eq!(h.cmd(), None, "hints do not cut a backoff short");
    h.at(1_000);
    assert_eq!(h.cmd(), Some(Command::ProbePending { buckets: vec![0] }));
    h.m.handle(h.now, Outcome::Probed(Ok(vec![0])));
    h.expect_fetch(0);
}

#[test]
fn an_acknowledgement_without_error_for_part_of_the_batch_is_still_a_failure() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=2))));
    h.expect_publish();
    h.m.handle(
        h.now,
        Outcome::Published(PublishOutcome {
            acknowledged: 7,
            error: None,
        }),
    );
    assert_eq!(
        h.expect_mark(),
        (0, 2),
        "an overstated count is clamped to the batch"
    );
}

#[test]
fn store_errors_back_off_exponentially_and_recover() {
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
    h.at(3_000);
    assert!(matches!(h.cmd(), Some(Command::AcquireLeases { .. })));
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0])));
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
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0])));
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
        Some(Command::AcquireLeases { now: h.now.wall }),
        "still heartbeating"
    );
}

#[test]
fn a_long_poll_interval_is_capped_by_the_renewal_deadline() {
    let opts = options()
        .poll_interval(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut h = TestRelay::new(opts, RENEWING);
    h.start(&[0], &[]);
    assert_eq!(h.cmd(), None);
    assert_eq!(h.m.poll_timeout(), Some(Monotonic::from_millis(10_000)));
}

#[test]
fn hints_for_owned_buckets_skip_discovery() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[]);
    assert_eq!(h.cmd(), None);
    h.at(200);
    // A hint racing with the relay going idle: it stays pending and wins the next poll.
    h.m.handle_hint(h.now, Hint::Bucket(1));
    h.expect_fetch(1);
}

#[test]
fn a_hint_during_a_short_batch_keeps_the_bucket_ready() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[1]);
    // The fetch reads one row (short of the batch size of 2); while it is in flight a
    // writer commits another row to bucket 1 and hints it.
    h.expect_fetch(1);
    h.m.handle_hint(h.now, Hint::Bucket(1));
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(1, 1..=1))));
    h.expect_publish();
    h.m.handle(h.now, Outcome::Published(PublishOutcome::all(1)));
    assert_eq!(h.expect_mark(), (1, 1));
    h.m.handle(h.now, Outcome::Deleted(Ok(())));
    // Without the hint the bucket would count as drained until the next poll.
    h.expect_fetch(1);
    h.m.handle(h.now, Outcome::Fetched(Ok(Vec::new())));
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
    h.m.handle_hint(h.now, Hint::Bucket(1));
    h.drain_batch(1, rows(1, 1..=1));
    assert_eq!(h.cmd(), None, "the fetch already saw the hinted commit");
}

#[test]
fn foreign_and_unknown_hints() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[]);
    h.at(100);
    h.m.handle_hint(h.now, Hint::Bucket(5));
    assert_eq!(h.cmd(), None, "a bucket owned elsewhere is ignored");
    h.m.handle_hint(h.now, Hint::Unknown);
    assert_eq!(
        h.cmd(),
        Some(Command::ProbePending { buckets: vec![0] }),
        "unknown forces discovery"
    );
    h.m.handle(h.now, Outcome::Probed(Ok(vec![])));
    h.m.handle_hint(h.now, Hint::Bucket(42));
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
    for step in 1..=15 {
        h.at(step * 100);
        h.m.handle_hint(h.now, Hint::Bucket(0));
        match h.cmd() {
            Some(Command::ProbePending { .. }) => {
                probed_at = Some(h.now.wall.as_millis());
                break;
            }
            Some(Command::FetchBatch { bucket: 0, .. }) => {
                h.m.handle(h.now, Outcome::Fetched(Ok(vec![])));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        probed_at,
        Some(1_000),
        "discovery ran on time despite hints"
    );
}

#[test]
fn without_renewal_a_publish_budget_is_required() {
    let err = RelayMachine::new(options().build().unwrap(), NO_RENEWAL, at(0)).unwrap_err();
    assert_eq!(err, Misconfiguration::MissingPublishBudget);
}

#[test]
fn without_renewal_the_budget_is_reserved_by_acquiring_first() {
    let opts = options()
        .max_publish_duration(Duration::from_secs(15))
        .build()
        .unwrap();
    let mut h = TestRelay::new(opts, NO_RENEWAL);
    h.start(&[0], &[0]);
    h.expect_fetch(0);
    h.at(6_000); // 24 s left, 25 s needed
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=1))));
    assert_eq!(
        h.cmd(),
        Some(Command::AcquireLeases { now: h.now.wall }),
        "renew first"
    );
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0])));
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=1))));
    h.expect_publish();
    assert_eq!(
        h.cmd(),
        None,
        "no renewal calls against a store without the capability"
    );
}

#[test]
fn without_renewal_a_lease_too_short_keeps_the_rows() {
    let opts = options()
        .lease_duration(Duration::from_secs(30))
        .max_publish_duration(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut h = TestRelay::new(opts, NO_RENEWAL);
    assert!(matches!(h.cmd(), Some(Command::AcquireLeases { .. })));
    h.at(1_000); // acquisition took a second: 29 s left, 30 s needed
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0])));
    assert!(matches!(h.cmd(), Some(Command::ProbePending { .. })));
    h.m.handle(h.now, Outcome::Probed(Ok(vec![0])));
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=1))));
    let acquire_at = h.now;
    assert_eq!(
        h.cmd(),
        Some(Command::AcquireLeases {
            now: acquire_at.wall
        })
    );
    h.at(2_000);
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0])));
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=1))));
    assert_eq!(h.cmd(), None, "rows stay pending");
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::LeaseTooShortForPublish { .. }))
    );
}

#[test]
fn without_renewal_exceeding_the_budget_is_fatal() {
    let opts = options()
        .max_publish_duration(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut h = TestRelay::new(opts, NO_RENEWAL);
    h.start(&[0], &[0]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=1))));
    h.expect_publish();
    h.at(5_001);
    h.m.handle(h.now, Outcome::Published(PublishOutcome::all(1)));
    assert_eq!(
        h.cmd(),
        None,
        "nothing is deleted after the budget was broken"
    );
    assert!(matches!(
        h.m.fatal_error(),
        Some(Misconfiguration::PublishBudgetExceeded { .. })
    ));
}

#[test]
fn shutdown_waits_for_the_publish_and_deletes_only_the_acknowledged_prefix() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[0, 1]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=2))));
    h.expect_publish();
    h.m.handle_shutdown();
    assert_eq!(h.cmd(), None);
    assert!(!h.m.is_finished());
    h.m.handle(
        h.now,
        Outcome::Published(PublishOutcome::partial(1, PublishError::retryable("x"))),
    );
    assert_eq!(h.expect_mark(), (0, 1));
    h.m.handle(h.now, Outcome::Deleted(Ok(())));
    assert_eq!(h.cmd(), None, "no further sweep after shutdown");
    assert!(h.m.is_finished());
    assert!(h.events().iter().any(|e| matches!(e, RelayEvent::Stopped)));
}

#[test]
fn shutdown_with_a_cancelled_publish_deletes_nothing() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=2))));
    h.expect_publish();
    h.m.handle_shutdown();
    h.m.handle(h.now, Outcome::PublishCancelled);
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RelayEvent::PublishCancelled { bucket: 0 }))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RelayEvent::PublishFailed { .. }))
    );
}

#[test]
fn a_graceful_stop_hands_the_leases_back_after_the_last_delete() {
    let mut h = TestRelay::new(options().build().unwrap(), RELEASING);
    h.start(&[0, 1], &[0, 1]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=2))));
    h.expect_publish();
    h.m.handle_shutdown();
    assert_eq!(h.cmd(), None, "nothing while the publish is in flight");
    h.m.handle(h.now, Outcome::Published(PublishOutcome::all(2)));
    assert_eq!(
        h.expect_mark(),
        (0, 2),
        "the delete comes before the release"
    );
    assert_eq!(h.cmd(), None);
    h.m.handle(h.now, Outcome::Deleted(Ok(())));
    assert_eq!(h.cmd(), Some(Command::ReleaseLeases));
    assert!(!h.m.is_finished());
    assert_eq!(h.cmd(), None, "released once");
    h.m.handle(h.now, Outcome::Released(Ok(())));
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
    let events = h.events();
    let released = events
        .iter()
        .position(|e| matches!(e, RelayEvent::LeasesReleased { buckets: 2 }));
    let stopped = events.iter().position(|e| matches!(e, RelayEvent::Stopped));
    assert!(
        matches!((released, stopped), (Some(r), Some(s)) if r < s),
        "released, then stopped: {events:?}"
    );
}

#[test]
fn a_relay_owns_nothing_once_its_release_is_issued() {
    // Simulation seed 1592596111: the store may give the buckets to another relay as
    // soon as the release is issued, so the stopping relay must stop counting them as
    // its own then, not when the answer comes back.
    let mut h = TestRelay::new(options().build().unwrap(), RELEASING);
    h.start(&[0, 1], &[]);
    h.events();
    h.m.handle_shutdown();
    assert_eq!(h.cmd(), Some(Command::ReleaseLeases));
    assert!(!h.m.may_act_on(0, h.now) && !h.m.may_act_on(1, h.now));
    assert_eq!(h.m.owned().count(), 0);
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::OwnershipChanged { owned } if owned.is_empty())),
        "listeners (the notifier, readiness) learn it at once"
    );
    h.m.handle_hint(h.now, Hint::Bucket(0));
    assert_eq!(h.cmd(), None, "a hint gives a released relay no work");
    h.m.handle(h.now, Outcome::Released(Ok(())));
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::LeasesReleased { buckets: 2 })),
        "the release still reports what it handed back"
    );
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
}

#[test]
fn a_release_waits_for_a_renewal_in_flight_and_a_failed_release_still_stops() {
    let mut h = TestRelay::new(options().build().unwrap(), RELEASING);
    h.start(&[0], &[]);
    let now = h.idle_until_acquisition();
    h.m.handle_shutdown();
    assert_eq!(h.cmd(), None, "the acquisition is still in flight");
    h.m.handle(now, Outcome::Acquired(Ok(vec![0])));
    assert_eq!(h.cmd(), Some(Command::ReleaseLeases));
    h.m.handle(
        h.now,
        Outcome::Released(Err(StoreError::unavailable("down"))),
    );
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
    assert!(h.events().iter().any(|e| matches!(
        e,
        RelayEvent::StoreFailed {
            operation: "release_leases",
            ..
        }
    )));
}

#[test]
fn an_abandoned_publish_keeps_the_leases_until_they_run_out() {
    let mut h = TestRelay::new(options().build().unwrap(), RELEASING);
    h.start(&[0], &[0]);
    h.expect_fetch(0);
    h.m.handle(h.now, Outcome::Fetched(Ok(rows(0, 1..=2))));
    h.expect_publish();
    h.m.handle_shutdown();
    h.m.handle(h.now, Outcome::PublishCancelled);
    assert_eq!(
        h.cmd(),
        None,
        "its request may still reach the broker: no release"
    );
    assert!(h.m.is_finished());
}

#[test]
fn without_the_capability_a_stop_releases_nothing() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[]);
    h.m.handle_shutdown();
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
}

#[test]
fn unexpected_results_trip_a_debug_assertion_and_are_otherwise_ignored() {
    let mut h = TestRelay::renewing();
    let unasked = [
        Outcome::Published(PublishOutcome::all(3)),
        Outcome::Deleted(Ok(())),
        Outcome::Fetched(Ok(rows(0, 1..=1))),
        Outcome::Renewed(Ok(RenewOutcome::default())),
        Outcome::Released(Ok(())),
        Outcome::PublishCancelled,
    ];
    for outcome in unasked {
        assert!(!h.m.awaits(&outcome), "{outcome:?} was not asked for");
        let now = h.now;
        let machine = &mut h.m;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            machine.handle(now, outcome)
        }));
        assert_eq!(
            result.is_err(),
            cfg!(debug_assertions),
            "debug builds assert, release builds ignore"
        );
    }
    assert_eq!(h.cmd(), Some(Command::AcquireLeases { now: h.now.wall }));
    assert!(
        h.m.awaits(&Outcome::Acquired(Ok(vec![]))),
        "and it awaits what it asked for"
    );
}

#[test]
fn a_cycle_spans_acquisition_to_idle_and_ends_at_backoff() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    h.at(40);
    h.drain_batch(0, rows(0, 1..=1));
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
    assert!(
        h.events().iter().any(|e| matches!(e, RelayEvent::CycleCompleted { elapsed } if *elapsed == Duration::from_millis(5))),
        "a failure ends the cycle before the backoff"
    );
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
    h.m.handle(now, Outcome::Acquired(Ok(vec![3])));
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
    while let Some(command) = h.cmd() {
        assert!(
            !matches!(
                command,
                Command::FetchBatch { .. } | Command::Publish { .. }
            ),
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
