//! A fault-injection harness: relays as separate OS processes against PostgreSQL and a
//! Kafka-compatible broker, a writer enqueuing keyed records continuously, and a checker
//! that reads the whole topic at the end.
//!
//! | piece | what it does |
//! |---|---|
//! | [`FaultEnv`] | one scenario's own tables (unique names) on PostgreSQL and its own topic; queries on leases, backlog and the relays' database sessions |
//! | [`RelayProcess`] | one `outbox-relay` process: signals (`kill -9`, SIGSTOP, SIGCONT, SIGTERM), `/metrics`, its log; killed when dropped |
//! | [`Writer`] | a tokio task enqueuing `(key, seq)` records in transactions at a steady rate, remembering a record only once its commit succeeded |
//! | [`checker`] | reads the topic back and checks no loss, per-key order of first deliveries, message ids, duplicates |
//! | [`Scenario`] | what every scenario repeats: its deadline, relays and writer on one bucket count, the fair lease split, draining and checking the topic |
//!
//! Everything has a deadline ([`eventually`] polls a condition until one), so a hung
//! scenario fails instead of hanging.
//!
//! This module only declares the pieces and re-exports them. They import each other
//! directly and one way: `poll` at the bottom, `env` on it, `relay` and `writer` on
//! `env`, `checker` on `writer`'s report, and `scenario` on top of all of them.

pub mod checker;
mod env;
mod poll;
mod relay;
mod scenario;
mod writer;

pub use env::FaultEnv;
pub use poll::eventually;
pub use relay::{RelayProcess, RelaySpec};
pub use scenario::{Scenario, acknowledged, await_acknowledged, log_tails, run_within};
/// Message ids, for tests whose crate does not depend on `uuid` itself.
pub use uuid::Uuid;
pub use writer::{Committed, Writer, WriterReport};
