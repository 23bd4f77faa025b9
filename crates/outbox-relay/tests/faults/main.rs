//! The fault scenarios, one module each: relays run as separate `outbox-relay` processes
//! against PostgreSQL and a Kafka-compatible broker while a writer commits keyed records,
//! and real faults hit them (`kill -9`, SIGSTOP, terminated database sessions, a broker
//! restart, a misconfigured writer, a rolling relay count, a row that can never be
//! published, lease calls slowed down by a proxy, a database half a second away). The harness is
//! `outbox_tests::faults`; every scenario ends by reading the topic back and checking that
//! nothing committed was lost.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod broker_restart;
mod db_cut;
mod kill;
mod misconfigured;
mod pause;
mod poisoned;
mod restart_default_id;
mod rolling;
mod slow_database;
mod slow_lease;

/// The relay binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_outbox-relay");
