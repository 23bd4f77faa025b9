//! `outbox_seaorm::connect` / `ConnectSettings` on a real SQLite file: the pragmas it
//! sets, the relay's pool size, and a writer committing while the store drains the same
//! file without a busy error.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use outbox_core::{OutboxMessage, OutboxSchema, OutboxStore, RelayOptions};
use outbox_seaorm::{ConnectSettings, Outbox, SeaOrmStore};
use outbox_tests::sqlite_url;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use sea_orm_migration::SchemaManager;

/// Removes the test's database file (and its WAL files) when the test ends.
struct FileGuard(String);

impl Drop for FileGuard {
    fn drop(&mut self) {
        let path = self
            .0
            .trim_start_matches("sqlite://")
            .split('?')
            .next()
            .unwrap_or_default()
            .to_owned();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{path}{suffix}"));
        }
    }
}

async fn pragma(db: &DatabaseConnection, name: &str) -> String {
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Sqlite,
            format!("PRAGMA {name}"),
        ))
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("PRAGMA {name} returned no row"));
    row.try_get_by_index::<String>(0)
        .or_else(|_| row.try_get_by_index::<i64>(0).map(|v| v.to_string()))
        .unwrap()
}

#[tokio::test]
async fn the_helper_sets_wal_normal_sync_and_a_busy_timeout() {
    let url = sqlite_url();
    let _file = FileGuard(url.clone());
    let db = outbox_seaorm::connect(&url).await.unwrap();
    assert_eq!(pragma(&db, "journal_mode").await, "wal");
    // 1 = NORMAL (0 OFF, 2 FULL, 3 EXTRA).
    assert_eq!(pragma(&db, "synchronous").await, "1");
    assert_eq!(pragma(&db, "busy_timeout").await, "5000");
    assert_eq!(pragma(&db, "foreign_keys").await, "1");
    // The application's pool: one connection, the one writer path.
    assert_eq!(
        db.get_sqlite_connection_pool()
            .options()
            .get_max_connections(),
        1
    );

    let full = ConnectSettings::new(url.as_str())
        .sqlite_synchronous_full()
        .connect()
        .await
        .unwrap();
    assert_eq!(pragma(&full, "synchronous").await, "2");
    assert_eq!(pragma(&full, "journal_mode").await, "wal");
}

#[tokio::test]
async fn the_relay_pool_holds_one_connection_per_lane_plus_two() {
    let url = sqlite_url();
    let _file = FileGuard(url.clone());
    let options = RelayOptions::builder()
        .max_concurrent_lanes(5)
        .build()
        .unwrap();
    let settings = ConnectSettings::new(url.as_str()).for_relay(&options);
    assert_eq!(settings.pool_size(), Some(7));
    let db = settings.connect().await.unwrap();
    assert_eq!(
        db.get_sqlite_connection_pool()
            .options()
            .get_max_connections(),
        7
    );
    let defaults = RelayOptions::builder().build().unwrap();
    let explicit = ConnectSettings::new(url.as_str())
        .for_relay(&defaults)
        .max_connections(3);
    assert_eq!(explicit.pool_size(), Some(3));
    assert_eq!(
        ConnectSettings::new(url.as_str())
            .for_relay(&defaults)
            .pool_size(),
        Some(10)
    );
}

/// The shape of the demo: a service commits rows one transaction at a time while the
/// relay's store, on its own pool, reads and deletes them from several lanes at once and
/// samples the backlog. Every call must succeed (no `SQLITE_BUSY`, no "database is
/// locked") and every row must be drained.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_writer_and_draining_lanes_share_the_file_without_busy_errors() {
    const ROWS: usize = 400;
    const LANES: i32 = 4;
    let url = sqlite_url();
    let _file = FileGuard(url.clone());
    let schema = OutboxSchema::builder().bucket_count(8).build().unwrap();
    let db = outbox_seaorm::connect(&url).await.unwrap();
    for migration in outbox_seaorm::migrations(schema.clone()) {
        migration.up(&SchemaManager::new(&db)).await.unwrap();
    }
    let options = RelayOptions::builder()
        .schema(schema.clone())
        .max_concurrent_lanes(LANES as usize)
        .build()
        .unwrap();
    let store_db = ConnectSettings::new(url.as_str())
        .for_relay(&options)
        .connect()
        .await
        .unwrap();
    let store = SeaOrmStore::new(store_db, schema.clone()).unwrap();
    let outbox = Outbox::new(schema.clone());
    let written = Arc::new(AtomicBool::new(false));

    let writer = {
        let (db, outbox, written) = (db.clone(), outbox.clone(), Arc::clone(&written));
        tokio::spawn(async move {
            for n in 0..ROWS {
                let txn = outbox.begin(&db).await.unwrap();
                txn.enqueue(
                    OutboxMessage::builder("orders")
                        .key(format!("customer-{}", n % 40))
                        .value("{}"),
                )
                .await
                .unwrap();
                txn.commit().await.unwrap();
            }
            written.store(true, Ordering::SeqCst);
        })
    };
    // Lane `l` owns buckets l, l + LANES, ...; it drains until the writer is done and
    // a whole pass over its buckets found nothing.
    let lanes: Vec<_> = (0..LANES)
        .map(|lane| {
            let (store, written) = (store.clone(), Arc::clone(&written));
            tokio::spawn(async move {
                let mut drained = 0;
                loop {
                    let done = written.load(Ordering::SeqCst);
                    let mut found = 0;
                    for bucket in (lane..8).step_by(LANES as usize) {
                        let batch = store.next_batch(bucket, None, 50).await.unwrap();
                        if !batch.is_empty() {
                            store.delete_published(bucket, &batch).await.unwrap();
                            found += batch.len();
                        }
                    }
                    drained += found;
                    if done && found == 0 {
                        return drained;
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let sampler = {
        let (store, written) = (store.clone(), Arc::clone(&written));
        tokio::spawn(async move {
            let mut samples = 0_u32;
            while !written.load(Ordering::SeqCst) {
                store.pending_metrics().await.unwrap();
                samples += 1;
                tokio::task::yield_now().await;
            }
            samples
        })
    };

    writer.await.unwrap();
    let mut drained = 0;
    for lane in lanes {
        drained += lane.await.unwrap();
    }
    assert!(sampler.await.unwrap() > 0);
    assert_eq!(drained, ROWS, "every committed row drained exactly once");
    let left = store.pending_metrics().await.unwrap().unwrap();
    assert_eq!(left.count, 0);
}
