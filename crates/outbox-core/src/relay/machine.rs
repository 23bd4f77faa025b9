//! The composed relay machine's state: relay-level lease work and discovery beside one
//! lane per owned bucket, its constructor and what it answers about itself. Its
//! behaviour lives beside it, one `impl RelayMachine` per concern: `schedule.rs` and
//! `lane_schedule.rs` hand out commands, `inputs.rs` takes hints, timeouts, shutdown and
//! outcomes, `lease_control.rs` handles the relay-level calls, `lane_outcomes.rs` the
//! lanes' results and `parking.rs` the parking of failing rows.

use std::collections::{BTreeMap, VecDeque};

use super::discovery::Discovery;
use super::event::RelayEvent;
use super::lane::Lane;
use super::lease::Leases;
use crate::error::{Misconfiguration, StoreError};
use crate::options::RelayOptions;
use crate::store::StoreCapabilities;
use crate::time::{Monotonic, Now, Timestamp};

/// The acquisition or release in flight (a renewal and a probe are tracked apart: they run
/// beside it).
#[derive(Debug)]
pub(super) enum Control {
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
    pub(super) discovery: Discovery,
    /// One lane per owned bucket, plus lanes of lost buckets until their calls in
    /// flight are answered.
    pub(super) lanes: BTreeMap<i32, Lane>,
    /// Where the search for a lane to start begins, so that slots rotate over the
    /// ready lanes instead of always going to the lowest bucket.
    pub(super) rotation: i32,
    pub(super) control: Control,
    /// Start time of a renewal in flight.
    pub(super) renewing: Option<Now>,
    /// Start time of a probe in flight (a read: it runs beside any other call).
    pub(super) probing: Option<Monotonic>,
    /// Failures in a row of relay-level calls (acquisition, probe).
    pub(super) control_failures: u32,
    pub(super) control_backoff_until: Option<Monotonic>,
    /// Without renewal: an acquisition was already tried to make room for a publish.
    pub(super) reservation_retried: bool,
    /// When the current busy cycle began.
    pub(super) cycle_started: Option<Monotonic>,
    /// An acquisition has succeeded ([`RelayEvent::Joined`] was reported).
    pub(super) joined: bool,
    /// The heartbeat written by the first successful acquisition.
    pub(super) joined_at: Option<Timestamp>,
    /// The heartbeats this relay sent (acquisitions and renewals) that may still be the
    /// row's value: what [`judge_heartbeat`](crate::relay_id::judge_heartbeat) accepts as its own.
    pub(super) heartbeats_sent: Vec<Timestamp>,
    /// The (bucket, holder) pairs last reported by [`RelayEvent::WaitingForLeases`].
    pub(super) waiting_reported: Vec<(i32, String)>,
    /// A publish was abandoned during shutdown: its request may still reach the broker,
    /// so the leases are left to run out instead of being handed back.
    pub(super) abandoned: bool,
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

    /// Stops the machine for good: reports the error and drops the work every lane holds.
    pub(super) fn fail(&mut self, error: Misconfiguration) {
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

pub(super) fn fatal_from(error: StoreError) -> Misconfiguration {
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
