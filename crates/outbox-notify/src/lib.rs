//! Cross-process commit notifications for the transactional outbox.
//!
//! A relay learns about new rows from its local [`LocalNotifier`] (commits in its own
//! process) and from polling. A commit in process A to a bucket leased by the relay in
//! process B wakes nobody until B's next poll. A [`NotificationTransport`] closes that gap:
//! every process broadcasts the bucket ids it committed, and every relay wakes for the
//! ones it owns. Hints are advisory only: they may be lost, duplicated or reordered, they
//! never let a relay publish without a lease, and polling always stays on, covering
//! startup, lost hints and outages.
//!
//! **The contract** ([`NotificationTransport`]): `publish(&[i32])` broadcasts bucket ids
//! (`-1` = unknown, "look in all your buckets"); `listen(callback)` calls back once per
//! received id until its future is dropped. Both are cancel-safe; no callback runs after
//! `listen` has returned or been dropped.
//!
//! **The workers** ([`spawn_workers`], or [`RelayBuilderExt::transport`] /
//! [`spawn_relay_with_transport`] for relay and workers in one call): a sender drains the notifier's coalescing buffer (commit
//! callbacks only set bits: no allocation, no I/O, no await; a burst of commits to a
//! bucket becomes one id, with no debounce delay) and a listener hands received ids to
//! the notifier, which wakes the relay only for buckets it may own and never broadcasts
//! them again (no echo loops). A failed send drops that batch; a failed or ended
//! subscription is retried; both after the relay's error backoff. Stopping the relay
//! aborts both workers and drops the transport; buffered hints are not flushed.
//!
//! **Transports**: `postgres::PostgresTransport` (feature `postgres`, LISTEN/NOTIFY via
//! sqlx) and `redis::RedisTransport` (feature `redis`, pub/sub), on a [`ChannelName`] per
//! outbox table and environment, with the compact payload of [`codec`]. Feature `testing`
//! adds the in-process `testing::MemoryBus`.
//!
//! # Example
//!
//! Every process that runs a relay for the table does this (a process that only writes
//! starts [`spawn_workers`] with a `LocalNotifier::new(bucket_count)` of its own and
//! notifies that):
//!
//! ```no_run
//! use std::time::Duration;
//! use outbox_core::{CommitNotifier, OutboxSchema, OutboxStore, Publisher, RelayOptions};
//! use outbox_core::driver::Relay;
//! use outbox_notify::{ChannelName, RelayBuilderExt as _};
//! use outbox_notify::postgres::PostgresTransport;
//!
//! async fn run(store: impl OutboxStore, publisher: impl Publisher)
//!     -> Result<(), Box<dyn std::error::Error>> {
//!     // The same schema (bucket count, ...) and channel on every writer and relay of the table.
//!     let schema = OutboxSchema::builder().bucket_count(8).build()?;
//!     let options = RelayOptions::builder().schema(schema).build()?;
//!     let channel = ChannelName::for_outbox("outbox_messages", "prod")?;
//!     let transport =
//!         PostgresTransport::builder(channel, "postgres://app@db.internal:5432/orders").build()?;
//!     // `.spawn()` instead for a store with a bound writer (`handle.outbox()`), such as
//!     // `outbox_seaorm::SeaOrmStore`: its commits are broadcast too.
//!     let relay = Relay::builder(store, publisher)
//!         .options(options)
//!         .transport(transport)
//!         .spawn_unbound()?;
//!
//!     // Writers: after each successful commit, name the buckets of the rows it inserted
//!     // (or call `notify_committed()` when they are not known).
//!     let notifier = relay.notifier();
//!     notifier.notify_buckets(&[3, 5]);
//!
//!     // On shutdown: the relay stops, then its workers and connections go with it.
//!     relay.stop(Duration::from_secs(10)).await?;
//!     Ok(())
//! }
//! ```
//!
//! [`LocalNotifier`]: outbox_core::driver::LocalNotifier
#![warn(missing_docs)]

mod backoff;
#[cfg(any(feature = "postgres", feature = "redis"))]
mod builder;
mod channel;
pub mod codec;
#[cfg(any(feature = "postgres", feature = "redis"))]
mod config;
#[cfg(any(feature = "postgres", feature = "redis"))]
mod connection;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
mod register;
#[cfg(feature = "testing")]
pub mod testing;
mod transport;
mod workers;

pub use backoff::{Backoff, BackoffError};
#[cfg(any(feature = "postgres", feature = "redis"))]
pub use builder::TransportBuilder;
pub use channel::{ChannelError, ChannelName, MAX_CHANNEL_LEN};
#[cfg(any(feature = "postgres", feature = "redis"))]
pub use config::ConfigError;
pub use register::{RelayBuilderExt, spawn_relay_with_transport};
pub use transport::{NotificationTransport, TransportError};
pub use workers::{NoRuntime, Workers, spawn_workers};
