//! An acquisition costs the same few statements whatever the bucket count: with one
//! statement per bucket, a relay behind a slow link (or owning many buckets) spends
//! longer acquiring than its lease lasts, and loses every bucket it just won.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use outbox_core::{LeaseRequest, OutboxSchema, OutboxStore, Timestamp};
use outbox_seaorm::SeaOrmStore;
use sea_orm::Database;

use crate::on_each_database;
use crate::support::TestDb;

/// Heartbeat, two reads, forget, create, release, extend, claim, read-back.
const MAX_STATEMENTS: usize = 9;
const LEASE: Duration = Duration::from_secs(30);
const T0: Timestamp = Timestamp::from_millis(1_765_000_000_000);

/// Statements per step of a fixed scenario, at `bucket_count` buckets.
async fn statements_per_step(tdb: &TestDb, bucket_count: u32) -> Vec<(&'static str, usize)> {
    let tables = tdb.fresh_tables().await;
    let count = Arc::new(AtomicUsize::new(0));
    let mut db = Database::connect(&tdb.url).await.unwrap();
    let counter = Arc::clone(&count);
    db.set_metric_callback(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let schema = OutboxSchema::builder()
        .tables(tables)
        .bucket_count(bucket_count)
        .build()
        .unwrap();
    let store = SeaOrmStore::new(db, schema).unwrap();
    let at = |s: u64| T0.saturating_add(Duration::from_secs(s));
    let steps = [
        (
            "first acquisition: create and claim every row",
            "relay-a",
            0,
        ),
        ("re-acquisition: extend", "relay-a", 1),
        ("newcomer facing live leases", "relay-b", 2),
        ("owner above its share: release and extend", "relay-a", 3),
        ("newcomer: claim the released half", "relay-b", 4),
    ];
    let mut out = Vec::new();
    let mut held = Vec::new();
    for (name, relay_id, second) in steps {
        let before = count.load(Ordering::SeqCst);
        let request = LeaseRequest {
            relay_id,
            bucket_count,
            lease_duration: LEASE,
            now: at(second),
            busy: &[],
        };
        held.push(store.acquire_leases(&request).await.unwrap().held.len());
        out.push((name, count.load(Ordering::SeqCst) - before));
    }
    let all = usize::try_from(bucket_count).unwrap();
    assert_eq!(
        held,
        [all, all, 0, all / 2, all / 2],
        "the scenario ran as planned at {bucket_count} buckets"
    );
    out
}

async fn acquisition_statements_do_not_grow_with_buckets(tdb: Arc<TestDb>) {
    let small = statements_per_step(&tdb, 8).await;
    let large = statements_per_step(&tdb, 256).await;
    println!("statements per acquisition step at 8 and 256 buckets: {small:?} / {large:?}");
    assert_eq!(
        small, large,
        "an acquisition costs the same statements at 8 and 256 buckets"
    );
    for (step, statements) in &large {
        assert!(
            *statements <= MAX_STATEMENTS,
            "{step}: {statements} statements, more than {MAX_STATEMENTS}"
        );
    }
}

on_each_database!(acquisition_statements_do_not_grow_with_buckets => super::acquisition_statements_do_not_grow_with_buckets);
