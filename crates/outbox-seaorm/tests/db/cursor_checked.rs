//! PostgreSQL: the checked cursor read. When a lane's cursor `a` lies above the bucket's
//! safe point `p` (the usual case while other lanes' deletes hold transaction ids, so no
//! read's own record matures at once), the store reads past `a` and, in the same
//! statement, lists the visible ids in `(p, a]`. The read counts only if each of them
//! was returned before and a record covering `a` has matured; otherwise the store reads
//! from the head.
//!
//! Both outcomes are set up for certain: a transaction that holds an xid across the read
//! that returned `b` keeps that read's record from maturing at once (so `p` stays below
//! the cursor `b`), and the test waits until a fresh snapshot's xmin has passed an xid
//! taken after that read, then lets the store see such a snapshot through a read of
//! another bucket, so the read after `b` is planned as a checked one.

use std::sync::Arc;
use std::time::Duration;

use outbox_core::OutboxStore;
use outbox_seaorm::{OutboxTables, SeaOrmStore, insert_rows};
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};

use crate::cursor::{keyed, take_xid};
use crate::support::{Kind, TestDb};

const BUCKET: i32 = 3;
const OTHER_BUCKET: i32 = 4;

/// A fresh snapshot's xmin, on a connection of its own.
async fn fresh_xmin(tdb: &TestDb) -> i64 {
    let row = tdb
        .observer
        .query_one_raw(Statement::from_string(
            tdb.backend(),
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin",
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get("", "xmin").unwrap()
}

/// Inserts one committed row and returns its id.
async fn insert_one(tdb: &TestDb, tables: &OutboxTables, key: &str) -> i64 {
    insert_rows(&tdb.db, tables, &[keyed(key, 0)])
        .await
        .unwrap();
    tdb.pending(tables).await.last().unwrap().id
}

/// Reads after `a` until the store honours it as a plain cursor read (the safe point
/// reached `a`). Other sessions' transactions on the server can hold that back a while.
async fn settle_safe_point_at(tdb: &TestDb, store: &SeaOrmStore, a: i64) {
    for _ in 0..400 {
        store.next_batch(BUCKET, Some(a), 10).await.unwrap();
        if store.last_read_start(BUCKET) == Some(Some(a)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the read after {a} was never honoured (on {:?}); last start {:?}",
        tdb.kind,
        store.last_read_start(BUCKET)
    );
}

/// Lets the store see a snapshot whose xmin is past `xid` (a read of another bucket).
async fn let_the_store_see_xmin_past(tdb: &TestDb, store: &SeaOrmStore, xid: i64) {
    for _ in 0..400 {
        if fresh_xmin(tdb).await > xid {
            store.next_batch(OTHER_BUCKET, None, 1).await.unwrap();
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no snapshot's xmin passed xid {xid} within 20 s");
}

/// An xid assigned now (by a transaction that commits at once).
async fn an_xid_from_now(tdb: &TestDb) -> i64 {
    let txn = tdb.observer.begin().await.unwrap();
    let xid = take_xid(&txn).await;
    txn.commit().await.unwrap();
    xid
}

/// Sets up `a` (safe), then `b` read past `a` while a transaction holds an xid: with
/// `late`, that transaction holds a row `l` with `a < l < b` and commits it after `b`
/// was read. Returns the store, the tables and `(a, b, l)`.
async fn cursor_above_the_safe_point(
    tdb: &TestDb,
    late: bool,
) -> (SeaOrmStore, OutboxTables, i64, i64, Option<i64>) {
    let tables = tdb.fresh_tables().await;
    let store = tdb.store(&tables);
    let a = insert_one(tdb, &tables, "a").await;
    store.next_batch(BUCKET, None, 10).await.unwrap();
    settle_safe_point_at(tdb, &store, a).await;

    let holder = tdb.observer.begin().await.unwrap();
    take_xid(&holder).await;
    if late {
        insert_rows(&holder, &tables, &[keyed("l", 1)])
            .await
            .unwrap();
    }
    let b = insert_one(tdb, &tables, "b").await;
    let read = store.next_batch(BUCKET, Some(a), 10).await.unwrap();
    assert_eq!(store.last_read_start(BUCKET), Some(Some(a)));
    assert_eq!(
        read.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![b],
        "only b is visible past a"
    );
    let after_read = an_xid_from_now(tdb).await;
    holder.commit().await.unwrap();
    let l = if late {
        Some(tdb.pending(&tables).await[1].id)
    } else {
        None
    };
    let_the_store_see_xmin_past(tdb, &store, after_read).await;
    (store, tables, a, b, l)
}

/// A row that committed late between the safe point and the cursor is found: the
/// check lists it, no read returned it, so the store reads from the head and returns it. (A check that always passed would return nothing past `b` and skip it.)
async fn a_late_row_below_the_cursor_is_returned(tdb: Arc<TestDb>) {
    assert_eq!(tdb.kind, Kind::Postgres);
    let (store, _tables, a, b, l) = cursor_above_the_safe_point(&tdb, true).await;
    let l = l.unwrap();
    assert!(a < l && l < b, "ids {a} < {l} < {b}");
    let got: Vec<i64> = store
        .next_batch(BUCKET, Some(b), 10)
        .await
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(
        got,
        vec![a, l, b],
        "l ({l}) committed after b ({b}) was read past a ({a}); the read after b must \
         return it (from the head: a and b are still there, unpublished in this test)"
    );
    assert_eq!(store.last_read_start(BUCKET), Some(None), "from the head");
}

/// Without a late row the checked read counts: it starts past `b`, and the safe point
/// moves to `b`, so the next read after `b` is a plain cursor read.
async fn a_clean_check_honours_the_cursor(tdb: Arc<TestDb>) {
    assert_eq!(tdb.kind, Kind::Postgres);
    let (store, tables, _a, b, _) = cursor_above_the_safe_point(&tdb, false).await;
    let got = store.next_batch(BUCKET, Some(b), 10).await.unwrap();
    assert!(got.is_empty(), "nothing past b: {got:?}");
    assert_eq!(
        store.last_read_start(BUCKET),
        Some(Some(b)),
        "the checked read past b counted"
    );
    let c = insert_one(&tdb, &tables, "c").await;
    let got = store.next_batch(BUCKET, Some(b), 10).await.unwrap();
    assert_eq!(got.iter().map(|m| m.id).collect::<Vec<_>>(), vec![c]);
    assert_eq!(store.last_read_start(BUCKET), Some(Some(b)));
}

mod checked {
    use crate::support::{Kind, run};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_late_row_below_the_cursor_is_returned_postgres() {
        run(
            Kind::Postgres,
            super::a_late_row_below_the_cursor_is_returned,
        )
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_clean_check_honours_the_cursor_postgres() {
        run(Kind::Postgres, super::a_clean_check_honours_the_cursor).await
    }
}
