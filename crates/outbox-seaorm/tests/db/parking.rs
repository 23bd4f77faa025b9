//! Parking on each database with the real relay driver: a row the publisher refuses is
//! parked, its key held behind it while a writer keeps committing that key and others;
//! an operator repairs and requeues the key while the writer is still committing it, and
//! the key's first deliveries come out in commit order, nothing lost.

use std::sync::Arc;
use std::time::{Duration, Instant};

use outbox_core::driver::Relay;
use outbox_core::testing::MemoryPublisher;
use outbox_core::{OutboxMessage, OutboxSchema, ParkedRows, ParkedSelection, RelayOptions, Uuid};
use outbox_seaorm::{Outbox, SeaOrmStore};

use crate::on_each_database;
use crate::support::TestDb;

/// Rows per key the writer commits; K's first row is refused until the repair.
const ROWS_PER_KEY: usize = 40;

/// Waits a moment before checking `what` again; fails past `deadline`.
async fn pause_before_retry(what: &str, deadline: Instant) {
    assert!(Instant::now() < deadline, "{what}: not reached in time");
    tokio::time::sleep(Duration::from_millis(25)).await;
}

async fn requeue_under_concurrent_writes(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let schema = OutboxSchema::builder()
        .tables(tables.clone())
        .bucket_count(2)
        .build()
        .unwrap();
    let options = RelayOptions::builder()
        .relay_id(outbox_tests::unique_name("relay"))
        .schema(schema.clone())
        .batch_size(8)
        .poll_interval(Duration::from_millis(100))
        .error_backoff(Duration::from_millis(20))
        .max_error_backoff(Duration::from_millis(100))
        .max_publish_attempts(std::num::NonZeroU32::new(2))
        .build()
        .unwrap();
    let store = SeaOrmStore::new(tdb.db.clone(), schema).unwrap();
    let publisher = MemoryPublisher::new();
    let outbox = Outbox::new(options.enqueue_config());
    let relay = Relay::spawn(store.clone(), publisher.clone(), options).unwrap();
    let outbox = outbox.with_notifier(relay.notifier());

    // K's first row can never be published as it is.
    let refused = Uuid::now_v7();
    publisher.reject(refused);
    let write = move |key: &'static str, n: usize| {
        let id = if key == "K" && n == 0 {
            refused
        } else {
            Uuid::now_v7()
        };
        let m = OutboxMessage::builder("orders")
            .key(key)
            .value(n.to_string())
            .message_id(id);
        (m, id)
    };
    let writer = {
        let (db, outbox) = (tdb.db.clone(), outbox.clone());
        tokio::spawn(async move {
            let mut order = Vec::new();
            for n in 0..ROWS_PER_KEY {
                for key in ["K", "J"] {
                    let (message, id) = write(key, n);
                    let txn = outbox.begin(&db).await.unwrap();
                    txn.enqueue(message).await.unwrap();
                    txn.commit().await.unwrap();
                    if key == "K" {
                        order.push(id);
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            order
        })
    };

    let deadline = Instant::now() + Duration::from_secs(30);
    while !store
        .list_parked(100)
        .await
        .unwrap()
        .iter()
        .any(|p| p.message.message_id == refused)
    {
        pause_before_retry("K's refused row parked", deadline).await;
    }
    // The operator repairs the cause and requeues K while the writer still commits K.
    publisher.accept(refused);
    let requeued = store
        .requeue_parked(&ParkedSelection::Key(b"K".to_vec()))
        .await
        .unwrap();
    assert!(!requeued.is_empty());
    let k_order = writer.await.unwrap();
    // A row parked behind K while the requeue ran stays parked: requeue until none is.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if !store.list_parked(1).await.unwrap().is_empty() {
            store
                .requeue_parked(&ParkedSelection::Key(b"K".to_vec()))
                .await
                .unwrap();
        }
        let delivered: std::collections::HashSet<Uuid> =
            publisher.records().iter().map(|r| r.message_id).collect();
        if delivered.len() == 2 * ROWS_PER_KEY {
            break;
        }
        pause_before_retry("everything delivered", deadline).await;
    }
    relay.stop(Duration::from_secs(10)).await.unwrap();

    // First deliveries of K, in the order they reached the topic, are K's commit order.
    let mut seen = std::collections::HashSet::new();
    let firsts: Vec<Uuid> = publisher
        .records()
        .iter()
        .filter(|r| r.key.as_deref() == Some(b"K".as_slice()) && seen.insert(r.message_id))
        .map(|r| r.message_id)
        .collect();
    assert_eq!(
        firsts.len(),
        ROWS_PER_KEY,
        "every row of K delivered once at least"
    );
    assert_eq!(
        firsts, k_order,
        "K's first deliveries follow its commit order across park and requeue"
    );
    assert!(store.list_parked(10).await.unwrap().is_empty());
}

on_each_database!(requeue_keeps_commit_order_under_concurrent_writes => super::requeue_under_concurrent_writes);
