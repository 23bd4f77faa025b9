//! Two and three relays (distinct relay ids, separate store handles) competing for the
//! same buckets.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use outbox_core::{LeaseRequest, OutboxStore, StoreError, Timestamp};
use outbox_seaorm::{OutboxTables, SeaOrmStore};

use crate::on_each_database;
use crate::support::TestDb;

const BUCKETS: u32 = 8;
const LEASE: Duration = Duration::from_secs(30);
const T0: i64 = 1_765_000_000_000;

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + ms)
}

async fn acquire(store: &SeaOrmStore, relay: &str, now: Timestamp) -> Vec<i32> {
    store
        .acquire_leases(&LeaseRequest {
            relay_id: relay,
            bucket_count: BUCKETS,
            lease_duration: LEASE,
            now,
            busy: &[],
        })
        .await
        .unwrap_or_else(|e| panic!("acquire for {relay}: {e}"))
        .held
}

fn assert_disjoint(views: &[(&str, &[i32])]) {
    let mut owner_of = BTreeMap::new();
    for (relay, buckets) in views {
        for b in *buckets {
            if let Some(other) = owner_of.insert(*b, *relay) {
                panic!("bucket {b} granted to both {other} and {relay}: {views:?}");
            }
        }
    }
}

/// Every relay's reported set matches the table, and the table never has a bucket
/// promised to two relays.
async fn assert_matches_table(
    tdb: &TestDb,
    tables: &OutboxTables,
    views: &[(&str, &[i32])],
    now: Timestamp,
) {
    assert_disjoint(views);
    let table = tdb.lease_table(tables).await;
    for (relay, buckets) in views {
        for b in *buckets {
            let (owner, expires) = &table[b];
            assert_eq!(
                owner.as_deref(),
                Some(*relay),
                "bucket {b} in the table: {table:?}"
            );
            assert!(
                *expires > now.as_millis(),
                "bucket {b} reported held but expired"
            );
        }
    }
}

/// 1, then 2, then 3 relays join; then they leave one by one. Shares converge at each
/// stage, and no bucket is ever held by two relays at once.
async fn fair_share_with_joins_and_leaves(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let (a, b, c) = (tdb.store(&tables), tdb.store(&tables), tdb.store(&tables));
    let mut t = 0;
    let mut tick = || {
        t += 1_000;
        at(t)
    };

    let now = tick();
    let held_a = acquire(&a, "relay-a", now).await;
    assert_eq!(
        held_a,
        (0..8).collect::<Vec<_>>(),
        "one relay owns everything"
    );

    // relay-b joins.
    let mut ha = held_a;
    let mut hb;
    for _ in 0..3 {
        let now = tick();
        hb = acquire(&b, "relay-b", now).await;
        assert_matches_table(&tdb, &tables, &[("relay-a", &ha), ("relay-b", &hb)], now).await;
        let now = tick();
        ha = acquire(&a, "relay-a", now).await;
        assert_matches_table(&tdb, &tables, &[("relay-a", &ha), ("relay-b", &hb)], now).await;
    }
    let now = tick();
    hb = acquire(&b, "relay-b", now).await;
    assert_eq!(
        (ha.len(), hb.len()),
        (4, 4),
        "two relays split 4/4: {ha:?} {hb:?}"
    );

    // relay-c joins.
    let mut hc = Vec::new();
    for _ in 0..3 {
        for (store, id) in [(&c, "relay-c"), (&a, "relay-a"), (&b, "relay-b")] {
            let now = tick();
            let held = acquire(store, id, now).await;
            match id {
                "relay-a" => ha = held,
                "relay-b" => hb = held,
                _ => hc = held,
            }
            assert_matches_table(
                &tdb,
                &tables,
                &[("relay-a", &ha), ("relay-b", &hb), ("relay-c", &hc)],
                now,
            )
            .await;
        }
    }
    let mut sizes = [ha.len(), hb.len(), hc.len()];
    sizes.sort_unstable();
    assert_eq!(
        sizes,
        [2, 3, 3],
        "three relays split 3/3/2: {ha:?} {hb:?} {hc:?}"
    );

    // relay-c leaves: after its heartbeat and leases age out, a and b split 4/4.
    for _ in 0..5 {
        t += 10_000;
        let now = at(t);
        ha = acquire(&a, "relay-a", now).await;
        hb = acquire(&b, "relay-b", now).await;
        assert_disjoint(&[("relay-a", &ha), ("relay-b", &hb)]);
    }
    assert_eq!((ha.len(), hb.len()), (4, 4), "after c left: {ha:?} {hb:?}");

    // relay-b leaves: a ends up with everything, but only after b's leases expired.
    t += 1_000;
    let early = acquire(&a, "relay-a", at(t)).await;
    assert_eq!(early.len(), 4, "b's live leases are not taken: {early:?}");
    for _ in 0..5 {
        t += 10_000;
        ha = acquire(&a, "relay-a", at(t)).await;
    }
    assert_eq!(
        ha,
        (0..8).collect::<Vec<_>>(),
        "the last relay takes over everything"
    );
}

/// A dead relay's leases are taken over only once they expired.
async fn expiry_takeover(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let (a, b) = (tdb.store(&tables), tdb.store(&tables));
    assert_eq!(acquire(&a, "relay-a", at(0)).await.len(), 8);
    assert!(
        acquire(&b, "relay-b", at(29_999)).await.is_empty(),
        "not before expiry"
    );
    let expiry_instant = acquire(&b, "relay-b", at(30_000)).await;
    assert_eq!(
        expiry_instant,
        (0..8).collect::<Vec<_>>(),
        "a lease is claimable at its expiry instant (expires_at <= now)"
    );
    // relay-a comes back: it is live again, but b's leases are live too, so it gets
    // nothing until b releases its surplus.
    assert!(acquire(&a, "relay-a", at(31_000)).await.is_empty());
    let hb = acquire(&b, "relay-b", at(32_000)).await;
    assert_eq!(hb.len(), 4);
    let ha = acquire(&a, "relay-a", at(33_000)).await;
    assert_eq!(ha.len(), 4);
    assert_matches_table(
        &tdb,
        &tables,
        &[("relay-a", &ha), ("relay-b", &hb)],
        at(33_000),
    )
    .await;
}

/// Many relays acquiring truly concurrently (separate connections, same instant): the
/// guarded updates let exactly one win each bucket.
async fn concurrent_claims_never_overlap(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    for round in 0..5_i64 {
        let now = at(round * 100);
        let mut tasks = Vec::new();
        for i in 0..4 {
            let store = tdb.store(&tables);
            tasks.push(tokio::spawn(async move {
                let id = format!("relay-{i}");
                let held = store
                    .acquire_leases(&LeaseRequest {
                        relay_id: &id,
                        bucket_count: BUCKETS,
                        lease_duration: LEASE,
                        now,
                        busy: &[],
                    })
                    .await
                    .map(|a| a.held);
                (id, held)
            }));
        }
        let mut results = Vec::new();
        for task in tasks {
            let (id, held) = task.await.unwrap();
            let held = held.unwrap_or_else(|e: StoreError| {
                // SQLite serializes writers; a writer that waited past the busy
                // timeout reports a retryable error, which the relay retries.
                assert!(!e.is_fatal(), "{e}");
                Vec::new()
            });
            results.push((id, held));
        }
        let views: Vec<(&str, &[i32])> = results
            .iter()
            .map(|(id, h)| (id.as_str(), h.as_slice()))
            .collect();
        assert_matches_table(&tdb, &tables, &views, now).await;
    }
}

/// Relay ids compare byte for byte: `relay-A` and `relay-a` are two relays, also on
/// MySQL, whose default collation would treat them as one.
async fn relay_ids_are_case_sensitive(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let (a, b) = (tdb.store(&tables), tdb.store(&tables));
    assert_eq!(acquire(&a, "relay-a", at(0)).await.len(), 8);
    assert!(
        acquire(&b, "relay-A", at(1_000)).await.is_empty(),
        "relay-A must not inherit relay-a's live leases"
    );
    let renewed = b
        .renew_leases(
            &LeaseRequest {
                relay_id: "relay-A",
                bucket_count: BUCKETS,
                lease_duration: LEASE,
                now: at(2_000),
                busy: &[],
            },
            &[0, 1],
        )
        .await
        .unwrap();
    assert!(renewed.renewed.is_empty(), "{renewed:?}");
    assert_eq!(renewed.lost, vec![0, 1]);
}

on_each_database!(fair_share_joins_and_leaves => super::fair_share_with_joins_and_leaves);
on_each_database!(expiry_takeover_only_after_expiry => super::expiry_takeover);
on_each_database!(concurrent_claims => super::concurrent_claims_never_overlap);
on_each_database!(case_sensitive_relay_ids => super::relay_ids_are_case_sensitive);
