//! The relay-level calls beside the lanes: acquiring, renewing and releasing leases,
//! probing for pending rows, and what follows when the owned set changes or the leases
//! run out (the lanes follow the owned set). Failures here back off the relay's own
//! calls only, never a lane.

use std::time::Duration;

use super::command::Command;
use super::event::RelayEvent;
use super::lane::Lane;
use super::machine::{Control, RelayMachine, fatal_from};
use crate::error::Misconfiguration;
use crate::error::StoreError;
use crate::relay_id::{HeartbeatVerdict, judge_heartbeat};
use crate::store::{Acquired, LeaseWait, RenewOutcome};
use crate::time::{Monotonic, Now, Timestamp};

impl RelayMachine {
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
    pub(super) fn on_acquired(&mut self, now: Now, result: Result<Acquired, StoreError>) {
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
    pub(super) fn on_probed(&mut self, now: Now, result: Result<Vec<i32>, StoreError>) {
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

    /// Result of [`Command::ReleaseLeases`]. A failure is reported and otherwise
    /// ignored: the leases run out by themselves.
    pub(super) fn on_released(&mut self, result: Result<(), StoreError>) {
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
    pub(super) fn on_renewed(&mut self, now: Now, result: Result<RenewOutcome, StoreError>) {
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

    pub(super) fn start_acquire(&mut self, now: Now) -> Command {
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

    pub(super) fn start_renewal(&mut self, now: Now) -> Command {
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
    pub(super) fn reserve_publish_budget(&mut self, now: Now, bucket: i32) -> bool {
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

    pub(super) fn check_expiry(&mut self, now: Now) {
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
    pub(super) fn drop_ownership(&mut self) {
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
}
