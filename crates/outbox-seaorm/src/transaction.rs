//! A sea-orm transaction that wakes the relay after it commits.
//!
//! sea-orm has no commit interceptors, so the hook lives in a wrapper: rows enqueued
//! through it add their buckets to a set, and [`OutboxTransaction::commit`] hands that set
//! to the notifier only once the database confirmed the commit. Rollback, a failed commit
//! and drop (which rolls back) discard the set. [`Outbox::begin`] and
//! [`Outbox::transaction`], which start one, are here too; enqueueing through one is in
//! `enqueue`, with every other write.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use outbox_core::CommitNotifier;
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr, ExecResult,
    QueryResult, Statement, TransactionError,
};

use crate::outbox::Outbox;
use crate::write_txn::begin_writer;

/// Buckets waiting for the commit, per notifier (several outboxes may write into one
/// transaction).
type Pending = Vec<(Arc<dyn CommitNotifier>, BTreeSet<i32>)>;

/// A [`DatabaseTransaction`] that notifies the relay after a successful commit.
///
/// Obtain it from [`Outbox::begin`] or [`Outbox::transaction`]. It implements
/// [`ConnectionTrait`], so entities, `ActiveModel`s and queries take `&txn` as they take a
/// plain transaction.
pub struct OutboxTransaction {
    txn: DatabaseTransaction,
    outbox: Outbox,
    pending: Mutex<Pending>,
}

impl std::fmt::Debug for OutboxTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxTransaction")
            .field("outbox", &self.outbox)
            .field("pending_buckets", &self.pending_buckets())
            .finish_non_exhaustive()
    }
}

impl OutboxTransaction {
    fn new(txn: DatabaseTransaction, outbox: Outbox) -> Self {
        OutboxTransaction {
            txn,
            outbox,
            pending: Mutex::new(Vec::new()),
        }
    }

    /// The outbox that began this transaction (its enqueues go through it).
    pub(crate) fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// The underlying sea-orm transaction (for APIs that want exactly that type).
    pub fn inner(&self) -> &DatabaseTransaction {
        &self.txn
    }

    /// Distinct buckets of the rows enqueued so far, ascending.
    pub fn pending_buckets(&self) -> Vec<i32> {
        let pending = self.lock();
        let all: BTreeSet<i32> = pending
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect();
        all.into_iter().collect()
    }

    /// Commits, then (only if the commit succeeded) wakes the notifier with the buckets
    /// of every row enqueued in this transaction.
    pub async fn commit(self) -> Result<(), DbErr> {
        let pending = std::mem::take(&mut *self.lock());
        self.txn.commit().await?;
        for (notifier, buckets) in pending {
            let buckets: Vec<i32> = buckets.into_iter().collect();
            notifier.notify_buckets(&buckets);
        }
        Ok(())
    }

    /// Rolls back; nobody is notified.
    pub async fn rollback(self) -> Result<(), DbErr> {
        self.txn.rollback().await
    }

    pub(crate) fn record(&self, notifier: &Arc<dyn CommitNotifier>, buckets: &[i32]) {
        let mut pending = self.lock();
        match pending.iter_mut().find(|(n, _)| Arc::ptr_eq(n, notifier)) {
            Some((_, set)) => set.extend(buckets.iter().copied()),
            None => pending.push((Arc::clone(notifier), buckets.iter().copied().collect())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        // Only this module touches the set and never panics while holding it; a poisoned
        // lock still holds a valid set.
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait::async_trait]
impl ConnectionTrait for OutboxTransaction {
    fn get_database_backend(&self) -> DbBackend {
        self.txn.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.txn.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.txn.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        self.txn.query_one_raw(stmt).await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.txn.query_all_raw(stmt).await
    }

    fn support_returning(&self) -> bool {
        self.txn.support_returning()
    }
}

/// Starting an [`OutboxTransaction`].
impl Outbox {
    /// Begins a transaction whose [`commit`](OutboxTransaction::commit) wakes the relay
    /// for the rows enqueued in it. Use it like a [`DatabaseTransaction`]: it implements
    /// [`ConnectionTrait`], so entities and queries run on it directly.
    ///
    /// On SQLite the transaction is `BEGIN IMMEDIATE`: it takes the write lock when it
    /// starts (waiting up to the connection's busy timeout), so it cannot fail with
    /// `SQLITE_BUSY` halfway, when a read-first transaction would have to upgrade to
    /// writing after another writer committed.
    pub async fn begin(&self, db: &DatabaseConnection) -> Result<OutboxTransaction, DbErr> {
        Ok(OutboxTransaction::new(
            begin_writer(db).await?,
            self.clone(),
        ))
    }

    /// Runs `callback` in an [`OutboxTransaction`], in the style of sea-orm's
    /// `TransactionTrait::transaction`: `Ok` commits (and then notifies), `Err` rolls
    /// back (and notifies nobody).
    ///
    /// ```no_run
    /// # async fn demo(db: &sea_orm::DatabaseConnection, outbox: &outbox_seaorm::Outbox) -> Result<(), Box<dyn std::error::Error>> {
    /// use outbox_core::OutboxMessage;
    ///
    /// outbox
    ///     .transaction::<_, (), outbox_seaorm::EnqueueError>(db, |txn| {
    ///         Box::pin(async move {
    ///             // ... business writes on `txn` ...
    ///             txn.enqueue(OutboxMessage::builder("orders").key("order-7").value("{}"))
    ///                 .await?;
    ///             Ok(())
    ///         })
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn transaction<F, T, E>(
        &self,
        db: &DatabaseConnection,
        callback: F,
    ) -> Result<T, TransactionError<E>>
    where
        F: for<'c> FnOnce(
                &'c OutboxTransaction,
            ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: std::fmt::Display + std::fmt::Debug + Send,
    {
        let txn = self.begin(db).await.map_err(TransactionError::Connection)?;
        match callback(&txn).await {
            Ok(value) => {
                txn.commit().await.map_err(TransactionError::Connection)?;
                Ok(value)
            }
            Err(e) => {
                // The callback's error is the one worth reporting; a failed rollback
                // leaves the transaction to be rolled back by the server when the
                // connection is dropped or reused.
                if let Err(rollback) = txn.rollback().await {
                    tracing::warn!(%rollback, "rolling back a failed outbox transaction failed");
                }
                Err(TransactionError::Transaction(e))
            }
        }
    }
}
