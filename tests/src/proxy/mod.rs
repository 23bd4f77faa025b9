//! A TCP proxy owned by the tests, for fault injection between a client and a service.
//!
//! [`Proxy::start`] forwards bytes both ways untouched: enough for any protocol (a
//! database connection, say) when a test needs to [cut](Proxy::cut_connections) live
//! connections or [refuse](Proxy::set_refusing) new ones.
//!
//! [`Proxy::start_kafka`] understands Kafka's framing (a 4-byte size, then a request
//! header with api key, version and correlation id). It
//! - rewrites Metadata responses so that every broker is advertised at the proxy's own
//!   address, keeping the client's later connections on the proxy too (meant for the
//!   single-broker test clusters: every broker maps to the one upstream);
//! - applies [`Fault`]s to the next requests of an api key: drop the response after the
//!   broker handled the request (with or without closing the connection), or answer a
//!   Produce request with an error code without forwarding it at all.
//!
//! Metadata rewriting covers every version (classic and flexible encodings); injected
//! Produce errors cover the classic versions 3–8, which the clients under test use.
//!
//! This module only declares the pieces and re-exports the public ones. They import each
//! other one way: `fault` (what to do to requests, and the queue the handle and the
//! connections share) and `wire` (the byte cursor) at the bottom; `metadata` and
//! `produce` (the two messages the proxy parses) on `wire`; `connection` (one client's
//! pumps) on all of them; [`Proxy`] (`handle`) on `fault` and `connection`.

mod connection;
mod fault;
mod handle;
mod metadata;
mod produce;
mod wire;

pub use fault::{Fault, METADATA, PRODUCE};
pub use handle::Proxy;
