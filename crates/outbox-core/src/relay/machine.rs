//! The composed relay machine: relay-level lease work and discovery beside one lane per
//! owned bucket.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use super::discovery::Discovery;
use super::lane::{Lane, PendingDelete, Publishing, StoreCall};
use super::lease::Leases;
use super::{Command, Hint, Outcome, RelayEvent};
use crate::error::{Misconfiguration, StoreError};
use crate::message::OutboxMessage;
use crate::options::RelayOptions;
use crate::publisher::PublishOutcome;
use crate::relay_id::{HeartbeatVerdict, judge_heartbeat};
use crate::store::{Acquired, LeaseWait, RenewOutcome, StoreCapabilities};
use crate::time::{Monotonic, Now, Timestamp};

/// The acquisition or release in flight (a renewal and a probe are tracked apart: they run
/// beside it).
#[derive(Debug)]
enum Control {
    Idle,
    Acquiring {
        started: Now,
        /// The lanes that may go on acting while it runs: the store keeps them.
        busy: Vec<i32>,
    },
    /// The release is in flight; `buckets` were owned when it was issued.
    Releasing {
        buckets: usize,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Life {
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
    pub(super) options: RelayOptions,
    pub(super) capabilities: StoreCapabilities,
    pub(super) leases: Leases,
    discovery: Discovery,
    /// One lane per owned bucket, plus lanes of lost buckets until their calls in
    /// flight are answered.
    pub(super) lanes: BTreeMap<i32, Lane>,
    /// Where the search for a lane to start begins, so that slots rotate over the
    /// ready lanes instead of always going to the lowest bucket.
    rotation: i32,
    control: Control,
    /// Start time of a renewal in flight.
    renewing: Option<Now>,
    /// Start time of a probe in flight (a read: it runs beside any other call).
    probing: Option<Monotonic>,
    /// Failures in a row of relay-level calls (acquisition, probe).
    control_failures: u32,
    control_backoff_until: Option<Monotonic>,
    /// Without renewal: an acquisition was already tried to make room for a publish.
    reservation_retried: bool,
    /// When the current busy cycle began.
    cycle_started: Option<Monotonic>,
    /// An acquisition has succeeded ([`RelayEvent::Joined`] was reported).
    joined: bool,
    /// The heartbeat written by the first successful acquisition.
    joined_at: Option<Timestamp>,
    /// The heartbeats this relay sent (acquisitions and renewals) that may still be the
    /// row's value: what [`judge_heartbeat`] accepts as its own.
    heartbeats_sent: Vec<Timestamp>,
    /// The (bucket, holder) pairs last reported by [`RelayEvent::WaitingForLeases`].
    waiting_reported: Vec<(i32, String)>,
    /// A publish was abandoned during shutdown: its request may still reach the broker,
    /// so the leases are left to run out instead of being handed back.
    abandoned: bool,
    pub(super) life: Life,
    pub(super) events: VecDeque<RelayEvent>,
}

impl RelayMachine {
    /// Creates a machine that will start by acquiring leases at `now`.
    ///
    /// Fails when the store cannot renew leases and no publish budget is configured (the
    /// relay could not otherwise show that a lease outlives a publish), and when rows are
    /// to be parked but the store cannot park.
    pub fn new(
        options: RelayOptions,
        capabilities: StoreCapabilities,
        now: Now,
    ) -> Result<Self, Misconfiguration> {
        if !capabilities.lease_renewal && options.max_publish_duration().is_none() {
            return Err(Misconfiguration::MissingPublishBudget);
        }
        if options.max_publish_attempts().is_some() && !capabilities.parking {
            return Err(Misconfiguration::ParkingUnsupported);
        }
        Ok(RelayMachine {
            leases: Leases::new(
                now.mono,
                options.lease_duration(),
                options.lease_renew_interval(),
                capabilities.lease_renewal,
            ),
            discovery: Discovery::new(now.mono, options.poll_interval()),
            lanes: BTreeMap::new(),
            rotation: 0,
            options,
            capabilities,
            control: Control::Idle,
            renewing: None,
            probing: None,
            control_failures: 0,
            control_backoff_until: None,
            reservation_retried: false,
            cycle_started: None,
            joined: false,
            joined_at: None,
            heartbeats_sent: Vec::new(),
            waiting_reported: Vec::new(),
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
        let kept = match &self.control {
            Control::Acquiring { busy, .. } => busy.contains(&bucket),
            _ => true,
        };
        kept && self.leases.is_valid(bucket, now)
    }

    /// Until when the owned leases are valid.
    pub fn lease_valid_until(&self) -> Timestamp {
        self.leases.valid_until()
    }

    /// Whether any publish is in flight.
    pub fn is_publishing(&self) -> bool {
        self.lanes.values().any(|l| l.publishing.is_some())
    }

    /// The buckets whose publish is in flight.
    pub fn publishing_buckets(&self) -> Vec<i32> {
        self.lanes
            .values()
            .filter(|l| l.publishing.is_some())
            .map(|l| l.bucket)
            .collect()
    }

    /// Lanes with work in flight or queued (each holds one of the
    /// [`max_concurrent_lanes`](RelayOptions::max_concurrent_lanes) slots).
    pub fn active_lanes(&self) -> usize {
        self.lanes.values().filter(|l| l.is_active()).count()
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

    /// The next command to execute, or `None` until an outcome, a hint or the timeout.
    /// Call it until it returns `None`: several commands may be in flight at once.
    pub fn poll_command(&mut self, now: Now) -> Option<Command> {
        let command = self.next_command(now);
        if command.is_some() {
            self.cycle_started.get_or_insert(now.mono);
        } else if self.is_idle() {
            self.end_cycle(now);
        }
        command
    }

    /// Nothing is in flight anywhere.
    fn is_idle(&self) -> bool {
        matches!(self.control, Control::Idle)
            && self.renewing.is_none()
            && self.probing.is_none()
            && self.lanes.values().all(|l| !l.in_flight())
    }

    /// A cycle is a busy stretch between two moments with nothing in flight, excluding
    /// the idle waits themselves.
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
        if let Some(command) = self.next_lease_command(now) {
            return Some(command);
        }
        if matches!(self.life, Life::Stopping | Life::Released) {
            return self.next_stopping_command(now);
        }
        if let Some(command) = self.next_probe(now) {
            return Some(command);
        }
        self.next_lane_command(now)
    }

    /// One lease call at a time (acquisition, renewal or release), beside the lanes and
    /// any probe.
    fn next_lease_command(&mut self, now: Now) -> Option<Command> {
        if !matches!(self.control, Control::Idle) || self.renewing.is_some() {
            return None;
        }
        if self.life == Life::Running && self.acquisition_due(now) {
            return Some(self.start_acquire(now));
        }
        if self.renewal_due(now) {
            return Some(self.start_renewal(now));
        }
        None
    }

    /// A renewal is wanted now. A stopping relay renews only while lanes still have work
    /// in flight: otherwise it would keep renewing instead of handing its leases back.
    fn renewal_due(&self, now: Now) -> bool {
        self.capabilities.lease_renewal
            && self.leases.renew_due(now.mono)
            && (self.life == Life::Running || self.lanes.values().any(Lane::in_flight))
    }

    /// An acquisition is wanted now.
    fn acquisition_due(&self, now: Now) -> bool {
        self.life == Life::Running
            && self.leases.acquire_due(now.mono)
            && self.control_backoff_until.is_none_or(|u| now.mono >= u)
    }

    fn next_probe(&mut self, now: Now) -> Option<Command> {
        if self.probing.is_some()
            || self.life != Life::Running
            || !self.leases.owns_any()
            || !self.discovery.due(now.mono)
            || self.control_backoff_until.is_some_and(|u| now.mono < u)
        {
            return None;
        }
        self.probing = Some(now.mono);
        Some(Command::ProbePending {
            buckets: self.leases.owned().iter().copied().collect(),
        })
    }

    /// While stopping: acknowledged prefixes are still deleted; once nothing is in
    /// flight, the leases are handed back and the machine stops.
    fn next_stopping_command(&mut self, now: Now) -> Option<Command> {
        if let Some(command) = self.next_delete(now) {
            return Some(command);
        }
        if !self.is_idle() {
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
            self.control = Control::Releasing { buckets };
            return Some(Command::ReleaseLeases);
        }
        self.life = Life::Stopped;
        self.drop_ownership();
        self.events.push_back(RelayEvent::Stopped);
        None
    }

    /// The first delete any lane may issue.
    fn next_delete(&mut self, now: Now) -> Option<Command> {
        let bucket = self
            .lanes
            .values()
            .find(|l| {
                l.owned
                    && l.store_call.is_none()
                    && !l.to_delete.is_empty()
                    && self.may_act_on(l.bucket, now)
            })?
            .bucket;
        self.issue_delete(bucket)
    }

    fn issue_delete(&mut self, bucket: i32) -> Option<Command> {
        let lane = self.lanes.get_mut(&bucket)?;
        let pending = lane.to_delete.pop_front()?;
        lane.store_call = Some(StoreCall::Deleting {
            published_in_full: pending.published_in_full,
            failures_seen: pending.failures_seen,
        });
        Some(Command::DeletePublished {
            bucket,
            batch: pending.batch,
            count: pending.count,
        })
    }

    /// Deletes first (they free the pipeline), then publishes, then fetches on the lanes
    /// that hold a slot, then fetches on new lanes while slots are free.
    fn next_lane_command(&mut self, now: Now) -> Option<Command> {
        if !self.leases.owns_any() {
            return None;
        }
        if let Some(command) = self.next_delete(now) {
            return Some(command);
        }
        if let Some(command) = self.next_park(now) {
            return Some(command);
        }
        if let Some(command) = self.next_publish(now) {
            return Some(command);
        }
        self.next_fetch(now)
    }

    fn next_publish(&mut self, now: Now) -> Option<Command> {
        let bucket = self
            .lanes
            .values()
            .find(|l| {
                l.owned
                    && !l.surplus
                    && l.publishing.is_none()
                    && l.next.is_some()
                    && !l.backing_off(now.mono)
                    && self.may_act_on(l.bucket, now)
            })?
            .bucket;
        if !self.capabilities.lease_renewal {
            // Without renewal the lease must cover the whole publish; while an
            // acquisition (which extends it) is out, wait for its answer.
            if matches!(self.control, Control::Acquiring { .. })
                || !self.reserve_publish_budget(now, bucket)
            {
                return None;
            }
        }
        let lane = self.lanes.get_mut(&bucket)?;
        let batch = lane.next.take()?;
        // The cursor moves only over rows handed to a publish: a fetched batch that is
        // dropped (a failure, a lost or surplus bucket) must be read again.
        lane.cursor = batch.last().map(|m| m.id).max(lane.cursor);
        // Acting again ends the backoff (its deadline must not linger in poll_timeout).
        lane.backoff_until = None;
        lane.publishing = Some(Publishing {
            batch: Arc::clone(&batch),
            started: now.mono,
            failures_seen: lane.failures_total,
            lease_lost: false,
        });
        Some(Command::Publish { bucket, batch })
    }

    fn next_fetch(&mut self, now: Now) -> Option<Command> {
        let max = self.options.max_concurrent_lanes();
        let active = self.active_lanes();
        let waiting = self
            .lanes
            .values()
            .any(|l| !l.is_active() && l.wants_fetch(now.mono) && self.may_act_on(l.bucket, now));
        // Lanes that hold a slot keep it for their next batch, unless lanes wait for a
        // slot: then each gives its slot up after one batch (bounded sweeps).
        let continuing = self
            .lanes
            .values()
            .find(|l| {
                l.is_active()
                    && l.wants_fetch(now.mono)
                    && self.may_act_on(l.bucket, now)
                    // A lane that read its holds for its next fetch makes that fetch.
                    && (l.fetch_after_holds
                        || !(waiting && active >= max && l.fetches_this_turn >= 1))
            })
            .map(|l| l.bucket);
        if let Some(bucket) = continuing {
            return self.issue_fetch(bucket, now);
        }
        if active >= max {
            return None;
        }
        // A free slot: the first waiting lane at or after the rotation point.
        let start = self.rotation;
        let candidate = self
            .lanes
            .range(start..)
            .chain(self.lanes.range(..start))
            .map(|(_, l)| l)
            .find(|l| !l.is_active() && l.wants_fetch(now.mono) && self.may_act_on(l.bucket, now))
            .map(|l| l.bucket)?;
        self.rotation = candidate.saturating_add(1);
        if let Some(lane) = self.lanes.get_mut(&candidate) {
            lane.fetches_this_turn = 0;
        }
        self.issue_fetch(candidate, now)
    }

    fn issue_fetch(&mut self, bucket: i32, now: Now) -> Option<Command> {
        if self.holds_due(bucket, now) {
            return self.issue_load_holds(bucket);
        }
        let lane = self.lanes.get_mut(&bucket)?;
        // While rows of the bucket are parked, an operator may requeue them under their
        // original ids, below any cursor: read from the head until none is parked.
        let after = if lane.holds.is_empty() {
            lane.cursor
        } else {
            None
        };
        // A read from the head (or from a cursor the store did not honour last time)
        // returns the rows still in the pipeline first: ask for that many more. A store
        // that honoured the lane's last cursor read is asked for one batch.
        let limit = fetch_limit(
            self.options.batch_size(),
            lane.held_rows(),
            after.is_some() && lane.cursor_honoured,
        );
        lane.fetch_after_holds = false;
        lane.store_call = Some(StoreCall::Fetching {
            discard: false,
            limit,
            after,
            after_probe: std::mem::take(&mut lane.probed_pending),
        });
        lane.hinted_since_fetch = false;
        lane.backoff_until = None;
        lane.fetches_this_turn = lane.fetches_this_turn.saturating_add(1);
        Some(Command::FetchBatch {
            bucket,
            after,
            limit,
        })
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
        let owns = self.leases.owns_any();
        if owns {
            consider(self.leases.valid_until_mono());
        }
        let control_idle = matches!(self.control, Control::Idle);
        // A renewal waits for the acquisition or release in flight (one lease call at a
        // time): a renewal deadline that passed during a slow acquisition must not wake
        // the caller before that call answers, or it spins.
        if self.capabilities.lease_renewal && self.renewing.is_none() && control_idle && owns {
            consider(self.leases.next_renew_at());
        }
        if self.life == Life::Running {
            match self.control_backoff_until {
                Some(until) => consider(until),
                None => {
                    // An acquisition waits for the lease call in flight; a probe only
                    // for the probe in flight.
                    if control_idle && self.renewing.is_none() {
                        consider(self.leases.next_acquire_at());
                    }
                    if owns && self.probing.is_none() {
                        consider(self.discovery.next_at());
                    }
                }
            }
        }
        if self.life == Life::Running {
            let slot_free = self.active_lanes() < self.options.max_concurrent_lanes();
            for lane in self.lanes.values() {
                // A lane's backoff matters only if, once it ends, the lane can act.
                if let Some(until) = lane.backoff_until
                    && lane.owned
                    && (lane.ready || lane.next.is_some())
                    && (lane.is_active() || slot_free)
                {
                    consider(until);
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
                    self.discovery.force();
                }
            }
            Hint::Bucket(b) if i64::from(b) >= bucket_count => {
                // A bucket we cannot even own: let discovery look (and report a
                // misconfigured writer if rows are really there).
                if self.leases.owns_any() {
                    self.discovery.force();
                }
            }
            Hint::Bucket(b) => {
                if self.leases.is_valid(b, now)
                    && let Some(lane) = self.lanes.get_mut(&b)
                    && lane.owned
                {
                    lane.ready = true;
                    lane.stalled = false;
                    if matches!(lane.store_call, Some(StoreCall::Fetching { .. })) {
                        lane.hinted_since_fetch = true;
                    }
                }
            }
        }
    }

    /// Shutdown was requested: start nothing new. Publishes in flight are awaited (or
    /// cancelled by the caller); their acknowledged prefixes are still deleted while the
    /// lease holds. The machine reports [`RelayEvent::Stopped`] once nothing is in flight.
    pub fn handle_shutdown(&mut self) {
        if self.life != Life::Running {
            return;
        }
        self.life = Life::Stopping;
        for lane in self.lanes.values_mut() {
            lane.next = None;
            lane.ready = false;
        }
    }

    /// The result of a command this machine handed out. An outcome the machine did not
    /// ask for is a caller bug: it trips a debug assertion, and release builds ignore it.
    pub fn handle(&mut self, now: Now, outcome: Outcome) {
        debug_assert!(
            self.awaits(&outcome),
            "the relay machine did not ask for {outcome:?} (control: {:?}, renewing: {})",
            self.control,
            self.renewing.is_some()
        );
        match outcome {
            Outcome::Acquired(result) => self.on_acquired(now, result),
            Outcome::Probed(result) => self.on_probed(now, result),
            Outcome::Fetched { bucket, result } => self.on_fetched(now, bucket, result),
            Outcome::Published { bucket, outcome } => self.on_published(now, bucket, outcome),
            Outcome::PublishCancelled { bucket } => self.on_publish_cancelled(bucket),
            Outcome::Deleted { bucket, result } => self.on_deleted(now, bucket, result),
            Outcome::Renewed(result) => self.on_renewed(now, result),
            Outcome::Released(result) => self.on_released(result),
            Outcome::HoldsLoaded { bucket, result } => self.on_holds_loaded(now, bucket, result),
            Outcome::Parked { bucket, result } => self.on_parked(now, bucket, result),
        }
        self.remove_finished_lanes();
        // A surplus lane that went quiet is handed over by the next acquisition, at once.
        if self
            .lanes
            .values()
            .any(|l| l.owned && l.surplus && !l.is_active())
        {
            self.leases.acquire_now(now.mono);
        }
    }

    /// Whether `outcome` answers a command this machine handed out and awaits.
    pub fn awaits(&self, outcome: &Outcome) -> bool {
        let lane = |bucket: &i32| self.lanes.get(bucket);
        match outcome {
            Outcome::Renewed(_) => self.renewing.is_some(),
            Outcome::Acquired(_) => matches!(self.control, Control::Acquiring { .. }),
            Outcome::Probed(_) => self.probing.is_some(),
            Outcome::Fetched { bucket, .. } => lane(bucket)
                .is_some_and(|l| matches!(l.store_call, Some(StoreCall::Fetching { .. }))),
            Outcome::Published { bucket, .. } | Outcome::PublishCancelled { bucket } => {
                lane(bucket).is_some_and(|l| l.publishing.is_some())
            }
            Outcome::Deleted { bucket, .. } => lane(bucket)
                .is_some_and(|l| matches!(l.store_call, Some(StoreCall::Deleting { .. }))),
            Outcome::Released(_) => matches!(self.control, Control::Releasing { .. }),
            Outcome::HoldsLoaded { bucket, .. } => {
                lane(bucket).is_some_and(|l| matches!(l.store_call, Some(StoreCall::LoadingHolds)))
            }
            Outcome::Parked { bucket, .. } => lane(bucket)
                .is_some_and(|l| matches!(l.store_call, Some(StoreCall::Parking { .. }))),
        }
    }

    /// Lanes of lost buckets are forgotten once nothing of theirs is in flight.
    fn remove_finished_lanes(&mut self) {
        self.lanes.retain(|_, l| l.owned || l.in_flight());
    }

    /// Makes the lanes follow the owned set: new buckets get a lane, lost ones lose it.
    fn sync_lanes(&mut self) {
        let owned = self.leases.owned().clone();
        for lane in self.lanes.values_mut() {
            if !owned.contains(&lane.bucket) && lane.owned {
                lane.lose_ownership();
            }
        }
        for bucket in owned {
            match self.lanes.get_mut(&bucket) {
                Some(lane) if !lane.owned => lane.regain_ownership(),
                Some(_) => {}
                None => {
                    self.lanes.insert(bucket, Lane::new(bucket));
                }
            }
        }
        self.remove_finished_lanes();
    }

    /// Result of [`Command::AcquireLeases`].
    fn on_acquired(&mut self, now: Now, result: Result<Acquired, StoreError>) {
        let Control::Acquiring { started, .. } = self.control else {
            return;
        };
        self.control = Control::Idle;
        self.judge_lease_call("acquire_leases", started, now);
        match result {
            Ok(Acquired {
                held: buckets,
                surplus,
                waiting,
                heartbeat_before,
            }) => {
                if !self.check_heartbeat(started, heartbeat_before) {
                    return;
                }
                self.report_waiting(waiting);
                let first = !self.joined;
                if first {
                    self.joined = true;
                    self.events.push_back(RelayEvent::Joined);
                }
                let change = self.leases.on_acquired(started, now.mono, buckets);
                self.sync_lanes();
                for lane in self.lanes.values_mut() {
                    lane.surplus = lane.owned && surplus.contains(&lane.bucket);
                    if lane.surplus {
                        // Finish what is out; fetch and publish nothing more here. The
                        // dropped batch may hold rows below the cursor: read from the head
                        // should the bucket stay ours.
                        lane.next = None;
                        lane.ready = false;
                        lane.cursor = None;
                        lane.fetch_after_holds = false;
                    }
                }
                if change.gained {
                    self.discovery.force();
                }
                // The first answer turns an unknown owned set into a known one, even empty.
                if change.changed || first {
                    self.events.push_back(RelayEvent::OwnershipChanged {
                        owned: self.leases.owned().iter().copied().collect(),
                    });
                }
                self.check_expiry(now);
                self.control_failures = 0;
                self.control_backoff_until = None;
            }
            Err(error) => {
                // The call may have been applied before it failed, and an acquisition
                // releases buckets above the share: another relay may own some of ours
                // already. Act on nothing until an acquisition says what is ours.
                if self.leases.owns_any() {
                    let buckets = self.leases.owned().len();
                    self.leases.clear();
                    self.sync_lanes();
                    self.events.push_back(RelayEvent::LeaseExpired { buckets });
                    self.events
                        .push_back(RelayEvent::OwnershipChanged { owned: Vec::new() });
                }
                self.control_failed(now, "acquire_leases", error);
            }
        }
    }

    /// Judges the heartbeat the acquisition that started at `started` found under this
    /// relay's id. Returns `false` when it shows another live process with the same id:
    /// the relay has then failed.
    fn check_heartbeat(&mut self, started: Now, found: Option<Timestamp>) -> bool {
        let verdict = judge_heartbeat(
            found,
            &self.heartbeats_sent,
            self.joined_at,
            started.wall,
            self.options.lease_duration(),
        );
        match verdict {
            HeartbeatVerdict::Own => {}
            HeartbeatVerdict::RecentPredecessor { last_seen } => {
                self.events.push_back(RelayEvent::RelayIdRecentlyUsed {
                    relay_id: self.options.relay_id().to_owned(),
                    last_seen,
                });
            }
            HeartbeatVerdict::Duplicate { found } => {
                self.fail(Misconfiguration::DuplicateRelayId {
                    relay_id: self.options.relay_id().to_owned(),
                    found_ms: found.as_millis(),
                });
                return false;
            }
        }
        self.joined_at.get_or_insert(started.wall);
        // This acquisition's own heartbeat has landed: older values can only come back
        // through a renewal still in flight, which keeps its own.
        let renewing = self.renewing.map(|r| r.wall);
        self.heartbeats_sent
            .retain(|v| *v >= started.wall || Some(*v) == renewing);
        true
    }

    /// Reports the buckets waited for when the (bucket, holder) set changes.
    fn report_waiting(&mut self, waiting: Vec<LeaseWait>) {
        let now: Vec<(i32, String)> = waiting
            .iter()
            .map(|w| (w.bucket, w.holder.clone()))
            .collect();
        if now != self.waiting_reported {
            self.waiting_reported = now;
            self.events
                .push_back(RelayEvent::WaitingForLeases { waiting });
        }
    }

    /// Remembers a heartbeat sent, so that [`judge_heartbeat`] knows it as this relay's.
    /// Bounded: only a long run of failed calls grows it, and their values are old.
    fn sent_heartbeat(&mut self, now: Timestamp) {
        const KEEP: usize = 1024;
        if self.heartbeats_sent.len() >= KEEP {
            self.heartbeats_sent.remove(0);
        }
        self.heartbeats_sent.push(now);
    }

    /// Result of [`Command::ProbePending`].
    fn on_probed(&mut self, now: Now, result: Result<Vec<i32>, StoreError>) {
        let Some(started) = self.probing.take() else {
            return;
        };
        match result {
            Ok(buckets) => {
                self.check_expiry(now);
                for bucket in buckets {
                    if self.leases.is_valid(bucket, now)
                        && let Some(lane) = self.lanes.get_mut(&bucket)
                        && lane.owned
                    {
                        lane.ready = true;
                        lane.stalled = false;
                        lane.probed_pending = true;
                    }
                }
                self.discovery.on_probed(started);
                self.control_failures = 0;
                self.control_backoff_until = None;
            }
            Err(error) => {
                if let Some(retry_at) = self.control_failed(now, "buckets_with_pending", error) {
                    self.discovery.on_failed(retry_at);
                }
            }
        }
    }

    /// Result of [`Command::FetchBatch`].
    fn on_fetched(
        &mut self,
        now: Now,
        bucket: i32,
        result: Result<Vec<OutboxMessage>, StoreError>,
    ) {
        self.check_expiry(now);
        let valid = self.leases.is_valid(bucket, now);
        let batch_size = self.options.batch_size();
        let Some(lane) = self.lanes.get_mut(&bucket) else {
            return;
        };
        let Some(StoreCall::Fetching {
            discard,
            limit,
            after,
            after_probe,
        }) = lane.store_call.take()
        else {
            return;
        };
        let rows = match result {
            Ok(rows) => rows,
            Err(error) => {
                if discard || !lane.owned {
                    return;
                }
                return self.lane_store_failed(now, bucket, "next_batch", error);
            }
        };
        if discard || !lane.owned || !valid {
            return;
        }
        if let (Some(after), Some(first)) = (after, rows.first()) {
            lane.cursor_honoured = first.id > after;
        }
        let short = rows.len() < limit;
        let (fresh, left_over) = lane.fresh_rows(rows, batch_size);
        if short && !left_over {
            // Short: the bucket is drained unless a hint arrived meanwhile.
            if !lane.hinted_since_fetch {
                lane.ready = false;
            }
            lane.hinted_since_fetch = false;
            if fresh.is_empty() && !lane.is_active() {
                if after.is_some() && after_probe {
                    // The probe saw rows, none lies past the cursor and none is in the
                    // pipeline: they lie below it. Read from the head now.
                    lane.read_again_from_head();
                    return;
                }
                // An empty bucket with nothing of the lane in flight is the lane's
                // success: none of its rows is failing. (Empty past the cursor while a
                // batch is still out says nothing about that batch.)
                lane.succeed();
                lane.resync = false;
                return;
            }
        }
        if fresh.is_empty() {
            // Everything read is already in the pipeline: wait for it to move on.
            lane.stalled = lane.ready;
            return;
        }
        lane.resync = false;
        if lane
            .cursor
            .is_some_and(|c| fresh.first().is_some_and(|m| m.id < c))
        {
            // A row below the cursor committed late: until it is published, the cursor
            // must not let a read skip it (or rows a truncation left over): read from the
            // head again, the next publish sets the cursor anew.
            lane.cursor = None;
        }
        let publish = self.hold_back(bucket, fresh);
        if !publish.is_empty()
            && let Some(lane) = self.lanes.get_mut(&bucket)
        {
            lane.next = Some(publish.into());
        }
    }

    /// Result of [`Command::Publish`].
    fn on_published(&mut self, now: Now, bucket: i32, outcome: PublishOutcome) {
        let Some(publishing) = self
            .lanes
            .get_mut(&bucket)
            .and_then(|l| l.publishing.take())
        else {
            return;
        };
        let Publishing {
            batch,
            started,
            lease_lost,
            failures_seen,
        } = publishing;
        let elapsed = now.mono.saturating_duration_since(started);
        let acknowledged = outcome.acknowledged.min(batch.len());
        let failed = outcome.error.is_some() || acknowledged < batch.len();
        let blamed = Self::blamed_row(&batch, acknowledged, outcome.error.as_ref());
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
        let valid = self.leases.is_valid(bucket, now);
        let Some(lane) = self.lanes.get_mut(&bucket) else {
            return;
        };
        lane.stalled = false;
        if lease_lost || !valid || !lane.owned {
            // Someone else may own the bucket by now: delete nothing, let the new owner
            // (or our next acquisition) carry on from the rows as they are.
            if lane.owned {
                lane.lose_ownership();
            }
            self.leases.acquire_now(now.mono);
            return;
        }
        if acknowledged > 0 {
            lane.to_delete.push_back(PendingDelete {
                batch,
                count: acknowledged,
                failures_seen,
                published_in_full: !failed,
            });
        }
        if failed {
            if let Some((row, error)) = blamed
                && self.on_row_blamed(now, bucket, &row, error)
            {
                return;
            }
            self.lane_failed(now, bucket);
        }
    }

    /// The caller abandoned a publish during shutdown. Nothing is deleted.
    fn on_publish_cancelled(&mut self, bucket: i32) {
        if let Some(lane) = self.lanes.get_mut(&bucket)
            && lane.publishing.take().is_some()
        {
            self.abandoned = true;
            self.events
                .push_back(RelayEvent::PublishCancelled { bucket });
        }
    }

    /// Result of [`Command::DeletePublished`].
    fn on_deleted(&mut self, now: Now, bucket: i32, result: Result<(), StoreError>) {
        let Some(lane) = self.lanes.get_mut(&bucket) else {
            return;
        };
        let Some(StoreCall::Deleting {
            published_in_full,
            failures_seen,
        }) = lane.store_call.take()
        else {
            return;
        };
        lane.stalled = false;
        match result {
            Ok(()) => {
                if published_in_full && failures_seen == lane.failures_total && lane.owned {
                    lane.succeed();
                }
            }
            Err(error) => {
                if lane.owned {
                    self.lane_store_failed(now, bucket, "delete_published", error);
                }
            }
        }
    }

    /// Result of [`Command::ReleaseLeases`]. A failure is reported and otherwise
    /// ignored: the leases run out by themselves.
    fn on_released(&mut self, result: Result<(), StoreError>) {
        let Control::Releasing { buckets } = self.control else {
            return;
        };
        self.control = Control::Idle;
        match result {
            Ok(()) => self
                .events
                .push_back(RelayEvent::LeasesReleased { buckets }),
            Err(error) => self.events.push_back(RelayEvent::StoreFailed {
                operation: "release_leases",
                bucket: None,
                error,
            }),
        }
    }

    /// Result of [`Command::RenewLeases`].
    fn on_renewed(&mut self, now: Now, result: Result<RenewOutcome, StoreError>) {
        let Some(started) = self.renewing.take() else {
            return;
        };
        self.judge_lease_call("renew_leases", started, now);
        match result {
            Ok(outcome) => {
                let had = self.leases.owned().len();
                let lost = self.leases.on_renewed(started, &outcome);
                if !lost.is_empty() {
                    self.sync_lanes();
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
                    bucket: None,
                    error,
                });
                self.leases
                    .retry_renewal_after(now.mono, self.options.error_backoff());
            }
        }
    }

    fn start_acquire(&mut self, now: Now) -> Command {
        // Every lane keeps working while the acquisition runs, so it names them all
        // busy, except surplus lanes that have gone quiet: those are the ones to hand
        // over now. A lane kept above the share comes back as surplus and winds down.
        let busy: Vec<i32> = self
            .lanes
            .values()
            .filter(|l| l.owned && (!l.surplus || l.is_active()))
            .map(|l| l.bucket)
            .collect();
        self.control = Control::Acquiring {
            started: now,
            busy: busy.clone(),
        };
        self.sent_heartbeat(now.wall);
        Command::AcquireLeases {
            now: now.wall,
            busy,
        }
    }

    /// Records a finished lease call's duration and reports it when it is too slow for
    /// the lease.
    fn judge_lease_call(&mut self, operation: &'static str, started: Now, now: Now) {
        if let Some(call) = self.leases.record_call(started.mono, now.mono) {
            self.events
                .push_back(RelayEvent::LeaseCallSlow { operation, call });
        }
    }

    fn start_renewal(&mut self, now: Now) -> Command {
        self.renewing = Some(now);
        self.sent_heartbeat(now.wall);
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
            return false;
        }
        self.reservation_retried = false;
        self.events
            .push_back(RelayEvent::LeaseTooShortForPublish { remaining, needed });
        self.lane_failed(now, bucket);
        false
    }

    fn check_expiry(&mut self, now: Now) {
        let dropped = self.leases.expire_if_due(now);
        if dropped == 0 {
            return;
        }
        self.sync_lanes();
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
        self.sync_lanes();
        self.events
            .push_back(RelayEvent::OwnershipChanged { owned: Vec::new() });
    }

    /// A relay-level call failed: retry it after the relay's own backoff, which does not
    /// touch any lane. Returns the retry instant, or `None` when the error was fatal.
    fn control_failed(
        &mut self,
        now: Now,
        operation: &'static str,
        error: StoreError,
    ) -> Option<Monotonic> {
        if error.is_fatal() {
            self.fail(fatal_from(error));
            return None;
        }
        self.events.push_back(RelayEvent::StoreFailed {
            operation,
            bucket: None,
            error,
        });
        self.control_failures = self.control_failures.saturating_add(1);
        let delay = self.options.backoff_after(self.control_failures);
        let until = now.mono.saturating_add(delay);
        self.control_backoff_until = Some(until);
        self.events.push_back(RelayEvent::BackingOff {
            bucket: None,
            until,
            delay,
            consecutive_failures: self.control_failures,
        });
        Some(until)
    }

    pub(super) fn lane_store_failed(
        &mut self,
        now: Now,
        bucket: i32,
        operation: &'static str,
        error: StoreError,
    ) {
        // A lane only calls what the store's capabilities promised: "unsupported" here is
        // a store (or a decorator around one) that breaks its promise, and no retry mends it.
        if error.is_fatal() || matches!(error, StoreError::Unsupported(_)) {
            return self.fail(fatal_from(error));
        }
        self.events.push_back(RelayEvent::StoreFailed {
            operation,
            bucket: Some(bucket),
            error,
        });
        self.lane_failed(now, bucket);
    }

    /// One lane failed: it alone backs off, for longer with every failure in a row.
    fn lane_failed(&mut self, now: Now, bucket: i32) {
        let Some(lane) = self.lanes.get_mut(&bucket) else {
            return;
        };
        let failures = lane.failures.saturating_add(1);
        let delay = self.options.backoff_after(failures);
        let until = now.mono.saturating_add(delay);
        let consecutive_failures = lane.fail(until);
        self.events.push_back(RelayEvent::BackingOff {
            bucket: Some(bucket),
            until,
            delay,
            consecutive_failures,
        });
    }

    fn fail(&mut self, error: Misconfiguration) {
        self.events.push_back(RelayEvent::Fatal(error.clone()));
        self.life = Life::Failed(error);
        for lane in self.lanes.values_mut() {
            lane.next = None;
            lane.to_delete.clear();
            lane.to_park = None;
            lane.ready = false;
        }
    }
}

fn fatal_from(error: StoreError) -> Misconfiguration {
    match error {
        StoreError::Misconfigured(m) => m,
        other => Misconfiguration::Other(other.to_string()),
    }
}

/// The rows a lane asks for: one batch, plus the rows it still holds in its pipeline
/// unless the store is expected to honour the cursor (a read from the head, or from
/// below the cursor, returns those first and the lane drops them).
pub(crate) fn fetch_limit(batch_size: usize, held: usize, cursor_expected_honoured: bool) -> usize {
    if cursor_expected_honoured {
        batch_size
    } else {
        batch_size.saturating_add(held)
    }
}
