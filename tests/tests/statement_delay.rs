//! The statement-delay proxy against a real PostgreSQL: every execution of a statement
//! whose SQL carries the pattern is delayed, including the later executions that sqlx
//! sends as a bare `Bind` of its cached prepared statement; other statements on the same
//! connection are not.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use outbox_tests::statement_delay::StatementDelayProxy;
use outbox_tests::{host_port, postgres_url, require_tcp, unique_name};
use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection, Statement};

const LATENCY: Duration = Duration::from_millis(400);

/// Runs `sql` with one bound parameter (a prepared, cached statement) and returns how
/// long it took.
async fn timed(db: &DatabaseConnection, sql: &str) -> Duration {
    let started = Instant::now();
    db.query_one_raw(Statement::from_sql_and_values(
        db.get_database_backend(),
        sql,
        [7_i32.into()],
    ))
    .await
    .unwrap_or_else(|e| panic!("{sql}: {e}"))
    .expect("one row");
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delays_every_execution_of_matching_statements_only() {
    let url = postgres_url();
    let upstream = host_port(&url);
    require_tcp("PostgreSQL (OUTBOX_TEST_POSTGRES_URL)", &upstream);
    let marker = unique_name("slow");
    let proxy = StatementDelayProxy::start(&upstream, &marker, LATENCY)
        .await
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let via = format!(
        "{}{sep}sslmode=disable",
        url.replacen(&upstream, proxy.addr(), 1)
    );
    // One connection: the marked and the plain statements share it, as pooled lease
    // calls and fetches do.
    let mut options = ConnectOptions::new(via);
    options.max_connections(1).min_connections(1);
    let db = Database::connect(options).await.unwrap();
    let marked = format!("SELECT $1::int AS n /* {marker} */");
    let plain = "SELECT $1::int + 1 AS n";

    let connected = proxy.delayed();
    let mut slow = Vec::new();
    let mut fast = Vec::new();
    for _ in 0..3 {
        slow.push(timed(&db, &marked).await);
        fast.push(timed(&db, plain).await);
    }
    assert_eq!(
        proxy.delayed() - connected,
        3,
        "one delay per execution of the marked statement (slow {slow:?}, fast {fast:?})"
    );
    assert!(slow.iter().all(|d| *d >= LATENCY), "{slow:?}");
    assert!(fast.iter().all(|d| *d < LATENCY), "{fast:?}");

    proxy.set_latency(Duration::ZERO);
    assert!(timed(&db, &marked).await < LATENCY);
    db.close().await.unwrap();
}
