//! Batch checks: the pending probe, reading a bucket's oldest rows, and deleting what
//! was published.

use super::fixture::StoreFixture;
use super::support::{BUCKETS, row};
use crate::store::OutboxStore;

/// The probe names exactly the owned buckets that have rows.
pub async fn pending_probe_reports_owned_buckets_with_rows(fx: &impl StoreFixture) {
    let store = fx.store().await;
    fx.insert_committed(vec![row(1, 0), row(3, 1), row(1, 2)])
        .await;
    let found = store.buckets_with_pending(&[0, 1, 2], BUCKETS).await;
    assert_eq!(
        found.ok(),
        Some(vec![1]),
        "store contract: probe reports owned buckets with rows only"
    );
    let none = store.buckets_with_pending(&[], BUCKETS).await;
    assert_eq!(
        none.ok(),
        Some(vec![]),
        "store contract: owning nothing finds nothing"
    );
}

/// Rows in a bucket no relay can claim stop the relay instead of waiting forever.
pub async fn out_of_range_bucket_is_fatal(fx: &impl StoreFixture) {
    let store = fx.store().await;
    fx.insert_committed(vec![row(2, 0), row(11, 1)]).await;
    match store
        .buckets_with_pending(&[0, 1, 2, 3, 4, 5, 6, 7], BUCKETS)
        .await
    {
        Err(e) if e.is_fatal() => {}
        other => panic!(
            "store contract: a row in bucket 11 of 8 must be a fatal misconfiguration, got {other:?}"
        ),
    }
}

/// A batch is one bucket's oldest rows, in id order, at most `limit`.
pub async fn next_batch_is_oldest_first_and_bounded(fx: &impl StoreFixture) {
    let store = fx.store().await;
    let ids = fx
        .insert_committed(vec![row(2, 0), row(3, 1), row(2, 2), row(2, 3), row(2, 4)])
        .await;
    let batch = store
        .next_batch(2, None, 3)
        .await
        .unwrap_or_else(|e| panic!("store contract: next_batch failed: {e}"));
    let got: Vec<i64> = batch.iter().map(|m| m.id).collect();
    assert_eq!(
        got,
        vec![ids[0], ids[2], ids[3]],
        "store contract: oldest first, bounded by limit, one bucket"
    );
    assert!(batch.iter().all(|m| m.bucket == 2));
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "store contract: ids ascend within a batch"
    );
    // A store may ignore the cursor and read from the head (when it cannot prove that
    // no lower row can still commit); either way the rows above the cursor all come back.
    let after = store
        .next_batch(2, Some(ids[2]), 10)
        .await
        .unwrap_or_else(|e| panic!("store contract: next_batch after a cursor failed: {e}"));
    let after: Vec<i64> = after.iter().map(|m| m.id).collect();
    assert!(
        after.windows(2).all(|w| w[0] < w[1]),
        "store contract: ids ascend within a cursor read: {after:?}"
    );
    assert_eq!(
        after
            .iter()
            .filter(|id| **id > ids[2])
            .copied()
            .collect::<Vec<_>>(),
        vec![ids[3], ids[4]],
        "store contract: a cursor read returns every row of the bucket above the cursor"
    );
    assert!(
        after
            .iter()
            .all(|id| [ids[0], ids[2], ids[3], ids[4]].contains(id)),
        "store contract: a cursor read returns the bucket's rows only: {after:?}"
    );
    let past_end = store
        .next_batch(2, Some(ids[4]), 10)
        .await
        .unwrap_or_else(|e| panic!("store contract: next_batch after a cursor failed: {e}"));
    assert!(
        past_end.iter().all(|m| m.id <= ids[4]),
        "store contract: nothing above the last row: {past_end:?}"
    );
}

/// Only the listed rows disappear; deleting an already deleted row is harmless.
pub async fn delete_published_deletes_exactly_the_listed_rows(fx: &impl StoreFixture) {
    let store = fx.store().await;
    let ids = fx
        .insert_committed((0..5).map(|i| row(4, i)).collect())
        .await;
    let batch = store
        .next_batch(4, None, 10)
        .await
        .unwrap_or_else(|e| panic!("store contract: next_batch failed: {e}"));
    assert_eq!(batch.len(), 5);
    let result = store.delete_published(4, &batch[..2]).await;
    assert!(
        result.is_ok(),
        "store contract: delete_published failed: {result:?}"
    );
    let rest: Vec<i64> = store
        .next_batch(4, None, 10)
        .await
        .map(|b| b.iter().map(|m| m.id).collect())
        .unwrap_or_default();
    assert_eq!(
        rest,
        ids[2..].to_vec(),
        "store contract: exactly the listed rows are deleted"
    );
    let again = store.delete_published(4, &batch[..2]).await;
    assert!(
        again.is_ok(),
        "store contract: deleting deleted rows is not an error: {again:?}"
    );
    let rest_again = store
        .next_batch(4, None, 10)
        .await
        .map(|b| b.len())
        .unwrap_or_default();
    assert_eq!(rest_again, 3);
}
