//! `cargo xtask bench`: the relay against a real database and broker.
//!
//! ```text
//! cargo xtask bench [--quick] [--database postgres|sqlite|mariadb] [--rows N] [--rate N]
//!                   [--only drain,naive,latency,poisoned,snapshot,enqueue,scaling,growth,slow-db,sustained,sqlite-demo]
//! ```
//!
//! xtask starts the services, builds the relay binary (section 5 runs it as separate
//! processes, path in `OUTBOX_BENCH_RELAY_BIN`) and the orders demo
//! (`OUTBOX_BENCH_DEMO_BIN`), and runs this program with `cargo bench --profile <p> -p
//! outbox-tests --bench relay -- <args>`: the optimized `bench-opt` profile for a full
//! run, the tests' `dev` profile with `--quick` (the CI smoke compiles nothing twice).
//!
//! Sections (one file each): 1 drain throughput (default options and one lane), its
//! ceilings, a hand-written concurrent relay on the same rows and where the drain's time
//! goes (database sessions, pool, CPU by program), 2 the hand-written baseline, 3 commit-to-ack latency at 1,000 and 5,000
//! msg/s, poisoned (one unpublishable row in bucket 0), snapshot (an old snapshot held
//! during a drain, PostgreSQL), 4 enqueue overhead and bulk writes (`enqueue_all` on a connection vs a plain COPY), 5 scaling and idle cost, 6 cost
//! growth with the backlog, 7 a database far away (every message to it delayed), 8 five
//! minutes of steady writes (latency and table size per minute), sqlite-demo (the orders demo's latency). Prints a table and writes every figure, the ratios and the
//! machine facts to `target/bench/latest.json`. No threshold fails the run: the targets
//! are reported, met or not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ack;
mod args;
mod bulk;
mod ceilings;
mod count_proxy;
mod data;
mod drain;
mod enqueue;
mod env;
mod growth;
mod handwritten;
mod latency;
mod naive;
mod poisoned;
mod processes;
mod producer_perf;
mod report;
mod scaling;
mod slow_db;
mod snapshot;
mod sqlite_demo;
mod stuck;
mod sustained;
mod timing;
mod waits;

use std::time::Instant;

use outbox_seaorm::OutboxTables;
use sea_orm::DatabaseConnection;

use crate::args::Args;
use crate::env::{Env, VALUE_SIZE};
use crate::report::{Report, int};

/// State shared between sections.
#[derive(Debug, Default)]
pub struct Shared {
    /// The pre-filled rows of sections 1, 2 and 5, copied (inside the database) into a
    /// fresh table for each run.
    source: Option<OutboxTables>,
    /// Section 1's relay rate, for section 2's ratio.
    pub relay_rate: Option<f64>,
}

impl Shared {
    pub async fn source(
        &mut self,
        env: &Env,
        db: &DatabaseConnection,
        report: &mut Report,
    ) -> OutboxTables {
        if let Some(tables) = &self.source {
            return tables.clone();
        }
        let n = env.args.rows;
        let tables = env.tables(db).await;
        let started = Instant::now();
        data::fill(
            db,
            &tables,
            "unused",
            0..n,
            VALUE_SIZE,
            &env.enqueue_config(8),
        )
        .await;
        let secs = started.elapsed().as_secs_f64();
        report.line(
            "0 setup",
            &format!("pre-fill {n} rows through insert_rows ({secs:.1} s, rows/s)"),
            int(n as f64 / secs),
        );
        report.set("0 setup", "prefill_rows_per_s", n as f64 / secs);
        self.source = Some(tables.clone());
        tables
    }
}

/// The cargo profile this program was built with, as xtask passed it
/// (`OUTBOX_BENCH_PROFILE`), else told by whether debug assertions are on.
fn profile() -> String {
    match std::env::var("OUTBOX_BENCH_PROFILE") {
        Ok(p) if p == "dev" => "dev profile (workspace crates opt-level 0, dependencies 1)".into(),
        Ok(p) if !p.is_empty() => format!("{p} profile (optimized)"),
        _ if cfg!(debug_assertions) => "a debug build".into(),
        _ => "an optimized build".into(),
    }
}

fn main() {
    let args = match Args::parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    // Silent unless asked: `RUST_LOG=outbox_core=debug` shows what the relays decide.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run(args));
}

async fn run(args: Args) {
    let started = Instant::now();
    let env = Env::new(args).await;
    let mut report = Report::default();
    let db = env.db().await;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let version = env.database_version(&db).await;
    let broker = std::env::var("OUTBOX_BENCH_BROKER_VERSION")
        .unwrap_or_else(|_| format!("unknown (external broker {})", env.brokers));
    let profile = profile();
    println!(
        "relay benchmark{}: {} ({version}), broker {} ({broker}), {cores} cores, {profile}",
        if env.args.quick { " (--quick)" } else { "" },
        env.kind().name(),
        env.brokers
    );
    report.fact("cores", cores);
    report.fact("database", env.kind().name());
    report.fact("database_version", version);
    report.fact("broker_version", broker);
    report.fact("brokers", env.brokers.clone());
    report.fact("quick", env.args.quick);
    report.fact("profile", profile);
    report.fact("os", std::env::consts::OS);
    report.fact(
        "unix_time",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    );

    let mut shared = Shared::default();
    if env.args.runs("drain") {
        drain::run(&env, &mut shared, &mut report).await;
    }
    if env.args.runs("naive") {
        naive::run(&env, &mut shared, &mut report).await;
    }
    if env.args.runs("latency") {
        latency::run(&env, &mut report).await;
    }
    if env.args.runs("poisoned") {
        poisoned::run(&env, &mut shared, &mut report).await;
    }
    if env.args.runs("snapshot") {
        snapshot::run(&env, &mut shared, &mut report).await;
    }
    if env.args.runs("enqueue") {
        enqueue::run(&env, &mut report).await;
    }
    if env.args.runs("scaling") {
        scaling::run(&env, &mut report).await;
    }
    if env.args.runs("growth") {
        growth::run(&env, &mut report).await;
    }
    if env.args.runs("slow-db") {
        slow_db::run(&env, &mut report).await;
    }
    if env.args.runs("sustained") {
        sustained::run(&env, &mut report).await;
    }
    if env.args.runs("sqlite-demo") {
        sqlite_demo::run(&env, &mut report).await;
    }
    if let Some(source) = shared.source.take() {
        env.drop_tables(&db, &source).await;
    }
    report.fact("bench_seconds", started.elapsed().as_secs_f64());
    report.print_table();
    report.write_json(&env.args.json).unwrap();
    println!(
        "\nwrote {} ({:.0} s)",
        env.args
            .json
            .canonicalize()
            .unwrap_or_else(|_| env.args.json.clone())
            .display(),
        started.elapsed().as_secs_f64()
    );
}
