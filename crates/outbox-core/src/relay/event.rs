//! What the machine reports for logs and metrics, read with
//! [`RelayMachine::poll_event`](super::RelayMachine::poll_event).

use std::time::Duration;

use super::lease_timing::SlowLeaseCall;
use crate::error::{Misconfiguration, PublishError, StoreError};
use crate::store::LeaseWait;
use crate::time::{Monotonic, Timestamp};

/// Something worth logging or measuring.
#[derive(Debug)]
#[non_exhaustive]
pub enum RelayEvent {
    /// The first acquisition succeeded: the relay's heartbeat is in the store and it
    /// owns its share (possibly no bucket). Reported once; readiness probes follow it.
    Joined,
    /// The set of owned buckets changed, whatever the cause (an acquisition, a renewal
    /// that lost leases, leases running out by the local clock, a failed acquisition, a
    /// release or a stop). The notifier's owned set follows it.
    OwnershipChanged {
        /// Buckets owned now.
        owned: Vec<i32>,
    },
    /// A nonempty owned set was invalidated: its leases ran out by the local clock, a
    /// renewal found them taken, or an acquisition failed with an unknown outcome.
    LeaseExpired {
        /// How many buckets were lost.
        buckets: usize,
    },
    /// A lease call (an acquisition or a renewal) took half the lease or more. One lease
    /// call runs at a time, so calls this slow cannot keep a lease even back to back: the
    /// relay will lose and regain its buckets until the store answers faster. Renewals
    /// already start early by the observed call times; this says they cannot start early
    /// enough.
    LeaseCallSlow {
        /// `"acquire_leases"` or `"renew_leases"`.
        operation: &'static str,
        /// How slow, against which lease.
        call: SlowLeaseCall,
    },
    /// A publish call finished (successfully or not; cancelled calls excluded).
    Published {
        /// The bucket.
        bucket: i32,
        /// Rows in the batch.
        attempted: usize,
        /// Contiguous acknowledged prefix.
        acknowledged: usize,
        /// Wall time of the call.
        elapsed: Duration,
        /// Whether the call failed (an error, or less than the whole batch acknowledged).
        failed: bool,
    },
    /// A busy cycle (the stretch between two moments with nothing in flight) ended.
    CycleCompleted {
        /// Its duration, idle waits and backoff excluded.
        elapsed: Duration,
    },
    /// A publish call reported a failure.
    PublishFailed {
        /// The bucket.
        bucket: i32,
        /// The first error.
        error: PublishError,
    },
    /// A publish failed permanently because of one row, which has now failed `attempts`
    /// times; at [`max_publish_attempts`](crate::RelayOptions::max_publish_attempts) it is
    /// parked.
    RowFailing {
        /// The bucket.
        bucket: i32,
        /// The row's id.
        id: i64,
        /// The row's message id.
        message_id: crate::Uuid,
        /// Permanent failures so far.
        attempts: u32,
    },
    /// Rows were moved into the parked table.
    Parked {
        /// The bucket.
        bucket: i32,
        /// Rows parked for their own failures, with their message ids and last error.
        failed: Vec<(i64, crate::Uuid, String)>,
        /// Rows parked behind a parked row of their key.
        held_behind: usize,
    },
    /// Rows to be parked behind their key were left pending because their key is no
    /// longer held (an operator requeued or discarded the parked rows).
    HoldReleased {
        /// The bucket.
        bucket: i32,
        /// How many rows.
        rows: usize,
    },
    /// A publish was cancelled by shutdown; nothing was deleted.
    PublishCancelled {
        /// The bucket.
        bucket: i32,
    },
    /// A store call failed and will be retried after a backoff.
    StoreFailed {
        /// Which call.
        operation: &'static str,
        /// The lane whose call it was; `None` for relay-level calls (leases, probes).
        bucket: Option<i32>,
        /// The error.
        error: StoreError,
    },
    /// Without lease renewal, the remaining lease could not cover the publish budget
    /// even right after an acquisition: rows stay pending. A configuration problem.
    LeaseTooShortForPublish {
        /// Lease time left.
        remaining: Duration,
        /// Publish budget plus one renew interval.
        needed: Duration,
    },
    /// A lane (or, with `bucket: None`, the relay's own lease and probe calls) backs off
    /// after a failure. Other lanes are not affected.
    BackingOff {
        /// The lane; `None` for relay-level calls.
        bucket: Option<i32>,
        /// Until when, on the relay's monotonic clock.
        until: Monotonic,
        /// The length of this backoff.
        delay: Duration,
        /// Failures in a row of this lane (or of relay-level calls).
        consecutive_failures: u32,
    },
    /// The relay stopped for good because of a misconfiguration.
    Fatal(Misconfiguration),
    /// The first acquisition found a heartbeat younger than a lease under this relay's
    /// id, written by another process: most likely this id's crashed predecessor, whose
    /// leases were taken over at once. Were it a live process, the next acquisition
    /// finds out and the relay stops with
    /// [`Misconfiguration::DuplicateRelayId`].
    RelayIdRecentlyUsed {
        /// The id.
        relay_id: String,
        /// The heartbeat found.
        last_seen: Timestamp,
    },
    /// The buckets of this relay's share that other relays hold (see
    /// [`LeasePlan::waiting`](crate::LeasePlan::waiting)) changed; empty when it no longer
    /// waits. Reported once per change, not per acquisition.
    WaitingForLeases {
        /// Each bucket, its holder and the holder's expiry.
        waiting: Vec<LeaseWait>,
    },
    /// A stopping relay handed its leases back (see
    /// [`OutboxStore::release_leases`](crate::OutboxStore::release_leases)).
    LeasesReleased {
        /// Buckets it owned when it started stopping.
        buckets: usize,
    },
    /// The relay stopped after a shutdown request.
    Stopped,
}
