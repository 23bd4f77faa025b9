//! Section "poisoned": one row that can never be published sits at the front of bucket
//! 0; do the other buckets drain as fast as without it?
//!
//! The poison is a record whose value (2 MiB) exceeds the publisher's
//! `max_request_size` (1 MiB by default): the store fetches it like any row, and the
//! publisher refuses it with a permanent `RecordTooLarge` at publish time, so it fails
//! per bucket and is parked once its attempts run out (a headers blob that does not
//! decode would fail earlier, in the store's fetch). Both runs drain the same rows of buckets 1..7 from the shared source; the
//! poisoned run has the poison row in bucket 0 as well, inserted before them. The
//! figure is the time until buckets 1..7 are empty, as a rate.

use std::time::{Duration, Instant};

use outbox_core::driver::Relay;
use outbox_core::{EnqueueConfig, OutboxSchema};
use outbox_seaorm::{OutboxTables, SeaOrmStore, insert_rows};
use sea_orm::{DatabaseConnection, TransactionTrait};

use crate::ack::{Acks, Recording};
use crate::drain::drain_timeout;
use crate::env::{Env, wait_until};
use crate::report::{Report, int};
use crate::{Shared, data};

const SECTION: &str = "poisoned";
/// The buckets that must keep draining.
const HEALTHY: [i32; 7] = [1, 2, 3, 4, 5, 6, 7];
/// Twice the publisher's default `max_request_size`.
const POISON_SIZE: usize = 2 * 1024 * 1024;

pub async fn run(env: &Env, shared: &mut Shared, report: &mut Report) {
    println!(
        "\n== {SECTION}: buckets 1..7 of the shared rows, with and without a {POISON_SIZE} B row (over max_request_size) at the front of bucket 0"
    );
    let db = env.db().await;
    let source = shared.source(env, &db, report).await;

    let (clean, n) = drain_healthy(env, &db, &source, false, None).await;
    // The poisoned run gets a bounded window: a relay that stalls on the poison must
    // yield a figure (rows acknowledged / window), not a failed benchmark.
    let window = (clean.1 * 5).max(Duration::from_secs(env.args.pick(30, 10)));
    let (poisoned, _) = drain_healthy(env, &db, &source, true, Some(window)).await;
    let clean_rate = clean.0 as f64 / clean.1.as_secs_f64();
    let poisoned_rate = poisoned.0 as f64 / poisoned.1.as_secs_f64();
    if poisoned.0 < n {
        report.line(
            SECTION,
            &format!("poisoned run: rows of buckets 1..7 acknowledged within {window:?}"),
            format!("{} of {n}", poisoned.0),
        );
    }
    let ratio = poisoned_rate / clean_rate;
    report.line(
        SECTION,
        &format!("buckets 1..7 ({n} rows), no poison (msgs/s)"),
        int(clean_rate),
    );
    report.line(
        SECTION,
        "buckets 1..7, poison row at the head of bucket 0 (msgs/s)",
        int(poisoned_rate),
    );
    report.line(SECTION, "poisoned / clean", format!("{ratio:.2}"));
    report.set(SECTION, "rows", n);
    report.set(SECTION, "clean_msgs_per_s", clean_rate);
    report.set(SECTION, "poisoned_msgs_per_s", poisoned_rate);
    report.set(SECTION, "poisoned_over_clean", ratio);
    report.target(
        "healthy buckets with one poisoned bucket / without",
        ">= 0.9",
        format!("{ratio:.2} ({} of {n} rows in the window)", poisoned.0),
        Some(ratio >= 0.9),
    );
}

/// One relay (default options) on a copy of buckets 1..7, with the poison row first when
/// `poison`. Returns (rows of buckets 1..7 acknowledged, time until those buckets were
/// empty or `window` ran out), and their row count.
async fn drain_healthy(
    env: &Env,
    db: &DatabaseConnection,
    source: &OutboxTables,
    poison: bool,
    window: Option<Duration>,
) -> ((u64, Duration), u64) {
    let tables = env.tables(db).await;
    let topic = env.topic().await;
    if poison {
        insert_poison(db, &tables, &topic).await;
    }
    data::copy_buckets(db, source, &tables, &topic, None, Some(&HEALTHY)).await;
    let n = data::count_in(db, &tables, &HEALTHY).await;

    let acks = Acks::default();
    let schema = env.schema(&tables, 8);
    let store = SeaOrmStore::new(env.db().await, schema.clone()).unwrap();
    let publisher = Recording::new(env.publisher().await, acks.clone());
    let options = env.relay_options(&schema).build().unwrap();
    let started = Instant::now();
    let relay = Relay::spawn(store, publisher, options).unwrap();
    let deadline = started + window.unwrap_or_else(|| drain_timeout(n));
    while acks.count() < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let done = acks.count().min(n);
    if done == n {
        wait_until(
            "buckets 1..7 to be empty",
            Duration::from_secs(30),
            Duration::from_millis(2),
            || async { data::count_in(db, &tables, &HEALTHY).await == 0 },
        )
        .await;
    } else {
        assert!(
            poison,
            "the clean run must drain within {:?}",
            drain_timeout(n)
        );
    }
    let elapsed = started.elapsed();
    relay.stop(Duration::from_secs(10)).await.unwrap();
    if poison && done == n {
        // The poison was never published, never dropped: still pending, or parked once
        // its attempts ran out.
        let kept = data::count_in(db, &tables, &[0]).await + data::count_parked(db, &tables).await;
        assert_eq!(kept, 1, "the poison row is pending or parked");
        assert_eq!(acks.count(), n, "only the healthy rows were acknowledged");
    }
    env.drop_tables(db, &tables).await;
    ((done, elapsed), n)
}

/// A row of bucket 0 whose value exceeds the publisher's `max_request_size`, written by a
/// writer configured with a larger limit than the relay's (our own writers refuse such a
/// row at enqueue time when they share the relay's schema).
async fn insert_poison(db: &DatabaseConnection, tables: &OutboxTables, topic: &str) {
    let config = EnqueueConfig::from(
        OutboxSchema::builder()
            .bucket_count(8)
            .max_request_size(2 * POISON_SIZE)
            .build()
            .unwrap(),
    );
    let poison = (0..data::KEYS)
        .map(|i| data::message(topic, i, POISON_SIZE, &config))
        .find(|m| m.bucket == 0)
        .expect("some key maps to bucket 0");
    let txn = db.begin().await.unwrap();
    insert_rows(&txn, tables, &[poison]).await.unwrap();
    txn.commit().await.unwrap();
}
