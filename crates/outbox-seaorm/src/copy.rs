//! PostgreSQL bulk writes through `COPY ... FROM STDIN (FORMAT binary)`.
//!
//! A multi-row `INSERT` makes the server parse and plan a statement per 100 rows and
//! convert every bound value; a binary COPY streams the rows in the column types'
//! own wire form and the server only stores them. [`Outbox::enqueue_all`] takes this
//! path for more rows than one insert statement holds (over 100), given a plain [`DatabaseConnection`] on PostgreSQL: it needs a
//! connection of its own (sea-orm exposes the pool, not the connection under a
//! transaction), so rows enqueued inside the caller's transaction keep the multi-row
//! insert.
//!
//! The rows are the ones the writer already built and checked: the same checks as a
//! single enqueue ran before this module is reached, and the creation time is checked
//! here with the same function and error as the insert's.
//!
//! [`Outbox::enqueue_all`]: crate::Outbox::enqueue_all
//! [`DatabaseConnection`]: sea_orm::DatabaseConnection

use outbox_core::OutboxMessage;
use sea_orm::Iden;

use crate::entity::message::{self, timestamp_to_datetime};
use crate::error::EnqueueError;
use crate::tables::{OutboxTables, quoted_messages_table};

/// The signature, flags and header-extension length that open a binary COPY stream.
const SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";
/// Fields per row: the columns after `id` ([`message::INSERTED_COLUMNS`]), which
/// [`encode_rows`] writes in that order.
const FIELDS: i16 = 8;
/// Milliseconds from the Unix epoch to PostgreSQL's (2000-01-01T00:00:00Z).
const POSTGRES_EPOCH_MS: i64 = 946_684_800_000;

/// `COPY <messages> (message_id, ..., created_at) FROM STDIN (FORMAT binary)`; `id`
/// comes from the column's default, row by row in stream order.
pub(crate) fn copy_statement(tables: &OutboxTables) -> String {
    let columns: Vec<String> = message::INSERTED_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .collect();
    format!(
        "COPY {} ({}) FROM STDIN (FORMAT binary)",
        quoted_messages_table(tables),
        columns.join(", ")
    )
}

/// The binary COPY stream of `rows`: header, one tuple per row, trailer. Fails, before
/// anything is sent, on a creation time outside what the insert path accepts.
pub(crate) fn encode_rows(rows: &[OutboxMessage]) -> Result<Vec<u8>, EnqueueError> {
    let payload: usize = rows
        .iter()
        .map(|m| {
            m.topic.len()
                + m.key.as_ref().map_or(0, Vec::len)
                + m.value.as_ref().map_or(0, Vec::len)
                + m.headers.as_ref().map_or(0, Vec::len)
        })
        .sum();
    let mut out = Vec::with_capacity(SIGNATURE.len() + 10 + rows.len() * 80 + payload);
    out.extend_from_slice(SIGNATURE);
    out.extend_from_slice(&0i32.to_be_bytes()); // flags: no OIDs
    out.extend_from_slice(&0i32.to_be_bytes()); // no header extension
    for (index, m) in rows.iter().enumerate() {
        let created_at_us = postgres_micros(m, index)?;
        out.extend_from_slice(&FIELDS.to_be_bytes());
        field(&mut out, Some(m.message_id.as_bytes()), index)?;
        field(&mut out, Some(&m.bucket.to_be_bytes()), index)?;
        field(&mut out, Some(m.topic.as_bytes()), index)?;
        field(&mut out, m.key.as_deref(), index)?;
        field(&mut out, m.value.as_deref(), index)?;
        field(&mut out, m.headers.as_deref(), index)?;
        let partition = m.partition.map(i32::to_be_bytes);
        field(&mut out, partition.as_ref().map(<[u8; 4]>::as_slice), index)?;
        field(&mut out, Some(&created_at_us.to_be_bytes()), index)?;
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    Ok(out)
}

/// One field: its length (-1 for NULL) and bytes. A field over 2 GiB cannot be framed
/// (nor stored: PostgreSQL's limit is 1 GiB); the record-size check refuses far smaller.
fn field(out: &mut Vec<u8>, bytes: Option<&[u8]>, index: usize) -> Result<(), EnqueueError> {
    match bytes {
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(bytes) => {
            let len = i32::try_from(bytes.len()).map_err(|_| {
                EnqueueError::Database(sea_orm::DbErr::Custom(format!(
                    "outbox message #{index}: a field of {} bytes is too large to store",
                    bytes.len()
                )))
            })?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(bytes);
        }
    }
    Ok(())
}

/// `timestamptz` on the wire: microseconds since 2000-01-01 UTC. The range is the one
/// the insert path accepts (checked by the same function, with the same error).
fn postgres_micros(m: &OutboxMessage, index: usize) -> Result<i64, EnqueueError> {
    let out_of_range = || EnqueueError::CreatedAtOutOfRange {
        index,
        created_at: m.created_at,
    };
    timestamp_to_datetime(m.created_at).ok_or_else(out_of_range)?;
    m.created_at
        .as_millis()
        .checked_sub(POSTGRES_EPOCH_MS)
        .and_then(|ms| ms.checked_mul(1_000))
        .ok_or_else(out_of_range)
}

/// Writes `rows` in a transaction of their own on a connection from `pool`: the xid is
/// taken first, then the rows are streamed with COPY, then the transaction commits.
///
/// Why the xid first: the relay's cursor (`store::cursor`) proves from snapshots that no
/// lower id can still commit, which holds only for ids drawn by a transaction that
/// already had an xid (see `postgres_id_after_xid` for the insert path). COPY evaluates
/// the `id` default before the first heap insert assigns the xid, so the transaction
/// asks for it explicitly: one round trip, before any id is drawn.
pub(crate) async fn copy_rows(
    pool: &sqlx::PgPool,
    tables: &OutboxTables,
    rows: &[OutboxMessage],
) -> Result<(), EnqueueError> {
    use std::sync::Arc;

    use sea_orm::{DbErr, RuntimeErr};

    let payload = encode_rows(rows)?;
    let db =
        |e: sqlx::Error| EnqueueError::Database(DbErr::Exec(RuntimeErr::SqlxError(Arc::new(e))));
    let mut txn = pool.begin().await.map_err(db)?;
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *txn)
        .await
        .map_err(db)?;
    let mut copy = txn.copy_in_raw(&copy_statement(tables)).await.map_err(db)?;
    // CopyData messages of 1 MiB: the server needs no particular framing, and a bounded
    // message keeps sqlx's write buffer from holding the whole stream twice.
    for chunk in payload.chunks(1 << 20) {
        if let Err(e) = copy.send(chunk).await {
            // Best effort: the rollback below ends the COPY anyway.
            let _ = copy.abort("outbox bulk enqueue failed").await;
            return Err(db(e));
        }
    }
    let written = copy.finish().await.map_err(db)?;
    if written != rows.len() as u64 {
        return Err(EnqueueError::Database(DbErr::Custom(format!(
            "COPY stored {written} of {} outbox rows",
            rows.len()
        ))));
    }
    txn.commit().await.map_err(db)?;
    Ok(())
}

#[cfg(test)]
#[path = "copy_tests.rs"]
mod tests;
