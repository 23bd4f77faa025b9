//! Membership and leases: which buckets this relay may publish, and until when.
//!
//! Validity is computed from the time a lease call *started*, not when it returned:
//! the store wrote `started + lease_duration` as the expiry, and anything later would
//! let this relay believe in a lease the store already considers expired.
//!
//! A lease is valid while both clocks agree: the stored expiry by the wall clock (what
//! the other relays compare against), and the lease duration measured on the monotonic
//! clock from the start of the call (so a wall clock stepped back never stretches it).
//! The acquisition and renewal timers are local deadlines, on the monotonic clock only.

use std::collections::BTreeSet;
use std::time::Duration;

use super::lease_timing::{self, LeaseCallTiming, SlowLeaseCall};
use crate::store::RenewOutcome;
use crate::time::{Monotonic, Now, Timestamp};

#[derive(Debug)]
pub(crate) struct Leases {
    owned: BTreeSet<i32>,
    /// Every owned lease is valid strictly before this wall instant (the stored expiry)...
    valid_until: Timestamp,
    /// ...and strictly before this monotonic one.
    valid_until_mono: Monotonic,
    /// Next acquisition: heartbeat, rebalancing and lease extension in one call. Only
    /// acquisitions move it, so renewals during slow publishes never postpone rebalancing.
    next_acquire_at: Monotonic,
    /// Next renewal, for stores that can renew while a publish is in flight.
    next_renew_at: Monotonic,
    lease_duration: Duration,
    renew_interval: Duration,
    /// The store renews leases beside the lanes, so acquisitions only rebalance and are
    /// scheduled from their end (a slow acquisition cannot crowd the lanes out).
    renewal: bool,
    /// How long recent lease calls took: renewals start early enough to land in time.
    timing: LeaseCallTiming,
}

/// What an acquisition changed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OwnershipChange {
    pub gained: bool,
    pub changed: bool,
}

impl Leases {
    pub fn new(
        now: Monotonic,
        lease_duration: Duration,
        renew_interval: Duration,
        renewal: bool,
    ) -> Self {
        Leases {
            owned: BTreeSet::new(),
            valid_until: Timestamp::EPOCH,
            valid_until_mono: Monotonic::ZERO,
            next_acquire_at: now,
            next_renew_at: now,
            lease_duration,
            renew_interval,
            renewal,
            timing: LeaseCallTiming::default(),
        }
    }

    pub fn owned(&self) -> &BTreeSet<i32> {
        &self.owned
    }

    pub fn owns_any(&self) -> bool {
        !self.owned.is_empty()
    }

    pub fn valid_until(&self) -> Timestamp {
        self.valid_until
    }

    /// When the leases run out by the monotonic clock (for the wake-up deadline).
    pub fn valid_until_mono(&self) -> Monotonic {
        self.valid_until_mono
    }

    fn unexpired(&self, now: Now) -> bool {
        now.wall < self.valid_until && now.mono < self.valid_until_mono
    }

    /// Whether `bucket` is ours and its lease has not run out by our clocks.
    pub fn is_valid(&self, bucket: i32, now: Now) -> bool {
        self.owned.contains(&bucket) && self.unexpired(now)
    }

    /// Time left on the leases, zero when none or expired.
    pub fn remaining(&self, now: Now) -> Duration {
        if self.owned.is_empty() {
            Duration::ZERO
        } else {
            self.valid_until
                .saturating_duration_since(now.wall)
                .min(self.valid_until_mono.saturating_duration_since(now.mono))
        }
    }

    pub fn acquire_due(&self, now: Monotonic) -> bool {
        now >= self.next_acquire_at
    }

    pub fn next_acquire_at(&self) -> Monotonic {
        self.next_acquire_at
    }

    pub fn renew_due(&self, now: Monotonic) -> bool {
        self.owns_any() && now >= self.next_renew_at
    }

    pub fn next_renew_at(&self) -> Monotonic {
        self.next_renew_at
    }

    /// Forces an acquisition at the next opportunity (lease lost, reservation short).
    pub fn acquire_now(&mut self, now: Monotonic) {
        self.next_acquire_at = self.next_acquire_at.min(now);
    }

    /// Retries a failed renewal after `delay`, without touching the acquisition deadline.
    pub fn retry_renewal_after(&mut self, now: Monotonic, delay: Duration) {
        self.next_renew_at = now.saturating_add(delay);
    }

    fn extend_from(&mut self, started: Now) {
        self.valid_until = started.wall.saturating_add(self.lease_duration);
        self.valid_until_mono = started.mono.saturating_add(self.lease_duration);
    }

    /// Remembers how long a lease call (sent at `started`, answered at `finished`) took,
    /// and says whether that is too slow for the lease (see `lease_timing`).
    pub fn record_call(
        &mut self,
        started: Monotonic,
        finished: Monotonic,
    ) -> Option<SlowLeaseCall> {
        self.timing.record(started, finished);
        lease_timing::judge(
            finished.saturating_duration_since(started),
            self.lease_duration,
        )
    }

    /// The next renewal after leases written by a call that started at `started`.
    fn schedule_renewal(&mut self, started: Monotonic) {
        self.next_renew_at = self.timing.next_renewal(
            started,
            started.saturating_add(self.lease_duration),
            self.renew_interval,
        );
    }

    /// Applies an acquisition that started at `started` and was answered at `finished`
    /// (its duration already [recorded](Self::record_call)).
    pub fn on_acquired(
        &mut self,
        started: Now,
        finished: Monotonic,
        buckets: impl IntoIterator<Item = i32>,
    ) -> OwnershipChange {
        let new: BTreeSet<i32> = buckets.into_iter().collect();
        let gained = new.difference(&self.owned).next().is_some();
        let changed = new != self.owned;
        self.owned = new;
        self.extend_from(started);
        // Without renewal, acquisitions are what extends the leases: they keep the
        // renew cadence from their start. With renewal, renewals do (from their start),
        // and rebalancing waits one interval after the acquisition ended.
        let base = if self.renewal { finished } else { started.mono };
        self.next_acquire_at = base.saturating_add(self.renew_interval);
        self.schedule_renewal(started.mono);
        OwnershipChange { gained, changed }
    }

    /// Applies a renewal that started at `started`. Returns the buckets it lost.
    pub fn on_renewed(&mut self, started: Now, outcome: &RenewOutcome) -> Vec<i32> {
        let lost: Vec<i32> = outcome
            .lost
            .iter()
            .copied()
            .filter(|b| self.owned.remove(b))
            .collect();
        // Buckets neither renewed nor reported lost keep their old expiry, which is earlier;
        // treat them as lost so one expiry instant covers the whole owned set.
        let renewed: BTreeSet<i32> = outcome.renewed.iter().copied().collect();
        let unaccounted: Vec<i32> = self.owned.difference(&renewed).copied().collect();
        for bucket in &unaccounted {
            self.owned.remove(bucket);
        }
        if !self.owned.is_empty() {
            self.extend_from(started);
        }
        self.schedule_renewal(started.mono);
        lost.into_iter().chain(unaccounted).collect()
    }

    /// Drops every lease if they have run out. Returns how many buckets were dropped
    /// (zero when nothing expired).
    pub fn expire_if_due(&mut self, now: Now) -> usize {
        if self.owned.is_empty() || self.unexpired(now) {
            return 0;
        }
        let dropped = self.owned.len();
        self.owned.clear();
        self.next_acquire_at = self.next_acquire_at.min(now.mono);
        dropped
    }

    /// Forgets all leases (shutdown, or an acquisition of unknown outcome).
    pub fn clear(&mut self) {
        self.owned.clear();
    }
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
