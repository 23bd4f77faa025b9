//! Helpers shared by the driver's integration tests (each test file includes this module
//! and uses what it needs).
#![allow(dead_code, clippy::unwrap_used)]

use std::time::Duration;

use outbox_core::RelayOptions;

/// A 30 s poll interval and renewal cadence: a row published within a second was woken
/// by a commit notification, not found by polling.
pub fn woken_only_options() -> RelayOptions {
    RelayOptions::builder()
        .poll_interval(Duration::from_secs(30))
        .lease_duration(Duration::from_secs(60))
        .lease_renew_interval(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Polls `done` every 10 ms of tokio time until it holds or `within` has passed; under
/// the paused clock the waiting costs no real time.
pub async fn wait_for(mut done: impl FnMut() -> bool, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}
