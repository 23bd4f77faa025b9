//! `outbox_relays`: relay heartbeats, which drive the fair split of buckets.

use sea_orm::entity::prelude::*;

/// The last heartbeat of one relay.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "outbox_relays")]
pub struct Model {
    /// The relay id (`RelayOptions::relay_id`, 1–128 characters).
    #[sea_orm(primary_key, auto_increment = false)]
    #[sea_orm(column_type = "String(StringLen::N(128))")]
    pub relay_id: String,
    /// Milliseconds since the Unix epoch (UTC) of the last heartbeat.
    pub last_seen_at_ms: i64,
}

/// The outbox tables have no foreign keys.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
