use super::*;
use sea_orm::DbBackend;

#[test]
fn mysql_insert_is_insert_ignore() {
    let stmt = Statement::from_string(
        DbBackend::MySql,
        "INSERT INTO `outbox_inbox` (`consumer`) VALUES (?)",
    );
    assert_eq!(
        insert_ignore(stmt).unwrap().sql,
        "INSERT IGNORE INTO `outbox_inbox` (`consumer`) VALUES (?)"
    );
    assert!(insert_ignore(Statement::from_string(DbBackend::MySql, "SELECT 1")).is_err());
}
