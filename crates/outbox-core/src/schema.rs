//! What every writer, relay, publisher and consumer of one outbox must agree on, as one
//! validated value: where the tables live, how many ordering buckets there are, and which
//! header carries the message id.
//!
//! Build one [`OutboxSchema`] at startup and hand clones of it to the migration, the
//! store, the writer (`Outbox`), the [`RelayOptions`](crate::RelayOptions), the Kafka
//! publisher and the consumers' inbox. Nothing else configures these three things, so
//! two components of one process cannot disagree about them.

use std::num::NonZeroU32;

use crate::validate::{
    LabelError, MAX_BUCKET_COUNT, NameRole, TableNameError, validate_bucket_count,
    validate_header_name, validate_identifier,
};
use crate::wire_size::{DEFAULT_MAX_REQUEST_SIZE, MIN_MAX_REQUEST_SIZE};

/// Default bucket count.
pub const DEFAULT_BUCKET_COUNT: NonZeroU32 = match NonZeroU32::new(8) {
    Some(n) => n,
    None => NonZeroU32::MIN,
};
/// Default header carrying the message id.
pub const DEFAULT_MESSAGE_ID_HEADER: &str = "x-outbox-message-id";
/// Default name of the pending-messages table.
pub const DEFAULT_MESSAGES_TABLE: &str = "outbox_messages";
/// Default name of the bucket-lease table.
pub const DEFAULT_LEASES_TABLE: &str = "outbox_leases";
/// Default name of the relay-heartbeat table.
pub const DEFAULT_RELAYS_TABLE: &str = "outbox_relays";
/// Default name of the table of parked rows.
pub const DEFAULT_PARKED_TABLE: &str = "outbox_parked";

/// Suffix of the `(bucket, id)` index name, appended to the messages table name.
const INDEX_SUFFIX: &str = "_bucket_id_idx";

/// A rejected [`OutboxSchema`] setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// `bucket_count` outside `1..=65536`.
    #[error("bucket_count must be between 1 and {MAX_BUCKET_COUNT}, got {0}")]
    BucketCount(u32),
    /// A message-id header name no relay or consumer accepts.
    #[error("message_id_header {0}")]
    MessageIdHeader(LabelError),
    /// A schema or table name that is not a plain SQL identifier.
    #[error(transparent)]
    TableName(#[from] TableNameError),
    /// `max_request_size` outside `1024..=2147483647`.
    #[error(
        "max_request_size must be between {MIN_MAX_REQUEST_SIZE} and 2147483647 bytes, got {0}"
    )]
    MaxRequestSize(usize),
}

/// Schema and table names of one outbox, validated at construction.
///
/// Every property is optional; [`OutboxTables::default`] gives `outbox_messages`,
/// `outbox_leases`, `outbox_relays` and `outbox_parked` in the connection's default schema.
///
/// ```
/// use outbox_core::OutboxTables;
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
/// # Ok::<(), outbox_core::validate::TableNameError>(())
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
    parked: String,
    messages_index: String,
    parked_index: String,
}

impl Default for OutboxTables {
    fn default() -> Self {
        OutboxTables {
            schema: None,
            messages: DEFAULT_MESSAGES_TABLE.to_owned(),
            leases: DEFAULT_LEASES_TABLE.to_owned(),
            relays: DEFAULT_RELAYS_TABLE.to_owned(),
            parked: DEFAULT_PARKED_TABLE.to_owned(),
            messages_index: format!("{DEFAULT_MESSAGES_TABLE}{INDEX_SUFFIX}"),
            parked_index: format!("{DEFAULT_PARKED_TABLE}{INDEX_SUFFIX}"),
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

    /// The parked-rows table name (unqualified): rows set aside after permanent publish
    /// failures, and the rows of their keys held behind them.
    pub fn parked(&self) -> &str {
        &self.parked
    }

    /// Name of the parked table's `(bucket, id)` index: its name plus `_bucket_id_idx`.
    pub fn parked_index(&self) -> &str {
        &self.parked_index
    }

    /// Name of the `(bucket, id)` index: the messages table name plus `_bucket_id_idx`.
    pub fn messages_index(&self) -> &str {
        &self.messages_index
    }

    /// Whether these are the default names in the default schema.
    pub fn is_default(&self) -> bool {
        *self == OutboxTables::default()
    }
}

/// Builder for [`OutboxTables`]; nothing is checked until [`build`](Self::build).
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct OutboxTablesBuilder {
    schema: Option<String>,
    messages: String,
    leases: String,
    relays: String,
    parked: String,
}

impl Default for OutboxTablesBuilder {
    fn default() -> Self {
        OutboxTablesBuilder {
            schema: None,
            messages: DEFAULT_MESSAGES_TABLE.to_owned(),
            leases: DEFAULT_LEASES_TABLE.to_owned(),
            relays: DEFAULT_RELAYS_TABLE.to_owned(),
            parked: DEFAULT_PARKED_TABLE.to_owned(),
        }
    }
}

impl OutboxTablesBuilder {
    /// Puts the tables into this schema. Default: the connection's default schema.
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

    /// Names the parked-rows table. Default `outbox_parked`.
    pub fn parked(mut self, name: impl Into<String>) -> Self {
        self.parked = name.into();
        self
    }

    /// Validates every name and returns the tables.
    pub fn build(self) -> Result<OutboxTables, TableNameError> {
        if let Some(schema) = &self.schema {
            validate_identifier(NameRole::Schema, schema)?;
        }
        let named = [
            (NameRole::Messages, &self.messages),
            (NameRole::Leases, &self.leases),
            (NameRole::Relays, &self.relays),
            (NameRole::Parked, &self.parked),
        ];
        for (role, name) in named {
            validate_identifier(role, name)?;
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
        validate_identifier(NameRole::Index, &messages_index)?;
        let parked_index = format!("{}{INDEX_SUFFIX}", self.parked);
        validate_identifier(NameRole::Index, &parked_index)?;
        Ok(OutboxTables {
            schema: self.schema,
            messages: self.messages,
            leases: self.leases,
            relays: self.relays,
            parked: self.parked,
            messages_index,
            parked_index,
        })
    }
}

/// The settings every writer and relay of one outbox must share, validated once.
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `tables` | [`OutboxTables::default`] | schema and table names |
/// | `bucket_count` | 8 | ordering buckets; the ceiling on draining relays |
/// | `message_id_header` | `x-outbox-message-id` | header stamped with the message id on every record |
/// | `max_request_size` | 1 MiB | the largest produce request; the Kafka publisher sends none larger and writers refuse a record that could not fit one alone (see [`wire_size`](crate::wire_size)) |
///
/// ```
/// use outbox_core::{OutboxSchema, OutboxTables, RelayOptions};
///
/// let schema = OutboxSchema::builder()
///     .tables(OutboxTables::builder().messages("orders_outbox").build()?)
///     .bucket_count(16)
///     .message_id_header("x-order-event-id")
///     .build()?;
/// let options = RelayOptions::builder().schema(schema.clone()).build()?;
/// assert_eq!(options.bucket_count().get(), 16);
/// assert_eq!(options.enqueue_config().schema(), &schema);
///
/// assert!(OutboxSchema::builder().bucket_count(0).build().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxSchema {
    tables: OutboxTables,
    bucket_count: NonZeroU32,
    message_id_header: String,
    max_request_size: usize,
}

impl Default for OutboxSchema {
    /// The default tables, 8 buckets and `x-outbox-message-id`.
    fn default() -> Self {
        OutboxSchema {
            tables: OutboxTables::default(),
            bucket_count: DEFAULT_BUCKET_COUNT,
            message_id_header: DEFAULT_MESSAGE_ID_HEADER.to_owned(),
            max_request_size: DEFAULT_MAX_REQUEST_SIZE,
        }
    }
}

impl OutboxSchema {
    /// Starts from the defaults.
    pub fn builder() -> OutboxSchemaBuilder {
        OutboxSchemaBuilder {
            tables: OutboxTables::default(),
            bucket_count: DEFAULT_BUCKET_COUNT.get(),
            message_id_header: DEFAULT_MESSAGE_ID_HEADER.to_owned(),
            max_request_size: DEFAULT_MAX_REQUEST_SIZE,
        }
    }

    /// Where the tables live.
    pub fn tables(&self) -> &OutboxTables {
        &self.tables
    }

    /// Number of ordering buckets.
    pub fn bucket_count(&self) -> NonZeroU32 {
        self.bucket_count
    }

    /// Name of the header carrying the message id.
    pub fn message_id_header(&self) -> &str {
        &self.message_id_header
    }

    /// The largest produce request, in bytes: the publisher's limit and the writers'
    /// record-size check (see [`wire_size`](crate::wire_size)).
    pub fn max_request_size(&self) -> usize {
        self.max_request_size
    }
}

impl From<OutboxTables> for OutboxSchema {
    /// These tables with the default bucket count and header.
    fn from(tables: OutboxTables) -> Self {
        OutboxSchema {
            tables,
            ..OutboxSchema::default()
        }
    }
}

/// Builder for [`OutboxSchema`]; nothing is checked until [`build`](Self::build).
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct OutboxSchemaBuilder {
    tables: OutboxTables,
    bucket_count: u32,
    message_id_header: String,
    max_request_size: usize,
}

impl OutboxSchemaBuilder {
    /// Where the tables live (validated by their own builder). Default
    /// [`OutboxTables::default`].
    pub fn tables(mut self, tables: OutboxTables) -> Self {
        self.tables = tables;
        self
    }

    /// Number of ordering buckets (`1..=65536`). Default 8.
    pub fn bucket_count(mut self, count: u32) -> Self {
        self.bucket_count = count;
        self
    }

    /// Header name for the message id (1–255 characters, not blank, no control
    /// characters). Default `x-outbox-message-id`.
    pub fn message_id_header(mut self, name: impl Into<String>) -> Self {
        self.message_id_header = name.into();
        self
    }

    /// The largest produce request (`1024..=2147483647` bytes): the Kafka publisher built
    /// from this schema sends none larger, and writers refuse at enqueue a record that
    /// could not fit one alone. Keep it at or below the brokers' `message.max.bytes`.
    /// Default 1 MiB, Kafka's `max.request.size`.
    pub fn max_request_size(mut self, bytes: usize) -> Self {
        self.max_request_size = bytes;
        self
    }

    /// Validates and returns the schema, or the first violation.
    pub fn build(self) -> Result<OutboxSchema, SchemaError> {
        let bucket_count =
            validate_bucket_count(self.bucket_count).map_err(SchemaError::BucketCount)?;
        validate_header_name(&self.message_id_header).map_err(SchemaError::MessageIdHeader)?;
        if !(MIN_MAX_REQUEST_SIZE..=i32::MAX as usize).contains(&self.max_request_size) {
            return Err(SchemaError::MaxRequestSize(self.max_request_size));
        }
        Ok(OutboxSchema {
            tables: self.tables,
            bucket_count,
            message_id_header: self.message_id_header,
            max_request_size: self.max_request_size,
        })
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
