//! The late-commit hazard: a lower id that commits after a batch was read must survive
//! that batch's mark-published.

use std::sync::Arc;

use outbox_core::OutboxStore;
use outbox_core::testing::contract::row;
use outbox_seaorm::insert_rows;
use sea_orm::TransactionTrait;

use crate::support::{Kind, TestDb};

async fn lower_id_committing_late_is_not_deleted(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let store = tdb.store(&tables);

    // Connection 1: a writer inserts (and so draws the lower id) but has not committed.
    let slow = tdb.db.begin().await.unwrap();
    insert_rows(&slow, &tables, &[row(2, 0)]).await.unwrap();

    // Connection 2: another writer inserts a higher id and commits.
    insert_rows(&tdb.db, &tables, &[row(2, 1)]).await.unwrap();

    // The relay reads the bucket: only the committed, higher id is visible.
    let batch = store.next_batch(2, None, 10).await.unwrap();
    assert_eq!(
        batch.len(),
        1,
        "the uncommitted row is invisible: {batch:?}"
    );
    let higher = batch[0].id;

    // The slow writer commits its lower id; then the relay deletes its batch.
    slow.commit().await.unwrap();
    store.delete_published(2, &batch).await.unwrap();

    let pending = store.next_batch(2, None, 10).await.unwrap();
    assert_eq!(
        pending.len(),
        1,
        "the late row is still pending: {pending:?}"
    );
    assert!(
        pending[0].id < higher,
        "the survivor has the lower id ({} vs {higher}): this is the hazard a range delete would hit",
        pending[0].id
    );
}

/// SQLite lets one writer at a time, so a lower id can never commit after a higher one.
/// What remains to prove there is the delete itself: a batch that skipped a lower row
/// (as if it was invisible when read) leaves that row alone.
async fn sqlite_delete_is_exact(tdb: Arc<TestDb>) {
    assert_eq!(tdb.kind, Kind::Sqlite);
    let tables = tdb.fresh_tables().await;
    let store = tdb.store(&tables);
    insert_rows(&tdb.db, &tables, &[row(2, 0), row(2, 1), row(2, 2)])
        .await
        .unwrap();
    let all = store.next_batch(2, None, 10).await.unwrap();
    assert_eq!(all.len(), 3);
    store.delete_published(2, &all[1..]).await.unwrap();
    let pending = store.next_batch(2, None, 10).await.unwrap();
    assert_eq!(pending, all[..1].to_vec());
}

mod late_commit_hazard {
    use crate::support::{Kind, run};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        run(
            Kind::Postgres,
            super::lower_id_committing_late_is_not_deleted,
        )
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mysql() {
        run(Kind::MySql, super::lower_id_committing_late_is_not_deleted).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        run(Kind::Sqlite, super::sqlite_delete_is_exact).await
    }
}
