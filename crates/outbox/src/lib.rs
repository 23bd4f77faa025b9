//! The transactional outbox in one dependency.
//!
//! A service writes its business row and an outbox row in one database transaction; a
//! relay publishes pending rows to Kafka and deletes each row only after the broker
//! acknowledged it, so a crash leads to a republish, never to a loss, and every record
//! carries a stable message id for the consumers' deduplication.
//!
//! This crate re-exports the layered crates under one name: the core API (messages,
//! schema, options, the relay) at the top level, the optional parts as modules, and a
//! [`prelude`]. Name the database you run on; nothing else needs choosing:
//!
//! ```toml
//! [dependencies]
//! outbox = { version = "0.1", features = ["postgres"] }
//! ```
//!
//! # Features
//!
//! | feature | default | brings |
//! |---|---|---|
//! | `kafka` | yes | `outbox::kafka`: the Kafka publisher (acks=all, idempotent) |
//! | `gzip`, `snappy` | yes | Kafka batch compression, pure Rust (each implies `kafka`) |
//! | `lz4`, `zstd` | no | Kafka batch compression that builds C libraries (each implies `kafka`) |
//! | `postgres`, `mysql`, `sqlite` | no | the database driver for `outbox::seaorm` (each implies `seaorm`); `sqlite` builds the SQLite C library |
//! | `seaorm` | no | `outbox::seaorm`: writer, store, migrations, inbox, and sea-orm itself; no driver without a backend feature |
//! | `notify-postgres`, `notify-redis` | no | `outbox::notify`: wake relays in other processes over LISTEN/NOTIFY or Redis pub/sub |
//! | `prometheus` | no | `outbox::metrics::prometheus`: an exporter for the relay's instruments |
//! | `json` | no | `serde_json` helpers on the message builder |
//! | `otel` | no | W3C trace context through the outbox: captured from the current `tracing` span at enqueue into the row's headers, a `send {topic}` producer span linked to it, the inbox's `process_record` span parented to it, and `outbox::trace_context` for other consumers (pulls in `opentelemetry`, `opentelemetry_sdk`'s propagators and `tracing-opentelemetry`; see `docs/tracing.md`) |
//! | `testing` | no | in-memory store, publisher and notification bus (`outbox::testing`, `outbox::notify::testing`) |
//!
//! Like sqlx, no database backend is on by default: a PostgreSQL service compiles no
//! SQLite or MySQL code. Connecting a URL whose backend is off, or choosing a
//! compression codec that is off, fails with an error that names the feature to enable.
//!
//! # Layout
//!
//! | path | from |
//! |---|---|
//! | `outbox::*` ([`OutboxMessage`], [`OutboxSchema`], [`RelayOptions`], [`Publisher`], [`OutboxStore`], ...) and its modules ([`driver`], [`options`], [`park`], ...) | `outbox-core` |
//! | `outbox::kafka` | `outbox-kafka` |
//! | `outbox::seaorm` (with `outbox::seaorm::sea_orm` and `outbox::seaorm::sea_orm_migration`) | `outbox-seaorm` |
//! | `outbox::notify` | `outbox-notify` |
//! | [`outbox::prelude`](prelude) | the types and traits a service names most |
//!
//! # Example
//!
//! Migrate, start a relay, and enqueue in the business transaction (features
//! `postgres` and the defaults):
//!
//! ```no_run
//! use outbox::prelude::*;
//! use outbox::seaorm::sea_orm_migration::{MigrationTrait, MigratorTrait};
//!
//! struct Migrator;
//!
//! impl MigratorTrait for Migrator {
//!     fn migrations() -> Vec<Box<dyn MigrationTrait>> {
//!         let mut all: Vec<Box<dyn MigrationTrait>> = vec![/* your own migrations */];
//!         all.extend(outbox::seaorm::migrations(OutboxSchema::default()));
//!         all
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let db = outbox::seaorm::connect("postgres://app@localhost/app").await?;
//! Migrator::up(&db, None).await?;
//!
//! // One relay per process. The store knows the schema (table names, bucket count,
//! // message-id header); the relay and its writer take it from there.
//! let store = SeaOrmStore::new(db.clone(), OutboxSchema::default())?;
//! let publisher = KafkaPublisher::builder(["localhost:9092"])
//!     .compression(Compression::Snappy)
//!     .build()?;
//! let relay = Relay::builder(store, publisher).spawn()?;
//!
//! // The business change and its message commit together, or not at all; the commit
//! // wakes the relay through the writer the handle gives.
//! let txn = relay.outbox().begin(&db).await?;
//! txn.enqueue(OutboxMessage::builder("orders").key("order-7").value(r#"{"id":7}"#))
//!     .await?;
//! txn.commit().await?;
//!
//! relay.stop(std::time::Duration::from_secs(10)).await?;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub use outbox_core::*;

/// The Kafka publisher (`outbox-kafka`): acks=all, idempotent producer, Kafka's
/// partitioner, batch compression (feature `kafka`, default).
#[cfg(feature = "kafka")]
pub mod kafka {
    pub use outbox_kafka::*;
}

/// The sea-orm integration (`outbox-seaorm`): the writer ([`Outbox`]), the relay's
/// store ([`SeaOrmStore`]), migrations, the inbox, and
/// the sea-orm crates it is built on (feature `seaorm`, implied by `postgres`, `mysql`
/// and `sqlite`).
#[cfg(feature = "seaorm")]
pub mod seaorm {
    pub use outbox_seaorm::*;
    /// sea-orm, with the drivers this build enables: connections, transactions,
    /// statements.
    pub use sea_orm;
    /// sea-orm-migration: `MigratorTrait` and `SchemaManager` for the outbox migrations.
    pub use sea_orm_migration;
}

/// Cross-process commit notifications (`outbox-notify`): PostgreSQL LISTEN/NOTIFY
/// (feature `notify-postgres`) and Redis pub/sub (feature `notify-redis`).
#[cfg(any(feature = "notify-postgres", feature = "notify-redis"))]
pub mod notify {
    pub use outbox_notify::*;
}

/// The types and traits a service names most: `use outbox::prelude::*;`.
pub mod prelude {
    pub use outbox_core::driver::{Relay, RelayHandle, RelayState};
    pub use outbox_core::{
        OutboxMessage, OutboxSchema, OutboxStore, Publisher, RelayOptions, StoreError,
    };

    #[cfg(any(feature = "notify-postgres", feature = "notify-redis"))]
    pub use outbox_notify::RelayBuilderExt;

    #[cfg(feature = "kafka")]
    pub use outbox_kafka::{Compression, KafkaPublisher};

    #[cfg(feature = "seaorm")]
    pub use outbox_seaorm::{
        ConnectSettings, EnqueueError, Outbox, OutboxTransaction, SeaOrmStore,
    };

    #[cfg(feature = "seaorm")]
    pub use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait};
}
