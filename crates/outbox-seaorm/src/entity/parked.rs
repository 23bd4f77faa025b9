//! `outbox_parked`: rows set aside because they can never be published as they are, and
//! the rows of their keys held behind them (see [`outbox_core::park`]).

use sea_orm::entity::prelude::*;

/// One parked row: the pending row as it was, plus why and when it was parked.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "outbox_parked")]
pub struct Model {
    /// The row's original id in the messages table, which a requeue restores.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: i64,
    /// Stable message id.
    pub message_id: Uuid,
    /// Ordering bucket.
    pub bucket: i32,
    /// Destination topic.
    #[sea_orm(column_type = "String(StringLen::N(249))")]
    pub topic: String,
    /// Serialized key.
    #[sea_orm(column_type = "Blob", nullable)]
    pub key: Option<Vec<u8>>,
    /// Serialized value.
    #[sea_orm(column_type = "Blob", nullable)]
    pub value: Option<Vec<u8>>,
    /// Headers in the versioned encoding (an operator may repair them here).
    #[sea_orm(column_type = "Blob", nullable)]
    pub headers: Option<Vec<u8>>,
    /// Explicit partition.
    pub partition: Option<i32>,
    /// When the writer created the message (same type as in the messages table).
    pub created_at: DateTimeWithTimeZone,
    /// The last publish error of a row parked for its own failures; `None` for a row held
    /// behind another.
    #[sea_orm(column_type = "Text", nullable)]
    pub error: Option<String>,
    /// Permanent failures counted before it was parked (0 for a held row).
    pub attempts: i32,
    /// First and last of those failures, milliseconds since the Unix epoch (UTC).
    pub first_failed_at_ms: Option<i64>,
    /// See `first_failed_at_ms`.
    pub last_failed_at_ms: Option<i64>,
    /// For a row held behind another: the id of the parked row it waits behind.
    pub held_behind: Option<i64>,
    /// When it was parked, milliseconds since the Unix epoch (UTC, the parking relay's
    /// clock).
    pub parked_at_ms: i64,
}

/// The outbox tables have no foreign keys.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Every column, in declaration order.
pub const COLUMNS: [Column; 15] = [
    Column::Id,
    Column::MessageId,
    Column::Bucket,
    Column::Topic,
    Column::Key,
    Column::Value,
    Column::Headers,
    Column::Partition,
    Column::CreatedAt,
    Column::Error,
    Column::Attempts,
    Column::FirstFailedAtMs,
    Column::LastFailedAtMs,
    Column::HeldBehind,
    Column::ParkedAtMs,
];

/// The columns copied from the messages table, in the order of
/// [`message::COLUMNS`](super::message::COLUMNS).
pub const MESSAGE_COLUMNS: [Column; 9] = [
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

#[cfg(test)]
#[path = "parked_tests.rs"]
mod tests;
