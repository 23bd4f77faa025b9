//! The storage contract the relay runs against.
//!
//! # Why native `async fn` in traits
//!
//! The methods return `impl Future + Send` (native async functions in traits) rather
//! than boxed futures: a relay is generic over its store, so each call compiles to a
//! direct, allocation-free call, and the `Send` bound lets the relay run on a
//! multi-threaded runtime. The price is that `dyn OutboxStore` is not possible; an
//! application that must choose a store at run time wraps its stores in an enum, which is
//! also cheaper than a vtable plus a box per call.
//!
//! # What a backend must provide
//!
//! Storage, not policy. Which buckets a relay releases, extends and claims is decided once,
//! by [`plan_acquisition`](crate::lease_plan::plan_acquisition); a store's
//! [`acquire_leases`](OutboxStore::acquire_leases) records the heartbeat, reads a
//! [`LeaseSnapshot`](crate::LeaseSnapshot), and executes the resulting
//! [`LeasePlan`](crate::LeasePlan) with guarded writes, atomically enough that a live
//! lease is never granted twice: each claim takes a row only if, at the write, it is free,
//! expired by [`LeasePlan::expired_by`](crate::LeasePlan::expired_by), or the caller's own
//! ([`LeasePlan::may_claim`](crate::LeasePlan::may_claim)), and releases and extensions
//! touch only rows the caller owns. A relational store does this with one conditional
//! `UPDATE ... WHERE bucket IN (...) AND (owner IS NULL OR expires_at <= expired_by OR
//! owner = me)`, which the database applies atomically per row;
//! [`LeaseSnapshot::apply`](crate::LeaseSnapshot::apply) is the same execution in memory.
//!
//! Besides, reading one bucket's pending rows in enqueue order. Rows leave the store only
//! through [`OutboxStore::delete_published`]; a TTL or any other expiry of pending rows
//! would turn at-least-once into loss.
//!
//! # Time
//!
//! The relay passes `now` (its own clock, read before the call) into every lease call,
//! and stores write exactly that value. Lease expiry therefore compares timestamps written
//! by relay hosts, so hosts need ordinary clock sync: the tolerated skew is
//! `lease_duration - lease_renew_interval`.

use std::future::Future;
use std::time::Duration;

use crate::error::StoreError;
use crate::message::OutboxMessage;
use crate::park::{HoldKey, ParkOutcome, ParkRequest};
use crate::time::Timestamp;

/// One lease call's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseRequest<'a> {
    /// The calling relay.
    pub relay_id: &'a str,
    /// Buckets in the outbox (`0..bucket_count`).
    pub bucket_count: u32,
    /// How long a granted or renewed lease lasts from `now`.
    pub lease_duration: Duration,
    /// The relay's clock, read before the call.
    pub now: Timestamp,
    /// Buckets the relay keeps publishing and deleting in while the call runs: an
    /// acquisition keeps them even above the share (see [`LeasePlan::keeping_busy`](crate::LeasePlan::keeping_busy))
    /// and reports them in [`Acquired::surplus`]. Renewals and releases ignore it.
    pub busy: &'a [i32],
}

/// What an acquisition left the relay holding.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Acquired {
    /// Every bucket held afterwards, ascending, each valid until
    /// [`LeaseRequest::expires_at`].
    pub held: Vec<i32>,
    /// The held buckets above the relay's share that were kept only because they were
    /// busy: the relay starts no new work there and gives them up at its next acquisition.
    pub surplus: Vec<i32>,
    /// The buckets of the relay's share it could not claim because another relay holds
    /// them unexpired (see [`LeasePlan::waiting`](crate::LeasePlan::waiting)).
    pub waiting: Vec<LeaseWait>,
    /// The heartbeat found under the relay's id before this call wrote its own; `None`
    /// when there was none, or when the store cannot tell (which turns off the duplicate
    /// check of [`judge_heartbeat`](crate::relay_id::judge_heartbeat)).
    pub heartbeat_before: Option<Timestamp>,
}

/// A bucket a relay would claim but another relay holds: who, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseWait {
    /// The bucket.
    pub bucket: i32,
    /// The relay holding it.
    pub holder: String,
    /// When its lease runs out unless renewed.
    pub until: Timestamp,
    /// Whether the holder's heartbeat is live: a live holder above its share hands the
    /// bucket over at its next acquisition; a silent one (crashed, or stopped without
    /// releasing) only when the lease expires.
    pub holder_live: bool,
}

impl From<Vec<i32>> for Acquired {
    /// Held buckets, none of them surplus.
    fn from(held: Vec<i32>) -> Self {
        Acquired {
            held,
            ..Acquired::default()
        }
    }
}

impl LeaseRequest<'_> {
    /// Expiry written for leases granted or renewed by this request.
    pub fn expires_at(&self) -> Timestamp {
        self.now.saturating_add(self.lease_duration)
    }

    /// Heartbeats older than this belong to relays no longer considered live.
    pub fn live_after(&self) -> Timestamp {
        self.now.saturating_sub(self.lease_duration)
    }
}

/// Which optional capabilities a store implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreCapabilities {
    /// [`OutboxStore::renew_leases`] works, so leases can be extended while a publish
    /// is in flight. Without it the relay needs `max_publish_duration`.
    pub lease_renewal: bool,
    /// [`OutboxStore::pending_metrics`] works.
    pub backlog_metrics: bool,
    /// [`OutboxStore::release_leases`] works, so a relay that stops gracefully hands its
    /// buckets over at once instead of letting them run out.
    pub lease_release: bool,
    /// [`OutboxStore::park_rows`] and [`OutboxStore::parked_holds`] work, so rows that
    /// fail permanently can be set aside (see [`park`](crate::park)). Without it a relay
    /// must run with `max_publish_attempts(None)`.
    pub parking: bool,
}

/// The outcome of a renewal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RenewOutcome {
    /// Buckets whose lease now runs until [`LeaseRequest::expires_at`].
    pub renewed: Vec<i32>,
    /// Buckets that were asked for but are no longer this relay's (expired or taken).
    pub lost: Vec<i32>,
}

/// A whole-store backlog sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingMetrics {
    /// Pending rows in every bucket.
    pub count: u64,
    /// Creation time of the oldest pending row; `None` only when the count is zero (the
    /// store contract checks it: a store that cannot date its rows does not claim
    /// [`StoreCapabilities::backlog_metrics`]).
    pub oldest_created_at: Option<Timestamp>,
    /// Parked rows in every bucket; `None` when the store does not park.
    pub parked_count: Option<u64>,
    /// When the oldest parked row was parked; `None` when none is (or unknown).
    pub oldest_parked_at: Option<Timestamp>,
}

/// Persistent state of an outbox: pending rows, bucket leases, relay heartbeats.
///
/// Implementations must be cheap to share (`&self` methods) and safe to call from
/// several relays at once, including relays in other processes.
pub trait OutboxStore: Send + Sync + 'static {
    /// Which optional methods work. Checked once when a relay starts.
    fn capabilities(&self) -> StoreCapabilities {
        StoreCapabilities::default()
    }

    /// Records a heartbeat for `request.relay_id`, reads a
    /// [`LeaseSnapshot`](crate::LeaseSnapshot) of the lease rows and heartbeats, plans with
    /// [`plan_acquisition`](crate::plan_acquisition) (the fair share among relays whose
    /// heartbeat is newer than [`LeaseRequest::live_after`]: release above the share,
    /// extend what is kept, claim free or expired buckets below it) and executes the plan
    /// with the guarded writes described in the [module docs](self).
    ///
    /// Returns every bucket the relay holds afterwards, each valid until
    /// [`LeaseRequest::expires_at`]: what the guarded writes really granted, which may be
    /// less than the plan when another relay won a race; and which of them were kept
    /// above the share because they were [busy](LeaseRequest::busy). Also reports the
    /// heartbeat found under the caller's id before its own was written
    /// ([`Acquired::heartbeat_before`], read in the same snapshot, for the duplicate-id
    /// check of [`relay_id`](crate::relay_id)) and the plan's
    /// [`waiting`](crate::LeasePlan::waiting) buckets that were not granted after all
    /// ([`Acquired::waiting`]). A bucket must never be granted to
    /// two relays whose leases are both unexpired by the writers' clocks. The number of
    /// round trips should not grow with the bucket count, so that an acquisition stays well
    /// inside a lease.
    fn acquire_leases(
        &self,
        request: &LeaseRequest<'_>,
    ) -> impl Future<Output = Result<Acquired, StoreError>> + Send;

    /// Which of `owned` have pending rows, in one round trip.
    ///
    /// Also the place where misconfiguration shows: a store that finds pending rows in a
    /// bucket outside `0..bucket_count` returns
    /// [`Misconfiguration::BucketOutOfRange`](crate::Misconfiguration::BucketOutOfRange),
    /// because no relay would ever claim them.
    fn buckets_with_pending(
        &self,
        owned: &[i32],
        bucket_count: u32,
    ) -> impl Future<Output = Result<Vec<i32>, StoreError>> + Send;

    /// Up to `limit` pending rows of `bucket`, oldest first (enqueue order).
    ///
    /// `after = Some(id)` says the caller already holds (or has handled) every row up to
    /// `id` that earlier reads returned, and asks for the rows above it. The cursor lets
    /// a lane read its next batch while the previous one is still being published or
    /// deleted, and lets the scan start past rows already handled (on PostgreSQL, the
    /// dead index entries a long transaction keeps from being vacuumed would otherwise be
    /// walked on every fetch).
    ///
    /// It is a hint, honoured only when safe. Writers serialize per key, but rows of
    /// different keys commit out of id order: a lower id may commit after a higher one was
    /// read, and a read `id > after` would then return that key's next row and never the
    /// late one, publishing the key out of order. So a store returns only rows above
    /// `after` when it can show that every row with an id `<= after` that will ever commit
    /// has been returned by an earlier read; otherwise it starts lower, at worst at the
    /// head as if `after` were `None`. Rows the caller already holds may therefore come
    /// back, and the caller drops them. A head read is always correct, only costlier.
    /// A store with no record of `bucket` (a new instance, a restarted relay) reads from
    /// the head.
    ///
    /// The contract suite checks it: every read, together with the reads before it,
    /// returns every committed row below the highest id it returned.
    fn next_batch(
        &self,
        bucket: i32,
        after: Option<i64>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<OutboxMessage>, StoreError>> + Send;

    /// Deletes exactly these rows: a contiguous prefix, in order, of what
    /// [`next_batch`](Self::next_batch) returned for `bucket`, all acknowledged by the
    /// broker. Never delete by range: a lower id that committed after the batch was read
    /// is still unpublished.
    fn delete_published(
        &self,
        bucket: i32,
        published: &[OutboxMessage],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Optional: extends the leases in `buckets` that this relay still holds unexpired at
    /// `request.now`, and refreshes its heartbeat, atomically per bucket. Acquires and
    /// releases nothing.
    fn renew_leases(
        &self,
        request: &LeaseRequest<'_>,
        buckets: &[i32],
    ) -> impl Future<Output = Result<RenewOutcome, StoreError>> + Send {
        let _ = (request, buckets);
        async { Err(StoreError::Unsupported("lease renewal")) }
    }

    /// Optional: gives up every lease `relay_id` holds and deletes its heartbeat, so the
    /// remaining relays count it out of the fair share and take its buckets at their next
    /// rebalance rather than after the leases expire.
    ///
    /// Called at most once per relay, as its last call, after a graceful stop with nothing
    /// in flight: no publish or delete of this relay can follow it. Must touch only rows
    /// owned by `relay_id` (a lease already taken over stays with its new owner). A relay
    /// whose release fails just stops; its leases then run out as after a crash.
    fn release_leases(
        &self,
        relay_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let _ = relay_id;
        async { Err(StoreError::Unsupported("lease release")) }
    }

    /// Optional (capability [`parking`](StoreCapabilities::parking)): moves rows of
    /// `request.bucket` from the messages table into the parked table, in one
    /// transaction, and only if `request.relay_id` holds the bucket's lease unexpired at
    /// `request.now` (else nothing changes and [`ParkOutcome::lease_lost`] is set).
    /// Which rows move is [`park_decisions`](crate::park::park_decisions) over the hold
    /// keys parked in the bucket as the transaction sees them (read so that no concurrent
    /// requeue of the bucket interleaves). A row no longer pending is skipped.
    fn park_rows(
        &self,
        request: &ParkRequest<'_>,
    ) -> impl Future<Output = Result<ParkOutcome, StoreError>> + Send {
        let _ = request;
        async { Err(StoreError::Unsupported("parking")) }
    }

    /// Optional (capability [`parking`](StoreCapabilities::parking)): the parked rows of
    /// `bucket` grouped by [`HoldKey::of`] (`None` for keyless rows), each group with its
    /// lowest id, in one round trip.
    fn parked_holds(
        &self,
        bucket: i32,
    ) -> impl Future<Output = Result<Vec<(Option<HoldKey>, i64)>, StoreError>> + Send {
        let _ = bucket;
        async { Err(StoreError::Unsupported("parking")) }
    }

    /// Optional: a whole-store backlog sample, `Ok(None)` when none is available. Runs
    /// concurrently with the other calls, so a relational store uses its own connection.
    fn pending_metrics(
        &self,
    ) -> impl Future<Output = Result<Option<PendingMetrics>, StoreError>> + Send {
        async { Err(StoreError::Unsupported("backlog metrics")) }
    }
}
