//! Two deliveries of one message at the same time: the second waits on the first's
//! inbox row and runs its handler only if the first rolled back.
//!
//! On PostgreSQL and MariaDB the test waits until the database itself shows the second
//! call inside its inbox insert (PostgreSQL: waiting on a lock; MariaDB: the statement
//! in progress) before letting the first finish, so the overlap is certain.
//! SQLite allows one writer at a time: there the second call waits for the write lock
//! (sqlx's busy timeout), which cannot be observed from outside, so the first is held
//! for a moment instead; the outcome checked is the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use outbox_core::Uuid;
use outbox_seaorm::{Inbox, InboxError, Processed};
use sea_orm::{ConnectionTrait, Database, DbErr, Statement};
use tokio::sync::oneshot;

use crate::inbox::{business_table, fresh_inbox, insert_order, orders};
use crate::on_each_database;
use crate::support::{Kind, TestDb};

/// How long to wait for the database to show the second call blocked.
const BLOCK_DEADLINE: Duration = Duration::from_secs(30);

/// Waits until another session is inside its insert into `table` (PostgreSQL, MariaDB), or
/// gives the second call a moment to reach its insert (SQLite).
async fn until_blocked(tdb: &TestDb, table: &str) {
    let sql = match tdb.kind {
        Kind::Postgres => format!(
            "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
             AND query LIKE '%{table}%' AND pid <> pg_backend_pid()"
        ),
        // MariaDB's INNODB_TRX does not list the waiting transaction of a prepared
        // statement reliably; the process list shows the insert in progress, which
        // with the first transaction still open means waiting on its row.
        Kind::MySql => format!(
            "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST \
             WHERE INFO LIKE 'INSERT IGNORE INTO `{table}`%'"
        ),
        Kind::Sqlite => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            return;
        }
    };
    let deadline = tokio::time::Instant::now() + BLOCK_DEADLINE;
    loop {
        let row = tdb
            .observer
            .query_one_raw(Statement::from_string(tdb.backend(), sql.clone()))
            .await
            .unwrap()
            .unwrap();
        if row.try_get::<i64>("", "n").unwrap() > 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the second delivery never reached its inbox insert"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs two deliveries of one id concurrently; the first one's handler holds its
/// transaction open until the second is blocked, then ends with `first_outcome`.
/// Returns both results and how many handler calls there were.
async fn race(
    tdb: &Arc<TestDb>,
    inbox: &Inbox,
    orders_table: &str,
    first_fails: bool,
) -> (
    Result<Processed<()>, InboxError<DbErr>>,
    Result<Processed<()>, InboxError<DbErr>>,
    usize,
) {
    let id = Uuid::now_v7();
    let calls = Arc::new(AtomicUsize::new(0));
    let (entered_tx, entered_rx) = oneshot::channel::<()>();
    let (release_tx, release_rx) = oneshot::channel::<()>();

    let first = {
        let (inbox, db, calls, table) = (
            inbox.clone(),
            tdb.db.clone(),
            Arc::clone(&calls),
            orders_table.to_owned(),
        );
        tokio::spawn(async move {
            inbox
                .process::<_, _, (), DbErr>(&db, "billing", id, move |txn| {
                    Box::pin(async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        insert_order(txn, &table, 1).await?;
                        let _ = entered_tx.send(());
                        let _ = release_rx.await;
                        if first_fails {
                            Err(DbErr::Custom("first attempt failed".into()))
                        } else {
                            Ok(())
                        }
                    })
                })
                .await
        })
    };
    entered_rx.await.unwrap();

    // Its own pool: SQLite pools have one connection, held by the first call.
    let db2 = Database::connect(&tdb.url).await.unwrap();
    let second = {
        let (inbox, calls, table) = (inbox.clone(), Arc::clone(&calls), orders_table.to_owned());
        tokio::spawn(async move {
            let out = inbox
                .process::<_, _, (), DbErr>(&db2, "billing", id, move |txn| {
                    Box::pin(async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        insert_order(txn, &table, 1).await?;
                        Ok(())
                    })
                })
                .await;
            let _ = db2.close().await;
            out
        })
    };
    until_blocked(tdb, inbox.table().table()).await;
    release_tx.send(()).unwrap();
    let first = first.await.unwrap();
    let second = second.await.unwrap();
    (first, second, calls.load(Ordering::SeqCst))
}

/// The first commits: the blocked second finds the id recorded and skips its handler.
async fn concurrent_duplicates_run_once(tdb: Arc<TestDb>) {
    let inbox = fresh_inbox(&tdb).await;
    let orders_table = business_table(&tdb).await;
    let (first, second, calls) = race(&tdb, &inbox, &orders_table, false).await;
    assert_eq!(first.unwrap(), Processed::Handled(()));
    assert_eq!(second.unwrap(), Processed::Duplicate);
    assert_eq!(calls, 1, "the handler ran once");
    assert_eq!(orders(&tdb, &orders_table).await, 1);
}

on_each_database!(inbox_concurrent_duplicates_run_once => super::concurrent_duplicates_run_once);

/// The first fails: the blocked second inserts the id after the rollback and processes
/// the message itself.
async fn concurrent_retry_after_failure(tdb: Arc<TestDb>) {
    let inbox = fresh_inbox(&tdb).await;
    let orders_table = business_table(&tdb).await;
    let (first, second, calls) = race(&tdb, &inbox, &orders_table, true).await;
    assert!(matches!(first, Err(InboxError::Handler(_))), "{first:?}");
    assert_eq!(second.unwrap(), Processed::Handled(()));
    assert_eq!(calls, 2);
    assert_eq!(orders(&tdb, &orders_table).await, 1);
}

on_each_database!(inbox_concurrent_retry_after_failure => super::concurrent_retry_after_failure);
