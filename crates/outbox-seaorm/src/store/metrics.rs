//! The whole-store backlog sample: one aggregate query; and how the oldest `created_at`
//! is read on each backend (the operator's status reads it per bucket the same way).

use outbox_core::{PendingMetrics, StoreError, Timestamp};
use sea_orm::{ConnectionTrait, DatabaseConnection, QueryResult, prelude::DateTimeWithTimeZone};
use sea_query::{Expr, Func, Query};

use super::db_error::store_error;
use crate::backend::Backend;
use crate::entity::message;
use crate::tables::{OutboxTables, SqlNames};

/// `SELECT COUNT(*), MIN(created_at)` over the messages table (see [`oldest_created_at`]).
pub(crate) async fn pending(
    db: &DatabaseConnection,
    backend: Backend,
    tables: &OutboxTables,
) -> Result<PendingMetrics, StoreError> {
    let stmt = Query::select()
        .expr_as(Func::count(Expr::col(sea_query::Asterisk)), "pending")
        .expr_as(oldest_created_at(backend), "oldest")
        .from(tables.messages_name())
        .to_owned();
    let row = db
        .query_one(&stmt)
        .await
        .map_err(store_error)?
        .ok_or_else(|| StoreError::unavailable("the backlog aggregate returned no row"))?;
    let count = row.try_get::<i64>("", "pending").map_err(store_error)?;
    Ok(PendingMetrics {
        count: u64::try_from(count).unwrap_or_default(),
        oldest_created_at: read_oldest_created_at(&row, backend, "oldest")?,
        parked_count: None,
        oldest_parked_at: None,
    })
}

/// `MIN(created_at)` as an aggregate expression; read it back with
/// [`read_oldest_created_at`].
///
/// SQLite has no timestamp type: `created_at` is text, and `MIN` over text is only right
/// when every writer used the same format and offset. There the oldest row is found with
/// `julianday()`, which parses every SQLite date format (with or without offset) into
/// one number, converted to milliseconds in SQL. A value `julianday()` cannot parse
/// is skipped, so an external writer's malformed timestamp can make the age look
/// younger, never a count wrong.
pub(crate) fn oldest_created_at(backend: Backend) -> Expr {
    match backend {
        Backend::Postgres | Backend::MySql => {
            Expr::expr(Func::min(Expr::col(message::Column::CreatedAt)))
        }
        // 2440587.5 is the Julian day of the Unix epoch; SQLite keeps julian days as
        // integer milliseconds internally, so the round trip is exact.
        Backend::Sqlite => Expr::cust(
            r#"CAST(ROUND((MIN(julianday("created_at")) - 2440587.5) * 86400000.0) AS INTEGER)"#,
        ),
    }
}

/// Reads the column `alias` holding [`oldest_created_at`].
pub(crate) fn read_oldest_created_at(
    row: &QueryResult,
    backend: Backend,
    alias: &str,
) -> Result<Option<Timestamp>, StoreError> {
    Ok(match backend {
        Backend::Postgres | Backend::MySql => row
            .try_get::<Option<DateTimeWithTimeZone>>("", alias)
            .map_err(store_error)?
            .map(|t| Timestamp::from_millis(t.timestamp_millis())),
        Backend::Sqlite => row
            .try_get::<Option<i64>>("", alias)
            .map_err(store_error)?
            .map(Timestamp::from_millis),
    })
}
