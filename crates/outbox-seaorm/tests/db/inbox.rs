//! The consumer inbox: once per (consumer, message id), atomically with the consumer's
//! writes; typed refusals; migration; custom names; retention purge.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use outbox_core::{EnqueueConfig, OutboxMessage, Timestamp, Uuid};
use outbox_seaorm::entity::message::timestamp_to_datetime;
use outbox_seaorm::{
    ConsumerNameError, Inbox, InboxError, InboxMigration, InboxTable, MessageIdError,
    MessageIdHeader, Outbox, Processed, Recorded,
};
use outbox_tests::unique_name;
use sea_orm::{ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, Statement};
use sea_orm_migration::{MigrationTrait, MigratorTrait, SchemaManager};
use sea_query::{Expr, ExprTrait, Query};

use crate::migrations::private_connection;
use crate::on_each_database;
use crate::support::{Kind, TestDb, run};

/// A fresh, migrated inbox table with a unique name (dropped at cleanup).
pub async fn fresh_inbox(tdb: &TestDb) -> Inbox {
    let table = InboxTable::builder()
        .table(tdb.extra_table("inbox"))
        .build()
        .unwrap();
    InboxMigration::new(table.clone())
        .up(&SchemaManager::new(&tdb.db))
        .await
        .unwrap();
    Inbox::new(table)
}

/// A business table the handlers write to.
pub async fn business_table(tdb: &TestDb) -> String {
    let name = tdb.extra_table("orders");
    tdb.db
        .execute_unprepared(&format!(
            "CREATE TABLE {name} (id BIGINT NOT NULL PRIMARY KEY)"
        ))
        .await
        .unwrap();
    name
}

pub async fn insert_order(conn: &impl ConnectionTrait, table: &str, id: i64) -> Result<(), DbErr> {
    let placeholder = if conn.get_database_backend() == DbBackend::Postgres {
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

/// Committed business rows, seen from the observer pool.
pub async fn orders(tdb: &TestDb, table: &str) -> usize {
    tdb.observer
        .query_all_raw(Statement::from_string(
            tdb.backend(),
            format!("SELECT id FROM {table}"),
        ))
        .await
        .unwrap()
        .len()
}

/// Committed inbox rows, seen from the observer pool.
async fn inbox_rows(tdb: &TestDb, inbox: &Inbox) -> i64 {
    let stmt = Query::select()
        .expr_as(Expr::col(sea_query::Asterisk).count(), "n")
        .from(inbox.table().table_ref())
        .to_owned();
    let row = tdb.observer.query_one(&stmt).await.unwrap().unwrap();
    row.try_get::<i64>("", "n").unwrap()
}

/// A handler that counts its calls and inserts order `id`.
fn counting_insert(
    calls: &Arc<AtomicUsize>,
    table: &str,
    id: i64,
) -> impl for<'c> FnOnce(
    &'c DatabaseTransaction,
) -> std::pin::Pin<
    Box<dyn Future<Output = Result<&'static str, DbErr>> + Send + 'c>,
> + Send
+ use<> {
    let calls = Arc::clone(calls);
    let table = table.to_owned();
    move |txn| {
        Box::pin(async move {
            calls.fetch_add(1, Ordering::SeqCst);
            insert_order(txn, &table, id).await?;
            Ok("done")
        })
    }
}

/// First delivery: handler runs, its write and the inbox row commit together. Second
/// delivery: no handler call, no change. A handler error rolls both back and the next
/// delivery processes the message.
async fn once_per_message(tdb: Arc<TestDb>) {
    let inbox = fresh_inbox(&tdb).await;
    let orders_table = business_table(&tdb).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let id = Uuid::now_v7();

    let before = Timestamp::now();
    let first = inbox
        .process(
            &tdb.db,
            "billing",
            id,
            counting_insert(&calls, &orders_table, 1),
        )
        .await
        .unwrap();
    assert_eq!(first, Processed::Handled("done"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(orders(&tdb, &orders_table).await, 1);
    assert!(
        inbox
            .is_processed(&tdb.observer, "billing", id)
            .await
            .unwrap()
    );
    assert_eq!(inbox_rows(&tdb, &inbox).await, 1);

    // processed_at is the processing time, stored in UTC.
    let row = tdb
        .observer
        .query_one(
            &Query::select()
                .column("processed_at")
                .from(inbox.table().table_ref())
                .to_owned(),
        )
        .await
        .unwrap()
        .unwrap();
    let at = row
        .try_get::<sea_orm::prelude::DateTimeWithTimeZone>("", "processed_at")
        .unwrap();
    let at = Timestamp::from_millis(at.timestamp_millis());
    assert!(
        at >= before && at <= Timestamp::now(),
        "{at} after {before}"
    );

    // Redelivery: nothing runs, nothing changes.
    for _ in 0..2 {
        let again = inbox
            .process(
                &tdb.db,
                "billing",
                id,
                counting_insert(&calls, &orders_table, 1),
            )
            .await
            .unwrap();
        assert!(again.is_duplicate());
        assert_eq!(again.handled(), None);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "handler not called again");
    assert_eq!(orders(&tdb, &orders_table).await, 1);
    assert_eq!(inbox_rows(&tdb, &inbox).await, 1);

    // A failing handler: its write and the inbox row roll back together.
    let failing = Uuid::now_v7();
    let table = orders_table.clone();
    let err = inbox
        .process::<_, _, (), DbErr>(&tdb.db, "billing", failing, move |txn| {
            Box::pin(async move {
                insert_order(txn, &table, 2).await?;
                Err(DbErr::Custom("payment service down".into()))
            })
        })
        .await
        .unwrap_err();
    match &err {
        InboxError::Handler(DbErr::Custom(msg)) => assert_eq!(msg, "payment service down"),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("payment service down"), "{err}");
    assert_eq!(
        orders(&tdb, &orders_table).await,
        1,
        "handler write rolled back"
    );
    assert!(
        !inbox
            .is_processed(&tdb.observer, "billing", failing)
            .await
            .unwrap()
    );

    // ...so the redelivery processes it.
    let retried = inbox
        .process(
            &tdb.db,
            "billing",
            failing,
            counting_insert(&calls, &orders_table, 2),
        )
        .await
        .unwrap();
    assert_eq!(retried, Processed::Handled("done"));
    assert_eq!(orders(&tdb, &orders_table).await, 2);
    assert_eq!(inbox_rows(&tdb, &inbox).await, 2);
}

on_each_database!(inbox_once_per_message => super::once_per_message);

/// `process_record` reads the id from the record's headers (the inbox's header name) and
/// deduplicates on it like `process`; a record without a usable id is refused before the
/// database is touched.
async fn process_record_reads_the_id_from_the_headers(tdb: Arc<TestDb>) {
    let orders_table = business_table(&tdb).await;
    let inbox = fresh_inbox(&tdb)
        .await
        .with_message_id_header(MessageIdHeader::new(
            &outbox_core::OutboxSchema::builder()
                .message_id_header("mid")
                .build()
                .unwrap(),
        ));
    assert_eq!(inbox.message_id_header().name(), "mid");
    let calls = Arc::new(AtomicUsize::new(0));
    let id = Uuid::now_v7().to_string();
    let headers = [("trace", "t".as_bytes()), ("mid", id.as_bytes())];
    for expect_handled in [true, false] {
        let outcome = inbox
            .process_record(
                &tdb.db,
                "billing",
                "orders",
                headers,
                counting_insert(&calls, &orders_table, 1),
            )
            .await
            .unwrap();
        assert_eq!(outcome.is_duplicate(), !expect_handled);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(orders(&tdb, &orders_table).await, 1);

    // The relay's default header is not the one this inbox reads.
    let err = inbox
        .process_record(
            &tdb.db,
            "billing",
            "orders",
            [("x-outbox-message-id", id.as_bytes())],
            counting_insert(&calls, &orders_table, 2),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, InboxError::MessageId(MessageIdError::Missing { ref header }) if header == "mid"),
        "{err:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(inbox_rows(&tdb, &inbox).await, 1);
}

on_each_database!(inbox_process_record => super::process_record_reads_the_id_from_the_headers);

/// The same message id under two consumers: both process it, each once.
async fn consumers_are_isolated(tdb: Arc<TestDb>) {
    let inbox = fresh_inbox(&tdb).await;
    let orders_table = business_table(&tdb).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let id = Uuid::now_v7();
    for (n, consumer) in ["billing", "shipping"].into_iter().enumerate() {
        let done = inbox
            .process(
                &tdb.db,
                consumer,
                id,
                counting_insert(&calls, &orders_table, n as i64),
            )
            .await
            .unwrap();
        assert_eq!(done, Processed::Handled("done"), "{consumer}");
    }
    // Names compare exactly on every backend (binary collation on MySQL/MariaDB).
    let upper = inbox
        .process(
            &tdb.db,
            "Billing",
            id,
            counting_insert(&calls, &orders_table, 9),
        )
        .await
        .unwrap();
    assert_eq!(upper, Processed::Handled("done"));
    for consumer in ["billing", "shipping", "Billing"] {
        let again = inbox
            .process(
                &tdb.db,
                consumer,
                id,
                counting_insert(&calls, &orders_table, 99),
            )
            .await
            .unwrap();
        assert!(again.is_duplicate(), "{consumer}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(orders(&tdb, &orders_table).await, 3);
    assert!(
        !inbox
            .is_processed(&tdb.observer, "audit", id)
            .await
            .unwrap()
    );
}

on_each_database!(inbox_consumers_are_isolated => super::consumers_are_isolated);

/// Refused consumer names: typed error, handler not called, nothing recorded.
async fn bad_input_is_refused(tdb: Arc<TestDb>) {
    let inbox = fresh_inbox(&tdb).await;
    let orders_table = business_table(&tdb).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let id = Uuid::now_v7();
    let too_long = "c".repeat(129);
    let cases: [(&str, ConsumerNameError); 4] = [
        ("", ConsumerNameError::Empty),
        (&too_long, ConsumerNameError::TooLong { len: 129 }),
        ("billing ", ConsumerNameError::Whitespace("billing ".into())),
        (
            "bill\0ing",
            ConsumerNameError::ControlChar("bill\0ing".into()),
        ),
    ];
    for (name, expected) in cases {
        let err = inbox
            .process(&tdb.db, name, id, counting_insert(&calls, &orders_table, 1))
            .await
            .unwrap_err();
        match err {
            InboxError::InvalidConsumer(e) => assert_eq!(e, expected),
            other => panic!("{name:?}: {other:?}"),
        }
        let txn = sea_orm::TransactionTrait::begin(&tdb.db).await.unwrap();
        assert!(matches!(
            inbox.record(&txn, name, id).await,
            Err(InboxError::InvalidConsumer(_))
        ));
        txn.rollback().await.unwrap();
        assert!(matches!(
            inbox
                .purge_consumer_processed_before(&tdb.db, name, Timestamp::now())
                .await,
            Err(InboxError::InvalidConsumer(_))
        ));
    }
    // 128 characters, multi-byte ones included, fit the column.
    let longest = "é".repeat(128);
    let done = inbox
        .process(
            &tdb.db,
            &longest,
            id,
            counting_insert(&calls, &orders_table, 1),
        )
        .await
        .unwrap();
    assert_eq!(done, Processed::Handled("done"));
    assert!(
        inbox
            .is_processed(&tdb.observer, &longest, id)
            .await
            .unwrap()
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(inbox_rows(&tdb, &inbox).await, 1);

    // A record without a usable id never reaches the inbox: the header reader refuses it.
    let header = MessageIdHeader::default();
    assert!(
        header
            .find([("x-outbox-message-id", "not-a-uuid")])
            .is_err()
    );
    assert!(header.find([("trace", "t")]).is_err());
}

on_each_database!(inbox_bad_input => super::bad_input_is_refused);

/// `record` in a caller-managed `OutboxTransaction`: the inbox row, the consumer's write
/// and an outgoing message commit (or roll back) together; after a duplicate the
/// transaction is still usable.
async fn record_in_callers_transaction(tdb: Arc<TestDb>) {
    let inbox = fresh_inbox(&tdb).await;
    let orders_table = business_table(&tdb).await;
    let tables = tdb.fresh_tables().await;
    let outbox = Outbox::new(EnqueueConfig::from(tables.clone()));
    let id = Uuid::now_v7();

    // Rolled back: nothing recorded, nothing enqueued.
    let txn = outbox.begin(&tdb.db).await.unwrap();
    assert_eq!(
        inbox.record(&txn, "shipping", id).await.unwrap(),
        Recorded::New
    );
    insert_order(&txn, &orders_table, 1).await.unwrap();
    txn.enqueue(OutboxMessage::builder("shipments").key("o-1"))
        .await
        .unwrap();
    txn.rollback().await.unwrap();
    assert!(
        !inbox
            .is_processed(&tdb.observer, "shipping", id)
            .await
            .unwrap()
    );
    assert_eq!(tdb.count(&tables).await, 0);

    // Committed: all three.
    let txn = outbox.begin(&tdb.db).await.unwrap();
    assert_eq!(
        inbox.record(&txn, "shipping", id).await.unwrap(),
        Recorded::New
    );
    insert_order(&txn, &orders_table, 1).await.unwrap();
    txn.enqueue(OutboxMessage::builder("shipments").key("o-1"))
        .await
        .unwrap();
    txn.commit().await.unwrap();
    assert!(
        inbox
            .is_processed(&tdb.observer, "shipping", id)
            .await
            .unwrap()
    );
    assert_eq!(orders(&tdb, &orders_table).await, 1);
    assert_eq!(tdb.count(&tables).await, 1);

    // Duplicate: the insert was ignored, not failed, so the transaction goes on.
    let txn = sea_orm::TransactionTrait::begin(&tdb.db).await.unwrap();
    assert_eq!(
        inbox.record(&txn, "shipping", id).await.unwrap(),
        Recorded::Duplicate
    );
    insert_order(&txn, &orders_table, 2).await.unwrap();
    txn.commit().await.unwrap();
    assert_eq!(orders(&tdb, &orders_table).await, 2);
    assert_eq!(inbox_rows(&tdb, &inbox).await, 1);
}

on_each_database!(inbox_record_in_callers_transaction => super::record_in_callers_transaction);

/// Sets `processed_at` of one row, to age it for the purge.
async fn age(tdb: &TestDb, inbox: &Inbox, consumer: &str, id: Uuid, by: Duration) {
    let at = timestamp_to_datetime(Timestamp::now().saturating_sub(by)).unwrap();
    let update = Query::update()
        .table(inbox.table().table_ref())
        .value("processed_at", at)
        .and_where(Expr::col("consumer").eq(consumer))
        .and_where(Expr::col("message_id").eq(id))
        .to_owned();
    let done = tdb.db.execute(&update).await.unwrap();
    assert_eq!(done.rows_affected(), 1);
}

/// Retention: only rows older than the cutoff go, optionally for one consumer; a purged
/// id is processed again on redelivery (the documented trade-off).
async fn purge_by_age(tdb: Arc<TestDb>) {
    let inbox = fresh_inbox(&tdb).await;
    let orders_table = business_table(&tdb).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let day = Duration::from_secs(86_400);
    let (old, recent) = (Uuid::now_v7(), Uuid::now_v7());
    let mut n = 0;
    for consumer in ["billing", "shipping"] {
        for id in [old, recent] {
            n += 1;
            let done = inbox
                .process(
                    &tdb.db,
                    consumer,
                    id,
                    counting_insert(&calls, &orders_table, n),
                )
                .await
                .unwrap();
            assert!(!done.is_duplicate());
        }
        age(&tdb, &inbox, consumer, old, 3 * day).await;
    }
    let cutoff = Timestamp::now().saturating_sub(day);

    let purged = inbox
        .purge_consumer_processed_before(&tdb.db, "billing", cutoff)
        .await
        .unwrap();
    assert_eq!(purged, 1);
    assert!(
        !inbox
            .is_processed(&tdb.observer, "billing", old)
            .await
            .unwrap()
    );
    assert!(
        inbox
            .is_processed(&tdb.observer, "shipping", old)
            .await
            .unwrap()
    );

    assert_eq!(
        inbox.purge_processed_before(&tdb.db, cutoff).await.unwrap(),
        1
    );
    assert!(
        !inbox
            .is_processed(&tdb.observer, "shipping", old)
            .await
            .unwrap()
    );
    assert_eq!(
        inbox.purge_processed_before(&tdb.db, cutoff).await.unwrap(),
        0
    );
    for consumer in ["billing", "shipping"] {
        assert!(
            inbox
                .is_processed(&tdb.observer, consumer, recent)
                .await
                .unwrap()
        );
    }
    assert_eq!(inbox_rows(&tdb, &inbox).await, 2);

    let replayed = inbox
        .process(
            &tdb.db,
            "billing",
            old,
            counting_insert(&calls, &orders_table, 100),
        )
        .await
        .unwrap();
    assert_eq!(
        replayed,
        Processed::Handled("done"),
        "a purged id is new again"
    );

    let err = inbox
        .purge_processed_before(&tdb.db, Timestamp::from_millis(i64::MAX))
        .await
        .unwrap_err();
    assert!(matches!(err, InboxError::CutoffOutOfRange(_)), "{err:?}");
}

on_each_database!(inbox_purge => super::purge_by_age);

/// What a user writes: the opt-in inbox migration next to the outbox one. `up` creates
/// the default table, the default `Inbox` works on it, `down` drops it.
struct Migrator;

impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        let mut all = outbox_seaorm::migrations(outbox_seaorm::OutboxTables::default());
        all.push(Box::new(outbox_seaorm::InboxMigration::default()));
        all
    }
}

async fn migration_up_and_down(tdb: Arc<TestDb>) {
    let conn = private_connection(&tdb).await;
    Migrator::up(&conn, None).await.unwrap();
    let manager = SchemaManager::new(&conn);
    assert!(manager.has_table("outbox_inbox").await.unwrap());
    assert!(manager.has_table("outbox_messages").await.unwrap());

    let inbox = Inbox::default();
    let id = Uuid::now_v7();
    let run_once = |inbox: Inbox, conn: sea_orm::DatabaseConnection| async move {
        inbox
            .process::<_, _, (), DbErr>(&conn, "billing", id, |_| Box::pin(async { Ok(()) }))
            .await
            .unwrap()
    };
    assert_eq!(
        run_once(inbox.clone(), conn.clone()).await,
        Processed::Handled(())
    );
    assert!(run_once(inbox.clone(), conn.clone()).await.is_duplicate());
    // The entity maps the default table.
    use sea_orm::EntityTrait;
    let rows = outbox_seaorm::entity::inbox::Entity::find()
        .all(&conn)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].consumer.as_str(), rows[0].message_id),
        ("billing", id)
    );

    // Down one step removes the inbox only, leaving the outbox tables.
    Migrator::down(&conn, Some(1)).await.unwrap();
    assert!(!manager.has_table("outbox_inbox").await.unwrap());
    assert!(manager.has_table("outbox_messages").await.unwrap());
    Migrator::down(&conn, None).await.unwrap();
    assert!(!manager.has_table("outbox_messages").await.unwrap());
    if tdb.kind != Kind::Sqlite {
        conn.close().await.unwrap();
    }
}

on_each_database!(inbox_migration_up_and_down => super::migration_up_and_down);

/// A custom schema and a mixed-case table on PostgreSQL: created by the migration,
/// quoted everywhere, usable, dropped by `down`.
async fn postgres_custom_schema(tdb: Arc<TestDb>) {
    let schema = format!("{}_Billing", unique_name("ib"));
    tdb.track_schema(&schema);
    let table = InboxTable::builder()
        .schema(schema.clone())
        .table("Billing_Inbox")
        .build()
        .unwrap();
    let migration = InboxMigration::new(table.clone());
    migration.up(&SchemaManager::new(&tdb.db)).await.unwrap();
    let indexes_in = |schema: String| {
        let tdb = Arc::clone(&tdb);
        async move {
            tdb.db
                .query_all_raw(Statement::from_sql_and_values(
                    DbBackend::Postgres,
                    "SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname",
                    [schema.into()],
                ))
                .await
                .unwrap()
                .iter()
                .map(|r| r.try_get::<String>("", "indexname").unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        indexes_in(schema.clone()).await,
        ["Billing_Inbox_pkey", "Billing_Inbox_processed_at_idx"]
    );

    let inbox = Inbox::new(table);
    let orders_table = business_table(&tdb).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let id = Uuid::now_v7();
    for _ in 0..2 {
        let _ = inbox
            .process(
                &tdb.db,
                "billing",
                id,
                counting_insert(&calls, &orders_table, 1),
            )
            .await
            .unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        inbox
            .purge_processed_before(
                &tdb.db,
                Timestamp::now().saturating_add(Duration::from_secs(60))
            )
            .await
            .unwrap(),
        1
    );

    migration.down(&SchemaManager::new(&tdb.db)).await.unwrap();
    assert!(indexes_in(schema).await.is_empty(), "down drops the table");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_postgres_custom_schema_and_name() {
    run(Kind::Postgres, postgres_custom_schema).await
}
