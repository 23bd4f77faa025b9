//! What the machine asks its caller to do: one [`Command`] per store or broker call,
//! each answered by the matching [`Outcome`](super::Outcome).

use std::sync::Arc;

use crate::message::OutboxMessage;
use crate::park::ParkRow;
use crate::time::Timestamp;

/// Work the caller must carry out and report back as an [`Outcome`](super::Outcome).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Call [`OutboxStore::acquire_leases`](crate::OutboxStore::acquire_leases) with
    /// `now`; report with [`Outcome::Acquired`](super::Outcome::Acquired).
    AcquireLeases {
        /// The instant to pass as [`LeaseRequest::now`](crate::LeaseRequest::now).
        now: Timestamp,
        /// The buckets to pass as [`LeaseRequest::busy`](crate::LeaseRequest::busy).
        busy: Vec<i32>,
    },
    /// Call [`OutboxStore::buckets_with_pending`](crate::OutboxStore::buckets_with_pending);
    /// report with [`Outcome::Probed`](super::Outcome::Probed).
    ProbePending {
        /// Owned buckets to look at.
        buckets: Vec<i32>,
    },
    /// Call [`OutboxStore::next_batch`](crate::OutboxStore::next_batch); report with
    /// [`Outcome::Fetched`](super::Outcome::Fetched) for the same bucket.
    FetchBatch {
        /// Bucket to read.
        bucket: i32,
        /// Read only rows above this id (the lane's cursor), or from the head.
        after: Option<i64>,
        /// Batch size.
        limit: usize,
    },
    /// Call [`Publisher::publish`](crate::Publisher::publish); report with
    /// [`Outcome::Published`](super::Outcome::Published) for the same bucket (or
    /// [`Outcome::PublishCancelled`](super::Outcome::PublishCancelled) when the caller
    /// abandons it during shutdown). Publishes of different buckets may be in flight at
    /// once.
    Publish {
        /// The bucket the batch came from.
        bucket: i32,
        /// The rows, oldest first.
        batch: Arc<[OutboxMessage]>,
    },
    /// Call [`OutboxStore::delete_published`](crate::OutboxStore::delete_published)
    /// with `batch[..count]`; report with [`Outcome::Deleted`](super::Outcome::Deleted)
    /// for the same bucket.
    DeletePublished {
        /// The bucket.
        bucket: i32,
        /// The published batch.
        batch: Arc<[OutboxMessage]>,
        /// Length of the acknowledged prefix to delete.
        count: usize,
    },
    /// Call [`OutboxStore::parked_holds`](crate::OutboxStore::parked_holds); report with
    /// [`Outcome::HoldsLoaded`](super::Outcome::HoldsLoaded) for the same bucket.
    LoadHolds {
        /// The bucket.
        bucket: i32,
    },
    /// Call [`OutboxStore::park_rows`](crate::OutboxStore::park_rows) with this relay's
    /// id, `now` and `rows`; report with [`Outcome::Parked`](super::Outcome::Parked)
    /// for the same bucket.
    ParkRows {
        /// The bucket.
        bucket: i32,
        /// The instant to pass as [`ParkRequest::now`](crate::park::ParkRequest::now).
        now: Timestamp,
        /// The rows, ascending by id.
        rows: Arc<[ParkRow]>,
    },
    /// Call [`OutboxStore::renew_leases`](crate::OutboxStore::renew_leases); report with
    /// [`Outcome::Renewed`](super::Outcome::Renewed). May be issued while lanes are busy.
    RenewLeases {
        /// The instant to pass as [`LeaseRequest::now`](crate::LeaseRequest::now).
        now: Timestamp,
        /// Buckets to renew.
        buckets: Vec<i32>,
    },
    /// Call [`OutboxStore::release_leases`](crate::OutboxStore::release_leases); report
    /// with [`Outcome::Released`](super::Outcome::Released). Issued once, as the last command of a
    /// graceful stop, when the store supports it and nothing is in flight.
    ReleaseLeases,
}
