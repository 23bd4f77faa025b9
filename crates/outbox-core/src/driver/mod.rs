//! The thin tokio shell around [`RelayMachine`](crate::RelayMachine): executes its commands against a
//! store and a publisher, sleeps until its deadlines, and feeds it commit hints.
//!
//! ```no_run
//! # async fn demo(store: outbox_core::testing::MemoryStore, publisher: outbox_core::testing::MemoryPublisher) -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use outbox_core::{RelayOptions, driver::Relay};
//!
//! let relay = Relay::builder(store, publisher)
//!     .options(RelayOptions::builder().build()?)
//!     .spawn()?;
//! // The store's writer, already bound: each commit through it wakes this relay.
//! let writer = relay.outbox().clone();
//! relay.ready().await?; // first lease acquisition done
//! // ... serve until Ctrl-C, then finish the in-flight work (10 s at most) and stop:
//! relay
//!     .stop_on(async { let _ = tokio::signal::ctrl_c().await; }, Duration::from_secs(10))
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! [`Relay::builder`] is the one call to start with: options (defaults when omitted, with
//! the store's schema), companions (`outbox-notify` adds a transport through one), and a
//! handle whose [`outbox`](RelayHandle::outbox) is the store's writer bound to the relay
//! (stores implementing [`BindWriter`](crate::BindWriter)). [`Relay::spawn`] starts a relay
//! without a writer, for any store. The handle's [`RelayState`] is awaitable:
//! [`ready`](RelayHandle::ready), [`drained`](RelayHandle::drained),
//! [`stop_on`](RelayHandle::stop_on).
//!
//! One job per file: `builder` configures a relay, `clock` reads the wall and monotonic clocks, `handle` spawns the relay and controls it, `state` holds its awaitable state, `run_loop` feeds the
//! machine its inputs and sleeps until its deadlines, `execute` turns commands into
//! store and publisher calls, `event_log` turns the machine's events into logs and
//! metrics, and `sampler` runs the backlog sampler beside the relay.

mod builder;
mod clock;
mod event_log;
mod execute;
mod handle;
mod local_notifier;
mod run_loop;
mod sampler;
mod state;

pub use builder::{CompanionContext, RelayBuilder};
pub use handle::{Relay, RelayHandle};
pub use local_notifier::LocalNotifier;
pub use state::{RelayState, WaitError};

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
    /// [`Relay::builder`] was given options whose schema is not the store's
    /// ([`BindWriter::writer_schema`](crate::BindWriter::writer_schema)): rows bucketed
    /// with one bucket count and read with another would never be published. Omit the
    /// options' schema (leave `.options` out, or build them with the store's schema).
    #[error(
        "the relay options' schema differs from the store's schema; give both the same OutboxSchema"
    )]
    SchemaMismatch,
    /// The relay task panicked (a bug); nothing was deleted past the panic.
    #[error("the relay task panicked: {0}")]
    Panicked(String),
}
