//! The one sea-orm-migration implementation behind [`Migration`](crate::Migration) and
//! [`InboxMigration`](crate::InboxMigration): run some tables' DDL statements up, their
//! drop statements down, under a name that tells several outboxes (or inboxes) apart.

use sea_orm::{ConnectionTrait, DbErr};
use sea_orm_migration::{MigrationName, MigrationTrait, SchemaManager};

use crate::backend::Backend;

/// The statements of one set of tables for one backend (the functions of [`crate::ddl`]).
type Statements<T> = fn(Backend, &T) -> Vec<String>;

/// A migration that creates tables `T` from DDL (and on `down`, drops them). Used as
/// [`Migration`](crate::Migration) for the outbox tables and
/// [`InboxMigration`](crate::InboxMigration) for the inbox table; see those for how to add
/// one to a `Migrator`.
#[derive(Debug, Clone)]
pub struct DdlMigration<T> {
    tables: T,
    name: String,
    create: Statements<T>,
    drop: Statements<T>,
}

/// The name recorded for a migration: `base` for the default tables; custom tables append
/// `_<schema>_<table>` (or `_<table>`), so several outboxes (or inboxes) fit in one
/// `Migrator`.
pub(crate) fn migration_name(
    base: &str,
    is_default: bool,
    schema: Option<&str>,
    table: &str,
) -> String {
    if is_default {
        return base.to_owned();
    }
    let schema = schema.map(|s| format!("{s}_")).unwrap_or_default();
    format!("{base}_{schema}{table}")
}

impl<T> DdlMigration<T> {
    /// A migration named `name` that runs `create` up and `drop` down.
    pub(crate) fn with_statements(
        name: String,
        tables: T,
        create: Statements<T>,
        drop: Statements<T>,
    ) -> Self {
        DdlMigration {
            tables,
            name,
            create,
            drop,
        }
    }

    pub(crate) fn tables_ref(&self) -> &T {
        &self.tables
    }

    async fn execute(
        &self,
        manager: &SchemaManager<'_>,
        statements: Statements<T>,
    ) -> Result<(), DbErr> {
        let backend = Backend::try_from(manager.get_database_backend())
            .map_err(|e| DbErr::Migration(e.to_string()))?;
        for sql in statements(backend, &self.tables) {
            manager.get_connection().execute_unprepared(&sql).await?;
        }
        Ok(())
    }
}

impl<T> MigrationName for DdlMigration<T> {
    fn name(&self) -> &str {
        &self.name
    }
}

#[async_trait::async_trait]
impl<T: Send + Sync> MigrationTrait for DdlMigration<T> {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        self.execute(manager, self.create).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        self.execute(manager, self.drop).await
    }
}
