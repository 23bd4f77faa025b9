//! The store contract suite against the in-memory store, and the in-memory store's own
//! transaction semantics (the late-commit hazard).
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use outbox_core::OutboxStore;
use outbox_core::testing::contract::{PendingInsert, StoreFixture, row, run_store_contract};
use outbox_core::testing::{MemoryPublisher, MemoryStore, MemoryTransaction, Scripted};
use outbox_core::{OutboxMessage, Publisher, StoreCapabilities};

struct Fixture(MemoryStore);

impl StoreFixture for Fixture {
    type Store = MemoryStore;

    async fn store(&self) -> MemoryStore {
        self.0.clone()
    }

    async fn insert_committed(&self, rows: Vec<OutboxMessage>) -> Vec<i64> {
        self.0.enqueue_all(rows)
    }

    type Pending = Pending;

    async fn insert_pending(&self, rows: Vec<OutboxMessage>) -> Option<(Pending, Vec<i64>)> {
        let mut tx = self.0.begin();
        let ids = rows.into_iter().map(|m| tx.insert(m)).collect();
        Some((Pending(tx), ids))
    }
}

struct Pending(MemoryTransaction);

impl PendingInsert for Pending {
    async fn commit(self) {
        self.0.commit();
    }
}

#[tokio::test]
async fn memory_store_passes_the_contract() {
    let report = run_store_contract(|| async { Fixture(MemoryStore::new()) }).await;
    assert!(
        report.not_applicable().is_empty(),
        "the memory store claims every capability: {report}"
    );
}

#[tokio::test]
async fn memory_store_passes_the_park_contract() {
    let report = outbox_core::testing::park_contract::run_park_contract(|| async {
        Fixture(MemoryStore::new())
    })
    .await;
    assert!(
        report.not_applicable().is_empty(),
        "the memory store claims every capability: {report}"
    );
}

#[tokio::test]
async fn memory_store_without_optional_capabilities_passes_the_contract() {
    let caps = StoreCapabilities {
        lease_renewal: false,
        backlog_metrics: false,
        lease_release: false,
        parking: false,
    };
    let report =
        run_store_contract(|| async move { Fixture(MemoryStore::new().with_capabilities(caps)) })
            .await;
    // The three checks of the missing capabilities are reported, not passed.
    assert_eq!(
        report.not_applicable().len(),
        3,
        "renewal, release and the backlog sample: {report}"
    );
}

#[tokio::test]
async fn late_commit_of_a_lower_id_stays_pending() {
    let store = MemoryStore::new();
    let mut slow = store.begin();
    let low = slow.insert(row(1, 0));
    let high = store.enqueue(row(1, 1));
    assert!(low < high);
    let batch = store.next_batch(1, None, 10).await.unwrap();
    assert_eq!(batch.iter().map(|m| m.id).collect::<Vec<_>>(), vec![high]);
    slow.commit();
    store.delete_published(1, &batch).await.unwrap();
    let left = store.next_batch(1, None, 10).await.unwrap();
    assert_eq!(
        left.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![low],
        "the late lower id was not deleted"
    );
}

#[tokio::test]
async fn rolled_back_rows_never_appear() {
    let store = MemoryStore::new();
    let mut tx = store.begin();
    tx.insert(row(0, 0));
    drop(tx);
    assert_eq!(store.pending_count(), 0);
}

#[tokio::test]
async fn memory_publisher_follows_its_script() {
    let publisher = MemoryPublisher::new();
    let batch: Vec<OutboxMessage> = (0..4)
        .map(|i| {
            let mut m = row(0, i);
            m.id = i as i64 + 1;
            m
        })
        .collect();
    publisher.script([
        Scripted::AckPrefix {
            acknowledged: 2,
            permanent: true,
        },
        Scripted::LostAck { appended: 1 },
    ]);
    let first = publisher.publish(&batch).await;
    assert_eq!(first.acknowledged, 2);
    let error = first.error.unwrap();
    assert!(error.is_permanent());
    assert_eq!(
        error.message_id,
        Some(batch[2].message_id),
        "the first failed record is named"
    );
    let second = publisher.publish(&batch).await;
    assert_eq!(second.acknowledged, 0);
    assert!(second.error.is_some());
    let third = publisher.publish(&batch).await;
    assert_eq!(third.acknowledged, 4);
    let ids: Vec<i64> = publisher.records().iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![1, 2, 1, 1, 2, 3, 4]);
    assert_eq!(publisher.calls(), 3);
}
