//! The two ceilings of section 1, each doing half of the relay's work the way the relay
//! does it: batches of one bucket, one request in flight.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use outbox_core::OutboxStore;
use outbox_seaorm::{OutboxTables, SeaOrmStore};
use rskafka::client::partition::{Compression, UnknownTopicHandling};
use rskafka::record::Record;
use sea_orm::prelude::DateTimeUtc;

use crate::data;
use crate::env::{BATCH, Env, PARTITIONS, VALUE_SIZE};

/// (a) Plain rskafka: the same `n` records (key, 1 KiB value, message-id header),
/// grouped by bucket in id order and produced in batches of [`BATCH`], round-robin over
/// the buckets as the relay sweeps them. No database.
pub async fn produce(env: &Env, topic: &str, n: u64) -> Duration {
    let config = env.enqueue_config(8);
    // Which rows each bucket holds, in order (computed before the clock starts).
    let mut by_bucket: BTreeMap<i32, Vec<u64>> = BTreeMap::new();
    for i in 0..n {
        let bucket = outbox_core::OutboxMessage::builder(topic)
            .key(data::key(i))
            .build(&config)
            .unwrap()
            .bucket;
        by_bucket.entry(bucket).or_default().push(i);
    }
    let mut clients = Vec::new();
    for p in 0..PARTITIONS {
        clients.push(
            env.kafka
                .partition_client(topic, p, UnknownTopicHandling::Retry)
                .await
                .unwrap(),
        );
    }
    let mut queues: Vec<(i32, std::vec::IntoIter<u64>)> = by_bucket
        .into_iter()
        .map(|(b, rows)| (b, rows.into_iter()))
        .collect();
    let started = Instant::now();
    loop {
        let mut sent = false;
        for (bucket, rows) in &mut queues {
            let batch: Vec<Record> = rows.by_ref().take(BATCH).map(record).collect();
            if batch.is_empty() {
                continue;
            }
            sent = true;
            let partition = usize::try_from(*bucket).unwrap();
            clients[partition]
                .produce(batch, Compression::NoCompression)
                .await
                .unwrap();
        }
        if !sent {
            return started.elapsed();
        }
    }
}

fn record(i: u64) -> Record {
    let mut headers = BTreeMap::new();
    headers.insert(
        "x-outbox-message-id".to_owned(),
        outbox_core::Uuid::now_v7().to_string().into_bytes(),
    );
    Record {
        key: Some(data::key(i).into_bytes()),
        value: Some(data::value(i, VALUE_SIZE)),
        headers,
        timestamp: DateTimeUtc::from(SystemTime::now()),
    }
}

/// (b) The database alone: the store's own `next_batch` and `delete_published`, one batch
/// per bucket per sweep until every bucket is empty. No Kafka.
pub async fn fetch_delete(env: &Env, tables: &OutboxTables, bucket_count: i32) -> Duration {
    let store = SeaOrmStore::new(env.db().await, tables.clone()).unwrap();
    let started = Instant::now();
    let mut live: Vec<i32> = (0..bucket_count).collect();
    while !live.is_empty() {
        let mut still = Vec::new();
        for bucket in live {
            let batch = store.next_batch(bucket, None, BATCH).await.unwrap();
            if batch.is_empty() {
                continue;
            }
            store.delete_published(bucket, &batch).await.unwrap();
            still.push(bucket);
        }
        live = still;
    }
    started.elapsed()
}
