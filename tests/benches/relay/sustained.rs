//! Section 8: sustained load. A writer commits one 1 KiB outbox row per transaction at a
//! steady 2,000 msg/s for five minutes while one relay (local notification) drains; per
//! minute: commit-to-ack p50 / p99 / max of the rows committed in that minute, and at its
//! end the messages table's size (heap and indexes), its live and dead rows and how often
//! autovacuum has processed it. Flat means the last minute looks like the first: the
//! latency does not creep up and the table does not grow while its row count stays small.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use outbox_core::Uuid;
use outbox_core::driver::Relay;
use outbox_seaorm::{Outbox, SeaOrmStore};
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use tokio::task::JoinSet;

use crate::ack::{Acks, Recording};
use crate::args::DbKind;
use crate::data;
use crate::env::{Env, VALUE_SIZE};
use crate::latency::{commit_one, percentile, ready};
use crate::report::{Report, ms};

const SECTION: &str = "8 sustained";
const RATE: u64 = 2_000;

pub async fn run(env: &Env, report: &mut Report) {
    // Full: five windows of a minute. Smoke: two of five seconds.
    let (windows, window) = env
        .args
        .pick((5u32, Duration::from_secs(60)), (2, Duration::from_secs(5)));
    let rate = env.args.rate.unwrap_or(RATE);
    println!(
        "\n== {SECTION}: writer at {rate} msg/s for {windows} x {window:?}, one relay draining"
    );
    let db = env.db().await;
    let tables = env.tables(&db).await;
    let topic = env.topic().await;
    let acks = Acks::with_instants();
    let schema = env.schema(&tables, 8);
    let store = SeaOrmStore::new(env.db().await, schema.clone()).unwrap();
    let publisher = Recording::new(env.publisher().await, acks.clone());
    let options = env.relay_options(&schema).build().unwrap();
    let outbox = Outbox::new(options.enqueue_config());
    let relay = Relay::spawn(store, publisher, options).unwrap();
    let outbox = outbox.with_notifier(relay.notifier());
    ready(&relay).await;

    let period = Duration::from_secs(1).div_f64(rate as f64);
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = JoinSet::new();
    // (message id, commit instant) of every committed row; a row counts in the window
    // its commit fell in.
    let mut committed: Vec<(Uuid, Instant)> = Vec::new();
    let mut samples: Vec<TableSample> = Vec::new();
    let started = Instant::now();
    let mut i: u64 = 0;
    for w in 0..windows {
        let end = started + window * (w + 1);
        while Instant::now() < end {
            tick.tick().await;
            let (db, outbox, topic) = (db.clone(), outbox.clone(), topic.clone());
            let key = data::key(i);
            let value = data::value(i, VALUE_SIZE);
            tasks.spawn(async move { commit_one(&db, &outbox, topic, key, value).await });
            i += 1;
            while let Some(done) = tasks.try_join_next() {
                committed.push(done.unwrap());
            }
        }
        samples.push(TableSample::take(env, &db, tables.messages()).await);
    }
    while let Some(done) = tasks.join_next().await {
        committed.push(done.unwrap());
    }
    let writing = started.elapsed();
    acks.wait_for(committed.len() as u64, Duration::from_secs(120))
        .await;
    relay.stop(Duration::from_secs(10)).await.unwrap();
    env.drop_tables(&db, &tables).await;

    let mut by_window: HashMap<u32, Vec<Duration>> = HashMap::new();
    for (id, at) in &committed {
        let acked = acks
            .instant(id)
            .expect("every committed row is acknowledged");
        let w = (at.saturating_duration_since(started).as_secs_f64() / window.as_secs_f64()) as u32;
        by_window
            .entry(w.min(windows - 1))
            .or_default()
            .push(acked.saturating_duration_since(*at));
    }
    report.line(
        SECTION,
        &format!(
            "writer: rows committed in {:.0} s (msgs/s)",
            writing.as_secs_f64()
        ),
        format!(
            "{} ({:.0})",
            committed.len(),
            committed.len() as f64 / writing.as_secs_f64()
        ),
    );
    report.set(SECTION, "rows", committed.len());
    report.set(
        SECTION,
        "achieved_rate",
        committed.len() as f64 / writing.as_secs_f64(),
    );
    let mut p99s = Vec::new();
    for (w, sample) in samples.iter().enumerate() {
        let w = w as u32;
        let mut lat = by_window.remove(&w).unwrap_or_default();
        lat.sort();
        let (p50, p99, max) = (
            percentile(&lat, 0.5),
            percentile(&lat, 0.99),
            percentile(&lat, 1.0),
        );
        p99s.push(p99);
        report.line(
            SECTION,
            &format!(
                "window {}: commit-to-ack p50 / p99 / max ({} rows)",
                w + 1,
                lat.len()
            ),
            format!("{} / {} / {}", ms(p50), ms(p99), ms(max)),
        );
        report.line(
            SECTION,
            &format!("window {} end: table", w + 1),
            sample.describe(),
        );
        report.set(SECTION, &format!("w{}_rows", w + 1), lat.len());
        report.set(
            SECTION,
            &format!("w{}_p50_ms", w + 1),
            p50.as_secs_f64() * 1e3,
        );
        report.set(
            SECTION,
            &format!("w{}_p99_ms", w + 1),
            p99.as_secs_f64() * 1e3,
        );
        report.set(
            SECTION,
            &format!("w{}_max_ms", w + 1),
            max.as_secs_f64() * 1e3,
        );
        for (name, value) in &sample.figures {
            report.set(SECTION, &format!("w{}_{name}", w + 1), *value);
        }
    }
    if env.args.quick || p99s.len() < 2 {
        return;
    }
    // Flat: the last window's p99 within twice the first's (and 10 ms of slack for a
    // first window that happened to be quiet); the table no bigger than twice its size
    // after the first window (plus 1 MiB: a few pages either way are not growth).
    let (first, last) = (p99s[0], p99s[p99s.len() - 1]);
    report.target(
        &format!("sustained {rate} msg/s: commit-to-ack p99, last window vs first"),
        "<= 2 x first + 10 ms",
        format!("{} vs {}", ms(last), ms(first)),
        Some(last <= first * 2 + Duration::from_millis(10)),
    );
    let size = |s: &TableSample| s.get("total_bytes");
    if let (Some(first), Some(last)) = (
        samples.first().and_then(size),
        samples.last().and_then(size),
    ) {
        report.target(
            &format!("sustained {rate} msg/s: table + index size, last window vs first"),
            "<= 2 x first + 1 MiB",
            format!("{} KiB vs {} KiB", last / 1024, first / 1024),
            Some(last <= first * 2 + (1 << 20)),
        );
    }
}

/// The messages table's size and row counts, as the database reports them.
#[derive(Debug)]
struct TableSample {
    figures: Vec<(&'static str, i64)>,
}

impl TableSample {
    async fn take(env: &Env, db: &DatabaseConnection, table: &str) -> TableSample {
        // Statistics counters are published by the backends with a delay; sizes are exact.
        let (sql, names): (String, &[&'static str]) = match env.kind() {
            DbKind::Postgres => (
                format!(
                    "SELECT pg_table_size('\"{table}\"')::bigint AS heap_bytes, \
                            pg_indexes_size('\"{table}\"')::bigint AS index_bytes, \
                            pg_total_relation_size('\"{table}\"')::bigint AS total_bytes, \
                            n_live_tup::bigint AS live_rows, n_dead_tup::bigint AS dead_rows, \
                            autovacuum_count::bigint AS autovacuums, \
                            (SELECT count(*) FROM \"{table}\")::bigint AS pending \
                       FROM pg_stat_user_tables WHERE relname = '{table}'"
                ),
                &[
                    "heap_bytes",
                    "index_bytes",
                    "total_bytes",
                    "live_rows",
                    "dead_rows",
                    "autovacuums",
                    "pending",
                ],
            ),
            DbKind::MariaDb => (
                format!(
                    "SELECT CAST(data_length AS SIGNED) AS heap_bytes, \
                            CAST(index_length AS SIGNED) AS index_bytes, \
                            CAST(data_length + index_length AS SIGNED) AS total_bytes, \
                            CAST(data_free AS SIGNED) AS free_bytes, \
                            (SELECT COUNT(*) FROM `{table}`) AS pending \
                       FROM information_schema.tables \
                      WHERE table_schema = DATABASE() AND table_name = '{table}'"
                ),
                &[
                    "heap_bytes",
                    "index_bytes",
                    "total_bytes",
                    "free_bytes",
                    "pending",
                ],
            ),
            DbKind::Sqlite => (
                format!(
                    "SELECT (SELECT page_count FROM pragma_page_count()) * \
                            (SELECT page_size FROM pragma_page_size()) AS total_bytes, \
                            (SELECT freelist_count FROM pragma_freelist_count()) * \
                            (SELECT page_size FROM pragma_page_size()) AS free_bytes, \
                            (SELECT COUNT(*) FROM \"{table}\") AS pending"
                ),
                &["total_bytes", "free_bytes", "pending"],
            ),
        };
        let row = db
            .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
            .await
            .unwrap_or_else(|e| panic!("sampling the table: {e}"));
        let figures = names
            .iter()
            .map(|name| {
                let value = row
                    .as_ref()
                    .and_then(|r| r.try_get::<i64>("", name).ok())
                    .unwrap_or(-1);
                (*name, value)
            })
            .collect();
        TableSample { figures }
    }

    fn get(&self, name: &str) -> Option<i64> {
        self.figures
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .filter(|v| *v >= 0)
    }

    fn describe(&self) -> String {
        self.figures
            .iter()
            .map(|(name, value)| match *name {
                n if n.ends_with("_bytes") => format!("{} {} KiB", &n[..n.len() - 6], value / 1024),
                n => format!("{n} {value}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
