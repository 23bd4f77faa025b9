use super::*;
use sea_orm_migration::MigrationName;

#[test]
fn names_are_unique_per_outbox() {
    assert_eq!(Migration::default().name(), MIGRATION_NAME);
    let custom = OutboxTables::builder()
        .schema("messaging")
        .messages("orders_outbox")
        .build()
        .unwrap();
    assert_eq!(
        Migration::new(custom).name(),
        "m20251201_000001_create_outbox_tables_messaging_orders_outbox"
    );
}
