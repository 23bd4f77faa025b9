//! The keyset cursor against late commits, with real concurrent transactions, and on
//! PostgreSQL the proof that it is really used when it is safe.

use std::sync::Arc;
use std::time::Duration;

use outbox_core::testing::contract::row;
use outbox_core::{OutboxMessage, OutboxStore};
use outbox_seaorm::{OutboxTables, SeaOrmStore, insert_rows};
use sea_orm::{
    AccessMode, ConnectionTrait, DatabaseTransaction, IsolationLevel, Statement, TransactionTrait,
};

use crate::on_each_database;
use crate::support::{Kind, TestDb};

const BUCKET: i32 = 3;

pub(crate) fn keyed(key: &str, created_ms: u64) -> OutboxMessage {
    let mut m = row(BUCKET, created_ms);
    m.key = Some(key.as_bytes().to_vec());
    m
}

/// PostgreSQL: gives `txn` its transaction id now (it keeps it until it ends) and
/// returns it.
pub(crate) async fn take_xid(txn: &DatabaseTransaction) -> i64 {
    let row = txn
        .query_one_raw(Statement::from_string(
            txn.get_database_backend(),
            "SELECT pg_current_xact_id()::text::bigint AS xid",
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get("", "xid").unwrap()
}

fn ids(batch: &[OutboxMessage]) -> Vec<i64> {
    batch.iter().map(|m| m.id).collect()
}

/// r50 (key k) is inserted and stays uncommitted; r60 (key j) commits and is read, so
/// the relay's cursor is r60; r50 commits; r70 (key k) commits. The cursor read after
/// r60 must not hand out r70 while r50 was never returned: key k would be published out
/// of order.
async fn cursor_does_not_skip_a_late_commit(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let store = tdb.store(&tables);
    if tdb.kind == Kind::Sqlite {
        return serialized_writers_keep_the_cursor_exact(&tdb, &tables, &store).await;
    }
    let slow = tdb.observer.begin().await.unwrap();
    insert_rows(&slow, &tables, &[keyed("k", 0)]).await.unwrap();
    insert_rows(&tdb.db, &tables, &[keyed("j", 1)])
        .await
        .unwrap();

    let first = store.next_batch(BUCKET, None, 10).await.unwrap();
    assert_eq!(first.len(), 1, "only r60 is visible: {first:?}");
    let r60 = first[0].id;

    slow.commit().await.unwrap();
    insert_rows(&tdb.db, &tables, &[keyed("k", 2)])
        .await
        .unwrap();
    let all = tdb.pending(&tables).await;
    let (r50, r70) = (all[0].id, all[2].id);
    assert!(r50 < r60 && r60 < r70, "ids {r50} < {r60} < {r70}");

    let next = store.next_batch(BUCKET, Some(r60), 10).await.unwrap();
    let got = ids(&next);
    assert!(
        got.contains(&r50),
        "the cursor read after {r60} returned {got:?}: r50 ({r50}) committed late and was \
         never returned, so it must come now (r70 is {r70})"
    );
    assert!(
        got.iter().position(|id| *id == r50) < got.iter().position(|id| *id == r70),
        "r50 before r70: {got:?}"
    );
}

/// SQLite: one write transaction at a time, so a lower id cannot commit after a higher
/// one was read, and the store honours the cursor as given.
async fn serialized_writers_keep_the_cursor_exact(
    tdb: &TestDb,
    tables: &OutboxTables,
    store: &SeaOrmStore,
) {
    insert_rows(&tdb.db, tables, &[keyed("k", 0), keyed("j", 1)])
        .await
        .unwrap();
    let first = store.next_batch(BUCKET, None, 10).await.unwrap();
    assert_eq!(first.len(), 2);
    insert_rows(&tdb.db, tables, &[keyed("k", 2)])
        .await
        .unwrap();
    let next = store
        .next_batch(BUCKET, Some(first[1].id), 10)
        .await
        .unwrap();
    assert_eq!(next.len(), 1, "the cursor is honoured: {next:?}");
    assert!(next[0].id > first[1].id);
}

on_each_database!(late_commit_and_cursor => super::cursor_does_not_skip_a_late_commit);

/// Reads `bucket` the way a relay lane does (cursor = last id of the previous batch),
/// deleting each batch, until it is empty. Returns the last cursor.
async fn drain(store: &SeaOrmStore, bucket: i32, mut cursor: Option<i64>) -> Option<i64> {
    loop {
        let batch = store.next_batch(bucket, cursor, 1000).await.unwrap();
        let Some(last) = batch.last() else {
            return cursor;
        };
        cursor = Some(last.id);
        store.delete_published(bucket, &batch).await.unwrap();
    }
}

async fn insert_many(tdb: &TestDb, tables: &OutboxTables, n: u64) {
    let rows: Vec<OutboxMessage> = (0..n).map(|i| keyed("bulk", i)).collect();
    let txn = tdb.db.begin().await.unwrap();
    insert_rows(&txn, tables, &rows).await.unwrap();
    txn.commit().await.unwrap();
}

/// Where the store's next cursor read after `cursor` starts, once one more row was
/// written and read. Transaction ids are cluster-wide, so another session's transaction
/// on this server can hold the safe point back for a while: retry for up to 20 s.
async fn start_once_settled(
    tdb: &TestDb,
    tables: &OutboxTables,
    store: &SeaOrmStore,
    cursor: Option<i64>,
    at_least: i64,
) -> (Option<i64>, Option<i64>) {
    let mut cursor = cursor;
    for _ in 0..200 {
        insert_rows(&tdb.db, tables, &[keyed("probe", 0)])
            .await
            .unwrap();
        cursor = drain(store, BUCKET, cursor).await;
        if let Some(Some(start)) = store.last_read_start(BUCKET)
            && start >= at_least
        {
            return (Some(start), cursor);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (store.last_read_start(BUCKET).flatten(), cursor)
}

/// The cursor is honoured past 20,000 dead rows that a long read-only snapshot keeps
/// from being vacuumed (it has no xid, so it does not hold the proof back), and falls
/// back to the last safe point while a write transaction that began before the reads is
/// open (it could still commit a lower id).
async fn postgres_cursor_is_used_when_safe(tdb: Arc<TestDb>) {
    assert_eq!(tdb.kind, Kind::Postgres);
    let tables = tdb.fresh_tables().await;
    let store = tdb.store(&tables);
    let reader = tdb
        .observer
        .begin_with_config(
            Some(IsolationLevel::RepeatableRead),
            Some(AccessMode::ReadOnly),
        )
        .await
        .unwrap();
    reader
        .execute_unprepared("SELECT count(*) FROM pg_class")
        .await
        .unwrap();

    insert_many(&tdb, &tables, 20_000).await;
    let cursor = drain(&store, BUCKET, None).await;
    let last_dead = cursor.unwrap();
    let (start, cursor) = start_once_settled(&tdb, &tables, &store, cursor, last_dead).await;
    assert!(
        start >= Some(last_dead),
        "with only a read-only snapshot open, the cursor read starts past the 20,000 dead \
         rows (last {last_dead}), not at {start:?}"
    );

    // A write transaction (with an xid) opens; from now on nothing proves that it will
    // not commit a lower id, so the reads do not start past what was safe before it.
    let writer = tdb.observer.begin().await.unwrap();
    take_xid(&writer).await;
    let pinned = cursor.unwrap();
    insert_many(&tdb, &tables, 3_000).await;
    let mut cursor = cursor;
    for _ in 0..3 {
        let batch = store.next_batch(BUCKET, cursor, 1000).await.unwrap();
        let start = store.last_read_start(BUCKET).unwrap();
        assert!(
            start.is_none_or(|s| s <= pinned),
            "while a writer that began before the read is open, the read starts at or \
             below {pinned}, not at {start:?}"
        );
        cursor = batch.last().map(|m| m.id).or(cursor);
        store.delete_published(BUCKET, &batch).await.unwrap();
    }
    writer.rollback().await.unwrap();
    let at_least = cursor.unwrap();
    let (start, _) = start_once_settled(&tdb, &tables, &store, cursor, at_least).await;
    assert!(
        start >= Some(at_least),
        "once the writer ended, the cursor is honoured again: {start:?} < {at_least}"
    );
    reader.rollback().await.unwrap();
}

mod cursor_used_when_safe {
    use crate::support::{Kind, run};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        run(Kind::Postgres, super::postgres_cursor_is_used_when_safe).await
    }
}
