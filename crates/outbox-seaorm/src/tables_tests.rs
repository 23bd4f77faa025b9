use super::*;
use sea_query::{Asterisk, MysqlQueryBuilder, PostgresQueryBuilder, Query, SqliteQueryBuilder};

#[test]
fn names_are_always_quoted_and_qualified() {
    let t = OutboxTables::builder()
        .schema("Messaging")
        .messages("Orders_Outbox")
        .build()
        .unwrap();
    let q = Query::select()
        .column(Asterisk)
        .from(t.messages_ref())
        .to_owned();
    assert_eq!(
        q.to_string(PostgresQueryBuilder),
        r#"SELECT * FROM "Messaging"."Orders_Outbox""#
    );
    assert_eq!(
        q.to_string(MysqlQueryBuilder),
        "SELECT * FROM `Messaging`.`Orders_Outbox`"
    );
    assert_eq!(
        q.to_string(SqliteQueryBuilder),
        r#"SELECT * FROM "Messaging"."Orders_Outbox""#
    );
    let plain = Query::select()
        .column(Asterisk)
        .from(OutboxTables::default().leases_ref())
        .to_owned();
    assert_eq!(
        plain.to_string(PostgresQueryBuilder),
        r#"SELECT * FROM "outbox_leases""#
    );
}
