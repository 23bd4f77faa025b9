//! The parked table: moving rows in under the lease, reading the bucket's held keys, the
//! operator's list, show, requeue and discard, and the parked part of the backlog sample.
//!
//! Which rows move is decided by the core ([`park_decisions`], [`requeue_closure`]);
//! this module only executes it, each call in one transaction. A transaction that will
//! write starts with `BEGIN IMMEDIATE` on SQLite, so it never has to upgrade a read lock
//! halfway; on PostgreSQL and MySQL/MariaDB the park locks the bucket's lease row
//! (`SELECT ... FOR UPDATE`) before anything else, so no acquisition can hand the bucket
//! over while rows are being moved.

use outbox_core::park::{park_decisions, requeue_closure};
use outbox_core::{
    HoldKey, OutboxMessage, ParkOutcome, ParkReason, ParkRequest, ParkedFailure, ParkedRow,
    ParkedSelection, StoreError, Timestamp,
};
use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, FromQueryResult, Value};
use sea_query::{Alias, Expr, ExprTrait, Func, LockType, Order, Query, SelectStatement};

use super::db_error::store_error;
use crate::backend::Backend;
use crate::entity::{lease, message, parked};
use crate::tables::{OutboxTables, SqlNames};
use crate::write_txn::begin_writer;

/// Statements' `IN (...)` lists are cut at this many values, far below every backend's
/// parameter limit.
const MAX_IN_LIST: usize = 500;

/// Moves the rows `park_decisions` chooses, if the caller holds the bucket's lease.
pub(crate) async fn park_rows(
    db: &DatabaseConnection,
    backend: Backend,
    tables: &OutboxTables,
    request: &ParkRequest<'_>,
) -> Result<ParkOutcome, StoreError> {
    let txn = begin_writer(db).await.map_err(store_error)?;
    if !holds_lease(&txn, backend, tables, request).await? {
        txn.rollback().await.map_err(store_error)?;
        return Ok(ParkOutcome {
            lease_lost: true,
            ..ParkOutcome::default()
        });
    }
    let groups = parked_holds(&txn, backend, tables, request.bucket).await?;
    let decisions = park_decisions(&groups, request.rows);
    let mut outcome = ParkOutcome::default();
    let mut chosen = Vec::new();
    for (row, park) in request.rows.iter().zip(decisions) {
        if park {
            chosen.push(row);
        } else {
            outcome.released.push(row.message.id);
        }
    }
    let pending = pending_ids(&txn, tables, request.bucket, &chosen).await?;
    // Rows with the same reason move in one statement each.
    let mut by_reason: Vec<(&ParkReason, Vec<i64>)> = Vec::new();
    for row in chosen.iter().filter(|r| pending.contains(&r.message.id)) {
        match by_reason
            .iter_mut()
            .find(|(reason, _)| *reason == &row.reason)
        {
            Some((_, ids)) => ids.push(row.message.id),
            None => by_reason.push((&row.reason, vec![row.message.id])),
        }
        outcome.parked.push(row.message.id);
    }
    for (reason, ids) in &by_reason {
        for chunk in ids.chunks(MAX_IN_LIST) {
            let copy = copy_into_parked(tables, request, reason, chunk);
            txn.execute(&copy).await.map_err(store_error)?;
        }
    }
    for chunk in outcome.parked.chunks(MAX_IN_LIST) {
        let delete = Query::delete()
            .from_table(tables.messages_name())
            .and_where(Expr::col(message::Column::Bucket).eq(request.bucket))
            .and_where(Expr::col(message::Column::Id).is_in(chunk.iter().copied()))
            .to_owned();
        txn.execute(&delete).await.map_err(store_error)?;
    }
    txn.commit().await.map_err(store_error)?;
    Ok(outcome)
}

/// Whether `request.relay_id` holds the bucket's lease, unexpired at `request.now`;
/// locks the lease row for the rest of the transaction where the backend can.
async fn holds_lease(
    txn: &DatabaseTransaction,
    backend: Backend,
    tables: &OutboxTables,
    request: &ParkRequest<'_>,
) -> Result<bool, StoreError> {
    use lease::Column as C;
    let mut select = Query::select();
    select
        .columns([C::Owner, C::ExpiresAtMs])
        .from(tables.leases_name())
        .and_where(Expr::col(C::Bucket).eq(request.bucket));
    if backend != Backend::Sqlite {
        select.lock(LockType::Update);
    }
    let Some(row) = txn.query_one(&select).await.map_err(store_error)? else {
        return Ok(false);
    };
    let owner: Option<String> = row.try_get("", "owner").map_err(store_error)?;
    let expires_at_ms: i64 = row.try_get("", "expires_at_ms").map_err(store_error)?;
    Ok(owner.as_deref() == Some(request.relay_id) && expires_at_ms > request.now.as_millis())
}

/// Which of `rows` are still pending in `bucket`.
async fn pending_ids(
    txn: &DatabaseTransaction,
    tables: &OutboxTables,
    bucket: i32,
    rows: &[&outbox_core::ParkRow],
) -> Result<Vec<i64>, StoreError> {
    let mut found = Vec::new();
    for chunk in rows.chunks(MAX_IN_LIST) {
        let select = Query::select()
            .column(message::Column::Id)
            .from(tables.messages_name())
            .and_where(Expr::col(message::Column::Bucket).eq(bucket))
            .and_where(Expr::col(message::Column::Id).is_in(chunk.iter().map(|r| r.message.id)))
            .to_owned();
        for row in txn.query_all(&select).await.map_err(store_error)? {
            found.push(row.try_get::<i64>("", "id").map_err(store_error)?);
        }
    }
    Ok(found)
}

/// `INSERT INTO parked (...) SELECT <message columns>, <reason> FROM messages WHERE ...`:
/// the stored row is copied as it is, byte for byte.
fn copy_into_parked(
    tables: &OutboxTables,
    request: &ParkRequest<'_>,
    reason: &ParkReason,
    ids: &[i64],
) -> sea_query::InsertStatement {
    let (error, attempts, first, last, held_behind) = match reason {
        ParkReason::Failed(f) => (
            Some(f.error.clone()),
            i32::try_from(f.attempts).unwrap_or(i32::MAX),
            Some(f.first_failed_at.as_millis()),
            Some(f.last_failed_at.as_millis()),
            None,
        ),
        ParkReason::HeldBehind { blocking_id } => (None, 0, None, None, Some(*blocking_id)),
    };
    let source = Query::select()
        .columns(message::COLUMNS)
        .expr(Expr::val(Value::String(error)))
        .expr(Expr::val(attempts))
        .expr(Expr::val(Value::BigInt(first)))
        .expr(Expr::val(Value::BigInt(last)))
        .expr(Expr::val(Value::BigInt(held_behind)))
        .expr(Expr::val(request.now.as_millis()))
        .from(tables.messages_name())
        .and_where(Expr::col(message::Column::Bucket).eq(request.bucket))
        .and_where(Expr::col(message::Column::Id).is_in(ids.iter().copied()))
        .to_owned();
    let mut insert = Query::insert();
    insert
        .into_table(tables.parked_name())
        .columns(parked::COLUMNS);
    // The column lists are fixed and equally long: the statement cannot be malformed.
    insert
        .select_from(source)
        .map(|i| i.to_owned())
        .unwrap_or_else(|_| insert.to_owned())
}

/// The bucket's parked rows grouped by hold key, each with its lowest id, in one query.
/// MySQL/MariaDB compare only a prefix of a blob when grouping, so the key's SHA-256
/// joins the grouping there: long keys with a common prefix stay apart.
pub(crate) async fn parked_holds<C: ConnectionTrait>(
    conn: &C,
    backend: Backend,
    tables: &OutboxTables,
    bucket: i32,
) -> Result<Vec<(Option<HoldKey>, i64)>, StoreError> {
    use parked::Column as C;
    let mut select = Query::select();
    select
        .columns([C::Topic, C::Key, C::Partition])
        .expr_as(Func::min(Expr::col(C::Id)), Alias::new("lowest"))
        .from(tables.parked_name())
        .and_where(Expr::col(C::Bucket).eq(bucket))
        .group_by_columns([C::Topic, C::Key, C::Partition]);
    if backend == Backend::MySql {
        select.add_group_by([Expr::cust("SHA2(`key`, 256)")]);
    }
    // Rows pinned to one partition hold it whatever their keys: their groups merge here.
    let mut groups: std::collections::BTreeMap<Option<HoldKey>, i64> = Default::default();
    for row in conn.query_all(&select).await.map_err(store_error)? {
        let topic: String = row.try_get("", "topic").map_err(store_error)?;
        let key: Option<Vec<u8>> = row.try_get("", "key").map_err(store_error)?;
        let partition: Option<i32> = row.try_get("", "partition").map_err(store_error)?;
        let lowest: i64 = row.try_get("", "lowest").map_err(store_error)?;
        let hold = HoldKey::from_parts(&topic, key.as_deref(), partition);
        groups
            .entry(hold)
            .and_modify(|l| *l = Ord::min(*l, lowest))
            .or_insert(lowest);
    }
    Ok(groups.into_iter().collect())
}

/// Parked rows and when the oldest was parked, for the backlog sample.
pub(crate) async fn parked_sample(
    db: &DatabaseConnection,
    tables: &OutboxTables,
) -> Result<(u64, Option<Timestamp>), StoreError> {
    let stmt = Query::select()
        .expr_as(Func::count(Expr::col(sea_query::Asterisk)), "parked")
        .expr_as(
            Func::min(Expr::col(parked::Column::ParkedAtMs)),
            "oldest_parked",
        )
        .from(tables.parked_name())
        .to_owned();
    let row = db
        .query_one(&stmt)
        .await
        .map_err(store_error)?
        .ok_or_else(|| StoreError::unavailable("the parked aggregate returned no row"))?;
    let count: i64 = row.try_get("", "parked").map_err(store_error)?;
    let oldest: Option<i64> = row.try_get("", "oldest_parked").map_err(store_error)?;
    Ok((
        u64::try_from(count).unwrap_or_default(),
        oldest.map(Timestamp::from_millis),
    ))
}

fn to_parked_row(model: parked::Model) -> ParkedRow {
    let parked_at = Timestamp::from_millis(model.parked_at_ms);
    let reason = match model.held_behind {
        Some(blocking_id) => ParkReason::HeldBehind { blocking_id },
        None => ParkReason::Failed(ParkedFailure {
            error: model.error.clone().unwrap_or_default(),
            attempts: u32::try_from(model.attempts).unwrap_or_default(),
            first_failed_at: model
                .first_failed_at_ms
                .map_or(parked_at, Timestamp::from_millis),
            last_failed_at: model
                .last_failed_at_ms
                .map_or(parked_at, Timestamp::from_millis),
        }),
    };
    let message = OutboxMessage {
        id: model.id,
        message_id: model.message_id,
        bucket: model.bucket,
        topic: model.topic,
        key: model.key,
        value: model.value,
        headers: model.headers,
        partition: model.partition,
        created_at: Timestamp::from_millis(model.created_at.timestamp_millis()),
        store_ref: None,
    };
    ParkedRow {
        message,
        reason,
        parked_at,
    }
}

fn select_parked(tables: &OutboxTables) -> SelectStatement {
    Query::select()
        .columns(parked::COLUMNS)
        .from(tables.parked_name())
        .order_by(parked::Column::Id, Order::Asc)
        .to_owned()
}

async fn read_parked<C: ConnectionTrait>(
    conn: &C,
    select: &SelectStatement,
) -> Result<Vec<ParkedRow>, StoreError> {
    conn.query_all(select)
        .await
        .map_err(store_error)?
        .iter()
        .map(|row| {
            parked::Model::from_query_result(row, "")
                .map(to_parked_row)
                .map_err(store_error)
        })
        .collect()
}

/// Up to `limit` parked rows, ascending by id.
pub(crate) async fn list_parked(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    limit: usize,
) -> Result<Vec<ParkedRow>, StoreError> {
    let select = select_parked(tables)
        .limit(u64::try_from(limit).unwrap_or(u64::MAX))
        .to_owned();
    read_parked(db, &select).await
}

/// The parked row `id`.
pub(crate) async fn show_parked(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    id: i64,
) -> Result<Option<ParkedRow>, StoreError> {
    let select = select_parked(tables)
        .and_where(Expr::col(parked::Column::Id).eq(id))
        .to_owned();
    Ok(read_parked(db, &select).await?.into_iter().next())
}

/// The parked rows a selection may involve: the selected ones and, for one id, the
/// lower rows of its bucket (among which [`requeue_closure`] finds its key's).
async fn candidates(
    txn: &DatabaseTransaction,
    tables: &OutboxTables,
    selection: &ParkedSelection,
) -> Result<Vec<ParkedRow>, StoreError> {
    use parked::Column as C;
    let mut select = select_parked(tables);
    match selection {
        ParkedSelection::Key(key) => {
            select
                .and_where(Expr::col(C::Key).eq(Value::Bytes(Some(key.clone()))))
                .and_where(Expr::col(C::Partition).is_null());
        }
        ParkedSelection::Id(id) => {
            let bucket = Query::select()
                .column(C::Bucket)
                .from(tables.parked_name())
                .and_where(Expr::col(C::Id).eq(*id))
                .to_owned();
            let Some(row) = txn.query_one(&bucket).await.map_err(store_error)? else {
                return Ok(Vec::new());
            };
            let bucket: i32 = row.try_get("", "bucket").map_err(store_error)?;
            select
                .and_where(Expr::col(C::Bucket).eq(bucket))
                .and_where(Expr::col(C::Id).lte(*id));
        }
        // `All`, and anything a later version adds: read every row, `selects` filters.
        _ => {}
    }
    read_parked(txn, &select).await
}

/// Moves the rows of [`requeue_closure`] back into the messages table under their
/// original ids, in one transaction.
pub(crate) async fn requeue_parked(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    selection: &ParkedSelection,
) -> Result<Vec<i64>, StoreError> {
    let txn = begin_writer(db).await.map_err(store_error)?;
    let rows = candidates(&txn, tables, selection).await?;
    let ids = requeue_closure(&rows, selection);
    for chunk in ids.chunks(MAX_IN_LIST) {
        let source = Query::select()
            .columns(parked::MESSAGE_COLUMNS)
            .from(tables.parked_name())
            .and_where(Expr::col(parked::Column::Id).is_in(chunk.iter().copied()))
            .to_owned();
        let mut insert = Query::insert();
        insert
            .into_table(tables.messages_name())
            .columns(message::COLUMNS);
        let insert = insert.select_from(source).map_err(|e| {
            StoreError::unavailable(format!("cannot build the requeue statement: {e}"))
        })?;
        txn.execute(&insert.to_owned()).await.map_err(store_error)?;
        delete_parked(&txn, tables, chunk).await?;
    }
    txn.commit().await.map_err(store_error)?;
    Ok(ids)
}

/// Deletes the selected parked rows, in one transaction.
pub(crate) async fn discard_parked(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    selection: &ParkedSelection,
) -> Result<Vec<i64>, StoreError> {
    let txn = begin_writer(db).await.map_err(store_error)?;
    let rows = candidates(&txn, tables, selection).await?;
    let ids: Vec<i64> = rows
        .iter()
        .filter(|r| selection.selects(&r.message))
        .map(|r| r.message.id)
        .collect();
    for chunk in ids.chunks(MAX_IN_LIST) {
        delete_parked(&txn, tables, chunk).await?;
    }
    txn.commit().await.map_err(store_error)?;
    Ok(ids)
}

async fn delete_parked(
    txn: &DatabaseTransaction,
    tables: &OutboxTables,
    ids: &[i64],
) -> Result<(), StoreError> {
    let delete = Query::delete()
        .from_table(tables.parked_name())
        .and_where(Expr::col(parked::Column::Id).is_in(ids.iter().copied()))
        .to_owned();
    txn.execute(&delete).await.map_err(store_error)?;
    Ok(())
}
