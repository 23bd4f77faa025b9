//! `outbox_inbox`: one row per message a consumer has processed (opt-in, see
//! [`Inbox`](crate::Inbox)).

use sea_orm::entity::prelude::*;

/// Longest consumer name, so the longest `consumer` value (in characters).
pub const CONSUMER_MAX_LEN: u32 = 128;

/// One processed message of one consumer.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "outbox_inbox")]
pub struct Model {
    /// The consumer that processed the message (first half of the key).
    #[sea_orm(
        primary_key,
        auto_increment = false,
        column_type = "String(StringLen::N(128))"
    )]
    pub consumer: String,
    /// The message id carried by the record (second half of the key).
    #[sea_orm(primary_key, auto_increment = false)]
    pub message_id: Uuid,
    /// When the consumer's transaction recorded it: `timestamptz` on PostgreSQL,
    /// `DATETIME(6)` holding UTC on MySQL/MariaDB, RFC 3339 text on SQLite.
    pub processed_at: DateTimeWithTimeZone,
}

/// The inbox table has no foreign keys.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
