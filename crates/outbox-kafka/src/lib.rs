//! Kafka publisher for the transactional outbox, built on `rskafka`.
//!
//! This crate will hold the `outbox_core::Publisher` implementation that talks to a
//! Kafka-compatible broker with acks=all, an idempotent producer (producer id, epoch and
//! per-partition sequence numbers) and the Java client's murmur2 key partitioner, so that
//! equal keys land on one partition. Until that lands the crate only re-exports nothing
//! and exists so that users can depend on the final layout.
#![warn(missing_docs)]
