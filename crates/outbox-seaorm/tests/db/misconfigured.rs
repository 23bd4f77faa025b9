//! A store over tables that are not there (never migrated, or named differently from the
//! migration) fails with fatal misconfiguration that names the fix, and a relay over it
//! stops with that error instead of retrying forever.

use std::sync::Arc;
use std::time::Duration;

use outbox_core::driver::{Relay, RelayError};
use outbox_core::testing::MemoryPublisher;
use outbox_core::{
    LeaseRequest, Misconfiguration, OutboxStore, RelayOptions, StoreError, Timestamp,
};
use outbox_seaorm::OutboxTables;
use outbox_tests::unique_name;
use sea_orm::ConnectionTrait;

use crate::on_each_database;
use crate::support::TestDb;

/// How long a relay may take to give up; one that retries never does.
const STOP_WITHIN: Duration = Duration::from_secs(30);

/// Uniquely named tables that no migration created.
fn unmigrated_tables() -> OutboxTables {
    outbox_tests::database::unique_tables("absent")
}

/// One relay's first lease call: a heartbeat, then leases.
fn lease_request() -> LeaseRequest<'static> {
    LeaseRequest {
        relay_id: "r1",
        bucket_count: 8,
        lease_duration: Duration::from_secs(30),
        now: Timestamp::from_millis(1_000),
        busy: &[],
    }
}

fn assert_names_the_migration(e: &StoreError) {
    assert!(e.is_fatal(), "a missing table must be fatal: {e:?}");
    assert!(
        matches!(
            e,
            StoreError::Misconfigured(Misconfiguration::DatabaseSetup { .. })
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("run the outbox migrations"), "{e}");
}

async fn missing_tables_are_fatal(tdb: Arc<TestDb>) {
    let tables = unmigrated_tables();
    let store = tdb.store(&tables);

    let e = store
        .next_batch(0, None, 10)
        .await
        .expect_err("fetching from a missing table");
    assert_names_the_migration(&e);
    assert!(e.to_string().contains(tables.messages()), "{e}");

    let e = store
        .acquire_leases(&lease_request())
        .await
        .expect_err("acquiring leases in missing tables");
    assert_names_the_migration(&e);
}
on_each_database!(missing_tables => super::missing_tables_are_fatal);

async fn a_missing_column_is_fatal(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    // A relays table of another shape: no heartbeat column. (A write, not a read: SQLite
    // takes a double-quoted name that matches no column for a string literal, so only
    // statements that write a column notice it is missing there.)
    let relays = match tdb.kind {
        crate::support::Kind::MySql => format!("`{}`", tables.relays()),
        _ => format!("\"{}\"", tables.relays()),
    };
    tdb.db
        .execute_unprepared(&format!("ALTER TABLE {relays} DROP COLUMN last_seen_at_ms"))
        .await
        .unwrap();
    let e = tdb
        .store(&tables)
        .acquire_leases(&lease_request())
        .await
        .expect_err("a heartbeat into a missing column");
    assert_names_the_migration(&e);
}
on_each_database!(missing_column => super::a_missing_column_is_fatal);

async fn a_relay_over_missing_tables_stops(tdb: Arc<TestDb>) {
    let tables = unmigrated_tables();
    let options = RelayOptions::builder()
        .relay_id(unique_name("relay"))
        .build()
        .unwrap();
    let relay = Relay::spawn(tdb.store(&tables), MemoryPublisher::new(), options).unwrap();
    let outcome = tokio::time::timeout(STOP_WITHIN, relay.join())
        .await
        .unwrap_or_else(|_| panic!("the relay still retries after {STOP_WITHIN:?}"));
    match outcome {
        Err(RelayError::Misconfigured(m @ Misconfiguration::DatabaseSetup { .. })) => {
            assert!(m.to_string().contains("run the outbox migrations"), "{m}");
        }
        other => panic!("expected the fatal setup error, got {other:?}"),
    }
}
on_each_database!(relay_over_missing_tables => super::a_relay_over_missing_tables_stops);
