//! Where the outbox tables live, as sea-query names.
//!
//! The names themselves are [`OutboxTables`], part of the [`OutboxSchema`](outbox_core::OutboxSchema)
//! in `outbox-core` and validated there (a plain SQL identifier each, see
//! [`outbox_core::validate::validate_identifier`]). Names reach SQL only as sea-query
//! identifiers, which every backend's query builder quotes (doubling any quote character
//! inside); the validation is a second, independent wall.

use sea_query::{Alias, IntoIden, SchemaName, TableName, TableRef};

pub use outbox_core::schema::{
    DEFAULT_LEASES_TABLE, DEFAULT_MESSAGES_TABLE, DEFAULT_PARKED_TABLE, DEFAULT_RELAYS_TABLE,
    OutboxTables, OutboxTablesBuilder,
};
pub use outbox_core::validate::{MAX_IDENTIFIER_LEN, NameRole, TableNameError};

pub(crate) use outbox_core::validate::validate_identifier as check_identifier;

/// The outbox tables as sea-query names, schema-qualified when a schema is set: for
/// queries of your own against custom names.
///
/// ```
/// use outbox_seaorm::{OutboxTables, SqlNames};
/// use sea_query::{Asterisk, PostgresQueryBuilder, Query};
///
/// let tables = OutboxTables::builder().schema("messaging").build()?;
/// let q = Query::select().column(Asterisk).from(tables.messages_ref()).to_owned();
/// assert_eq!(
///     q.to_string(PostgresQueryBuilder),
///     r#"SELECT * FROM "messaging"."outbox_messages""#
/// );
/// # Ok::<(), outbox_seaorm::TableNameError>(())
/// ```
pub trait SqlNames {
    /// The messages table as a table name.
    fn messages_name(&self) -> TableName;
    /// The leases table as a table name.
    fn leases_name(&self) -> TableName;
    /// The relays table as a table name.
    fn relays_name(&self) -> TableName;
    /// The parked-rows table as a table name.
    fn parked_name(&self) -> TableName;

    /// The messages table as a table reference.
    fn messages_ref(&self) -> TableRef {
        TableRef::Table(self.messages_name(), None)
    }
    /// The leases table as a table reference.
    fn leases_ref(&self) -> TableRef {
        TableRef::Table(self.leases_name(), None)
    }
    /// The relays table as a table reference.
    fn relays_ref(&self) -> TableRef {
        TableRef::Table(self.relays_name(), None)
    }
}

impl SqlNames for OutboxTables {
    fn messages_name(&self) -> TableName {
        qualified_name(self.schema(), self.messages())
    }

    fn leases_name(&self) -> TableName {
        qualified_name(self.schema(), self.leases())
    }

    fn relays_name(&self) -> TableName {
        qualified_name(self.schema(), self.relays())
    }

    fn parked_name(&self) -> TableName {
        qualified_name(self.schema(), self.parked())
    }
}

/// `schema.table` (or `table`) as a sea-query name. `Alias` renders as an owned
/// identifier, which the query builders always quote and escape.
pub(crate) fn qualified_name(schema: Option<&str>, table: &str) -> TableName {
    let schema = schema.map(|s| SchemaName(None, Alias::new(s).into_iden()));
    TableName(schema, Alias::new(table).into_iden())
}

/// The messages table, schema-qualified and quoted. Table names are validated
/// identifiers (ASCII letters, digits, `_`), so the quotes cannot be broken out of.
pub(crate) fn quoted_messages_table(tables: &OutboxTables) -> String {
    match tables.schema() {
        Some(schema) => format!("\"{schema}\".\"{}\"", tables.messages()),
        None => format!("\"{}\"", tables.messages()),
    }
}

#[cfg(test)]
#[path = "tables_tests.rs"]
mod tests;
