//! Where the inbox lives: schema and table name, validated once with the same rules as
//! the outbox tables.

use sea_query::{TableName, TableRef};

use crate::tables::{NameRole, TableNameError, check_identifier, qualified_name};

/// Default name of the inbox table.
pub const DEFAULT_INBOX_TABLE: &str = "outbox_inbox";

/// Suffix of the `processed_at` index name, appended to the inbox table name.
const INDEX_SUFFIX: &str = "_processed_at_idx";

/// Schema and name of one inbox table, validated at construction.
///
/// [`InboxTable::default`] is `outbox_inbox` in the connection's default schema. Names
/// follow the rules of [`OutboxTables`](crate::OutboxTables): plain identifiers (ASCII
/// letters, digits, `_`, at most 63 bytes, the derived index name included), always
/// quoted.
///
/// ```
/// use outbox_seaorm::InboxTable;
///
/// let inbox = InboxTable::builder().schema("billing").table("billing_inbox").build()?;
/// assert_eq!(inbox.processed_at_index(), "billing_inbox_processed_at_idx");
/// assert!(InboxTable::builder().table("inbox; DROP TABLE users").build().is_err());
/// # Ok::<(), outbox_seaorm::TableNameError>(())
/// ```
///
/// One table serves any number of consumers (the consumer name is part of the key); a
/// table per service or per schema is a deployment choice, not a requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxTable {
    schema: Option<String>,
    table: String,
    index: String,
}

impl Default for InboxTable {
    fn default() -> Self {
        InboxTable {
            schema: None,
            table: DEFAULT_INBOX_TABLE.to_owned(),
            index: format!("{DEFAULT_INBOX_TABLE}{INDEX_SUFFIX}"),
        }
    }
}

impl InboxTable {
    /// Starts from the defaults.
    pub fn builder() -> InboxTableBuilder {
        InboxTableBuilder::default()
    }

    /// The schema, when one was set.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// The table name (unqualified).
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Name of the `processed_at` index: the table name plus `_processed_at_idx`.
    pub fn processed_at_index(&self) -> &str {
        &self.index
    }

    /// Whether this is the default name in the default schema.
    pub fn is_default(&self) -> bool {
        *self == InboxTable::default()
    }

    /// The table as a sea-query table reference (schema-qualified when set), for queries
    /// of your own.
    pub fn table_ref(&self) -> TableRef {
        TableRef::Table(self.name(), None)
    }

    pub(crate) fn name(&self) -> TableName {
        qualified_name(self.schema.as_deref(), &self.table)
    }
}

/// Builder for [`InboxTable`]; nothing is checked until [`build`](Self::build).
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct InboxTableBuilder {
    schema: Option<String>,
    table: String,
}

impl Default for InboxTableBuilder {
    fn default() -> Self {
        InboxTableBuilder {
            schema: None,
            table: DEFAULT_INBOX_TABLE.to_owned(),
        }
    }
}

impl InboxTableBuilder {
    /// Puts the table into this schema. Default: the connection's default schema.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Names the table. Default `outbox_inbox`.
    pub fn table(mut self, name: impl Into<String>) -> Self {
        self.table = name.into();
        self
    }

    /// Validates the names and returns the table.
    pub fn build(self) -> Result<InboxTable, TableNameError> {
        if let Some(schema) = &self.schema {
            check_identifier(NameRole::Schema, schema)?;
        }
        check_identifier(NameRole::Inbox, &self.table)?;
        let index = format!("{}{INDEX_SUFFIX}", self.table);
        check_identifier(NameRole::InboxIndex, &index)?;
        Ok(InboxTable {
            schema: self.schema,
            table: self.table,
            index,
        })
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
