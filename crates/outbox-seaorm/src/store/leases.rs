//! Bucket leases and relay heartbeats.
//!
//! # Acquisition
//!
//! The policy is [`outbox_core::plan_acquisition`]; this module only reads its input and
//! executes its plan, in a number of statements that does not depend on the bucket count:
//!
//! 1. Read the heartbeats (the value found under the caller's id is reported as
//!    [`Acquired::heartbeat_before`], for the duplicate-id check), then write the
//!    caller's: upsert `(relay_id, now)`.
//! 2. Read the lease rows: with the heartbeats, the [`LeaseSnapshot`].
//! 3. Plan, then execute, each step one statement and skipped when its set is empty:
//!    forget long-silent heartbeats; insert the missing lease rows (insert-if-absent);
//!    release (`owner = NULL, expires_at_ms = 0 WHERE bucket IN (..) AND owner = me`);
//!    extend (`expires_at_ms = new WHERE bucket IN (..) AND owner = me`); claim
//!    (`owner = me, expires_at_ms = new WHERE bucket IN (..) AND (owner IS NULL OR
//!    expires_at_ms <= expired_by OR owner = me)`).
//!
//! At most eight statements (nine with a read-back), whether there are 8 buckets or
//! 65,536: an acquisition must finish well inside a lease even over a slow link. Bucket
//! lists are written into the statement as integer literals rather than bound, because a
//! bound list of 65,536 values exceeds PostgreSQL's and MySQL's parameter limits.
//!
//! A bucket therefore changes hands only through a guarded update, which the database
//! applies atomically to each row: two relays can never both succeed on a live lease.
//!
//! What the relay holds afterwards is what the extension and the claim wrote, trusted
//! when both affected-row counts equal their set's size. MySQL normally reports *changed*
//! rows, but sqlx connects with `CLIENT_FOUND_ROWS`, so a matched row counts even when no
//! value changed. When a count disagrees (a claim lost a race, or a clock far off between
//! relays), the held set is read back instead of trusted.

use std::collections::{BTreeMap, BTreeSet};

use outbox_core::options::MAX_RELAY_ID_LEN;
use outbox_core::{
    Acquired, LeasePlan, LeaseRequest, LeaseRow, LeaseSnapshot, Misconfiguration, RenewOutcome,
    StoreError, Timestamp, plan_acquisition,
};
use sea_orm::{ConnectionTrait, DatabaseConnection, Value};
use sea_query::{Cond, Expr, ExprTrait, Keyword, OnConflict, Query};

use super::unavailable;
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
    let mut relays = read_relays(db, tables).await?;
    let heartbeat_before = relays.get(me).copied();
    heartbeat(db, tables, me, request.now.as_millis()).await?;
    relays.insert(me.to_owned(), request.now);
    let snapshot = LeaseSnapshot {
        relays,
        leases: read_leases(db, tables).await?,
    };
    let plan = plan_acquisition(
        &snapshot,
        me,
        request.now,
        request.lease_duration,
        request.bucket_count,
    )
    .keeping_busy(request.busy);
    let held = execute(db, tables, me, bucket_count, &plan).await?;
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

/// Writes `plan`, each step one guarded statement; returns the buckets held afterwards.
async fn execute(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    me: &str,
    bucket_count: i32,
    plan: &LeasePlan,
) -> Result<Vec<i32>, StoreError> {
    use lease::Column as C;
    if let Some(before) = plan.forget_relays_seen_before {
        let stmt = Query::delete()
            .from_table(tables.relays_name())
            .and_where(Expr::col(relay::Column::LastSeenAtMs).lt(before.as_millis()))
            .to_owned();
        db.execute(&stmt).await.map_err(unavailable)?;
    }
    if !plan.create.is_empty() {
        create_lease_rows(db, tables, &plan.create).await?;
    }
    if !plan.release.is_empty() {
        let stmt = Query::update()
            .table(tables.leases_name())
            .value(C::Owner, Option::<String>::None)
            .value(C::ExpiresAtMs, 0_i64)
            .and_where(Expr::col(C::Bucket).is_in(literals(&plan.release)))
            .and_where(Expr::col(C::Owner).eq(me))
            .to_owned();
        db.execute(&stmt).await.map_err(unavailable)?;
    }
    let expires = plan.expires_at.as_millis();
    let mut trusted = true;
    if !plan.extend.is_empty() {
        let stmt = Query::update()
            .table(tables.leases_name())
            .value(C::ExpiresAtMs, expires)
            .and_where(Expr::col(C::Bucket).is_in(literals(&plan.extend)))
            .and_where(Expr::col(C::Owner).eq(me))
            .to_owned();
        trusted &= rows_affected(db, &stmt).await? == plan.extend.len();
    }
    if !plan.claim.is_empty() {
        let stmt = Query::update()
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
            .to_owned();
        trusted &= rows_affected(db, &stmt).await? == plan.claim.len();
    }
    if !trusted {
        return held_at(db, tables, me, bucket_count, expires).await;
    }
    let mut held: Vec<i32> = plan.extend.iter().chain(&plan.claim).copied().collect();
    held.sort_unstable();
    Ok(held)
}

/// Buckets as integer literals: one statement whatever their number (a bound list would
/// hit the parameter limits), and no injection risk, since they are integers.
fn literals(buckets: &[i32]) -> impl Iterator<Item = Expr> + '_ {
    buckets.iter().map(|b| Expr::Constant(Value::Int(Some(*b))))
}

async fn rows_affected(
    db: &DatabaseConnection,
    stmt: &sea_query::UpdateStatement,
) -> Result<usize, StoreError> {
    let result = db.execute(stmt).await.map_err(unavailable)?;
    Ok(affected(result.rows_affected()))
}

pub(crate) async fn renew(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    request: &LeaseRequest<'_>,
    buckets: &[i32],
) -> Result<RenewOutcome, StoreError> {
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
    heartbeat(db, tables, me, now).await?;
    if asked.is_empty() {
        return Ok(RenewOutcome::default());
    }
    let stmt = Query::update()
        .table(tables.leases_name())
        .value(lease::Column::ExpiresAtMs, expires)
        .and_where(Expr::col(lease::Column::Bucket).is_in(literals(&asked)))
        .and_where(Expr::col(lease::Column::Owner).eq(me))
        .and_where(Expr::col(lease::Column::ExpiresAtMs).gt(now))
        .to_owned();
    let renewed: Vec<i32> = if rows_affected(db, &stmt).await? == asked.len() {
        asked.clone()
    } else {
        // Some were lost: read back exactly which rows carry this renewal's expiry.
        let stmt = Query::select()
            .column(lease::Column::Bucket)
            .from(tables.leases_name())
            .and_where(Expr::col(lease::Column::Bucket).is_in(literals(&asked)))
            .and_where(Expr::col(lease::Column::Owner).eq(me))
            .and_where(Expr::col(lease::Column::ExpiresAtMs).eq(expires))
            .to_owned();
        let mut renewed = db
            .query_all(&stmt)
            .await
            .map_err(unavailable)?
            .iter()
            .map(|row| row.try_get::<i32>("", "bucket").map_err(unavailable))
            .collect::<Result<Vec<i32>, StoreError>>()?;
        renewed.sort_unstable();
        renewed
    };
    let lost = asked
        .iter()
        .copied()
        .filter(|b| renewed.binary_search(b).is_err())
        .collect();
    Ok(RenewOutcome { renewed, lost })
}

/// A relay id that cannot fit the `owner` / `relay_id` columns would fail every
/// heartbeat; that is setup, not a passing fault.
fn check_relay_id(relay_id: &str) -> Result<(), StoreError> {
    let len = relay_id.chars().count();
    if len == 0 || len > MAX_RELAY_ID_LEN {
        return Err(Misconfiguration::Other(format!(
            "relay id {relay_id:?} must be 1 to {MAX_RELAY_ID_LEN} characters to fit the lease tables"
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

fn affected(rows: u64) -> usize {
    usize::try_from(rows).unwrap_or(usize::MAX)
}

async fn heartbeat(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    me: &str,
    now: i64,
) -> Result<(), StoreError> {
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
    db.execute(&stmt).await.map_err(unavailable)?;
    Ok(())
}

/// The lease rows and the heartbeats as they are, nothing written (the operator's
/// status reads exactly what an acquisition reads).
pub(crate) async fn read_snapshot(
    db: &DatabaseConnection,
    tables: &OutboxTables,
) -> Result<LeaseSnapshot, StoreError> {
    Ok(LeaseSnapshot {
        relays: read_relays(db, tables).await?,
        leases: read_leases(db, tables).await?,
    })
}

async fn read_relays(
    db: &DatabaseConnection,
    tables: &OutboxTables,
) -> Result<BTreeMap<String, Timestamp>, StoreError> {
    let stmt = Query::select()
        .columns([relay::Column::RelayId, relay::Column::LastSeenAtMs])
        .from(tables.relays_name())
        .to_owned();
    db.query_all(&stmt)
        .await
        .map_err(unavailable)?
        .iter()
        .map(|row| {
            Ok((
                row.try_get::<String>("", "relay_id").map_err(unavailable)?,
                Timestamp::from_millis(
                    row.try_get::<i64>("", "last_seen_at_ms")
                        .map_err(unavailable)?,
                ),
            ))
        })
        .collect()
}

/// Every lease row: the planner itself ignores rows outside `0..bucket_count`.
async fn read_leases(
    db: &DatabaseConnection,
    tables: &OutboxTables,
) -> Result<BTreeMap<i32, LeaseRow>, StoreError> {
    use lease::Column as C;
    let stmt = Query::select()
        .columns([C::Bucket, C::Owner, C::ExpiresAtMs])
        .from(tables.leases_name())
        .to_owned();
    let mut out = BTreeMap::new();
    for row in db.query_all(&stmt).await.map_err(unavailable)? {
        out.insert(
            row.try_get::<i32>("", "bucket").map_err(unavailable)?,
            LeaseRow {
                owner: row
                    .try_get::<Option<String>>("", "owner")
                    .map_err(unavailable)?,
                expires_at: Timestamp::from_millis(
                    row.try_get::<i64>("", "expires_at_ms")
                        .map_err(unavailable)?,
                ),
            },
        );
    }
    Ok(out)
}

/// Insert-if-absent of free lease rows (`ON CONFLICT DO NOTHING` on PostgreSQL and
/// SQLite, `ON DUPLICATE KEY UPDATE bucket = bucket` on MySQL): relays racing to create
/// the same rows all succeed.
async fn create_lease_rows(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    buckets: &[i32],
) -> Result<(), StoreError> {
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
    db.execute(&stmt).await.map_err(unavailable)?;
    Ok(())
}

/// A gracefully stopped relay hands back every lease it still owns (guarded by owner,
/// so a bucket already taken over is left alone) and deletes its heartbeat, so the others
/// count it out of the fair share on their next acquisition.
pub(crate) async fn release_all(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    me: &str,
) -> Result<(), StoreError> {
    check_relay_id(me)?;
    let stmt = Query::update()
        .table(tables.leases_name())
        .value(lease::Column::Owner, Option::<String>::None)
        .value(lease::Column::ExpiresAtMs, 0_i64)
        .and_where(Expr::col(lease::Column::Owner).eq(me))
        .to_owned();
    db.execute(&stmt).await.map_err(unavailable)?;
    let stmt = Query::delete()
        .from_table(tables.relays_name())
        .and_where(Expr::col(relay::Column::RelayId).eq(me))
        .to_owned();
    db.execute(&stmt).await.map_err(unavailable)?;
    Ok(())
}

/// The buckets this relay holds with exactly this call's expiry.
async fn held_at(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    me: &str,
    bucket_count: i32,
    expires: i64,
) -> Result<Vec<i32>, StoreError> {
    use lease::Column as C;
    let stmt = Query::select()
        .column(C::Bucket)
        .from(tables.leases_name())
        .and_where(Expr::col(C::Owner).eq(me))
        .and_where(Expr::col(C::ExpiresAtMs).eq(expires))
        .and_where(Expr::col(C::Bucket).gte(0))
        .and_where(Expr::col(C::Bucket).lt(bucket_count))
        .to_owned();
    db.query_all(&stmt)
        .await
        .map_err(unavailable)?
        .iter()
        .map(|row| row.try_get::<i32>("", "bucket").map_err(unavailable))
        .collect()
}
