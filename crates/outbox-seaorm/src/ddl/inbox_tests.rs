use super::*;

#[test]
fn default_statements() {
    let t = InboxTable::default();
    assert_eq!(
        inbox_create_statements(Backend::Postgres, &t),
        [
            r#"CREATE TABLE "outbox_inbox" ( "consumer" varchar(128) NOT NULL, "message_id" uuid NOT NULL, "processed_at" timestamp with time zone NOT NULL, PRIMARY KEY ("consumer", "message_id") )"#,
            r#"CREATE INDEX "outbox_inbox_processed_at_idx" ON "outbox_inbox" ("processed_at")"#,
        ]
    );
    assert_eq!(
        inbox_drop_statements(Backend::MySql, &t),
        ["DROP TABLE `outbox_inbox`"]
    );
}

#[test]
fn custom_names_are_quoted_everywhere() {
    let t = InboxTable::builder()
        .schema("Billing")
        .table("Billing_Inbox")
        .build()
        .unwrap();
    let pg = inbox_create_statements(Backend::Postgres, &t);
    assert_eq!(pg[0], r#"CREATE SCHEMA IF NOT EXISTS "Billing""#);
    assert!(
        pg[1].starts_with(r#"CREATE TABLE "Billing"."Billing_Inbox" ("#),
        "{pg:?}"
    );
    assert_eq!(
        pg[2],
        r#"CREATE INDEX "Billing_Inbox_processed_at_idx" ON "Billing"."Billing_Inbox" ("processed_at")"#
    );
    let my = inbox_create_statements(Backend::MySql, &t);
    assert_eq!(my.len(), 2, "no schema creation on MySQL");
    assert!(my[0].contains("COLLATE=utf8mb4_bin"), "{my:?}");
    assert_eq!(
        my[1],
        "CREATE INDEX `Billing_Inbox_processed_at_idx` ON `Billing`.`Billing_Inbox` (`processed_at`)"
    );
    assert_eq!(
        inbox_create_statements(Backend::Sqlite, &t)[1],
        r#"CREATE INDEX "Billing"."Billing_Inbox_processed_at_idx" ON "Billing_Inbox" ("processed_at")"#
    );
    assert_eq!(
        inbox_drop_statements(Backend::Sqlite, &t),
        [r#"DROP TABLE "Billing"."Billing_Inbox""#]
    );
}
