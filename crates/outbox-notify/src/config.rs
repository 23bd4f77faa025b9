//! Construction errors of the bundled transports.

use std::time::Duration;

use outbox_core::BoxError;

/// Why a transport's builder refused its settings. Nothing is connected at construction,
/// so these are the only errors `build` can return.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The connection URL could not be parsed.
    #[error("invalid connection URL")]
    InvalidUrl(#[source] BoxError),
    /// A timeout was zero, which would fail every call.
    #[error("{0} must be positive")]
    ZeroTimeout(&'static str),
}

pub(crate) fn positive(name: &'static str, value: Duration) -> Result<Duration, ConfigError> {
    if value.is_zero() {
        Err(ConfigError::ZeroTimeout(name))
    } else {
        Ok(value)
    }
}
