//! Shared harness: one real database per test, unique table names, cleanup even when the
//! test body panics.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use outbox_core::testing::contract::{PendingInsert, StoreFixture};
use outbox_core::{CommitNotifier, OutboxMessage};
use outbox_seaorm::{OutboxTables, SeaOrmStore, SqlNames, insert_rows};
use outbox_tests::unique_name;
use sea_orm::{
    ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend, TransactionTrait,
};
use sea_orm_migration::SchemaManager;
use sea_query::{Expr, ExprTrait, Query};

/// How long one test body may take before it counts as hung.
const TEST_TIMEOUT: Duration = Duration::from_secs(180);

/// The database a test runs on.
pub use outbox_tests::database::DatabaseKind as Kind;

/// A connection to a real database plus everything the test created there.
#[derive(Debug)]
pub struct TestDb {
    pub kind: Kind,
    pub url: String,
    pub db: DatabaseConnection,
    /// A second pool for looking at the tables while a test holds a transaction open on
    /// `db` (sea-orm gives SQLite pools a single connection).
    pub observer: DatabaseConnection,
    created_tables: Mutex<Vec<OutboxTables>>,
    extra_tables: Mutex<Vec<String>>,
    schemas: Mutex<Vec<String>>,
    databases: Mutex<Vec<String>>,
    sqlite_file: Option<PathBuf>,
}

impl TestDb {
    pub async fn connect(kind: Kind) -> Arc<TestDb> {
        let url = kind.url();
        let db = Database::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        let observer = Database::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        let sqlite_file = (kind == Kind::Sqlite).then(|| sqlite_path(&url));
        Arc::new(TestDb {
            kind,
            url,
            db,
            observer,
            created_tables: Mutex::default(),
            extra_tables: Mutex::default(),
            schemas: Mutex::default(),
            databases: Mutex::default(),
            sqlite_file,
        })
    }

    /// A fresh, empty, migrated set of uniquely named outbox tables.
    pub async fn fresh_tables(&self) -> OutboxTables {
        self.migrate(outbox_tests::database::unique_tables("ob"))
            .await
    }

    /// Like [`fresh_tables`](Self::fresh_tables), but in a schema of their own where the
    /// database has one to offer: a new schema on PostgreSQL (the migration creates it),
    /// a new database on MySQL/MariaDB (which must exist beforehand); SQLite keeps the
    /// main database (another one would have to be attached on every pooled connection).
    pub async fn fresh_tables_in_own_schema(&self) -> OutboxTables {
        let base = unique_name("ob");
        let schema = unique_name("obs");
        let builder = OutboxTables::builder()
            .messages(format!("{base}_m"))
            .leases(format!("{base}_l"))
            .relays(format!("{base}_r"))
            .parked(format!("{base}_p"));
        let builder = match self.kind {
            Kind::Postgres => builder.schema(schema),
            Kind::MySql => {
                self.track_database(&schema);
                self.db
                    .execute_unprepared(&format!("CREATE DATABASE `{schema}`"))
                    .await
                    .unwrap();
                builder.schema(schema)
            }
            Kind::Sqlite => builder,
        };
        self.migrate(builder.build().unwrap()).await
    }

    /// Runs the crate's migration for `tables` (remembering them for cleanup).
    pub async fn migrate(&self, tables: OutboxTables) -> OutboxTables {
        self.created_tables.lock().unwrap().push(tables.clone());
        if let Some(schema) = tables.schema() {
            self.track_schema(schema);
        }
        let manager = SchemaManager::new(&self.db);
        for migration in outbox_seaorm::migrations(tables.clone()) {
            migration
                .up(&manager)
                .await
                .unwrap_or_else(|e| panic!("migrating {tables:?}: {e}"));
        }
        tables
    }

    pub fn store(&self, tables: &OutboxTables) -> SeaOrmStore {
        SeaOrmStore::new(self.db.clone(), tables.clone()).unwrap()
    }

    /// A uniquely named helper table, dropped at cleanup.
    pub fn extra_table(&self, prefix: &str) -> String {
        let name = unique_name(prefix);
        self.extra_tables.lock().unwrap().push(name.clone());
        name
    }

    pub fn track_schema(&self, schema: &str) {
        self.schemas.lock().unwrap().push(schema.to_owned());
    }

    pub fn track_database(&self, database: &str) {
        self.databases.lock().unwrap().push(database.to_owned());
    }

    pub fn backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    /// Pending rows in `tables`, by id.
    pub async fn pending(&self, tables: &OutboxTables) -> Vec<OutboxMessage> {
        let mut all = Vec::new();
        for bucket in self.buckets_present(tables).await {
            let store = SeaOrmStore::new(self.observer.clone(), tables.clone()).unwrap();
            use outbox_core::OutboxStore;
            all.extend(store.next_batch(bucket, None, 100_000).await.unwrap());
        }
        all.sort_by_key(|m| m.id);
        all
    }

    async fn buckets_present(&self, tables: &OutboxTables) -> BTreeSet<i32> {
        let stmt = Query::select()
            .distinct()
            .column("bucket")
            .from(tables.messages_ref())
            .to_owned();
        self.observer
            .query_all(&stmt)
            .await
            .unwrap()
            .iter()
            .map(|r| r.try_get::<i32>("", "bucket").unwrap())
            .collect()
    }

    pub async fn count(&self, tables: &OutboxTables) -> i64 {
        let stmt = Query::select()
            .expr_as(Expr::col(sea_query::Asterisk).count(), "n")
            .from(tables.messages_ref())
            .to_owned();
        let row = self.observer.query_one(&stmt).await.unwrap().unwrap();
        row.try_get::<i64>("", "n").unwrap()
    }

    /// The lease table: bucket -> (owner, expiry).
    pub async fn lease_table(&self, tables: &OutboxTables) -> BTreeMap<i32, (Option<String>, i64)> {
        let stmt = Query::select()
            .columns(["bucket", "owner", "expires_at_ms"])
            .from(tables.leases_ref())
            .to_owned();
        self.observer
            .query_all(&stmt)
            .await
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r.try_get::<i32>("", "bucket").unwrap(),
                    (
                        r.try_get::<Option<String>>("", "owner").unwrap(),
                        r.try_get::<i64>("", "expires_at_ms").unwrap(),
                    ),
                )
            })
            .collect()
    }

    /// The heartbeats: relay id -> last seen.
    pub async fn heartbeats(&self, tables: &OutboxTables) -> BTreeMap<String, i64> {
        let stmt = Query::select()
            .columns(["relay_id", "last_seen_at_ms"])
            .from(tables.relays_ref())
            .to_owned();
        self.observer
            .query_all(&stmt)
            .await
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r.try_get::<String>("", "relay_id").unwrap(),
                    r.try_get::<i64>("", "last_seen_at_ms").unwrap(),
                )
            })
            .collect()
    }

    /// Drops everything this test created. Errors are reported but do not mask the
    /// test's own outcome.
    pub async fn cleanup(&self) {
        let backend = outbox_seaorm::Backend::try_from(self.backend()).unwrap();
        let tables: Vec<_> = self.created_tables.lock().unwrap().drain(..).collect();
        for t in tables {
            for sql in outbox_seaorm::ddl::drop_all_statements(backend, &t) {
                let sql = sql.replacen("DROP TABLE", "DROP TABLE IF EXISTS", 1);
                if let Err(e) = self.db.execute_unprepared(&sql).await {
                    eprintln!("cleanup: {sql}: {e}");
                }
            }
        }
        let extra: Vec<_> = self.extra_tables.lock().unwrap().drain(..).collect();
        for t in extra {
            let _ = self
                .db
                .execute_unprepared(&format!("DROP TABLE IF EXISTS {t}"))
                .await;
        }
        let schemas: Vec<_> = self.schemas.lock().unwrap().drain(..).collect();
        for s in schemas {
            if self.kind == Kind::Postgres {
                let _ = self
                    .db
                    .execute_unprepared(&format!("DROP SCHEMA IF EXISTS \"{s}\" CASCADE"))
                    .await;
            }
        }
        let databases: Vec<_> = self.databases.lock().unwrap().drain(..).collect();
        for d in databases {
            let _ = self
                .db
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS `{d}`"))
                .await;
        }
        let _ = self.observer.clone().close().await;
        let _ = self.db.clone().close().await;
        if let Some(path) = &self.sqlite_file {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

fn sqlite_path(url: &str) -> PathBuf {
    PathBuf::from(
        url.strip_prefix("sqlite://")
            .and_then(|r| r.split('?').next())
            .unwrap(),
    )
}

/// Runs `body` against a fresh connection to `kind`, then cleans up, then re-raises a
/// panic from the body (so a failing assertion still drops its tables).
pub async fn run<F, Fut>(kind: Kind, body: F)
where
    F: FnOnce(Arc<TestDb>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let tdb = TestDb::connect(kind).await;
    let outcome = tokio::spawn(tokio::time::timeout(TEST_TIMEOUT, body(Arc::clone(&tdb)))).await;
    tdb.cleanup().await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(_)) => panic!("the test on {kind:?} did not finish within {TEST_TIMEOUT:?}"),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("the test task on {kind:?} failed: {e}"),
    }
}

/// `mod name { postgres, mysql, sqlite }`: the same body on each real database.
#[macro_export]
macro_rules! on_each_database {
    ($name:ident => $body:path) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                $crate::support::run($crate::support::Kind::Postgres, $body).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql() {
                $crate::support::run($crate::support::Kind::MySql, $body).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $crate::support::run($crate::support::Kind::Sqlite, $body).await
            }
        }
    };
}

/// The contract suite's fixture: a fresh table set per check on one shared connection.
pub struct Fixture {
    pub tdb: Arc<TestDb>,
    pub tables: OutboxTables,
}

impl StoreFixture for Fixture {
    type Store = SeaOrmStore;

    async fn store(&self) -> SeaOrmStore {
        self.tdb.store(&self.tables)
    }

    async fn insert_committed(&self, rows: Vec<OutboxMessage>) -> Vec<i64> {
        insert_rows(&self.tdb.db, &self.tables, &rows)
            .await
            .unwrap();
        ids_of(&self.tdb.db, &self.tables, &rows).await
    }

    type Pending = OpenWriter;

    /// On a connection of the observer pool, so the store's pool stays free. SQLite: see
    /// the trait (its writers cannot overlap).
    async fn insert_pending(&self, rows: Vec<OutboxMessage>) -> Option<(OpenWriter, Vec<i64>)> {
        if self.tdb.kind == Kind::Sqlite {
            return None;
        }
        let txn = self.tdb.observer.begin().await.unwrap();
        insert_rows(&txn, &self.tables, &rows).await.unwrap();
        let ids = ids_of(&txn, &self.tables, &rows).await;
        Some((OpenWriter(txn), ids))
    }
}

/// A writer's open transaction (the contract's late committer).
pub struct OpenWriter(DatabaseTransaction);

impl PendingInsert for OpenWriter {
    async fn commit(self) {
        self.0.commit().await.unwrap();
    }
}

/// The ids the database assigned to `rows`, in their order.
async fn ids_of<C: ConnectionTrait>(
    conn: &C,
    tables: &OutboxTables,
    rows: &[OutboxMessage],
) -> Vec<i64> {
    let stmt = Query::select()
        .columns(["id", "message_id"])
        .from(tables.messages_ref())
        .and_where(Expr::col("message_id").is_in(rows.iter().map(|r| r.message_id)))
        .to_owned();
    let ids: HashMap<outbox_core::Uuid, i64> = conn
        .query_all(&stmt)
        .await
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.try_get::<outbox_core::Uuid>("", "message_id").unwrap(),
                r.try_get::<i64>("", "id").unwrap(),
            )
        })
        .collect();
    rows.iter().map(|r| ids[&r.message_id]).collect()
}

/// A notifier that remembers every call, for asserting what a commit announced.
#[derive(Debug, Default)]
pub struct Recorder {
    calls: Mutex<Vec<Option<Vec<i32>>>>,
}

impl Recorder {
    pub fn new() -> Arc<Recorder> {
        Arc::new(Recorder::default())
    }

    /// Each call: `Some(buckets)` or `None` for "unknown buckets".
    pub fn calls(&self) -> Vec<Option<Vec<i32>>> {
        self.calls.lock().unwrap().clone()
    }
}

impl CommitNotifier for Recorder {
    fn notify_committed(&self) {
        self.calls.lock().unwrap().push(None);
    }

    fn notify_buckets(&self, buckets: &[i32]) {
        self.calls.lock().unwrap().push(Some(buckets.to_vec()));
    }
}
