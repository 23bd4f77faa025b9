//! Kafka publisher for the transactional outbox, built on `rskafka`.
//!
//! [`KafkaPublisher`] implements [`outbox_core::Publisher`]. It always produces with
//! **acks=all** and as an **idempotent producer** (a producer id and epoch from
//! InitProducerId, a sequence number on every record batch), and places records with
//! **Kafka's murmur2 key partitioner**: an explicit partition wins, otherwise equal keys
//! (the empty key included) land on the partition the Java client would choose, and
//! keyless records go to a random partition. None of this is configurable; whoever
//! wants other semantics implements the `Publisher` trait themselves. Every record
//! carries the row's own headers, then the message-id header (`x-outbox-message-id` by
//! default, else the `message_id_header` of the `OutboxSchema` given to
//! `KafkaPublisherBuilder::schema`; the UUID as text); keys, values and headers are
//! copied byte for byte, except that a header a row already carries under the message-id
//! name (a row written without this library) is dropped, so a record has exactly one.
//!
//! # Which failures blame a row
//!
//! Every failure is retryable, permanent for the one row it names (the relay parks that
//! row after `max_publish_attempts`), or a setup problem (retried, never parked):
//! [`KafkaPublishError::blames_row`] and [`KafkaPublishError::is_permanent`] decide, and
//! `docs/publish-errors.md` in the repository has the table of checks and error codes
//! with the reason for each.
//!
//! # Ordering and idempotence contract
//!
//! A publish call checks every row first (topic name, headers, pinned partition, size
//! against `max_request_size`) and sends nothing from the first failing row on. The
//! remaining rows are grouped by partition in row order and cut into record batches of
//! at most one request each; partitions are sent concurrently, but within a partition a
//! batch is sent only after the previous one was appended, and nothing after a failed
//! batch is sent in the same call. So **a partition only ever shows a prefix of its rows
//! in enqueue order**, and the call reports the contiguous acknowledged prefix of the
//! whole batch plus the first error. An answer that reports a timeout on a live
//! connection makes the publisher resend *the same batch with the same sequence*, which
//! the broker deduplicates. A lost connection, even a broker restart, changes nothing
//! about that: Apache Kafka keeps producer state across both, so the publisher keeps its
//! producer id, epoch and sequences, resends the unacknowledged batches with their
//! original sequences and takes the broker's answer for a batch it already holds
//! (success with the original offset) as the acknowledgement it is; a reconnect adds no
//! duplicate. Only the broker's answer retires the id: when it rejects the sequence (out
//! of order, unknown producer id, fenced epoch), or when a batch's fate stays unknown
//! past the delivery timeout, the batch is reported unacknowledged and the next send
//! uses a new producer id. A DUPLICATE_SEQUENCE_NUMBER answer after the leader was
//! unreachable is not trusted (a broker that restarted without its state, as Tansu's
//! memory engine does, may hand our id to another producer and answer for *its*
//! batch): that batch is reported unacknowledged and resent under a new id, a duplicate
//! rather than a loss.
//!
//! Publish calls may run concurrently (the relay's lanes do) and share the publisher's
//! connections, producer id and per-partition sequences; two calls writing the same
//! partition take turns. Batches travel **together**: each broker connection has one
//! produce request out at a time, and the partition batches that become ready while it
//! is out, from the same call or from other calls, leave together in the next request,
//! at most one batch per partition and within `max_request_size`. Nothing is held back
//! to wait for company: on an idle connection a batch leaves at once. Sharing a request
//! changes none of the rules above. Each partition's batch is judged by its own entry
//! in the answer, and a request that fails as a whole (connection lost, no answer in
//! time) counts as a lost connection for every partition it carried, so each of them is
//! resent with its sequence. How much was shared shows in the counters
//! [`PRODUCE_REQUESTS_METRIC`] and [`PRODUCE_BATCHES_METRIC`]
//! ([`KafkaPublisher::produce_requests`], [`KafkaPublisher::produce_batches`]).
//!
//! What it cannot promise: **duplicates** remain possible (a batch of unknown fate
//! resent under a new producer id after the broker refused its sequence or the delivery
//! timeout passed, rows of other partitions appended before an earlier
//! row failed, rows a relay publishes again after losing its lease), so consumers
//! deduplicate by message id. A relay that lost its lease can still append a stale copy
//! after the new owner's; broker-side fencing of that needs Kafka transactions. After a
//! long outage in which the broker expired the producer id, sequences restart under a
//! new id, and deduplication across that restart is again the consumer's job. And what
//! the broker acknowledged is only as durable as the broker (acks=all with its
//! replication settings).
//!
//! # Errors
//!
//! Retryable: leader moved, not enough replicas, timeouts, connection loss (metadata is
//! re-resolved and the connection re-opened with backoff within `delivery_timeout`).
//! Permanent for a row: record too large (by our limit or the topic's
//! `max.message.bytes`), invalid record or topic name. Setup: authentication, cluster
//! authorization, protocol versions, and a topic that does not exist (auto-creation
//! off) or that this client may not write
//! ([`KafkaPublishError::TopicUnavailable`]): its rows wait, retried with the relay's
//! growing backoff, and flow by themselves once the topic or the ACL is there; each
//! such call is counted in [`TOPIC_UNAVAILABLE_METRIC`] labelled with the topic. The
//! relay retries every kind with backoff and never drops a row; a permanent failure is
//! logged once per row with its message id and counted in
//! [`PERMANENT_FAILURES_METRIC`] and [`KafkaPublisher::permanent_failures`].
//!
//! # Example
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use outbox_kafka::{Compression, KafkaPublisher, Sasl};
//!
//! let publisher = KafkaPublisher::builder(["broker-1:9092", "broker-2:9092"])
//!     .client_id("orders-relay")
//!     .compression(Compression::Lz4)
//!     .request_timeout(Duration::from_secs(10))
//!     .sasl(Sasl::ScramSha512 { username: "relay".into(), password: "secret".into() })
//!     .build()?;
//! publisher.connect().await?; // optional: fail at startup on a wrong address
//! // outbox_core::driver::Relay::spawn(store, publisher, relay_options)?;
//! # Ok(()) }
//! ```
//!
//! # Cargo features
//!
//! One per compression codec: `gzip` (flate2) and `snappy` (snap), pure Rust; `lz4` and
//! `zstd`, which build C libraries. All four are on by default. Without a codec's
//! feature, choosing it makes [`KafkaPublisherBuilder::build`] fail with
//! [`ConfigError::CompressionNotEnabled`] naming the feature. The publisher only writes
//! record batches and never decodes one, so no read path depends on the codecs.
//!
//! `otel` (off by default): each publish call opens a `send {topic}` producer span per
//! topic (OpenTelemetry messaging conventions: kind producer, `messaging.system`
//! `kafka`, `messaging.destination.name`, `messaging.operation.type` `send`,
//! `messaging.batch.message_count`), linked to the W3C trace context each row captured
//! at enqueue, and marked as an error when a row of its topic was not acknowledged. The
//! `traceparent` / `tracestate` / `baggage` headers themselves travel with the row's
//! stored headers, feature or not. See `docs/tracing.md`.
//!
//! # Built on rskafka's protocol layer
//!
//! rskafka 0.6 has no idempotent producer in its public API. This crate uses its
//! `unstable-fuzzing` feature for the connection (`Messenger`: framing, pipelining,
//! version negotiation, SASL) and protocol types, pinned to exactly 0.6.0 and confined
//! to the private `wire` module; InitProducerId is written by hand (Tansu needs version 3
//! or later), and record batches are encoded here because rskafka's cannot carry null
//! header values. TLS uses rustls directly, as rskafka does.
#![warn(missing_docs)]

mod batch_cap;
mod cluster;
mod coalesce;
mod compression;
mod config;
mod error;
mod plan;
#[cfg(feature = "otel")]
mod producer_span;
mod publisher;
mod record_batch;
mod send;
mod session;
mod wire;

pub use cluster::PARTITION_CHANGES_METRIC;
pub use coalesce::{PRODUCE_BATCHES_METRIC, PRODUCE_REQUESTS_METRIC};
pub use compression::Compression;
pub use config::{
    ConfigError, DEFAULT_CLIENT_ID, DEFAULT_DELIVERY_TIMEOUT, DEFAULT_MAX_REQUEST_SIZE,
    DEFAULT_REQUEST_TIMEOUT, KafkaPublisherBuilder, KafkaPublisherConfig, MIN_MAX_REQUEST_SIZE,
    Sasl,
};
pub use error::{KafkaPublishError, TopicUnavailableReason};
pub use publisher::{KafkaPublisher, PERMANENT_FAILURES_METRIC, TOPIC_UNAVAILABLE_METRIC};
/// The rustls version whose `ClientConfig` [`KafkaPublisherBuilder::tls`] takes.
pub use rustls;
