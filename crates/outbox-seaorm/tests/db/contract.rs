//! The store contract suites from outbox-core (leases and batches; parking), on each
//! database.

use std::sync::Arc;

use outbox_core::testing::contract::run_store_contract;
use outbox_core::testing::park_contract::run_park_contract;

use crate::on_each_database;
use crate::support::{Fixture, Kind, TestDb, run};

async fn store_contract(tdb: Arc<TestDb>) {
    run_store_contract(|| {
        let tdb = Arc::clone(&tdb);
        async move {
            let tables = tdb.fresh_tables().await;
            Fixture { tdb, tables }
        }
    })
    .await;
}

on_each_database!(store_contract => super::store_contract);

async fn park_contract(tdb: Arc<TestDb>) {
    run_park_contract(|| {
        let tdb = Arc::clone(&tdb);
        async move {
            let tables = tdb.fresh_tables().await;
            Fixture { tdb, tables }
        }
    })
    .await;
}

on_each_database!(park_contract => super::park_contract);

/// The parking suite again with every table in a schema of its own (PostgreSQL schema,
/// MySQL/MariaDB database): each statement of the parked table qualifies its names.
async fn park_contract_in_own_schema(tdb: Arc<TestDb>) {
    run_park_contract(|| {
        let tdb = Arc::clone(&tdb);
        async move {
            let tables = tdb.fresh_tables_in_own_schema().await;
            Fixture { tdb, tables }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn park_contract_own_schema_postgres() {
    run(Kind::Postgres, park_contract_in_own_schema).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn park_contract_own_schema_mysql() {
    run(Kind::MySql, park_contract_in_own_schema).await
}
