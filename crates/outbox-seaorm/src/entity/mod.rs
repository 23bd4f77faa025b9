//! sea-orm entities for the outbox tables and the opt-in inbox, mapped to the default
//! names.
//!
//! Use them like any other entity (`message::Entity::find()`, `ActiveModel`s) when the
//! tables have their default names in the connection's default schema; on PostgreSQL a
//! `search_path` that points at a custom schema works too. Tables with custom names are
//! reached through [`OutboxTables`](crate::OutboxTables): sea-orm entities carry a
//! `&'static str` table name, so this crate's own queries are built with sea-query and
//! dynamic identifiers, and only borrow the entities' column names and row types.
//!
//! | entity | table | one row per |
//! |---|---|---|
//! | [`message`] | `outbox_messages` | pending record, deleted once the broker acknowledged it |
//! | [`lease`] | `outbox_leases` | bucket: which relay may publish it, and until when |
//! | [`relay`] | `outbox_relays` | relay: its last heartbeat |
//! | [`parked`] | `outbox_parked` | row set aside after permanent publish failures, or held behind one (only with [`ParkedMigration`](crate::ParkedMigration)) |
//! | [`inbox`] | `outbox_inbox` | message a consumer processed (only with [`InboxMigration`](crate::InboxMigration)) |
//!
//! Lease expiry and heartbeats are `BIGINT` milliseconds since the Unix epoch (UTC), the
//! unit of [`outbox_core::Timestamp`]. An integer compares the same way on every
//! backend, with no time-zone or precision rules in the way; to read one during an
//! incident use `to_timestamp(expires_at_ms / 1000.0)` on PostgreSQL,
//! `FROM_UNIXTIME(expires_at_ms / 1000)` on MySQL/MariaDB, or
//! `datetime(expires_at_ms / 1000, 'unixepoch')` on SQLite.

pub mod inbox;
pub mod lease;
pub mod message;
pub mod parked;
pub mod relay;
