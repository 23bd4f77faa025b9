//! What only a real Apache Kafka broker can answer: topic size limits, auto-creation
//! off, SASL/SCRAM with the StandardAuthorizer, producer-state expiry, Kafka's own
//! consumer reading our records back, partitions added while publishing.
//!
//! Each test starts a private Apache Kafka node with the settings it needs (through the
//! harness's `KafkaSettings`, never a properties file of its own), whatever broker kind
//! the rest of the run uses: none of this can be shown on Tansu, which has no size limit,
//! creates every topic, has no authorization and forgets producers on restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../broker/support.rs"]
#[allow(dead_code)]
mod support;

mod kafka;

mod java_read_back;
mod missing_topic;
mod partitions_added;
mod producer_expiry;
mod too_large;
