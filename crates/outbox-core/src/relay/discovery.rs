//! Discovery: when to probe the owned buckets for pending rows.
//!
//! Work is found two ways: a discovery probe (one query over every owned bucket) at the
//! poll interval, and hints (commit notifications naming a bucket) that mark a lane ready
//! without a probe. A lane that fetched a full batch stays ready without another probe.

use std::time::Duration;

use crate::time::Monotonic;

#[derive(Debug)]
pub(crate) struct Discovery {
    /// An unknown-bucket hint or an ownership change asks for a probe now.
    forced: bool,
    next_at: Monotonic,
    poll_interval: Duration,
}

impl Discovery {
    pub fn new(now: Monotonic, poll_interval: Duration) -> Self {
        Discovery {
            forced: true,
            next_at: now,
            poll_interval,
        }
    }

    pub fn force(&mut self) {
        self.forced = true;
    }

    pub fn due(&self, now: Monotonic) -> bool {
        self.forced || now >= self.next_at
    }

    pub fn next_at(&self) -> Monotonic {
        if self.forced {
            Monotonic::ZERO
        } else {
            self.next_at
        }
    }

    /// A probe that started at `started` was answered.
    pub fn on_probed(&mut self, started: Monotonic) {
        self.forced = false;
        self.next_at = started.saturating_add(self.poll_interval);
    }

    /// A probe failed: try again at `retry_at` (the relay's backoff), not at once.
    pub fn on_failed(&mut self, retry_at: Monotonic) {
        self.forced = false;
        self.next_at = retry_at;
    }
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;
