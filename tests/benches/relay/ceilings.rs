//! The two ceilings of section 1: what the parts can take without any of our store or
//! publisher code, each at its best concurrency.
//!
//! (a) The broker: plain rskafka produce (acks=all), one task per partition, all
//! partitions at once, batches of [`BATCH`] records of the same size as the relay's.
//! (b) The database: plain SQL built here (not the store's methods), one task per bucket,
//! each on its own connection: `SELECT <columns> ... WHERE bucket = ? ORDER BY id LIMIT
//! 500`, then `DELETE ... WHERE id IN (...)`, until the bucket is empty.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use outbox_seaorm::entity::message::{COLUMNS, Column as C};
use outbox_seaorm::{OutboxTables, SqlNames};
use rskafka::client::partition::{Compression, UnknownTopicHandling};
use rskafka::record::Record;
use sea_orm::prelude::DateTimeUtc;
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use tokio::task::JoinSet;

use crate::data;
use crate::env::{BATCH, Env, PARTITIONS, VALUE_SIZE};

/// (a) `n` records (key, 1 KiB value, message-id header) grouped by the partition their
/// bucket maps to, produced by one task per partition in batches of [`BATCH`], every
/// partition at once. No database, none of our publisher code.
pub async fn produce(env: &Env, topic: &str, n: u64) -> Duration {
    let config = env.enqueue_config(PARTITIONS as u32);
    // Records per partition (built before the clock starts).
    let mut by_partition: BTreeMap<i32, Vec<Record>> = BTreeMap::new();
    for i in 0..n {
        let bucket = outbox_core::OutboxMessage::builder(topic)
            .key(data::key(i))
            .build(&config)
            .unwrap()
            .bucket;
        by_partition.entry(bucket).or_default().push(record(i));
    }
    let mut clients = Vec::new();
    for (partition, records) in by_partition {
        let client = env
            .kafka
            .partition_client(topic, partition, UnknownTopicHandling::Retry)
            .await
            .unwrap();
        clients.push((client, records));
    }
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for (client, mut records) in clients {
        tasks.spawn(async move {
            while !records.is_empty() {
                let rest = records.split_off(records.len().min(BATCH));
                let batch = std::mem::replace(&mut records, rest);
                client
                    .produce(batch, Compression::NoCompression)
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    started.elapsed()
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

/// (b) Empties `tables` with plain SQL: one task per bucket, each on a connection of its
/// own, fetching the bucket's head ([`BATCH`] rows, every column, in id order) and
/// deleting exactly those ids. No Kafka, none of our store code.
pub async fn fetch_delete(env: &Env, tables: &OutboxTables, bucket_count: i32) -> Duration {
    let mut connections = Vec::new();
    for bucket in 0..bucket_count {
        connections.push((bucket, env.db_single().await));
    }
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for (bucket, db) in connections {
        let tables = tables.clone();
        tasks.spawn(async move { drain_bucket(&db, &tables, bucket).await });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    started.elapsed()
}

async fn drain_bucket(db: &DatabaseConnection, tables: &OutboxTables, bucket: i32) {
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
        // Read what the relay reads: the id and the payload columns.
        let ids: Vec<i64> = rows
            .iter()
            .map(|row| {
                let value: Option<Vec<u8>> = row.try_get("", "value").unwrap();
                std::hint::black_box(value);
                row.try_get::<i64>("", "id").unwrap()
            })
            .collect();
        let delete = Query::delete()
            .from_table(tables.messages_ref())
            .and_where(Expr::col(C::Id).is_in(ids))
            .to_owned();
        db.execute(&delete).await.unwrap();
    }
}
