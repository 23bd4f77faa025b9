//! What the machine does with a lane's results: fetched rows enter the pipeline, a
//! publish's acknowledged prefix is queued for deletion (or its failure blamed and
//! backed off), a delete completes the lane's round. A failing lane backs off alone.

use super::event::RelayEvent;
use super::lane::{PendingDelete, Publishing, StoreCall};
use super::machine::{RelayMachine, fatal_from};
use crate::error::{Misconfiguration, StoreError};
use crate::message::OutboxMessage;
use crate::publisher::PublishOutcome;
use crate::time::Now;

impl RelayMachine {
    /// Result of [`Command::FetchBatch`](super::Command::FetchBatch).
    pub(super) fn on_fetched(
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

    /// Result of [`Command::Publish`](super::Command::Publish).
    pub(super) fn on_published(&mut self, now: Now, bucket: i32, outcome: PublishOutcome) {
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
    pub(super) fn on_publish_cancelled(&mut self, bucket: i32) {
        if let Some(lane) = self.lanes.get_mut(&bucket)
            && lane.publishing.take().is_some()
        {
            self.abandoned = true;
            self.events
                .push_back(RelayEvent::PublishCancelled { bucket });
        }
    }

    /// Result of [`Command::DeletePublished`](super::Command::DeletePublished).
    pub(super) fn on_deleted(&mut self, now: Now, bucket: i32, result: Result<(), StoreError>) {
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
    pub(super) fn lane_failed(&mut self, now: Now, bucket: i32) {
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
}
