//! A failure while seeding the lease rows does not stick: the next acquisition seeds
//! again and claims the buckets.
//!
//! An acquisition inserts the lease rows it finds missing (insert-if-absent) in the same
//! request as its claims. A store that remembered "seeded" before the insert had
//! committed would, after a transient failure, claim buckets whose rows do not exist and
//! hold nothing until it restarts. Here a trigger makes every insert into the empty lease
//! table fail: the acquisition must return a retryable error (no panic), leave no lease
//! row and no lease held; once the trigger is gone the same store instance must insert
//! the rows and claim every bucket.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use outbox_core::{LeaseRequest, OutboxSchema, OutboxStore, StoreError, Timestamp};
use outbox_seaorm::{OutboxTables, SeaOrmStore};
use outbox_tests::unique_name;
use sea_orm::ConnectionTrait;

use crate::on_each_database;
use crate::support::{Kind, TestDb};

const BUCKETS: u32 = 8;
const LEASE: Duration = Duration::from_secs(30);
const T0: Timestamp = Timestamp::from_millis(1_765_000_000_000);
/// What the trigger says, so the test knows the failure is the one it planted.
const REFUSAL: &str = "lease seeding refused by the test";

fn request(now: Timestamp) -> LeaseRequest<'static> {
    LeaseRequest {
        relay_id: "relay-a",
        bucket_count: BUCKETS,
        lease_duration: LEASE,
        now,
        busy: &[],
    }
}

/// The planted trigger, and how to drop it again.
struct InsertRefusal {
    drop_sql: String,
}

/// Makes every INSERT into `tables`' lease table fail, in each database's own way.
async fn refuse_lease_inserts(tdb: &TestDb, tables: &OutboxTables) -> InsertRefusal {
    let leases = tables.leases();
    let trigger = unique_name("refuse");
    let (create, drop_sql): (Vec<String>, String) = match tdb.kind {
        Kind::Postgres => {
            // The function lives in a schema of the test's own, so cleanup drops it
            // (and the trigger with it) even when an assertion fails first.
            let schema = unique_name("seed");
            tdb.track_schema(&schema);
            (
                vec![
                    format!("CREATE SCHEMA \"{schema}\""),
                    format!(
                        "CREATE FUNCTION \"{schema}\".refuse() RETURNS trigger LANGUAGE plpgsql \
                         AS $$ BEGIN RAISE EXCEPTION '{REFUSAL}'; END $$"
                    ),
                    format!(
                        "CREATE TRIGGER \"{trigger}\" BEFORE INSERT ON \"{leases}\" \
                         FOR EACH ROW EXECUTE FUNCTION \"{schema}\".refuse()"
                    ),
                ],
                format!("DROP TRIGGER \"{trigger}\" ON \"{leases}\""),
            )
        }
        Kind::MySql => (
            vec![format!(
                "CREATE TRIGGER `{trigger}` BEFORE INSERT ON `{leases}` FOR EACH ROW \
                 SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '{REFUSAL}'"
            )],
            format!("DROP TRIGGER `{trigger}`"),
        ),
        Kind::Sqlite => (
            vec![format!(
                "CREATE TRIGGER \"{trigger}\" BEFORE INSERT ON \"{leases}\" \
                 BEGIN SELECT RAISE(ABORT, '{REFUSAL}'); END"
            )],
            format!("DROP TRIGGER \"{trigger}\""),
        ),
    };
    for sql in create {
        tdb.db
            .execute_unprepared(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    InsertRefusal { drop_sql }
}

impl InsertRefusal {
    async fn lift(self, tdb: &TestDb) {
        tdb.db
            .execute_unprepared(&self.drop_sql)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", self.drop_sql));
    }
}

/// The error and every source under it, one line.
fn chain(error: &StoreError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

async fn a_failed_seeding_is_retried(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let schema = OutboxSchema::builder()
        .tables(tables.clone())
        .bucket_count(BUCKETS)
        .build()
        .unwrap();
    let store = SeaOrmStore::new(tdb.db.clone(), schema).unwrap();
    assert!(tdb.lease_table(&tables).await.is_empty());

    let refusal = refuse_lease_inserts(&tdb, &tables).await;
    let error = store
        .acquire_leases(&request(T0))
        .await
        .expect_err("an acquisition whose lease insert fails must fail");
    assert!(
        matches!(error, StoreError::Unavailable(_)),
        "a failed insert is retryable, not fatal: {error:?}"
    );
    assert!(
        chain(&error).contains(REFUSAL),
        "the failure is the planted one: {}",
        chain(&error)
    );
    assert!(
        tdb.lease_table(&tables).await.is_empty(),
        "a failed seeding leaves no lease row, so no lease is held"
    );
    // PostgreSQL runs the request as one transaction, so the heartbeat written before the
    // insert is rolled back with it; MySQL and SQLite commit each statement of the request
    // on its own (see SqlBatch), which leaves the caller's heartbeat: a live relay that
    // will retry, harmless to the others (nothing else was written).
    let beats = tdb.heartbeats(&tables).await;
    let expected = match tdb.kind {
        Kind::Postgres => BTreeMap::new(),
        Kind::MySql | Kind::Sqlite => BTreeMap::from([("relay-a".to_owned(), T0.as_millis())]),
    };
    assert_eq!(
        beats, expected,
        "only the heartbeat may outlive the failure"
    );

    refusal.lift(&tdb).await;
    let now = T0.saturating_add(Duration::from_secs(1));
    let acquired = store
        .acquire_leases(&request(now))
        .await
        .unwrap_or_else(|e| panic!("the retry after the trigger is gone: {}", chain(&e)));
    let every: Vec<i32> = (0..BUCKETS as i32).collect();
    assert_eq!(
        acquired.held, every,
        "the same store seeds again and claims every bucket"
    );
    let expires = now.saturating_add(LEASE).as_millis();
    assert_eq!(
        tdb.lease_table(&tables).await,
        every
            .iter()
            .map(|b| (*b, (Some("relay-a".to_owned()), expires)))
            .collect::<BTreeMap<_, _>>(),
        "one row per bucket, each held by the relay until the new expiry"
    );
    assert_eq!(
        tdb.heartbeats(&tables).await,
        BTreeMap::from([("relay-a".to_owned(), now.as_millis())])
    );
}

on_each_database!(seeding_retry => super::a_failed_seeding_is_retried);
