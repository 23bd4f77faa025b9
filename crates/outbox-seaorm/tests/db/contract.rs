//! The store contract suites from outbox-core (leases and batches; parking), on each
//! database.

use std::sync::Arc;

use outbox_core::testing::contract::{ContractReport, run_store_contract};
use outbox_core::testing::park_contract::run_park_contract;

use crate::on_each_database;
use crate::support::{Fixture, Kind, TestDb, run};

/// The SeaORM store claims every optional capability, so no check may be skipped.
fn every_check_ran(report: &ContractReport) {
    assert!(
        report.not_applicable().is_empty(),
        "the SeaORM store claims every capability: {report}"
    );
}

async fn store_contract(tdb: Arc<TestDb>) {
    let report = run_store_contract(|| {
        let tdb = Arc::clone(&tdb);
        async move {
            let tables = tdb.fresh_tables().await;
            Fixture { tdb, tables }
        }
    })
    .await;
    every_check_ran(&report);
}

on_each_database!(store_contract => super::store_contract);

async fn park_contract(tdb: Arc<TestDb>) {
    let report = run_park_contract(|| {
        let tdb = Arc::clone(&tdb);
        async move {
            let tables = tdb.fresh_tables().await;
            Fixture { tdb, tables }
        }
    })
    .await;
    every_check_ran(&report);
}

on_each_database!(park_contract => super::park_contract);

/// The parking suite again with every table in a schema of its own (PostgreSQL schema,
/// MySQL/MariaDB database): each statement of the parked table qualifies its names.
async fn park_contract_in_own_schema(tdb: Arc<TestDb>) {
    let report = run_park_contract(|| {
        let tdb = Arc::clone(&tdb);
        async move {
            let tables = tdb.fresh_tables_in_own_schema().await;
            Fixture { tdb, tables }
        }
    })
    .await;
    every_check_ran(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn park_contract_own_schema_postgres() {
    run(Kind::Postgres, park_contract_in_own_schema).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn park_contract_own_schema_mysql() {
    run(Kind::MySql, park_contract_in_own_schema).await
}
