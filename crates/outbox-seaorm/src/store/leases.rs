//! Bucket leases and relay heartbeats.
//!
//! # Acquisition
//!
//! 1. Heartbeat: upsert `(relay_id, now)`.
//! 2. Read the heartbeats; relays seen after `now - lease_duration` are live, and this
//!    relay's fair share follows from them ([`outbox_core::fair_share`]). Rows of relays
//!    silent for a day are pruned on the way.
//! 3. Read the lease rows of `0..bucket_count`; insert the missing ones
//!    (insert-if-absent), so lease rows are created on first use.
//! 4. Above the share: release the highest held buckets (`owner = NULL`, expiry 0).
//! 5. Extend the kept ones (`WHERE owner = me`).
//! 6. Below the share: claim free or expired buckets one at a time, each with one guarded
//!    update that decides the claim by its affected-row count:
//!    `UPDATE leases SET owner = me, expires_at_ms = new WHERE bucket = b AND (owner IS
//!    NULL OR expires_at_ms <= now OR owner = me)`.
//!
//! A bucket therefore changes hands only through a guarded update, which the database
//! applies atomically to one row: two relays can never both succeed on a live lease.
//!
//! Every step's affected-row count is checked. MySQL normally reports *changed* rows, but
//! sqlx connects with `CLIENT_FOUND_ROWS`, so a matched row counts even when no value
//! changed; every claim also writes a new expiry. Should a count still disagree (a clock
//! far off between relays), the held set is read back instead of trusted.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use outbox_core::options::MAX_RELAY_ID_LEN;
use outbox_core::{LeaseRequest, Misconfiguration, RenewOutcome, StoreError, fair_share};
use sea_orm::{ConnectionTrait, DatabaseConnection, Value};
use sea_query::{Cond, Expr, ExprTrait, OnConflict, Query};

use super::{MAX_IN_LIST, unavailable};
use crate::entity::{lease, relay};
use crate::tables::{OutboxTables, SqlNames};

/// Heartbeat rows older than this are deleted: the relays are long gone, and the table
/// would otherwise grow by one row per relay id ever used.
const RELAY_ROW_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

pub(crate) async fn acquire(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    request: &LeaseRequest<'_>,
) -> Result<Vec<i32>, StoreError> {
    let me = request.relay_id;
    check_relay_id(me)?;
    let bucket_count = bucket_count_i32(request.bucket_count)?;
    let now = request.now.as_millis();
    let expires = request.expires_at().as_millis();

    heartbeat(db, tables, me, now).await?;
    let share = {
        let relays = read_relays(db, tables).await?;
        prune_relays(db, tables, &relays, request).await?;
        let live_after = request.live_after().as_millis();
        let active = relays
            .iter()
            .filter(|(_, seen)| *seen > live_after)
            .map(|(id, _)| id.as_str());
        usize::try_from(fair_share(active, me, request.bucket_count)).unwrap_or(usize::MAX)
    };

    let leases = read_leases(db, tables, bucket_count).await?;
    let missing: Vec<i32> = (0..bucket_count)
        .filter(|b| !leases.contains_key(b))
        .collect();
    create_lease_rows(db, tables, &missing).await?;

    let mut held: Vec<i32> = leases
        .iter()
        .filter(|(_, l)| l.owner.as_deref() == Some(me) && l.expires_at_ms > now)
        .map(|(b, _)| *b)
        .collect();
    let mut trusted = true;

    if held.len() > share {
        // Owners shrink from the top, so a newcomer finds the same buckets free.
        let surplus = held.split_off(share);
        release(db, tables, me, &surplus).await?;
    }
    if !held.is_empty() && extend(db, tables, me, &held, expires).await? != held.len() {
        trusted = false;
    }

    let claimable = (0..bucket_count).filter(|b| {
        !held.contains(b)
            && leases.get(b).is_none_or(|l| {
                l.owner.is_none() || l.expires_at_ms <= now || l.owner.as_deref() == Some(me)
            })
    });
    let mut claimed = Vec::new();
    for bucket in claimable {
        if held.len() + claimed.len() >= share {
            break;
        }
        if claim(db, tables, me, bucket, now, expires).await? {
            claimed.push(bucket);
        }
    }
    held.extend(claimed);

    if !trusted {
        held = held_at(db, tables, me, bucket_count, expires).await?;
    }
    held.sort_unstable();
    Ok(held)
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
    let mut extended = 0;
    for chunk in asked.chunks(MAX_IN_LIST) {
        let stmt = Query::update()
            .table(tables.leases_name())
            .value(lease::Column::ExpiresAtMs, expires)
            .and_where(Expr::col(lease::Column::Bucket).is_in(chunk.iter().copied()))
            .and_where(Expr::col(lease::Column::Owner).eq(me))
            .and_where(Expr::col(lease::Column::ExpiresAtMs).gt(now))
            .to_owned();
        extended += affected(
            db.execute(&stmt)
                .await
                .map_err(unavailable)?
                .rows_affected(),
        );
    }
    let renewed: Vec<i32> = if extended == asked.len() {
        asked.clone()
    } else {
        // Some were lost: read back exactly which rows carry this renewal's expiry.
        let mut renewed = Vec::new();
        for chunk in asked.chunks(MAX_IN_LIST) {
            let stmt = Query::select()
                .column(lease::Column::Bucket)
                .from(tables.leases_name())
                .and_where(Expr::col(lease::Column::Bucket).is_in(chunk.iter().copied()))
                .and_where(Expr::col(lease::Column::Owner).eq(me))
                .and_where(Expr::col(lease::Column::ExpiresAtMs).eq(expires))
                .to_owned();
            for row in db.query_all(&stmt).await.map_err(unavailable)? {
                renewed.push(row.try_get::<i32>("", "bucket").map_err(unavailable)?);
            }
        }
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

async fn read_relays(
    db: &DatabaseConnection,
    tables: &OutboxTables,
) -> Result<Vec<(String, i64)>, StoreError> {
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
                row.try_get::<i64>("", "last_seen_at_ms")
                    .map_err(unavailable)?,
            ))
        })
        .collect()
}

/// Deletes heartbeat rows silent for longer than [`RELAY_ROW_RETENTION`] (or ten lease
/// durations, if longer). Guarded by the same age, so a relay that came back in between
/// keeps its row.
async fn prune_relays(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    relays: &[(String, i64)],
    request: &LeaseRequest<'_>,
) -> Result<(), StoreError> {
    let retention = RELAY_ROW_RETENTION.max(request.lease_duration.saturating_mul(10));
    let horizon = request.now.saturating_sub(retention).as_millis();
    let stale: Vec<&str> = relays
        .iter()
        .filter(|(_, seen)| *seen < horizon)
        .map(|(id, _)| id.as_str())
        .collect();
    for chunk in stale.chunks(MAX_IN_LIST) {
        let stmt = Query::delete()
            .from_table(tables.relays_name())
            .and_where(Expr::col(relay::Column::RelayId).is_in(chunk.iter().copied()))
            .and_where(Expr::col(relay::Column::LastSeenAtMs).lt(horizon))
            .to_owned();
        db.execute(&stmt).await.map_err(unavailable)?;
    }
    Ok(())
}

struct LeaseRow {
    owner: Option<String>,
    expires_at_ms: i64,
}

async fn read_leases(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    bucket_count: i32,
) -> Result<BTreeMap<i32, LeaseRow>, StoreError> {
    use lease::Column as C;
    let stmt = Query::select()
        .columns([C::Bucket, C::Owner, C::ExpiresAtMs])
        .from(tables.leases_name())
        .and_where(Expr::col(C::Bucket).gte(0))
        .and_where(Expr::col(C::Bucket).lt(bucket_count))
        .to_owned();
    let mut out = BTreeMap::new();
    for row in db.query_all(&stmt).await.map_err(unavailable)? {
        out.insert(
            row.try_get::<i32>("", "bucket").map_err(unavailable)?,
            LeaseRow {
                owner: row
                    .try_get::<Option<String>>("", "owner")
                    .map_err(unavailable)?,
                expires_at_ms: row
                    .try_get::<i64>("", "expires_at_ms")
                    .map_err(unavailable)?,
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
    for chunk in buckets.chunks(MAX_IN_LIST / 3) {
        let mut stmt = Query::insert();
        stmt.into_table(tables.leases_name())
            .columns([C::Bucket, C::Owner, C::ExpiresAtMs]);
        for bucket in chunk {
            let values: [Value; 3] = [
                (*bucket).into(),
                Option::<String>::None.into(),
                0_i64.into(),
            ];
            stmt.values(values.map(Into::into))
                .map_err(|e| StoreError::unavailable(format!("building the lease insert: {e}")))?;
        }
        stmt.on_conflict(
            OnConflict::column(C::Bucket)
                .do_nothing_on([C::Bucket])
                .to_owned(),
        );
        db.execute(&stmt).await.map_err(unavailable)?;
    }
    Ok(())
}

async fn release(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    me: &str,
    buckets: &[i32],
) -> Result<(), StoreError> {
    use lease::Column as C;
    for chunk in buckets.chunks(MAX_IN_LIST) {
        let stmt = Query::update()
            .table(tables.leases_name())
            .value(C::Owner, Option::<String>::None)
            .value(C::ExpiresAtMs, 0_i64)
            .and_where(Expr::col(C::Bucket).is_in(chunk.iter().copied()))
            .and_where(Expr::col(C::Owner).eq(me))
            .to_owned();
        db.execute(&stmt).await.map_err(unavailable)?;
    }
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

/// Extends the leases this relay still owns; returns how many rows it extended.
async fn extend(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    me: &str,
    buckets: &[i32],
    expires: i64,
) -> Result<usize, StoreError> {
    use lease::Column as C;
    let mut extended = 0;
    for chunk in buckets.chunks(MAX_IN_LIST) {
        let stmt = Query::update()
            .table(tables.leases_name())
            .value(C::ExpiresAtMs, expires)
            .and_where(Expr::col(C::Bucket).is_in(chunk.iter().copied()))
            .and_where(Expr::col(C::Owner).eq(me))
            .to_owned();
        extended += affected(
            db.execute(&stmt)
                .await
                .map_err(unavailable)?
                .rows_affected(),
        );
    }
    Ok(extended)
}

/// The guarded claim: exactly one affected row means the bucket is now this relay's.
async fn claim(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    me: &str,
    bucket: i32,
    now: i64,
    expires: i64,
) -> Result<bool, StoreError> {
    use lease::Column as C;
    let stmt = Query::update()
        .table(tables.leases_name())
        .value(C::Owner, me)
        .value(C::ExpiresAtMs, expires)
        .and_where(Expr::col(C::Bucket).eq(bucket))
        .cond_where(
            Cond::any()
                .add(Expr::col(C::Owner).is_null())
                .add(Expr::col(C::ExpiresAtMs).lte(now))
                .add(Expr::col(C::Owner).eq(me)),
        )
        .to_owned();
    let result = db.execute(&stmt).await.map_err(unavailable)?;
    Ok(result.rows_affected() == 1)
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
