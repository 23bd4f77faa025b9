//! A consumer that deduplicates on the message-id header, as every consumer of an
//! at-least-once outbox should.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use outbox_seaorm::MessageIdHeader;
use rskafka::client::Client;
use rskafka::client::partition::{OffsetAt, UnknownTopicHandling};
use uuid::Uuid;

/// A record seen for the first time.
#[derive(Debug)]
pub struct Delivery {
    /// The message id from the header.
    pub message_id: Uuid,
    /// Partition it was read from.
    pub partition: i32,
    /// Record key as text.
    pub key: String,
    /// Record value as text.
    pub value: String,
}

/// Reads every partition of a topic from where it ended when the consumer was created
/// (records of earlier runs are not this run's), drops repeated message ids.
pub struct Consumer {
    client: Arc<Client>,
    topic: String,
    partitions: i32,
    header: MessageIdHeader,
    offsets: Vec<i64>,
    seen: HashSet<Uuid>,
    /// Copies dropped because their message id was already processed.
    pub duplicates: u64,
    /// Records without a valid message-id header (none expected).
    pub unidentified: u64,
}

impl Consumer {
    /// A consumer of `partitions` partitions of `topic`, deduplicating on `header`,
    /// starting at each partition's current end.
    pub async fn at_end(
        client: Arc<Client>,
        topic: &str,
        partitions: i32,
        header: MessageIdHeader,
    ) -> anyhow::Result<Self> {
        let ends = (0..partitions).map(|partition| {
            let (client, topic) = (Arc::clone(&client), topic.to_owned());
            async move {
                let client = client
                    .partition_client(topic, partition, UnknownTopicHandling::Retry)
                    .await?;
                // The end by Fetch's high watermark: Tansu 0.6.0's ListOffsets(latest) is
                // wrong, its ListOffsets(earliest) is a valid place to fetch from.
                let earliest = client.get_offset(OffsetAt::Earliest).await?;
                let (_, high_watermark) = client.fetch_records(earliest, 1..1_000_000, 50).await?;
                anyhow::Ok(high_watermark)
            }
        });
        let offsets = futures::future::try_join_all(ends).await?;
        Ok(Consumer {
            client,
            topic: topic.to_owned(),
            partitions,
            header,
            offsets,
            seen: HashSet::new(),
            duplicates: 0,
            unidentified: 0,
        })
    }

    /// One pass over every partition (fetched concurrently, so an idle partition's wait
    /// does not delay the others); returns the first deliveries found.
    pub async fn poll(&mut self) -> anyhow::Result<Vec<Delivery>> {
        let fetches = (0..self.partitions).map(|partition| {
            let (client, topic) = (Arc::clone(&self.client), self.topic.clone());
            let offset = self.offsets[usize::try_from(partition).unwrap_or(0)];
            async move {
                let client = client
                    .partition_client(topic, partition, UnknownTopicHandling::Retry)
                    .await?;
                // Fetch reports the true high watermark; read until it, never past it.
                let (records, _high_watermark) =
                    client.fetch_records(offset, 1..1_000_000, 50).await?;
                anyhow::Ok((partition, records))
            }
        });
        let mut fresh = Vec::new();
        for result in futures::future::join_all(fetches).await {
            let (partition, records) = result?;
            let index = usize::try_from(partition)?;
            for record in records {
                self.offsets[index] = record.offset + 1;
                // The same reader the inbox uses (`outbox_seaorm::Inbox` makes this
                // deduplication durable; the demo keeps it in memory).
                let Ok(message_id) = self.header.find(&record.record.headers) else {
                    self.unidentified += 1;
                    continue;
                };
                if !self.seen.insert(message_id) {
                    self.duplicates += 1; // already processed: drop it
                    continue;
                }
                let text = |b: Option<Vec<u8>>| {
                    b.map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_default()
                };
                fresh.push(Delivery {
                    message_id,
                    partition,
                    key: text(record.record.key),
                    value: text(record.record.value),
                });
            }
        }
        Ok(fresh)
    }

    /// Waits a little between passes.
    pub async fn pause() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
