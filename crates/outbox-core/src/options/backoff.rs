//! The relay's backoff settings as the shared [`exponential`] rule: the conversion lives
//! here, beside the options, so that [`backoff`](crate::backoff) knows nothing of them.

use std::time::Duration;

use super::relay_options::RelayOptions;
use crate::backoff::{Backoff, exponential};

impl RelayOptions {
    /// Backoff after `consecutive_failures` failures in a row (1 = first failure):
    /// `error_backoff` doubled per further failure, capped at `max_error_backoff`.
    pub fn backoff_after(&self, consecutive_failures: u32) -> Duration {
        exponential(
            self.error_backoff,
            self.max_error_backoff,
            consecutive_failures,
        )
    }
}

impl Backoff {
    /// The relay's own backoff (already validated by [`RelayOptions`]).
    pub fn from_relay_options(options: &RelayOptions) -> Self {
        Backoff::from_validated(options.error_backoff(), options.max_error_backoff())
    }
}
