//! Where the three outbox tables live: schema and table names, validated once.
//!
//! Names reach SQL only as sea-query identifiers, which every backend's query builder
//! quotes (doubling any quote character inside). Validation is a second, independent
//! wall: a name must look like a plain SQL identifier, so an odd or hostile name is
//! refused when the options are built instead of being quoted into something surprising.

use sea_query::{Alias, IntoIden, SchemaName, TableName, TableRef};

/// Default name of the pending-messages table.
pub const DEFAULT_MESSAGES_TABLE: &str = "outbox_messages";
/// Default name of the bucket-lease table.
pub const DEFAULT_LEASES_TABLE: &str = "outbox_leases";
/// Default name of the relay-heartbeat table.
pub const DEFAULT_RELAYS_TABLE: &str = "outbox_relays";

/// Longest accepted identifier, in bytes: PostgreSQL truncates names beyond 63 bytes
/// (MySQL allows 64), so anything longer would silently name a different object there.
pub const MAX_IDENTIFIER_LEN: usize = 63;

/// Suffix of the `(bucket, id)` index name, appended to the messages table name.
const INDEX_SUFFIX: &str = "_bucket_id_idx";

/// Which name a [`TableNameError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRole {
    /// The schema (PostgreSQL schema, MySQL database, SQLite attached database).
    Schema,
    /// The pending-messages table.
    Messages,
    /// The bucket-lease table.
    Leases,
    /// The relay-heartbeat table.
    Relays,
    /// The `(bucket, id)` index, derived from the messages table name.
    Index,
    /// The consumer-side inbox table ([`InboxTable`](crate::InboxTable)).
    Inbox,
    /// The inbox's `processed_at` index, derived from the inbox table name.
    InboxIndex,
}

impl std::fmt::Display for NameRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NameRole::Schema => "schema",
            NameRole::Messages => "messages table",
            NameRole::Leases => "leases table",
            NameRole::Relays => "relays table",
            NameRole::Index => "messages index",
            NameRole::Inbox => "inbox table",
            NameRole::InboxIndex => "inbox index",
        })
    }
}

/// Why a schema or table name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableNameError {
    /// The name is empty.
    #[error("the {role} name is empty")]
    Empty {
        /// Which name.
        role: NameRole,
    },
    /// The name is longer than [`MAX_IDENTIFIER_LEN`] bytes.
    #[error(
        "the {role} name {name:?} is {len} bytes, longer than {MAX_IDENTIFIER_LEN} (PostgreSQL would truncate it)"
    )]
    TooLong {
        /// Which name.
        role: NameRole,
        /// The name as given (or derived, for the index).
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The name does not start with an ASCII letter or `_`.
    #[error("the {role} name {name:?} must start with an ASCII letter or '_'")]
    BadStart {
        /// Which name.
        role: NameRole,
        /// The name as given.
        name: String,
    },
    /// The name contains something other than ASCII letters, digits and `_`.
    #[error(
        "the {role} name {name:?} contains {ch:?}; only ASCII letters, digits and '_' are allowed"
    )]
    InvalidChar {
        /// Which name.
        role: NameRole,
        /// The name as given.
        name: String,
        /// The first offending character.
        ch: char,
    },
    /// Two of the three tables got the same name.
    #[error("the {first} and the {second} are both named {name:?}")]
    Duplicate {
        /// The first role with that name.
        first: NameRole,
        /// The second role with that name.
        second: NameRole,
        /// The shared name.
        name: String,
    },
}

/// Schema and table names of one outbox, validated at construction.
///
/// Every property is optional; [`OutboxTables::default`] gives `outbox_messages`,
/// `outbox_leases` and `outbox_relays` in the connection's default schema.
///
/// ```
/// use outbox_seaorm::OutboxTables;
///
/// let tables = OutboxTables::builder()
///     .schema("messaging")
///     .messages("orders_outbox")
///     .leases("orders_outbox_leases")
///     .relays("orders_outbox_relays")
///     .build()?;
/// assert_eq!(tables.messages_index(), "orders_outbox_bucket_id_idx");
///
/// assert!(OutboxTables::builder().messages("x; DROP TABLE users").build().is_err());
/// # Ok::<(), outbox_seaorm::TableNameError>(())
/// ```
///
/// Names are always quoted in SQL, so they keep their case: `Orders` and `orders` are
/// different tables on PostgreSQL. Lowercase names spare everyone the quoting in
/// hand-written queries.
///
/// What "schema" means depends on the backend: a schema on PostgreSQL (the migration
/// creates it when missing), a database on MySQL/MariaDB, an attached database on SQLite
/// (both must exist already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxTables {
    schema: Option<String>,
    messages: String,
    leases: String,
    relays: String,
    messages_index: String,
}

impl Default for OutboxTables {
    fn default() -> Self {
        OutboxTables {
            schema: None,
            messages: DEFAULT_MESSAGES_TABLE.to_owned(),
            leases: DEFAULT_LEASES_TABLE.to_owned(),
            relays: DEFAULT_RELAYS_TABLE.to_owned(),
            messages_index: format!("{DEFAULT_MESSAGES_TABLE}{INDEX_SUFFIX}"),
        }
    }
}

impl OutboxTables {
    /// Starts from the defaults.
    pub fn builder() -> OutboxTablesBuilder {
        OutboxTablesBuilder::default()
    }

    /// The schema, when one was set.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// The pending-messages table name (unqualified).
    pub fn messages(&self) -> &str {
        &self.messages
    }

    /// The bucket-lease table name (unqualified).
    pub fn leases(&self) -> &str {
        &self.leases
    }

    /// The relay-heartbeat table name (unqualified).
    pub fn relays(&self) -> &str {
        &self.relays
    }

    /// Name of the `(bucket, id)` index: the messages table name plus `_bucket_id_idx`.
    pub fn messages_index(&self) -> &str {
        &self.messages_index
    }

    /// Whether these are the default names in the default schema.
    pub fn is_default(&self) -> bool {
        *self == OutboxTables::default()
    }

    /// The messages table as a sea-query table reference (schema-qualified when set),
    /// for queries of your own against custom names.
    pub fn messages_ref(&self) -> TableRef {
        self.table_ref(&self.messages)
    }

    /// The leases table as a sea-query table reference.
    pub fn leases_ref(&self) -> TableRef {
        self.table_ref(&self.leases)
    }

    /// The relays table as a sea-query table reference.
    pub fn relays_ref(&self) -> TableRef {
        self.table_ref(&self.relays)
    }

    pub(crate) fn messages_name(&self) -> TableName {
        self.table_name(&self.messages)
    }

    pub(crate) fn leases_name(&self) -> TableName {
        self.table_name(&self.leases)
    }

    pub(crate) fn relays_name(&self) -> TableName {
        self.table_name(&self.relays)
    }

    fn table_ref(&self, table: &str) -> TableRef {
        TableRef::Table(self.table_name(table), None)
    }

    fn table_name(&self, table: &str) -> TableName {
        qualified_name(self.schema.as_deref(), table)
    }
}

/// `schema.table` (or `table`) as a sea-query name. `Alias` renders as an owned
/// identifier, which the query builders always quote and escape.
pub(crate) fn qualified_name(schema: Option<&str>, table: &str) -> TableName {
    let schema = schema.map(|s| SchemaName(None, Alias::new(s).into_iden()));
    TableName(schema, Alias::new(table).into_iden())
}

/// Builder for [`OutboxTables`]; nothing is checked until [`build`](Self::build).
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct OutboxTablesBuilder {
    schema: Option<String>,
    messages: String,
    leases: String,
    relays: String,
}

impl Default for OutboxTablesBuilder {
    fn default() -> Self {
        OutboxTablesBuilder {
            schema: None,
            messages: DEFAULT_MESSAGES_TABLE.to_owned(),
            leases: DEFAULT_LEASES_TABLE.to_owned(),
            relays: DEFAULT_RELAYS_TABLE.to_owned(),
        }
    }
}

impl OutboxTablesBuilder {
    /// Puts the three tables into this schema. Default: the connection's default schema.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Names the pending-messages table. Default `outbox_messages`.
    pub fn messages(mut self, name: impl Into<String>) -> Self {
        self.messages = name.into();
        self
    }

    /// Names the bucket-lease table. Default `outbox_leases`.
    pub fn leases(mut self, name: impl Into<String>) -> Self {
        self.leases = name.into();
        self
    }

    /// Names the relay-heartbeat table. Default `outbox_relays`.
    pub fn relays(mut self, name: impl Into<String>) -> Self {
        self.relays = name.into();
        self
    }

    /// Validates every name and returns the tables.
    pub fn build(self) -> Result<OutboxTables, TableNameError> {
        if let Some(schema) = &self.schema {
            check_identifier(NameRole::Schema, schema)?;
        }
        let named = [
            (NameRole::Messages, &self.messages),
            (NameRole::Leases, &self.leases),
            (NameRole::Relays, &self.relays),
        ];
        for (role, name) in named {
            check_identifier(role, name)?;
        }
        for (i, (first, a)) in named.iter().enumerate() {
            if let Some((second, _)) = named.iter().skip(i + 1).find(|(_, b)| *b == *a) {
                return Err(TableNameError::Duplicate {
                    first: *first,
                    second: *second,
                    name: (*a).clone(),
                });
            }
        }
        let messages_index = format!("{}{INDEX_SUFFIX}", self.messages);
        check_identifier(NameRole::Index, &messages_index)?;
        Ok(OutboxTables {
            schema: self.schema,
            messages: self.messages,
            leases: self.leases,
            relays: self.relays,
            messages_index,
        })
    }
}

/// A plain SQL identifier: `[A-Za-z_][A-Za-z0-9_]*`, at most [`MAX_IDENTIFIER_LEN`] bytes.
pub(crate) fn check_identifier(role: NameRole, name: &str) -> Result<(), TableNameError> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Err(TableNameError::Empty { role });
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Err(TableNameError::BadStart {
            role,
            name: name.to_owned(),
        });
    }
    if let Some(ch) = chars.find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Err(TableNameError::InvalidChar {
            role,
            name: name.to_owned(),
            ch,
        });
    }
    if name.len() > MAX_IDENTIFIER_LEN {
        return Err(TableNameError::TooLong {
            role,
            name: name.to_owned(),
            len: name.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_query::{Asterisk, MysqlQueryBuilder, PostgresQueryBuilder, Query, SqliteQueryBuilder};

    #[test]
    fn defaults() {
        let t = OutboxTables::default();
        assert_eq!(OutboxTables::builder().build().unwrap(), t);
        assert!(t.is_default());
        assert_eq!(
            (t.schema(), t.messages(), t.leases(), t.relays()),
            (None, "outbox_messages", "outbox_leases", "outbox_relays")
        );
        assert_eq!(t.messages_index(), "outbox_messages_bucket_id_idx");
    }

    #[test]
    fn refusals_name_the_culprit() {
        let err = |b: OutboxTablesBuilder| b.build().unwrap_err();
        assert_eq!(
            err(OutboxTables::builder().messages("")),
            TableNameError::Empty {
                role: NameRole::Messages
            }
        );
        assert_eq!(
            err(OutboxTables::builder().schema("1abc")),
            TableNameError::BadStart {
                role: NameRole::Schema,
                name: "1abc".into()
            }
        );
        for hostile in [
            "t\"; DROP TABLE users; --",
            "t`x",
            "a.b",
            "a b",
            "tünïcode",
            "t\0",
        ] {
            let e = err(OutboxTables::builder().leases(hostile));
            assert!(
                matches!(
                    e,
                    TableNameError::InvalidChar {
                        role: NameRole::Leases,
                        ..
                    }
                ),
                "{hostile:?}: {e:?}"
            );
            assert!(e.to_string().contains("leases table"), "{e}");
        }
        let long = "a".repeat(64);
        assert!(matches!(
            err(OutboxTables::builder().relays(long.clone())),
            TableNameError::TooLong { len: 64, .. }
        ));
        // 63 bytes is fine for the leases table but not for the messages table, whose
        // index name would be longer.
        let max = "b".repeat(63);
        assert!(OutboxTables::builder().leases(max.clone()).build().is_ok());
        assert!(matches!(
            err(OutboxTables::builder().messages(max)),
            TableNameError::TooLong {
                role: NameRole::Index,
                ..
            }
        ));
        assert_eq!(
            err(OutboxTables::builder().leases("x").relays("x")),
            TableNameError::Duplicate {
                first: NameRole::Leases,
                second: NameRole::Relays,
                name: "x".into()
            }
        );
    }

    #[test]
    fn names_are_always_quoted_and_qualified() {
        let t = OutboxTables::builder()
            .schema("Messaging")
            .messages("Orders_Outbox")
            .build()
            .unwrap();
        let q = Query::select()
            .column(Asterisk)
            .from(t.messages_ref())
            .to_owned();
        assert_eq!(
            q.to_string(PostgresQueryBuilder),
            r#"SELECT * FROM "Messaging"."Orders_Outbox""#
        );
        assert_eq!(
            q.to_string(MysqlQueryBuilder),
            "SELECT * FROM `Messaging`.`Orders_Outbox`"
        );
        assert_eq!(
            q.to_string(SqliteQueryBuilder),
            r#"SELECT * FROM "Messaging"."Orders_Outbox""#
        );
        let plain = Query::select()
            .column(Asterisk)
            .from(OutboxTables::default().leases_ref())
            .to_owned();
        assert_eq!(
            plain.to_string(PostgresQueryBuilder),
            r#"SELECT * FROM "outbox_leases""#
        );
    }
}
