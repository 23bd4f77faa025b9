//! One lane: the pipeline of one owned bucket.
//!
//! A lane has at most one store call (a fetch or a delete) and one publish in flight, so
//! batch N+1 is fetched while batch N is being published, and N is deleted while N+1 is
//! being published. Batches are published strictly one after the other, in fetch order:
//! the next publish starts only after the previous one was answered, and a failure drops
//! every batch fetched behind the failed one, so a lane never sends a row ahead of an
//! earlier row of its bucket that is still unacknowledged.
//!
//! Each lane counts its own consecutive failures and backs off on its own. The count
//! grows with every failed fetch, publish or delete of this lane and is reset only by this
//! lane's own success (a batch published and deleted in full, or a fetch that finds the
//! bucket empty), never by another lane's or a relay-level call's success.
//!
//! The lane's cursor is the highest id it has handed to a publish. A fetch passes it to
//! the store (see [`OutboxStore::next_batch`](crate::OutboxStore::next_batch)), which
//! reads past it only when no lower row can still commit, and otherwise reads from the
//! head; rows the lane already holds are dropped from such a batch. After a failure the
//! cursor is forgotten and the next fetch, issued once nothing of the lane is in flight,
//! reads from the head.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::message::OutboxMessage;
use crate::park::{Holds, ParkRow};
use crate::time::{Monotonic, Timestamp};

/// The lane's one store call in flight.
#[derive(Debug)]
pub(crate) enum StoreCall {
    Fetching {
        /// Whether the result must be thrown away (the lane failed or lost its lease
        /// while the fetch was in flight).
        discard: bool,
        /// The limit asked for: a batch shorter than this means the bucket is drained.
        limit: usize,
        /// The cursor the read was asked to continue after.
        after: Option<i64>,
        /// A probe had listed the bucket as holding rows when the read was issued.
        after_probe: bool,
    },
    Deleting {
        /// See [`PendingDelete`]: the delete's success is the lane's success only when
        /// the batch went out in full and the lane has not failed since.
        published_in_full: bool,
        failures_seen: u64,
    },
    /// Reading the bucket's parked hold keys.
    LoadingHolds,
    /// Moving rows into the parked table.
    Parking { rows: Arc<[ParkRow]> },
}

/// The row at the front of the lane that keeps failing permanently.
#[derive(Debug, Clone)]
pub(crate) struct FailingRow {
    pub id: i64,
    pub attempts: u32,
    pub first_failed_at: Timestamp,
    pub last_failed_at: Timestamp,
    pub error: String,
}

/// The lane's publish in flight.
#[derive(Debug)]
pub(crate) struct Publishing {
    pub batch: Arc<[OutboxMessage]>,
    pub started: Monotonic,
    /// The lane's failure total when the publish was issued (see [`PendingDelete`]).
    pub failures_seen: u64,
    /// The lease was lost while the publish ran: delete nothing.
    pub lease_lost: bool,
}

/// An acknowledged prefix waiting for the store call slot.
#[derive(Debug)]
pub(crate) struct PendingDelete {
    pub batch: Arc<[OutboxMessage]>,
    pub count: usize,
    /// The batch was published in full and the lane has not failed since: deleting it
    /// completes a success. A delete that finishes after a later failure of the lane
    /// must not reset that failure's count.
    pub failures_seen: u64,
    pub published_in_full: bool,
}

#[derive(Debug)]
pub(crate) struct Lane {
    pub bucket: i32,
    /// The relay owns this bucket. A lane that lost its bucket lives on only until its
    /// calls in flight are answered, and issues nothing.
    pub owned: bool,
    /// The bucket is believed to hold rows the lane has not fetched yet.
    pub ready: bool,
    /// A hint arrived after the fetch in flight was issued: a short batch does not mean
    /// the bucket is drained, the hinted commit may have landed after the read.
    pub hinted_since_fetch: bool,
    /// The last probe listed the bucket as holding rows, and no fetch was issued since.
    /// A cursor read that then finds nothing while nothing of the lane is in flight
    /// contradicts the probe: the rows lie below the cursor, so the lane reads from the
    /// head. The store promises never to skip a row past a cursor it honours; this keeps
    /// a broken promise from stranding a row for longer than one poll interval.
    pub probed_pending: bool,
    pub store_call: Option<StoreCall>,
    pub publishing: Option<Publishing>,
    /// Fetched and waiting for the publish slot.
    pub next: Option<Arc<[OutboxMessage]>>,
    pub to_delete: VecDeque<PendingDelete>,
    /// Highest id handed to a publish since the last failure (never an id of a fetched
    /// batch that was not published: that one is dropped and read again).
    pub cursor: Option<i64>,
    pub failures: u32,
    /// Failures ever recorded on this lane, to tell whether one happened since a batch
    /// was published.
    pub failures_total: u64,
    pub backoff_until: Option<Monotonic>,
    /// After a failure: fetch again only once nothing of the lane is in flight.
    pub resync: bool,
    /// A full batch held only rows already in the pipeline: fetch again only after the
    /// pipeline moved on.
    pub stalled: bool,
    /// The store honoured this lane's last cursor read (it returned nothing at or below
    /// the cursor): the next cursor read asks for one batch, not one batch plus the
    /// rows still in the pipeline. Asking for both when the store does honour it read
    /// up to twice the rows and dropped half (measured: 1.4 rows read per row published
    /// with 8 lanes on PostgreSQL). When a read does come back from below the cursor,
    /// the flag falls and the reads ask for the extra rows again.
    pub cursor_honoured: bool,
    /// Fetches since the lane last started from idle, for yielding to waiting lanes.
    pub fetches_this_turn: u32,
    /// The bucket is above the relay's share and kept only until the lane is quiet: it
    /// starts nothing new.
    pub surplus: bool,
    /// The bucket's parked rows as this lane knows them (see [`Holds`]).
    pub holds: Holds,
    /// When `holds` was read from the store; `None`: read it before the next fetch (a new
    /// ownership term, or a park whose outcome is unknown or was partly refused).
    pub holds_loaded_at: Option<Monotonic>,
    /// The holds were just read for the fetch this lane is about to make: it keeps its
    /// slot for that fetch and does not read them again first. Without this, a lane
    /// whose hold read outlasts the poll interval while other lanes wait for a slot
    /// would give its slot up after each read, find its view stale at its next turn,
    /// and read the holds forever without fetching.
    pub fetch_after_holds: bool,
    /// The row that failed permanently at the front of the lane, with its count.
    pub failing: Option<FailingRow>,
    /// Rows to park, waiting for the store call slot.
    pub to_park: Option<Arc<[ParkRow]>>,
}

impl Lane {
    pub fn new(bucket: i32) -> Self {
        Lane {
            bucket,
            owned: true,
            ready: false,
            hinted_since_fetch: false,
            probed_pending: false,
            store_call: None,
            publishing: None,
            next: None,
            to_delete: VecDeque::new(),
            cursor: None,
            failures: 0,
            failures_total: 0,
            backoff_until: None,
            resync: false,
            stalled: false,
            cursor_honoured: false,
            fetches_this_turn: 0,
            surplus: false,
            holds: Holds::default(),
            holds_loaded_at: None,
            fetch_after_holds: false,
            failing: None,
            to_park: None,
        }
    }

    /// A store call or a publish of this lane is in flight.
    pub fn in_flight(&self) -> bool {
        self.store_call.is_some() || self.publishing.is_some()
    }

    /// The lane occupies one of the relay's concurrent-lane slots.
    pub fn is_active(&self) -> bool {
        self.in_flight()
            || self.fetch_after_holds
            || self.next.is_some()
            || !self.to_delete.is_empty()
            || self.to_park.is_some()
    }

    pub fn backing_off(&self, now: Monotonic) -> bool {
        self.backoff_until.is_some_and(|until| now < until)
    }

    /// Whether the lane would fetch if it had a slot (and the relay let it act).
    pub fn wants_fetch(&self, now: Monotonic) -> bool {
        self.owned
            && !self.surplus
            && self.ready
            && !self.stalled
            && self.store_call.is_none()
            && self.next.is_none()
            && self.to_delete.is_empty()
            && self.to_park.is_none()
            && !self.backing_off(now)
            && (!self.resync || !self.in_flight())
    }

    /// Whether `id` is in a batch of this lane that is being published, waits to be, or
    /// waits to be deleted.
    pub fn holds(&self, id: i64) -> bool {
        let within = |batch: &[OutboxMessage]| batch.binary_search_by_key(&id, |m| m.id).is_ok();
        self.next.as_deref().is_some_and(within)
            || self.publishing.as_ref().is_some_and(|p| within(&p.batch))
            || self.to_delete.iter().any(|d| within(&d.batch[..d.count]))
    }

    /// The bucket is no longer ours: drop everything not yet handed out, and make sure
    /// nothing in flight leads to a delete or a publish.
    pub fn lose_ownership(&mut self) {
        self.owned = false;
        self.ready = false;
        self.fetch_after_holds = false;
        self.hinted_since_fetch = false;
        self.probed_pending = false;
        self.next = None;
        self.to_delete.clear();
        self.to_park = None;
        self.failing = None;
        self.cursor = None;
        self.stalled = false;
        if let Some(p) = self.publishing.as_mut() {
            p.lease_lost = true;
        }
        if let Some(StoreCall::Fetching { discard, .. }) = self.store_call.as_mut() {
            *discard = true;
        }
    }

    /// The bucket is ours again (or for the first time): a new term starts from the head.
    pub fn regain_ownership(&mut self) {
        self.owned = true;
        self.surplus = false;
        self.cursor = None;
        self.resync = true;
        // Another relay may have parked rows meanwhile.
        self.holds_loaded_at = None;
    }

    /// Records a failure: the backoff grows, batches behind the failed one are dropped,
    /// and the next fetch reads from the head once nothing is in flight. Returns the
    /// failure count.
    pub fn fail(&mut self, until: Monotonic) -> u32 {
        self.failures = self.failures.saturating_add(1);
        self.failures_total = self.failures_total.saturating_add(1);
        self.backoff_until = Some(until);
        self.fetch_after_holds = false;
        self.read_again_from_head();
        self.failures
    }

    /// Drops what is queued behind the work that just ended and reads the bucket from
    /// the head once nothing of the lane is in flight: after a failure, or once a row
    /// is set aside for parking.
    pub fn read_again_from_head(&mut self) {
        // The rows are still pending: fetch again without waiting for a probe.
        self.ready = self.owned;
        self.resync = true;
        self.cursor = None;
        self.next = None;
        self.stalled = false;
        if let Some(StoreCall::Fetching { discard, .. }) = self.store_call.as_mut() {
            *discard = true;
        }
    }

    /// Whether the parked rows must be (re)read before the next fetch: never read this
    /// term, or some are parked and the view is older than `refresh` (an operator may
    /// have requeued them; until the view shows it, the lane keeps reading from the head).
    pub fn holds_due(&self, now: Monotonic, refresh: std::time::Duration) -> bool {
        match self.holds_loaded_at {
            None => true,
            Some(at) => !self.holds.is_empty() && now >= at.saturating_add(refresh),
        }
    }

    /// The lane's own success: its failure count starts over.
    pub fn succeed(&mut self) {
        self.failures = 0;
        self.backoff_until = None;
    }

    /// Rows in the lane's pipeline: a read from the head returns them again, so a fetch
    /// asks for that many rows more than a batch.
    pub fn held_rows(&self) -> usize {
        self.next.as_ref().map_or(0, |b| b.len())
            + self.publishing.as_ref().map_or(0, |p| p.batch.len())
            + self.to_delete.iter().map(|d| d.count).sum::<usize>()
    }

    /// Keeps the rows of a fetched batch the lane does not already hold, at most `max`;
    /// also says whether more were left over.
    pub fn fresh_rows(&self, rows: Vec<OutboxMessage>, max: usize) -> (Vec<OutboxMessage>, bool) {
        let mut fresh: Vec<OutboxMessage> =
            rows.into_iter().filter(|m| !self.holds(m.id)).collect();
        let left_over = fresh.len() > max;
        fresh.truncate(max);
        (fresh, left_over)
    }
}

#[cfg(test)]
#[path = "lane_tests.rs"]
mod tests;
