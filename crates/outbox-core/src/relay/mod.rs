//! The relay as a pure state machine, in the style of `quinn-proto`.
//!
//! [`RelayMachine`] owns every decision: when to heartbeat and rebalance leases, when
//! to probe for pending rows, which bucket to fetch next, when to publish, what to
//! delete, when to renew and how long to back off. It performs no I/O and reads no
//! clock: each input carries [`Now`](crate::time::Now), the wall clock for stamps the
//! store keeps (lease expiry, heartbeats) and a monotonic clock for local deadlines. The caller (the async [`driver`](crate::driver) or a simulation) executes the
//! [`Command`]s it hands out from [`RelayMachine::poll_command`], reports each one's
//! [`Outcome`] through [`RelayMachine::handle`] with the current time, sleeps until
//! [`RelayMachine::poll_timeout`], and reads [`RelayEvent`]s for logs and metrics from
//! [`RelayMachine::poll_event`].
//!
//! # Lanes
//!
//! Every owned bucket is a lane with its own pipeline and its own backoff (see
//! `lane.rs`): a lane fetches its next batch while the previous one is being published,
//! publishes its batches strictly one after the other, and deletes each acknowledged
//! prefix while the next batch is being published. A failing lane backs off alone, for
//! longer with each failure in a row; the other lanes keep going. At most
//! [`max_concurrent_lanes`](crate::RelayOptions::max_concurrent_lanes) lanes hold work at
//! once; when more lanes are ready than slots, a lane gives its slot up after each batch
//! so that every ready bucket is served in turn.
//!
//! Lease work runs at relay level, beside the lanes. An acquisition (which rebalances, and
//! so may hand buckets to other relays) names every lane it keeps working on as busy; the
//! store keeps those even above the relay's share and reports them as surplus. While the
//! acquisition runs only the busy lanes act; afterwards a surplus lane starts nothing
//! new, finishes what it has, and the next acquisition (due as soon as it is quiet) hands
//! it over. So no bucket changes hands while this relay may still publish or delete in
//! it, and no lease call, however slow, stops the lanes. With a store
//! that renews, the next acquisition is due one renew interval after the previous one
//! *finished*, and the next renewal one renew interval after the previous lease call
//! *started*, or earlier when recent lease calls were slow: it starts at the deadline
//! minus 1.5 × the slowest recent call, so that it lands before the leases run out (see
//! `lease_timing.rs`). Calls of half a lease or more are reported
//! ([`RelayEvent::LeaseCallSlow`]).
//!
//! Concurrency rules the machine enforces: one lease call (acquisition, renewal or
//! release) at a time, one probe beside it, and per lane at most one store call and one
//! publish.

mod discovery;
mod lane;
mod lease;
mod lease_timing;
mod machine;
mod parking;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

pub use lease_timing::SlowLeaseCall;
pub use machine::RelayMachine;

use crate::error::{Misconfiguration, PublishError, StoreError};
use crate::message::OutboxMessage;
use crate::park::{HoldKey, ParkOutcome, ParkRow};
use crate::publisher::PublishOutcome;
use crate::store::{Acquired, LeaseWait, RenewOutcome};
use crate::time::{Monotonic, Timestamp};

/// Work the caller must carry out and report back as an [`Outcome`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Call [`OutboxStore::acquire_leases`](crate::OutboxStore::acquire_leases) with
    /// `now`; report with [`Outcome::Acquired`].
    AcquireLeases {
        /// The instant to pass as [`LeaseRequest::now`](crate::LeaseRequest::now).
        now: Timestamp,
        /// The buckets to pass as [`LeaseRequest::busy`](crate::LeaseRequest::busy).
        busy: Vec<i32>,
    },
    /// Call [`OutboxStore::buckets_with_pending`](crate::OutboxStore::buckets_with_pending);
    /// report with [`Outcome::Probed`].
    ProbePending {
        /// Owned buckets to look at.
        buckets: Vec<i32>,
    },
    /// Call [`OutboxStore::next_batch`](crate::OutboxStore::next_batch); report with
    /// [`Outcome::Fetched`] for the same bucket.
    FetchBatch {
        /// Bucket to read.
        bucket: i32,
        /// Read only rows above this id (the lane's cursor), or from the head.
        after: Option<i64>,
        /// Batch size.
        limit: usize,
    },
    /// Call [`Publisher::publish`](crate::Publisher::publish); report with
    /// [`Outcome::Published`] for the same bucket (or [`Outcome::PublishCancelled`]
    /// when the caller abandons it during shutdown). Publishes of different buckets may
    /// be in flight at once.
    Publish {
        /// The bucket the batch came from.
        bucket: i32,
        /// The rows, oldest first.
        batch: Arc<[OutboxMessage]>,
    },
    /// Call [`OutboxStore::delete_published`](crate::OutboxStore::delete_published) with
    /// `batch[..count]`; report with [`Outcome::Deleted`] for the same bucket.
    DeletePublished {
        /// The bucket.
        bucket: i32,
        /// The published batch.
        batch: Arc<[OutboxMessage]>,
        /// Length of the acknowledged prefix to delete.
        count: usize,
    },
    /// Call [`OutboxStore::parked_holds`](crate::OutboxStore::parked_holds); report with
    /// [`Outcome::HoldsLoaded`] for the same bucket.
    LoadHolds {
        /// The bucket.
        bucket: i32,
    },
    /// Call [`OutboxStore::park_rows`](crate::OutboxStore::park_rows) with this relay's
    /// id, `now` and `rows`; report with [`Outcome::Parked`] for the same bucket.
    ParkRows {
        /// The bucket.
        bucket: i32,
        /// The instant to pass as [`ParkRequest::now`](crate::park::ParkRequest::now).
        now: Timestamp,
        /// The rows, ascending by id.
        rows: Arc<[ParkRow]>,
    },
    /// Call [`OutboxStore::renew_leases`](crate::OutboxStore::renew_leases); report with
    /// [`Outcome::Renewed`]. May be issued while lanes are busy.
    RenewLeases {
        /// The instant to pass as [`LeaseRequest::now`](crate::LeaseRequest::now).
        now: Timestamp,
        /// Buckets to renew.
        buckets: Vec<i32>,
    },
    /// Call [`OutboxStore::release_leases`](crate::OutboxStore::release_leases); report
    /// with [`Outcome::Released`]. Issued once, as the last command of a
    /// graceful stop, when the store supports it and nothing is in flight.
    ReleaseLeases,
}

/// What became of a [`Command`]: the one input type for command results, reported with
/// [`RelayMachine::handle`].
#[derive(Debug)]
pub enum Outcome {
    /// [`Command::AcquireLeases`]: the buckets now owned.
    Acquired(Result<Acquired, StoreError>),
    /// [`Command::ProbePending`]: the probed buckets that hold pending rows.
    Probed(Result<Vec<i32>, StoreError>),
    /// [`Command::FetchBatch`]: the rows, oldest first.
    Fetched {
        /// The bucket of the command.
        bucket: i32,
        /// The rows.
        result: Result<Vec<OutboxMessage>, StoreError>,
    },
    /// [`Command::Publish`]: how much of the batch the broker acknowledged.
    Published {
        /// The bucket of the command.
        bucket: i32,
        /// The acknowledged prefix and the first error.
        outcome: PublishOutcome,
    },
    /// [`Command::Publish`] abandoned by the caller during shutdown; nothing is deleted.
    PublishCancelled {
        /// The bucket of the command.
        bucket: i32,
    },
    /// [`Command::DeletePublished`]: the acknowledged prefix was deleted.
    Deleted {
        /// The bucket of the command.
        bucket: i32,
        /// Whether the delete succeeded.
        result: Result<(), StoreError>,
    },
    /// [`Command::LoadHolds`]: the bucket's parked rows grouped by hold key.
    HoldsLoaded {
        /// The bucket of the command.
        bucket: i32,
        /// Each group with its lowest id.
        result: Result<Vec<(Option<HoldKey>, i64)>, StoreError>,
    },
    /// [`Command::ParkRows`]: what the store parked.
    Parked {
        /// The bucket of the command.
        bucket: i32,
        /// Parked, released, or refused for a lost lease.
        result: Result<ParkOutcome, StoreError>,
    },
    /// [`Command::RenewLeases`]: which leases were renewed and which were lost.
    Renewed(Result<RenewOutcome, StoreError>),
    /// [`Command::ReleaseLeases`]: the leases were handed back.
    Released(Result<(), StoreError>),
}

/// A commit notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// Something was committed somewhere: probe every owned bucket.
    Unknown,
    /// Rows were committed in this bucket.
    Bucket(i32),
}

impl Hint {
    /// Decodes the wire form used by notification transports: `-1` is unknown.
    pub fn from_wire(bucket: i32) -> Self {
        if bucket < 0 {
            Hint::Unknown
        } else {
            Hint::Bucket(bucket)
        }
    }
}

/// Something worth logging or measuring.
#[derive(Debug)]
#[non_exhaustive]
pub enum RelayEvent {
    /// The first acquisition succeeded: the relay's heartbeat is in the store and it
    /// owns its share (possibly no bucket). Reported once; readiness probes follow it.
    Joined,
    /// The set of owned buckets changed, whatever the cause (an acquisition, a renewal
    /// that lost leases, leases running out by the local clock, a failed acquisition, a
    /// release or a stop). The notifier's owned set follows it.
    OwnershipChanged {
        /// Buckets owned now.
        owned: Vec<i32>,
    },
    /// A nonempty owned set was invalidated: its leases ran out by the local clock, a
    /// renewal found them taken, or an acquisition failed with an unknown outcome.
    LeaseExpired {
        /// How many buckets were lost.
        buckets: usize,
    },
    /// A lease call (an acquisition or a renewal) took half the lease or more. One lease
    /// call runs at a time, so calls this slow cannot keep a lease even back to back: the
    /// relay will lose and regain its buckets until the store answers faster. Renewals
    /// already start early by the observed call times; this says they cannot start early
    /// enough.
    LeaseCallSlow {
        /// `"acquire_leases"` or `"renew_leases"`.
        operation: &'static str,
        /// How slow, against which lease.
        call: SlowLeaseCall,
    },
    /// A publish call finished (successfully or not; cancelled calls excluded).
    Published {
        /// The bucket.
        bucket: i32,
        /// Rows in the batch.
        attempted: usize,
        /// Contiguous acknowledged prefix.
        acknowledged: usize,
        /// Wall time of the call.
        elapsed: Duration,
        /// Whether the call failed (an error, or less than the whole batch acknowledged).
        failed: bool,
    },
    /// A busy cycle (the stretch between two moments with nothing in flight) ended.
    CycleCompleted {
        /// Its duration, idle waits and backoff excluded.
        elapsed: Duration,
    },
    /// A publish call reported a failure.
    PublishFailed {
        /// The bucket.
        bucket: i32,
        /// The first error.
        error: PublishError,
    },
    /// A publish failed permanently because of one row, which has now failed `attempts`
    /// times; at [`max_publish_attempts`](crate::RelayOptions::max_publish_attempts) it is
    /// parked.
    RowFailing {
        /// The bucket.
        bucket: i32,
        /// The row's id.
        id: i64,
        /// The row's message id.
        message_id: crate::Uuid,
        /// Permanent failures so far.
        attempts: u32,
    },
    /// Rows were moved into the parked table.
    Parked {
        /// The bucket.
        bucket: i32,
        /// Rows parked for their own failures, with their message ids and last error.
        failed: Vec<(i64, crate::Uuid, String)>,
        /// Rows parked behind a parked row of their key.
        held_behind: usize,
    },
    /// Rows to be parked behind their key were left pending because their key is no
    /// longer held (an operator requeued or discarded the parked rows).
    HoldReleased {
        /// The bucket.
        bucket: i32,
        /// How many rows.
        rows: usize,
    },
    /// A publish was cancelled by shutdown; nothing was deleted.
    PublishCancelled {
        /// The bucket.
        bucket: i32,
    },
    /// A store call failed and will be retried after a backoff.
    StoreFailed {
        /// Which call.
        operation: &'static str,
        /// The lane whose call it was; `None` for relay-level calls (leases, probes).
        bucket: Option<i32>,
        /// The error.
        error: StoreError,
    },
    /// Without lease renewal, the remaining lease could not cover the publish budget
    /// even right after an acquisition: rows stay pending. A configuration problem.
    LeaseTooShortForPublish {
        /// Lease time left.
        remaining: Duration,
        /// Publish budget plus one renew interval.
        needed: Duration,
    },
    /// A lane (or, with `bucket: None`, the relay's own lease and probe calls) backs off
    /// after a failure. Other lanes are not affected.
    BackingOff {
        /// The lane; `None` for relay-level calls.
        bucket: Option<i32>,
        /// Until when, on the relay's monotonic clock.
        until: Monotonic,
        /// The length of this backoff.
        delay: Duration,
        /// Failures in a row of this lane (or of relay-level calls).
        consecutive_failures: u32,
    },
    /// The relay stopped for good because of a misconfiguration.
    Fatal(Misconfiguration),
    /// The first acquisition found a heartbeat younger than a lease under this relay's
    /// id, written by another process: most likely this id's crashed predecessor, whose
    /// leases were taken over at once. Were it a live process, the next acquisition
    /// finds out and the relay stops with
    /// [`Misconfiguration::DuplicateRelayId`].
    RelayIdRecentlyUsed {
        /// The id.
        relay_id: String,
        /// The heartbeat found.
        last_seen: Timestamp,
    },
    /// The buckets of this relay's share that other relays hold (see
    /// [`LeasePlan::waiting`](crate::LeasePlan::waiting)) changed; empty when it no longer
    /// waits. Reported once per change, not per acquisition.
    WaitingForLeases {
        /// Each bucket, its holder and the holder's expiry.
        waiting: Vec<LeaseWait>,
    },
    /// A stopping relay handed its leases back (see
    /// [`OutboxStore::release_leases`](crate::OutboxStore::release_leases)).
    LeasesReleased {
        /// Buckets it owned when it started stopping.
        buckets: usize,
    },
    /// The relay stopped after a shutdown request.
    Stopped,
}
