//! Which command the machine hands out next, and when it next wants to be woken: the
//! relay-level calls (leases, the probe, the stop) first, then the lanes' work (see
//! `lane_schedule.rs`).

use super::command::Command;
use super::event::RelayEvent;
use super::lane::Lane;
use super::machine::{Control, Life, RelayMachine};
use crate::time::{Monotonic, Now};

impl RelayMachine {
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
}
