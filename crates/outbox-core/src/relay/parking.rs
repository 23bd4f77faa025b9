//! The relay's side of parking (see [`park`](crate::park)): counting a row's permanent
//! failures, parking it, keeping its key's later rows behind it, and reading the
//! bucket's parked rows when a lane needs them.

use std::sync::Arc;

use super::command::Command;
use super::event::RelayEvent;
use super::lane::{FailingRow, StoreCall};
use super::machine::{Life, RelayMachine};
use crate::error::{PublishError, StoreError};
use crate::message::OutboxMessage;
use crate::park::{HoldKey, Holds, ParkOutcome, ParkPolicy, ParkReason, ParkRow, ParkedFailure};
use crate::time::Now;

impl RelayMachine {
    /// Whether rows that fail permanently are parked at all.
    pub(super) fn parks(&self) -> bool {
        self.options.max_publish_attempts().is_some() && self.capabilities.parking
    }

    /// Whether `lane` must read its bucket's parked rows before fetching (not when it
    /// has just read them for this fetch).
    pub(super) fn holds_due(&self, bucket: i32, now: Now) -> bool {
        self.parks()
            && self.lanes.get(&bucket).is_some_and(|l| {
                !l.fetch_after_holds && l.holds_due(now.mono, self.options.poll_interval())
            })
    }

    pub(super) fn issue_load_holds(&mut self, bucket: i32) -> Option<Command> {
        let lane = self.lanes.get_mut(&bucket)?;
        lane.store_call = Some(StoreCall::LoadingHolds);
        lane.backoff_until = None;
        Some(Command::LoadHolds { bucket })
    }

    /// The first park any lane may issue (after its deletes: they come first in the
    /// lane's store-call order). Only a running relay parks.
    pub(super) fn next_park(&mut self, now: Now) -> Option<Command> {
        if self.life != Life::Running {
            return None;
        }
        let bucket = self
            .lanes
            .values()
            .find(|l| {
                l.owned
                    && l.store_call.is_none()
                    && l.to_delete.is_empty()
                    && l.to_park.is_some()
                    && self.may_act_on(l.bucket, now)
            })?
            .bucket;
        let lane = self.lanes.get_mut(&bucket)?;
        let rows = lane.to_park.take()?;
        lane.store_call = Some(StoreCall::Parking {
            rows: Arc::clone(&rows),
        });
        Some(Command::ParkRows {
            bucket,
            now: now.wall,
            rows,
        })
    }

    /// The row a failed publish blames for good: the first unacknowledged one, if the
    /// error names it (see [`PublishError::blamed_message`]), with the error's text.
    pub(super) fn blamed_row(
        batch: &[OutboxMessage],
        acknowledged: usize,
        error: Option<&PublishError>,
    ) -> Option<(OutboxMessage, String)> {
        let error = error?;
        let row = batch.get(acknowledged)?;
        (error.blamed_message() == Some(row.message_id)).then(|| (row.clone(), error.to_string()))
    }

    /// A publish failed because of `row`: counts the failure and, at the limit, sets the
    /// row aside for parking (and returns `true`: the lane does not back off, it moves
    /// on). Otherwise the caller backs the lane off as for any failure.
    pub(super) fn on_row_blamed(
        &mut self,
        now: Now,
        bucket: i32,
        row: &OutboxMessage,
        error: String,
    ) -> bool {
        let Some(max) = self.options.max_publish_attempts() else {
            return false;
        };
        if !self.parks() {
            return false;
        }
        let Some(lane) = self.lanes.get_mut(&bucket) else {
            return false;
        };
        let failing = match lane.failing.take() {
            Some(mut f) if f.id == row.id => {
                f.attempts = f.attempts.saturating_add(1);
                f.last_failed_at = now.wall;
                f.error = error;
                f
            }
            _ => FailingRow {
                id: row.id,
                attempts: 1,
                first_failed_at: now.wall,
                last_failed_at: now.wall,
                error,
            },
        };
        self.events.push_back(RelayEvent::RowFailing {
            bucket,
            id: row.id,
            message_id: row.message_id,
            attempts: failing.attempts,
        });
        let attempts = failing.attempts;
        let reason = ParkReason::Failed(ParkedFailure {
            error: failing.error.clone(),
            attempts,
            first_failed_at: failing.first_failed_at,
            last_failed_at: failing.last_failed_at,
        });
        // Kept until the park succeeds: a failed park call does not start the count over.
        lane.failing = Some(failing);
        if attempts < max.get() {
            return false;
        }
        lane.to_park = Some(Arc::from(vec![ParkRow {
            message: row.clone(),
            reason,
        }]));
        lane.read_again_from_head();
        true
    }

    /// Splits a fetched batch: under [`ParkPolicy::HoldKey`], rows whose key has a parked
    /// row with a lower id go to be parked behind it; the rest are published.
    pub(super) fn hold_back(
        &mut self,
        bucket: i32,
        fresh: Vec<OutboxMessage>,
    ) -> Vec<OutboxMessage> {
        if !self.parks() || self.options.park_policy() != ParkPolicy::HoldKey {
            return fresh;
        }
        let Some(lane) = self.lanes.get_mut(&bucket) else {
            return fresh;
        };
        if lane.holds.is_empty() {
            return fresh;
        }
        let mut held = Vec::new();
        let mut publish = Vec::with_capacity(fresh.len());
        for message in fresh {
            match lane.holds.blocking(&message) {
                Some(blocking_id) => held.push(ParkRow {
                    message,
                    reason: ParkReason::HeldBehind { blocking_id },
                }),
                None => publish.push(message),
            }
        }
        if !held.is_empty() {
            lane.to_park = Some(held.into());
        }
        publish
    }

    /// Result of [`Command::LoadHolds`].
    pub(super) fn on_holds_loaded(
        &mut self,
        now: Now,
        bucket: i32,
        result: Result<Vec<(Option<HoldKey>, i64)>, StoreError>,
    ) {
        let Some(lane) = self.lanes.get_mut(&bucket) else {
            return;
        };
        if !matches!(lane.store_call, Some(StoreCall::LoadingHolds)) {
            return;
        }
        lane.store_call = None;
        match result {
            Ok(groups) => {
                if !lane.owned {
                    return;
                }
                lane.holds = Holds::from_parked(groups);
                lane.holds_loaded_at = Some(now.mono);
                lane.fetch_after_holds = true;
                // Requeued rows come back with their original ids, below any cursor.
                lane.cursor = None;
            }
            Err(error) => {
                if lane.owned {
                    self.lane_store_failed(now, bucket, "parked_holds", error);
                }
            }
        }
    }

    /// Result of [`Command::ParkRows`].
    pub(super) fn on_parked(
        &mut self,
        now: Now,
        bucket: i32,
        result: Result<ParkOutcome, StoreError>,
    ) {
        let Some(lane) = self.lanes.get_mut(&bucket) else {
            return;
        };
        let Some(StoreCall::Parking { rows }) = lane.store_call.take() else {
            return;
        };
        lane.stalled = false;
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(error) => {
                // The park may have committed before the error: read the parked rows
                // again before any further fetch, so no row of a held key slips out.
                lane.holds_loaded_at = None;
                if lane.owned {
                    self.lane_store_failed(now, bucket, "park_rows", error);
                }
                return;
            }
        };
        if outcome.lease_lost {
            if lane.owned {
                lane.lose_ownership();
            }
            self.leases.acquire_now(now.mono);
            return;
        }
        let mut failed = Vec::new();
        let mut held_behind = 0;
        for row in rows
            .iter()
            .filter(|r| outcome.parked.contains(&r.message.id))
        {
            lane.holds.add(HoldKey::of(&row.message), row.message.id);
            match &row.reason {
                ParkReason::Failed(f) => {
                    failed.push((row.message.id, row.message.message_id, f.error.clone()));
                    if lane
                        .failing
                        .as_ref()
                        .is_some_and(|x| x.id == row.message.id)
                    {
                        lane.failing = None;
                    }
                }
                ParkReason::HeldBehind { .. } => held_behind += 1,
            }
        }
        if !failed.is_empty() {
            // The row that stalled the lane is out of the way: that is progress.
            lane.succeed();
        }
        lane.ready = lane.owned;
        if !outcome.released.is_empty() {
            // The key was requeued or discarded meanwhile: these rows are pending again
            // and may go out once the view of the parked rows is current.
            lane.holds_loaded_at = None;
            lane.read_again_from_head();
            self.events.push_back(RelayEvent::HoldReleased {
                bucket,
                rows: outcome.released.len(),
            });
        }
        if !failed.is_empty() || held_behind > 0 {
            self.events.push_back(RelayEvent::Parked {
                bucket,
                failed,
                held_behind,
            });
        }
    }
}
