//! Parking on each database with the real relay driver: a row the publisher refuses is
//! parked, its key held behind it while a writer keeps committing that key and others;
//! an operator repairs and requeues the key while the writer is still committing it, and
//! the key's first deliveries come out in commit order, nothing lost. And the same at the
//! store's level, without a relay: parks and requeues of a key while it is being written
//! keep every row exactly once, under its original id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use outbox_core::driver::Relay;
use outbox_core::testing::MemoryPublisher;
use outbox_core::{
    EnqueueConfig, LeaseRequest, OutboxMessage, OutboxSchema, OutboxStore, ParkReason, ParkRequest,
    ParkRow, ParkedFailure, ParkedRows, ParkedSelection, RelayOptions, Timestamp, Uuid,
};
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

/// Park-and-requeue rounds the store-level test runs while the writer commits.
const ROUNDS: usize = 4;
/// Rows the writer commits between two rounds, at least.
const ROWS_BETWEEN_ROUNDS: usize = 6;

/// Every pending row of bucket 0 (read from the head) and every parked row, by message id;
/// fails on a row present twice.
async fn where_rows_are(store: &SeaOrmStore) -> HashMap<Uuid, (i64, bool)> {
    let mut at = HashMap::new();
    let pending = store.next_batch(0, None, 100_000).await.unwrap();
    let parked = store.list_parked(100_000).await.unwrap();
    let rows = pending
        .iter()
        .map(|m| (m, false))
        .chain(parked.iter().map(|p| (&p.message, true)));
    for (m, is_parked) in rows {
        let before = at.insert(m.message_id, (m.id, is_parked));
        assert!(
            before.is_none(),
            "row {} ({}) is both pending and parked, or twice in one table",
            m.id,
            m.message_id
        );
    }
    at
}

/// A writer keeps committing rows of key K (and of J, in the same bucket) through the
/// crate's enqueue path while the lease owner parks K's front rows and an operator
/// requeues K, round after round. At every point each committed row is pending or parked
/// exactly once under the id it was committed with; at the end the bucket read from the
/// head is the commit order, requeued rows at their original places.
async fn park_and_requeue_during_writes(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables_in_own_schema().await;
    let schema = OutboxSchema::builder()
        .tables(tables)
        .bucket_count(1)
        .build()
        .unwrap();
    let store = SeaOrmStore::new(tdb.db.clone(), schema.clone()).unwrap();
    let outbox = Outbox::new(EnqueueConfig::from(schema));
    let owner = outbox_tests::unique_name("relay");
    let lease = LeaseRequest {
        relay_id: &owner,
        bucket_count: 1,
        lease_duration: Duration::from_secs(600),
        now: Timestamp::now(),
        busy: &[],
    };
    assert_eq!(store.acquire_leases(&lease).await.unwrap().held, [0]);

    // Message ids in commit order; one writer, so also id order.
    let committed: Arc<Mutex<Vec<Uuid>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, outbox) = (tdb.db.clone(), outbox.clone());
        let (committed, stop) = (Arc::clone(&committed), Arc::clone(&stop));
        tokio::spawn(async move {
            for n in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let key = if n % 3 == 2 { "J" } else { "K" };
                let id = Uuid::now_v7();
                let message = OutboxMessage::builder("orders")
                    .key(key)
                    .value(n.to_string())
                    .message_id(id);
                let txn = outbox.begin(&db).await.unwrap();
                txn.enqueue(message).await.unwrap();
                txn.commit().await.unwrap();
                committed.lock().unwrap().push(id);
                tokio::task::yield_now().await;
            }
        })
    };
    let committed_count = || committed.lock().unwrap().len();

    // The id each row was committed with, as first seen; never to change.
    let mut original_ids: HashMap<Uuid, i64> = HashMap::new();
    let mut requeued_while_writing = 0;
    for round in 0..ROUNDS {
        let wanted = (round + 1) * ROWS_BETWEEN_ROUNDS;
        let deadline = Instant::now() + Duration::from_secs(30);
        while committed_count() < wanted {
            pause_before_retry("the writer's rows for this round", deadline).await;
        }
        let before = committed.lock().unwrap().clone();
        let at = where_rows_are(&store).await;
        for id in &before {
            let (row_id, _) = at
                .get(id)
                .unwrap_or_else(|| panic!("round {round}: committed row {id} is lost"));
            assert_eq!(
                *original_ids.entry(*id).or_insert(*row_id),
                *row_id,
                "round {round}: row {id} changed its id"
            );
        }

        // The owner parks a row of K as failed and the next two behind it, further back
        // each round, so requeued rows land between pending rows of K.
        let front: Vec<OutboxMessage> = store
            .next_batch(0, None, 100_000)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.key.as_deref() == Some(b"K".as_slice()))
            .skip(2 * round)
            .take(3)
            .collect();
        assert_eq!(front.len(), 3, "round {round}: K has rows to park");
        let blocking_id = front[0].id;
        let rows: Vec<ParkRow> = front
            .iter()
            .enumerate()
            .map(|(i, m)| ParkRow {
                message: m.clone(),
                reason: if i == 0 {
                    ParkReason::Failed(ParkedFailure {
                        error: "refused".into(),
                        attempts: 3,
                        first_failed_at: Timestamp::now(),
                        last_failed_at: Timestamp::now(),
                    })
                } else {
                    ParkReason::HeldBehind { blocking_id }
                },
            })
            .collect();
        let outcome = store
            .park_rows(&ParkRequest {
                relay_id: &owner,
                now: Timestamp::now(),
                bucket: 0,
                rows: &rows,
            })
            .await
            .unwrap();
        let front_ids: Vec<i64> = front.iter().map(|m| m.id).collect();
        assert!(!outcome.lease_lost, "round {round}: the owner parks");
        assert_eq!(outcome.parked, front_ids, "round {round}: all three parked");
        let at = where_rows_are(&store).await;
        for m in &front {
            assert_eq!(
                at.get(&m.message_id),
                Some(&(m.id, true)),
                "round {round}: row {} parked under its id",
                m.id
            );
        }

        // The operator requeues K while the writer goes on.
        let written_before = committed_count();
        let requeued = store
            .requeue_parked(&ParkedSelection::Key(b"K".to_vec()))
            .await
            .unwrap();
        assert_eq!(
            requeued, front_ids,
            "round {round}: K's parked rows requeued"
        );
        if committed_count() > written_before {
            requeued_while_writing += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    writer.await.unwrap();
    eprintln!(
        "{:?}: {ROUNDS} rounds, {requeued_while_writing} requeues overlapped a commit, {} rows",
        tdb.kind,
        committed_count()
    );

    assert!(store.list_parked(10).await.unwrap().is_empty());
    let pending = store.next_batch(0, None, 100_000).await.unwrap();
    let ids: Vec<i64> = pending.iter().map(|m| m.id).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "the bucket reads in strictly ascending id order: {ids:?}"
    );
    let order: Vec<Uuid> = pending.iter().map(|m| m.message_id).collect();
    assert_eq!(
        order,
        *committed.lock().unwrap(),
        "the bucket from the head is the commit order, nothing lost, nothing twice"
    );
    for m in &pending {
        if let Some(id) = original_ids.get(&m.message_id) {
            assert_eq!(m.id, *id, "row {} kept its original id", m.message_id);
        }
    }
}

on_each_database!(park_and_requeue_while_writing => super::park_and_requeue_during_writes);
