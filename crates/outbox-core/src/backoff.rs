//! Exponential backoff: the one waiting rule of every retry loop in the outbox.
//!
//! The relay machine (store and publish failures), the notification workers and the
//! Kafka publisher's resends all wait `initial` after the first failure, twice as long
//! after each further consecutive failure, and never longer than `max`. The rule is a
//! pure function of the failure count, so a machine that counts failures and is handed
//! the current time can compute its deadline without a clock or a sleep.

use std::time::Duration;

/// The wait after `consecutive_failures` failures in a row (1 = the first; 0 counts as
/// the first): `initial` doubled per further failure, capped at `max`. Saturates instead
/// of overflowing, whatever the count.
pub fn exponential(initial: Duration, max: Duration, consecutive_failures: u32) -> Duration {
    // 2^31 times any positive duration is far beyond every sensible ceiling, and keeps
    // the shift inside a u32.
    let doublings = consecutive_failures.saturating_sub(1).min(31);
    initial.saturating_mul(1u32 << doublings).min(max)
}

/// Why a [`Backoff`] was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackoffError {
    /// The first wait was zero, which would turn a dead service into a busy loop.
    #[error("the initial backoff must be positive")]
    Zero,
    /// The first wait exceeded the ceiling.
    #[error("the initial backoff ({initial:?}) must not exceed the maximum ({max:?})")]
    Order {
        /// The first wait.
        initial: Duration,
        /// The ceiling.
        max: Duration,
    },
}

/// A validated [`exponential`] backoff: `initial`, doubled per consecutive failure,
/// capped at `max`. The same rule as the relay's `error_backoff` /
/// `max_error_backoff`, which is what [`from_relay_options`](Self::from_relay_options)
/// copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
}

impl Backoff {
    /// A validated backoff: `initial` positive and at most `max`.
    pub fn new(initial: Duration, max: Duration) -> Result<Self, BackoffError> {
        if initial.is_zero() {
            return Err(BackoffError::Zero);
        }
        if initial > max {
            return Err(BackoffError::Order { initial, max });
        }
        Ok(Backoff { initial, max })
    }

    /// A pair its owner has validated already by the same rules as [`new`](Self::new):
    /// the relay's options (see [`from_relay_options`](Self::from_relay_options), which
    /// lives beside them).
    pub(crate) fn from_validated(initial: Duration, max: Duration) -> Self {
        Backoff { initial, max }
    }

    /// The first wait.
    pub fn initial(&self) -> Duration {
        self.initial
    }

    /// The ceiling.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The wait after `consecutive_failures` failures in a row (1 = the first).
    pub fn after(&self, consecutive_failures: u32) -> Duration {
        exponential(self.initial, self.max, consecutive_failures)
    }
}

impl Default for Backoff {
    /// 1 s doubling up to 30 s, like the relay's defaults.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(30),
        }
    }
}

#[cfg(test)]
#[path = "backoff_tests.rs"]
mod tests;
