//! The store contract suites from outbox-core (leases and batches; parking), on each
//! database.

use std::sync::Arc;

use outbox_core::testing::contract::run_store_contract;
use outbox_core::testing::park_contract::run_park_contract;

use crate::on_each_database;
use crate::support::{Fixture, TestDb};

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
