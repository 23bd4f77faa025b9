//! Sleeping between retries of a setup request (metadata, InitProducerId) until a
//! deadline, with the core's exponential backoff.

use outbox_core::backoff::Backoff;
use tokio::time::Instant;

/// Consecutive failures of one retry loop and the pause each one earns.
#[derive(Debug)]
pub(crate) struct RetryPause {
    backoff: Backoff,
    failures: u32,
}

impl RetryPause {
    pub(crate) fn new(backoff: Backoff) -> Self {
        RetryPause {
            backoff,
            failures: 0,
        }
    }

    /// Sleeps for the next pause; `false` (without sleeping) when that would pass the
    /// deadline.
    pub(crate) async fn wait(&mut self, deadline: Instant) -> bool {
        self.failures = self.failures.saturating_add(1);
        let pause = self.backoff.after(self.failures);
        if Instant::now() + pause >= deadline {
            return false;
        }
        tokio::time::sleep(pause).await;
        true
    }
}
