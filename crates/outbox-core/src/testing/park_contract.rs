//! What every store that parks must show ([`StoreCapabilities::parking`](crate::StoreCapabilities::parking)),
//! as a reusable suite beside [`run_store_contract`](super::contract::run_store_contract):
//! parking under the lease, the hold rule executed in the store's transaction, requeue
//! under original ids, discard, and the parked part of the backlog sample.

use std::future::Future;
use std::time::Duration;

use super::contract::{Capability, CheckOutcome, ContractReport, StoreFixture, row, run_check};
use crate::message::OutboxMessage;
use crate::park::{
    HoldKey, ParkOutcome, ParkReason, ParkRequest, ParkRow, ParkedFailure, ParkedRows,
    ParkedSelection,
};
use crate::store::{LeaseRequest, OutboxStore};
use crate::time::Timestamp;

const T0: Timestamp = Timestamp::from_millis(1_765_000_000_000);
const LEASE: Duration = Duration::from_secs(30);

fn at(seconds: u64) -> Timestamp {
    T0.saturating_add(Duration::from_secs(seconds))
}

/// A row of bucket 0 with this key (or none) and pinned partition.
fn keyed(key: Option<&str>, partition: Option<i32>) -> OutboxMessage {
    OutboxMessage {
        key: key.map(|k| k.as_bytes().to_vec()),
        partition,
        ..row(0, 0)
    }
}

fn failed(attempts: u32) -> ParkReason {
    ParkReason::Failed(ParkedFailure {
        error: "record too large".into(),
        attempts,
        first_failed_at: at(1),
        last_failed_at: at(2),
    })
}

fn held(blocking_id: i64) -> ParkReason {
    ParkReason::HeldBehind { blocking_id }
}

/// Inserts `rows` and returns them with their ids, as `next_batch` would.
async fn committed<X: StoreFixture>(fx: &X, rows: Vec<OutboxMessage>) -> Vec<OutboxMessage> {
    let ids = fx.insert_committed(rows.clone()).await;
    rows.into_iter()
        .zip(ids)
        .map(|(m, id)| OutboxMessage { id, ..m })
        .collect()
}

async fn owner_of_everything<S: OutboxStore>(store: &S, relay: &str) {
    let request = LeaseRequest {
        relay_id: relay,
        bucket_count: 8,
        lease_duration: LEASE,
        now: T0,
        busy: &[],
    };
    if let Err(e) = store.acquire_leases(&request).await {
        panic!("park contract: acquire_leases failed: {e}");
    }
}

async fn park<S: OutboxStore>(
    store: &S,
    relay: &str,
    now: Timestamp,
    rows: Vec<(OutboxMessage, ParkReason)>,
) -> ParkOutcome {
    let rows: Vec<ParkRow> = rows
        .into_iter()
        .map(|(message, reason)| ParkRow { message, reason })
        .collect();
    let request = ParkRequest {
        relay_id: relay,
        now,
        bucket: 0,
        rows: &rows,
    };
    store
        .park_rows(&request)
        .await
        .unwrap_or_else(|e| panic!("park contract: park_rows failed: {e}"))
}

async fn pending_ids<S: OutboxStore>(store: &S) -> Vec<i64> {
    store
        .next_batch(0, None, 100)
        .await
        .unwrap_or_else(|e| panic!("park contract: next_batch failed: {e}"))
        .iter()
        .map(|m| m.id)
        .collect()
}

async fn parked_ids<S: ParkedRows>(store: &S) -> Vec<i64> {
    store
        .list_parked(100)
        .await
        .unwrap_or_else(|e| panic!("park contract: list_parked failed: {e}"))
        .iter()
        .map(|p| p.message.id)
        .collect()
}

/// Runs every parking check, each on a fresh fixture from `make`; a failing check
/// panics. Returns (and prints) the report, naming each check that did not apply.
pub async fn run_park_contract<F, Fut, X>(make: F) -> ContractReport
where
    F: Fn() -> Fut,
    Fut: Future<Output = X>,
    X: StoreFixture,
    X::Store: ParkedRows,
{
    let mut report = ContractReport::new("park contract");
    run_check!(report, make, parking_moves_rows_only_under_a_valid_lease);
    run_check!(
        report,
        make,
        held_rows_park_only_behind_a_lower_parked_row_of_their_key
    );
    run_check!(
        report,
        make,
        requeue_restores_original_ids_ahead_of_later_rows
    );
    run_check!(
        report,
        make,
        requeue_by_id_takes_the_earlier_parked_rows_of_its_key
    );
    run_check!(report, make, discard_deletes_only_the_selection);
    run_check!(report, make, backlog_metrics_count_parked_rows);
    println!("{report}");
    report
}

/// Only the bucket's owner, with an unexpired lease, parks; the row keeps every byte.
pub async fn parking_moves_rows_only_under_a_valid_lease<X>(fx: &X)
where
    X: StoreFixture,
    X::Store: ParkedRows,
{
    let store = fx.store().await;
    owner_of_everything(&store, "relay-a").await;
    let rows = committed(fx, vec![keyed(Some("k"), None), keyed(Some("j"), None)]).await;
    let by_other = park(&store, "relay-b", at(1), vec![(rows[0].clone(), failed(3))]).await;
    assert!(
        by_other.lease_lost && by_other.parked.is_empty(),
        "park contract: a relay without the lease parks nothing: {by_other:?}"
    );
    let expired = park(
        &store,
        "relay-a",
        at(31),
        vec![(rows[0].clone(), failed(3))],
    )
    .await;
    assert!(
        expired.lease_lost && expired.parked.is_empty(),
        "park contract: an expired lease parks nothing: {expired:?}"
    );
    assert_eq!(pending_ids(&store).await, [rows[0].id, rows[1].id]);

    let parked = park(&store, "relay-a", at(2), vec![(rows[0].clone(), failed(3))]).await;
    assert_eq!(
        parked,
        ParkOutcome {
            parked: vec![rows[0].id],
            ..ParkOutcome::default()
        }
    );
    assert_eq!(
        pending_ids(&store).await,
        [rows[1].id],
        "park contract: a parked row is no longer pending"
    );
    let shown = store
        .show_parked(rows[0].id)
        .await
        .unwrap_or_else(|e| panic!("park contract: show_parked failed: {e}"))
        .unwrap_or_else(|| panic!("park contract: the parked row is shown"));
    assert_eq!(
        shown.message, rows[0],
        "park contract: the row is kept as it was"
    );
    assert_eq!(shown.reason, failed(3));
    assert_eq!(shown.parked_at, at(2));
    let again = park(&store, "relay-a", at(3), vec![(rows[0].clone(), failed(4))]).await;
    assert!(
        again.parked.is_empty(),
        "park contract: a row no longer pending is skipped: {again:?}"
    );
}

/// The store executes the hold rule in its transaction: a held row parks only behind a
/// parked row of its key (topic and key, or topic and pinned partition) with a lower id.
pub async fn held_rows_park_only_behind_a_lower_parked_row_of_their_key<X>(fx: &X)
where
    X: StoreFixture,
    X::Store: ParkedRows,
{
    let store = fx.store().await;
    owner_of_everything(&store, "relay-a").await;
    let rows = committed(
        fx,
        vec![
            keyed(Some("k"), None),    // 0
            keyed(Some("k"), None),    // 1
            keyed(Some("j"), None),    // 2
            keyed(Some("k"), Some(1)), // 3: pinned, held by partition
            keyed(Some("x"), Some(1)), // 4: pinned to the same partition
            keyed(None, None),         // 5: keyless
        ],
    )
    .await;
    let id = |i: usize| rows[i].id;
    let alone = park(
        &store,
        "relay-a",
        at(1),
        vec![(rows[1].clone(), held(id(0)))],
    )
    .await;
    assert_eq!(
        alone.released,
        [id(1)],
        "park contract: nothing of the key is parked, so the held row stays pending"
    );
    let outcome = park(
        &store,
        "relay-a",
        at(1),
        vec![
            (rows[0].clone(), failed(3)),
            (rows[1].clone(), held(id(0))),
            (rows[2].clone(), held(id(0))),
            (rows[3].clone(), failed(3)),
            (rows[4].clone(), held(id(3))),
            (rows[5].clone(), failed(3)),
        ],
    )
    .await;
    assert_eq!(
        outcome.parked,
        [id(0), id(1), id(3), id(4), id(5)],
        "park contract: held rows park behind the row parked earlier in the same call"
    );
    assert_eq!(
        outcome.released,
        [id(2)],
        "park contract: another key is not held"
    );
    let mut holds = store
        .parked_holds(0)
        .await
        .unwrap_or_else(|e| panic!("park contract: parked_holds failed: {e}"));
    holds.sort();
    let mut expected = vec![
        (None, id(5)),
        (HoldKey::of(&rows[0]), id(0)),
        (HoldKey::of(&rows[3]), id(3)),
    ];
    expected.sort();
    assert_eq!(
        holds, expected,
        "park contract: parked rows grouped by hold key, lowest id each"
    );
    let shown = store
        .show_parked(id(4))
        .await
        .unwrap_or_else(|e| panic!("park contract: show_parked failed: {e}"))
        .unwrap_or_else(|| panic!("park contract: the held row is shown"));
    assert_eq!(
        (shown.message, shown.reason),
        (rows[4].clone(), held(id(3))),
        "park contract: a held row is kept as it was, with the row it waits behind"
    );
}

/// A requeue puts the rows back under their original ids, in one step, ahead of the
/// key's rows committed meanwhile.
pub async fn requeue_restores_original_ids_ahead_of_later_rows<X>(fx: &X)
where
    X: StoreFixture,
    X::Store: ParkedRows,
{
    let store = fx.store().await;
    owner_of_everything(&store, "relay-a").await;
    let rows = committed(fx, vec![keyed(Some("k"), None), keyed(Some("k"), None)]).await;
    park(
        &store,
        "relay-a",
        at(1),
        vec![
            (rows[0].clone(), failed(3)),
            (rows[1].clone(), held(rows[0].id)),
        ],
    )
    .await;
    let later = committed(fx, vec![keyed(Some("k"), None)]).await;
    let requeued = store
        .requeue_parked(&ParkedSelection::Key(b"k".to_vec()))
        .await
        .unwrap_or_else(|e| panic!("park contract: requeue_parked failed: {e}"));
    assert_eq!(requeued, [rows[0].id, rows[1].id]);
    let batch = store
        .next_batch(0, None, 100)
        .await
        .unwrap_or_else(|e| panic!("park contract: next_batch failed: {e}"));
    assert_eq!(
        batch.iter().map(|m| m.id).collect::<Vec<_>>(),
        [rows[0].id, rows[1].id, later[0].id],
        "park contract: requeued rows come back under their ids, before the key's later row"
    );
    assert_eq!(
        batch[0], rows[0],
        "park contract: the row is restored as it was"
    );
    assert!(parked_ids(&store).await.is_empty());
    // Inserting explicit ids must leave the id generator where it was: a row committed
    // now still sorts after everything committed before it.
    let after = committed(fx, vec![keyed(Some("k"), None)]).await;
    assert!(
        after[0].id > later[0].id,
        "park contract: a requeue moved the id generator back ({} after {})",
        after[0].id,
        later[0].id
    );
}

/// Requeueing one row takes its key's earlier parked rows along (never a later one, never
/// another key's).
pub async fn requeue_by_id_takes_the_earlier_parked_rows_of_its_key<X>(fx: &X)
where
    X: StoreFixture,
    X::Store: ParkedRows,
{
    let store = fx.store().await;
    owner_of_everything(&store, "relay-a").await;
    let rows = committed(
        fx,
        vec![
            keyed(Some("k"), None),
            keyed(Some("j"), None),
            keyed(Some("k"), None),
            keyed(Some("k"), None),
        ],
    )
    .await;
    park(
        &store,
        "relay-a",
        at(1),
        vec![
            (rows[0].clone(), failed(3)),
            (rows[1].clone(), failed(3)),
            (rows[2].clone(), held(rows[0].id)),
            (rows[3].clone(), held(rows[0].id)),
        ],
    )
    .await;
    let requeued = store
        .requeue_parked(&ParkedSelection::Id(rows[2].id))
        .await
        .unwrap_or_else(|e| panic!("park contract: requeue_parked failed: {e}"));
    assert_eq!(requeued, [rows[0].id, rows[2].id]);
    assert_eq!(pending_ids(&store).await, [rows[0].id, rows[2].id]);
    assert_eq!(parked_ids(&store).await, [rows[1].id, rows[3].id]);
    let none = store
        .requeue_parked(&ParkedSelection::Id(i64::MAX))
        .await
        .unwrap_or_else(|e| panic!("park contract: requeue_parked failed: {e}"));
    assert!(
        none.is_empty(),
        "park contract: an unknown id requeues nothing"
    );
}

/// Discard deletes exactly the selected parked rows.
pub async fn discard_deletes_only_the_selection<X>(fx: &X)
where
    X: StoreFixture,
    X::Store: ParkedRows,
{
    let store = fx.store().await;
    owner_of_everything(&store, "relay-a").await;
    let rows = committed(
        fx,
        vec![
            keyed(Some("k"), None),
            keyed(Some("j"), None),
            keyed(Some("k"), Some(2)),
        ],
    )
    .await;
    park(
        &store,
        "relay-a",
        at(1),
        rows.iter().map(|r| (r.clone(), failed(3))).collect(),
    )
    .await;
    let discard = |selection| {
        let store = &store;
        async move {
            store
                .discard_parked(&selection)
                .await
                .unwrap_or_else(|e| panic!("park contract: discard_parked failed: {e}"))
        }
    };
    assert_eq!(
        discard(ParkedSelection::Key(b"k".to_vec())).await,
        [rows[0].id],
        "park contract: a key selects its unpinned rows"
    );
    assert_eq!(discard(ParkedSelection::Id(rows[1].id)).await, [rows[1].id]);
    assert_eq!(parked_ids(&store).await, [rows[2].id]);
    assert_eq!(discard(ParkedSelection::All).await, [rows[2].id]);
    assert!(parked_ids(&store).await.is_empty());
    assert!(
        pending_ids(&store).await.is_empty(),
        "park contract: discarded rows do not come back"
    );
}

/// The backlog sample counts parked rows and dates the oldest park.
pub async fn backlog_metrics_count_parked_rows<X>(fx: &X) -> CheckOutcome
where
    X: StoreFixture,
    X::Store: ParkedRows,
{
    let store = fx.store().await;
    if !store.capabilities().backlog_metrics {
        return CheckOutcome::NotApplicable(Capability::BacklogMetrics);
    }
    owner_of_everything(&store, "relay-a").await;
    let rows = committed(fx, vec![keyed(Some("k"), None), keyed(Some("j"), None)]).await;
    park(&store, "relay-a", at(4), vec![(rows[0].clone(), failed(3))]).await;
    park(&store, "relay-a", at(9), vec![(rows[1].clone(), failed(3))]).await;
    let sample = store
        .pending_metrics()
        .await
        .unwrap_or_else(|e| panic!("park contract: pending_metrics failed: {e}"))
        .unwrap_or_else(|| panic!("park contract: a sample is available"));
    assert_eq!(sample.count, 0);
    assert_eq!(sample.parked_count, Some(2));
    assert_eq!(sample.oldest_parked_at, Some(at(4)));
    CheckOutcome::Passed
}
