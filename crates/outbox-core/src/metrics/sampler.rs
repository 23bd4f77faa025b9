//! When to sample the backlog, as a small sans-IO machine.
//!
//! At most one sample is outstanding; the next one starts `interval` after the previous
//! one *completed* (a slow query never causes a burst of catch-up queries); each sample
//! has a deadline. In bucket-zero mode only the relay holding a valid bucket-zero lease
//! samples, and a sample that completes after that lease was lost is thrown away.
//! Its deadlines are local: they run on the monotonic clock.

use std::time::Duration;

use crate::store::PendingMetrics;
use crate::time::Monotonic;

/// What the gauges should show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BacklogSnapshot {
    /// No usable sample: before the first, after a failure, timeout or empty answer,
    /// when the store cannot sample, or on a relay that does not hold bucket zero in
    /// bucket-zero mode.
    Unavailable,
    /// The latest sample.
    Available(PendingMetrics),
}

/// Schedules backlog samples.
#[derive(Debug)]
pub struct BacklogSampler {
    interval: Duration,
    timeout: Duration,
    bucket_zero_only: bool,
    supported: bool,
    in_flight: bool,
    next_at: Monotonic,
}

impl BacklogSampler {
    /// A sampler whose first sample is due at `now`.
    pub fn new(
        now: Monotonic,
        interval: Duration,
        timeout: Duration,
        bucket_zero_only: bool,
        supported: bool,
    ) -> Self {
        BacklogSampler {
            interval,
            timeout,
            bucket_zero_only,
            supported,
            in_flight: false,
            next_at: now,
        }
    }

    /// Whether to start a sample now; returns its deadline. When a sample is due but
    /// this relay may not sample (bucket-zero mode without the lease), the snapshot
    /// becomes unavailable and the next check is one interval later.
    pub fn poll_sample(
        &mut self,
        now: Monotonic,
        owns_bucket_zero: bool,
    ) -> Result<Option<Monotonic>, BacklogSnapshot> {
        if !self.supported || self.in_flight || now < self.next_at {
            return Ok(None);
        }
        if self.bucket_zero_only && !owns_bucket_zero {
            self.next_at = now.saturating_add(self.interval);
            return Err(BacklogSnapshot::Unavailable);
        }
        self.in_flight = true;
        Ok(Some(now.saturating_add(self.timeout)))
    }

    /// A sample finished (`None` for a failure or timeout). Returns the new snapshot.
    pub fn handle_sample(
        &mut self,
        now: Monotonic,
        sample: Option<PendingMetrics>,
        owns_bucket_zero: bool,
    ) -> BacklogSnapshot {
        self.in_flight = false;
        self.next_at = now.saturating_add(self.interval);
        match sample {
            Some(_) if self.bucket_zero_only && !owns_bucket_zero => BacklogSnapshot::Unavailable,
            Some(metrics) => BacklogSnapshot::Available(metrics),
            None => BacklogSnapshot::Unavailable,
        }
    }

    /// When the next sample is due, if none is in flight.
    pub fn poll_timeout(&self) -> Option<Monotonic> {
        (self.supported && !self.in_flight).then_some(self.next_at)
    }
}

#[cfg(test)]
#[path = "sampler_tests.rs"]
mod tests;
