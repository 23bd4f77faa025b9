use super::*;
use sea_orm_migration::MigrationName;

#[test]
fn names_are_unique_per_inbox() {
    assert_eq!(InboxMigration::default().name(), INBOX_MIGRATION_NAME);
    assert_ne!(INBOX_MIGRATION_NAME, crate::MIGRATION_NAME);
    let custom = InboxTable::builder()
        .schema("billing")
        .table("billing_inbox")
        .build()
        .unwrap();
    assert_eq!(
        InboxMigration::new(custom).name(),
        "m20251201_000002_create_outbox_inbox_billing_billing_inbox"
    );
    let unqualified = InboxTable::builder().table("b_inbox").build().unwrap();
    assert_eq!(
        InboxMigration::new(unqualified).name(),
        "m20251201_000002_create_outbox_inbox_b_inbox"
    );
}
