//! Rule-by-rule tests of the relay machine with explicit times, one theme per file.
//!
//! Two ways to drive the machine: step by step (`cmds`, then answer each command with
//! `fetched`, `acked`, `deleted`...), which pins down what is in flight at each moment,
//! and [`TestRelay::run`] over a small in-memory [`World`] that answers every command at
//! once and sleeps from deadline to deadline, for rules that span many cycles.

mod backoff;
mod budget;
mod concurrency;
mod discovery;
mod identity;
mod lease_loss;
mod leases;
mod parking;
mod pipeline;
mod shutdown;
mod unasked;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use uuid::Uuid;

use super::{Command, Hint, Outcome, RelayEvent, RelayMachine};
use crate::error::{PublishError, StoreError};
use crate::message::OutboxMessage;
use crate::options::{RelayOptions, RelayOptionsBuilder};
use crate::publisher::PublishOutcome;
use crate::store::{RenewOutcome, StoreCapabilities};
use crate::time::{Monotonic, Now, Timestamp};

const RENEWING: StoreCapabilities = StoreCapabilities {
    lease_renewal: true,
    backlog_metrics: false,
    lease_release: false,
    // The rule tests of the other themes run without parking, so that a lane's first
    // store call is its fetch; `parking.rs` turns it on.
    parking: false,
};
const NO_RENEWAL: StoreCapabilities = StoreCapabilities {
    lease_renewal: false,
    backlog_metrics: false,
    lease_release: false,
    parking: false,
};
const RELEASING: StoreCapabilities = StoreCapabilities {
    lease_renewal: true,
    backlog_metrics: false,
    lease_release: true,
    parking: false,
};

/// Batch size 2, no parking, everything else at its default: poll interval 1 s, lease
/// 30 s, renew interval 10 s, error backoff 1 s doubling up to 30 s, 8 concurrent lanes.
fn options() -> RelayOptionsBuilder {
    // No parking unless a test asks for it (the stores here report no parking).
    RelayOptions::builder()
        .relay_id("r1")
        .batch_size(2)
        .max_publish_attempts(None)
}

fn row(bucket: i32, id: i64) -> OutboxMessage {
    OutboxMessage {
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
    }
}

fn rows(bucket: i32, ids: RangeInclusive<i64>) -> Vec<OutboxMessage> {
    ids.map(|id| row(bucket, id)).collect()
}

fn ids(batch: &[OutboxMessage]) -> Vec<i64> {
    batch.iter().map(|m| m.id).collect()
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

/// A one-line description of a command, so that assertions read like the protocol.
fn brief(command: &Command) -> String {
    match command {
        Command::AcquireLeases { .. } => "acquire".into(),
        Command::ProbePending { buckets } => format!("probe {buckets:?}"),
        Command::FetchBatch {
            bucket,
            after: Some(after),
            limit,
        } => format!("fetch {bucket} after {after} limit {limit}"),
        Command::FetchBatch {
            bucket,
            after: None,
            limit,
        } => format!("fetch {bucket} from head limit {limit}"),
        Command::Publish { bucket, batch } => format!("publish {bucket} {:?}", ids(batch)),
        Command::DeletePublished {
            bucket,
            batch,
            count,
        } => format!("delete {bucket} {:?}", ids(&batch[..*count])),
        Command::RenewLeases { buckets, .. } => format!("renew {buckets:?}"),
        Command::ReleaseLeases => "release".into(),
        Command::LoadHolds { bucket } => format!("load holds {bucket}"),
        Command::ParkRows { bucket, rows, .. } => format!(
            "park {bucket} {:?}",
            rows.iter().map(|r| r.message.id).collect::<Vec<_>>()
        ),
    }
}

/// The lane a command belongs to, if it is a lane command.
fn lane_of(command: &Command) -> Option<i32> {
    match command {
        Command::FetchBatch { bucket, .. }
        | Command::Publish { bucket, .. }
        | Command::DeletePublished { bucket, .. }
        | Command::LoadHolds { bucket }
        | Command::ParkRows { bucket, .. } => Some(*bucket),
        _ => None,
    }
}

/// The failures a lane reported, as `(delay in ms, consecutive failures)`, in order.
fn lane_backoffs(events: &[RelayEvent], lane: i32) -> Vec<(u128, u32)> {
    events
        .iter()
        .filter_map(|e| match e {
            RelayEvent::BackingOff {
                bucket: Some(b),
                delay,
                consecutive_failures,
                ..
            } if *b == lane => Some((delay.as_millis(), *consecutive_failures)),
            _ => None,
        })
        .collect()
}

/// A machine under test and the instant the test has moved it to.
struct TestRelay {
    m: RelayMachine,
    now: Now,
    /// Events collected by [`run`](Self::run), with the instant they were drained at.
    log: Vec<(i64, RelayEvent)>,
}

impl TestRelay {
    fn new(options: RelayOptions, caps: StoreCapabilities) -> TestRelay {
        TestRelay {
            m: RelayMachine::new(options, caps, at(0)).unwrap(),
            now: at(0),
            log: Vec::new(),
        }
    }
    fn renewing() -> TestRelay {
        TestRelay::new(options().build().unwrap(), RENEWING)
    }
    /// A renewing relay that probes only every minute, so that probes stay out of the way.
    fn quiet() -> TestRelay {
        TestRelay::new(
            options()
                .poll_interval(std::time::Duration::from_secs(60))
                .build()
                .unwrap(),
            RENEWING,
        )
    }
    fn ms(&self) -> i64 {
        self.now.wall.as_millis()
    }
    fn at(&mut self, ms: i64) -> &mut Self {
        self.now = at(ms);
        self.m.handle_timeout(self.now);
        self
    }
    fn cmd(&mut self) -> Option<Command> {
        self.m.poll_command(self.now)
    }
    /// Every command the machine hands out now (it is polled until `None`).
    fn cmds(&mut self) -> Vec<Command> {
        std::iter::from_fn(|| self.cmd()).collect()
    }
    /// [`cmds`](Self::cmds), briefly.
    fn briefs(&mut self) -> Vec<String> {
        self.cmds().iter().map(brief).collect()
    }
    fn events(&mut self) -> Vec<RelayEvent> {
        std::iter::from_fn(|| self.m.poll_event()).collect()
    }
    fn hint(&mut self, bucket: i32) {
        self.m.handle_hint(self.now, Hint::Bucket(bucket));
    }
    /// Acquire `owned` (answered at once), then answer the probe with `pending`.
    fn start(&mut self, owned: &[i32], pending: &[i32]) {
        self.join_at(self.ms(), owned, pending);
    }
    /// Acquire `owned` with the answer arriving at `answered_ms`, then answer the probe
    /// with `pending`. With a renewing store the next acquisition is due one renew
    /// interval after the answer, the next renewal one interval after the call started.
    fn join_at(&mut self, answered_ms: i64, owned: &[i32], pending: &[i32]) {
        assert_eq!(
            self.cmd(),
            Some(Command::AcquireLeases {
                now: self.now.wall,
                busy: vec![]
            })
        );
        self.at(answered_ms);
        self.m
            .handle(self.now, Outcome::Acquired(Ok(owned.to_vec().into())));
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
    fn fetched(&mut self, bucket: i32, rows: Vec<OutboxMessage>) {
        self.m.handle(
            self.now,
            Outcome::Fetched {
                bucket,
                result: Ok(rows),
            },
        );
    }
    fn fetch_failed(&mut self, bucket: i32) {
        self.m.handle(
            self.now,
            Outcome::Fetched {
                bucket,
                result: Err(StoreError::unavailable("db down")),
            },
        );
    }
    fn published(&mut self, bucket: i32, outcome: PublishOutcome) {
        self.m
            .handle(self.now, Outcome::Published { bucket, outcome });
    }
    fn acked(&mut self, bucket: i32, n: usize) {
        self.published(bucket, PublishOutcome::all(n));
    }
    fn publish_failed(&mut self, bucket: i32, acknowledged: usize) {
        self.published(
            bucket,
            PublishOutcome::partial(acknowledged, PublishError::retryable("leader moved")),
        );
    }
    fn deleted(&mut self, bucket: i32) {
        self.m.handle(
            self.now,
            Outcome::Deleted {
                bucket,
                result: Ok(()),
            },
        );
    }
    fn delete_failed(&mut self, bucket: i32) {
        self.m.handle(
            self.now,
            Outcome::Deleted {
                bucket,
                result: Err(StoreError::unavailable("db down")),
            },
        );
    }
    fn renewed(&mut self, renewed: &[i32], lost: &[i32]) {
        self.m.handle(
            self.now,
            Outcome::Renewed(Ok(RenewOutcome {
                renewed: renewed.to_vec(),
                lost: lost.to_vec(),
            })),
        );
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
    /// Lets `world` answer every command at once, sleeping from deadline to deadline,
    /// up to and including `until_ms`. Events go to [`log`](Self::log).
    fn run(&mut self, world: &mut World, until_ms: i64) {
        loop {
            for bucket in world.trickle.clone() {
                world.add(bucket, 1);
                self.hint(bucket);
            }
            while let Some(command) = self.cmd() {
                if let Some(outcome) = world.answer(self.ms(), &command) {
                    self.m.handle(self.now, outcome);
                }
            }
            let ms = self.ms();
            self.log
                .extend(std::iter::from_fn(|| self.m.poll_event()).map(|e| (ms, e)));
            let Some(wake) = self.m.poll_timeout() else {
                return;
            };
            // Nothing is in flight here, so a deadline in the past would only repeat
            // this instant: move on (`poll_timeout` spinning is tested on its own).
            let wake = millis(wake).max(ms + 1);
            let wake = world.tick.map_or(wake, |tick| wake.min(ms + tick));
            if wake > until_ms {
                return;
            }
            self.at(wake);
        }
    }
    /// A lane's failures as [`run`](Self::run) logged them: `(instant, delay in ms,
    /// consecutive failures)`.
    fn logged_backoffs(&self, lane: i32) -> Vec<(i64, u128, u32)> {
        self.log
            .iter()
            .filter_map(|(t, e)| match e {
                RelayEvent::BackingOff {
                    bucket: Some(b),
                    delay,
                    consecutive_failures,
                    ..
                } if *b == lane => Some((*t, delay.as_millis(), *consecutive_failures)),
                _ => None,
            })
            .collect()
    }
    /// The events [`run`](Self::run) collected, without their instants.
    fn logged(&self) -> Vec<&RelayEvent> {
        self.log.iter().map(|(_, e)| e).collect()
    }
}

/// An in-memory store and broker that answer at once.
#[derive(Default)]
struct World {
    /// Pending row ids per bucket.
    pending: BTreeMap<i32, BTreeSet<i64>>,
    /// What acquisitions answer.
    owned: Vec<i32>,
    fail_fetch: BTreeSet<i32>,
    fail_publish: BTreeSet<i32>,
    fail_delete: BTreeSet<i32>,
    /// Every publish call: `(instant, bucket, ids)`.
    published: Vec<(i64, i32, Vec<i64>)>,
    /// Buckets that get a new row and a hint at every wake-up of [`TestRelay::run`].
    trickle: Vec<i32>,
    /// Wake [`TestRelay::run`] at least this often (as hints would).
    tick: Option<i64>,
    /// Leave renewals unanswered, in [`held`](Self::held) with their instant.
    hold_renewals: bool,
    held: Vec<(i64, Command)>,
    next_id: i64,
}

impl World {
    fn owning(owned: &[i32]) -> World {
        World {
            owned: owned.to_vec(),
            ..World::default()
        }
    }
    /// Commits `n` rows to `bucket` (ids grow across all buckets).
    fn add(&mut self, bucket: i32, n: usize) {
        for _ in 0..n {
            self.next_id += 1;
            self.pending.entry(bucket).or_default().insert(self.next_id);
        }
    }
    fn pending_in(&self, bucket: i32) -> usize {
        self.pending.get(&bucket).map_or(0, BTreeSet::len)
    }
    fn publishes_of(&self, bucket: i32) -> Vec<(i64, Vec<i64>)> {
        self.published
            .iter()
            .filter(|(_, b, _)| *b == bucket)
            .map(|(t, _, ids)| (*t, ids.clone()))
            .collect()
    }
    /// The outcome of `command`, or `None` when the world holds it back.
    fn answer(&mut self, now_ms: i64, command: &Command) -> Option<Outcome> {
        if self.hold_renewals && matches!(command, Command::RenewLeases { .. }) {
            self.held.push((now_ms, command.clone()));
            return None;
        }
        Some(match command {
            Command::AcquireLeases { .. } => Outcome::Acquired(Ok(self.owned.clone().into())),
            Command::ProbePending { buckets } => Outcome::Probed(Ok(buckets
                .iter()
                .copied()
                .filter(|b| self.pending_in(*b) > 0)
                .collect())),
            Command::FetchBatch {
                bucket,
                after,
                limit,
            } => {
                let result = if self.fail_fetch.contains(bucket) {
                    Err(StoreError::unavailable("db down"))
                } else {
                    Ok(self
                        .pending
                        .get(bucket)
                        .into_iter()
                        .flatten()
                        .copied()
                        .filter(|id| after.is_none_or(|a| *id > a))
                        .take(*limit)
                        .map(|id| row(*bucket, id))
                        .collect())
                };
                Outcome::Fetched {
                    bucket: *bucket,
                    result,
                }
            }
            Command::Publish { bucket, batch } => {
                self.published.push((now_ms, *bucket, ids(batch)));
                let outcome = if self.fail_publish.contains(bucket) {
                    PublishOutcome::partial(0, PublishError::retryable("broker down"))
                } else {
                    PublishOutcome::all(batch.len())
                };
                Outcome::Published {
                    bucket: *bucket,
                    outcome,
                }
            }
            Command::DeletePublished {
                bucket,
                batch,
                count,
            } => {
                let result = if self.fail_delete.contains(bucket) {
                    Err(StoreError::unavailable("db down"))
                } else {
                    if let Some(pending) = self.pending.get_mut(bucket) {
                        for m in &batch[..*count] {
                            pending.remove(&m.id);
                        }
                    }
                    Ok(())
                };
                Outcome::Deleted {
                    bucket: *bucket,
                    result,
                }
            }
            Command::RenewLeases { buckets, .. } => Outcome::Renewed(Ok(RenewOutcome {
                renewed: buckets.clone(),
                lost: Vec::new(),
            })),
            Command::ReleaseLeases => Outcome::Released(Ok(())),
            Command::LoadHolds { bucket } => Outcome::HoldsLoaded {
                bucket: *bucket,
                result: Ok(Vec::new()),
            },
            Command::ParkRows { bucket, rows, .. } => {
                let pending = self.pending.entry(*bucket).or_default();
                let parked = rows
                    .iter()
                    .map(|r| r.message.id)
                    .filter(|id| pending.remove(id))
                    .collect();
                Outcome::Parked {
                    bucket: *bucket,
                    result: Ok(crate::park::ParkOutcome {
                        parked,
                        ..Default::default()
                    }),
                }
            }
        })
    }
}

/// The harness itself: a world-driven relay drains what it owns.
#[test]
fn a_running_relay_drains_every_owned_bucket() {
    let mut h = TestRelay::renewing();
    let mut w = World::owning(&[0, 1, 2]);
    w.add(0, 5);
    w.add(1, 1);
    w.add(2, 4);
    h.run(&mut w, 2_000);
    assert_eq!(
        (w.pending_in(0), w.pending_in(1), w.pending_in(2)),
        (0, 0, 0)
    );
    let mut published: Vec<i64> = w.published.iter().flat_map(|(_, _, i)| i.clone()).collect();
    published.sort_unstable();
    assert_eq!(published, (1..=10).collect::<Vec<_>>(), "each row once");
    assert!(
        !h.logged()
            .iter()
            .any(|e| matches!(e, RelayEvent::BackingOff { .. })),
        "no failure on the happy path"
    );
}
