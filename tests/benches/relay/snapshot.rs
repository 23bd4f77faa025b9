//! Section "snapshot" (PostgreSQL only): a transaction elsewhere holds an old snapshot
//! open (`REPEATABLE READ` plus one query: it pins the xmin horizon), so the rows the
//! relay deletes cannot be pruned and stay in the index as dead entries. Does the
//! per-batch fetch cost grow? The same rows are drained twice, without and with the
//! holder; the [`Timed`](crate::timing::Timed) store measures every fetch.

use outbox_seaorm::OutboxTables;
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, IsolationLevel, Statement,
    TransactionTrait,
};

use crate::args::DbKind;
use crate::drain::{breakdown, relay_drain};
use crate::env::Env;
use crate::report::{Report, int, ms};
use crate::timing::Timings;
use crate::{Shared, data};

const SECTION: &str = "snapshot";
/// The drain size.
const ROWS: u64 = 100_000;

pub async fn run(env: &Env, shared: &mut Shared, report: &mut Report) {
    if env.kind() != DbKind::Postgres {
        println!(
            "\n== {SECTION}: PostgreSQL only, skipped on {}",
            env.kind().name()
        );
        report.target(
            "fetch per batch with an old snapshot held / without",
            "<= 2",
            format!("(PostgreSQL only; ran on {})", env.kind().name()),
            None,
        );
        return;
    }
    let db = env.db().await;
    let source = shared.source(env, &db, report).await;
    let n = ROWS.min(env.args.rows);
    println!(
        "\n== {SECTION}: {n}-row drain, without and with a REPEATABLE READ transaction holding its snapshot"
    );
    let clean = drain(env, &db, &source, n, None).await;
    let holder = env.db_single().await;
    let held = hold_snapshot(&holder).await;
    let pinned = drain(env, &db, &source, n, Some(&held)).await;
    held.rollback().await.unwrap();

    let fetch_mean = |t: &Timings| {
        t.summary()
            .into_iter()
            .find(|(op, ..)| op == "fetch")
            .map(|(_, _, mean, _, _)| mean)
            .unwrap_or_default()
    };
    let (a, b) = (fetch_mean(&clean.1), fetch_mean(&pinned.1));
    let ratio = b.as_secs_f64() / a.as_secs_f64().max(1e-9);
    report.line(
        SECTION,
        "relay drain without / with the snapshot held (msgs/s)",
        format!("{} / {}", int(n as f64 / clean.0), int(n as f64 / pinned.0)),
    );
    report.line(
        SECTION,
        "mean fetch per batch without / with the snapshot held",
        format!("{} / {}", ms(a), ms(b)),
    );
    report.line(SECTION, "fetch with / without", format!("{ratio:.2}"));
    breakdown(report, SECTION, "clean", &clean.1);
    breakdown(report, SECTION, "held", &pinned.1);
    report.set(SECTION, "rows", n);
    report.set(SECTION, "clean_fetch_mean_ms", a.as_secs_f64() * 1e3);
    report.set(SECTION, "held_fetch_mean_ms", b.as_secs_f64() * 1e3);
    report.set(SECTION, "held_over_clean_fetch", ratio);
    report.target(
        "fetch per batch with an old snapshot held / without",
        "<= 2",
        format!("{ratio:.2} ({} vs {})", ms(b), ms(a)),
        Some(ratio <= 2.0),
    );
}

/// Opens the snapshot-holding transaction on `db` (a connection of its own).
async fn hold_snapshot(db: &DatabaseConnection) -> DatabaseTransaction {
    let txn = db
        .begin_with_config(Some(IsolationLevel::RepeatableRead), None)
        .await
        .unwrap();
    // The snapshot is taken by the first query, not by BEGIN.
    txn.query_one_raw(Statement::from_string(
        txn.get_database_backend(),
        "SELECT 1 AS one",
    ))
    .await
    .unwrap();
    txn
}

/// Drains the first `n` shared rows with one relay; seconds taken and the timings. With
/// `held`, checks afterwards that the transaction still pins the horizon.
async fn drain(
    env: &Env,
    db: &DatabaseConnection,
    source: &OutboxTables,
    n: u64,
    held: Option<&DatabaseTransaction>,
) -> (f64, Timings) {
    let tables = env.tables(db).await;
    let topic = env.topic().await;
    data::copy(db, source, &tables, &topic, Some(n)).await;
    let timings = Timings::default();
    let elapsed = relay_drain(env, db, &tables, n, 8, None, &timings, None)
        .await
        .elapsed;
    if let Some(txn) = held {
        let row = txn
            .query_one_raw(Statement::from_string(
                txn.get_database_backend(),
                "SELECT backend_xmin::text AS xmin FROM pg_stat_activity WHERE pid = pg_backend_pid()",
            ))
            .await
            .unwrap()
            .unwrap();
        let xmin: Option<String> = row.try_get("", "xmin").unwrap();
        assert!(xmin.is_some(), "the holder's snapshot must still be open");
    }
    env.drop_tables(db, &tables).await;
    (elapsed.as_secs_f64(), timings)
}
