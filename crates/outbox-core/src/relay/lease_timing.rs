//! When the next lease renewal starts: against the lease's deadline, not the clock face.
//!
//! A lease is valid until `start of the call that wrote it + lease duration` (the safe
//! side: the store wrote that expiry). A renewal therefore has to *finish* before that
//! deadline, and it takes as long as lease calls take. Starting it one renew interval
//! after the previous call started (the clock face) is only right while calls are quick:
//! with a slow database the renewal would begin after the point where it can still land.
//! So the start is the earlier of the renew interval and `deadline − margin`, where the
//! margin is 1.5 × the slowest of the recent lease calls (acquisitions and renewals
//! alike: both write the same rows over the same connection).
//!
//! A call that takes half a lease or more cannot keep a lease: one lease call runs at a
//! time, so even back to back each answer arrives at or after the previous deadline.
//! [`judge`] names such calls, and the relay reports them (a WARN and the
//! `outbox.lease.slow_calls` counter) instead of losing and regaining its buckets in a
//! silent loop.

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Monotonic;

/// How many recent lease calls the margin looks back on: long enough to remember a slow
/// spell, short enough to forget it once it is over.
const REMEMBERED_CALLS: usize = 8;

/// The margin is this many times the slowest recent call, in thousandths (1.5 ×).
const MARGIN_PER_MILLE: u32 = 1_500;

/// Durations of the recent lease calls.
#[derive(Debug, Default)]
pub(crate) struct LeaseCallTiming {
    recent: VecDeque<Duration>,
}

/// A lease call too slow for the lease it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowLeaseCall {
    /// How long the call took, from sending it to its answer.
    pub took: Duration,
    /// The configured lease duration.
    pub lease_duration: Duration,
    /// Whether the answer arrived after the lease it wrote had run out by the local
    /// clock (the call outlasted its own lease, so what it granted was gone at once).
    pub outlasted_lease: bool,
}

impl LeaseCallTiming {
    /// Remembers a call that was sent at `started` and answered at `finished`.
    pub fn record(&mut self, started: Monotonic, finished: Monotonic) {
        if self.recent.len() == REMEMBERED_CALLS {
            self.recent.pop_front();
        }
        self.recent
            .push_back(finished.saturating_duration_since(started));
    }

    /// 1.5 × the slowest remembered call; zero before any.
    pub fn margin(&self) -> Duration {
        let slowest = self.recent.iter().copied().max().unwrap_or_default();
        slowest
            .saturating_mul(MARGIN_PER_MILLE)
            .checked_div(1_000)
            .unwrap_or_default()
    }

    /// When the next renewal should start, for leases written by a call that started at
    /// `started` and so valid until `deadline`: one renew interval after `started`, or
    /// earlier when the recent calls say a renewal started then would end past the
    /// deadline. Never before `started`.
    pub fn next_renewal(
        &self,
        started: Monotonic,
        deadline: Monotonic,
        renew_interval: Duration,
    ) -> Monotonic {
        let by_interval = started.saturating_add(renew_interval);
        let by_deadline = deadline.saturating_sub(self.margin());
        by_interval.min(by_deadline).max(started)
    }
}

/// Whether a lease call of `took` is too slow for `lease_duration`: half the lease or
/// more (see the module docs).
pub(crate) fn judge(took: Duration, lease_duration: Duration) -> Option<SlowLeaseCall> {
    (took.saturating_mul(2) >= lease_duration).then_some(SlowLeaseCall {
        took,
        lease_duration,
        outlasted_lease: took >= lease_duration,
    })
}

#[cfg(test)]
#[path = "lease_timing_tests.rs"]
mod tests;
