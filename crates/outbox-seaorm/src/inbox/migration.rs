//! The opt-in sea-orm-migration migration for the inbox table.

use sea_orm::{ConnectionTrait, DbErr};
use sea_orm_migration::{MigrationName, MigrationTrait, SchemaManager};

use crate::backend::Backend;
use crate::ddl;
use crate::inbox::InboxTable;

/// Name recorded in the migration table for the default inbox table.
pub const INBOX_MIGRATION_NAME: &str = "m20251201_000002_create_outbox_inbox";

/// Creates (and on `down`, drops) the inbox table and its `processed_at` index.
/// Separate from [`Migration`](crate::Migration): a service that only produces needs no
/// inbox, one that only consumes needs no outbox tables.
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
///             Box::new(outbox_seaorm::InboxMigration::default()),
///         ]
///     }
/// }
/// ```
///
/// With a custom [`InboxTable`], the migration name carries the schema and table
/// (`m20251201_000002_create_outbox_inbox_billing_billing_inbox`), so several inboxes fit
/// in one `Migrator`. The statements are [`ddl::inbox_create_statements`]; on
/// PostgreSQL a custom schema is created when missing.
#[derive(Debug, Clone)]
pub struct InboxMigration {
    table: InboxTable,
    name: String,
}

impl Default for InboxMigration {
    fn default() -> Self {
        InboxMigration::new(InboxTable::default())
    }
}

impl InboxMigration {
    /// The migration for this table.
    pub fn new(table: InboxTable) -> Self {
        let name = if table.is_default() {
            INBOX_MIGRATION_NAME.to_owned()
        } else {
            let schema = table.schema().map(|s| format!("{s}_")).unwrap_or_default();
            format!("{INBOX_MIGRATION_NAME}_{schema}{}", table.table())
        };
        InboxMigration { table, name }
    }

    /// The table it creates.
    pub fn table(&self) -> &InboxTable {
        &self.table
    }
}

impl MigrationName for InboxMigration {
    fn name(&self) -> &str {
        &self.name
    }
}

#[async_trait::async_trait]
impl MigrationTrait for InboxMigration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = backend(manager)?;
        for sql in ddl::inbox_create_statements(backend, &self.table) {
            manager.get_connection().execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = backend(manager)?;
        for sql in ddl::inbox_drop_statements(backend, &self.table) {
            manager.get_connection().execute_unprepared(&sql).await?;
        }
        Ok(())
    }
}

fn backend(manager: &SchemaManager) -> Result<Backend, DbErr> {
    Backend::try_from(manager.get_database_backend()).map_err(|e| DbErr::Migration(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
