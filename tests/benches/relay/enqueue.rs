//! Section 4: what the outbox costs the writer. A business transaction inserts one order
//! row; the variants add nothing, one outbox row, or ten. Four concurrent writers, each
//! committing transactions back to back; the variants take turns in short rounds so that
//! background noise hits them alike. No relay runs (the rows stay).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use outbox_core::{OutboxMessage, Uuid};
use outbox_seaorm::Outbox;
use outbox_tests::unique_name;
use sea_orm::sea_query::{Alias, ColumnDef, Query, Table};
use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait};

use crate::data;
use crate::env::{Env, VALUE_SIZE};
use crate::report::{Report, int};

const SECTION: &str = "4 enqueue";
const WRITERS: usize = 4;
/// Outbox rows per transaction of each variant.
const VARIANTS: [usize; 3] = [0, 1, 10];

pub async fn run(env: &Env, report: &mut Report) {
    let (rounds, round) = env
        .args
        .pick((3, Duration::from_secs(3)), (1, Duration::from_secs(1)));
    println!(
        "\n== {SECTION}: order insert with 0 / 1 / 10 outbox rows ({} B values), {WRITERS} writers, {rounds} rounds of {round:?} each",
        VALUE_SIZE
    );
    let db = env.db().await;
    let tables = env.tables(&db).await;
    let orders = unique_name("orders");
    let create = Table::create()
        .table(Alias::new(&orders))
        .col(
            ColumnDef::new(Alias::new("id"))
                .uuid()
                .not_null()
                .primary_key(),
        )
        .col(
            ColumnDef::new(Alias::new("customer"))
                .string_len(64)
                .not_null(),
        )
        .col(
            ColumnDef::new(Alias::new("amount_cents"))
                .big_integer()
                .not_null(),
        )
        .to_owned();
    db.execute(&create).await.unwrap();
    let outbox = Outbox::new(env.schema(&tables, 8));

    let mut done = [0u64; 3];
    let mut time = [Duration::ZERO; 3];
    for _ in 0..rounds {
        for (v, rows) in VARIANTS.iter().enumerate() {
            let (n, elapsed) = drive(&db, &outbox, &orders, *rows, round).await;
            done[v] += n;
            time[v] += elapsed;
        }
    }
    let tps: Vec<f64> = (0..3)
        .map(|v| done[v] as f64 / time[v].as_secs_f64())
        .collect();
    for (v, rows) in VARIANTS.iter().enumerate() {
        let label = match rows {
            0 => "order only (tx/s)".to_owned(),
            1 => "order + 1 outbox row (tx/s)".to_owned(),
            n => format!("order + {n} outbox rows (tx/s)"),
        };
        report.line(SECTION, &label, int(tps[v]));
        report.set(SECTION, &format!("tps_{rows}_outbox_rows"), tps[v]);
    }
    let overhead_1 = 1.0 - tps[1] / tps[0];
    let overhead_10 = 1.0 - tps[2] / tps[0];
    report.line(
        SECTION,
        "1 row: ratio to order only",
        format!(
            "{:.2} (overhead {:.0}%)",
            tps[1] / tps[0],
            overhead_1 * 100.0
        ),
    );
    report.line(
        SECTION,
        "10 rows: ratio to order only",
        format!(
            "{:.2} (overhead {:.0}%)",
            tps[2] / tps[0],
            overhead_10 * 100.0
        ),
    );
    report.set(SECTION, "ratio_1_row", tps[1] / tps[0]);
    report.set(SECTION, "ratio_10_rows", tps[2] / tps[0]);
    report.target(
        "enqueue overhead, one outbox row",
        "<= 15%",
        format!("{:.0}%", overhead_1 * 100.0),
        Some(overhead_1 <= 0.15),
    );
    let drop = Table::drop().table(Alias::new(&orders)).to_owned();
    db.execute(&drop).await.unwrap();
    env.drop_tables(&db, &tables).await;
}

/// `WRITERS` tasks committing transactions with `rows` outbox rows each for `length`;
/// returns the transactions committed and the time taken.
async fn drive(
    db: &DatabaseConnection,
    outbox: &Outbox,
    orders: &str,
    rows: usize,
    length: Duration,
) -> (u64, Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    let started = Instant::now();
    for w in 0..WRITERS {
        let (db, outbox, orders) = (db.clone(), outbox.clone(), orders.to_owned());
        let (stop, count) = (Arc::clone(&stop), Arc::clone(&count));
        tasks.push(tokio::spawn(async move {
            let mut i = w as u64 * 1_000_000_000;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                one(&db, &outbox, &orders, rows, i).await;
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(length).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    (count.load(Ordering::Relaxed), started.elapsed())
}

/// The business transaction: one order row, plus `rows` outbox rows in the same commit.
async fn one(db: &DatabaseConnection, outbox: &Outbox, orders: &str, rows: usize, i: u64) {
    let insert = Query::insert()
        .into_table(Alias::new(orders))
        .columns([
            Alias::new("id"),
            Alias::new("customer"),
            Alias::new("amount_cents"),
        ])
        .values_panic([
            Uuid::now_v7().into(),
            format!("customer-{}", i % 1000).into(),
            ((i % 97) as i64 * 100).into(),
        ])
        .to_owned();
    if rows == 0 {
        let txn = db.begin().await.unwrap();
        txn.execute(&insert).await.unwrap();
        txn.commit().await.unwrap();
        return;
    }
    let txn = outbox.begin(db).await.unwrap();
    txn.execute(&insert).await.unwrap();
    let messages = (0..rows as u64).map(|r| {
        OutboxMessage::builder("orders")
            .key(data::key(i + r))
            .value(data::value(i + r, VALUE_SIZE))
    });
    if rows == 1 {
        txn.enqueue(messages.into_iter().next().unwrap())
            .await
            .unwrap();
    } else {
        txn.enqueue_all(messages).await.unwrap();
    }
    txn.commit().await.unwrap();
}
