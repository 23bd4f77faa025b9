//! The late-commit check: a read past a cursor never skips a row that committed late
//! under a lower id.

use std::collections::BTreeSet;

use super::fixture::{PendingInsert, StoreFixture};
use super::support::row;
use crate::message::OutboxMessage;
use crate::store::OutboxStore;

/// What the reads of one bucket have returned so far, and which rows are committed.
#[derive(Default)]
struct ReadLog {
    seen: BTreeSet<i64>,
    committed: BTreeSet<i64>,
}

impl ReadLog {
    /// Checks one read: ascending ids, committed rows only, and no committed row below
    /// the highest one returned that neither this read nor an earlier one returned.
    /// Returns the cursor the relay would pass next (the last id, or the old cursor).
    fn check(&mut self, step: &str, batch: &[OutboxMessage], cursor: Option<i64>) -> Option<i64> {
        let ids: Vec<i64> = batch.iter().map(|m| m.id).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "store contract `{step}`: ids ascend: {ids:?}"
        );
        assert!(
            ids.iter().all(|id| self.committed.contains(id)),
            "store contract `{step}`: only committed rows are read: {ids:?}, committed {:?}",
            self.committed
        );
        if let Some(highest) = ids.last() {
            let skipped: Vec<i64> = self
                .committed
                .range(..highest)
                .filter(|id| !self.seen.contains(id) && !ids.contains(id))
                .copied()
                .collect();
            assert!(
                skipped.is_empty(),
                "store contract `{step}`: the read returned {ids:?} (cursor {cursor:?}) but \
                 skipped the committed lower rows {skipped:?}, which no earlier read \
                 returned: a key's later row would be published before its earlier one"
            );
        }
        self.seen.extend(ids.iter().copied());
        ids.last().copied().or(cursor)
    }
}

/// The late-commit hazard against the cursor. Writers serialize per key, but rows of
/// different keys commit out of id order: a row `x` drawn before `y` may commit after
/// `y` was read. A read `id > y` would then return `x`'s key's next row `z` and never
/// `x`. A store honours a cursor only when no lower row can still appear unreturned;
/// otherwise it reads from the head (the relay drops rows it already holds).
///
/// For every step of inserts, late commits, cursor reads and head reads, the rows a read
/// returns plus those returned before contain every committed row below the highest one
/// it returned.
pub async fn cursor_read_never_skips_a_late_commit(fx: &impl StoreFixture) {
    const B: i32 = 6;
    let store = fx.store().await;
    let mut log = ReadLog::default();
    let read = |after: Option<i64>| {
        let store = &store;
        async move {
            store
                .next_batch(B, after, 10)
                .await
                .unwrap_or_else(|e| panic!("store contract: next_batch({after:?}) failed: {e}"))
        }
    };
    let first = fx
        .insert_committed(vec![row(B, 0), row(B, 1), row(B, 2)])
        .await;
    log.committed.extend(&first);
    let mut cursor = log.check("head read", &read(None).await, None);
    cursor = log.check("cursor read, nothing pending", &read(cursor).await, cursor);

    let Some((late, late_ids)) = fx.insert_pending(vec![row(B, 3)]).await else {
        // Writers cannot overlap: ids become visible in order, and the cursor is exact.
        let more = fx.insert_committed(vec![row(B, 4), row(B, 5)]).await;
        log.committed.extend(&more);
        log.check(
            "cursor read, serialized writers",
            &read(cursor).await,
            cursor,
        );
        return;
    };
    // `x` holds a lower id, invisible, while `y` commits above it and is read.
    let y = fx.insert_committed(vec![row(B, 4)]).await;
    log.committed.extend(&y);
    assert!(late_ids.iter().all(|x| y.iter().all(|y| x < y)));
    cursor = log.check(
        "cursor read while x is pending",
        &read(cursor).await,
        cursor,
    );
    cursor = log.check(
        "cursor read while x is still pending",
        &read(cursor).await,
        cursor,
    );
    // `x` commits late; then its key's next row `z` commits.
    late.commit().await;
    log.committed.extend(&late_ids);
    let z = fx.insert_committed(vec![row(B, 5)]).await;
    log.committed.extend(&z);
    cursor = log.check(
        "cursor read after the late commit",
        &read(cursor).await,
        cursor,
    );
    // Whatever the store chose, the late row has been read by now or comes with a head
    // read; later cursor reads keep the property.
    let more = fx.insert_committed(vec![row(B, 6), row(B, 7)]).await;
    log.committed.extend(&more);
    cursor = log.check("cursor read later on", &read(cursor).await, cursor);
    log.check("head read at the end", &read(None).await, cursor);
    let missing: Vec<i64> = log.committed.difference(&log.seen).copied().collect();
    assert!(
        missing.is_empty(),
        "store contract: every committed row was read in the end, missing {missing:?}"
    );
}
