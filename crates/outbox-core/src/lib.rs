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
//! | [`backoff`] | the exponential backoff every retry loop uses |
//! | [`headers`] | the versioned header encoding stored in each row |
//! | [`schema`] | [`OutboxSchema`]: tables, bucket count and message-id header, the one value writers and relays share |
//! | [`options`], [`enqueue_config`] | [`RelayOptions`] and [`EnqueueConfig`], validated builders (each carries the schema) |
//! | [`validate`] | every shared limit and name rule (topics, headers, table names, bucket count, labels) |
//! | [`wire_size`] | a record's size on the wire, one computation for the writer's check and the publisher |
//! | [`mod@fair_share`] | how many buckets each live relay should own |
//! | [`lease_plan`] | the lease policy: which buckets an acquisition releases, extends and claims; the liveness and expiry rules |
//! | [`status`] | [`OutboxStatus`]: the operator's view (live relays, lease holders, pending and parked rows per bucket, rows outside the bucket count), assembled from raw rows by the relays' own rules |
//! | [`store`], [`publisher`], [`notifier`] | the traits a backend implements |
//! | [`park`] | setting aside rows that can never be published, the hold-key rule, requeue and discard |
//! | [`error`] | retryable versus fatal errors |
//! | [`relay`] | [`RelayMachine`]: every relay decision as a pure state machine |
//! | [`writer`] | [`BindWriter`]: a store that hands out its writer bound to the relay's notifier |
//! | `driver` (feature `runtime`, default) | `Relay::builder(store, publisher).spawn()`: the thin tokio shell, its awaitable state (`ready`, `drained`, `stop_on`), and the local commit notifier |
//! | `trace_context` (feature `otel`) | the W3C trace context captured at enqueue into the row's headers, and continued by consumers |
//! | `testing` (feature) | in-memory store and publisher, and the reusable store contract suite |
//!
//! # Starting a relay
//!
//! ```no_run
//! # #[cfg(all(feature = "runtime", feature = "testing"))]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use outbox_core::driver::Relay;
//! use outbox_core::testing::{MemoryPublisher, MemoryStore};
//!
//! // With a real store (`outbox_seaorm::SeaOrmStore`) and publisher
//! // (`outbox_kafka::KafkaPublisher`) the calls are the same.
//! let relay = Relay::builder(MemoryStore::new(), MemoryPublisher::new()).spawn()?;
//! let writer = relay.outbox().clone(); // the store's writer, bound to this relay
//! relay.ready().await?;
//! relay
//!     .stop_on(async { let _ = tokio::signal::ctrl_c().await; }, Duration::from_secs(10))
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! # The relay state machine
//!
//! [`RelayMachine`] decides, the driver (or a simulation) does. Time is always an
//! argument ([`Now`]: the wall clock for the stamps stores keep, a monotonic clock for
//! local deadlines); the machine never reads a clock, sleeps or touches I/O, so every rule
//! is unit-tested with explicit instants and the whole relay is simulated deterministically.
//!
//! **Lanes.** Every owned bucket is a *lane*: its own little pipeline and its own backoff.
//! A lane fetches batch N+1 while batch N is being published, publishes its batches one
//! after the other in order, and deletes each acknowledged prefix while the next batch is
//! out; so each lane keeps a store call and a publish busy at once. Lanes run side by
//! side, at most [`max_concurrent_lanes`](RelayOptions::max_concurrent_lanes) of them
//! holding work (1 = one bucket at a time); when more are ready than that, each gives its
//! slot up after one batch, so every ready bucket is served in turn. A failing lane backs
//! off alone, longer with each failure in a row, and only its own success resets it: one
//! row the broker keeps refusing holds up its own bucket and nothing else.
//!
//! **State.** *Leases*: the owned buckets, one expiry for all of them (start of the
//! granting call + lease duration), the rebalance and renewal deadlines. *Discovery*: the
//! next probe. *Lanes*: per owned bucket, whether it is ready (known to hold rows), its
//! store call and publish in flight, the fetched batch waiting for the publish slot, the
//! acknowledged prefixes waiting to be deleted, its cursor, failures and backoff. *Life*:
//! running, stopping, stopped or failed.
//!
//! **Events in**, each with the current time: the [`Outcome`] of each command below
//! ([`RelayMachine::handle`]; lane outcomes name their bucket), a timeout, a commit
//! [`Hint`] (one bucket, or unknown), and shutdown.
//!
//! **Events out** ([`RelayMachine::poll_event`]): besides logs and metrics, they carry
//! everything the driver must follow (readiness after the first acquisition, every change
//! of the owned set), so the driver makes no decision of its own.
//!
//! **Commands out** ([`RelayMachine::poll_command`], called until it returns `None`; many
//! may be in flight):
//! 1. Relay level: one lease call at a time, `AcquireLeases` when the rebalance deadline
//!    passed (heartbeat, fair-share claim and release, extension, as planned by
//!    [`plan_acquisition`]) or `RenewLeases` when the renewal deadline passed (stores
//!    with the renewal capability); and beside it `ProbePending` over all owned buckets
//!    when discovery is due (poll interval, a new bucket, or an unknown hint).
//! 2. Per lane: `DeletePublished` for exactly an acknowledged prefix, `ParkRows` for a row
//!    that failed for good `max_publish_attempts` times (and for rows held behind a parked
//!    row of their key), `Publish` of the fetched batch, `LoadHolds` (the bucket's parked
//!    keys, once per ownership term and when a park was refused or uncertain), and
//!    `FetchBatch` (after the lane's cursor, from the head while anything is parked) while
//!    the lane holds a slot.
//! 3. `ReleaseLeases`, once, as the last command of a graceful stop (stores with the
//!    release capability): after the publishes in flight and their deletes finished, the
//!    relay hands its buckets back and deletes its heartbeat, so the others take over at
//!    their next rebalance instead of waiting out the leases. A stop that abandoned a
//!    publish releases nothing (the abandoned request may still reach the broker).
//!
//! [`RelayMachine::poll_timeout`] names the next deadline that would lead to an action
//! on the monotonic clock (lease expiry, renewal, rebalance, discovery, end of a lane's
//! backoff), so an idle relay that owns no bucket wakes only for its next heartbeat.
//!
//! **Rules that keep rows safe.** An acquisition names the lanes that keep working while it
//! runs as busy: the store never hands those buckets over in that call (above the share
//! they come back as surplus, and the lane finishes and gives them up at the next
//! acquisition), and while the acquisition runs only busy lanes act. A lease lost or expired while lanes
//! are busy means their rows are left for the next owner: nothing is deleted and nothing
//! new is published there. A failed publish drops every batch fetched behind it, and the
//! lane reads from the head again once nothing of it is in flight. Store and publish
//! failures back off and never drop rows: a row that fails for good is parked (moved, in
//! one transaction, under the lease) and stays visible until an operator requeues or
//! discards it; only a [`Misconfiguration`] stops the relay.
//! Hints add work only for validly owned buckets and never shorten a backoff or the
//! discovery deadline. Without the renewal capability a publish starts only when the lease
//! covers `max_publish_duration + lease_renew_interval`, and a publish that overruns that
//! budget stops the relay.
//!
//! # Ordering model
//!
//! Each row is assigned one of `bucket_count` buckets at enqueue time: the partition's
//! bucket when the writer pins a partition, otherwise Kafka's murmur2 of the key, or of
//! the message id for keyless rows. One relay at a time holds the lease on a bucket and
//! publishes its rows oldest-first, deleting only the contiguous acknowledged prefix of
//! each batch; a lane's batches go out strictly one after the other. Equal keys therefore
//! keep their enqueue order (first deliveries; a row that commits late with a lower id is
//! still found, because a lane reads past its cursor only where the store shows that no
//! lower row can still appear). Parking keeps it: under [`ParkPolicy::HoldKey`] a row is
//! published only when no parked row of its key has a lower id (see [`park`]).
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

pub mod backoff;
pub mod bucket;
pub mod builder;
#[cfg(feature = "runtime")]
pub mod driver;
pub mod enqueue_config;
pub mod error;
pub mod fair_share;
pub mod headers;
pub mod lease_plan;
pub mod message;
#[cfg(feature = "runtime")]
pub mod metrics;
pub mod notifier;
pub mod options;
pub mod park;
pub mod publisher;
pub mod relay;
pub mod relay_id;
pub mod schema;
pub mod status;
pub mod store;
pub mod time;
#[cfg(feature = "otel")]
pub mod trace_context;
pub mod validate;
pub mod wire_size;
pub mod writer;

#[cfg(feature = "testing")]
pub mod testing;

pub use builder::{IntoPayload, MessageBuilder, MessageError};
pub use enqueue_config::{EnqueueConfig, EnqueueConfigBuilder};
pub use error::{BoxError, Misconfiguration, PublishError, PublishErrorKind, StoreError};
pub use fair_share::{fair_share, fair_shares};
pub use headers::{Header, HeaderDecodeError, HeaderEncodeError, Headers};
pub use lease_plan::{LeasePlan, LeaseRow, LeaseSnapshot, plan_acquisition, relay_is_live};
pub use message::{OutboxMessage, StoreRef};
pub use notifier::{CommitNotifier, NoopNotifier};
pub use options::{
    DEFAULT_MAX_CONCURRENT_LANES, DEFAULT_MAX_PUBLISH_ATTEMPTS, OptionsError, RelayOptions,
    RelayOptionsBuilder,
};
pub use park::{
    HoldKey, Holds, ParkOutcome, ParkPolicy, ParkReason, ParkRequest, ParkRow, ParkedFailure,
    ParkedRow, ParkedRows, ParkedSelection,
};
pub use publisher::{PublishOutcome, Publisher};
pub use relay::{Command, Hint, Outcome, RelayEvent, RelayMachine};
pub use schema::{
    OutboxSchema, OutboxSchemaBuilder, OutboxTables, OutboxTablesBuilder, SchemaError,
};
pub use status::{
    BucketRows, BucketStatus, LeaseState, OutOfRange, OutboxStatus, RelayStatus, StatusSnapshot,
};
pub use store::{
    Acquired, LeaseRequest, LeaseWait, OutboxStore, PendingMetrics, RenewOutcome, StoreCapabilities,
};
pub use time::{Monotonic, Now, Timestamp};
pub use uuid::Uuid;
pub use writer::BindWriter;
