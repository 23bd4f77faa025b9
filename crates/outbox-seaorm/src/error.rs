//! Errors of the writer side. Store calls report [`outbox_core::StoreError`].

use outbox_core::{MessageError, Timestamp};
use sea_orm::DbErr;

use crate::backend::UnsupportedBackend;

/// Why an enqueue wrote nothing.
///
/// Every message is validated before the first row is written, so an invalid message
/// never leaves a partial write behind.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnqueueError {
    /// A message broke a rule (topic name, partition, reserved header, record size...).
    #[error("outbox message #{index} refused: {source}")]
    Invalid {
        /// Position of the message in the call (0 for a single enqueue).
        index: usize,
        /// The broken rule.
        #[source]
        source: MessageError,
    },
    /// The message's creation time cannot be represented as a date-time.
    #[error("outbox message #{index} has a creation time ({created_at}) no database can store")]
    CreatedAtOutOfRange {
        /// Position of the message in the call.
        index: usize,
        /// The creation time given.
        created_at: Timestamp,
    },
    /// The connection belongs to a database this crate has no SQL for.
    #[error(transparent)]
    UnsupportedBackend(#[from] UnsupportedBackend),
    /// The insert (or the implicit transaction around a multi-statement insert) failed.
    #[error("outbox insert failed: {0}")]
    Database(#[from] DbErr),
}
