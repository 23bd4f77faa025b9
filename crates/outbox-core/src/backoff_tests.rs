use super::*;
use crate::RelayOptions;
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
