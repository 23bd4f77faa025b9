//! The thin tokio shell around [`RelayMachine`](crate::RelayMachine): executes its commands against a
//! store and a publisher, sleeps until its deadlines, and feeds it commit hints.
//!
//! ```no_run
//! # async fn demo(store: outbox_core::testing::MemoryStore, publisher: outbox_core::testing::MemoryPublisher) -> Result<(), outbox_core::driver::RelayError> {
//! use std::time::Duration;
//! use outbox_core::{RelayOptions, driver::Relay};
//!
//! let options = RelayOptions::builder().build()?;
//! let relay = Relay::spawn(store, publisher, options)?;
//! // Writers call `relay.notifier().notify_buckets(..)` after each commit.
//! relay.stop(Duration::from_secs(10)).await?;
//! # Ok(()) }
//! ```
//!
//! One job per file: `clock` reads the wall and monotonic clocks, `handle` spawns the relay and controls it, `run_loop` feeds the
//! machine its inputs and sleeps until its deadlines, `execute` turns commands into
//! store and publisher calls, `event_log` turns the machine's events into logs and
//! metrics, and `sampler` runs the backlog sampler beside the relay.

mod clock;
mod event_log;
mod execute;
mod handle;
mod local_notifier;
mod run_loop;
mod sampler;

pub use handle::{Relay, RelayHandle};
pub use local_notifier::LocalNotifier;

use crate::error::Misconfiguration;
use crate::options::OptionsError;

/// Why a relay could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// A misconfiguration that retrying cannot fix.
    #[error(transparent)]
    Misconfigured(#[from] Misconfiguration),
    /// Invalid options.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// `spawn` was called outside a tokio runtime.
    #[error("the relay must be spawned inside a tokio runtime")]
    NoRuntime,
    /// The relay task panicked (a bug); nothing was deleted past the panic.
    #[error("the relay task panicked: {0}")]
    Panicked(String),
}
