use super::*;

#[test]
fn postgres_codes() {
    assert_eq!(postgres_fix("42P01"), Some(RUN_MIGRATIONS));
    assert_eq!(postgres_fix("42703"), Some(RUN_MIGRATIONS));
    assert_eq!(postgres_fix("42501"), Some(GRANT));
    // serialization_failure, connection_failure, deadlock: retried.
    for transient in ["40001", "08006", "40P01", "57P01"] {
        assert_eq!(postgres_fix(transient), None, "{transient}");
    }
}

#[test]
fn mysql_numbers() {
    assert_eq!(mysql_fix(1146), Some(RUN_MIGRATIONS));
    assert_eq!(mysql_fix(1054), Some(RUN_MIGRATIONS));
    assert_eq!(mysql_fix(1142), Some(GRANT));
    // lock wait timeout, deadlock, server gone away: retried.
    for transient in [1205, 1213, 2006] {
        assert_eq!(mysql_fix(transient), None, "{transient}");
    }
}

#[test]
fn sqlite_messages_and_codes() {
    assert_eq!(
        sqlite_fix(Some("1"), "no such table: outbox_messages"),
        Some(RUN_MIGRATIONS)
    );
    assert_eq!(
        sqlite_fix(Some("1"), "table m has no column named bucket"),
        Some(RUN_MIGRATIONS)
    );
    assert_eq!(
        sqlite_fix(Some("1032"), "attempt to write a readonly database"),
        Some(GRANT)
    );
    // SQLITE_BUSY and SQLITE_LOCKED: another connection holds the file; retried.
    assert_eq!(sqlite_fix(Some("5"), "database is locked"), None);
    assert_eq!(sqlite_fix(Some("6"), "database table is locked"), None);
}

#[test]
fn non_database_errors_stay_retryable() {
    let e = store_error(DbErr::Conn(sea_orm::RuntimeErr::Internal(
        "pool timed out".into(),
    )));
    assert!(!e.is_fatal(), "{e}");
}
