//! The migration inside a user's own `Migrator`, the entities on migrated tables, and a
//! custom schema with odd names on PostgreSQL.

use std::sync::Arc;

use outbox_core::{EnqueueConfig, LeaseRequest, OutboxMessage, OutboxStore, Timestamp};
use outbox_seaorm::entity::{lease, message, relay};
use outbox_seaorm::{Migration, Outbox, OutboxTables, SeaOrmStore};
use outbox_tests::unique_name;
use sea_orm::{
    ActiveModelTrait, ConnectOptions, ConnectionTrait, Database, DatabaseConnection, EntityTrait,
    Set, Statement,
};
use sea_orm_migration::{MigrationTrait, MigratorTrait, SchemaManager};

use crate::relay_e2e::publish_end_to_end;
use crate::support::{Kind, TestDb, run};

/// What a user writes: their own migrator, with the outbox migrations appended.
struct Migrator;

impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        outbox_seaorm::migrations(outbox_seaorm::OutboxTables::default())
    }
}

/// A connection whose default schema/database is private to this test, so the default
/// table names (and sea-orm-migration's bookkeeping table) cannot collide.
pub(crate) async fn private_connection(tdb: &TestDb) -> DatabaseConnection {
    match tdb.kind {
        Kind::Sqlite => tdb.db.clone(),
        Kind::Postgres => {
            let schema = unique_name("obmig");
            tdb.track_schema(&schema);
            tdb.db
                .execute_unprepared(&format!("CREATE SCHEMA \"{schema}\""))
                .await
                .unwrap();
            let mut options = ConnectOptions::new(tdb.url.clone());
            options.set_schema_search_path(schema);
            Database::connect(options).await.unwrap()
        }
        Kind::MySql => {
            let database = unique_name("obmig");
            tdb.track_database(&database);
            tdb.db
                .execute_unprepared(&format!("CREATE DATABASE `{database}`"))
                .await
                .unwrap();
            let (base, _) = tdb.url.rsplit_once('/').unwrap();
            Database::connect(format!("{base}/{database}"))
                .await
                .unwrap()
        }
    }
}

async fn migrator_and_entities(tdb: Arc<TestDb>) {
    let conn = private_connection(&tdb).await;
    Migrator::up(&conn, None).await.unwrap();
    let manager = SchemaManager::new(&conn);
    for table in [
        "outbox_messages",
        "outbox_leases",
        "outbox_relays",
        "outbox_parked",
    ] {
        assert!(manager.has_table(table).await.unwrap(), "{table} created");
    }

    // Enqueue through the library, insert one more through the entity's ActiveModel.
    let outbox = Outbox::new(EnqueueConfig::default());
    let before = Timestamp::now();
    outbox
        .enqueue(
            &conn,
            OutboxMessage::builder("orders")
                .key("order-1")
                .value("{\"id\":1}")
                .header("trace", "t-1")
                .partition(3),
        )
        .await
        .unwrap();
    let built = OutboxMessage::builder("orders")
        .key("order-2")
        .build(outbox.config())
        .unwrap();
    let inserted = message::ActiveModel {
        message_id: Set(built.message_id),
        bucket: Set(built.bucket),
        topic: Set(built.topic.clone()),
        key: Set(built.key.clone()),
        value: Set(None),
        headers: Set(None),
        partition: Set(None),
        created_at: Set(message::timestamp_to_datetime(built.created_at).unwrap()),
        ..Default::default()
    }
    .insert(&conn)
    .await
    .unwrap();
    assert!(inserted.id > 0);

    let rows = message::Entity::find().all(&conn).await.unwrap();
    assert_eq!(rows.len(), 2);
    let first = OutboxMessage::from(rows[0].clone());
    assert_eq!(first.topic, "orders");
    assert_eq!(first.key.as_deref(), Some(b"order-1".as_slice()));
    assert_eq!(first.partition, Some(3));
    assert_eq!(first.bucket, 3, "the partition decides the bucket");
    let headers = first.decoded_headers().unwrap();
    assert_eq!(headers.iter().next().unwrap().name, "trace");
    assert!(first.created_at >= before && first.created_at <= Timestamp::now());
    assert_eq!(
        OutboxMessage::from(rows[1].clone()).created_at,
        built.created_at,
        "ms precision"
    );

    // The store on the default names; the entities see its leases and heartbeat.
    let store = SeaOrmStore::new(conn.clone(), OutboxTables::default()).unwrap();
    let held = store
        .acquire_leases(&LeaseRequest {
            relay_id: "relay-m",
            bucket_count: 8,
            lease_duration: std::time::Duration::from_secs(30),
            now: Timestamp::now(),
            busy: &[],
        })
        .await
        .unwrap()
        .held;
    assert_eq!(held.len(), 8);
    let leases = lease::Entity::find().all(&conn).await.unwrap();
    assert_eq!(leases.len(), 8);
    assert!(leases.iter().all(|l| l.owner.as_deref() == Some("relay-m")));
    let relays = relay::Entity::find().all(&conn).await.unwrap();
    assert_eq!(relays.len(), 1);
    let metrics = store.pending_metrics().await.unwrap().unwrap();
    assert_eq!(metrics.count, 2);
    assert!(metrics.oldest_created_at.is_some());

    Migrator::down(&conn, None).await.unwrap();
    assert!(
        !manager.has_table("outbox_messages").await.unwrap(),
        "down drops the tables"
    );
    if tdb.kind != Kind::Sqlite {
        conn.close().await.unwrap();
    }
}

crate::on_each_database!(migrator_one_line => super::migrator_and_entities);

/// A database migrated before parking existed (only the first migration recorded) gains
/// the parked table when the migrator with both migrations runs again.
async fn an_old_database_gains_the_parked_table(tdb: Arc<TestDb>) {
    struct OldMigrator;
    impl MigratorTrait for OldMigrator {
        fn migrations() -> Vec<Box<dyn MigrationTrait>> {
            vec![Box::new(Migration::default())]
        }
    }
    let conn = private_connection(&tdb).await;
    OldMigrator::up(&conn, None).await.unwrap();
    let manager = SchemaManager::new(&conn);
    assert!(!manager.has_table("outbox_parked").await.unwrap());
    Migrator::up(&conn, None).await.unwrap();
    assert!(manager.has_table("outbox_parked").await.unwrap());
    assert!(manager.has_table("outbox_messages").await.unwrap());
}

crate::on_each_database!(parked_table_upgrade => super::an_old_database_gains_the_parked_table);

/// Custom schema and odd (mixed-case) names on PostgreSQL: created by the migration,
/// quoted everywhere, and a relay publishes through them.
async fn postgres_custom_schema(tdb: Arc<TestDb>) {
    let schema = format!("{}_Messaging", unique_name("ob"));
    let tables = OutboxTables::builder()
        .schema(schema.clone())
        .messages("Orders_Outbox")
        .leases("Orders_Outbox_Leases")
        .relays("Orders_Outbox_Relays")
        .parked("Orders_Outbox_Parked")
        .build()
        .unwrap();
    let tables = tdb.migrate(tables).await;

    let found = tdb
        .db
        .query_all_raw(Statement::from_sql_and_values(
            tdb.backend(),
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
            [schema.clone().into()],
        ))
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get::<String>("", "table_name").unwrap())
        .collect::<Vec<_>>();
    assert_eq!(
        found,
        [
            "Orders_Outbox",
            "Orders_Outbox_Leases",
            "Orders_Outbox_Parked",
            "Orders_Outbox_Relays"
        ]
    );

    publish_end_to_end(&tdb, tables.clone()).await;

    for migration in outbox_seaorm::migrations(tables).into_iter().rev() {
        migration.down(&SchemaManager::new(&tdb.db)).await.unwrap();
    }
    let left = tdb
        .db
        .query_all_raw(Statement::from_sql_and_values(
            tdb.backend(),
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
            [schema.into()],
        ))
        .await
        .unwrap();
    assert!(left.is_empty(), "down drops the tables");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_custom_schema_and_names_end_to_end() {
    run(Kind::Postgres, postgres_custom_schema).await
}
