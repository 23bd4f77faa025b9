//! `outbox_leases`: one row per bucket, the single-writer coordination.

use sea_orm::entity::prelude::*;

/// The lease on one bucket.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "outbox_leases")]
pub struct Model {
    /// The bucket (not generated).
    #[sea_orm(primary_key, auto_increment = false)]
    pub bucket: i32,
    /// Relay id holding the lease; `None` when released or never claimed.
    #[sea_orm(column_type = "String(StringLen::N(128))", nullable)]
    pub owner: Option<String>,
    /// Milliseconds since the Unix epoch (UTC) at which the lease lapses; 0 when released.
    pub expires_at_ms: i64,
}

/// The outbox tables have no foreign keys.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
