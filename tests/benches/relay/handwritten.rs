//! Section 1's baseline: the concurrent relay a user writes in an afternoon, with none of
//! our store or publisher code. One task per bucket, each on its own connection, in a
//! loop: plain SQL fetch of the bucket's head (`WHERE bucket = ? ORDER BY id LIMIT 500`),
//! produce the batch with plain rskafka (acks=all), one request per partition its keys map
//! to, all at once, wait for every acknowledgement, then `DELETE ... WHERE id IN (...)`.
//! Each step waits for the one before it: no pipelining, which is what such a loop looks
//! like. The partition of a key is the Kafka-compatible murmur2 one (the same function the
//! relay uses), so both write the same records to the same partitions.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use outbox_core::bucket::partition_for_key;
use outbox_seaorm::entity::message::{COLUMNS, Column as C};
use outbox_seaorm::{OutboxTables, SqlNames};
use rskafka::client::partition::{Compression, PartitionClient, UnknownTopicHandling};
use rskafka::record::Record;
use sea_orm::prelude::{DateTimeUtc, Uuid};
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use tokio::task::JoinSet;

use crate::env::{BATCH, Env, PARTITIONS};

/// Drains `tables` into `topic` with one hand-written task per bucket; the time it took.
pub async fn drain(env: &Env, tables: &OutboxTables, topic: &str, bucket_count: i32) -> Duration {
    let mut clients = Vec::new();
    for p in 0..PARTITIONS {
        clients.push(
            env.kafka
                .partition_client(topic, p, UnknownTopicHandling::Retry)
                .await
                .unwrap(),
        );
    }
    let clients = Arc::new(clients);
    let mut connections = Vec::new();
    for bucket in 0..bucket_count {
        connections.push((bucket, env.db_single().await));
    }
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for (bucket, db) in connections {
        let tables = tables.clone();
        let clients = Arc::clone(&clients);
        tasks.spawn(async move { drain_bucket(&db, &tables, bucket, &clients).await });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    started.elapsed()
}

async fn drain_bucket(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    bucket: i32,
    clients: &[PartitionClient],
) {
    let partitions = NonZeroU32::new(clients.len() as u32).unwrap();
    loop {
        let select = Query::select()
            .columns(COLUMNS)
            .from(tables.messages_ref())
            .and_where(Expr::col(C::Bucket).eq(bucket))
            .order_by(C::Id, Order::Asc)
            .limit(BATCH as u64)
            .to_owned();
        let rows = db.query_all(&select).await.unwrap();
        if rows.is_empty() {
            return;
        }
        let mut ids = Vec::with_capacity(rows.len());
        let mut by_partition: BTreeMap<usize, Vec<Record>> = BTreeMap::new();
        for row in &rows {
            let id: i64 = row.try_get("", "id").unwrap();
            let message_id: Uuid = row.try_get("", "message_id").unwrap();
            let key: Option<Vec<u8>> = row.try_get("", "key").unwrap();
            let value: Option<Vec<u8>> = row.try_get("", "value").unwrap();
            let partition = partition_for_key(key.as_deref().unwrap_or_default(), partitions);
            let mut headers = BTreeMap::new();
            headers.insert(
                "x-outbox-message-id".to_owned(),
                message_id.to_string().into_bytes(),
            );
            by_partition
                .entry(partition as usize)
                .or_default()
                .push(Record {
                    key,
                    value,
                    headers,
                    timestamp: DateTimeUtc::from(SystemTime::now()),
                });
            ids.push(id);
        }
        let produces = by_partition.into_iter().map(|(partition, records)| {
            clients[partition].produce(records, Compression::NoCompression)
        });
        for acked in futures::future::join_all(produces).await {
            acked.unwrap();
        }
        let delete = Query::delete()
            .from_table(tables.messages_ref())
            .and_where(Expr::col(C::Id).is_in(ids))
            .to_owned();
        db.execute(&delete).await.unwrap();
    }
}
