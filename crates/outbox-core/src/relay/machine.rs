//! The composed relay machine: leases + drain scheduling + backoff + shutdown.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use super::drain::Drain;
use super::lease::Leases;
use super::{Command, Hint, Outcome, RelayEvent};
use crate::error::{Misconfiguration, StoreError};
use crate::message::OutboxMessage;
use crate::options::RelayOptions;
use crate::publisher::PublishOutcome;
use crate::store::{RenewOutcome, StoreCapabilities};
use crate::time::{Monotonic, Now, Timestamp};

/// The one serialized operation in flight (renewal alongside a publish is tracked apart).
#[derive(Debug)]
enum InFlight {
    Idle,
    Acquiring {
        started: Now,
    },
    Probing {
        started: Monotonic,
    },
    Fetching {
        bucket: i32,
    },
    Publishing {
        bucket: i32,
        batch: Arc<[OutboxMessage]>,
        started: Monotonic,
        lease_lost: bool,
    },
    Deleting {
        bucket: i32,
        drained: bool,
        failed: bool,
    },
    /// The release is in flight; `buckets` were owned when it was issued.
    Releasing {
        buckets: usize,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Life {
    Running,
    Stopping,
    /// The release was handed out (or is not supported); the next idle poll stops.
    Released,
    Stopped,
    Failed(Misconfiguration),
}

/// The relay's decisions, free of I/O. See the [module docs](super).
#[derive(Debug)]
pub struct RelayMachine {
    options: RelayOptions,
    capabilities: StoreCapabilities,
    leases: Leases,
    drain: Drain,
    /// The serialized store call or publish in flight.
    in_flight: InFlight,
    /// Start time of a renewal in flight.
    renewing: Option<Now>,
    /// A command produced by a handler, handed out by the next `poll_command`.
    queued: Option<Command>,
    consecutive_failures: u32,
    backoff_until: Option<Monotonic>,
    /// Without renewal: an acquisition was already tried to make room for a publish.
    reservation_retried: bool,
    /// When the current busy cycle began.
    cycle_started: Option<Monotonic>,
    /// An acquisition has succeeded ([`RelayEvent::Joined`] was reported).
    joined: bool,
    /// A publish was abandoned during shutdown: its request may still reach the broker,
    /// so the leases are left to run out instead of being handed back.
    abandoned: bool,
    life: Life,
    events: VecDeque<RelayEvent>,
}

impl RelayMachine {
    /// Creates a machine that will start by acquiring leases at `now`.
    ///
    /// Fails when the store cannot renew leases and no publish budget is configured: the
    /// relay could not otherwise show that a lease outlives a publish.
    pub fn new(
        options: RelayOptions,
        capabilities: StoreCapabilities,
        now: Now,
    ) -> Result<Self, Misconfiguration> {
        if !capabilities.lease_renewal && options.max_publish_duration().is_none() {
            return Err(Misconfiguration::MissingPublishBudget);
        }
        Ok(RelayMachine {
            leases: Leases::new(
                now.mono,
                options.lease_duration(),
                options.lease_renew_interval(),
            ),
            drain: Drain::new(now.mono, options.poll_interval()),
            options,
            capabilities,
            in_flight: InFlight::Idle,
            renewing: None,
            queued: None,
            consecutive_failures: 0,
            backoff_until: None,
            reservation_retried: false,
            cycle_started: None,
            joined: false,
            abandoned: false,
            life: Life::Running,
            events: VecDeque::new(),
        })
    }

    /// The options the machine runs with.
    pub fn options(&self) -> &RelayOptions {
        &self.options
    }

    /// Buckets this relay currently believes it owns (leases may have run out since;
    /// [`owns_valid`](Self::owns_valid) checks that).
    pub fn owned(&self) -> impl Iterator<Item = i32> + '_ {
        self.leases.owned().iter().copied()
    }

    /// Whether `bucket` is owned with a lease valid at `now`.
    pub fn owns_valid(&self, bucket: i32, now: Now) -> bool {
        self.leases.is_valid(bucket, now)
    }

    /// Whether the relay may act on `bucket` at `now`: it owns the bucket with a valid
    /// lease and no acquisition is in flight (an acquisition may be releasing the bucket
    /// in the store at this very moment; the relay starts nothing while it runs).
    pub fn may_act_on(&self, bucket: i32, now: Now) -> bool {
        !matches!(self.in_flight, InFlight::Acquiring { .. }) && self.leases.is_valid(bucket, now)
    }

    /// Until when the owned leases are valid.
    pub fn lease_valid_until(&self) -> Timestamp {
        self.leases.valid_until()
    }

    /// Whether a publish is in flight.
    pub fn is_publishing(&self) -> bool {
        matches!(self.in_flight, InFlight::Publishing { .. })
    }

    /// Whether the machine has stopped (after shutdown or a fatal error).
    pub fn is_finished(&self) -> bool {
        matches!(self.life, Life::Stopped | Life::Failed(_))
    }

    /// The fatal error that stopped the machine, if any.
    pub fn fatal_error(&self) -> Option<&Misconfiguration> {
        match &self.life {
            Life::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// The next event for logs and metrics.
    pub fn poll_event(&mut self) -> Option<RelayEvent> {
        self.events.pop_front()
    }

    /// The next command to execute, or `None` until an event or the timeout.
    pub fn poll_command(&mut self, now: Now) -> Option<Command> {
        let command = self.next_command(now);
        if command.is_some() {
            self.cycle_started.get_or_insert(now.mono);
        } else if matches!(self.in_flight, InFlight::Idle) && self.renewing.is_none() {
            self.end_cycle(now);
        }
        command
    }

    /// A cycle is the busy stretch between two idle waits (acquisition, probe, sweeps),
    /// excluding the idle wait and backoff themselves.
    fn end_cycle(&mut self, now: Now) {
        if let Some(started) = self.cycle_started.take() {
            self.events.push_back(RelayEvent::CycleCompleted {
                elapsed: now.mono.saturating_duration_since(started),
            });
        }
    }

    fn next_command(&mut self, now: Now) -> Option<Command> {
        if matches!(self.life, Life::Stopped | Life::Failed(_)) {
            return None;
        }
        self.check_expiry(now);
        if let Some(command) = self.queued.take() {
            return Some(command);
        }
        if self.is_publishing() {
            return self.renewal_alongside_publish(now);
        }
        if !matches!(self.in_flight, InFlight::Idle) || self.renewing.is_some() {
            return None;
        }
        if self.life == Life::Stopping && self.capabilities.lease_release && !self.abandoned {
            // Nothing is in flight and nothing new will start: handing the leases back
            // cannot let a delete or publish of ours follow the new owner's.
            self.life = Life::Released;
            // From the moment the release is issued the store may hand our buckets to
            // another relay, and this relay never acts again: it owns nothing from here.
            let buckets = self.leases.owned().len();
            self.drop_ownership();
            self.in_flight = InFlight::Releasing { buckets };
            return Some(Command::ReleaseLeases);
        }
        if matches!(self.life, Life::Stopping | Life::Released) {
            self.life = Life::Stopped;
            self.drop_ownership();
            self.events.push_back(RelayEvent::Stopped);
            return None;
        }
        if let Some(until) = self.backoff_until {
            if now.mono < until {
                return None;
            }
            self.backoff_until = None;
        }
        loop {
            if self.drain.in_sweep() {
                if self.reservation_retried && self.leases.acquire_due(now.mono) {
                    return Some(self.start_acquire(now));
                }
                if self.capabilities.lease_renewal && self.leases.renew_due(now.mono) {
                    return Some(self.start_renewal(now));
                }
                while let Some(bucket) = self.drain.next_in_sweep() {
                    if self.leases.is_valid(bucket, now) {
                        self.in_flight = InFlight::Fetching { bucket };
                        self.drain.fetch_started(bucket);
                        return Some(Command::FetchBatch {
                            bucket,
                            after: None,
                            limit: self.options.batch_size(),
                        });
                    }
                }
            }
            // Between sweeps: rebalancing first, then discovery, then the next sweep.
            if self.leases.acquire_due(now.mono) {
                return Some(self.start_acquire(now));
            }
            if !self.leases.owns_any() {
                return None;
            }
            if self.drain.discovery_due(now.mono) {
                self.in_flight = InFlight::Probing { started: now.mono };
                return Some(Command::ProbePending {
                    buckets: self.leases.owned().iter().copied().collect(),
                });
            }
            if !self.drain.start_sweep() {
                return None;
            }
        }
    }

    /// The next instant at which the machine wants [`handle_timeout`](Self::handle_timeout),
    /// if any. Only deadlines that lead to an action in the current state are reported,
    /// so a caller that sleeps until this instant never spins.
    pub fn poll_timeout(&self) -> Option<Monotonic> {
        if matches!(self.life, Life::Stopped | Life::Failed(_)) {
            return None;
        }
        let mut next: Option<Monotonic> = None;
        let mut consider = |t: Monotonic| next = Some(next.map_or(t, |n| n.min(t)));
        if self.leases.owns_any() {
            consider(self.leases.valid_until_mono());
        }
        if self.is_publishing() {
            if self.capabilities.lease_renewal && self.renewing.is_none() && self.leases.owns_any()
            {
                consider(self.leases.next_renew_at());
            }
        } else if matches!(self.in_flight, InFlight::Idle)
            && self.renewing.is_none()
            && self.life == Life::Running
        {
            match self.backoff_until {
                Some(until) => consider(until),
                None => {
                    consider(self.leases.next_acquire_at());
                    if self.leases.owns_any() {
                        consider(self.drain.next_discovery_at());
                    }
                }
            }
        }
        next
    }

    /// Time has passed; lease expiry is noticed here even while calls are in flight.
    pub fn handle_timeout(&mut self, now: Now) {
        self.check_expiry(now);
    }

    /// A commit notification arrived. Hints only ever add work for buckets this relay
    /// validly owns; they never cut a backoff short or touch the discovery deadline.
    pub fn handle_hint(&mut self, now: Now, hint: Hint) {
        if self.life != Life::Running {
            return;
        }
        let bucket_count = i64::from(self.options.bucket_count().get());
        match hint {
            Hint::Unknown => {
                if self.leases.owns_any() {
                    self.drain.force_discovery();
                }
            }
            Hint::Bucket(b) if i64::from(b) >= bucket_count => {
                // A bucket we cannot even own: let discovery look (and report a
                // misconfigured writer if rows are really there).
                if self.leases.owns_any() {
                    self.drain.force_discovery();
                }
            }
            Hint::Bucket(b) => {
                if self.leases.is_valid(b, now) {
                    self.drain.mark_ready(b);
                }
            }
        }
    }

    /// Shutdown was requested: start nothing new. An in-flight publish is awaited (or
    /// cancelled by the caller); its acknowledged prefix is still deleted while the lease
    /// holds. The machine reports [`RelayEvent::Stopped`] once nothing is in flight.
    pub fn handle_shutdown(&mut self) {
        if self.life != Life::Running {
            return;
        }
        self.life = Life::Stopping;
        self.drain.abort_sweep();
        if let Some(Command::Publish { .. }) = self.queued {
            // Never handed out: nothing to wait for.
            self.queued = None;
            self.in_flight = InFlight::Idle;
        }
    }

    /// The result of the command handed out last for its slot (the serialized call, or
    /// a renewal). An outcome the machine did not ask for is a caller bug: it trips a
    /// debug assertion, and release builds ignore it.
    pub fn handle(&mut self, now: Now, outcome: Outcome) {
        debug_assert!(
            self.awaits(&outcome),
            "the relay machine did not ask for {outcome:?} (in flight: {:?}, renewing: {})",
            self.in_flight,
            self.renewing.is_some()
        );
        match outcome {
            Outcome::Acquired(result) => self.on_acquired(now, result),
            Outcome::Probed(result) => self.on_probed(now, result),
            Outcome::Fetched(result) => self.on_fetched(now, result),
            Outcome::Published(outcome) => self.on_published(now, outcome),
            Outcome::PublishCancelled => self.on_publish_cancelled(now),
            Outcome::Deleted(result) => self.on_deleted(now, result),
            Outcome::Renewed(result) => self.on_renewed(now, result),
            Outcome::Released(result) => self.on_released(now, result),
        }
    }

    /// Whether `outcome` answers a command this machine handed out and awaits.
    pub fn awaits(&self, outcome: &Outcome) -> bool {
        let handed_out = self.queued.is_none();
        match outcome {
            Outcome::Renewed(_) => self.renewing.is_some(),
            Outcome::Acquired(_) => matches!(self.in_flight, InFlight::Acquiring { .. }),
            Outcome::Probed(_) => matches!(self.in_flight, InFlight::Probing { .. }),
            Outcome::Fetched(_) => matches!(self.in_flight, InFlight::Fetching { .. }),
            Outcome::Published(_) | Outcome::PublishCancelled => {
                handed_out && matches!(self.in_flight, InFlight::Publishing { .. })
            }
            Outcome::Deleted(_) => {
                handed_out && matches!(self.in_flight, InFlight::Deleting { .. })
            }
            Outcome::Released(_) => matches!(self.in_flight, InFlight::Releasing { .. }),
        }
    }

    /// Result of [`Command::AcquireLeases`].
    fn on_acquired(&mut self, now: Now, result: Result<Vec<i32>, StoreError>) {
        let InFlight::Acquiring { started } = self.in_flight else {
            return;
        };
        self.in_flight = InFlight::Idle;
        match result {
            Ok(buckets) => {
                let first = !self.joined;
                if first {
                    self.joined = true;
                    self.events.push_back(RelayEvent::Joined);
                }
                let change = self.leases.on_acquired(started, buckets);
                self.drain.retain_owned(self.leases.owned());
                if change.gained {
                    self.drain.force_discovery();
                }
                // The first answer turns an unknown owned set into a known one, even empty.
                if change.changed || first {
                    self.events.push_back(RelayEvent::OwnershipChanged {
                        owned: self.leases.owned().iter().copied().collect(),
                    });
                }
                self.check_expiry(now);
                self.consecutive_failures = 0;
            }
            Err(error) => {
                // The call may have been applied before it failed, and an acquisition
                // releases buckets above the share: another relay may own some of ours
                // already. Act on nothing until an acquisition says what is ours.
                if self.leases.owns_any() {
                    let buckets = self.leases.owned().len();
                    self.leases.clear();
                    self.drain.clear();
                    self.events.push_back(RelayEvent::LeaseExpired { buckets });
                    self.events
                        .push_back(RelayEvent::OwnershipChanged { owned: Vec::new() });
                }
                self.store_failed(now, "acquire_leases", error)
            }
        }
    }

    /// Result of [`Command::ProbePending`].
    fn on_probed(&mut self, now: Now, result: Result<Vec<i32>, StoreError>) {
        let InFlight::Probing { started } = self.in_flight else {
            return;
        };
        self.in_flight = InFlight::Idle;
        match result {
            Ok(buckets) => {
                self.check_expiry(now);
                let valid: Vec<i32> = buckets
                    .into_iter()
                    .filter(|b| self.leases.is_valid(*b, now))
                    .collect();
                self.drain.on_discovered(started, valid);
                self.consecutive_failures = 0;
            }
            Err(error) => {
                self.drain.on_discovery_failed(started);
                self.store_failed(now, "buckets_with_pending", error);
            }
        }
    }

    /// Result of [`Command::FetchBatch`].
    fn on_fetched(&mut self, now: Now, result: Result<Vec<OutboxMessage>, StoreError>) {
        let InFlight::Fetching { bucket } = self.in_flight else {
            return;
        };
        self.in_flight = InFlight::Idle;
        let batch = match result {
            Ok(batch) => batch,
            Err(error) => return self.store_failed(now, "next_batch", error),
        };
        self.consecutive_failures = 0;
        self.check_expiry(now);
        if !self.leases.is_valid(bucket, now) {
            return;
        }
        if batch.is_empty() {
            self.drain.mark_drained(bucket);
            return;
        }
        if !self.capabilities.lease_renewal && !self.reserve_publish_budget(now, bucket) {
            return;
        }
        let batch: Arc<[OutboxMessage]> = batch.into();
        self.in_flight = InFlight::Publishing {
            bucket,
            batch: Arc::clone(&batch),
            started: now.mono,
            lease_lost: false,
        };
        self.queued = Some(Command::Publish { bucket, batch });
    }

    /// Result of [`Command::Publish`].
    fn on_published(&mut self, now: Now, outcome: PublishOutcome) {
        let InFlight::Publishing {
            bucket,
            ref batch,
            started,
            lease_lost,
        } = self.in_flight
        else {
            return;
        };
        let batch = Arc::clone(batch);
        self.in_flight = InFlight::Idle;
        let elapsed = now.mono.saturating_duration_since(started);
        let acknowledged = outcome.acknowledged.min(batch.len());
        let failed = outcome.error.is_some() || acknowledged < batch.len();
        self.events.push_back(RelayEvent::Published {
            bucket,
            attempted: batch.len(),
            acknowledged,
            elapsed,
            failed,
        });
        if let Some(error) = outcome.error {
            self.events
                .push_back(RelayEvent::PublishFailed { bucket, error });
        }
        if !self.capabilities.lease_renewal
            && let Some(budget) = self.options.max_publish_duration()
            && elapsed > budget
        {
            return self.fail(Misconfiguration::PublishBudgetExceeded {
                elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                budget_ms: u64::try_from(budget.as_millis()).unwrap_or(u64::MAX),
            });
        }
        self.check_expiry(now);
        if lease_lost || !self.leases.is_valid(bucket, now) {
            // Someone else may own the bucket by now: delete nothing, let the new owner
            // (or our next acquisition) carry on from the rows as they are.
            self.drain.abort_sweep();
            self.leases.acquire_now(now.mono);
            if failed {
                self.back_off(now);
            }
            return;
        }
        if acknowledged > 0 {
            let drained = !failed && batch.len() < self.options.batch_size();
            self.in_flight = InFlight::Deleting {
                bucket,
                drained,
                failed,
            };
            self.queued = Some(Command::DeletePublished {
                bucket,
                batch,
                count: acknowledged,
            });
        } else if failed {
            self.back_off(now);
        }
    }

    /// The caller abandoned an in-flight publish during shutdown. Nothing is deleted.
    fn on_publish_cancelled(&mut self, _now: Now) {
        let InFlight::Publishing { bucket, .. } = self.in_flight else {
            return;
        };
        self.in_flight = InFlight::Idle;
        self.abandoned = true;
        self.events
            .push_back(RelayEvent::PublishCancelled { bucket });
    }

    /// Result of [`Command::DeletePublished`].
    fn on_deleted(&mut self, now: Now, result: Result<(), StoreError>) {
        let InFlight::Deleting {
            bucket,
            drained,
            failed,
        } = self.in_flight
        else {
            return;
        };
        self.in_flight = InFlight::Idle;
        match result {
            Ok(()) => {
                if drained {
                    self.drain.mark_drained(bucket);
                }
                if failed {
                    self.back_off(now);
                } else {
                    self.consecutive_failures = 0;
                }
            }
            Err(error) => self.store_failed(now, "delete_published", error),
        }
    }

    /// Result of [`Command::ReleaseLeases`]. A failure is reported and otherwise
    /// ignored: the leases run out by themselves.
    fn on_released(&mut self, _now: Now, result: Result<(), StoreError>) {
        let InFlight::Releasing { buckets } = self.in_flight else {
            return;
        };
        self.in_flight = InFlight::Idle;
        match result {
            Ok(()) => self
                .events
                .push_back(RelayEvent::LeasesReleased { buckets }),
            Err(error) => self.events.push_back(RelayEvent::StoreFailed {
                operation: "release_leases",
                error,
            }),
        }
    }

    /// Result of [`Command::RenewLeases`].
    fn on_renewed(&mut self, now: Now, result: Result<RenewOutcome, StoreError>) {
        let Some(started) = self.renewing.take() else {
            return;
        };
        match result {
            Ok(outcome) => {
                let had = self.leases.owned().len();
                let lost = self.leases.on_renewed(started, &outcome);
                if !lost.is_empty() {
                    self.drain.retain_owned(self.leases.owned());
                    if let InFlight::Publishing {
                        bucket,
                        ref mut lease_lost,
                        ..
                    } = self.in_flight
                        && lost.contains(&bucket)
                    {
                        *lease_lost = true;
                    }
                    if had > 0 {
                        self.events.push_back(RelayEvent::LeaseExpired {
                            buckets: lost.len(),
                        });
                    }
                    self.events.push_back(RelayEvent::OwnershipChanged {
                        owned: self.leases.owned().iter().copied().collect(),
                    });
                    self.leases.acquire_now(now.mono);
                }
                self.check_expiry(now);
            }
            Err(error) if error.is_fatal() || matches!(error, StoreError::Unsupported(_)) => {
                self.fail(fatal_from(error));
            }
            Err(error) => {
                self.events.push_back(RelayEvent::StoreFailed {
                    operation: "renew_leases",
                    error,
                });
                self.leases
                    .retry_renewal_after(now.mono, self.options.error_backoff());
                if !self.is_publishing() {
                    self.back_off(now);
                }
            }
        }
    }

    fn renewal_alongside_publish(&mut self, now: Now) -> Option<Command> {
        if self.capabilities.lease_renewal
            && self.renewing.is_none()
            && self.leases.renew_due(now.mono)
        {
            return Some(self.start_renewal(now));
        }
        None
    }

    fn start_acquire(&mut self, now: Now) -> Command {
        self.in_flight = InFlight::Acquiring { started: now };
        Command::AcquireLeases { now: now.wall }
    }

    fn start_renewal(&mut self, now: Now) -> Command {
        self.renewing = Some(now);
        Command::RenewLeases {
            now: now.wall,
            buckets: self.leases.owned().iter().copied().collect(),
        }
    }

    /// Without renewal, a publish may only start when the lease covers the whole publish
    /// budget plus one renew interval. If it does not, acquire once (which extends the
    /// leases) and try again; if even a fresh lease is too short, keep the rows and
    /// report the configuration problem.
    fn reserve_publish_budget(&mut self, now: Now, bucket: i32) -> bool {
        let budget = self.options.max_publish_duration().unwrap_or(Duration::MAX);
        let needed = budget.saturating_add(self.options.lease_renew_interval());
        let remaining = self.leases.remaining(now);
        if remaining >= needed {
            self.reservation_retried = false;
            return true;
        }
        if !self.reservation_retried {
            self.reservation_retried = true;
            self.leases.acquire_now(now.mono);
            self.drain.revisit_first(bucket);
            return false;
        }
        self.reservation_retried = false;
        self.events
            .push_back(RelayEvent::LeaseTooShortForPublish { remaining, needed });
        self.back_off(now);
        false
    }

    fn check_expiry(&mut self, now: Now) {
        let dropped = self.leases.expire_if_due(now);
        if dropped == 0 {
            return;
        }
        self.drain.clear();
        if let InFlight::Publishing {
            ref mut lease_lost, ..
        } = self.in_flight
        {
            *lease_lost = true;
        }
        self.events
            .push_back(RelayEvent::LeaseExpired { buckets: dropped });
        self.events
            .push_back(RelayEvent::OwnershipChanged { owned: Vec::new() });
    }

    /// Forgets every lease on purpose (a stop), telling the listeners when it had any.
    fn drop_ownership(&mut self) {
        if !self.leases.owns_any() {
            return;
        }
        self.leases.clear();
        self.drain.clear();
        self.events
            .push_back(RelayEvent::OwnershipChanged { owned: Vec::new() });
    }

    fn store_failed(&mut self, now: Now, operation: &'static str, error: StoreError) {
        if error.is_fatal() {
            return self.fail(fatal_from(error));
        }
        self.events
            .push_back(RelayEvent::StoreFailed { operation, error });
        self.back_off(now);
    }

    fn back_off(&mut self, now: Now) {
        self.end_cycle(now);
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        self.reservation_retried = false;
        let until = now
            .mono
            .saturating_add(self.options.backoff_after(self.consecutive_failures));
        self.backoff_until = Some(until);
        self.drain.abort_sweep();
        self.events.push_back(RelayEvent::BackingOff {
            until,
            consecutive_failures: self.consecutive_failures,
        });
    }

    fn fail(&mut self, error: Misconfiguration) {
        self.events.push_back(RelayEvent::Fatal(error.clone()));
        self.life = Life::Failed(error);
        self.queued = None;
        self.drain.clear();
    }
}

fn fatal_from(error: StoreError) -> Misconfiguration {
    match error {
        StoreError::Misconfigured(m) => m,
        other => Misconfiguration::Other(other.to_string()),
    }
}
