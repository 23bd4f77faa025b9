//! Consumer-side deduplication: an inbox table keyed by `(consumer, message_id)`.
//!
//! The relay delivers at least once, so a consumer sees some records twice. Recording
//! each processed message id in the same transaction as the consumer's own writes makes
//! the second delivery a no-op: either the first transaction committed (the id is there,
//! the handler is skipped) or it did not (the id is not there, the handler runs again).
//!
//! The row is inserted *before* the handler runs, with the backend's insert-or-ignore.
//! A concurrent delivery of the same id therefore waits on that row's key until the first
//! transaction ends, and then either finds it committed (duplicate) or rolled back (it
//! runs the handler itself); the handler never runs twice side by side.

mod error;
mod message_id;
mod migration;
mod table;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use outbox_core::{Timestamp, Uuid};
use sea_orm::{
    ConnectionTrait, DatabaseTransaction, DbErr, ExecResult, Statement, TransactionTrait, Value,
};
use sea_query::{Expr, ExprTrait, OnConflict, Query};
use tracing::{Instrument, debug_span};

use crate::backend::Backend;
use crate::entity::inbox::Column as C;
use crate::entity::message::timestamp_to_datetime;
use crate::transaction::OutboxTransaction;

pub use error::{ConsumerNameError, InboxError};
pub use message_id::{MessageIdError, MessageIdHeader};
pub use migration::{INBOX_MIGRATION_NAME, InboxMigration};
pub use table::{DEFAULT_INBOX_TABLE, InboxTable, InboxTableBuilder};

use error::check_consumer;

/// What [`Inbox::process`] did with a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Processed<T> {
    /// First delivery: the handler ran and its transaction, with the inbox row,
    /// committed. Carries the handler's value.
    Handled(T),
    /// The consumer had already processed this message id: the handler was not called.
    Duplicate,
}

impl<T> Processed<T> {
    /// Whether the delivery was a duplicate.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Processed::Duplicate)
    }

    /// The handler's value, if it ran.
    pub fn handled(self) -> Option<T> {
        match self {
            Processed::Handled(value) => Some(value),
            Processed::Duplicate => None,
        }
    }
}

/// What [`Inbox::record`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Recorded {
    /// The id was not there and is now recorded in the caller's transaction: process
    /// the message, then commit.
    New,
    /// The consumer already processed this id (committed by an earlier transaction):
    /// skip the message.
    Duplicate,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for sea_orm::DatabaseTransaction {}
    impl Sealed for crate::transaction::OutboxTransaction {}
}

/// A transaction [`Inbox::record`] can write into. Sealed, and deliberately not
/// implemented for `DatabaseConnection`: recording an id in a statement that commits
/// on its own, before the handler's writes, would lose the message if the handler
/// then failed.
pub trait InboxTarget: ConnectionTrait + Send + Sync + sealed::Sealed {}

impl InboxTarget for DatabaseTransaction {}
impl InboxTarget for OutboxTransaction {}

/// The consumer side: runs handlers at most once per `(consumer, message id)` by
/// recording ids in the consumer's own transaction. Cheap to clone.
///
/// The table comes from [`InboxMigration`] (opt-in; not part of
/// [`Migration`](crate::Migration)).
///
/// ```no_run
/// # async fn demo(db: &sea_orm::DatabaseConnection, record_headers: std::collections::BTreeMap<String, Vec<u8>>) -> Result<(), Box<dyn std::error::Error>> {
/// use outbox_seaorm::{Inbox, MessageIdHeader, Processed};
/// use sea_orm::{ConnectionTrait, DbErr, Statement};
///
/// let inbox = Inbox::default();
/// let message_id = MessageIdHeader::default().find(&record_headers)?;
/// let outcome = inbox
///     .process::<_, _, (), DbErr>(db, "billing", message_id, |txn| {
///         Box::pin(async move {
///             txn.execute_unprepared("UPDATE accounts SET balance = balance - 10 WHERE id = 1")
///                 .await?;
///             Ok(())
///         })
///     })
///     .await?;
/// if outcome.is_duplicate() {
///     // Seen before: nothing ran, nothing changed. Acknowledge the record.
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Inbox {
    table: Arc<InboxTable>,
    message_id_header: Arc<MessageIdHeader>,
}

impl Inbox {
    /// An inbox on `table` (the same one given to [`InboxMigration::new`]).
    pub fn new(table: InboxTable) -> Self {
        Inbox {
            table: Arc::new(table),
            message_id_header: Arc::default(),
        }
    }

    /// Reads message ids from this header in [`process_record`](Self::process_record)
    /// (default: the relay's default, `x-outbox-message-id`); pass
    /// `MessageIdHeader::new(&schema)` when the relays use another.
    pub fn with_message_id_header(mut self, header: MessageIdHeader) -> Self {
        self.message_id_header = Arc::new(header);
        self
    }

    /// The table.
    pub fn table(&self) -> &InboxTable {
        &self.table
    }

    /// The header [`process_record`](Self::process_record) reads message ids from.
    pub fn message_id_header(&self) -> &MessageIdHeader {
        &self.message_id_header
    }

    /// [`process`](Self::process) for a consumed record of `topic`, given its headers as
    /// `(name, value)` pairs (rskafka's `&BTreeMap<String, Vec<u8>>`, a slice of
    /// tuples...): the message id comes from the [`message_id_header`](Self::message_id_header)
    /// ([`InboxError::MessageId`] when it is missing or not a UUID, before the database
    /// is touched).
    ///
    /// With the feature `otel`, the handler runs in a consumer span `process {topic}`
    /// (see `outbox_core::trace_context::consumer_span`) whose parent is the span that
    /// enqueued the message, read from the record's W3C `traceparent`: the consumer's
    /// work joins the producer's trace. Without it, in a plain `process` span.
    pub async fn process_record<C, H, N, V, F, T, E>(
        &self,
        db: &C,
        consumer: &str,
        topic: &str,
        headers: H,
        handler: F,
    ) -> Result<Processed<T>, InboxError<E>>
    where
        C: TransactionTrait<Transaction = DatabaseTransaction> + ?Sized,
        H: IntoIterator<Item = (N, V)> + Clone,
        N: AsRef<str>,
        V: AsRef<[u8]>,
        F: for<'c> FnOnce(
                &'c DatabaseTransaction,
            ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: Send,
    {
        let message_id = self.message_id_header.find(headers.clone())?;
        #[cfg(feature = "otel")]
        let span = outbox_core::trace_context::consumer_span(topic, headers);
        #[cfg(not(feature = "otel"))]
        let span = tracing::info_span!("process", messaging.destination.name = %topic);
        self.process(db, consumer, message_id, handler)
            .instrument(span)
            .await
    }

    /// Runs `handler` once per `(consumer, message_id)`, in the style of sea-orm's
    /// `TransactionTrait::transaction`.
    ///
    /// Begins a transaction on `db` (a savepoint when `db` is itself a transaction),
    /// records the id in it, and then:
    ///
    /// * id already recorded by a committed transaction: rolls back and returns
    ///   [`Processed::Duplicate`] without calling the handler;
    /// * otherwise runs the handler on the same transaction; `Ok` commits the handler's
    ///   writes and the inbox row together ([`Processed::Handled`]); `Err` rolls both
    ///   back and returns [`InboxError::Handler`], so a redelivery processes the message
    ///   again.
    ///
    /// A concurrent call for the same id waits for this transaction to end (the row's
    /// key is locked); on SQLite, which has one writer at a time, for the write lock.
    /// Under PostgreSQL `REPEATABLE READ` or `SERIALIZABLE` the waiting call may fail
    /// with a serialization error instead of reporting a duplicate: retry it.
    ///
    /// The consumer name is checked first ([`InboxError::InvalidConsumer`]).
    pub async fn process<C, F, T, E>(
        &self,
        db: &C,
        consumer: &str,
        message_id: Uuid,
        handler: F,
    ) -> Result<Processed<T>, InboxError<E>>
    where
        C: TransactionTrait<Transaction = DatabaseTransaction> + ?Sized,
        F: for<'c> FnOnce(
                &'c DatabaseTransaction,
            ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: Send,
    {
        let span = debug_span!("outbox_inbox.process", consumer, %message_id);
        async move {
            check_consumer(consumer)?;
            let txn = db.begin().await?;
            match self
                .record(&txn, consumer, message_id)
                .await
                .map_err(InboxError::widen)?
            {
                Recorded::Duplicate => {
                    tracing::debug!("duplicate delivery; handler skipped");
                    rollback(txn).await;
                    return Ok(Processed::Duplicate);
                }
                Recorded::New => {}
            }
            match handler(&txn).await {
                Ok(value) => {
                    txn.commit().await?;
                    Ok(Processed::Handled(value))
                }
                Err(e) => {
                    rollback(txn).await;
                    Err(InboxError::Handler(e))
                }
            }
        }
        .instrument(span)
        .await
    }

    /// Records `message_id` for `consumer` in a transaction the caller manages, and
    /// says whether it is new. For consumers that need the transaction themselves, an
    /// [`OutboxTransaction`] that also enqueues outgoing messages, say:
    ///
    /// ```no_run
    /// # async fn demo(db: &sea_orm::DatabaseConnection, outbox: &outbox_seaorm::Outbox, message_id: outbox_core::Uuid) -> Result<(), Box<dyn std::error::Error>> {
    /// use outbox_core::OutboxMessage;
    /// use outbox_seaorm::{Inbox, Recorded};
    ///
    /// let inbox = Inbox::default();
    /// let txn = outbox.begin(db).await?;
    /// if inbox.record(&txn, "shipping", message_id).await? == Recorded::Duplicate {
    ///     txn.rollback().await?; // nothing to do
    ///     return Ok(());
    /// }
    /// // ... the consumer's writes on `txn` ...
    /// txn.enqueue(OutboxMessage::builder("shipments").key("order-7").value("{}"))
    ///     .await?;
    /// txn.commit().await?; // the inbox row, the writes and the new message, together
    /// # Ok(()) }
    /// ```
    ///
    /// Commit only after the message was processed; roll back on failure, so the id
    /// is forgotten and a redelivery processes it again. After [`Recorded::Duplicate`]
    /// the transaction is still usable (the insert was ignored, not failed).
    pub async fn record<X: InboxTarget>(
        &self,
        txn: &X,
        consumer: &str,
        message_id: Uuid,
    ) -> Result<Recorded, InboxError> {
        check_consumer(consumer)?;
        let backend = Backend::try_from(txn.get_database_backend())?;
        let processed_at = timestamp_to_datetime(Timestamp::now())
            .ok_or_else(|| DbErr::Custom("the system clock is out of range".to_owned()))?;
        let mut insert = Query::insert();
        let values: [Value; 3] = [consumer.into(), message_id.into(), processed_at.into()];
        insert
            .into_table(self.table.name())
            .columns([C::Consumer, C::MessageId, C::ProcessedAt])
            .values(values.map(Into::into))
            .map_err(|e| DbErr::Custom(format!("building the inbox insert: {e}")))?;
        if backend != Backend::MySql {
            insert.on_conflict(
                OnConflict::columns([C::Consumer, C::MessageId])
                    .do_nothing()
                    .to_owned(),
            );
        }
        let mut stmt = txn.get_database_backend().build(&insert);
        if backend == Backend::MySql {
            stmt = insert_ignore(stmt)?;
        }
        let result: ExecResult = txn.execute_raw(stmt).await?;
        match result.rows_affected() {
            0 => Ok(Recorded::Duplicate),
            1 => Ok(Recorded::New),
            n => Err(DbErr::Custom(format!(
                "the inbox insert affected {n} rows, expected 0 or 1"
            ))
            .into()),
        }
    }

    /// Whether `consumer` has processed `message_id` (as far as committed data shows).
    pub async fn is_processed<X: ConnectionTrait>(
        &self,
        conn: &X,
        consumer: &str,
        message_id: Uuid,
    ) -> Result<bool, InboxError> {
        check_consumer(consumer)?;
        Backend::try_from(conn.get_database_backend())?;
        let select = Query::select()
            .column(C::Consumer)
            .from(self.table.name())
            .and_where(Expr::col(C::Consumer).eq(consumer))
            .and_where(Expr::col(C::MessageId).eq(message_id))
            .to_owned();
        Ok(conn.query_one(&select).await?.is_some())
    }

    /// Deletes the ids of every consumer processed before `cutoff`; returns how many.
    ///
    /// Retention is a trade: a redelivery that arrives after its id was purged is
    /// processed again. Keep ids for longer than any record can be redelivered (the
    /// topic's retention, or the longest a consumer can lag and replay).
    pub async fn purge_processed_before<X: ConnectionTrait>(
        &self,
        conn: &X,
        cutoff: Timestamp,
    ) -> Result<u64, InboxError> {
        self.purge(conn, None, cutoff).await
    }

    /// Like [`purge_processed_before`](Self::purge_processed_before) for one consumer.
    pub async fn purge_consumer_processed_before<X: ConnectionTrait>(
        &self,
        conn: &X,
        consumer: &str,
        cutoff: Timestamp,
    ) -> Result<u64, InboxError> {
        check_consumer(consumer)?;
        self.purge(conn, Some(consumer), cutoff).await
    }

    async fn purge<X: ConnectionTrait>(
        &self,
        conn: &X,
        consumer: Option<&str>,
        cutoff: Timestamp,
    ) -> Result<u64, InboxError> {
        let backend = Backend::try_from(conn.get_database_backend())?;
        let at = timestamp_to_datetime(cutoff).ok_or(InboxError::CutoffOutOfRange(cutoff))?;
        let older = match backend {
            Backend::Postgres | Backend::MySql => Expr::col(C::ProcessedAt).lt(at),
            // SQLite keeps the time as text; `julianday()` reads every SQLite date format,
            // so the comparison does not depend on how a row's text was written.
            Backend::Sqlite => {
                Expr::cust_with_values(r#"julianday("processed_at") < julianday(?)"#, [at])
            }
        };
        let mut delete = Query::delete();
        delete.from_table(self.table.name()).and_where(older);
        if let Some(consumer) = consumer {
            delete.and_where(Expr::col(C::Consumer).eq(consumer));
        }
        let span = debug_span!("outbox_inbox.purge", consumer, %cutoff);
        let deleted = conn
            .execute(&delete)
            .instrument(span)
            .await?
            .rows_affected();
        Ok(deleted)
    }
}

/// `INSERT ... ` as `INSERT IGNORE ...`, MySQL's insert-or-ignore. Its affected-row
/// count is 0 for an ignored duplicate whatever the connection flags, unlike
/// `ON DUPLICATE KEY UPDATE`, which reports 1 for an unchanged row under sqlx's
/// `CLIENT_FOUND_ROWS`. `IGNORE` also turns data errors (truncation, out-of-range
/// values) into warnings; none can happen here, the consumer name being checked
/// against the column width and the other two values typed.
fn insert_ignore(stmt: Statement) -> Result<Statement, DbErr> {
    let Some(rest) = stmt.sql.strip_prefix("INSERT ") else {
        return Err(DbErr::Custom(format!(
            "unexpected inbox insert statement: {}",
            stmt.sql
        )));
    };
    Ok(Statement {
        sql: format!("INSERT IGNORE {rest}"),
        ..stmt
    })
}

/// Rolls back, logging a failure: the outcome to report is already known, and a
/// transaction whose rollback failed is discarded by the server with its connection.
async fn rollback(txn: DatabaseTransaction) {
    if let Err(error) = txn.rollback().await {
        tracing::warn!(%error, "rolling back an inbox transaction failed");
    }
}

#[cfg(test)]
#[path = "inbox_tests.rs"]
mod tests;
