//! The entry point, [`Relay`]: `Relay::builder` (options, companion tasks and the
//! writer, in one chain) and its shortcut `Relay::spawn`.

use std::fmt;
use std::sync::Arc;

use tokio::task::JoinHandle;

use super::companion::{Companion, CompanionContext};
use super::error::RelayError;
use super::handle::RelayHandle;
use super::spawn::start;
use crate::notifier::CommitNotifier;
use crate::options::RelayOptions;
use crate::publisher::Publisher;
use crate::store::OutboxStore;
use crate::writer::BindWriter;

/// Entry point: spawns relays ([`Relay::builder`], or [`Relay::spawn`]).
#[derive(Debug, Clone, Copy)]
pub struct Relay;

/// Configures a relay before it starts. From [`Relay::builder`]; nothing runs until
/// [`spawn`](Self::spawn).
#[must_use = "a relay builder does nothing until `spawn` is called"]
pub struct RelayBuilder<S, P> {
    store: S,
    publisher: P,
    options: Option<RelayOptions>,
    companions: Vec<Companion>,
}

impl<S, P> fmt::Debug for RelayBuilder<S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelayBuilder")
            .field("options", &self.options)
            .field("companions", &self.companions.len())
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// Starts configuring a relay on `store` and `publisher`:
    ///
    /// ```no_run
    /// # async fn demo(store: outbox_core::testing::MemoryStore, publisher: outbox_core::testing::MemoryPublisher) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use outbox_core::{RelayOptions, driver::Relay};
    ///
    /// let relay = Relay::builder(store, publisher)
    ///     .options(RelayOptions::builder().poll_interval(Duration::from_millis(500)).build()?)
    ///     .spawn()?;
    /// let writer = relay.outbox().clone(); // already wakes this relay after commits
    /// relay.ready().await?;
    /// relay.stop(Duration::from_secs(10)).await?;
    /// # Ok(()) }
    /// ```
    pub fn builder<S: OutboxStore, P: Publisher>(store: S, publisher: P) -> RelayBuilder<S, P> {
        RelayBuilder {
            store,
            publisher,
            options: None,
            companions: Vec::new(),
        }
    }

    /// Starts a relay on the current tokio runtime; the same as
    /// `Relay::builder(store, publisher).options(options).spawn_unbound()`. Writers take
    /// [`RelayHandle::notifier`]; [`Relay::builder`] hands out a writer already bound.
    ///
    /// Fails at once (no task started) when the store cannot renew leases and
    /// `max_publish_duration` is unset, or outside a runtime.
    pub fn spawn<S: OutboxStore, P: Publisher>(
        store: S,
        publisher: P,
        options: RelayOptions,
    ) -> Result<RelayHandle, RelayError> {
        Relay::builder(store, publisher)
            .options(options)
            .spawn_unbound()
    }
}

impl<S: OutboxStore, P: Publisher> RelayBuilder<S, P> {
    /// The relay's options. Without this call: the defaults, with the store's schema
    /// when it has one ([`BindWriter::writer_schema`]).
    pub fn options(mut self, options: RelayOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// Adds a companion: `start` runs once, after the options were validated and before
    /// the relay's first step, and returns the background tasks it spawned (on
    /// [`CompanionContext::runtime`]). They are tied to the relay: aborted once it has
    /// stopped, through [`RelayHandle::stop`] or [`RelayHandle::join`]. For crates that
    /// feed or drain the relay's notifier, such as `outbox-notify`'s transports.
    pub fn companion<F>(mut self, start: F) -> Self
    where
        F: FnOnce(&CompanionContext<'_>) -> Vec<JoinHandle<()>> + Send + 'static,
    {
        self.companions.push(Box::new(start));
        self
    }

    /// Starts the relay on the current tokio runtime and returns its handle, whose
    /// [`outbox`](RelayHandle::outbox) is the store's writer, already bound to this
    /// relay's notifier.
    ///
    /// Fails at once (no task started) outside a runtime, when the options' schema is not
    /// the store's, when the store cannot renew leases and `max_publish_duration` is
    /// unset, and on the other misconfigurations [`Relay::spawn`] refuses.
    pub fn spawn(self) -> Result<RelayHandle<S::Writer>, RelayError>
    where
        S: BindWriter,
    {
        let store_schema = self.store.writer_schema().cloned();
        let options = match (self.options, store_schema) {
            (Some(options), Some(schema)) if options.schema() != &schema => {
                return Err(RelayError::SchemaMismatch);
            }
            (Some(options), _) => options,
            (None, Some(schema)) => RelayOptions::builder().schema(schema).build()?,
            (None, None) => RelayOptions::builder().build()?,
        };
        let writer_of = |store: &S, notifier: Arc<dyn CommitNotifier>| store.bind_writer(notifier);
        start(
            self.store,
            self.publisher,
            options,
            self.companions,
            writer_of,
        )
    }

    /// Starts the relay without a writer, for stores that do not implement
    /// [`BindWriter`]: writers take [`RelayHandle::notifier`] themselves. This is what
    /// [`Relay::spawn`] does.
    pub fn spawn_unbound(self) -> Result<RelayHandle, RelayError> {
        let options = match self.options {
            Some(options) => options,
            None => RelayOptions::builder().build()?,
        };
        start(
            self.store,
            self.publisher,
            options,
            self.companions,
            |_: &S, _| (),
        )
    }
}
