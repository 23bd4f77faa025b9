//! The sea-orm-migration [`Migration`] that creates the outbox tables.

use crate::ddl;
use crate::ddl_migration::{DdlMigration, migration_name};
use crate::tables::OutboxTables;
use outbox_core::OutboxSchema;

/// Name recorded in the migration table for the default tables.
pub const MIGRATION_NAME: &str = "m20251201_000001_create_outbox_tables";

/// Creates (and on `down`, drops) the three outbox tables and their index. Add it to your
/// `Migrator` in one line:
///
/// ```
/// use sea_orm_migration::{MigrationTrait, MigratorTrait};
///
/// pub struct Migrator;
///
/// impl MigratorTrait for Migrator {
///     fn migrations() -> Vec<Box<dyn MigrationTrait>> {
///         vec![
///             // ... your own migrations ...
///             Box::new(outbox_seaorm::Migration::default()),
///         ]
///     }
/// }
/// ```
///
/// With custom names, pass the same [`OutboxSchema`] the store, the writers and the
/// relays use: `Box::new(outbox_seaorm::Migration::new(schema))` (bare [`OutboxTables`]
/// work too; only the names matter here). Its migration name then carries the
/// schema and messages table (`m20251201_000001_create_outbox_tables_messaging_orders_outbox`),
/// so several outboxes can live in one `Migrator`.
///
/// The statements are those of [`ddl::create_statements`]; `migrations/*.sql` in the
/// repository holds them rendered for review. On PostgreSQL a custom schema is created
/// when missing; on MySQL (database) and SQLite (attached database) it must exist.
pub type Migration = DdlMigration<OutboxTables>;

impl Default for Migration {
    fn default() -> Self {
        Migration::new(OutboxSchema::default())
    }
}

impl Migration {
    /// The migration for the tables of `schema` (the same value the store, the writers
    /// and the relays use; bare [`OutboxTables`] work too).
    pub fn new(schema: impl Into<OutboxSchema>) -> Self {
        let tables = schema.into().tables().clone();
        let name = migration_name(
            MIGRATION_NAME,
            tables.is_default(),
            tables.schema(),
            tables.messages(),
        );
        DdlMigration::with_statements(name, tables, ddl::create_statements, ddl::drop_statements)
    }

    /// The tables it creates.
    pub fn tables(&self) -> &OutboxTables {
        self.tables_ref()
    }
}

#[cfg(test)]
mod tests {
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
}
