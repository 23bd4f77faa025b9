//! sea-orm integration for the transactional outbox: entities, a migration, enqueue in
//! the business transaction, commit hooks, and the relay's store, for PostgreSQL,
//! MySQL/MariaDB and SQLite.
//!
//! | item | what it is |
//! |---|---|
//! | [`migrations()`] | every migration of one outbox, oldest first, to append to your `Migrator`: [`Migration`] (messages, leases, relays) and [`ParkedMigration`] (parked rows) |
//! | [`entity`] | sea-orm entities for the tables (default names) |
//! | [`OutboxTables`], [`SqlNames`] | custom schema and table names (part of `outbox_core::OutboxSchema`), validated and always quoted |
//! | [`Outbox`] | the writer: validates, buckets and inserts messages in your transaction |
//! | [`OutboxTransaction`] | a transaction that wakes the local relay after it commits |
//! | [`NotifyAfterCommit`] | what an enqueue through a plain `DatabaseTransaction` returns: notify after your commit |
//! | [`SeaOrmStore`] | the `OutboxStore` the relay runs on: leases, heartbeats, batches, metrics, parking; and `ParkedRows`, the operator's list / show / requeue / discard; `status()`, the operator's view of relays, leases and rows per bucket (`outbox_core::OutboxStatus`). Its writer (`BindWriter`) is an [`Outbox`] on its schema, handed out bound by `Relay::builder(store, ..).spawn()` as `handle.outbox()` |
//! | [`connect()`], [`ConnectSettings`] | pools set up for the outbox: SQLite in WAL mode with one writer path, the relay's pool sized for its lanes, quiet sqlx logging |
//! | [`ddl`] | the schema as plain SQL per backend (also checked in under `migrations/`) |
//! | [`Inbox`] | consumer side: runs a handler once per `(consumer, message id)`, in the consumer's transaction |
//! | [`InboxMigration`] / [`InboxTable`] | the opt-in inbox table (`outbox_inbox`), its migration and custom names |
//! | [`MessageIdHeader`] | reads the message id the relay stamps on each record |
//!
//! # A complete example
//!
//! Add the migrations to your `Migrator`, start a relay on the store, and enqueue in the
//! same transaction as the business change:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use outbox_core::driver::Relay;
//! use outbox_core::{OutboxMessage, OutboxSchema, Publisher, RelayOptions};
//! use outbox_seaorm::{EnqueueError, SeaOrmStore};
//! use sea_orm::{ConnectionTrait, Database, Statement};
//! use sea_orm_migration::{MigrationTrait, MigratorTrait};
//!
//! pub struct Migrator;
//!
//! impl MigratorTrait for Migrator {
//!     fn migrations() -> Vec<Box<dyn MigrationTrait>> {
//!         let mut all: Vec<Box<dyn MigrationTrait>> = vec![/* your own migrations */];
//!         // The outbox's tables, the parked table included.
//!         all.extend(outbox_seaorm::migrations(OutboxSchema::default()));
//!         all
//!     }
//! }
//!
//! # async fn run(publisher: impl Publisher) -> Result<(), Box<dyn std::error::Error>> {
//! let db = Database::connect("postgres://app@localhost/app").await?;
//! Migrator::up(&db, None).await?;
//!
//! // The relay: one per process. Writers and relays share one schema (the table names,
//! // the bucket count and the message-id header), given once, to the store.
//! let schema = OutboxSchema::builder().bucket_count(8).build()?;
//! let store = SeaOrmStore::new(db.clone(), schema.clone())?;
//! let options = RelayOptions::builder().schema(schema).build()?; // or leave `.options` out
//! let relay = Relay::builder(store, publisher).options(options).spawn()?;
//! // The writer, on the store's schema and already bound to the relay's notifier.
//! let outbox = relay.outbox().clone();
//!
//! // A business change and its message, atomically. The relay is woken only after
//! // the commit succeeded; a rollback publishes nothing.
//! let txn = outbox.begin(&db).await?;
//! txn.execute_raw(Statement::from_sql_and_values(
//!     txn.get_database_backend(),
//!     "INSERT INTO orders (id, total) VALUES ($1, $2)",
//!     [7.into(), 1990.into()],
//! ))
//! .await?;
//! txn.enqueue(
//!     OutboxMessage::builder("orders")
//!         .key("order-7")
//!         .value(r#"{"id":7,"total":1990}"#)
//!         .header("trace-id", "4bf92f35"),
//! )
//! .await?;
//! txn.commit().await?;
//!
//! // The same with a closure, in the style of `TransactionTrait::transaction`: `?` works
//! // on sea-orm calls and on enqueue alike (`EnqueueError` converts from `DbErr`; an
//! // error type of your own needs `From<DbErr>` and `From<EnqueueError>`).
//! outbox
//!     .transaction::<_, (), EnqueueError>(&db, |txn| {
//!         Box::pin(async move {
//!             txn.execute_unprepared("UPDATE orders SET total = 0 WHERE id = 7").await?;
//!             txn.enqueue(OutboxMessage::builder("orders").key("order-7").value("{}"))
//!                 .await?;
//!             Ok(())
//!         })
//!     })
//!     .await?;
//!
//! // On shutdown (or `relay.stop_on(ctrl_c, grace)`): finish the in-flight work, hand
//! // the leases back.
//! relay.stop(Duration::from_secs(10)).await?;
//! # Ok(()) }
//! ```
//!
//! `examples/quickstart.rs` is the same as a whole service: connect, migrate, relay,
//! one transaction, graceful stop on Ctrl-C.
//!
//! `OutboxTransaction` implements `ConnectionTrait`, so entities and `ActiveModel`s take
//! `&txn` like any transaction. Keys and values arrive serialized; the relay forwards the
//! bytes untouched.
//!
//! # When the relay hears about a commit
//!
//! sea-orm has no commit interceptors, so the hook is the [`OutboxTransaction`] wrapper:
//! it collects the distinct buckets of every row enqueued in it and hands them to the
//! notifier after a successful commit. A rollback, a failed commit or a transaction
//! dropped without commit notifies nobody. Enqueueing on a plain `DatabaseConnection`
//! (implicit commit) notifies right after the insert. Rows written by other processes
//! or by other languages are found by the relay's polling (every `poll_interval`, one
//! second by default).
//!
//! A plain sea-orm transaction (`db.begin()`, a `&DatabaseTransaction`) cannot tell
//! anyone that it committed, so enqueueing through it returns a `#[must_use]`
//! [`NotifyAfterCommit`] instead of [`Enqueued`]: dropping it warns at compile time.
//! Hand it to [`Outbox::notify`] once your commit succeeded (else the relay finds the
//! rows at its next poll):
//!
//! ```no_run
//! # async fn demo(db: &sea_orm::DatabaseConnection, outbox: &outbox_seaorm::Outbox) -> Result<(), Box<dyn std::error::Error>> {
//! use outbox_core::OutboxMessage;
//! use sea_orm::TransactionTrait;
//!
//! let txn = db.begin().await?;
//! let receipt = outbox
//!     .enqueue(&txn, OutboxMessage::builder("orders").key("order-9").value("{}"))
//!     .await?;
//! txn.commit().await?;
//! outbox.notify(&receipt); // only after the commit succeeded
//! # Ok(()) }
//! ```
//!
//! # Custom schema and table names
//!
//! ```
//! use outbox_core::OutboxSchema;
//! use outbox_seaorm::{OutboxTables, migrations};
//!
//! let tables = OutboxTables::builder()
//!     .schema("messaging")
//!     .messages("orders_outbox")
//!     .leases("orders_outbox_leases")
//!     .relays("orders_outbox_relays")
//!     .parked("orders_outbox_parked")
//!     .build()?;
//! let schema = OutboxSchema::builder().tables(tables).build()?;
//! // The same `schema` for the store, the writer, the relay options and the publisher.
//! let for_your_migrator = migrations(schema.clone());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Names must be plain identifiers (ASCII letters, digits, `_`, at most 63 bytes) and are
//! always quoted, so an odd or hostile name is refused, never spliced into SQL. The
//! entities keep the default names; this crate's own statements are built with sea-query
//! from [`OutboxTables`].
//!
//! # Schema
//!
//! | table | columns |
//! |---|---|
//! | `outbox_messages` | `id` BIGINT auto-increment PK (order within a bucket), `message_id` UUID, `bucket` INT, `topic` VARCHAR(249), `key` / `value` / `headers` nullable BLOB, `partition` nullable INT, `created_at` timestamp; index `(bucket, id)` |
//! | `outbox_leases` | `bucket` INT PK, `owner` VARCHAR(128) nullable, `expires_at_ms` BIGINT |
//! | `outbox_relays` | `relay_id` VARCHAR(128) PK, `last_seen_at_ms` BIGINT |
//! | `outbox_parked` | `id` BIGINT PK (the row's id in the messages table, kept so a requeue puts it back in its place), the messages table's other columns with the same types, `error` nullable TEXT, `attempts` INT, `first_failed_at_ms` / `last_failed_at_ms` nullable BIGINT, `held_behind` nullable BIGINT (the parked row it waits behind), `parked_at_ms` BIGINT; index `(bucket, id)` |
//!
//! The parked table holds rows a relay set aside: rows the publisher refused for good, and
//! the later rows of their keys, which wait there so the key's order survives. They stay
//! until an operator requeues or discards them. [`ParkedMigration`] creates it, so a
//! database migrated by an earlier version gains it the next time its `Migrator` runs.
//!
//! **Time unit.** Lease expiry, heartbeats and the parked table's failure and park
//! times are BIGINT *milliseconds since the Unix epoch, UTC*, the unit of [`outbox_core::Timestamp`] (the .NET original uses ticks; an
//! epoch-millisecond integer is readable everywhere). Integers compare the same on every
//! backend, so expiry checks never depend on time zones or timestamp precision. To read
//! them: `to_timestamp(expires_at_ms / 1000.0)` (PostgreSQL),
//! `FROM_UNIXTIME(expires_at_ms / 1000)` (MySQL/MariaDB),
//! `datetime(expires_at_ms / 1000, 'unixepoch')` (SQLite).
//!
//! **`created_at`** is `timestamptz` on PostgreSQL; `DATETIME(6)` holding UTC on
//! MySQL/MariaDB, which have no type with an offset (`TIMESTAMP` would follow the
//! session time zone and end in 2038); RFC 3339 text on SQLite. Milliseconds are kept.
//!
//! The exact DDL per backend is in [`ddl`] and in the repository's `migrations/`
//! directory, generated from the migration and checked by a test.
//!
//! # The store
//!
//! [`SeaOrmStore`] implements every part of `OutboxStore`, including both optional
//! capabilities:
//!
//! * **Leases**: an acquisition heartbeats into `outbox_relays`, reads the lease rows and
//!   heartbeats, and executes the plan of [`outbox_core::plan_acquisition`] (each relay's
//!   fair share follows from the relays seen within one lease duration). Its claims are
//!   one guarded conditional update for all claimed buckets (`owner IS NULL OR
//!   expires_at_ms <= now OR owner = me`), whose affected-row count decides what was
//!   granted. Every call is a few short autocommit statements, at most nine whatever the
//!   bucket count: no row lock or transaction outlives a statement.
//! * **Renewal** extends only leases the relay still owns unexpired, refreshes the
//!   heartbeat, and reports the ones it lost.
//! * **Pending probe**: one statement of one-row index seeks for all owned buckets, which
//!   also detects rows in buckets `>= bucket_count` (a fatal misconfiguration).
//! * **Batches** are read oldest first by id; **mark published** deletes exactly the
//!   listed rows (by id *and* message id), never an id range, so a lower id that
//!   committed after the batch was read stays pending.
//! * **Backlog metrics**: one `COUNT(*)`, `MIN(created_at)` query. On SQLite, whose
//!   timestamps are text, the minimum is taken over `julianday(created_at)`, which reads
//!   every SQLite date format; a value it cannot parse is skipped.
//!
//! # Cargo features
//!
//! One per backend: `postgres`, `mysql`, `sqlite`, all three by default. A service turns
//! off the others (`default-features = false, features = ["postgres"]`, or the `outbox`
//! facade, which enables no backend unless named) and compiles no other driver: no SQLite
//! C library, no MySQL protocol. The SQL of every backend (DDL, statements) is always
//! compiled; only the drivers and what needs them (SQLite pragmas, per-backend pool
//! options, recognising a driver's error codes) are switched. [`connect()`] refuses a URL
//! whose backend is off with `DbErr::BackendNotSupported` naming the feature.
//!
//! `otel` (off by default): the W3C trace context of the current `tracing` span is
//! stored in every enqueued row's headers (outbox-core's `otel`, see
//! `outbox_core::trace_context`), and [`Inbox::process_record`] runs the handler in a
//! consumer span parented to the span that enqueued the message. See `docs/tracing.md`.
//!
//! # Connecting, and SQLite
//!
//! Connect with [`connect()`] (the application's pool) and
//! [`ConnectSettings::for_relay`] (the store's pool): on SQLite they switch the file to
//! WAL with `synchronous=NORMAL` (durable across process crashes; see [`connect`](mod@connect)
//! for the operating-system-crash window), set a busy timeout and keep one writer path;
//! on every backend they size the store's pool at `max_concurrent_lanes + 2` (one
//! connection per lane, one for lease calls, one for the backlog sampler) and log
//! statements at DEBUG, so a normal run prints no sqlx warning.
//!
//! sea-orm gives a SQLite pool one connection unless told otherwise, and SQLite lets one
//! writer at a time in. An open `OutboxTransaction` therefore holds the connection of
//! its pool: give the store a pool of its own, as above, and
//! [`SeaOrmStore::with_metrics_connection`] another if backlog metrics must never wait.
//!
//! # Writing rows without this library
//!
//! Writers in other languages, raw SQL and bulk loads are published too: the relays
//! find committed rows by polling. They must fill the columns as this crate does:
//!
//! * `bucket` with the **same bucket count** every relay uses:
//!   * explicit partition `p`: `(p & 0x7fffffff) % bucket_count`;
//!   * otherwise, with a key (an empty key counts as a key):
//!     `(murmur2(key_bytes) & 0x7fffffff) % bucket_count`, where `murmur2` is Kafka's
//!     (the Java client's `Utils.murmur2`, seed `0x9747b28c`);
//!   * keyless: the same hash over the 16 bytes of `message_id` in RFC 4122 (big-endian)
//!     order.
//!
//!   A row in a bucket `>= bucket_count` stops every relay with a misconfiguration error
//!   instead of waiting forever.
//! * `message_id`: a fresh UUID per message (v7 recommended). PostgreSQL `uuid`; MySQL/
//!   MariaDB `BINARY(16)` in RFC 4122 byte order (`UNHEX(REPLACE(uuid, '-', ''))`);
//!   SQLite a 16-byte blob.
//! * `topic` a valid Kafka topic; `key` / `value` the serialized bytes (`NULL` key:
//!   keyless, `NULL` value: tombstone); `headers` `NULL` or the encoding of
//!   `outbox_core::Headers::encode`; `partition` `NULL` or the partition.
//! * `created_at` the creation time (UTC on MySQL/MariaDB; RFC 3339 with offset on
//!   SQLite).
//! * `id` left to the database. On MySQL/MariaDB quote `key`, `value` and `partition`
//!   with backticks: they are reserved words.
//!
//! Insert in the same transaction as the business change. Never update or delete
//! pending rows: the relay deletes them after the broker acknowledged them.
//!
//! On PostgreSQL the transaction must hold a transaction id before the insert draws the
//! `id`: write the business row first, or run `SELECT pg_current_xact_id()` before the
//! outbox insert. The store starts a cursor read past rows it proved final, from the
//! snapshots of earlier reads, and that proof covers only transactions that had an xid
//! when they drew their ids; an insert that is its transaction's first write draws the id
//! an instant before the xid, and a read in that instant could let a later row of the same
//! key be published first. [`Outbox`] and [`insert_rows`] take the xid in the same
//! statement. MySQL/MariaDB (always read from the head) and SQLite (one writer at a time)
//! need nothing.
//!
//! # Consumer-side deduplication
//!
//! Delivery is at least once, so a consumer sees some records twice. [`Inbox`] makes the
//! second delivery a no-op: it inserts `(consumer, message_id)` into the inbox table in
//! the consumer's transaction *before* running the handler, and commits both together.
//! A redelivery finds the row and skips the handler; a handler error rolls the row back
//! with the handler's writes, so the redelivery processes the message again. A
//! concurrent duplicate waits on the row until the first transaction ends, so the
//! handler never runs twice side by side.
//!
//! The table is opt-in: add [`InboxMigration`] to your `Migrator` (it does not change
//! [`Migration`]). Columns: `consumer` VARCHAR(128), `message_id` (stored as in
//! `outbox_messages`), `processed_at` (UTC); primary key `(consumer, message_id)`, an
//! index on `processed_at`. The DDL is in [`ddl::inbox_create_statements`] and the
//! repository's `migrations/inbox/`.
//!
//! ```no_run
//! use outbox_seaorm::{Inbox, InboxError, InboxMigration, MessageIdHeader, Processed};
//! use outbox_core::Timestamp;
//! use sea_orm::{ConnectionTrait, Database, DbErr};
//! use sea_orm_migration::{MigrationTrait, MigratorTrait};
//!
//! pub struct Migrator;
//!
//! impl MigratorTrait for Migrator {
//!     fn migrations() -> Vec<Box<dyn MigrationTrait>> {
//!         vec![Box::new(InboxMigration::default())]
//!     }
//! }
//!
//! # async fn run(headers: std::collections::BTreeMap<String, Vec<u8>>) -> Result<(), Box<dyn std::error::Error>> {
//! let db = Database::connect("postgres://app@localhost/app").await?;
//! Migrator::up(&db, None).await?;
//! let inbox = Inbox::default();
//!
//! // For each consumed record (here rskafka's `BTreeMap<String, Vec<u8>>` headers):
//! let message_id = MessageIdHeader::default().find(&headers)?;
//! let outcome = inbox
//!     .process::<_, _, (), DbErr>(&db, "billing", message_id, |txn| {
//!         Box::pin(async move {
//!             txn.execute_unprepared("UPDATE accounts SET balance = balance - 10 WHERE id = 1")
//!                 .await?;
//!             Ok(())
//!         })
//!     })
//!     .await;
//! match outcome {
//!     Ok(Processed::Handled(())) | Ok(Processed::Duplicate) => { /* commit the offset */ }
//!     Err(InboxError::Handler(e)) => { /* rolled back: retry or dead-letter */ }
//!     Err(e) => return Err(e.into()),
//! }
//!
//! // Retention: forget ids older than any record can be redelivered.
//! let week_ago = Timestamp::now().saturating_sub(std::time::Duration::from_secs(7 * 86_400));
//! inbox.purge_processed_before(&db, week_ago).await?;
//! # Ok(()) }
//! ```
//!
//! [`Inbox::process_record`] does the same from the record's topic and headers: it reads
//! the message id itself and, with the feature `otel`, continues the producer's trace.
//!
//! To enqueue outgoing messages in the same transaction (consume, transform, produce),
//! begin an [`OutboxTransaction`] yourself and call [`Inbox::record`] in it first.
//! Consumer names are 1 to 128 characters, without control characters or surrounding
//! whitespace, and compare exactly on every backend.
#![warn(missing_docs)]

mod backend;
pub mod connect;
#[cfg(feature = "postgres")]
mod copy;
pub mod ddl;
mod ddl_migration;
mod enqueue;
pub mod entity;
mod error;
mod inbox;
mod migration;
mod outbox;
mod store;
mod tables;
mod transaction;
mod write_txn;

pub use backend::{Backend, UnsupportedBackend};
pub use connect::{ConnectSettings, connect};
pub use ddl_migration::DdlMigration;
pub use enqueue::{EnqueueTarget, Hook, NotifyAfterCommit, insert_rows};
pub use error::EnqueueError;
pub use inbox::{
    ConsumerNameError, DEFAULT_INBOX_TABLE, INBOX_MIGRATION_NAME, Inbox, InboxError,
    InboxMigration, InboxTable, InboxTableBuilder, InboxTarget, MessageIdError, MessageIdHeader,
    Processed, Recorded,
};
pub use migration::{
    MIGRATION_NAME, Migration, PARKED_MIGRATION_NAME, ParkedMigration, ParkedTable, migrations,
};
pub use outbox::{Enqueued, Outbox};
pub use store::{SeaOrmStore, StoreSetupError};
pub use tables::{
    DEFAULT_LEASES_TABLE, DEFAULT_MESSAGES_TABLE, DEFAULT_PARKED_TABLE, DEFAULT_RELAYS_TABLE,
    MAX_IDENTIFIER_LEN, NameRole, OutboxTables, OutboxTablesBuilder, SqlNames, TableNameError,
};
pub use transaction::OutboxTransaction;
