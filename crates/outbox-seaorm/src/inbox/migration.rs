//! The opt-in sea-orm-migration migration for the inbox table.

use crate::ddl;
use crate::ddl_migration::{DdlMigration, migration_name};
use crate::inbox::InboxTable;

/// Name recorded in the migration table for the default inbox table.
pub const INBOX_MIGRATION_NAME: &str = "m20251201_000002_create_outbox_inbox";

/// Creates (and on `down`, drops) the inbox table and its `processed_at` index.
/// Separate from [`Migration`](crate::Migration): a service that only produces needs no
/// inbox, one that only consumes needs no outbox tables. Added to a `Migrator` the same
/// way: `Box::new(outbox_seaorm::InboxMigration::default())` (the crate docs show a
/// whole `Migrator` with it).
///
/// With a custom [`InboxTable`], the migration name carries the schema and table
/// (`m20251201_000002_create_outbox_inbox_billing_billing_inbox`), so several inboxes fit
/// in one `Migrator`. The statements are [`ddl::inbox_create_statements`]; on
/// PostgreSQL a custom schema is created when missing.
pub type InboxMigration = DdlMigration<InboxTable>;

impl Default for InboxMigration {
    fn default() -> Self {
        InboxMigration::new(InboxTable::default())
    }
}

impl InboxMigration {
    /// The migration for this table.
    pub fn new(table: InboxTable) -> Self {
        let name = migration_name(
            INBOX_MIGRATION_NAME,
            table.is_default(),
            table.schema(),
            table.table(),
        );
        DdlMigration::with_statements(
            name,
            table,
            ddl::inbox_create_statements,
            ddl::inbox_drop_statements,
        )
    }

    /// The table it creates.
    pub fn table(&self) -> &InboxTable {
        self.tables_ref()
    }
}

#[cfg(test)]
#[path = "migration_tests.rs"]
mod tests;
