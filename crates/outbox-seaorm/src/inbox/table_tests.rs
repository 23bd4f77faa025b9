use super::*;
use sea_query::{Asterisk, MysqlQueryBuilder, PostgresQueryBuilder, Query};

#[test]
fn defaults() {
    let t = InboxTable::default();
    assert_eq!(InboxTable::builder().build().unwrap(), t);
    assert!(t.is_default());
    assert_eq!((t.schema(), t.table()), (None, "outbox_inbox"));
    assert_eq!(t.processed_at_index(), "outbox_inbox_processed_at_idx");
}

#[test]
fn refusals_use_the_outbox_rules() {
    let err = |b: InboxTableBuilder| b.build().unwrap_err();
    assert_eq!(
        err(InboxTable::builder().table("")),
        TableNameError::Empty {
            role: NameRole::Inbox
        }
    );
    let e = err(InboxTable::builder().table("inbox\"; DROP TABLE users; --"));
    assert!(
        matches!(
            e,
            TableNameError::InvalidChar {
                role: NameRole::Inbox,
                ch: '"',
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("inbox table"), "{e}");
    assert!(matches!(
        err(InboxTable::builder().schema("a.b")),
        TableNameError::InvalidChar {
            role: NameRole::Schema,
            ..
        }
    ));
    // 46 bytes plus the 17-byte index suffix is exactly 63; one more is refused as
    // the index name, which PostgreSQL would truncate.
    assert!(InboxTable::builder().table("i".repeat(46)).build().is_ok());
    assert!(matches!(
        err(InboxTable::builder().table("i".repeat(47))),
        TableNameError::TooLong {
            role: NameRole::InboxIndex,
            len: 64,
            ..
        }
    ));
}

#[test]
fn names_are_quoted_and_qualified() {
    let t = InboxTable::builder()
        .schema("Billing")
        .table("Billing_Inbox")
        .build()
        .unwrap();
    let q = Query::select()
        .column(Asterisk)
        .from(t.table_ref())
        .to_owned();
    assert_eq!(
        q.to_string(PostgresQueryBuilder),
        r#"SELECT * FROM "Billing"."Billing_Inbox""#
    );
    assert_eq!(
        q.to_string(MysqlQueryBuilder),
        "SELECT * FROM `Billing`.`Billing_Inbox`"
    );
}
