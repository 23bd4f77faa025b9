//! The sea-orm-migration [`Migration`] that creates the outbox tables.

use sea_orm::{ConnectionTrait, DbErr};
use sea_orm_migration::{MigrationName, MigrationTrait, SchemaManager};

use crate::backend::Backend;
use crate::ddl;
use outbox_core::OutboxSchema;

use crate::tables::OutboxTables;

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
#[derive(Debug, Clone)]
pub struct Migration {
    tables: OutboxTables,
    name: String,
}

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
        let name = if tables.is_default() {
            MIGRATION_NAME.to_owned()
        } else {
            let schema = tables.schema().map(|s| format!("{s}_")).unwrap_or_default();
            format!("{MIGRATION_NAME}_{schema}{}", tables.messages())
        };
        Migration { tables, name }
    }

    /// The tables it creates.
    pub fn tables(&self) -> &OutboxTables {
        &self.tables
    }
}

impl MigrationName for Migration {
    fn name(&self) -> &str {
        &self.name
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = backend(manager)?;
        for sql in ddl::create_statements(backend, &self.tables) {
            manager.get_connection().execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = backend(manager)?;
        for sql in ddl::drop_statements(backend, &self.tables) {
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
