//! Small Kafka helpers for tests: a client, topic creation, and reading partitions to
//! their end by Fetch's high watermark (never ListOffsets, which Tansu 0.6.0 gets wrong).

use std::time::Duration;

use rskafka::BackoffConfig;
use rskafka::client::partition::{OffsetAt, UnknownTopicHandling};
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

/// Creates `topic` with `partitions` partitions (replication factor 1) and waits until
/// every partition has a leader that answers ([`wait_topic_ready`]).
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
    wait_topic_ready(client, topic, partitions).await;
}

/// [`create_topic`], except that a topic that already exists is fine (a broker that kept
/// it across a restart, or a publisher whose metadata request created it).
///
/// # Panics
/// When the broker refuses for any other reason.
pub async fn ensure_topic(client: &Client, topic: &str, partitions: i32) {
    let created = client
        .controller_client()
        .unwrap_or_else(|e| panic!("no controller client: {e}"))
        .create_topic(topic, partitions, 1, 5_000)
        .await;
    if let Err(e) = created
        && !e.to_string().contains("TopicAlreadyExists")
    {
        panic!("creating topic {topic}: {e}");
    }
    wait_topic_ready(client, topic, partitions).await;
}

/// Waits (up to 30 s) until each of the `partitions` partitions of `topic` answers a
/// ListOffsets at its leader. Apache Kafka acknowledges CreateTopics before the new
/// partitions' leaders serve requests; a produce in between is refused
/// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION) and retried, which would change
/// what a test counts.
///
/// # Panics
/// When a partition is not ready in time.
pub async fn wait_topic_ready(client: &Client, topic: &str, partitions: i32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    for p in 0..partitions {
        loop {
            let answer = match client
                .partition_client(topic, p, UnknownTopicHandling::Error)
                .await
            {
                Ok(pc) => pc
                    .get_offset(OffsetAt::Latest)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match answer {
                Ok(()) => break,
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    panic!("{topic}/{p} has no leader that answers after 30 s: {e}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
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
