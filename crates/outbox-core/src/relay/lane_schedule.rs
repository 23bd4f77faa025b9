//! The lanes' work: which lane deletes, publishes or fetches next, and how the
//! [`max_concurrent_lanes`](crate::RelayOptions::max_concurrent_lanes) slots rotate over
//! the ready lanes.

use std::sync::Arc;

use super::command::Command;
use super::lane::{Publishing, StoreCall};
use super::machine::{Control, RelayMachine, fetch_limit};
use crate::time::Now;

impl RelayMachine {
    /// The first delete any lane may issue.
    pub(super) fn next_delete(&mut self, now: Now) -> Option<Command> {
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
    pub(super) fn next_lane_command(&mut self, now: Now) -> Option<Command> {
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
}
