//! outbox-seaorm against real PostgreSQL, MariaDB/MySQL and SQLite.
//!
//! Each test runs once per database (`<test>::postgres`, `::mysql`, `::sqlite`) on
//! uniquely named tables, so nextest's parallel processes can share the servers; a
//! missing server fails the test, never skips it.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod bad_input;
mod bulk_enqueue;
mod competing;
mod contract;
mod cursor;
mod cursor_checked;
mod cursor_newer_xid;
mod external_writer;
mod inbox;
mod inbox_concurrency;
mod late_commit;
mod lease_round_trips;
mod migrations;
mod misconfigured;
mod parking;
mod relay_e2e;
mod seeding_retry;
mod sqlite_connect;
mod status;
mod transactions;
