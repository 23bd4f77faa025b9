//! Which database errors a retry can fix.
//!
//! Most driver errors are transient (a lost connection, a deadlock, a restart) and the
//! relay backs off and retries, keeping every row. A missing table or column, or a missing
//! grant, is not: retrying would spin forever while nothing is published. Those become
//! [`Misconfiguration::DatabaseSetup`], which stops the relay with a message that names the
//! fix. Recognised by each backend's own codes: SQLSTATE on PostgreSQL, error numbers on
//! MySQL/MariaDB, result codes and messages on SQLite (which reports a missing table or
//! column only in the message).

use outbox_core::{Misconfiguration, StoreError};
use sea_orm::DbErr;
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
use sea_orm::RuntimeErr;
#[cfg(feature = "mysql")]
use sea_orm::sqlx::mysql::MySqlDatabaseError;
#[cfg(feature = "postgres")]
use sea_orm::sqlx::postgres::PgDatabaseError;
#[cfg(feature = "sqlite")]
use sea_orm::sqlx::sqlite::SqliteError;

/// What an operator does about a missing table, column or schema.
const RUN_MIGRATIONS: &str = "run the outbox migrations (outbox_seaorm::Migration) on this \
     database, and give the store the same table names (OutboxTables) as the migration and \
     the writers";

/// What an operator does about a refused statement.
const GRANT: &str = "grant the relay's database user SELECT, INSERT, UPDATE and DELETE on \
     the outbox tables (messages, leases, relays)";

/// PostgreSQL SQLSTATEs: undefined_table, undefined_column, invalid_schema_name.
const PG_MISSING: [&str; 3] = ["42P01", "42703", "3F000"];
/// PostgreSQL SQLSTATE insufficient_privilege.
const PG_DENIED: &str = "42501";
/// MySQL/MariaDB: ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR, ER_BAD_DB_ERROR.
const MYSQL_MISSING: [u16; 3] = [1146, 1054, 1049];
/// MySQL/MariaDB: ER_DBACCESS_DENIED_ERROR, ER_TABLEACCESS_DENIED_ERROR,
/// ER_COLUMNACCESS_DENIED_ERROR.
const MYSQL_DENIED: [u16; 3] = [1044, 1142, 1143];
/// SQLite primary result codes: SQLITE_READONLY, SQLITE_AUTH.
const SQLITE_DENIED: [i64; 2] = [8, 23];

/// The store's error for a failed statement: fatal when it means misconfiguration,
/// retryable otherwise.
pub(crate) fn store_error(e: DbErr) -> StoreError {
    match setup_fix(&e) {
        Some((problem, fix)) => Misconfiguration::DatabaseSetup {
            problem,
            fix: fix.to_owned(),
        }
        .into(),
        None => StoreError::unavailable(e),
    }
}

/// What the database said and the fix, when `e` means misconfiguration. Each backend's
/// error type exists only with its driver, hence one check per enabled backend.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
fn setup_fix(e: &DbErr) -> Option<(String, &'static str)> {
    let (DbErr::Query(RuntimeErr::SqlxError(e))
    | DbErr::Exec(RuntimeErr::SqlxError(e))
    | DbErr::Conn(RuntimeErr::SqlxError(e))) = e
    else {
        return None;
    };
    let db = e.as_database_error()?;
    let checks: [Option<&'static str>; 3] = [
        #[cfg(feature = "postgres")]
        db.try_downcast_ref::<PgDatabaseError>()
            .and_then(|pg| postgres_fix(pg.code())),
        #[cfg(not(feature = "postgres"))]
        None,
        #[cfg(feature = "mysql")]
        db.try_downcast_ref::<MySqlDatabaseError>()
            .and_then(|my| mysql_fix(my.number())),
        #[cfg(not(feature = "mysql"))]
        None,
        #[cfg(feature = "sqlite")]
        db.try_downcast_ref::<SqliteError>()
            .and_then(|_| sqlite_fix(db.code().as_deref(), db.message())),
        #[cfg(not(feature = "sqlite"))]
        None,
    ];
    let fix = checks.into_iter().flatten().next()?;
    let code = db.code().map(|c| format!(" [{c}]")).unwrap_or_default();
    Some((format!("{}{code}", db.message()), fix))
}

/// Without a driver no statement ever runs, so no error means misconfiguration.
#[cfg(not(any(feature = "postgres", feature = "mysql", feature = "sqlite")))]
fn setup_fix(_e: &DbErr) -> Option<(String, &'static str)> {
    None
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
fn postgres_fix(sqlstate: &str) -> Option<&'static str> {
    if PG_MISSING.contains(&sqlstate) {
        Some(RUN_MIGRATIONS)
    } else if sqlstate == PG_DENIED {
        Some(GRANT)
    } else {
        None
    }
}

#[cfg_attr(not(feature = "mysql"), allow(dead_code))]
fn mysql_fix(number: u16) -> Option<&'static str> {
    if MYSQL_MISSING.contains(&number) {
        Some(RUN_MIGRATIONS)
    } else if MYSQL_DENIED.contains(&number) {
        Some(GRANT)
    } else {
        None
    }
}

/// SQLite says "no such table: t", "no such column: c" or "table t has no column named c"
/// under the generic SQLITE_ERROR; a read-only file or an authorizer refusal have codes
/// of their own (extended codes keep the primary code in the low byte).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
fn sqlite_fix(code: Option<&str>, message: &str) -> Option<&'static str> {
    let missing = ["no such table", "no such column", "has no column named"];
    if missing.iter().any(|m| message.contains(m)) {
        return Some(RUN_MIGRATIONS);
    }
    let primary = code?.parse::<i64>().ok()? & 0xff;
    SQLITE_DENIED.contains(&primary).then_some(GRANT)
}

#[cfg(test)]
#[path = "db_error_tests.rs"]
mod tests;
