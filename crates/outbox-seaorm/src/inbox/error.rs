//! Errors of the inbox, and the consumer-name rules.

use std::convert::Infallible;

use outbox_core::Timestamp;
use sea_orm::DbErr;

use crate::backend::UnsupportedBackend;
use crate::entity::inbox::CONSUMER_MAX_LEN;
use crate::inbox::MessageIdError;

/// Why a consumer name was refused. Checked on every call, before the database is
/// touched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumerNameError {
    /// The name is empty.
    #[error("the inbox consumer name is empty")]
    Empty,
    /// The name has more than [`CONSUMER_MAX_LEN`] characters (the column's width).
    #[error("the inbox consumer name has {len} characters, more than {CONSUMER_MAX_LEN}")]
    TooLong {
        /// Its length in characters.
        len: usize,
    },
    /// The name starts or ends with whitespace. MySQL/MariaDB ignore trailing spaces
    /// when comparing `VARCHAR` keys, so `"billing "` would be the same consumer as
    /// `"billing"` there and a different one on PostgreSQL; refusing it keeps every
    /// backend alike.
    #[error("the inbox consumer name {0:?} starts or ends with whitespace")]
    Whitespace(String),
    /// The name contains a control character (PostgreSQL refuses NUL in text).
    #[error("the inbox consumer name {0:?} contains a control character")]
    ControlChar(String),
}

/// Checks a consumer name: 1 to [`CONSUMER_MAX_LEN`] characters, no control
/// characters, no leading or trailing whitespace.
pub(crate) fn check_consumer(name: &str) -> Result<(), ConsumerNameError> {
    if name.is_empty() {
        return Err(ConsumerNameError::Empty);
    }
    let len = name.chars().count();
    if len > CONSUMER_MAX_LEN as usize {
        return Err(ConsumerNameError::TooLong { len });
    }
    if name.chars().any(char::is_control) {
        return Err(ConsumerNameError::ControlChar(name.to_owned()));
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Err(ConsumerNameError::Whitespace(name.to_owned()));
    }
    Ok(())
}

/// Why an inbox call did not complete. `E` is the handler's error type for
/// [`Inbox::process`](crate::Inbox::process); calls that run no handler use the default,
/// [`Infallible`].
///
/// Whatever the variant, the consumer's transaction was not committed by this crate, so
/// the message id is not recorded (except for a failed commit, whose outcome the
/// database did not report): redelivering the record processes it again, or finds it
/// already done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InboxError<E = Infallible> {
    /// The consumer name broke a rule; nothing was sent to the database.
    #[error(transparent)]
    InvalidConsumer(#[from] ConsumerNameError),
    /// [`Inbox::process_record`](crate::Inbox::process_record) found no usable message
    /// id in the record's headers; nothing was sent to the database.
    #[error(transparent)]
    MessageId(#[from] MessageIdError),
    /// The purge cutoff cannot be represented as a date-time (beyond ±262,000 years).
    #[error("the inbox purge cutoff {0} is out of the date-time range")]
    CutoffOutOfRange(Timestamp),
    /// The connection belongs to a database this crate has no SQL for.
    #[error(transparent)]
    UnsupportedBackend(#[from] UnsupportedBackend),
    /// Beginning, recording, committing or purging failed.
    #[error("inbox database call failed: {0}")]
    Database(#[from] DbErr),
    /// The handler returned an error; its transaction, the inbox row included, was
    /// rolled back.
    #[error("the inbox handler failed: {0}")]
    Handler(#[source] E),
}

impl InboxError<Infallible> {
    /// The same error, typed for a call whose handler fails with `E`.
    pub(crate) fn widen<E>(self) -> InboxError<E> {
        match self {
            InboxError::InvalidConsumer(e) => InboxError::InvalidConsumer(e),
            InboxError::MessageId(e) => InboxError::MessageId(e),
            InboxError::CutoffOutOfRange(t) => InboxError::CutoffOutOfRange(t),
            InboxError::UnsupportedBackend(e) => InboxError::UnsupportedBackend(e),
            InboxError::Database(e) => InboxError::Database(e),
            InboxError::Handler(never) => match never {},
        }
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
