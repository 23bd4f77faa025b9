//! Enqueue inside the business transaction, and the commit hook.

use std::collections::BTreeSet;
use std::sync::Arc;

use outbox_core::{EnqueueConfig, OutboxMessage};
use outbox_seaorm::{EnqueueError, Outbox, OutboxTables};
use sea_orm::{ConnectionTrait, DbErr, Statement, TransactionError, TransactionTrait};

use crate::on_each_database;
use crate::support::{Kind, Recorder, TestDb};

fn outbox(tables: &OutboxTables, recorder: &Arc<Recorder>) -> Outbox {
    let config = EnqueueConfig::from(tables.clone()); // 8 buckets
    Outbox::new(config).with_notifier(recorder.clone())
}

fn msg(key: &str) -> outbox_core::MessageBuilder {
    OutboxMessage::builder("orders")
        .key(key)
        .value(format!("value of {key}"))
}

/// Buckets of the rows now in the table.
async fn stored_buckets(tdb: &TestDb, tables: &OutboxTables) -> Vec<i32> {
    let set: BTreeSet<i32> = tdb.pending(tables).await.iter().map(|m| m.bucket).collect();
    set.into_iter().collect()
}

/// A business table written in the same transaction as the outbox rows.
async fn business_table(tdb: &TestDb) -> String {
    let name = tdb.extra_table("orders");
    tdb.db
        .execute_unprepared(&format!(
            "CREATE TABLE {name} (id BIGINT NOT NULL PRIMARY KEY)"
        ))
        .await
        .unwrap();
    name
}

async fn insert_order(conn: &impl ConnectionTrait, table: &str, id: i64) -> Result<(), DbErr> {
    let placeholder = if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
        "$1"
    } else {
        "?"
    };
    conn.execute_raw(Statement::from_sql_and_values(
        conn.get_database_backend(),
        format!("INSERT INTO {table} (id) VALUES ({placeholder})"),
        [id.into()],
    ))
    .await
    .map(|_| ())
}

async fn orders(tdb: &TestDb, table: &str) -> usize {
    tdb.db
        .query_all_raw(Statement::from_string(
            tdb.backend(),
            format!("SELECT id FROM {table}"),
        ))
        .await
        .unwrap()
        .len()
}

/// Commit: the business row and the messages appear together, and the notifier hears the
/// distinct buckets of every save in the transaction, once, only after the commit.
async fn commit_notifies_with_bucket_hints(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let orders_table = business_table(&tdb).await;
    let recorder = Recorder::new();
    let outbox = outbox(&tables, &recorder);

    let txn = outbox.begin(&tdb.db).await.unwrap();
    insert_order(&txn, &orders_table, 7).await.unwrap();
    let first = txn.enqueue(msg("order-7")).await.unwrap();
    let second = outbox
        .enqueue_all(&txn, (0..20).map(|i| msg(&format!("order-{i}"))))
        .await
        .unwrap();
    assert_eq!((first.len(), second.len()), (1, 20));
    assert!(recorder.calls().is_empty(), "nothing before the commit");
    assert_eq!(tdb.count(&tables).await, 0, "invisible before the commit");

    let expected: BTreeSet<i32> = first
        .buckets()
        .iter()
        .chain(second.buckets())
        .copied()
        .collect();
    assert_eq!(
        txn.pending_buckets(),
        expected.iter().copied().collect::<Vec<_>>()
    );
    txn.commit().await.unwrap();

    assert_eq!(
        recorder.calls(),
        vec![Some(expected.iter().copied().collect::<Vec<_>>())],
        "one notification with the distinct buckets"
    );
    assert_eq!(
        stored_buckets(&tdb, &tables).await,
        expected.into_iter().collect::<Vec<_>>()
    );
    assert_eq!(tdb.count(&tables).await, 21);
    assert_eq!(orders(&tdb, &orders_table).await, 1);
}

/// Rollback and drop-without-commit: nothing written, nobody notified.
async fn rollback_publishes_nothing(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let orders_table = business_table(&tdb).await;
    let recorder = Recorder::new();
    let outbox = outbox(&tables, &recorder);

    let txn = outbox.begin(&tdb.db).await.unwrap();
    insert_order(&txn, &orders_table, 1).await.unwrap();
    txn.enqueue(msg("a")).await.unwrap();
    txn.rollback().await.unwrap();

    {
        let dropped = outbox.begin(&tdb.db).await.unwrap();
        dropped.enqueue(msg("b")).await.unwrap();
        // Dropped here without commit: sea-orm rolls it back.
    }

    let result: Result<(), TransactionError<EnqueueError>> = outbox
        .transaction(&tdb.db, |txn| {
            let orders_table = orders_table.clone();
            Box::pin(async move {
                insert_order(txn, &orders_table, 2).await?;
                txn.enqueue(msg("c")).await?;
                // A business rule fails after the enqueue: the closure's error rolls back.
                Err(EnqueueError::Database(DbErr::Custom(
                    "business rule".into(),
                )))
            })
        })
        .await;
    assert!(
        matches!(result, Err(TransactionError::Transaction(_))),
        "{result:?}"
    );

    assert_eq!(tdb.count(&tables).await, 0);
    assert_eq!(orders(&tdb, &orders_table).await, 0);
    assert!(recorder.calls().is_empty(), "{:?}", recorder.calls());
}

/// The closure helper commits on `Ok` and notifies after the commit.
async fn closure_helper_commits_and_notifies(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let recorder = Recorder::new();
    let outbox = outbox(&tables, &recorder);
    let count = outbox
        .transaction::<_, usize, EnqueueError>(&tdb.db, |txn| {
            Box::pin(async move {
                let a = txn.enqueue(msg("k1")).await?;
                let b = txn.enqueue(msg("k2")).await?;
                Ok(a.len() + b.len())
            })
        })
        .await
        .unwrap();
    assert_eq!(count, 2);
    assert_eq!(
        recorder.calls(),
        vec![Some(stored_buckets(&tdb, &tables).await)]
    );
}

/// The application's own error type in a transaction body: `?` on sea-orm calls and on
/// enqueue in the same closure.
#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error("database: {0}")]
    Db(#[from] DbErr),
    #[error("outbox: {0}")]
    Enqueue(#[from] EnqueueError),
    #[error("business rule: {0}")]
    Rule(&'static str),
}

/// `?` works on sea-orm calls and on enqueue in one closure, with `EnqueueError` (which
/// converts from `DbErr`) and with an application error type; `Err` rolls both back.
async fn one_error_type_in_a_transaction_body(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let recorder = Recorder::new();
    let outbox = outbox(&tables, &recorder);
    let table = business_table(&tdb).await;

    let t = table.clone();
    outbox
        .transaction::<_, (), EnqueueError>(&tdb.db, |txn| {
            Box::pin(async move {
                insert_order(txn, &t, 1).await?; // DbErr -> EnqueueError
                txn.enqueue(msg("order-1")).await?;
                Ok(())
            })
        })
        .await
        .unwrap();

    let t = table.clone();
    outbox
        .transaction::<_, (), AppError>(&tdb.db, |txn| {
            Box::pin(async move {
                insert_order(txn, &t, 2).await?; // DbErr -> AppError
                txn.enqueue(msg("order-2")).await?; // EnqueueError -> AppError
                Ok(())
            })
        })
        .await
        .unwrap();

    let t = table.clone();
    let refused = outbox
        .transaction::<_, (), AppError>(&tdb.db, |txn| {
            Box::pin(async move {
                insert_order(txn, &t, 3).await?;
                txn.enqueue(msg("order-3")).await?;
                Err(AppError::Rule("total must be positive"))
            })
        })
        .await;
    assert!(matches!(
        refused,
        Err(TransactionError::Transaction(AppError::Rule(_)))
    ));
    let t = table.clone();
    let invalid = outbox
        .transaction::<_, (), AppError>(&tdb.db, |txn| {
            Box::pin(async move {
                insert_order(txn, &t, 4).await?;
                txn.enqueue(OutboxMessage::builder("bad topic!").value("x"))
                    .await?;
                Ok(())
            })
        })
        .await;
    assert!(matches!(
        invalid,
        Err(TransactionError::Transaction(AppError::Enqueue(
            EnqueueError::Invalid { .. }
        )))
    ));
    assert_eq!(
        orders(&tdb, &table).await,
        2,
        "the refused bodies rolled back"
    );
    assert_eq!(tdb.count(&tables).await, 2);
    assert_eq!(recorder.calls().len(), 2, "only the commits notified");
}

/// Without an explicit transaction the insert commits at once, and notifies at once; a
/// plain sea-orm transaction notifies nobody until the caller does.
async fn implicit_commit_and_plain_transactions(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let recorder = Recorder::new();
    let outbox = outbox(&tables, &recorder);

    let done = outbox.enqueue(&tdb.db, msg("auto")).await.unwrap();
    assert_eq!(recorder.calls(), vec![Some(done.buckets().to_vec())]);
    assert_eq!(tdb.count(&tables).await, 1);

    // More than one statement's worth through the pool: all in one implicit transaction.
    let many = outbox
        .enqueue_all(&tdb.db, (0..250).map(|i| msg(&format!("bulk-{i}"))))
        .await
        .unwrap();
    assert_eq!(many.len(), 250);
    assert_eq!(tdb.count(&tables).await, 251);
    assert_eq!(recorder.calls().len(), 2);

    let plain = tdb.db.begin().await.unwrap();
    let receipt = outbox.enqueue(&plain, msg("plain")).await.unwrap();
    plain.commit().await.unwrap();
    assert_eq!(recorder.calls().len(), 2, "a plain transaction has no hook");
    outbox.notify(&receipt);
    assert_eq!(
        recorder.calls().last(),
        Some(&Some(receipt.buckets().to_vec()))
    );
}

/// A commit the database refuses notifies nobody and leaves no rows.
async fn failed_commit_notifies_nothing(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let recorder = Recorder::new();
    let outbox = outbox(&tables, &recorder);

    // A statement that makes the COMMIT itself fail, prepared before the transaction
    // starts: a deferred constraint is only checked at commit.
    let violation = match tdb.kind {
        Kind::Postgres => {
            let aux = tdb.extra_table("deferred");
            tdb.db
                .execute_unprepared(&format!(
                    "CREATE TABLE {aux} (v INTEGER UNIQUE DEFERRABLE INITIALLY DEFERRED)"
                ))
                .await
                .unwrap();
            Some(format!("INSERT INTO {aux} (v) VALUES (1), (1)"))
        }
        Kind::Sqlite => {
            let parent = tdb.extra_table("parent");
            let child = tdb.extra_table("child");
            tdb.db
                .execute_unprepared(&format!("CREATE TABLE {parent} (id INTEGER PRIMARY KEY)"))
                .await
                .unwrap();
            tdb.db
                .execute_unprepared(&format!(
                    "CREATE TABLE {child} (pid INTEGER REFERENCES {parent}(id) DEFERRABLE INITIALLY DEFERRED)"
                ))
                .await
                .unwrap();
            Some(format!("INSERT INTO {child} (pid) VALUES (42)"))
        }
        Kind::MySql => None,
    };

    let txn = outbox.begin(&tdb.db).await.unwrap();
    txn.enqueue(msg("doomed")).await.unwrap();
    match violation {
        Some(sql) => {
            txn.execute_unprepared(&sql).await.unwrap();
        }
        // MySQL has no deferred constraints: the server drops the connection under the
        // transaction instead, so the COMMIT cannot succeed.
        None => {
            let row = txn
                .query_one_raw(Statement::from_string(
                    tdb.backend(),
                    "SELECT CONNECTION_ID() AS id",
                ))
                .await
                .unwrap()
                .unwrap();
            let id = row.try_get::<u64>("", "id").unwrap();
            tdb.observer
                .execute_unprepared(&format!("KILL CONNECTION {id}"))
                .await
                .unwrap();
        }
    }
    let result = txn.commit().await;
    assert!(result.is_err(), "the commit must fail: {result:?}");
    assert!(recorder.calls().is_empty(), "{:?}", recorder.calls());
    assert_eq!(tdb.count(&tables).await, 0);
}

on_each_database!(commit_notifies => super::commit_notifies_with_bucket_hints);
on_each_database!(rollback_and_drop => super::rollback_publishes_nothing);
on_each_database!(closure_helper => super::closure_helper_commits_and_notifies);
on_each_database!(implicit_commit => super::implicit_commit_and_plain_transactions);
on_each_database!(failed_commit => super::failed_commit_notifies_nothing);
on_each_database!(one_error_type => super::one_error_type_in_a_transaction_body);
