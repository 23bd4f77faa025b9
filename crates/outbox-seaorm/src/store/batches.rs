//! Pending probe, batch reads and exact deletes of the messages table.

use outbox_core::{Misconfiguration, OutboxMessage, StoreError};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, DbErr, FromQueryResult, QueryResult, Statement,
};
use sea_query::{
    Alias, Expr, ExprTrait, Order, PostgresQueryBuilder, Query, SelectStatement, UnionType,
};

use super::cursor::ReadOutcome;
use super::db_error::store_error;
use crate::entity::message;
use crate::tables::{OutboxTables, SqlNames, quoted_messages_table};

/// Owned buckets probed per statement. SQLite caps a compound `SELECT` at 500 terms by
/// default; relays rarely own more than this.
const PROBE_BUCKETS_PER_QUERY: usize = 128;

/// Which owned buckets hold rows, and whether any row sits outside `0..bucket_count`, in
/// one statement (for up to [`PROBE_BUCKETS_PER_QUERY`] owned buckets).
///
/// The statement is a `UNION ALL` of one-row index seeks on `(bucket, id)`: one per owned
/// bucket (`WHERE bucket = b LIMIT 1`), plus `bucket < 0` and `bucket >= bucket_count`.
/// Its cost follows the number of owned buckets, not the backlog, unlike
/// `SELECT DISTINCT bucket`, which reads every pending row.
pub(crate) async fn buckets_with_pending(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    owned: &[i32],
    bucket_count: u32,
) -> Result<Vec<i32>, StoreError> {
    let count = i64::from(bucket_count);
    let mut owned: Vec<i32> = owned
        .iter()
        .copied()
        .filter(|b| *b >= 0 && i64::from(*b) < count)
        .collect();
    owned.sort_unstable();
    owned.dedup();

    let mut found = Vec::new();
    let mut chunks: Vec<&[i32]> = owned.chunks(PROBE_BUCKETS_PER_QUERY).collect();
    if chunks.is_empty() {
        chunks.push(&[]);
    }
    for (i, chunk) in chunks.into_iter().enumerate() {
        let mut seeks: Vec<Expr> = chunk
            .iter()
            .map(|b| Expr::col(message::Column::Bucket).eq(*b))
            .collect();
        if i == 0 {
            // The misconfiguration probe rides along with the first statement.
            seeks.push(Expr::col(message::Column::Bucket).lt(0));
            seeks.push(Expr::col(message::Column::Bucket).gte(count));
        }
        let Some(stmt) = union_of_seeks(tables, seeks) else {
            continue;
        };
        for row in db.query_all(&stmt).await.map_err(store_error)? {
            found.push(row.try_get::<i32>("", "bucket").map_err(store_error)?);
        }
    }
    if let Some(bucket) = found.iter().find(|b| **b < 0 || i64::from(**b) >= count) {
        return Err(Misconfiguration::BucketOutOfRange {
            bucket: *bucket,
            bucket_count,
        }
        .into());
    }
    found.sort_unstable();
    found.dedup();
    Ok(found)
}

/// `SELECT bucket FROM (SELECT bucket FROM m WHERE <seek> LIMIT 1) AS p0 UNION ALL ...`.
/// Each seek sits in a derived table because PostgreSQL and SQLite allow no `LIMIT` on
/// a bare `UNION` member.
fn union_of_seeks(tables: &OutboxTables, seeks: Vec<Expr>) -> Option<SelectStatement> {
    let mut parts = seeks.into_iter().enumerate().map(|(i, seek)| {
        let inner = Query::select()
            .column(message::Column::Bucket)
            .from(tables.messages_name())
            .and_where(seek)
            // The index's own order: with LIMIT 1 the planner walks the `(bucket, id)`
            // index from the seek's start even on a table it has no statistics for
            // (without it, PostgreSQL chose sequential scans for the range seeks).
            .order_by(message::Column::Bucket, Order::Asc)
            .order_by(message::Column::Id, Order::Asc)
            .limit(1)
            .to_owned();
        Query::select()
            .column(message::Column::Bucket)
            .from_subquery(inner, Alias::new(format!("p{i}")))
            .to_owned()
    });
    let mut first = parts.next()?;
    for part in parts {
        first.union(UnionType::All, part);
    }
    Some(first)
}

/// One bucket's rows above `start` (exclusive; `None` for the head), oldest first.
fn batch_select(
    tables: &OutboxTables,
    bucket: i32,
    start: Option<i64>,
    limit: usize,
) -> SelectStatement {
    use message::Column as C;
    let mut stmt = Query::select();
    stmt.columns(message::COLUMNS)
        .from(tables.messages_name())
        .and_where(Expr::col(C::Bucket).eq(bucket));
    // The keyset condition lets the (bucket, id) index scan start past the rows already
    // handled instead of walking their dead entries.
    if let Some(start) = start {
        stmt.and_where(Expr::col(C::Id).gt(start));
    }
    stmt.order_by(C::Id, Order::Asc)
        .limit(u64::try_from(limit).unwrap_or(u64::MAX))
        .to_owned()
}

fn to_messages(rows: &[QueryResult]) -> Result<Vec<OutboxMessage>, StoreError> {
    rows.iter()
        .map(|row| {
            message::Model::from_query_result(row, "")
                .map(OutboxMessage::from)
                .map_err(store_error)
        })
        .collect()
}

/// A plain read from `start` (MySQL/MariaDB: always the head; SQLite: the caller's cursor).
pub(crate) async fn next_batch(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    bucket: i32,
    start: Option<i64>,
    limit: usize,
) -> Result<Vec<OutboxMessage>, StoreError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let stmt = batch_select(tables, bucket, start, limit);
    let rows = db.query_all(&stmt).await.map_err(store_error)?;
    to_messages(&rows)
}

/// What a PostgreSQL read returned: its rows, what the cursor learns from it, and for a
/// checked read the visible ids in the checked range.
pub(crate) struct PostgresRead {
    pub batch: Vec<OutboxMessage>,
    pub outcome: ReadOutcome,
    /// The ids `(since, upto]` of the bucket the statement saw, ascending (checked reads).
    pub seen: Vec<i64>,
}

/// A PostgreSQL read from `start` that also returns its own snapshot's bounds, in one
/// statement: `pg_current_snapshot()` is the statement's active snapshot, the very one
/// the read sees rows through (see [`super::cursor`] for what it proves).
///
/// `WITH s AS (SELECT pg_current_snapshot() AS snap) SELECT b.*, xmin, next_xid FROM s
/// LEFT JOIN LATERAL (<batch>) b ON true`: one row with null columns when the batch is
/// empty. With `check = Some((since, upto))` the snapshot row also lists the bucket's
/// visible ids in `(since, upto]` (ids only: the rows themselves are not sent), through
/// the same snapshot.
///
/// `next_xid` is the next transaction id to be assigned, read after the snapshot was
/// taken: `xmax + age(xmax)`, since `age(xid)` counts from that counter (PostgreSQL's
/// `GetStableLatestTransactionId`: the statement's own xid if it has one, which a read
/// does not, else the next id to be assigned). Not the snapshot's `xmax`: that is one
/// past the newest *completed* transaction, and a transaction running with a newer xid
/// is below no `xmax` until something newer completes (see [`super::cursor`]). The read
/// must run as its own statement outside an explicit transaction, as here, so the value
/// is read for this statement and not cached from an earlier one.
pub(crate) async fn next_batch_postgres(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    bucket: i32,
    start: Option<i64>,
    check: Option<(i64, i64)>,
    limit: usize,
) -> Result<PostgresRead, StoreError> {
    let inner = batch_select(tables, bucket, start, limit.max(1));
    let (inner_sql, mut values) = inner.build(PostgresQueryBuilder);
    let seen_column = match check {
        Some((since, upto)) => {
            let n = values.0.len();
            values.0.push(bucket.into());
            values.0.push(since.into());
            values.0.push(upto.into());
            format!(
                ", (SELECT string_agg(c.id::text, ',' ORDER BY c.id) FROM {table} AS c \
                 WHERE c.bucket = ${} AND c.id > ${} AND c.id <= ${}) AS seen",
                n + 1,
                n + 2,
                n + 3,
                table = quoted_messages_table(tables),
            )
        }
        None => String::new(),
    };
    let sql = format!(
        "WITH s AS MATERIALIZED (SELECT pg_current_snapshot() AS snap{seen_column}) \
         SELECT b.*, pg_snapshot_xmin(s.snap)::text::bigint AS snap_xmin, \
         pg_snapshot_xmax(s.snap)::text::bigint \
         + age((pg_snapshot_xmax(s.snap)::text::bigint % 4294967296)::text::xid) \
         AS snap_next_xid{} \
         FROM s LEFT JOIN LATERAL ({inner_sql}) AS b ON true",
        if check.is_some() { ", s.seen" } else { "" },
    );
    let stmt = Statement::from_sql_and_values(DbBackend::Postgres, sql, values);
    let rows = db.query_all_raw(stmt).await.map_err(store_error)?;
    let first = rows.first().ok_or_else(|| {
        store_error(DbErr::Custom(
            "the batch read returned no snapshot row".into(),
        ))
    })?;
    let xmin: i64 = first.try_get("", "snap_xmin").map_err(store_error)?;
    let next_xid: i64 = first.try_get("", "snap_next_xid").map_err(store_error)?;
    let seen = if check.is_some() {
        let list: Option<String> = first.try_get("", "seen").map_err(store_error)?;
        parse_ids(list.as_deref().unwrap_or(""))?
    } else {
        Vec::new()
    };
    let empty = first
        .try_get::<Option<i64>>("", "id")
        .map_err(store_error)?
        .is_none();
    let batch = if empty || limit == 0 {
        Vec::new()
    } else {
        to_messages(&rows)?
    };
    let outcome = ReadOutcome {
        start,
        last_id: batch.last().map(|m| m.id),
        exhausted: batch.len() < limit,
        xmin,
        next_xid,
    };
    Ok(PostgresRead {
        batch,
        outcome,
        seen,
    })
}

/// `"1,2,3"` (from `string_agg`) as ids; empty for none.
fn parse_ids(list: &str) -> Result<Vec<i64>, StoreError> {
    list.split(',')
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.parse::<i64>().map_err(|e| {
                store_error(DbErr::Custom(format!(
                    "the checked read listed an id that is not a number ({part:?}): {e}"
                )))
            })
        })
        .collect()
}

/// Rows one delete statement names (two parameters each: 8,001 in all, far below every
/// backend's limit). A relay batch of up to this many rows is one statement, so one
/// round trip and one commit; with 250, as before, the default batch of 500 cost two
/// of each.
const DELETE_ROWS_PER_STATEMENT: usize = 4_000;

/// Deletes exactly the listed rows: `WHERE id IN (...) AND message_id IN (...) AND
/// bucket + 0 = ?`. Never a range: a lower id that committed after the batch was read is
/// still unpublished. The message-id condition also protects a row that reused a deleted
/// id.
///
/// Why `bucket + 0`: the rows are found by primary key, and the bucket is only a check.
/// With a plain `bucket = ?` PostgreSQL often planned a `BitmapAnd` of the primary key
/// and the `(bucket, id)` index, whose bitmap scan reads every entry of the bucket,
/// dead ones included: `cargo xtask bench --only drain --rows 100000` counted 2.2 M
/// entries of that index read for 100,000 rows published (the hand-written relay, which
/// deletes by id alone, 0.2 M). An expression on the column cannot use the index.
pub(crate) async fn delete_published(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    bucket: i32,
    published: &[OutboxMessage],
) -> Result<(), StoreError> {
    use message::Column as C;
    for chunk in published.chunks(DELETE_ROWS_PER_STATEMENT) {
        let stmt = Query::delete()
            .from_table(tables.messages_name())
            .and_where(Expr::col(C::Id).is_in(chunk.iter().map(|m| m.id)))
            .and_where(Expr::col(C::MessageId).is_in(chunk.iter().map(|m| m.message_id)))
            .and_where(Expr::col(C::Bucket).add(0).eq(bucket))
            .to_owned();
        // Rows already gone (deleted by a relay that took the bucket over) are fine.
        db.execute(&stmt).await.map_err(store_error)?;
    }
    Ok(())
}
