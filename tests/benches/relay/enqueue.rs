//! Section 4: what the outbox costs the writer. A business transaction inserts one order
//! row; the variants add nothing, one outbox row or ten through `Outbox::enqueue`, or
//! the same one or ten rows through a hand-written multi-row `INSERT` into the same
//! table (a fresh UUID, the same key, value and topic, no validation, ids from the
//! column default): what the same write costs without the library. Four concurrent
//! writers, each committing transactions back to back; the variants take turns in short
//! rounds so that background noise hits them alike. No relay runs (the rows stay).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use outbox_core::{OutboxMessage, Uuid};
use outbox_seaorm::entity::message::Column as C;
use outbox_seaorm::{Outbox, SqlNames};
use outbox_tests::unique_name;
use sea_orm::prelude::DateTimeUtc;
use sea_orm::sea_query::InsertStatement;
use sea_orm::sea_query::{Alias, ColumnDef, Query, Table};
use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait};
use std::time::SystemTime;

use crate::data;
use crate::env::{Env, VALUE_SIZE};
use crate::report::{Report, int};

const SECTION: &str = "4 enqueue";
const WRITERS: usize = 4;
/// What a transaction writes besides its order row.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    /// Nothing.
    OrderOnly,
    /// This many rows through `Outbox::enqueue` / `enqueue_all`.
    Outbox(usize),
    /// This many rows through a hand-written multi-row INSERT.
    ByHand(usize),
}

const VARIANTS: [Variant; 5] = [
    Variant::OrderOnly,
    Variant::Outbox(1),
    Variant::Outbox(10),
    Variant::ByHand(1),
    Variant::ByHand(10),
];

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

    let mut done = [0u64; VARIANTS.len()];
    let mut time = [Duration::ZERO; VARIANTS.len()];
    for _ in 0..rounds {
        for (v, variant) in VARIANTS.iter().enumerate() {
            let (n, elapsed) = drive(&db, &outbox, &orders, *variant, round).await;
            done[v] += n;
            time[v] += elapsed;
        }
    }
    let tps: Vec<f64> = (0..VARIANTS.len())
        .map(|v| done[v] as f64 / time[v].as_secs_f64())
        .collect();
    for (v, variant) in VARIANTS.iter().enumerate() {
        let (label, key) = match variant {
            Variant::OrderOnly => (
                "order only (tx/s)".to_owned(),
                "tps_0_outbox_rows".to_owned(),
            ),
            Variant::Outbox(n) => (
                format!("order + {n} outbox row(s) through enqueue (tx/s)"),
                format!("tps_{n}_outbox_rows"),
            ),
            Variant::ByHand(n) => (
                format!("order + {n} row(s) through a hand-written INSERT (tx/s)"),
                format!("tps_{n}_handwritten_rows"),
            ),
        };
        report.line(SECTION, &label, int(tps[v]));
        report.set(SECTION, &key, tps[v]);
    }
    let [order_only, one, ten, hand_one, hand_ten] = [0, 1, 2, 3, 4].map(|v| tps[v]);
    let overhead_1 = 1.0 - one / order_only;
    let overhead_10 = 1.0 - ten / order_only;
    report.line(
        SECTION,
        "1 row: ratio to order only",
        format!(
            "{:.2} (overhead {:.0}%)",
            one / order_only,
            overhead_1 * 100.0
        ),
    );
    report.line(
        SECTION,
        "10 rows: ratio to order only",
        format!(
            "{:.2} (overhead {:.0}%)",
            ten / order_only,
            overhead_10 * 100.0
        ),
    );
    report.set(SECTION, "ratio_1_row", one / order_only);
    report.set(SECTION, "ratio_10_rows", ten / order_only);
    report.target(
        "enqueue overhead, one outbox row",
        "<= 15%",
        format!("{:.0}%", overhead_1 * 100.0),
        Some(overhead_1 <= 0.15),
    );
    let over_hand_1 = one / hand_one;
    let over_hand_10 = ten / hand_ten;
    report.line(
        SECTION,
        "enqueue / hand-written INSERT, 1 row; 10 rows (tx/s ratio)",
        format!("{over_hand_1:.2}; {over_hand_10:.2}"),
    );
    report.set(SECTION, "enqueue_over_handwritten_1_row", over_hand_1);
    report.set(SECTION, "enqueue_over_handwritten_10_rows", over_hand_10);
    report.target(
        "enqueue one row / hand-written INSERT of it",
        ">= 0.95",
        format!("{over_hand_1:.2}"),
        Some(over_hand_1 >= 0.95),
    );
    // The time the outbox rows add to a transaction, per variant.
    let added = |tps: f64| 1.0 / tps - 1.0 / order_only;
    let ten_over_one = added(ten) / added(one);
    let hand_ten_over_one = added(hand_ten) / added(hand_one);
    report.line(
        SECTION,
        "added time of 10 rows / of 1 row: enqueue; hand-written",
        format!("{ten_over_one:.2}; {hand_ten_over_one:.2}"),
    );
    report.set(SECTION, "added_10_over_1", ten_over_one);
    report.set(SECTION, "added_10_over_1_handwritten", hand_ten_over_one);
    report.target(
        "enqueue: added time of 10 rows / of 1 row",
        "<= 1.3",
        format!("{ten_over_one:.2}"),
        Some(ten_over_one <= 1.3),
    );
    let drop = Table::drop().table(Alias::new(&orders)).to_owned();
    db.execute(&drop).await.unwrap();
    env.drop_tables(&db, &tables).await;
    crate::bulk::run(env, report).await;
}

/// `WRITERS` tasks committing transactions with `rows` outbox rows each for `length`;
/// returns the transactions committed and the time taken.
async fn drive(
    db: &DatabaseConnection,
    outbox: &Outbox,
    orders: &str,
    variant: Variant,
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
                one(&db, &outbox, &orders, variant, i).await;
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

/// The business transaction: one order row, plus the variant's rows in the same commit.
async fn one(db: &DatabaseConnection, outbox: &Outbox, orders: &str, variant: Variant, i: u64) {
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
    match variant {
        Variant::OrderOnly => {
            let txn = db.begin().await.unwrap();
            txn.execute(&insert).await.unwrap();
            txn.commit().await.unwrap();
        }
        Variant::ByHand(rows) => {
            let txn = db.begin().await.unwrap();
            txn.execute(&insert).await.unwrap();
            txn.execute(&by_hand(outbox, i, rows)).await.unwrap();
            txn.commit().await.unwrap();
        }
        Variant::Outbox(rows) => {
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
    }
}

/// The hand-written insert of `rows` rows into the outbox table: what a service writes
/// without the library (a fresh UUID, bucket 0, the same topic, key and value bytes, the
/// current time, ids from the column default).
fn by_hand(outbox: &Outbox, i: u64, rows: usize) -> InsertStatement {
    let mut insert = Query::insert();
    insert.into_table(outbox.tables().messages_ref()).columns([
        C::MessageId,
        C::Bucket,
        C::Topic,
        C::Key,
        C::Value,
        C::CreatedAt,
    ]);
    let now: DateTimeUtc = SystemTime::now().into();
    for r in 0..rows as u64 {
        insert.values_panic([
            Uuid::now_v7().into(),
            0_i32.into(),
            "orders".into(),
            data::key(i + r).into_bytes().into(),
            data::value(i + r, VALUE_SIZE).into(),
            now.into(),
        ]);
    }
    insert
}
