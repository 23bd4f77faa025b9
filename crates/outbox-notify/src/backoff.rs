//! How long the workers wait after a failure.

use std::time::Duration;

use outbox_core::RelayOptions;

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

/// Exponential backoff: `initial`, doubled per consecutive failure, capped at `max`.
/// The same rule as the relay's `error_backoff` / `max_error_backoff`, which is what
/// [`from_relay_options`](Self::from_relay_options) copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
}

impl Backoff {
    /// A validated backoff.
    pub fn new(initial: Duration, max: Duration) -> Result<Self, BackoffError> {
        if initial.is_zero() {
            return Err(BackoffError::Zero);
        }
        if initial > max {
            return Err(BackoffError::Order { initial, max });
        }
        Ok(Backoff { initial, max })
    }

    /// The relay's own backoff (already validated by [`RelayOptions`]).
    pub fn from_relay_options(options: &RelayOptions) -> Self {
        Backoff {
            initial: options.error_backoff(),
            max: options.max_error_backoff(),
        }
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
        let doublings = consecutive_failures.saturating_sub(1).min(31);
        self.initial.saturating_mul(1u32 << doublings).min(self.max)
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
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_ceiling() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_millis(1_000)).unwrap();
        let waits: Vec<u128> = (0..7).map(|n| b.after(n).as_millis()).collect();
        assert_eq!(waits, vec![100, 100, 200, 400, 800, 1_000, 1_000]);
        assert_eq!(b.after(u32::MAX), Duration::from_millis(1_000));
    }

    #[test]
    fn validated() {
        assert_eq!(
            Backoff::new(Duration::ZERO, Duration::from_secs(1)),
            Err(BackoffError::Zero)
        );
        assert!(matches!(
            Backoff::new(Duration::from_secs(2), Duration::from_secs(1)),
            Err(BackoffError::Order { .. })
        ));
        let options = RelayOptions::builder()
            .error_backoff(Duration::from_millis(250))
            .max_error_backoff(Duration::from_secs(4))
            .build()
            .unwrap();
        let b = Backoff::from_relay_options(&options);
        assert_eq!(
            (b.initial(), b.max()),
            (Duration::from_millis(250), Duration::from_secs(4))
        );
    }
}
