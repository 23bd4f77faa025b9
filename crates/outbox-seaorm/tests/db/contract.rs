//! The store contract suite from outbox-core, on each database.

use std::sync::Arc;

use outbox_core::testing::contract::run_store_contract;

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
