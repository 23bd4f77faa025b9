//! Errors shared by the store, publisher and relay.
//!
//! The relay treats a store error as one of two things: *retryable* (back off, try again,
//! keep every row) or *fatal* (stop the relay and hand the error to the host). Only a
//! misconfiguration that retrying can never fix is fatal. A publish error is retryable,
//! permanent for one row (retried a few times, then the row is parked, never dropped), or
//! a setup problem (retried; no row is blamed).

use std::error::Error as StdError;

use uuid::Uuid;

/// A boxed error from an underlying driver or client.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// A setup error that no retry can repair.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misconfiguration {
    /// Rows sit in a bucket no relay can ever claim: some writer uses a larger bucket
    /// count than the relays. Left alone those rows would never be published.
    #[error(
        "pending outbox rows in bucket {bucket}, outside 0..{bucket_count}: a writer uses a different bucket count than this relay; drain the table and use one bucket count everywhere"
    )]
    BucketOutOfRange {
        /// The offending bucket.
        bucket: i32,
        /// The relay's configured bucket count.
        bucket_count: u32,
    },
    /// The relay's options and the store were built from schemas with different
    /// bucket counts; the relay would claim buckets the writers never fill, or leave
    /// some unclaimed.
    #[error(
        "the relay asks for {relay} buckets but the store's schema has {store}: build the options and the store from one OutboxSchema"
    )]
    BucketCountMismatch {
        /// The store's bucket count.
        store: u32,
        /// The relay's bucket count.
        relay: u32,
    },
    /// The store has no lease renewal and the options set no publish budget, so the
    /// relay cannot prove a lease outlives a publish.
    #[error(
        "the store cannot renew leases during a publish, so `max_publish_duration` must be set"
    )]
    MissingPublishBudget,
    /// Rows are to be parked after `max_publish_attempts` permanent failures, but the
    /// store cannot park.
    #[error(
        "max_publish_attempts is set but the store cannot park rows: implement OutboxStore::park_rows or set max_publish_attempts(None) to retry failing rows forever"
    )]
    ParkingUnsupported,
    /// A publish ran longer than the configured budget; continuing would publish under
    /// an assumption already shown false.
    #[error("a publish took {elapsed_ms} ms, longer than max_publish_duration ({budget_ms} ms)")]
    PublishBudgetExceeded {
        /// How long the publish took.
        elapsed_ms: u64,
        /// The configured budget.
        budget_ms: u64,
    },
    /// The database refuses the outbox's statements in a way no retry changes: a table or
    /// column is missing, or the user lacks a grant. `fix` says what to do about it.
    #[error("the database refuses the outbox statements ({problem}): {fix}")]
    DatabaseSetup {
        /// What the database said (with its error code).
        problem: String,
        /// What an operator has to do.
        fix: String,
    },
    /// Another live process writes heartbeats under this relay's id: both would publish
    /// the same buckets at once. Give every relay process its own id (see
    /// [`relay_id`](crate::relay_id)).
    #[error(
        "another process is running as relay {relay_id:?}: the heartbeat under this id was written at {found_ms} ms, not by this relay; give every relay process its own relay id (POD_NAME, --relay-id, RelayOptionsBuilder::relay_id)"
    )]
    DuplicateRelayId {
        /// The shared id.
        relay_id: String,
        /// The foreign heartbeat found, in milliseconds since the epoch.
        found_ms: i64,
    },
    /// Anything else a store or publisher knows to be permanent setup trouble.
    #[error("{0}")]
    Other(String),
}

/// An error from an [`OutboxStore`](crate::OutboxStore) call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be reached or the statement failed; retry later.
    #[error("outbox store call failed: {0}")]
    Unavailable(#[source] BoxError),
    /// Permanent misconfiguration: the relay stops.
    #[error(transparent)]
    Misconfigured(#[from] Misconfiguration),
    /// The store does not implement an optional capability.
    #[error("the outbox store does not support {0}")]
    Unsupported(&'static str),
}

impl StoreError {
    /// Wraps a driver error as retryable.
    pub fn unavailable(source: impl Into<BoxError>) -> Self {
        StoreError::Unavailable(source.into())
    }

    /// Whether the relay must stop instead of retrying.
    pub fn is_fatal(&self) -> bool {
        matches!(self, StoreError::Misconfigured(_))
    }
}

/// How a publish failure behaves on retry, and whom it blames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublishErrorKind {
    /// Transient: leader moved, timeout, connection reset, throttling. A retry may well
    /// succeed.
    Retryable,
    /// The broker or the client rejects one record for good (too large, undecodable
    /// headers, an invalid topic name, a pinned partition the topic lacks). The error names the row by [`PublishError::message_id`]; the relay
    /// retries it up to [`max_publish_attempts`](crate::RelayOptions::max_publish_attempts)
    /// times and then parks it (see [`park`](crate::park)).
    Permanent,
    /// Permanent trouble that is not one row's fault (authentication refused, cluster
    /// authorization, no common protocol version, a topic that does not exist or that
    /// this client may not write): an operator has to fix the setup. The
    /// relay backs off and retries; it never parks rows for it, because every row would
    /// fail the same way.
    Setup,
}

/// The first error of a publish call.
#[derive(Debug, thiserror::Error)]
#[error("publish failed ({kind:?}{}): {source}", message_id.map(|id| format!(", message {id}")).unwrap_or_default())]
pub struct PublishError {
    /// Retryable, permanent for one row, or a setup problem.
    pub kind: PublishErrorKind,
    /// The message whose record failed, when the failure is about one record.
    pub message_id: Option<Uuid>,
    /// What went wrong.
    #[source]
    pub source: BoxError,
}

impl PublishError {
    /// A retryable failure.
    pub fn retryable(source: impl Into<BoxError>) -> Self {
        PublishError {
            kind: PublishErrorKind::Retryable,
            message_id: None,
            source: source.into(),
        }
    }

    /// A permanent failure of one record. Without a `message_id` the relay cannot tell
    /// which row is at fault, and only retries.
    pub fn permanent(message_id: Option<Uuid>, source: impl Into<BoxError>) -> Self {
        PublishError {
            kind: PublishErrorKind::Permanent,
            message_id,
            source: source.into(),
        }
    }

    /// A permanent failure of the setup, not of a row.
    pub fn setup(source: impl Into<BoxError>) -> Self {
        PublishError {
            kind: PublishErrorKind::Setup,
            message_id: None,
            source: source.into(),
        }
    }

    /// Whether an operator has to fix the record or the setup before a retry can work.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self.kind,
            PublishErrorKind::Permanent | PublishErrorKind::Setup
        )
    }

    /// The message this error blames for good: `Some` only for a
    /// [`Permanent`](PublishErrorKind::Permanent) error that names its row.
    pub fn blamed_message(&self) -> Option<Uuid> {
        match self.kind {
            PublishErrorKind::Permanent => self.message_id,
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
