//! Writing outbox rows in the caller's transaction: [`Outbox::enqueue`] and
//! [`insert_rows`], and the targets they write through ([`EnqueueTarget`]).

use std::sync::Arc;

use outbox_core::{BindWriter, CommitNotifier, MessageBuilder, OutboxMessage, OutboxSchema};
use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, Value};
use sea_query::{Expr, Query};

use crate::backend::Backend;
use crate::entity::message::{self, timestamp_to_datetime};
use crate::error::EnqueueError;
use crate::outbox::{Enqueued, Outbox};
use crate::store::SeaOrmStore;
use crate::tables::{OutboxTables, SqlNames, quoted_messages_table};
use crate::transaction::OutboxTransaction;
use crate::write_txn::begin_writer;

/// Rows per `INSERT` statement: 8 bound values each, so one statement stays far below
/// every backend's parameter limit (SQLite's historical minimum is 999).
const ROWS_PER_INSERT: usize = 100;

impl Outbox {
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
                m.build(self.config())
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
                txn.record(self.notifier(), done.buckets());
            }
            Hook::None => insert_rows(target, self.tables(), &rows).await?,
        }
        Ok(T::receipt(done))
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

/// Enqueueing through the transaction's own outbox: here, with the rest of writing, so
/// the transaction type knows only its commit hook.
impl OutboxTransaction {
    /// Enqueues through the outbox that began this transaction.
    pub async fn enqueue(&self, message: MessageBuilder) -> Result<Enqueued, EnqueueError> {
        self.outbox().enqueue(self, message).await
    }

    /// Enqueues many messages through the outbox that began this transaction.
    pub async fn enqueue_all<I>(&self, messages: I) -> Result<Enqueued, EnqueueError>
    where
        I: IntoIterator<Item = MessageBuilder>,
    {
        self.outbox().enqueue_all(self, messages).await
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
