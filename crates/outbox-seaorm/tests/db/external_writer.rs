//! Rows written with plain SQL, following the crate docs' "Writing rows without this
//! library", are read, measured and deleted like the library's own.

use std::sync::Arc;

use outbox_core::bucket::murmur2;
use outbox_core::{OutboxStore, Timestamp, Uuid};
use sea_orm::{ConnectionTrait, Statement};

use crate::on_each_database;
use crate::support::{Kind, TestDb};

const BUCKET_COUNT: i32 = 8;
/// 2025-12-06T05:46:40.050Z
const CREATED_MS: i64 = 1_765_000_000_050;

async fn raw_sql_rows_are_published(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    // Backlog metrics on a pool of their own, as a deployment would configure them.
    let store = tdb
        .store(&tables)
        .with_metrics_connection(tdb.observer.clone())
        .unwrap();
    let message_id = Uuid::now_v7();
    let hex = message_id.simple().to_string();
    let bucket = (murmur2(b"order-9") & 0x7fff_ffff) % BUCKET_COUNT;
    let table = match tdb.kind {
        Kind::MySql => format!("`{}`", tables.messages()),
        _ => format!("\"{}\"", tables.messages()),
    };
    // The same instant in each backend's documented form (with a +02:00 offset where
    // the type keeps offsets, UTC on MySQL).
    let sql = match tdb.kind {
        Kind::Postgres => format!(
            "INSERT INTO {table} (message_id, bucket, topic, key, value, headers, partition, created_at) \
             VALUES ('{message_id}', {bucket}, 'orders', 'order-9'::bytea, '{{}}'::bytea, NULL, NULL, \
             '2025-12-06T07:46:40.050+02:00')"
        ),
        Kind::MySql => format!(
            "INSERT INTO {table} (message_id, bucket, topic, `key`, `value`, headers, `partition`, created_at) \
             VALUES (UNHEX(REPLACE('{message_id}', '-', '')), {bucket}, 'orders', 'order-9', '{{}}', NULL, NULL, \
             '2025-12-06 05:46:40.050')"
        ),
        Kind::Sqlite => format!(
            "INSERT INTO {table} (message_id, bucket, topic, key, value, headers, partition, created_at) \
             VALUES (X'{hex}', {bucket}, 'orders', CAST('order-9' AS BLOB), CAST('{{}}' AS BLOB), NULL, NULL, \
             '2025-12-06T07:46:40.050+02:00')"
        ),
    };
    tdb.db
        .execute_raw(Statement::from_string(tdb.backend(), sql))
        .await
        .unwrap();

    assert_eq!(
        store.buckets_with_pending(&[bucket], 8).await.unwrap(),
        vec![bucket]
    );
    let batch = store.next_batch(bucket, None, 10).await.unwrap();
    assert_eq!(batch.len(), 1);
    let row = &batch[0];
    assert_eq!(row.message_id, message_id, "UUID byte order as documented");
    assert_eq!(row.key.as_deref(), Some(b"order-9".as_slice()));
    assert_eq!(row.value.as_deref(), Some(b"{}".as_slice()));
    assert_eq!(
        row.created_at,
        Timestamp::from_millis(CREATED_MS),
        "offset applied"
    );
    let metrics = store.pending_metrics().await.unwrap().unwrap();
    assert_eq!(metrics.count, 1);
    assert_eq!(
        metrics.oldest_created_at,
        Some(Timestamp::from_millis(CREATED_MS))
    );
    store.delete_published(bucket, &batch).await.unwrap();
    assert_eq!(tdb.count(&tables).await, 0);
}

on_each_database!(raw_sql_writer => super::raw_sql_rows_are_published);
