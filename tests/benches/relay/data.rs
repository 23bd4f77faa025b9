//! The benchmark's records (keys spread over 10,000 ids, fixed-size values) and bulk
//! table operations: fill, copy, count.

use outbox_core::{EnqueueConfig, OutboxMessage};
use outbox_seaorm::entity::message::{Column as C, INSERTED_COLUMNS};
use outbox_seaorm::insert_rows;
use outbox_seaorm::{OutboxTables, SqlNames};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Order, Query, TableRef};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, TransactionTrait};

/// Distinct keys.
pub const KEYS: u64 = 10_000;
/// Rows per transaction when filling.
const FILL_CHUNK: u64 = 2_000;

/// The key of record `i`: one of [`KEYS`] ids, scattered.
pub fn key(i: u64) -> String {
    format!("id-{:05}", i.wrapping_mul(2_654_435_761) % KEYS)
}

/// `size` bytes that differ per record (so nothing downstream can dedupe them).
pub fn value(i: u64, size: usize) -> Vec<u8> {
    let seed = i.to_le_bytes();
    (0..size).map(|j| seed[j % 8] ^ (j as u8)).collect()
}

pub fn message(topic: &str, i: u64, size: usize, config: &EnqueueConfig) -> OutboxMessage {
    OutboxMessage::builder(topic)
        .key(key(i))
        .value(value(i, size))
        .build(config)
        .unwrap()
}

/// Inserts records `from..to` through the library's multi-row insert, in transactions of
/// [`FILL_CHUNK`] rows.
pub async fn fill(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    topic: &str,
    range: std::ops::Range<u64>,
    size: usize,
    config: &EnqueueConfig,
) {
    let mut start = range.start;
    while start < range.end {
        let end = Ord::min(start + FILL_CHUNK, range.end);
        let rows: Vec<OutboxMessage> = (start..end)
            .map(|i| message(topic, i, size, config))
            .collect();
        let txn = db.begin().await.unwrap();
        insert_rows(&txn, tables, &rows).await.unwrap();
        txn.commit().await.unwrap();
        start = end;
    }
}

/// Copies the first `limit` rows of `from` (all when `None`) into `to`, in id order,
/// re-addressed to `topic`: one `INSERT ... SELECT`, entirely inside the database.
pub async fn copy(
    db: &DatabaseConnection,
    from: &OutboxTables,
    to: &OutboxTables,
    topic: &str,
    limit: Option<u64>,
) {
    copy_buckets(db, from, to, topic, limit, None).await;
}

/// As [`copy`], only the rows of `buckets` when given.
pub async fn copy_buckets(
    db: &DatabaseConnection,
    from: &OutboxTables,
    to: &OutboxTables,
    topic: &str,
    limit: Option<u64>,
    buckets: Option<&[i32]>,
) {
    let mut select = Query::select();
    select
        .columns([C::MessageId, C::Bucket])
        .expr(Expr::val(topic))
        .columns([C::Key, C::Value, C::Headers, C::Partition, C::CreatedAt])
        .from(from.messages_ref())
        .order_by(C::Id, Order::Asc);
    if let Some(buckets) = buckets {
        select.and_where(Expr::col(C::Bucket).is_in(buckets.iter().copied()));
    }
    if let Some(limit) = limit {
        select.limit(limit);
    }
    // Every timed run starts in a fresh checkpoint cycle: a checkpoint that the previous
    // run's writes triggered would otherwise fall inside this one and make its deletes
    // log a full-page image per page (measured: 143 MB of WAL for one drain, 11 MB for
    // the next).
    if db.get_database_backend() == DbBackend::Postgres {
        db.execute_unprepared("CHECKPOINT").await.unwrap();
    }
    let insert = Query::insert()
        .into_table(to.messages_ref())
        .columns(INSERTED_COLUMNS)
        .select_from(select)
        .unwrap()
        .to_owned();
    // One session copies, analyzes and then reports its statistics at once (they are
    // otherwise sent up to a second later, into the counters of the run that follows).
    let txn = db.begin().await.unwrap();
    txn.execute(&insert).await.unwrap();
    // Statistics, as autovacuum gathers them within a minute of a table's first 50
    // writes: on a table that was never analyzed PostgreSQL guesses 286 of 100,000 rows
    // for a cursor read (`bucket = $1 AND id > $2`), below its LIMIT, and plans a bitmap
    // scan and a sort of every row of the bucket past the cursor: 8,400 buffers per
    // read of 1,000 rows instead of about 1,000 (auto_explain, `--only drain --rows
    // 100000`). A bench that drains seconds after the copy would measure that guess.
    if db.get_database_backend() == DbBackend::Postgres {
        let table = match to.schema() {
            Some(schema) => format!("\"{schema}\".\"{}\"", to.messages()),
            None => format!("\"{}\"", to.messages()),
        };
        txn.execute_unprepared(&format!("ANALYZE {table}"))
            .await
            .unwrap();
        txn.execute_unprepared("SELECT pg_stat_force_next_flush()")
            .await
            .unwrap();
    }
    txn.commit().await.unwrap();
}

pub async fn count(db: &impl ConnectionTrait, tables: &OutboxTables) -> u64 {
    let stmt = Query::select()
        .expr_as(Expr::cust("COUNT(*)"), Alias::new("n"))
        .from(tables.messages_ref())
        .to_owned();
    let row = db.query_one(&stmt).await.unwrap().unwrap();
    u64::try_from(row.try_get::<i64>("", "n").unwrap()).unwrap()
}

/// Rows left in `buckets`.
pub async fn count_in(db: &impl ConnectionTrait, tables: &OutboxTables, buckets: &[i32]) -> u64 {
    let stmt = Query::select()
        .expr_as(Expr::cust("COUNT(*)"), Alias::new("n"))
        .from(tables.messages_ref())
        .and_where(Expr::col(C::Bucket).is_in(buckets.iter().copied()))
        .to_owned();
    let row = db.query_one(&stmt).await.unwrap().unwrap();
    u64::try_from(row.try_get::<i64>("", "n").unwrap()).unwrap()
}

/// Rows in the parked table of `tables`.
pub async fn count_parked(db: &impl ConnectionTrait, tables: &OutboxTables) -> u64 {
    let stmt = Query::select()
        .expr_as(Expr::cust("COUNT(*)"), Alias::new("n"))
        .from(TableRef::Table(tables.parked_name(), None))
        .to_owned();
    let row = db.query_one(&stmt).await.unwrap().unwrap();
    u64::try_from(row.try_get::<i64>("", "n").unwrap()).unwrap()
}

pub async fn is_empty(db: &impl ConnectionTrait, tables: &OutboxTables) -> bool {
    let stmt = Query::select()
        .column(C::Id)
        .from(tables.messages_ref())
        .limit(1)
        .to_owned();
    db.query_one(&stmt).await.unwrap().is_none()
}
