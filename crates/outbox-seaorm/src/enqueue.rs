//! Writing outbox rows in the caller's transaction.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use outbox_core::{
    BindWriter, CommitNotifier, EnqueueConfig, MessageBuilder, NoopNotifier, OutboxMessage,
    OutboxSchema,
};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    SqliteTransactionMode, TransactionOptions, TransactionTrait, Value,
};
use sea_query::{Expr, Query};

use crate::backend::Backend;
use crate::entity::message::{self, timestamp_to_datetime};
use crate::error::EnqueueError;
use crate::store::SeaOrmStore;
use crate::tables::{OutboxTables, SqlNames, quoted_messages_table};
use crate::transaction::OutboxTransaction;

/// Rows per `INSERT` statement: 8 bound values each, so one statement stays far below
/// every backend's parameter limit (SQLite's historical minimum is 999).
const ROWS_PER_INSERT: usize = 100;

/// The writer side of one outbox: its [`OutboxSchema`](outbox_core::OutboxSchema) (tables, bucket count, message-id
/// header) and record size limit, and the notifier to wake after commits. Cheap to clone; build one at startup and share it.
///
/// Where a row goes decides when the local relay hears about it:
///
/// | `enqueue(target, ..)` with | the row commits | the relay is woken |
/// |---|---|---|
/// | [`OutboxTransaction`] (from [`begin`](Self::begin) / [`transaction`](Self::transaction)) | with the transaction | after a successful commit, with the buckets of every row enqueued in it |
/// | [`DatabaseConnection`] (no explicit transaction) | at once | right after the insert succeeded |
/// | a plain [`DatabaseTransaction`] | with the transaction | not by the commit: `enqueue` returns a `#[must_use]` [`NotifyAfterCommit`]; pass it to [`notify`](Self::notify) after your commit (else the relay's next poll finds the rows) |
///
/// A rollback, a failed commit or a transaction dropped without commit wakes nothing.
/// Nobody waits for Kafka: a notification only records a hint and returns.
#[derive(Clone)]
pub struct Outbox {
    config: Arc<EnqueueConfig>,
    notifier: Arc<dyn CommitNotifier>,
}

impl fmt::Debug for Outbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outbox")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What an enqueue wrote: how many rows, in which buckets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Enqueued {
    count: usize,
    buckets: Vec<i32>,
}

impl Enqueued {
    fn of(rows: &[OutboxMessage]) -> Self {
        let buckets: BTreeSet<i32> = rows.iter().map(|m| m.bucket).collect();
        Enqueued {
            count: rows.len(),
            buckets: buckets.into_iter().collect(),
        }
    }

    /// Rows written.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The distinct buckets of the rows written, ascending.
    pub fn buckets(&self) -> &[i32] {
        &self.buckets
    }
}

impl Outbox {
    /// An outbox writing with `config`: an [`OutboxSchema`](outbox_core::OutboxSchema) (the one the relays use), an
    /// [`EnqueueConfig`] when records need a size limit, or
    /// [`RelayOptions::enqueue_config`](outbox_core::RelayOptions::enqueue_config) in a
    /// process that also runs the relay. Until [`with_notifier`](Self::with_notifier) is
    /// called, commits wake nobody and relays find the rows by polling.
    pub fn new(config: impl Into<EnqueueConfig>) -> Self {
        Outbox {
            config: Arc::new(config.into()),
            notifier: Arc::new(NoopNotifier),
        }
    }

    /// Wakes this notifier after commits, typically the local relay's
    /// (`RelayHandle::notifier()`).
    pub fn with_notifier(mut self, notifier: Arc<dyn CommitNotifier>) -> Self {
        self.notifier = notifier;
        self
    }

    /// The table names.
    pub fn tables(&self) -> &OutboxTables {
        self.config.schema().tables()
    }

    /// The enqueue settings.
    pub fn config(&self) -> &EnqueueConfig {
        &self.config
    }

    /// Validates `message` with this outbox's settings (computing its bucket) and inserts
    /// it through `target`. See the type docs for when the relay is woken.
    ///
    /// Through a plain [`DatabaseTransaction`] it returns a [`NotifyAfterCommit`]
    /// (`#[must_use]`): that transaction cannot tell anyone about its commit, so pass the
    /// receipt to [`notify`](Self::notify) once it committed.
    pub async fn enqueue<T: EnqueueTarget>(
        &self,
        target: &T,
        message: MessageBuilder,
    ) -> Result<T::Receipt, EnqueueError> {
        self.enqueue_all(target, [message]).await
    }

    /// Like [`enqueue`](Self::enqueue) for many messages, written with multi-row
    /// inserts. Every message is validated first: one invalid message means nothing is
    /// written.
    ///
    /// Through a plain [`DatabaseConnection`], more than one statement's worth of rows
    /// (over 100) is wrapped in a transaction of its own so that all or none commit. On
    /// PostgreSQL, such a call given a plain connection are streamed with a binary
    /// `COPY` in that transaction instead (the bulk path, about the cost of a hand-written
    /// COPY); inside your own transaction they stay multi-row inserts, since COPY needs a
    /// connection of its own.
    /// Through a plain [`DatabaseTransaction`] the receipt is a [`NotifyAfterCommit`].
    pub async fn enqueue_all<T, I>(
        &self,
        target: &T,
        messages: I,
    ) -> Result<T::Receipt, EnqueueError>
    where
        T: EnqueueTarget,
        I: IntoIterator<Item = MessageBuilder>,
    {
        let rows = messages
            .into_iter()
            .enumerate()
            .map(|(index, m)| {
                m.build(&self.config)
                    .map_err(|source| EnqueueError::Invalid { index, source })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if rows.is_empty() {
            return Ok(T::receipt(Enqueued::default()));
        }
        let done = Enqueued::of(&rows);
        match target.hook() {
            Hook::Autocommit(db) if rows.len() > ROWS_PER_INSERT => {
                if !copied_on_postgres(db, self.tables(), &rows).await? {
                    let txn = begin_writer(db).await?;
                    insert_rows(&txn, self.tables(), &rows).await?;
                    txn.commit().await?;
                }
                self.notify(&done);
            }
            Hook::Autocommit(db) => {
                insert_rows(db, self.tables(), &rows).await?;
                self.notify(&done);
            }
            Hook::OnCommit(txn) => {
                insert_rows(txn, self.tables(), &rows).await?;
                txn.record(&self.notifier, &done.buckets);
            }
            Hook::None => insert_rows(target, self.tables(), &rows).await?,
        }
        Ok(T::receipt(done))
    }

    /// Wakes the notifier for rows you committed yourself (enqueued through a plain
    /// [`DatabaseTransaction`]: pass the [`NotifyAfterCommit`] it returned, which derefs
    /// to [`Enqueued`]). Call it only after the commit succeeded.
    pub fn notify(&self, enqueued: &Enqueued) {
        if !enqueued.is_empty() {
            self.notifier.notify_buckets(&enqueued.buckets);
        }
    }

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
}

/// Writes `rows` with a binary COPY in a transaction of its own when `db` is a
/// PostgreSQL pool (not a mock or proxy connection that only speaks its dialect);
/// `false` when it is not, and nothing was written.
#[cfg(feature = "postgres")]
async fn copied_on_postgres(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    rows: &[OutboxMessage],
) -> Result<bool, EnqueueError> {
    match &db.inner {
        sea_orm::DatabaseConnectionType::SqlxPostgresPoolConnection(_) => {
            crate::copy::copy_rows(db.get_postgres_connection_pool(), tables, rows).await?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Without the `postgres` feature there is no PostgreSQL pool to COPY through.
#[cfg(not(feature = "postgres"))]
async fn copied_on_postgres(
    _db: &DatabaseConnection,
    _tables: &OutboxTables,
    _rows: &[OutboxMessage],
) -> Result<bool, EnqueueError> {
    Ok(false)
}

/// A transaction that will write: `BEGIN IMMEDIATE` on SQLite, a plain `BEGIN` elsewhere.
pub(crate) async fn begin_writer(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    match db.get_database_backend() {
        DbBackend::Sqlite => {
            db.begin_with_options(TransactionOptions {
                sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
                ..TransactionOptions::default()
            })
            .await
        }
        _ => db.begin().await,
    }
}

/// Inserts `rows` exactly as given, with no validation and no notification: the
/// low-level write under [`Outbox::enqueue_all`], for tools that move already-built rows
/// (re-enqueueing a repaired record, say). The rows' buckets must have been computed with
/// the relays' bucket count.
pub async fn insert_rows<C: ConnectionTrait>(
    conn: &C,
    tables: &OutboxTables,
    rows: &[OutboxMessage],
) -> Result<(), EnqueueError> {
    let backend = Backend::try_from(conn.get_database_backend())?;
    let postgres_id = (backend == Backend::Postgres).then(|| postgres_id_after_xid(tables));
    for (chunk_index, chunk) in rows.chunks(ROWS_PER_INSERT).enumerate() {
        let mut insert = Query::insert();
        insert.into_table(tables.messages_name());
        if postgres_id.is_some() {
            insert.columns(message::COLUMNS);
        } else {
            insert.columns(message::INSERTED_COLUMNS);
        }
        for (i, m) in chunk.iter().enumerate() {
            let index = chunk_index * ROWS_PER_INSERT + i;
            let created_at =
                timestamp_to_datetime(m.created_at).ok_or(EnqueueError::CreatedAtOutOfRange {
                    index,
                    created_at: m.created_at,
                })?;
            let values: [Value; 8] = [
                m.message_id.into(),
                m.bucket.into(),
                m.topic.clone().into(),
                m.key.clone().into(),
                m.value.clone().into(),
                m.headers.clone().into(),
                m.partition.into(),
                created_at.into(),
            ];
            // The statement's first row takes the xid; the rows after it draw their ids
            // from the column default (`VALUES` rows are evaluated in order).
            let id = postgres_id.as_ref().map(|first| match i {
                0 => Expr::cust(first.clone()),
                _ => Expr::cust("DEFAULT"),
            });
            let values = id.into_iter().chain(values.map(Into::into));
            insert
                .values(values)
                .map_err(|e| DbErr::Custom(format!("building the outbox insert: {e}")))?;
        }
        conn.execute(&insert).await?;
    }
    Ok(())
}

/// PostgreSQL: the `id` value of an outbox insert, drawn from the column's own sequence
/// only after the transaction has an xid.
///
/// Why: the relay's cursor (`store::cursor`) proves from snapshots that no lower id can
/// still commit, which holds only for transactions that had an xid when they drew their
/// id. A plain insert evaluates the `bigserial` default before the heap insert assigns
/// the xid, so a transaction whose first write is the outbox insert would draw an id
/// without one. The sub-select gates the sequence on `pg_current_xact_id()` (which
/// assigns the xid if there is none yet), and a function's argument is evaluated before
/// the function: xid first, then `nextval`. Same statement, same round trip. Only a
/// statement's first row carries it (the others use `DEFAULT`): the sequence lookup per
/// row made a 100-row insert about twice as slow, the first row alone costs nothing
/// measurable.
fn postgres_id_after_xid(tables: &OutboxTables) -> String {
    let table = quoted_messages_table(tables);
    format!(
        "nextval((SELECT pg_get_serial_sequence('{table}', 'id') \
         WHERE pg_current_xact_id() IS NOT NULL)::regclass)"
    )
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for sea_orm::DatabaseConnection {}
    impl Sealed for sea_orm::DatabaseTransaction {}
    impl Sealed for crate::transaction::OutboxTransaction {}
}

/// Where [`Outbox::enqueue`] can write: a [`DatabaseConnection`] (implicit commit), an
/// [`OutboxTransaction`] (notifies after commit) or a plain [`DatabaseTransaction`] (no
/// notification). Sealed: the commit semantics of each are part of the contract.
pub trait EnqueueTarget: ConnectionTrait + Send + Sync + sealed::Sealed {
    /// What an enqueue through this target returns: [`Enqueued`], or for a plain
    /// [`DatabaseTransaction`] the `#[must_use]` [`NotifyAfterCommit`].
    type Receipt: Send;

    /// How the target commits. An implementation detail.
    #[doc(hidden)]
    fn hook(&self) -> Hook<'_>;

    /// Wraps what was written. An implementation detail.
    #[doc(hidden)]
    fn receipt(enqueued: Enqueued) -> Self::Receipt;
}

/// Rows enqueued through a plain [`DatabaseTransaction`], which has no commit hook: the
/// local relay is not woken when it commits. After your `commit()` succeeded, pass this
/// to [`Outbox::notify`] (it derefs to [`Enqueued`]); otherwise the relay finds the rows
/// only at its next poll. To have it done for you, begin the transaction with
/// [`Outbox::begin`] or [`Outbox::transaction`] instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use = "a plain DatabaseTransaction does not wake the relay when it commits: after the commit, call `outbox.notify(&receipt)` (or begin the transaction with `Outbox::begin`)"]
pub struct NotifyAfterCommit(Enqueued);

impl NotifyAfterCommit {
    /// What was written, for [`Outbox::notify`].
    pub fn into_enqueued(self) -> Enqueued {
        self.0
    }
}

impl std::ops::Deref for NotifyAfterCommit {
    type Target = Enqueued;

    fn deref(&self) -> &Enqueued {
        &self.0
    }
}

/// How an [`EnqueueTarget`] commits. An implementation detail.
#[doc(hidden)]
#[derive(Debug)]
pub enum Hook<'a> {
    /// Each statement commits by itself.
    Autocommit(&'a DatabaseConnection),
    /// Buckets are recorded and announced after the commit.
    OnCommit(&'a OutboxTransaction),
    /// The caller commits; nobody is told.
    None,
}

impl EnqueueTarget for DatabaseConnection {
    type Receipt = Enqueued;

    fn hook(&self) -> Hook<'_> {
        Hook::Autocommit(self)
    }

    fn receipt(enqueued: Enqueued) -> Enqueued {
        enqueued
    }
}

impl EnqueueTarget for DatabaseTransaction {
    type Receipt = NotifyAfterCommit;

    fn hook(&self) -> Hook<'_> {
        Hook::None
    }

    fn receipt(enqueued: Enqueued) -> NotifyAfterCommit {
        NotifyAfterCommit(enqueued)
    }
}

impl EnqueueTarget for OutboxTransaction {
    type Receipt = Enqueued;

    fn hook(&self) -> Hook<'_> {
        Hook::OnCommit(self)
    }

    fn receipt(enqueued: Enqueued) -> Enqueued {
        enqueued
    }
}

impl BindWriter for SeaOrmStore {
    type Writer = Outbox;

    /// The store's schema: the writer buckets rows with the bucket count the relay reads.
    fn writer_schema(&self) -> Option<&OutboxSchema> {
        Some(self.schema())
    }

    /// An [`Outbox`] on the store's schema that wakes `notifier` after each commit.
    fn bind_writer(&self, notifier: Arc<dyn CommitNotifier>) -> Outbox {
        Outbox::new(self.schema().clone()).with_notifier(notifier)
    }
}
