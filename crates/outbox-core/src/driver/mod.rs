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
//! One job per file, in the order they depend on each other: `builder` holds the entry
//! point [`Relay`] and configures a relay, `spawn` starts it (companions, sampler, loop),
//! `handle` controls it from outside, `run_loop` feeds the machine its inputs and sleeps
//! until its deadlines, `execute` turns commands into store and publisher calls,
//! `event_log` turns the machine's events into logs and metrics, `sampler` runs the
//! backlog sampler beside the relay, and `state` holds its awaitable state. Below them:
//! `companion` (what a companion task is given), `control` (the handle's stop word),
//! `clock` (the wall and monotonic clocks), `local_notifier` and `error`.

mod builder;
mod clock;
mod companion;
mod control;
mod error;
mod event_log;
mod execute;
mod handle;
mod local_notifier;
mod run_loop;
mod sampler;
mod spawn;
mod state;

pub use builder::{Relay, RelayBuilder};
pub use companion::CompanionContext;
pub use error::RelayError;
pub use handle::RelayHandle;
pub use local_notifier::LocalNotifier;
pub use state::{RelayState, WaitError};
