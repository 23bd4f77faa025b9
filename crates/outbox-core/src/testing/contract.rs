//! The behaviour every [`OutboxStore`] must show, as a reusable async test suite.
//!
//! A backend provides a [`StoreFixture`] factory (a fresh, empty outbox per call) and
//! runs [`run_store_contract`]. Each check states the rule it guards in its panic
//! message. Times are explicit, so the suite never sleeps.

use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;

use uuid::Uuid;

use crate::message::OutboxMessage;
use crate::store::{LeaseRequest, OutboxStore};
use crate::time::Timestamp;

/// A fresh outbox for one contract check.
pub trait StoreFixture: Send + Sync {
    /// The store under test.
    type Store: OutboxStore;

    /// A store handle onto this fixture's outbox; several handles share the data, like
    /// relays in several processes sharing one database.
    fn store(&self) -> impl Future<Output = Self::Store> + Send;

    /// Inserts and commits rows exactly as given (no validation, so that the suite can
    /// plant rows a misconfigured writer would produce). Returns the assigned ids.
    fn insert_committed(&self, rows: Vec<OutboxMessage>) -> impl Future<Output = Vec<i64>> + Send;

    /// A writer's transaction, open with its rows inserted but not committed.
    type Pending: PendingInsert;

    /// Inserts `rows` in a transaction that stays open until
    /// [`PendingInsert::commit`], so that other rows can commit while these hold their
    /// (lower) ids invisibly: the late-commit hazard. Returns the transaction and the
    /// assigned ids, or `None` on a store whose writers cannot overlap (SQLite runs one
    /// write transaction at a time, so no row can commit while another is pending).
    fn insert_pending(
        &self,
        rows: Vec<OutboxMessage>,
    ) -> impl Future<Output = Option<(Self::Pending, Vec<i64>)>> + Send;
}

/// An open writer transaction from [`StoreFixture::insert_pending`].
pub trait PendingInsert: Send {
    /// Commits the transaction's rows.
    fn commit(self) -> impl Future<Output = ()> + Send;
}

const BUCKETS: u32 = 8;
const LEASE: Duration = Duration::from_secs(30);
/// A fixed, realistic instant: the suite's clock starts here.
const T0: Timestamp = Timestamp::from_millis(1_765_000_000_000);

fn at(seconds: u64) -> Timestamp {
    T0.saturating_add(Duration::from_secs(seconds))
}

fn request(relay_id: &str, now: Timestamp) -> LeaseRequest<'_> {
    LeaseRequest {
        relay_id,
        bucket_count: BUCKETS,
        lease_duration: LEASE,
        now,
        busy: &[],
    }
}

/// A row for `bucket` created at `created_ms` after T0.
pub fn row(bucket: i32, created_ms: u64) -> OutboxMessage {
    OutboxMessage {
        id: 0,
        message_id: Uuid::now_v7(),
        bucket,
        topic: "contract".into(),
        key: Some(format!("key-{bucket}").into_bytes()),
        value: Some(vec![7; 16]),
        headers: None,
        partition: None,
        created_at: T0.saturating_add(Duration::from_millis(created_ms)),
        store_ref: None,
    }
}

async fn acquire<S: OutboxStore>(store: &S, relay: &str, now: Timestamp) -> Vec<i32> {
    acquire_busy(store, relay, now, &[]).await.held
}

async fn acquire_busy<S: OutboxStore>(
    store: &S,
    relay: &str,
    now: Timestamp,
    busy: &[i32],
) -> crate::store::Acquired {
    let request = LeaseRequest {
        busy,
        ..request(relay, now)
    };
    match store.acquire_leases(&request).await {
        Ok(acquired) => acquired,
        Err(e) => panic!("store contract: acquire_leases for {relay} failed: {e}"),
    }
}

/// A busy bucket above the share stays with its relay (reported as surplus) until an
/// acquisition no longer names it busy; only then can another relay take it.
pub async fn busy_buckets_are_kept_above_the_share(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    let all: Vec<i32> = (0..8).collect();
    assert_eq!(acquire(&a, "relay-a", at(0)).await, all);
    // relay-b joins: a's share drops to 4, buckets 4..8 are above it.
    assert_eq!(acquire(&b, "relay-b", at(1)).await, Vec::<i32>::new());
    let kept = acquire_busy(&a, "relay-a", at(2), &[6]).await;
    assert_eq!(
        kept.held,
        vec![0, 1, 2, 3, 6],
        "store contract: a busy bucket above the share is kept, the others released"
    );
    assert_eq!(
        kept.surplus,
        vec![6],
        "store contract: the kept bucket is surplus"
    );
    assert_eq!(
        acquire(&b, "relay-b", at(3)).await,
        vec![4, 5, 7],
        "store contract: the busy bucket is not granted to another relay"
    );
    let quiet = acquire_busy(&a, "relay-a", at(4), &[]).await;
    assert_eq!(quiet.held, vec![0, 1, 2, 3]);
    assert!(quiet.surplus.is_empty());
    assert_eq!(
        acquire(&b, "relay-b", at(5)).await,
        vec![4, 5, 6, 7],
        "store contract: released once it is no longer busy"
    );
}

async fn release<S: OutboxStore>(store: &S, relay: &str) {
    if let Err(e) = store.release_leases(relay).await {
        panic!("store contract: release_leases({relay}) failed: {e}");
    }
}

fn assert_disjoint(name: &str, sets: &[&[i32]]) {
    let mut seen = BTreeSet::new();
    for set in sets {
        for bucket in *set {
            assert!(
                seen.insert(*bucket),
                "store contract `{name}`: bucket {bucket} granted to two live relays: {sets:?}"
            );
        }
    }
}

/// Runs every check, each on a fresh fixture from `make`.
pub async fn run_store_contract<F, Fut, X>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = X>,
    X: StoreFixture,
{
    single_relay_owns_every_bucket(&make().await).await;
    live_lease_is_never_granted_twice(&make().await).await;
    lease_is_live_until_its_expiry(&make().await).await;
    expired_lease_is_taken_over(&make().await).await;
    fair_share_converges_as_relays_join_and_leave(&make().await).await;
    busy_buckets_are_kept_above_the_share(&make().await).await;
    pending_probe_reports_owned_buckets_with_rows(&make().await).await;
    out_of_range_bucket_is_fatal(&make().await).await;
    next_batch_is_oldest_first_and_bounded(&make().await).await;
    cursor_read_never_skips_a_late_commit(&make().await).await;
    delete_published_deletes_exactly_the_listed_rows(&make().await).await;
    renewal_extends_held_leases_and_reports_lost_ones(&make().await).await;
    released_leases_are_taken_at_once(&make().await).await;
    backlog_metrics_count_and_age(&make().await).await;
    acquisition_reports_the_heartbeat_it_replaced(&make().await).await;
    acquisition_reports_the_buckets_it_waits_for(&make().await).await;
}

/// An acquisition reports the heartbeat found under the caller's id before it wrote its
/// own: none at first, then the caller's previous one, and whatever another process
/// wrote under the same id (what the duplicate-id check judges). Other ids' heartbeats
/// are not reported.
pub async fn acquisition_reports_the_heartbeat_it_replaced(fx: &impl StoreFixture) {
    let (a, twin) = (fx.store().await, fx.store().await);
    let before = |acquired: crate::store::Acquired| acquired.heartbeat_before;
    assert_eq!(
        before(acquire_busy(&a, "relay-a", at(0), &[]).await),
        None,
        "store contract: a new id has no heartbeat yet"
    );
    assert_eq!(
        before(acquire_busy(&twin, "relay-b", at(1), &[]).await),
        None,
        "store contract: another id's heartbeat is not reported"
    );
    assert_eq!(
        before(acquire_busy(&a, "relay-a", at(2), &[]).await),
        Some(at(0)),
        "store contract: the caller's previous heartbeat is reported"
    );
    assert_eq!(
        before(acquire_busy(&twin, "relay-a", at(3), &[]).await),
        Some(at(2)),
        "store contract: a second process under the same id sees the first one's heartbeat"
    );
    assert_eq!(
        before(acquire_busy(&a, "relay-a", at(4), &[]).await),
        Some(at(3)),
        "store contract: and the first sees the second's"
    );
}

/// When the caller's claims fall short of its share because other relays hold live
/// leases, the acquisition names the buckets, their holder and expiry, as planned by
/// [`plan_acquisition`](crate::plan_acquisition).
pub async fn acquisition_reports_the_buckets_it_waits_for(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    assert_eq!(acquire(&a, "relay-a", at(0)).await.len(), 8);
    let newcomer = acquire_busy(&b, "relay-b", at(1), &[]).await;
    assert!(newcomer.held.is_empty());
    assert_eq!(
        newcomer
            .waiting
            .iter()
            .map(|w| (w.bucket, w.holder.as_str(), w.until, w.holder_live))
            .collect::<Vec<_>>(),
        (0..4)
            .map(|b| (b, "relay-a", at(0).saturating_add(LEASE), true))
            .collect::<Vec<_>>(),
        "store contract: the newcomer waits for its share of relay-a's live leases"
    );
    // relay-a hands its surplus over; relay-b claims it and waits no more.
    assert_eq!(acquire(&a, "relay-a", at(2)).await, vec![0, 1, 2, 3]);
    let settled = acquire_busy(&b, "relay-b", at(3), &[]).await;
    assert_eq!(settled.held, vec![4, 5, 6, 7]);
    assert!(
        settled.waiting.is_empty(),
        "store contract: nothing to wait for once the share is held: {:?}",
        settled.waiting
    );
}

/// One relay alone gets every bucket and keeps them on re-acquisition.
pub async fn single_relay_owns_every_bucket(fx: &impl StoreFixture) {
    let store = fx.store().await;
    let all: Vec<i32> = (0..8).collect();
    assert_eq!(
        acquire(&store, "relay-a", at(0)).await,
        all,
        "store contract: a lone relay owns every bucket"
    );
    assert_eq!(
        acquire(&store, "relay-a", at(5)).await,
        all,
        "store contract: re-acquisition keeps the leases"
    );
}

/// A newcomer gets nothing while the owner's leases are live; the owner releases its
/// surplus on its next acquisition and the newcomer then claims exactly that.
pub async fn live_lease_is_never_granted_twice(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    let held_a = acquire(&a, "relay-a", at(0)).await;
    let held_b = acquire(&b, "relay-b", at(1)).await;
    assert_disjoint("live lease", &[&held_a, &held_b]);
    assert!(
        held_b.is_empty(),
        "store contract: live leases are not taken: b got {held_b:?}"
    );
    let held_a = acquire(&a, "relay-a", at(2)).await;
    assert_eq!(
        held_a.len(),
        4,
        "store contract: an owner above its share releases the surplus: {held_a:?}"
    );
    let held_b = acquire(&b, "relay-b", at(3)).await;
    assert_eq!(
        held_b.len(),
        4,
        "store contract: released buckets are claimable: {held_b:?}"
    );
    assert_disjoint("after release", &[&held_a, &held_b]);
}

/// A lease is live up to the millisecond before its expiry: a relay that asks then gets
/// nothing of it, even when it is owed a share; at the expiry itself the lease is free.
pub async fn lease_is_live_until_its_expiry(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    let held_a = acquire(&a, "relay-a", at(0)).await;
    assert_eq!(held_a.len(), 8);
    let just_before = at(30).saturating_sub(Duration::from_millis(1));
    let held_b = acquire(&b, "relay-b", just_before).await;
    assert_disjoint("one millisecond before expiry", &[&held_a, &held_b]);
    assert!(
        held_b.is_empty(),
        "store contract: a lease 1 ms before its expiry is live and not taken: b got {held_b:?}"
    );
    assert_eq!(
        acquire(&b, "relay-b", at(30)).await,
        (0..8).collect::<Vec<_>>(),
        "store contract: at its expiry a silent relay's lease is taken over"
    );
}

/// A relay that stops heartbeating loses its buckets once its leases expire.
pub async fn expired_lease_is_taken_over(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    assert_eq!(acquire(&a, "relay-a", at(0)).await.len(), 8);
    let early = acquire(&b, "relay-b", at(29)).await;
    assert!(
        early.is_empty(),
        "store contract: no takeover before expiry: {early:?}"
    );
    let late = acquire(&b, "relay-b", at(31)).await;
    assert_eq!(
        late,
        (0..8).collect::<Vec<_>>(),
        "store contract: expired leases of a dead relay are taken over"
    );
}

/// Shares settle at 3/3/2 with three relays and 4/4 after one leaves; at no instant do
/// two relays hold one bucket.
pub async fn fair_share_converges_as_relays_join_and_leave(fx: &impl StoreFixture) {
    let relays = ["relay-a", "relay-b", "relay-c"];
    let stores = [fx.store().await, fx.store().await, fx.store().await];
    let mut held: Vec<Vec<i32>> = vec![Vec::new(); 3];
    let mut second = 0;
    for _round in 0..4 {
        for (i, store) in stores.iter().enumerate() {
            second += 1;
            held[i] = acquire(store, relays[i], at(second)).await;
            let views: Vec<&[i32]> = held.iter().map(Vec::as_slice).collect();
            assert_disjoint("three relays", &views);
        }
    }
    let sizes: Vec<usize> = held.iter().map(Vec::len).collect();
    assert_eq!(
        sizes,
        [3, 3, 2],
        "store contract: three relays settle at their fair shares: {held:?}"
    );
    // relay-c stops. Once its heartbeat and leases are older than the lease, the others
    // split everything.
    held[2].clear();
    for _round in 0..6 {
        second += 10;
        for i in 0..2 {
            held[i] = acquire(&stores[i], relays[i], at(second)).await;
        }
    }
    let views: Vec<&[i32]> = held.iter().map(Vec::as_slice).collect();
    assert_disjoint("after leave", &views);
    assert_eq!(
        (held[0].len(), held[1].len()),
        (4, 4),
        "store contract: survivors split the buckets: {held:?}"
    );
}

/// The probe names exactly the owned buckets that have rows.
pub async fn pending_probe_reports_owned_buckets_with_rows(fx: &impl StoreFixture) {
    let store = fx.store().await;
    fx.insert_committed(vec![row(1, 0), row(3, 1), row(1, 2)])
        .await;
    let found = store.buckets_with_pending(&[0, 1, 2], BUCKETS).await;
    assert_eq!(
        found.ok(),
        Some(vec![1]),
        "store contract: probe reports owned buckets with rows only"
    );
    let none = store.buckets_with_pending(&[], BUCKETS).await;
    assert_eq!(
        none.ok(),
        Some(vec![]),
        "store contract: owning nothing finds nothing"
    );
}

/// Rows in a bucket no relay can claim stop the relay instead of waiting forever.
pub async fn out_of_range_bucket_is_fatal(fx: &impl StoreFixture) {
    let store = fx.store().await;
    fx.insert_committed(vec![row(2, 0), row(11, 1)]).await;
    match store
        .buckets_with_pending(&[0, 1, 2, 3, 4, 5, 6, 7], BUCKETS)
        .await
    {
        Err(e) if e.is_fatal() => {}
        other => panic!(
            "store contract: a row in bucket 11 of 8 must be a fatal misconfiguration, got {other:?}"
        ),
    }
}

/// A batch is one bucket's oldest rows, in id order, at most `limit`.
pub async fn next_batch_is_oldest_first_and_bounded(fx: &impl StoreFixture) {
    let store = fx.store().await;
    let ids = fx
        .insert_committed(vec![row(2, 0), row(3, 1), row(2, 2), row(2, 3), row(2, 4)])
        .await;
    let batch = store
        .next_batch(2, None, 3)
        .await
        .unwrap_or_else(|e| panic!("store contract: next_batch failed: {e}"));
    let got: Vec<i64> = batch.iter().map(|m| m.id).collect();
    assert_eq!(
        got,
        vec![ids[0], ids[2], ids[3]],
        "store contract: oldest first, bounded by limit, one bucket"
    );
    assert!(batch.iter().all(|m| m.bucket == 2));
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "store contract: ids ascend within a batch"
    );
    // A store may ignore the cursor and read from the head (when it cannot prove that
    // no lower row can still commit); either way the rows above the cursor all come back.
    let after = store
        .next_batch(2, Some(ids[2]), 10)
        .await
        .unwrap_or_else(|e| panic!("store contract: next_batch after a cursor failed: {e}"));
    let after: Vec<i64> = after.iter().map(|m| m.id).collect();
    assert!(
        after.windows(2).all(|w| w[0] < w[1]),
        "store contract: ids ascend within a cursor read: {after:?}"
    );
    assert_eq!(
        after
            .iter()
            .filter(|id| **id > ids[2])
            .copied()
            .collect::<Vec<_>>(),
        vec![ids[3], ids[4]],
        "store contract: a cursor read returns every row of the bucket above the cursor"
    );
    assert!(
        after
            .iter()
            .all(|id| [ids[0], ids[2], ids[3], ids[4]].contains(id)),
        "store contract: a cursor read returns the bucket's rows only: {after:?}"
    );
    let past_end = store
        .next_batch(2, Some(ids[4]), 10)
        .await
        .unwrap_or_else(|e| panic!("store contract: next_batch after a cursor failed: {e}"));
    assert!(
        past_end.iter().all(|m| m.id <= ids[4]),
        "store contract: nothing above the last row: {past_end:?}"
    );
}

/// What the reads of one bucket have returned so far, and which rows are committed.
#[derive(Default)]
struct ReadLog {
    seen: BTreeSet<i64>,
    committed: BTreeSet<i64>,
}

impl ReadLog {
    /// Checks one read: ascending ids, committed rows only, and no committed row below
    /// the highest one returned that neither this read nor an earlier one returned.
    /// Returns the cursor the relay would pass next (the last id, or the old cursor).
    fn check(&mut self, step: &str, batch: &[OutboxMessage], cursor: Option<i64>) -> Option<i64> {
        let ids: Vec<i64> = batch.iter().map(|m| m.id).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "store contract `{step}`: ids ascend: {ids:?}"
        );
        assert!(
            ids.iter().all(|id| self.committed.contains(id)),
            "store contract `{step}`: only committed rows are read: {ids:?}, committed {:?}",
            self.committed
        );
        if let Some(highest) = ids.last() {
            let skipped: Vec<i64> = self
                .committed
                .range(..highest)
                .filter(|id| !self.seen.contains(id) && !ids.contains(id))
                .copied()
                .collect();
            assert!(
                skipped.is_empty(),
                "store contract `{step}`: the read returned {ids:?} (cursor {cursor:?}) but \
                 skipped the committed lower rows {skipped:?}, which no earlier read \
                 returned: a key's later row would be published before its earlier one"
            );
        }
        self.seen.extend(ids.iter().copied());
        ids.last().copied().or(cursor)
    }
}

/// The late-commit hazard against the cursor. Writers serialize per key, but rows of
/// different keys commit out of id order: a row `x` drawn before `y` may commit after
/// `y` was read. A read `id > y` would then return `x`'s key's next row `z` and never
/// `x`. A store honours a cursor only when no lower row can still appear unreturned;
/// otherwise it reads from the head (the relay drops rows it already holds).
///
/// For every step of inserts, late commits, cursor reads and head reads, the rows a read
/// returns plus those returned before contain every committed row below the highest one
/// it returned.
pub async fn cursor_read_never_skips_a_late_commit(fx: &impl StoreFixture) {
    const B: i32 = 6;
    let store = fx.store().await;
    let mut log = ReadLog::default();
    let read = |after: Option<i64>| {
        let store = &store;
        async move {
            store
                .next_batch(B, after, 10)
                .await
                .unwrap_or_else(|e| panic!("store contract: next_batch({after:?}) failed: {e}"))
        }
    };
    let first = fx
        .insert_committed(vec![row(B, 0), row(B, 1), row(B, 2)])
        .await;
    log.committed.extend(&first);
    let mut cursor = log.check("head read", &read(None).await, None);
    cursor = log.check("cursor read, nothing pending", &read(cursor).await, cursor);

    let Some((late, late_ids)) = fx.insert_pending(vec![row(B, 3)]).await else {
        // Writers cannot overlap: ids become visible in order, and the cursor is exact.
        let more = fx.insert_committed(vec![row(B, 4), row(B, 5)]).await;
        log.committed.extend(&more);
        log.check(
            "cursor read, serialized writers",
            &read(cursor).await,
            cursor,
        );
        return;
    };
    // `x` holds a lower id, invisible, while `y` commits above it and is read.
    let y = fx.insert_committed(vec![row(B, 4)]).await;
    log.committed.extend(&y);
    assert!(late_ids.iter().all(|x| y.iter().all(|y| x < y)));
    cursor = log.check(
        "cursor read while x is pending",
        &read(cursor).await,
        cursor,
    );
    cursor = log.check(
        "cursor read while x is still pending",
        &read(cursor).await,
        cursor,
    );
    // `x` commits late; then its key's next row `z` commits.
    late.commit().await;
    log.committed.extend(&late_ids);
    let z = fx.insert_committed(vec![row(B, 5)]).await;
    log.committed.extend(&z);
    cursor = log.check(
        "cursor read after the late commit",
        &read(cursor).await,
        cursor,
    );
    // Whatever the store chose, the late row has been read by now or comes with a head
    // read; later cursor reads keep the property.
    let more = fx.insert_committed(vec![row(B, 6), row(B, 7)]).await;
    log.committed.extend(&more);
    cursor = log.check("cursor read later on", &read(cursor).await, cursor);
    log.check("head read at the end", &read(None).await, cursor);
    let missing: Vec<i64> = log.committed.difference(&log.seen).copied().collect();
    assert!(
        missing.is_empty(),
        "store contract: every committed row was read in the end, missing {missing:?}"
    );
}

/// Only the listed rows disappear; deleting an already deleted row is harmless.
pub async fn delete_published_deletes_exactly_the_listed_rows(fx: &impl StoreFixture) {
    let store = fx.store().await;
    let ids = fx
        .insert_committed((0..5).map(|i| row(4, i)).collect())
        .await;
    let batch = store
        .next_batch(4, None, 10)
        .await
        .unwrap_or_else(|e| panic!("store contract: next_batch failed: {e}"));
    assert_eq!(batch.len(), 5);
    let result = store.delete_published(4, &batch[..2]).await;
    assert!(
        result.is_ok(),
        "store contract: delete_published failed: {result:?}"
    );
    let rest: Vec<i64> = store
        .next_batch(4, None, 10)
        .await
        .map(|b| b.iter().map(|m| m.id).collect())
        .unwrap_or_default();
    assert_eq!(
        rest,
        ids[2..].to_vec(),
        "store contract: exactly the listed rows are deleted"
    );
    let again = store.delete_published(4, &batch[..2]).await;
    assert!(
        again.is_ok(),
        "store contract: deleting deleted rows is not an error: {again:?}"
    );
    let rest_again = store
        .next_batch(4, None, 10)
        .await
        .map(|b| b.len())
        .unwrap_or_default();
    assert_eq!(rest_again, 3);
}

/// Renewal extends what is still held and reports what was taken over.
pub async fn renewal_extends_held_leases_and_reports_lost_ones(fx: &impl StoreFixture) {
    let (a, b) = (fx.store().await, fx.store().await);
    if !a.capabilities().lease_renewal {
        return;
    }
    let held = acquire(&a, "relay-a", at(0)).await;
    let renewed = a.renew_leases(&request("relay-a", at(10)), &held).await;
    let renewed = renewed.unwrap_or_else(|e| panic!("store contract: renew failed: {e}"));
    assert_eq!(
        renewed.renewed, held,
        "store contract: held leases are renewed"
    );
    assert!(renewed.lost.is_empty());
    // Renewed at 10 s, so valid until 40 s and the heartbeat is fresh: no takeover at 35 s.
    assert!(
        acquire(&b, "relay-b", at(35)).await.is_empty(),
        "store contract: a renewed lease is not taken over"
    );
    // At 41 s relay-a is neither live nor holding unexpired leases.
    assert_eq!(acquire(&b, "relay-b", at(41)).await.len(), 8);
    let late = a.renew_leases(&request("relay-a", at(42)), &held).await;
    let late = late.unwrap_or_else(|e| panic!("store contract: renew failed: {e}"));
    assert!(
        late.renewed.is_empty(),
        "store contract: a lost lease is not renewed: {late:?}"
    );
    assert_eq!(
        late.lost, held,
        "store contract: renewal reports lost leases"
    );
}

/// A relay that hands its leases back is out of the fair share at once: the others split
/// its buckets on their next acquisition, long before its leases would have expired. A
/// release touches only the releasing relay's leases.
pub async fn released_leases_are_taken_at_once(fx: &impl StoreFixture) {
    let relays = ["relay-a", "relay-b", "relay-c"];
    let stores = [fx.store().await, fx.store().await, fx.store().await];
    if !stores[0].capabilities().lease_release {
        return;
    }
    let mut held: Vec<Vec<i32>> = vec![Vec::new(); 3];
    for second in 0..3 {
        for (i, store) in stores.iter().enumerate() {
            held[i] = acquire(store, relays[i], at(second * 3 + i as u64)).await;
        }
    }
    let sizes: Vec<usize> = held.iter().map(Vec::len).collect();
    assert_eq!(sizes, [3, 3, 2], "store contract: settled shares: {held:?}");
    // A relay that holds nothing (or never existed) releases nothing of the others'.
    release(&stores[2], "relay-unknown").await;
    let renewed = stores[0]
        .renew_leases(&request("relay-a", at(10)), &held[0])
        .await
        .unwrap_or_else(|e| panic!("store contract: renew failed: {e}"));
    assert_eq!(
        renewed.renewed, held[0],
        "store contract: a release by another relay id leaves these leases alone"
    );
    release(&stores[2], "relay-c").await;
    release(&stores[2], "relay-c").await;
    held[2].clear();
    // One second later, well inside the released leases' original 30 s.
    held[0] = acquire(&stores[0], "relay-a", at(11)).await;
    held[1] = acquire(&stores[1], "relay-b", at(12)).await;
    let views: Vec<&[i32]> = held.iter().map(Vec::as_slice).collect();
    assert_disjoint("after release", &views);
    assert_eq!(
        (held[0].len(), held[1].len()),
        (4, 4),
        "store contract: released buckets go to the others at once: {held:?}"
    );
}

/// The backlog sample counts every bucket and dates the oldest row when it can.
pub async fn backlog_metrics_count_and_age(fx: &impl StoreFixture) {
    let store = fx.store().await;
    if !store.capabilities().backlog_metrics {
        return;
    }
    let empty = store
        .pending_metrics()
        .await
        .unwrap_or_else(|e| panic!("store contract: pending_metrics failed: {e}"));
    let empty = empty.unwrap_or_else(|| {
        panic!("store contract: a store with the capability samples an empty table")
    });
    assert_eq!(empty.count, 0);
    fx.insert_committed(vec![row(0, 100), row(5, 50), row(7, 200)])
        .await;
    let sample = store.pending_metrics().await.ok().flatten();
    let sample = sample.unwrap_or_else(|| panic!("store contract: no backlog sample"));
    assert_eq!(
        sample.count, 3,
        "store contract: the backlog counts every bucket"
    );
    if let Some(oldest) = sample.oldest_created_at {
        assert_eq!(
            oldest,
            T0.saturating_add(Duration::from_millis(50)),
            "store contract: the oldest row dates the backlog"
        );
    }
}
