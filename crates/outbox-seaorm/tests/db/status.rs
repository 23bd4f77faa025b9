//! The operator's status read back from each database: heartbeats and leases written by
//! real acquisitions, pending rows in several buckets (two beyond the bucket count), a
//! row parked through the store; and tables that are not there fail with the fix named.

use std::sync::Arc;
use std::time::Duration;

use outbox_core::{
    LeaseRequest, LeaseState, Misconfiguration, OutOfRange, OutboxMessage, OutboxSchema,
    OutboxStore, ParkReason, ParkRequest, ParkRow, ParkedFailure, StoreError, Timestamp, Uuid,
};
use outbox_seaorm::{SeaOrmStore, SqlNames, insert_rows};
use sea_orm::ConnectionTrait;
use sea_query::{Expr, ExprTrait, Query};

use crate::on_each_database;
use crate::support::TestDb;

const LEASE: Duration = Duration::from_secs(30);
const BUCKETS: u32 = 4;
/// The instant the status is judged at; every stamp is relative to it.
const T0: Timestamp = Timestamp::from_millis(1_765_000_000_000);

fn at(offset_secs: i64) -> Timestamp {
    Timestamp::from_millis(T0.as_millis() + offset_secs * 1000)
}

fn row(bucket: i32, created_secs: i64) -> OutboxMessage {
    OutboxMessage {
        id: 0,
        message_id: Uuid::now_v7(),
        bucket,
        topic: "orders".into(),
        key: Some(b"k".to_vec()),
        value: Some(b"{}".to_vec()),
        headers: None,
        partition: None,
        created_at: at(created_secs),
        store_ref: None,
    }
}

async fn acquire(store: &SeaOrmStore, relay_id: &str, now: Timestamp) -> Vec<i32> {
    let request = LeaseRequest {
        relay_id,
        bucket_count: BUCKETS,
        lease_duration: LEASE,
        now,
        busy: &[],
    };
    store.acquire_leases(&request).await.unwrap().held
}

async fn status_reads_back_what_the_relays_and_writers_left(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables_in_own_schema().await;
    let schema = OutboxSchema::builder()
        .tables(tables.clone())
        .bucket_count(BUCKETS)
        .build()
        .unwrap();
    let store = SeaOrmStore::new(tdb.db.clone(), schema).unwrap();

    // A relay that stopped beating 100 s ago; then relay-a takes everything over, relay-b
    // joins, and relay-a gives up the half above its share.
    assert_eq!(acquire(&store, "relay-old", at(-100)).await, [0, 1, 2, 3]);
    assert_eq!(acquire(&store, "relay-a", at(-1)).await, [0, 1, 2, 3]);
    assert!(acquire(&store, "relay-b", at(-1)).await.is_empty());
    assert_eq!(acquire(&store, "relay-a", T0).await, [0, 1]);
    // Bucket 3 as a crashed owner leaves it: its lease ran out 70 s ago.
    let expire = Query::update()
        .table(tables.leases_name())
        .value("owner", "relay-old")
        .value("expires_at_ms", at(-70).as_millis())
        .and_where(Expr::col("bucket").eq(3))
        .to_owned();
    tdb.db.execute(&expire).await.unwrap();

    // Pending rows in buckets 0 and 2, and two a writer put beyond the bucket count.
    let rows = [
        row(0, -50),
        row(0, -20),
        row(2, -5),
        row(BUCKETS as i32, -1),
        row(-1, -1),
    ];
    insert_rows(&tdb.db, &tables, &rows).await.unwrap();
    // relay-a parks bucket 0's oldest row, under its lease.
    let head = store.next_batch(0, None, 1).await.unwrap();
    assert_eq!(head[0].message_id, rows[0].message_id);
    let park = [ParkRow {
        message: head[0].clone(),
        reason: ParkReason::Failed(ParkedFailure {
            error: "refused".into(),
            attempts: 3,
            first_failed_at: at(-3),
            last_failed_at: at(-1),
        }),
    }];
    let outcome = store
        .park_rows(&ParkRequest {
            relay_id: "relay-a",
            now: T0,
            bucket: 0,
            rows: &park,
        })
        .await
        .unwrap();
    assert_eq!(outcome.parked, [head[0].id]);

    let status = store.status(at(2), LEASE).await.unwrap();
    assert_eq!(status.bucket_count, BUCKETS);
    assert_eq!(status.now, at(2));

    type RelayLine<'a> = (&'a str, bool, Duration, Option<u32>, &'a [i32]);
    let relays: Vec<RelayLine<'_>> = status
        .relays
        .iter()
        .map(|r| {
            (
                r.relay_id.as_str(),
                r.alive,
                r.age,
                r.fair_share,
                r.owned.as_slice(),
            )
        })
        .collect();
    assert_eq!(
        relays,
        [
            (
                "relay-a",
                true,
                Duration::from_secs(2),
                Some(2),
                &[0, 1][..]
            ),
            ("relay-b", true, Duration::from_secs(3), Some(2), &[][..]),
            ("relay-old", false, Duration::from_secs(102), None, &[][..]),
        ]
    );

    let b = &status.buckets;
    assert_eq!(b.len(), 4);
    assert_eq!(
        b[0].lease,
        LeaseState::Held {
            owner: "relay-a".into(),
            expires_at: at(30),
            left: Duration::from_secs(28),
            owner_alive: true,
        }
    );
    assert_eq!(b[1].lease.holder(), Some("relay-a"));
    assert_eq!(
        b[2].lease,
        LeaseState::Free,
        "released above relay-a's share"
    );
    assert_eq!(
        b[3].lease,
        LeaseState::Expired {
            owner: "relay-old".into(),
            expired_at: at(-70),
            ago: Duration::from_secs(72),
        }
    );
    let counts: Vec<(u64, u64)> = b.iter().map(|b| (b.pending, b.parked)).collect();
    assert_eq!(counts, [(1, 1), (0, 0), (1, 0), (0, 0)]);
    assert_eq!(b[0].oldest_pending, Some(at(-20)), "the parked row left");
    assert_eq!(b[0].oldest_pending_age, Some(Duration::from_secs(22)));
    assert_eq!(b[2].oldest_pending, Some(at(-5)));
    assert_eq!(b[1].oldest_pending, None);
    assert_eq!(
        status.out_of_range,
        [
            OutOfRange {
                bucket: -1,
                pending: 1,
                parked: 0
            },
            OutOfRange {
                bucket: BUCKETS as i32,
                pending: 1,
                parked: 0
            },
        ]
    );
    assert_eq!(status.pending(), 2);
    assert_eq!(status.parked(), 1);

    // The snapshot is the raw rows: the parked row's stamp is the parking relay's clock.
    let snapshot = store.status_snapshot().await.unwrap();
    assert_eq!(snapshot.parked[&0].oldest, Some(T0));
    assert_eq!(snapshot.leases.relays.len(), 3);
}

async fn missing_tables_name_the_fix(tdb: Arc<TestDb>) {
    let tables = outbox_tests::database::unique_tables("absent");
    let store = SeaOrmStore::new(tdb.db.clone(), tables).unwrap();
    let error = store.status(T0, LEASE).await.unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Misconfigured(Misconfiguration::DatabaseSetup { .. })
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("run the outbox migrations"),
        "{error}"
    );
}

on_each_database!(status_reads_back => super::status_reads_back_what_the_relays_and_writers_left);
on_each_database!(status_of_missing_tables => super::missing_tables_name_the_fix);
