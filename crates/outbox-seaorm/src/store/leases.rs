//! Bucket leases and relay heartbeats, in a fixed number of round trips.
//!
//! # Acquisition: two round trips
//!
//! The policy is [`outbox_core::plan_acquisition`]; this module only reads its input and
//! executes its plan. Whatever the bucket count:
//!
//! 1. **Read**: the lease rows and the heartbeats, two `SELECT`s in one request (the
//!    value found under the caller's id is reported as [`Acquired::heartbeat_before`],
//!    for the duplicate-id check).
//! 2. **Write and read back**, one request: the caller's heartbeat (upsert
//!    `(relay_id, now)`); forget long-silent heartbeats; insert the missing lease rows
//!    (insert-if-absent); release (`owner = NULL, expires_at_ms = 0 WHERE bucket IN (..)
//!    AND owner = me`); extend (`expires_at_ms = new WHERE bucket IN (..) AND owner =
//!    me`); claim (`owner = me, expires_at_ms = new WHERE bucket IN (..) AND (owner IS
//!    NULL OR expires_at_ms <= expired_by OR owner = me)`), each skipped when its set is
//!    empty; and last a `SELECT` of the buckets that carry exactly this call's owner and
//!    expiry: what the relay holds, whatever a race did to the guarded writes.
//!
//! # Renewal: one round trip
//!
//! Heartbeat, `UPDATE … SET expires_at_ms = new WHERE bucket IN (..) AND owner = me AND
//! expires_at_ms > now`, and the read of what carries the new expiry, in one request.
//!
//! Both go through [`SqlBatch`]: unprepared statements sent together (see there), so
//! nothing is prepared per call and the statement cache does not churn on bucket lists.
//! Bucket lists are written into the statements as integer literals, which also keeps a
//! list of 65,536 buckets clear of PostgreSQL's and MySQL's parameter limits.
//!
//! A bucket changes hands only through a guarded update, which the database applies
//! atomically to each row: two relays can never both succeed on a live lease.

use std::collections::BTreeSet;

use outbox_core::options::MAX_RELAY_ID_LEN;
use outbox_core::{
    Acquired, LeasePlan, LeaseRequest, LeaseRow, LeaseSnapshot, Misconfiguration, RenewOutcome,
    StoreError, Timestamp, plan_acquisition,
};
use sea_orm::{DatabaseConnection, Value};
use sea_query::{Cond, Expr, ExprTrait, Keyword, OnConflict, Query};

use super::sql_batch::{Cell, SqlBatch};
use crate::entity::{lease, relay};
use crate::tables::{OutboxTables, SqlNames};

pub(crate) async fn acquire(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    request: &LeaseRequest<'_>,
) -> Result<Acquired, StoreError> {
    let me = request.relay_id;
    check_relay_id(me)?;
    let bucket_count = bucket_count_i32(request.bucket_count)?;
    // The heartbeats are read before this relay writes its own, so that the value found
    // under its id can be judged (`outbox_core::relay_id::judge_heartbeat`, in the
    // machine); the snapshot then gets the value just written, as if read after it.
    let mut snapshot = read_snapshot(db, tables).await?;
    let heartbeat_before = snapshot.relays.get(me).copied();
    snapshot.relays.insert(me.to_owned(), request.now);
    let plan = plan_acquisition(
        &snapshot,
        me,
        request.now,
        request.lease_duration,
        request.bucket_count,
    )
    .keeping_busy(request.busy);
    let held = execute(db, tables, me, request.now, bucket_count, &plan).await?;
    let surplus = plan
        .surplus
        .iter()
        .copied()
        .filter(|b| held.contains(b))
        .collect();
    let waiting = plan
        .waiting
        .into_iter()
        .filter(|w| !held.contains(&w.bucket))
        .collect();
    Ok(Acquired {
        held,
        surplus,
        waiting,
        heartbeat_before,
    })
}

/// Writes the heartbeat and `plan`, each step one guarded statement, and reads back the
/// buckets held afterwards: one request.
async fn execute(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    me: &str,
    now: Timestamp,
    bucket_count: i32,
    plan: &LeasePlan,
) -> Result<Vec<i32>, StoreError> {
    use lease::Column as C;
    let mut batch = SqlBatch::new(db);
    batch.write(&heartbeat(tables, me, now.as_millis())?);
    if let Some(before) = plan.forget_relays_seen_before {
        batch.write(
            &Query::delete()
                .from_table(tables.relays_name())
                .and_where(Expr::col(relay::Column::LastSeenAtMs).lt(before.as_millis()))
                .and_where(Expr::col(relay::Column::RelayId).ne(me))
                .to_owned(),
        );
    }
    if !plan.create.is_empty() {
        batch.write(&create_lease_rows(tables, &plan.create)?);
    }
    if !plan.release.is_empty() {
        batch.write(
            &Query::update()
                .table(tables.leases_name())
                .value(C::Owner, Option::<String>::None)
                .value(C::ExpiresAtMs, 0_i64)
                .and_where(Expr::col(C::Bucket).is_in(literals(&plan.release)))
                .and_where(Expr::col(C::Owner).eq(me))
                .to_owned(),
        );
    }
    let expires = plan.expires_at.as_millis();
    if !plan.extend.is_empty() {
        batch.write(
            &Query::update()
                .table(tables.leases_name())
                .value(C::ExpiresAtMs, expires)
                .and_where(Expr::col(C::Bucket).is_in(literals(&plan.extend)))
                .and_where(Expr::col(C::Owner).eq(me))
                .to_owned(),
        );
    }
    if !plan.claim.is_empty() {
        batch.write(
            &Query::update()
                .table(tables.leases_name())
                .value(C::Owner, me)
                .value(C::ExpiresAtMs, expires)
                .and_where(Expr::col(C::Bucket).is_in(literals(&plan.claim)))
                .cond_where(
                    Cond::any()
                        .add(Expr::col(C::Owner).is_null())
                        .add(Expr::col(C::ExpiresAtMs).lte(plan.expired_by.as_millis()))
                        .add(Expr::col(C::Owner).eq(me)),
                )
                .to_owned(),
        );
    }
    batch.read(
        &Query::select()
            .column(C::Bucket)
            .from(tables.leases_name())
            .and_where(Expr::col(C::Owner).eq(me))
            .and_where(Expr::col(C::ExpiresAtMs).eq(expires))
            .and_where(Expr::col(C::Bucket).gte(0))
            .and_where(Expr::col(C::Bucket).lt(bucket_count))
            .to_owned(),
    );
    buckets_of(batch.run(db).await?)
}

/// Buckets as integer literals: one statement whatever their number (a bound list would
/// hit the parameter limits), and no injection risk, since they are integers.
fn literals(buckets: &[i32]) -> impl Iterator<Item = Expr> + '_ {
    buckets.iter().map(|b| Expr::Constant(Value::Int(Some(*b))))
}

/// The one-column rows of a bucket read, ascending.
fn buckets_of(rows: Vec<Vec<Cell>>) -> Result<Vec<i32>, StoreError> {
    let mut buckets = rows
        .iter()
        .map(|row| {
            let value = row
                .first()
                .ok_or_else(|| StoreError::unavailable("lease read: a row without columns"))?
                .int()?;
            i32::try_from(value)
                .map_err(|_| StoreError::unavailable(format!("lease read: bucket {value}")))
        })
        .collect::<Result<Vec<i32>, StoreError>>()?;
    buckets.sort_unstable();
    Ok(buckets)
}

pub(crate) async fn renew(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    request: &LeaseRequest<'_>,
    buckets: &[i32],
) -> Result<RenewOutcome, StoreError> {
    use lease::Column as C;
    let me = request.relay_id;
    check_relay_id(me)?;
    let now = request.now.as_millis();
    let expires = request.expires_at().as_millis();
    let asked: Vec<i32> = buckets
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut batch = SqlBatch::new(db);
    batch.write(&heartbeat(tables, me, now)?);
    if asked.is_empty() {
        batch.run(db).await?;
        return Ok(RenewOutcome::default());
    }
    batch
        .write(
            &Query::update()
                .table(tables.leases_name())
                .value(C::ExpiresAtMs, expires)
                .and_where(Expr::col(C::Bucket).is_in(literals(&asked)))
                .and_where(Expr::col(C::Owner).eq(me))
                .and_where(Expr::col(C::ExpiresAtMs).gt(now))
                .to_owned(),
        )
        .read(
            &Query::select()
                .column(C::Bucket)
                .from(tables.leases_name())
                .and_where(Expr::col(C::Bucket).is_in(literals(&asked)))
                .and_where(Expr::col(C::Owner).eq(me))
                .and_where(Expr::col(C::ExpiresAtMs).eq(expires))
                .to_owned(),
        );
    let renewed = buckets_of(batch.run(db).await?)?;
    let lost = asked
        .iter()
        .copied()
        .filter(|b| renewed.binary_search(b).is_err())
        .collect();
    Ok(RenewOutcome { renewed, lost })
}

/// A relay id that cannot fit the `owner` / `relay_id` columns would fail every
/// heartbeat; that is setup, not a passing fault. Lease statements carry the id as an
/// inline literal (see [`SqlBatch`]), so quotes, backslashes and control characters,
/// which MySQL's `NO_BACKSLASH_ESCAPES` mode would read differently, are refused too.
fn check_relay_id(relay_id: &str) -> Result<(), StoreError> {
    let len = relay_id.chars().count();
    if len == 0 || len > MAX_RELAY_ID_LEN {
        return Err(Misconfiguration::Other(format!(
            "relay id {relay_id:?} must be 1 to {MAX_RELAY_ID_LEN} characters to fit the lease tables"
        ))
        .into());
    }
    if let Some(c) = relay_id
        .chars()
        .find(|c| matches!(c, '\'' | '"' | '\\' | '`') || c.is_control())
    {
        return Err(Misconfiguration::Other(format!(
            "relay id {relay_id:?} holds {c:?}: quotes, backslashes and control characters are not allowed in a relay id"
        ))
        .into());
    }
    Ok(())
}

fn bucket_count_i32(bucket_count: u32) -> Result<i32, StoreError> {
    i32::try_from(bucket_count).map_err(|_| {
        Misconfiguration::Other(format!(
            "bucket count {bucket_count} does not fit a 32-bit bucket column"
        ))
        .into()
    })
}

/// The caller's heartbeat: upsert `(relay_id, now)`.
fn heartbeat(
    tables: &OutboxTables,
    me: &str,
    now: i64,
) -> Result<sea_query::InsertStatement, StoreError> {
    let values: [Value; 2] = [me.into(), now.into()];
    let mut stmt = Query::insert();
    stmt.into_table(tables.relays_name())
        .columns([relay::Column::RelayId, relay::Column::LastSeenAtMs])
        .values(values.map(Into::into))
        .map_err(|e| StoreError::unavailable(format!("building the heartbeat: {e}")))?
        .on_conflict(
            OnConflict::column(relay::Column::RelayId)
                .update_column(relay::Column::LastSeenAtMs)
                .to_owned(),
        );
    Ok(stmt)
}

/// The lease rows and the heartbeats as they are, nothing written, in one request (the
/// operator's status reads exactly what an acquisition reads). Every lease row: the
/// planner itself ignores rows outside `0..bucket_count`.
pub(crate) async fn read_snapshot(
    db: &DatabaseConnection,
    tables: &OutboxTables,
) -> Result<LeaseSnapshot, StoreError> {
    use lease::Column as C;
    let mut batch = SqlBatch::new(db);
    batch
        .read(
            &Query::select()
                .columns([C::Bucket, C::Owner, C::ExpiresAtMs])
                .from(tables.leases_name())
                .to_owned(),
        )
        .read(
            &Query::select()
                .columns([relay::Column::RelayId, relay::Column::LastSeenAtMs])
                .from(tables.relays_name())
                .to_owned(),
        );
    let mut snapshot = LeaseSnapshot::default();
    // The two reads come back one after the other; their widths tell them apart.
    for row in batch.run(db).await? {
        match row.as_slice() {
            [bucket, owner, expires] => {
                let bucket = bucket.int()?;
                let bucket = i32::try_from(bucket)
                    .map_err(|_| StoreError::unavailable(format!("lease row bucket {bucket}")))?;
                snapshot.leases.insert(
                    bucket,
                    LeaseRow {
                        owner: owner.text()?,
                        expires_at: Timestamp::from_millis(expires.int()?),
                    },
                );
            }
            [relay_id, last_seen] => {
                let relay_id = relay_id
                    .text()?
                    .ok_or_else(|| StoreError::unavailable("a heartbeat without a relay id"))?;
                snapshot
                    .relays
                    .insert(relay_id, Timestamp::from_millis(last_seen.int()?));
            }
            other => {
                return Err(StoreError::unavailable(format!(
                    "lease tables: unexpected row {other:?}"
                )));
            }
        }
    }
    Ok(snapshot)
}

/// Insert-if-absent of free lease rows (`ON CONFLICT DO NOTHING` on PostgreSQL and
/// SQLite, `ON DUPLICATE KEY UPDATE bucket = bucket` on MySQL): relays racing to create
/// the same rows all succeed.
fn create_lease_rows(
    tables: &OutboxTables,
    buckets: &[i32],
) -> Result<sea_query::InsertStatement, StoreError> {
    use lease::Column as C;
    let mut stmt = Query::insert();
    stmt.into_table(tables.leases_name())
        .columns([C::Bucket, C::Owner, C::ExpiresAtMs]);
    for bucket in literals(buckets) {
        stmt.values([
            bucket,
            Expr::Keyword(Keyword::Null),
            Expr::Constant(0_i64.into()),
        ])
        .map_err(|e| StoreError::unavailable(format!("building the lease insert: {e}")))?;
    }
    stmt.on_conflict(
        OnConflict::column(C::Bucket)
            .do_nothing_on([C::Bucket])
            .to_owned(),
    );
    Ok(stmt)
}

/// A gracefully stopped relay hands back every lease it still owns (guarded by owner,
/// so a bucket already taken over is left alone) and deletes its heartbeat, so the others
/// count it out of the fair share on their next acquisition. One request.
pub(crate) async fn release_all(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    me: &str,
) -> Result<(), StoreError> {
    check_relay_id(me)?;
    let mut batch = SqlBatch::new(db);
    batch
        .write(
            &Query::update()
                .table(tables.leases_name())
                .value(lease::Column::Owner, Option::<String>::None)
                .value(lease::Column::ExpiresAtMs, 0_i64)
                .and_where(Expr::col(lease::Column::Owner).eq(me))
                .to_owned(),
        )
        .write(
            &Query::delete()
                .from_table(tables.relays_name())
                .and_where(Expr::col(relay::Column::RelayId).eq(me))
                .to_owned(),
        );
    batch.run(db).await?;
    Ok(())
}
