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
mod tests {
    use super::*;

    /// Both clocks at `ms` (the wall clock's epoch is the monotonic origin here).
    fn t(ms: i64) -> Now {
        Now::new(Timestamp::from_millis(ms), m(ms))
    }

    fn m(ms: i64) -> Monotonic {
        Monotonic::from_millis(u64::try_from(ms).unwrap())
    }

    fn leases() -> Leases {
        Leases::new(
            m(0),
            Duration::from_millis(30_000),
            Duration::from_millis(10_000),
            true,
        )
    }

    #[test]
    fn validity_counts_from_the_start_of_the_call() {
        let mut l = leases();
        l.on_acquired(t(1_000), m(1_000), [1, 2]);
        assert!(l.is_valid(1, t(30_999)));
        assert!(
            !l.is_valid(1, t(31_000)),
            "expiry is start + lease, exclusive"
        );
        assert!(!l.is_valid(3, t(2_000)), "not owned");
        assert_eq!(l.next_acquire_at(), m(11_000));
    }

    #[test]
    fn renewal_does_not_move_the_rebalance_deadline() {
        let mut l = leases();
        l.on_acquired(t(0), m(0), [0, 1, 2]);
        let lost = l.on_renewed(
            t(10_000),
            &RenewOutcome {
                renewed: vec![0, 2],
                lost: vec![1],
            },
        );
        assert_eq!(lost, vec![1]);
        assert_eq!(l.owned().iter().copied().collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(l.valid_until(), Timestamp::from_millis(40_000));
        assert_eq!(
            l.next_acquire_at(),
            m(10_000),
            "rebalancing keeps its own deadline"
        );
        assert_eq!(l.next_renew_at(), m(20_000));
    }

    #[test]
    fn unaccounted_buckets_in_a_renewal_are_dropped() {
        let mut l = leases();
        l.on_acquired(t(0), m(0), [0, 1]);
        let lost = l.on_renewed(
            t(5_000),
            &RenewOutcome {
                renewed: vec![0],
                lost: vec![],
            },
        );
        assert_eq!(lost, vec![1]);
        assert!(!l.is_valid(1, t(6_000)));
    }

    #[test]
    fn expiry_drops_everything_once() {
        let mut l = leases();
        l.on_acquired(t(0), m(0), [4, 5]);
        assert_eq!(l.expire_if_due(t(29_999)), 0);
        assert_eq!(l.expire_if_due(t(30_000)), 2);
        assert_eq!(
            l.expire_if_due(t(30_001)),
            0,
            "an empty set does not expire again"
        );
        assert!(l.acquire_due(m(30_000)));
    }

    #[test]
    fn a_lease_runs_out_by_whichever_clock_says_so_first() {
        let mut l = leases();
        l.on_acquired(t(0), m(0), [1]);
        let wall_stepped_back = Now::new(Timestamp::from_millis(10_000), m(30_000));
        assert!(
            !l.is_valid(1, wall_stepped_back),
            "the monotonic clock bounds a lease the wall clock would stretch"
        );
        let wall_stepped_ahead = Now::new(Timestamp::from_millis(30_000), m(10_000));
        assert!(
            !l.is_valid(1, wall_stepped_ahead),
            "the stored expiry by the wall clock is what the other relays see"
        );
        assert_eq!(
            l.remaining(Now::new(Timestamp::from_millis(5_000), m(20_000))),
            Duration::from_secs(10)
        );
        assert_eq!(l.expire_if_due(wall_stepped_back), 1);
    }

    #[test]
    fn ownership_changes_are_reported() {
        let mut l = leases();
        assert_eq!(
            l.on_acquired(t(0), m(0), [1]),
            OwnershipChange {
                gained: true,
                changed: true
            }
        );
        assert_eq!(
            l.on_acquired(t(1), m(1), [1]),
            OwnershipChange {
                gained: false,
                changed: false
            }
        );
        assert_eq!(
            l.on_acquired(t(2), m(2), []),
            OwnershipChange {
                gained: false,
                changed: true
            }
        );
    }

    #[test]
    fn a_slow_store_moves_the_renewal_ahead_of_the_interval() {
        // Lease 6 s, renew every 5 s: calls of 2 s would land the interval's renewal at
        // 7 s, past the deadline.
        let mut l = Leases::new(
            m(0),
            Duration::from_millis(6_000),
            Duration::from_millis(5_000),
            true,
        );
        assert_eq!(l.record_call(m(0), m(2_000)), None);
        l.on_acquired(t(0), m(2_000), [1]);
        assert_eq!(l.next_renew_at(), m(3_000));
        assert!(
            l.record_call(m(3_000), m(6_000)).is_some(),
            "half a lease is slow"
        );
    }

    #[test]
    fn with_renewal_a_slow_acquisition_leaves_an_interval_before_the_next() {
        let mut l = leases();
        // Started at 0, answered at 15 s: longer than the 10 s renew interval.
        l.on_acquired(t(0), m(15_000), [1]);
        assert!(!l.acquire_due(m(24_999)));
        assert!(l.acquire_due(m(25_000)));
        // Renewal still counts from the start: the lease was written at 0.
        assert!(l.renew_due(m(10_000)));
        let mut without = Leases::new(
            m(0),
            Duration::from_millis(30_000),
            Duration::from_millis(10_000),
            false,
        );
        without.on_acquired(t(0), m(15_000), [1]);
        assert!(without.acquire_due(m(10_000)));
    }
}
