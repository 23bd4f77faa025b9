//! A real relay (outbox-core's driver) on the store: enqueue in a transaction, the relay
//! publishes to an in-memory publisher and deletes the rows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use outbox_core::driver::{Relay, RelayError};
use outbox_core::testing::MemoryPublisher;
use outbox_core::{OutboxMessage, OutboxSchema, RelayOptions};
use outbox_seaorm::{EnqueueError, Outbox, OutboxTables, SeaOrmStore, SqlNames};
use sea_orm::{ConnectionTrait, TransactionTrait};
use sea_query::{Expr, ExprTrait, Query};

use crate::on_each_database;
use crate::support::TestDb;

const BUCKETS: u32 = 4;

async fn owned_by(tdb: &TestDb, tables: &OutboxTables, relay_id: &str) -> usize {
    let stmt = Query::select()
        .column("bucket")
        .from(tables.leases_ref())
        .and_where(Expr::col("owner").eq(relay_id))
        .to_owned();
    tdb.db.query_all(&stmt).await.unwrap().len()
}

/// Runs a relay on `tables`, enqueues through the commit hook and waits for the
/// publication. Shared with the custom-schema test.
pub async fn publish_end_to_end(tdb: &TestDb, tables: OutboxTables) {
    let publisher = MemoryPublisher::new();
    let relay_id = outbox_tests::unique_name("relay");
    // A long poll interval: only the commit hint wakes the relay promptly.
    let schema = OutboxSchema::builder()
        .tables(tables.clone())
        .bucket_count(BUCKETS)
        .build()
        .unwrap();
    let options = RelayOptions::builder()
        .relay_id(relay_id.clone())
        .schema(schema.clone())
        .poll_interval(Duration::from_secs(60))
        .build()
        .unwrap();
    let outbox = Outbox::new(options.enqueue_config());
    let store = SeaOrmStore::new(tdb.db.clone(), schema).unwrap();
    let relay = Relay::spawn(store, publisher.clone(), options).unwrap();
    let outbox = outbox.with_notifier(relay.notifier());

    let deadline = Instant::now() + Duration::from_secs(20);
    while owned_by(tdb, &tables, &relay_id).await < BUCKETS as usize {
        assert!(
            Instant::now() < deadline,
            "the relay never acquired its leases"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Rolled back: must never be published.
    let txn = outbox.begin(&tdb.db).await.unwrap();
    txn.enqueue(
        OutboxMessage::builder("orders")
            .key("ghost")
            .value("rolled back"),
    )
    .await
    .unwrap();
    txn.rollback().await.unwrap();

    let committed_at = Instant::now();
    outbox
        .transaction::<_, (), EnqueueError>(&tdb.db, |txn| {
            Box::pin(async move {
                for seq in 0..3 {
                    for key in ["k0", "k1", "k2", "k3"] {
                        txn.enqueue(
                            OutboxMessage::builder("orders")
                                .key(key)
                                .value(format!("{key}:{seq}")),
                        )
                        .await?;
                    }
                }
                Ok(())
            })
        })
        .await
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(20);
    while publisher.records().len() < 12 || tdb.count(&tables).await > 0 {
        assert!(
            Instant::now() < deadline,
            "not published and deleted in time: {} published, {} pending",
            publisher.records().len(),
            tdb.count(&tables).await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let latency = committed_at.elapsed();
    relay.stop(Duration::from_secs(5)).await.unwrap();

    let records = publisher.records();
    assert_eq!(records.len(), 12, "each row once");
    assert!(
        records
            .iter()
            .all(|r| r.key.as_deref() != Some(b"ghost".as_slice()))
    );
    for key in ["k0", "k1", "k2", "k3"] {
        let values: Vec<String> = records
            .iter()
            .filter(|r| r.key.as_deref() == Some(key.as_bytes()))
            .map(|r| String::from_utf8(r.value.clone().unwrap()).unwrap())
            .collect();
        assert_eq!(
            values,
            (0..3).map(|s| format!("{key}:{s}")).collect::<Vec<_>>()
        );
    }
    // The poll interval is 60 s; the relay found the rows through the commit hint.
    assert!(
        latency < Duration::from_secs(8),
        "took {latency:?}: the hint did not wake the relay"
    );
}

async fn relay_publishes_and_deletes(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    publish_end_to_end(&tdb, tables).await;
}

/// `Relay::builder(..).spawn()` hands out the store's writer bound to the relay: a row
/// enqueued through `handle.outbox()` in a transaction beside a business row is published
/// long before the 60 s poll; a plain sea-orm transaction wakes it through `notify`.
async fn builder_writer_is_bound(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let schema = OutboxSchema::builder()
        .tables(tables.clone())
        .bucket_count(BUCKETS)
        .build()
        .unwrap();
    let store = SeaOrmStore::new(tdb.db.clone(), schema.clone()).unwrap();

    // Options on another schema are refused: rows bucketed with one bucket count would
    // be read with another.
    let wrong = RelayOptions::builder().build().unwrap();
    let refused = Relay::builder(store.clone(), MemoryPublisher::new())
        .options(wrong)
        .spawn();
    assert!(matches!(refused, Err(RelayError::SchemaMismatch)));

    let publisher = MemoryPublisher::new();
    let options = RelayOptions::builder()
        .schema(schema)
        .poll_interval(Duration::from_secs(60))
        .build()
        .unwrap();
    let relay = Relay::builder(store, publisher.clone())
        .options(options)
        .spawn()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), relay.ready())
        .await
        .expect("ready in time")
        .unwrap();
    assert_eq!(relay.outbox().config().bucket_count().get(), BUCKETS);
    let orders = tdb.extra_table("orders");
    tdb.db
        .execute_unprepared(&format!(
            "CREATE TABLE {orders} (id BIGINT NOT NULL PRIMARY KEY)"
        ))
        .await
        .unwrap();

    let committed_at = Instant::now();
    let table = orders.clone();
    relay
        .outbox()
        .transaction::<_, (), EnqueueError>(&tdb.db, |txn| {
            Box::pin(async move {
                txn.execute_unprepared(&format!("INSERT INTO {table} (id) VALUES (1)"))
                    .await?;
                txn.enqueue(OutboxMessage::builder("orders").key("order-1").value("{}"))
                    .await?;
                Ok(())
            })
        })
        .await
        .unwrap();
    wait_published(&publisher, 1).await;
    assert!(
        committed_at.elapsed() < Duration::from_secs(8),
        "took {:?}: the bound writer did not wake the relay",
        committed_at.elapsed()
    );

    // A plain sea-orm transaction: the receipt must be handed to `notify`.
    let committed_at = Instant::now();
    let plain = tdb.db.begin().await.unwrap();
    plain
        .execute_unprepared(&format!("INSERT INTO {orders} (id) VALUES (2)"))
        .await
        .unwrap();
    let receipt = relay
        .outbox()
        .enqueue(
            &plain,
            OutboxMessage::builder("orders").key("order-2").value("{}"),
        )
        .await
        .unwrap();
    plain.commit().await.unwrap();
    relay.outbox().notify(&receipt);
    wait_published(&publisher, 2).await;
    assert!(committed_at.elapsed() < Duration::from_secs(8));

    relay.drained().await.unwrap();
    assert_eq!(tdb.count(&tables).await, 0);
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

async fn wait_published(publisher: &MemoryPublisher, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while publisher.records().len() < n {
        assert!(Instant::now() < deadline, "not published in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

on_each_database!(relay_end_to_end => super::relay_publishes_and_deletes);
/// Without `.options`, the builder's relay reads with the store's schema: a row in bucket
/// 12 of 16 is published (with the default 8 buckets it would stop the relay as
/// misconfigured).
async fn builder_without_options_adopts_the_store_schema(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let schema = OutboxSchema::builder()
        .tables(tables.clone())
        .bucket_count(16)
        .build()
        .unwrap();
    let store = SeaOrmStore::new(tdb.db.clone(), schema).unwrap();
    let publisher = MemoryPublisher::new();
    let relay = Relay::builder(store, publisher.clone()).spawn().unwrap();
    let done = relay
        .outbox()
        .enqueue(
            &tdb.db,
            OutboxMessage::builder("orders").partition(12).value("{}"),
        )
        .await
        .unwrap();
    assert_eq!(done.buckets(), &[12]);
    tokio::time::timeout(Duration::from_secs(20), relay.drained())
        .await
        .expect("drained in time")
        .unwrap();
    assert_eq!(publisher.records().len(), 1);
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

on_each_database!(builder_writer => super::builder_writer_is_bound);
on_each_database!(builder_default_options => super::builder_without_options_adopts_the_store_schema);
