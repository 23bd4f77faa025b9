//! The storage- and broker-independent core of the transactional outbox.
//!
//! A service writes its business row and an outbox row in one database transaction; a
//! relay later publishes pending rows to Kafka and deletes each row only after the
//! broker has acknowledged it. A crash anywhere leads to a republish, never to a loss,
//! and every record carries its stable message id in a header so consumers can drop the
//! duplicates.
//!
//! This crate holds what every store and publisher shares, with no I/O:
//!
//! | module | holds |
//! |---|---|
//! | [`message`], [`builder`] | [`OutboxMessage`], built and validated once at enqueue time |
//! | [`bucket`] | Kafka's murmur2 and the key → bucket mapping |
//! | [`headers`] | the versioned header encoding stored in each row |
//! | [`options`], [`enqueue_config`] | [`RelayOptions`] and [`EnqueueConfig`], validated builders |
//! | [`mod@fair_share`] | how many buckets each live relay should own |
//! | [`store`], [`publisher`], [`notifier`] | the traits a backend implements |
//! | [`error`] | retryable versus fatal errors |
//! | `testing` (feature) | in-memory store and publisher, and the reusable store contract suite |
//!
//! # Ordering model
//!
//! Each row is assigned one of `bucket_count` buckets at enqueue time: the partition's
//! bucket when the writer pins a partition, otherwise Kafka's murmur2 of the key, or of
//! the message id for keyless rows. One relay at a time holds the lease on a bucket and
//! publishes its rows oldest-first, deleting only the contiguous acknowledged prefix of
//! each batch. Equal keys therefore keep their enqueue order.
//!
//! # Message identity
//!
//! A store gets back the very [`OutboxMessage`] values it returned, so it may identify
//! rows by [`OutboxMessage::id`], by [`OutboxMessage::message_id`], or by a native handle
//! it stored in [`OutboxMessage::store_ref`]. An opaque field was chosen over a generic
//! message type: only exotic stores need it, and a type parameter would spread through
//! every relay, publisher and helper signature for everyone.
//!
//! # Message ids
//!
//! Generated ids are UUIDv7: time-ordered, so consumer-side inbox tables keyed by the id
//! insert at the right edge of their index instead of at random pages, and an id read
//! in a log tells roughly when the message was created. They are still unguessable
//! enough for deduplication (74 random bits per millisecond).
#![warn(missing_docs)]

pub mod bucket;
pub mod builder;
#[cfg(feature = "runtime")]
pub mod driver;
pub mod enqueue_config;
pub mod error;
pub mod fair_share;
pub mod headers;
pub mod message;
pub mod notifier;
pub mod options;
pub mod publisher;
pub mod relay;
pub mod store;
pub mod time;
pub mod validate;

#[cfg(feature = "testing")]
pub mod testing;

pub use builder::{IntoPayload, MessageBuilder, MessageError};
pub use enqueue_config::{EnqueueConfig, EnqueueConfigBuilder};
pub use error::{BoxError, Misconfiguration, PublishError, PublishErrorKind, StoreError};
pub use fair_share::{fair_share, fair_shares};
pub use headers::{Header, HeaderDecodeError, HeaderEncodeError, Headers};
pub use message::{OutboxMessage, StoreRef};
pub use notifier::{CommitNotifier, NoopNotifier};
pub use options::{OptionsError, RelayOptions, RelayOptionsBuilder};
pub use publisher::{PublishOutcome, Publisher};
pub use relay::{Command, Hint, RelayEvent, RelayMachine};
pub use store::{LeaseRequest, OutboxStore, PendingMetrics, RenewOutcome, StoreCapabilities};
pub use time::Timestamp;
pub use uuid::Uuid;
