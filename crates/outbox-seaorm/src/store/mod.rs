//! The [`OutboxStore`] on sea-orm: leases, heartbeats, batches and backlog metrics.
//!
//! Every call is a handful of short autocommit statements on the pool: no transaction
//! and no row lock outlives a statement, so a relay that stalls or dies blocks nobody.
//! Lease safety rests on one primitive, the guarded conditional `UPDATE`; which buckets to
//! claim, extend and release is the core's [`outbox_core::plan_acquisition`], which this
//! store only executes, in a few statements whatever the bucket count (see [`leases`]).
//!
//! # The keyset cursor of `next_batch`
//!
//! A cursor read (`after = Some(id)`) starts its scan where no row that committed late
//! can be skipped:
//!
//! * SQLite: at `after`. One write transaction runs at a time and draws its ids inside
//!   it, so ids become visible in order.
//! * MySQL/MariaDB: at the head, always. A query there cannot read the bounds of its
//!   snapshot, so nothing cheap shows that no lower id is still uncommitted.
//! * PostgreSQL: at `after` when it is at or below the safe point; past `after`, with the
//!   ids between the safe point and `after` checked in the same statement, when a
//!   matured record covers `after`; else at the head.
//!   Each read returns its own snapshot's xmin and the next transaction id to be
//!   assigned, in the same statement, and the store keeps per bucket, in this instance,
//!   the highest id below which every row that will ever commit has been returned (see
//!   [`cursor`] for the proof). A fetch stays cheap however many dead index entries a
//!   long read-only transaction keeps at the head of the bucket. A transaction that holds
//!   a transaction id for long pins the safe point until it ends; a new store instance
//!   starts at the head.
//!
//!   The proof covers transactions that had a transaction id when they drew their row's
//!   id. The library's writers take it first; a writer of its own whose first write is
//!   the outbox insert leaves a window of one statement in which a relay's read can
//!   misjudge (see the crate docs, "Writing rows without this library").

mod batches;
mod cursor;
mod db_error;
mod leases;
mod metrics;
mod parking;
mod sql_batch;
mod status;

use std::sync::Arc;

use std::time::Duration;

use outbox_core::{
    Acquired, HoldKey, LeaseRequest, Misconfiguration, OutboxMessage, OutboxSchema, OutboxStatus,
    OutboxStore, ParkOutcome, ParkRequest, ParkedRow, ParkedRows, ParkedSelection, PendingMetrics,
    RenewOutcome, StatusSnapshot, StoreCapabilities, StoreError, Timestamp,
};
use sea_orm::DatabaseConnection;
use tokio::sync::{Mutex, MutexGuard};
use tracing::{Instrument, debug_span};

use crate::backend::{Backend, UnsupportedBackend};

/// Why a [`SeaOrmStore`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreSetupError {
    /// The connection's database is not one this crate supports.
    #[error(transparent)]
    UnsupportedBackend(#[from] UnsupportedBackend),
    /// The metrics pool reaches a different kind of database than the store's pool.
    #[error("the metrics connection is {metrics:?}, but the store's connection is {store:?}")]
    BackendMismatch {
        /// The store's backend.
        store: Backend,
        /// The metrics connection's backend.
        metrics: Backend,
    },
}
use crate::tables::OutboxTables;
use cursor::ReadPlan;

/// The outbox store for PostgreSQL, MySQL/MariaDB and SQLite.
///
/// Clones share the pool. Every optional capability is implemented: lease renewal during
/// a publish, lease release, whole-store backlog metrics (pending and parked rows), and
/// parking (the parked table of [`ParkedMigration`](crate::ParkedMigration)); the
/// operator's commands on parked rows are its [`ParkedRows`] implementation.
///
/// **Pool size.** The relay calls the store from up to `max_concurrent_lanes` lanes at
/// once, beside its lease calls and the backlog sampler: build the pool with
/// [`ConnectSettings::for_relay`](crate::ConnectSettings::for_relay), which makes it
/// `max_concurrent_lanes + 2` connections. A smaller pool is correct but makes lanes wait
/// for connections.
///
/// **SQLite.** The store's writes (deletes, lease and heartbeat updates) take turns on
/// one in-process lock, clones included, so the relay's lanes never contend for the
/// file's write lock among themselves; reads run beside them (with WAL, which
/// [`connect`](crate::connect()) sets).
#[derive(Debug)]
pub struct SeaOrmStore {
    inner: Arc<Inner>,
    /// PostgreSQL only: per bucket, how far a cursor read may start (see [`cursor`]).
    /// Each store value keeps its own: a safe point says which rows *this value's* reads
    /// have returned, so a clone (given to another relay) starts empty and reads from
    /// the head.
    safe_points: Arc<std::sync::Mutex<cursor::SafePoints>>,
}

impl Clone for SeaOrmStore {
    /// Shares the pools and settings; starts its own cursor bookkeeping.
    fn clone(&self) -> Self {
        SeaOrmStore {
            inner: Arc::clone(&self.inner),
            safe_points: Arc::default(),
        }
    }
}

#[derive(Debug)]
struct Inner {
    db: DatabaseConnection,
    metrics_db: DatabaseConnection,
    schema: OutboxSchema,
    backend: Backend,
    /// SQLite only: the store's one writer path. SQLite admits one writer per file; the
    /// relay's concurrent writes (lanes' deletes, lease calls) take turns here, in FIFO
    /// order, instead of polling the file lock in SQLite's busy handler, whose sleeps grow
    /// to 100 ms. Reads do not take it (WAL lets them run beside the writer).
    write_gate: Option<Arc<Mutex<()>>>,
}

impl Inner {
    /// Holds the store's writer turn on SQLite (nothing elsewhere) while a write runs.
    async fn write_turn(&self) -> Option<MutexGuard<'_, ()>> {
        match &self.write_gate {
            Some(gate) => Some(gate.lock().await),
            None => None,
        }
    }
}

impl SeaOrmStore {
    /// A store on `db` for the outbox described by `schema` (the same value the relay's
    /// options and the writers use; [`OutboxSchema::default`] for the defaults; bare
    /// [`OutboxTables`] mean the default bucket count and header).
    /// A relay asking for a different bucket count is refused as a misconfiguration.
    ///
    /// Backlog metrics run on the same pool, each on a connection of its own (the relay
    /// samples them concurrently with its other calls), unless
    /// [`with_metrics_connection`](Self::with_metrics_connection) gives them a separate
    /// pool.
    pub fn new(
        db: DatabaseConnection,
        schema: impl Into<OutboxSchema>,
    ) -> Result<Self, StoreSetupError> {
        let schema = schema.into();
        let backend = Backend::try_from(db.get_database_backend())?;
        Ok(SeaOrmStore {
            inner: Arc::new(Inner {
                metrics_db: db.clone(),
                db,
                schema,
                backend,
                write_gate: (backend == Backend::Sqlite).then(Arc::default),
            }),
            safe_points: Arc::default(),
        })
    }

    /// Runs backlog metrics on this pool instead, so a slow whole-table aggregate never
    /// waits for, or holds, a connection the relay needs. Must reach the same database.
    pub fn with_metrics_connection(
        self,
        metrics_db: DatabaseConnection,
    ) -> Result<Self, StoreSetupError> {
        let backend = Backend::try_from(metrics_db.get_database_backend())?;
        if backend != self.inner.backend {
            return Err(StoreSetupError::BackendMismatch {
                store: self.inner.backend,
                metrics: backend,
            });
        }
        Ok(SeaOrmStore {
            inner: Arc::new(Inner {
                db: self.inner.db.clone(),
                metrics_db,
                schema: self.inner.schema.clone(),
                backend,
                write_gate: self.inner.write_gate.clone(),
            }),
            safe_points: Arc::clone(&self.safe_points),
        })
    }

    /// The outbox's schema.
    pub fn schema(&self) -> &OutboxSchema {
        &self.inner.schema
    }

    /// The outbox's table names, the schema's.
    pub fn tables(&self) -> &OutboxTables {
        self.inner.schema.tables()
    }

    /// Refuses a relay whose options were built from another schema than this store.
    fn check_bucket_count(&self, relay: u32) -> Result<(), StoreError> {
        let store = self.inner.schema.bucket_count().get();
        if relay == store {
            Ok(())
        } else {
            Err(Misconfiguration::BucketCountMismatch { store, relay }.into())
        }
    }

    /// The raw rows of the operator's status: heartbeats, leases, and pending and parked
    /// rows counted per bucket (every bucket value found, in range or not). Four reads, one
    /// per table, whatever the bucket count; nothing is written or locked.
    ///
    /// A missing table or column is a [`Misconfiguration::DatabaseSetup`] naming the fix.
    pub async fn status_snapshot(&self) -> Result<StatusSnapshot, StoreError> {
        let i = &self.inner;
        status::read(&i.db, i.backend, i.schema.tables())
            .instrument(debug_span!("outbox_store.status"))
            .await
    }

    /// The operator's view of this outbox at `now` (see [`outbox_core::status`]):
    /// [`status_snapshot`](Self::status_snapshot) assembled with the schema's bucket count,
    /// judging liveness and lease expiry with `lease_duration`, which must be the relays'
    /// own (`RelayOptions::lease_duration`).
    pub async fn status(
        &self,
        now: Timestamp,
        lease_duration: Duration,
    ) -> Result<OutboxStatus, StoreError> {
        let snapshot = self.status_snapshot().await?;
        Ok(OutboxStatus::assemble(
            &snapshot,
            self.inner.schema.bucket_count().get(),
            lease_duration,
            now,
        ))
    }

    /// The pool the relay's calls run on.
    pub fn connection(&self) -> &DatabaseConnection {
        &self.inner.db
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        self.inner.backend
    }

    /// Where the last [`next_batch`](OutboxStore::next_batch) of `bucket` started its
    /// scan: `None` before any read, `Some(None)` for the head, `Some(Some(id))` for rows
    /// above `id`. PostgreSQL only (the other backends report `None`). For tests and
    /// diagnostics: it shows whether a cursor was honoured.
    #[doc(hidden)]
    pub fn last_read_start(&self, bucket: i32) -> Option<Option<i64>> {
        self.safe_points().last_start(bucket)
    }

    fn safe_points(&self) -> std::sync::MutexGuard<'_, cursor::SafePoints> {
        // The state is only ever replaced whole under the lock; a panic elsewhere leaves it
        // consistent.
        self.safe_points
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl OutboxStore for SeaOrmStore {
    fn capabilities(&self) -> StoreCapabilities {
        StoreCapabilities {
            lease_renewal: true,
            backlog_metrics: true,
            lease_release: true,
            parking: true,
        }
    }

    async fn acquire_leases(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        let i = &self.inner;
        let span = debug_span!(
            "outbox_store.acquire_leases",
            relay_id = request.relay_id,
            bucket_count = request.bucket_count,
        );
        self.check_bucket_count(request.bucket_count)?;
        let _turn = i.write_turn().await;
        leases::acquire(&i.db, i.schema.tables(), request)
            .instrument(span)
            .await
    }

    async fn buckets_with_pending(
        &self,
        owned: &[i32],
        bucket_count: u32,
    ) -> Result<Vec<i32>, StoreError> {
        let i = &self.inner;
        let span = debug_span!(
            "outbox_store.buckets_with_pending",
            owned = owned.len(),
            bucket_count
        );
        self.check_bucket_count(bucket_count)?;
        batches::buckets_with_pending(&i.db, i.schema.tables(), owned, bucket_count)
            .instrument(span)
            .await
    }

    async fn next_batch(
        &self,
        bucket: i32,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<OutboxMessage>, StoreError> {
        let i = &self.inner;
        // Where the scan may start without skipping a row that committed late:
        // - SQLite runs one write transaction at a time and draws ids inside it, so ids
        //   become visible in order: the caller's cursor is always safe.
        // - MySQL/MariaDB offers no cheap way to tell whether a lower id is still
        //   uncommitted (no snapshot bounds a query can read): always the head.
        // - PostgreSQL: from the bucket's safe point, proved with snapshots ([`cursor`]).
        let plan = match i.backend {
            Backend::Sqlite => after.map_or(ReadPlan::Head, ReadPlan::From),
            Backend::MySql => ReadPlan::Head,
            Backend::Postgres => self.safe_points().plan(bucket, after),
        };
        let (start, check) = match plan {
            ReadPlan::Head => (None, None),
            ReadPlan::From(a) => (Some(a), None),
            ReadPlan::Checked { since, after } => (Some(after), Some((since, after))),
        };
        let span = debug_span!(
            "outbox_store.next_batch",
            bucket,
            after,
            read_from = start,
            checked_from = check.map(|(since, _)| since),
            batch_size = limit
        );
        async {
            let tables = i.schema.tables();
            if i.backend != Backend::Postgres {
                return batches::next_batch(&i.db, tables, bucket, start, limit).await;
            }
            let read =
                batches::next_batch_postgres(&i.db, tables, bucket, start, check, limit).await?;
            let ids: Vec<i64> = read.batch.iter().map(|m| m.id).collect();
            let Some(range) = check else {
                self.safe_points().observe(bucket, read.outcome, &ids);
                return Ok(read.batch);
            };
            if self
                .safe_points()
                .observe_checked(bucket, read.outcome, range, &read.seen, &ids)
            {
                return Ok(read.batch);
            }
            // A row may have committed late below the cursor (or the check could not
            // prove otherwise): its rows are not used; read from the head.
            tracing::debug!(bucket, "checked read refused: reading from the head");
            let head =
                batches::next_batch_postgres(&i.db, tables, bucket, None, None, limit).await?;
            let ids: Vec<i64> = head.batch.iter().map(|m| m.id).collect();
            self.safe_points().observe(bucket, head.outcome, &ids);
            Ok(head.batch)
        }
        .instrument(span)
        .await
    }

    async fn delete_published(
        &self,
        bucket: i32,
        published: &[OutboxMessage],
    ) -> Result<(), StoreError> {
        let i = &self.inner;
        let span = debug_span!(
            "outbox_store.delete_published",
            bucket,
            batch_size = published.len()
        );
        let _turn = i.write_turn().await;
        batches::delete_published(&i.db, i.schema.tables(), bucket, published)
            .instrument(span)
            .await
    }

    async fn renew_leases(
        &self,
        request: &LeaseRequest<'_>,
        buckets: &[i32],
    ) -> Result<RenewOutcome, StoreError> {
        let i = &self.inner;
        let span = debug_span!(
            "outbox_store.renew_leases",
            relay_id = request.relay_id,
            buckets = buckets.len(),
        );
        let _turn = i.write_turn().await;
        leases::renew(&i.db, i.schema.tables(), request, buckets)
            .instrument(span)
            .await
    }

    async fn release_leases(&self, relay_id: &str) -> Result<(), StoreError> {
        let i = &self.inner;
        let span = debug_span!("outbox_store.release_leases", relay_id);
        let _turn = i.write_turn().await;
        leases::release_all(&i.db, i.schema.tables(), relay_id)
            .instrument(span)
            .await
    }

    async fn park_rows(&self, request: &ParkRequest<'_>) -> Result<ParkOutcome, StoreError> {
        let i = &self.inner;
        let span = debug_span!(
            "outbox_store.park_rows",
            bucket = request.bucket,
            rows = request.rows.len()
        );
        let _turn = i.write_turn().await;
        parking::park_rows(&i.db, i.backend, i.schema.tables(), request)
            .instrument(span)
            .await
    }

    async fn parked_holds(&self, bucket: i32) -> Result<Vec<(Option<HoldKey>, i64)>, StoreError> {
        let i = &self.inner;
        let span = debug_span!("outbox_store.parked_holds", bucket);
        parking::parked_holds(&i.db, i.backend, i.schema.tables(), bucket)
            .instrument(span)
            .await
    }

    async fn pending_metrics(&self) -> Result<Option<PendingMetrics>, StoreError> {
        let i = &self.inner;
        let span = debug_span!("outbox_store.pending_metrics");
        async {
            let mut sample = metrics::pending(&i.metrics_db, i.backend, i.schema.tables()).await?;
            let (parked, oldest) = parking::parked_sample(&i.metrics_db, i.schema.tables()).await?;
            sample.parked_count = Some(parked);
            sample.oldest_parked_at = oldest;
            Ok(Some(sample))
        }
        .instrument(span)
        .await
    }
}

/// The operator's commands on the parked table (what `outbox-relay parked` runs). Requeue
/// and discard run in one transaction each.
impl ParkedRows for SeaOrmStore {
    async fn list_parked(&self, limit: usize) -> Result<Vec<ParkedRow>, StoreError> {
        parking::list_parked(&self.inner.db, self.tables(), limit).await
    }

    async fn show_parked(&self, id: i64) -> Result<Option<ParkedRow>, StoreError> {
        parking::show_parked(&self.inner.db, self.tables(), id).await
    }

    async fn requeue_parked(&self, selection: &ParkedSelection) -> Result<Vec<i64>, StoreError> {
        let _turn = self.inner.write_turn().await;
        parking::requeue_parked(&self.inner.db, self.tables(), selection).await
    }

    async fn discard_parked(&self, selection: &ParkedSelection) -> Result<Vec<i64>, StoreError> {
        let _turn = self.inner.write_turn().await;
        parking::discard_parked(&self.inner.db, self.tables(), selection).await
    }
}
