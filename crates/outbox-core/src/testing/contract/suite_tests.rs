//! The suites' reports on the in-memory store: a store without an optional capability
//! gets each check of it counted and named as not applicable, and a store with every
//! capability has none.

use super::super::report::{Capability, ContractReport, NotApplicable};
use super::super::{PendingInsert, StoreFixture};
use super::run_store_contract;
use crate::message::OutboxMessage;
use crate::store::StoreCapabilities;
use crate::testing::park_contract::run_park_contract;
use crate::testing::{MemoryStore, MemoryTransaction};

/// A fresh in-memory outbox whose handles report `capabilities`.
struct Fixture {
    store: MemoryStore,
}

impl Fixture {
    fn with(capabilities: StoreCapabilities) -> Self {
        Fixture {
            store: MemoryStore::new().with_capabilities(capabilities),
        }
    }
}

impl StoreFixture for Fixture {
    type Store = MemoryStore;

    async fn store(&self) -> MemoryStore {
        self.store.clone()
    }

    async fn insert_committed(&self, rows: Vec<OutboxMessage>) -> Vec<i64> {
        self.store.enqueue_all(rows)
    }

    type Pending = Pending;

    async fn insert_pending(&self, rows: Vec<OutboxMessage>) -> Option<(Pending, Vec<i64>)> {
        let mut tx = self.store.begin();
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

const EVERY: StoreCapabilities = StoreCapabilities {
    lease_renewal: true,
    backlog_metrics: true,
    lease_release: true,
    parking: true,
};

fn not_applicable(report: &ContractReport) -> Vec<(&'static str, Capability)> {
    report
        .not_applicable()
        .iter()
        .map(|NotApplicable { check, missing }| (*check, *missing))
        .collect()
}

#[tokio::test]
async fn a_store_with_every_capability_runs_every_check() {
    let report = run_store_contract(|| async { Fixture::with(EVERY) }).await;
    assert_eq!(report.passed().len(), 16, "{report}");
    assert!(report.not_applicable().is_empty(), "{report}");
    assert_eq!(
        report.to_string(),
        "store contract: 16 checks passed, 0 not applicable"
    );
    let park = run_park_contract(|| async { Fixture::with(EVERY) }).await;
    assert_eq!(park.passed().len(), 6, "{park}");
    assert!(park.not_applicable().is_empty(), "{park}");
}

#[tokio::test]
async fn checks_of_missing_capabilities_are_counted_and_named() {
    let caps = StoreCapabilities {
        lease_renewal: false,
        backlog_metrics: false,
        lease_release: false,
        parking: false,
    };
    let report = run_store_contract(|| async move { Fixture::with(caps) }).await;
    assert_eq!(
        not_applicable(&report),
        [
            (
                "renewal_extends_held_leases_and_reports_lost_ones",
                Capability::LeaseRenewal
            ),
            (
                "released_leases_are_taken_at_once",
                Capability::LeaseRelease
            ),
            ("backlog_metrics_count_and_age", Capability::BacklogMetrics),
        ]
    );
    assert_eq!(report.passed().len(), 13, "{report}");
    assert!(
        !report.passed().contains(&"backlog_metrics_count_and_age"),
        "a check that did not apply is not counted as passed: {report}"
    );
    assert_eq!(
        report.to_string(),
        "store contract: 13 checks passed, 3 not applicable \
         (lease_renewal: renewal_extends_held_leases_and_reports_lost_ones, \
         lease_release: released_leases_are_taken_at_once, \
         backlog_metrics: backlog_metrics_count_and_age)"
    );
}

#[tokio::test]
async fn one_missing_capability_leaves_the_others_checked() {
    let caps = StoreCapabilities {
        backlog_metrics: false,
        ..EVERY
    };
    let report = run_store_contract(|| async move { Fixture::with(caps) }).await;
    assert_eq!(
        not_applicable(&report),
        [("backlog_metrics_count_and_age", Capability::BacklogMetrics)]
    );
    assert_eq!(report.passed().len(), 15, "{report}");
    let park = run_park_contract(|| async move { Fixture::with(caps) }).await;
    assert_eq!(
        not_applicable(&park),
        [(
            "backlog_metrics_count_parked_rows",
            Capability::BacklogMetrics
        )]
    );
    assert_eq!(
        park.to_string(),
        "park contract: 5 checks passed, 1 not applicable \
         (backlog_metrics: backlog_metrics_count_parked_rows)"
    );
}
