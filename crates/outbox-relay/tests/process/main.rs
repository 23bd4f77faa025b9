//! The `outbox-relay` binary as an operator meets it in its first hour: real processes
//! against real services. `help` reads `--help`, `logs` the log lines of default, text
//! and JSON runs, `probes` the endpoints while the database or the broker is missing and
//! after it comes up (or goes away again), `notify` the commit-notification transports,
//! `status` the operator's view of the relays, leases and rows against PostgreSQL,
//! `kafka_security` SASL/SCRAM and ACLs on a private Apache Kafka.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod help;
mod kafka_security;
mod logs;
mod notify;
mod probes;
mod status;
