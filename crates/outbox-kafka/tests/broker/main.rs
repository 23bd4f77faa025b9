//! End-to-end tests of the Kafka publisher against the real broker (Tansu, started by
//! `cargo xtask test` or `cargo xtask broker start`; `OUTBOX_TEST_BROKERS` overrides the
//! address). They fail, never skip, when the broker is missing.
//!
//! One test binary with modules, to keep link time down.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod classification;
mod coalescing;
mod delivery;
mod faults;
mod ordering;
mod relay;
mod restart;
mod security;
