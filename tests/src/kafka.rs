//! Small Kafka helpers for tests: a client, topic creation, and reading partitions to
//! their end by Fetch's high watermark (never ListOffsets, which Tansu 0.6.0 gets wrong).

use std::time::Duration;

use rskafka::BackoffConfig;
use rskafka::client::partition::UnknownTopicHandling;
use rskafka::client::{Client, ClientBuilder};
use rskafka::record::RecordAndOffset;

/// A client for `brokers` (comma separated) that gives up after 20 s of retries.
///
/// # Panics
/// When no broker answers.
pub async fn client(brokers: &str) -> Client {
    let list = brokers
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    ClientBuilder::new(list)
        .client_id("outbox-tests")
        .backoff_config(BackoffConfig {
            deadline: Some(Duration::from_secs(20)),
            ..BackoffConfig::default()
        })
        .build()
        .await
        .unwrap_or_else(|e| panic!("no Kafka client for {brokers}: {e}"))
}

/// Creates `topic` with `partitions` partitions (replication factor 1).
///
/// # Panics
/// When the broker refuses.
pub async fn create_topic(client: &Client, topic: &str, partitions: i32) {
    client
        .controller_client()
        .unwrap_or_else(|e| panic!("no controller client: {e}"))
        .create_topic(topic, partitions, 1, 5_000)
        .await
        .unwrap_or_else(|e| panic!("creating topic {topic}: {e}"));
}

/// Every record of `topic`/`partition`, read up to the high watermark Fetch reports.
///
/// # Panics
/// When fetching fails or makes no progress.
pub async fn read_partition(client: &Client, topic: &str, partition: i32) -> Vec<RecordAndOffset> {
    let pc = client
        .partition_client(topic, partition, UnknownTopicHandling::Retry)
        .await
        .unwrap_or_else(|e| panic!("partition client {topic}/{partition}: {e}"));
    let mut out: Vec<RecordAndOffset> = Vec::new();
    let mut next = 0i64;
    for _ in 0..100 {
        let (batch, high_watermark) = pc
            .fetch_records(next, 1..10_000_000, 200)
            .await
            .unwrap_or_else(|e| panic!("fetching {topic}/{partition} at {next}: {e}"));
        for r in batch {
            if r.offset >= next {
                next = r.offset + 1;
                out.push(r);
            }
        }
        if next >= high_watermark {
            return out;
        }
    }
    panic!("no progress reading {topic}/{partition} at offset {next}");
}

/// The value of the first header called `name`, as text.
pub fn header_text(record: &RecordAndOffset, name: &str) -> Option<String> {
    record
        .record
        .headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v).into_owned())
}
