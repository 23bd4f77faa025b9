//! Exponential backoff: the one waiting rule of every retry loop in the outbox.
//!
//! The relay machine (store and publish failures), the notification workers and the
//! Kafka publisher's resends all wait `initial` after the first failure, twice as long
//! after each further consecutive failure, and never longer than `max`. The rule is a
//! pure function of the failure count, so a machine that counts failures and is handed
//! the current time can compute its deadline without a clock or a sleep.

use std::time::Duration;

use crate::RelayOptions;

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
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn doubles_from_the_first_failure_up_to_the_ceiling() {
        let waits: Vec<Duration> = (0..8).map(|n| exponential(ms(100), ms(1_000), n)).collect();
        assert_eq!(
            waits,
            [100, 100, 200, 400, 800, 1_000, 1_000, 1_000].map(ms)
        );
    }

    #[test]
    fn huge_counts_and_durations_saturate_at_the_ceiling() {
        assert_eq!(exponential(ms(1), ms(30_000), u32::MAX), ms(30_000));
        assert_eq!(exponential(ms(1), ms(30_000), 33), ms(30_000));
        // A ceiling near Duration::MAX: the doubling saturates instead of panicking.
        let big = Duration::from_secs(u64::MAX / 4);
        assert_eq!(exponential(big, Duration::MAX, u32::MAX), Duration::MAX);
    }

    #[test]
    fn validated() {
        assert_eq!(Backoff::new(Duration::ZERO, ms(1)), Err(BackoffError::Zero));
        assert_eq!(
            Backoff::new(ms(2), ms(1)),
            Err(BackoffError::Order {
                initial: ms(2),
                max: ms(1)
            })
        );
        let b = Backoff::new(ms(250), ms(4_000)).unwrap();
        assert_eq!((b.initial(), b.max()), (ms(250), ms(4_000)));
        assert_eq!(b.after(3), ms(1_000));
        let relay = RelayOptions::builder()
            .error_backoff(ms(300))
            .max_error_backoff(ms(5_000))
            .build()
            .unwrap();
        let b = Backoff::from_relay_options(&relay);
        assert_eq!((b.initial(), b.max()), (ms(300), ms(5_000)));
        assert_eq!(Backoff::default().after(6), Duration::from_secs(30));
    }

    proptest! {
        #[test]
        fn never_below_the_first_wait_nor_above_the_ceiling_and_never_shrinking(
            initial_ms in 1u64..=u64::MAX / 2,
            extra_ms in 0u64..=u64::MAX / 2,
            failures in any::<u32>(),
        ) {
            let (initial, max) = (ms(initial_ms), ms(initial_ms + extra_ms));
            let wait = exponential(initial, max, failures);
            prop_assert!(wait >= initial && wait <= max);
            prop_assert!(exponential(initial, max, failures.saturating_add(1)) >= wait);
        }

        #[test]
        fn each_failure_doubles_until_the_ceiling(
            initial_ms in 1u64..=1_000_000,
            max_ms in 1u64..=100_000_000,
            failures in 1u32..=64,
        ) {
            let (initial, max) = (ms(initial_ms), ms(max_ms.max(initial_ms)));
            let wait = exponential(initial, max, failures);
            let next = exponential(initial, max, failures + 1);
            prop_assert_eq!(next, (wait * 2).min(max));
        }
    }
}
