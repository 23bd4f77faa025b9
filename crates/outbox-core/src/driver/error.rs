//! The relay's own error: why it could not start, or why it stopped abnormally. Its own
//! file because the builder, the spawner, the handle, the loop and the state all carry it.

use crate::error::Misconfiguration;
use crate::options::OptionsError;

/// Why a relay could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// A misconfiguration that retrying cannot fix.
    #[error(transparent)]
    Misconfigured(#[from] Misconfiguration),
    /// Invalid options.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// `spawn` was called outside a tokio runtime.
    #[error("the relay must be spawned inside a tokio runtime")]
    NoRuntime,
    /// [`Relay::builder`](super::Relay::builder) was given options whose schema is not
    /// the store's ([`BindWriter::writer_schema`](crate::BindWriter::writer_schema)):
    /// rows bucketed with one bucket count and read with another would never be
    /// published. Omit the options' schema (leave `.options` out, or build them with the
    /// store's schema).
    #[error(
        "the relay options' schema differs from the store's schema; give both the same OutboxSchema"
    )]
    SchemaMismatch,
    /// The relay task panicked (a bug); nothing was deleted past the panic.
    #[error("the relay task panicked: {0}")]
    Panicked(String),
}
