//! What the caller reports back: the result of each [`Command`](super::Command) the
//! machine handed out, fed in through [`RelayMachine::handle`](super::RelayMachine::handle).

use crate::error::StoreError;
use crate::message::OutboxMessage;
use crate::park::{HoldKey, ParkOutcome};
use crate::publisher::PublishOutcome;
use crate::store::{Acquired, RenewOutcome};

/// What became of a [`Command`](super::Command): the one input type for command
/// results, reported with [`RelayMachine::handle`](super::RelayMachine::handle).
#[derive(Debug)]
pub enum Outcome {
    /// [`Command::AcquireLeases`](super::Command::AcquireLeases): the buckets now owned.
    Acquired(Result<Acquired, StoreError>),
    /// [`Command::ProbePending`](super::Command::ProbePending): the probed buckets that
    /// hold pending rows.
    Probed(Result<Vec<i32>, StoreError>),
    /// [`Command::FetchBatch`](super::Command::FetchBatch): the rows, oldest first.
    Fetched {
        /// The bucket of the command.
        bucket: i32,
        /// The rows.
        result: Result<Vec<OutboxMessage>, StoreError>,
    },
    /// [`Command::Publish`](super::Command::Publish): how much of the batch the broker
    /// acknowledged.
    Published {
        /// The bucket of the command.
        bucket: i32,
        /// The acknowledged prefix and the first error.
        outcome: PublishOutcome,
    },
    /// [`Command::Publish`](super::Command::Publish) abandoned by the caller during
    /// shutdown; nothing is deleted.
    PublishCancelled {
        /// The bucket of the command.
        bucket: i32,
    },
    /// [`Command::DeletePublished`](super::Command::DeletePublished): the acknowledged
    /// prefix was deleted.
    Deleted {
        /// The bucket of the command.
        bucket: i32,
        /// Whether the delete succeeded.
        result: Result<(), StoreError>,
    },
    /// [`Command::LoadHolds`](super::Command::LoadHolds): the bucket's parked rows
    /// grouped by hold key.
    HoldsLoaded {
        /// The bucket of the command.
        bucket: i32,
        /// Each group with its lowest id.
        result: Result<Vec<(Option<HoldKey>, i64)>, StoreError>,
    },
    /// [`Command::ParkRows`](super::Command::ParkRows): what the store parked.
    Parked {
        /// The bucket of the command.
        bucket: i32,
        /// Parked, released, or refused for a lost lease.
        result: Result<ParkOutcome, StoreError>,
    },
    /// [`Command::RenewLeases`](super::Command::RenewLeases): which leases were renewed
    /// and which were lost.
    Renewed(Result<RenewOutcome, StoreError>),
    /// [`Command::ReleaseLeases`](super::Command::ReleaseLeases): the leases were handed back.
    Released(Result<(), StoreError>),
}
