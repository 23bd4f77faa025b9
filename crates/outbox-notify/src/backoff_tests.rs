use std::time::Duration;

use outbox_core::RelayOptions;

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
