//! sea-orm integration for the transactional outbox.
//!
//! This crate will hold the sea-orm entities and migration for the three outbox tables
//! (messages, leases, relays), the helpers that enqueue a message inside the caller's
//! transaction and notify the local relay after commit, and the `outbox_core::OutboxStore`
//! implementation (leases, heartbeats, batches) for PostgreSQL, MySQL/MariaDB and SQLite.
#![warn(missing_docs)]
