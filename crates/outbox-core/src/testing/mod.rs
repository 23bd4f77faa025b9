//! In-memory implementations and the reusable store contract suite.
//!
//! [`MemoryStore`] and [`MemoryPublisher`] follow the [`OutboxStore`](crate::OutboxStore)
//! and [`Publisher`](crate::Publisher) contracts exactly, so tests, examples and the relay
//! simulation exercise the same rules a database and a broker enforce. Both accept
//! injected failures. [`contract`] is the suite every store must pass; it runs here
//! against [`MemoryStore`] and in `outbox-seaorm` against each real database.

pub mod contract;
mod memory_parking;
mod memory_publisher;
mod memory_store;
mod memory_writer;
pub mod park_contract;

pub use memory_publisher::{MemoryPublisher, PublishedRecord, Scripted};
pub use memory_store::{FaultHook, MemoryStore, MemoryTransaction, StoreOp};
pub use memory_writer::MemoryWriter;
