//! Waiting for a condition with a deadline: what the scenarios and [`FaultEnv`]'s
//! backlog wait use instead of fixed sleeps, so a condition that never holds fails the
//! wait instead of hanging it.
//!
//! [`FaultEnv`]: super::FaultEnv

use std::time::{Duration, Instant};

/// Polls `check` every 100 ms until it holds or `within` has passed; returns whether it
/// held.
pub async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
