//! Shared helpers: messages, publishers, topics and reading back.

use std::time::Duration;

use outbox_core::{EnqueueConfig, OutboxMessage, PublishError, PublishOutcome, Publisher};
use outbox_kafka::{KafkaPublishError, KafkaPublisher, KafkaPublisherBuilder};
use outbox_tests::kafka;
use rskafka::client::Client;
use rskafka::record::RecordAndOffset;

pub const ID_HEADER: &str = "x-outbox-message-id";

/// The shared broker, asserting it is up.
pub fn brokers() -> String {
    outbox_tests::require_broker();
    outbox_tests::brokers()
}

/// A publisher builder with test-sized timeouts.
pub fn publisher_for(brokers: &str) -> KafkaPublisherBuilder {
    KafkaPublisher::builder(brokers.split(','))
        .client_id("outbox-kafka-tests")
        .request_timeout(Duration::from_secs(5))
        .delivery_timeout(Duration::from_secs(15))
        .retry_backoff(Duration::from_millis(20), Duration::from_millis(200))
}

/// A publisher builder whose requests stay within `bytes` (set, like every shared
/// setting, through the schema).
pub fn publisher_limited_to(brokers: &str, bytes: usize) -> KafkaPublisherBuilder {
    let schema = outbox_core::OutboxSchema::builder()
        .max_request_size(bytes)
        .build()
        .expect("a valid request limit");
    publisher_for(brokers).schema(&schema)
}

/// A fresh topic with `partitions` partitions on `brokers`, and a client to read it.
pub async fn topic(brokers: &str, prefix: &str, partitions: i32) -> (Client, String) {
    let client = kafka::client(brokers).await;
    let name = outbox_tests::unique_name(prefix);
    kafka::create_topic(&client, &name, partitions).await;
    (client, name)
}

/// A message for `topic` with `key` and `value`.
pub fn message(topic: &str, key: Option<&[u8]>, value: &[u8]) -> OutboxMessage {
    let mut b = OutboxMessage::builder(topic).value(value.to_vec());
    if let Some(k) = key {
        b = b.key(k.to_vec());
    }
    b.build(&EnqueueConfig::default()).unwrap()
}

/// Publishes with a generous overall bound, so a hang fails instead of blocking CI.
pub async fn publish(p: &KafkaPublisher, batch: &[OutboxMessage]) -> PublishOutcome {
    tokio::time::timeout(Duration::from_secs(60), p.publish(batch))
        .await
        .expect("publish did not return within 60 s")
}

/// Every record of every partition, by partition.
pub async fn read_all(client: &Client, topic: &str, partitions: i32) -> Vec<Vec<RecordAndOffset>> {
    let mut out = Vec::new();
    for p in 0..partitions {
        out.push(kafka::read_partition(client, topic, p).await);
    }
    out
}

/// How many records the topic's partitions hold altogether.
pub async fn record_count(client: &Client, topic: &str, partitions: i32) -> usize {
    read_all(client, topic, partitions)
        .await
        .iter()
        .map(Vec::len)
        .sum()
}

/// The answer the publisher gives when the broker called a resend a duplicate after the
/// connection was lost: not trusted, so the batch is reported unacknowledged.
pub fn untrusted_duplicate(error: &PublishError) -> bool {
    matches!(
        error.source.downcast_ref::<KafkaPublishError>(),
        Some(KafkaPublishError::Sequence { code: 46, .. })
    )
}

/// The message-id header of each record, in offset order.
pub fn ids(records: &[RecordAndOffset]) -> Vec<String> {
    records
        .iter()
        .map(|r| kafka::header_text(r, ID_HEADER).expect("message-id header missing"))
        .collect()
}
