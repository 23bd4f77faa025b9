//! The operator's status: the raw rows of [`StatusSnapshot`], one statement per table
//! (heartbeats, leases, then pending and parked rows grouped by bucket), whatever the
//! bucket count. The view itself is assembled by the core ([`outbox_core::OutboxStatus`]).
//!
//! The statements are plain reads in autocommit, so the tables are read at slightly
//! different instants: a bucket's pending count and its lease may be a statement apart.
//! For an operator's glance that is enough, and it locks nothing a relay needs.

use std::collections::BTreeMap;

use outbox_core::{BucketRows, StatusSnapshot, StoreError, Timestamp};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use sea_query::{Expr, Func, Query};

use super::db_error::store_error;
use super::leases;
use super::metrics::{oldest_created_at, read_oldest_created_at};
use crate::backend::Backend;
use crate::entity::{message, parked};
use crate::tables::{OutboxTables, SqlNames};

/// Reads every table of the outbox once.
pub(crate) async fn read(
    db: &DatabaseConnection,
    backend: Backend,
    tables: &OutboxTables,
) -> Result<StatusSnapshot, StoreError> {
    Ok(StatusSnapshot {
        leases: leases::read_snapshot(db, tables).await?,
        pending: pending_by_bucket(db, backend, tables).await?,
        parked: parked_by_bucket(db, tables).await?,
    })
}

/// `SELECT bucket, COUNT(*), MIN(created_at) FROM messages GROUP BY bucket`.
async fn pending_by_bucket(
    db: &DatabaseConnection,
    backend: Backend,
    tables: &OutboxTables,
) -> Result<BTreeMap<i32, BucketRows>, StoreError> {
    let stmt = Query::select()
        .column(message::Column::Bucket)
        .expr_as(Func::count(Expr::col(sea_query::Asterisk)), "row_count")
        .expr_as(oldest_created_at(backend), "oldest")
        .from(tables.messages_name())
        .group_by_col(message::Column::Bucket)
        .to_owned();
    let mut out = BTreeMap::new();
    for row in db.query_all(&stmt).await.map_err(store_error)? {
        let bucket: i32 = row.try_get("", "bucket").map_err(store_error)?;
        let count: i64 = row.try_get("", "row_count").map_err(store_error)?;
        let oldest = read_oldest_created_at(&row, backend, "oldest")?;
        out.insert(
            bucket,
            BucketRows {
                count: u64::try_from(count).unwrap_or_default(),
                oldest,
            },
        );
    }
    Ok(out)
}

/// `SELECT bucket, COUNT(*), MIN(parked_at_ms) FROM parked GROUP BY bucket`.
async fn parked_by_bucket(
    db: &DatabaseConnection,
    tables: &OutboxTables,
) -> Result<BTreeMap<i32, BucketRows>, StoreError> {
    let stmt = Query::select()
        .column(parked::Column::Bucket)
        .expr_as(Func::count(Expr::col(sea_query::Asterisk)), "row_count")
        .expr_as(Func::min(Expr::col(parked::Column::ParkedAtMs)), "oldest")
        .from(tables.parked_name())
        .group_by_col(parked::Column::Bucket)
        .to_owned();
    let mut out = BTreeMap::new();
    for row in db.query_all(&stmt).await.map_err(store_error)? {
        let bucket: i32 = row.try_get("", "bucket").map_err(store_error)?;
        let count: i64 = row.try_get("", "row_count").map_err(store_error)?;
        let oldest: Option<i64> = row.try_get("", "oldest").map_err(store_error)?;
        out.insert(
            bucket,
            BucketRows {
                count: u64::try_from(count).unwrap_or_default(),
                oldest: oldest.map(Timestamp::from_millis),
            },
        );
    }
    Ok(out)
}
