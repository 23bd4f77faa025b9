//! `outbox_messages`: pending records, deleted after the broker acknowledged them.

use outbox_core::{OutboxMessage, Timestamp};
use sea_orm::entity::prelude::*;

/// Longest Kafka topic name, so the longest `topic` value.
pub const TOPIC_MAX_LEN: u32 = 249;

/// One pending outbox row.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "outbox_messages")]
pub struct Model {
    /// Auto-increment: submission order within a bucket.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Stable message id, stamped on the Kafka record for deduplication.
    pub message_id: Uuid,
    /// Ordering bucket, computed at enqueue time.
    pub bucket: i32,
    /// Destination topic.
    #[sea_orm(column_type = "String(StringLen::N(249))")]
    pub topic: String,
    /// Serialized key; `None` for a keyless record.
    #[sea_orm(column_type = "Blob", nullable)]
    pub key: Option<Vec<u8>>,
    /// Serialized value; `None` for a tombstone.
    #[sea_orm(column_type = "Blob", nullable)]
    pub value: Option<Vec<u8>>,
    /// Headers in the versioned encoding of `outbox_core::Headers`.
    #[sea_orm(column_type = "Blob", nullable)]
    pub headers: Option<Vec<u8>>,
    /// Explicit partition, bypassing the key partitioner.
    pub partition: Option<i32>,
    /// When the writer created the message. `timestamptz` on PostgreSQL, `DATETIME(6)`
    /// holding UTC on MySQL/MariaDB (which has no offset type), RFC 3339 text on SQLite.
    pub created_at: DateTimeWithTimeZone,
}

/// The outbox tables have no foreign keys.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Every column of the messages table, `id` first: what a fetch reads into a [`Model`].
/// The one list the store, the writers and the benchmark use.
pub const COLUMNS: [Column; 9] = [
    Column::Id,
    Column::MessageId,
    Column::Bucket,
    Column::Topic,
    Column::Key,
    Column::Value,
    Column::Headers,
    Column::Partition,
    Column::CreatedAt,
];

/// The columns a writer sets: all but the auto-increment `id`.
pub const INSERTED_COLUMNS: [Column; 8] = {
    let [_id, inserted @ ..] = COLUMNS;
    inserted
};

impl From<Model> for OutboxMessage {
    fn from(m: Model) -> Self {
        OutboxMessage {
            id: m.id,
            message_id: m.message_id,
            bucket: m.bucket,
            topic: m.topic,
            key: m.key,
            value: m.value,
            headers: m.headers,
            partition: m.partition,
            created_at: Timestamp::from_millis(m.created_at.timestamp_millis()),
            store_ref: None,
        }
    }
}

/// `at` as a UTC date-time, or `None` beyond chrono's range (about ±262,000 years).
pub fn timestamp_to_datetime(at: Timestamp) -> Option<DateTimeWithTimeZone> {
    DateTimeUtc::from_timestamp_millis(at.as_millis()).map(|t| t.fixed_offset())
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
