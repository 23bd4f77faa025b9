//! The sea-orm-migration [`Migration`] that creates the outbox tables.

use crate::ddl;
use crate::ddl_migration::{DdlMigration, migration_name};
use crate::tables::OutboxTables;
use outbox_core::OutboxSchema;
use sea_orm_migration::MigrationTrait;

/// Name recorded in the migration table for the default tables.
pub const MIGRATION_NAME: &str = "m20251201_000001_create_outbox_tables";
/// Name recorded for the default parked table.
pub const PARKED_MIGRATION_NAME: &str = "m20261204_000001_create_outbox_parked";

/// Every migration of one outbox, oldest first: [`Migration`] (messages, leases, relays)
/// and [`ParkedMigration`] (parked rows). Append them to your `Migrator`'s list:
///
/// ```
/// use sea_orm_migration::{MigrationTrait, MigratorTrait};
///
/// pub struct Migrator;
///
/// impl MigratorTrait for Migrator {
///     fn migrations() -> Vec<Box<dyn MigrationTrait>> {
///         let mut all: Vec<Box<dyn MigrationTrait>> = vec![/* your own migrations */];
///         all.extend(outbox_seaorm::migrations(outbox_core::OutboxSchema::default()));
///         all
///     }
/// }
/// ```
///
/// A database migrated before parking existed gains the parked table the next time the
/// migrator runs: the first migration is recorded as applied, the second is new.
pub fn migrations(schema: impl Into<OutboxSchema>) -> Vec<Box<dyn MigrationTrait>> {
    let schema = schema.into();
    vec![
        Box::new(Migration::new(schema.clone())),
        Box::new(ParkedMigration::new(schema)),
    ]
}

/// Creates (and on `down`, drops) the parked-rows table and its index: rows set aside
/// after permanent publish failures (see [`outbox_core::park`]). Part of [`migrations`];
/// on its own, add it after [`Migration`]. Its name carries custom table names like
/// [`Migration`]'s does.
pub type ParkedMigration = DdlMigration<ParkedTable>;

/// The tables of a [`ParkedMigration`] (the parked table lives beside the others).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedTable(OutboxTables);

impl Default for ParkedMigration {
    fn default() -> Self {
        ParkedMigration::new(OutboxSchema::default())
    }
}

impl ParkedMigration {
    /// The parked table of `schema`'s outbox.
    pub fn new(schema: impl Into<OutboxSchema>) -> Self {
        let tables = schema.into().tables().clone();
        let name = migration_name(
            PARKED_MIGRATION_NAME,
            tables.is_default(),
            tables.schema(),
            tables.parked(),
        );
        DdlMigration::with_statements(
            name,
            ParkedTable(tables),
            |backend, t| ddl::parked_create_statements(backend, &t.0),
            |backend, t| ddl::parked_drop_statements(backend, &t.0),
        )
    }
}

/// Creates (and on `down`, drops) the messages, leases and relays tables and the messages
/// index. [`migrations`] returns it together with [`ParkedMigration`]; on its own, add it to
/// your `Migrator` in one line:
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
#[path = "migration_tests.rs"]
mod tests;
