//! Drain scheduling: which owned buckets have work, and in what order to visit them.
//!
//! Work is found two ways: a discovery probe (one query over every owned bucket) at the
//! poll interval, and hints (commit notifications naming a bucket) that mark a bucket
//! ready without a probe. Ready buckets are drained in bounded sweeps, one batch per
//! bucket per sweep, so a bucket that keeps filling up cannot starve the others. A bucket
//! that returned a full batch stays ready for the next sweep without another probe.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use crate::time::Monotonic;

#[derive(Debug)]
pub(crate) struct Drain {
    /// Owned buckets believed to hold pending rows. Always a subset of the owned set,
    /// so its size is bounded by the bucket count however many hints arrive.
    ready: BTreeSet<i32>,
    /// Buckets still to visit in the current sweep.
    sweep: VecDeque<i32>,
    /// Buckets hinted since their current fetch was issued. The hinted commit may have
    /// landed after the fetch read the table, so a short batch must not mark such a
    /// bucket drained: it would wait for the next discovery probe. A subset of `ready`.
    hinted_since_fetch: BTreeSet<i32>,
    /// An unknown-bucket hint or an ownership change asks for a probe now.
    discovery_forced: bool,
    next_discovery_at: Monotonic,
    poll_interval: Duration,
}

impl Drain {
    pub fn new(now: Monotonic, poll_interval: Duration) -> Self {
        Drain {
            ready: BTreeSet::new(),
            sweep: VecDeque::new(),
            hinted_since_fetch: BTreeSet::new(),
            discovery_forced: true,
            next_discovery_at: now,
            poll_interval,
        }
    }

    #[cfg(test)]
    pub fn is_ready(&self, bucket: i32) -> bool {
        self.ready.contains(&bucket)
    }

    #[cfg(test)]
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// A commit hint for an owned bucket.
    pub fn mark_ready(&mut self, bucket: i32) {
        self.ready.insert(bucket);
        self.hinted_since_fetch.insert(bucket);
    }

    /// A fetch of `bucket` is being issued: it will see every commit hinted so far.
    pub fn fetch_started(&mut self, bucket: i32) {
        self.hinted_since_fetch.remove(&bucket);
    }

    /// The last fetch of `bucket` came back short. The bucket stays ready (for one more
    /// fetch in the next sweep) if a hint arrived while that fetch was in flight.
    pub fn mark_drained(&mut self, bucket: i32) {
        if !self.hinted_since_fetch.remove(&bucket) {
            self.ready.remove(&bucket);
        }
    }

    pub fn force_discovery(&mut self) {
        self.discovery_forced = true;
    }

    pub fn discovery_due(&self, now: Monotonic) -> bool {
        self.discovery_forced || now >= self.next_discovery_at
    }

    pub fn next_discovery_at(&self) -> Monotonic {
        self.next_discovery_at
    }

    /// Applies a probe that started at `started`.
    pub fn on_discovered(&mut self, started: Monotonic, buckets: impl IntoIterator<Item = i32>) {
        self.ready.extend(buckets);
        self.discovery_forced = false;
        self.next_discovery_at = started.saturating_add(self.poll_interval);
    }

    /// A probe failed: try again after the backoff rather than at once.
    pub fn on_discovery_failed(&mut self, started: Monotonic) {
        self.next_discovery_at = started.saturating_add(self.poll_interval);
    }

    /// Forgets buckets no longer owned.
    pub fn retain_owned(&mut self, owned: &BTreeSet<i32>) {
        self.ready.retain(|b| owned.contains(b));
        self.sweep.retain(|b| owned.contains(b));
        self.hinted_since_fetch.retain(|b| owned.contains(b));
    }

    pub fn in_sweep(&self) -> bool {
        !self.sweep.is_empty()
    }

    /// Starts a sweep over every ready bucket, lowest first. False when nothing is ready.
    pub fn start_sweep(&mut self) -> bool {
        self.sweep = self.ready.iter().copied().collect();
        !self.sweep.is_empty()
    }

    pub fn next_in_sweep(&mut self) -> Option<i32> {
        self.sweep.pop_front()
    }

    /// Puts a bucket back at the front of the sweep (its visit was deferred).
    pub fn revisit_first(&mut self, bucket: i32) {
        self.sweep.push_front(bucket);
    }

    pub fn abort_sweep(&mut self) {
        self.sweep.clear();
    }

    pub fn clear(&mut self) {
        self.ready.clear();
        self.sweep.clear();
        self.hinted_since_fetch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Monotonic {
        Monotonic::from_millis(ms)
    }

    #[test]
    fn discovery_is_forced_at_start_then_periodic() {
        let mut d = Drain::new(t(0), Duration::from_secs(1));
        assert!(d.discovery_due(t(0)));
        d.on_discovered(t(0), [3]);
        assert!(!d.discovery_due(t(999)));
        assert!(d.discovery_due(t(1_000)));
        d.force_discovery();
        assert!(d.discovery_due(t(1)));
    }

    #[test]
    fn sweep_visits_each_ready_bucket_once() {
        let mut d = Drain::new(t(0), Duration::from_secs(1));
        d.on_discovered(t(0), [5, 1, 3]);
        assert!(d.start_sweep());
        let order: Vec<i32> = std::iter::from_fn(|| d.next_in_sweep()).collect();
        assert_eq!(order, vec![1, 3, 5]);
        assert!(d.has_ready(), "buckets stay ready until drained");
        d.mark_drained(1);
        d.mark_drained(3);
        d.mark_drained(5);
        assert!(!d.start_sweep());
    }

    #[test]
    fn ready_set_stays_within_ownership() {
        let mut d = Drain::new(t(0), Duration::from_secs(1));
        d.on_discovered(t(0), [1, 2, 3]);
        d.start_sweep();
        d.retain_owned(&[2].into_iter().collect());
        assert!(!d.is_ready(1) && d.is_ready(2) && !d.is_ready(3));
        assert_eq!(d.next_in_sweep(), Some(2));
        assert_eq!(d.next_in_sweep(), None);
    }
}
