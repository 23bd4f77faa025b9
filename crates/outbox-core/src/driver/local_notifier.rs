//! The in-process commit notifier: the writer side of local wake-ups.
//!
//! A commit callback must be cheap and must never block, so the notifier is a fixed
//! set of atomic bits (one per bucket, allocated once) plus an "unknown" flag and a
//! `tokio::sync::Notify`. Notifications coalesce: a thousand commits to one bucket set
//! one bit and wake the relay once. `Notify` keeps a permit when the relay is not yet
//! waiting, so a commit that races with the relay going idle is never missed.
//!
//! The relay publishes which buckets it owns into a second bit set; a commit that only
//! touches buckets owned by other relays does not wake this one (their owners find the
//! rows by polling, or through a cross-pod transport).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::Notify;

use crate::notifier::CommitNotifier;
use crate::relay::Hint;

/// One bit per bucket, in atomic 64-bit words.
#[derive(Debug)]
struct BucketBits(Box<[AtomicU64]>);

impl BucketBits {
    fn new(buckets: u32) -> Self {
        let words = usize::try_from(buckets.div_ceil(64)).unwrap_or(0);
        BucketBits((0..words).map(|_| AtomicU64::new(0)).collect())
    }

    fn locate(&self, bucket: i32) -> Option<(&AtomicU64, u64)> {
        let index = usize::try_from(bucket).ok()?;
        let word = self.0.get(index / 64)?;
        Some((word, 1u64 << (index % 64)))
    }

    fn set(&self, bucket: i32) -> bool {
        match self.locate(bucket) {
            Some((word, bit)) => {
                word.fetch_or(bit, Ordering::AcqRel);
                true
            }
            None => false,
        }
    }

    fn contains(&self, bucket: i32) -> bool {
        self.locate(bucket)
            .is_some_and(|(word, bit)| word.load(Ordering::Acquire) & bit != 0)
    }

    fn replace_all(&self, buckets: impl IntoIterator<Item = i32>) {
        let mut fresh = vec![0u64; self.0.len()];
        for bucket in buckets {
            if let Ok(index) = usize::try_from(bucket)
                && let Some(word) = fresh.get_mut(index / 64)
            {
                *word |= 1u64 << (index % 64);
            }
        }
        for (word, value) in self.0.iter().zip(fresh) {
            word.store(value, Ordering::Release);
        }
    }

    /// Takes and clears every set bit.
    fn take(&self, out: &mut Vec<i32>) {
        for (w, word) in self.0.iter().enumerate() {
            let mut bits = word.swap(0, Ordering::AcqRel);
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let Ok(bucket) = i32::try_from(w * 64 + bit) {
                    out.push(bucket);
                }
            }
        }
    }
}

/// Hints waiting for one consumer: a bit per bucket, an "unknown" flag and a wake-up.
#[derive(Debug)]
struct HintBuffer {
    bits: BucketBits,
    unknown: AtomicBool,
    wake: Notify,
}

impl HintBuffer {
    fn new(bucket_count: u32) -> Self {
        HintBuffer {
            bits: BucketBits::new(bucket_count),
            unknown: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    /// Records a hint; a negative or out-of-range bucket becomes "unknown".
    fn mark(&self, bucket: i32) {
        if bucket < 0 || !self.bits.set(bucket) {
            self.unknown.store(true, Ordering::Release);
        }
    }

    /// Moves the hints into `out` in wire form (`-1` first for unknown) and clears them.
    fn take(&self, out: &mut Vec<i32>) {
        if self.unknown.swap(false, Ordering::AcqRel) {
            out.push(-1);
        }
        self.bits.take(out);
    }
}

/// Wakes one local relay after commits. Obtain it from
/// [`RelayHandle::notifier`](crate::driver::RelayHandle::notifier) and hand it to the
/// code that commits outbox rows.
///
/// When a cross-process transport is attached (`outbox-notify`), every committed bucket,
/// owned here or not, is also queued for broadcast; hints received from other processes
/// go through [`receive_remote`](Self::receive_remote) and are never broadcast again.
#[derive(Debug)]
pub struct LocalNotifier {
    /// Hints for the local relay.
    pending: HintBuffer,
    /// Hints for the transport's sender, when one is attached.
    outgoing: HintBuffer,
    outgoing_enabled: AtomicBool,
    owned: BucketBits,
    /// Until the relay has acquired leases once, every hint wakes it.
    ownership_known: AtomicBool,
}

impl LocalNotifier {
    /// A notifier for an outbox with `bucket_count` buckets.
    pub fn new(bucket_count: u32) -> Self {
        LocalNotifier {
            pending: HintBuffer::new(bucket_count),
            outgoing: HintBuffer::new(bucket_count),
            outgoing_enabled: AtomicBool::new(false),
            owned: BucketBits::new(bucket_count),
            ownership_known: AtomicBool::new(false),
        }
    }

    /// Called by the relay when its lease set changes.
    pub(crate) fn set_owned(&self, owned: impl IntoIterator<Item = i32>) {
        self.owned.replace_all(owned);
        self.ownership_known.store(true, Ordering::Release);
    }

    /// Waits until something was committed since the last [`take_hints`](Self::take_hints).
    pub(crate) async fn notified(&self) {
        self.pending.wake.notified().await;
    }

    /// Moves every pending hint into `out` and clears them.
    pub(crate) fn take_hints(&self, out: &mut Vec<Hint>) {
        let mut wire = Vec::new();
        self.pending.take(&mut wire);
        out.extend(wire.into_iter().map(Hint::from_wire));
    }

    fn is_mine(&self, bucket: i32) -> bool {
        !self.ownership_known.load(Ordering::Acquire) || self.owned.contains(bucket)
    }

    /// Records a hint for the local relay; true when it is worth waking the relay.
    fn note_local(&self, bucket: i32) -> bool {
        if bucket >= 0 && !self.is_mine(bucket) {
            return false; // owned by another relay: its owner or polling will find it
        }
        self.pending.mark(bucket);
        true
    }

    /// Starts queueing committed buckets for a cross-process transport's sender.
    pub fn enable_outgoing(&self) {
        self.outgoing_enabled.store(true, Ordering::Release);
    }

    /// For a transport's sender: waits until committed buckets are queued, then moves
    /// them into `out` in wire form (`-1` = unknown) and returns. Coalesced: many commits
    /// to one bucket yield one id.
    pub async fn next_outgoing(&self, out: &mut Vec<i32>) {
        loop {
            let ready = self.outgoing.wake.notified();
            self.outgoing.take(out);
            if !out.is_empty() {
                return;
            }
            ready.await;
        }
    }

    /// For a transport's listener: a hint from another process (wire form, `-1` =
    /// unknown). Wakes the local relay when the bucket may be its own; never queued for
    /// broadcast again, so hints cannot echo between processes.
    pub fn receive_remote(&self, bucket: i32) {
        if self.note_local(bucket) {
            self.pending.wake.notify_one();
        }
    }
}

impl CommitNotifier for LocalNotifier {
    fn notify_committed(&self) {
        self.notify_buckets(&[-1]);
    }

    fn notify_buckets(&self, buckets: &[i32]) {
        let broadcast = self.outgoing_enabled.load(Ordering::Acquire);
        let mut wake = false;
        for &bucket in buckets {
            wake |= self.note_local(bucket);
            if broadcast {
                self.outgoing.mark(bucket);
            }
        }
        if wake {
            self.pending.wake.notify_one();
        }
        if broadcast && !buckets.is_empty() {
            self.outgoing.wake.notify_one();
        }
    }
}

#[cfg(test)]
#[path = "local_notifier_tests.rs"]
mod tests;
