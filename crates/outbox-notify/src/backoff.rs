//! How long the workers wait after a failure: the core's one exponential backoff,
//! re-exported because this crate's public API (`spawn`) takes it.

pub use outbox_core::backoff::{Backoff, BackoffError};

#[cfg(test)]
#[path = "backoff_tests.rs"]
mod tests;
