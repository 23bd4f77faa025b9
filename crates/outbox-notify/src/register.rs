//! Starting a relay together with its notification workers: the builder extension and
//! the one-call form.

use std::sync::Arc;

use outbox_core::driver::{Relay, RelayBuilder, RelayError, RelayHandle};
use outbox_core::{OutboxStore, Publisher, RelayOptions};
use tracing::info_span;

use crate::backoff::Backoff;
use crate::transport::NotificationTransport;
use crate::workers::spawn_on;

/// Adds a notification transport to [`Relay::builder`]:
///
/// ```no_run
/// # async fn demo(store: outbox_core::testing::MemoryStore, publisher: outbox_core::testing::MemoryPublisher, transport: outbox_notify::testing::MemoryTransport) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use outbox_core::{RelayOptions, driver::Relay};
/// use outbox_notify::RelayBuilderExt as _;
///
/// let relay = Relay::builder(store, publisher)
///     .options(RelayOptions::builder().build()?)
///     .transport(transport)
///     .spawn()?;
/// relay.stop(Duration::from_secs(10)).await?;
/// # Ok(()) }
/// ```
pub trait RelayBuilderExt: Sized {
    /// Starts the sender and listener for `transport` with the relay, tied to it:
    /// [`RelayHandle::stop`] and [`RelayHandle::join`] abort them once the relay has
    /// stopped, which drops the transport and its connections. They back off with the
    /// relay's own `error_backoff` / `max_error_backoff`. Every bucket committed through
    /// the relay's notifier (the handle's bound writer included) is also broadcast.
    fn transport<T: NotificationTransport>(self, transport: T) -> Self;
}

impl<S: OutboxStore, P: Publisher> RelayBuilderExt for RelayBuilder<S, P> {
    fn transport<T: NotificationTransport>(self, transport: T) -> Self {
        self.companion(move |relay| {
            let backoff = Backoff::from_relay_options(relay.options());
            let span = info_span!("outbox_notify", relay_id = %relay.relay_id());
            let workers = span.in_scope(|| {
                spawn_on(
                    relay.runtime(),
                    Arc::new(transport),
                    relay.notifier(),
                    backoff,
                )
            });
            vec![workers.sender, workers.listener]
        })
    }
}

/// Spawns a relay (as [`Relay::spawn`] does) and the sender and listener for `transport`,
/// tied to it: the same as
/// `Relay::builder(store, publisher).options(options).transport(transport).spawn_unbound()`
/// (see [`RelayBuilderExt::transport`]).
///
/// Writers keep calling [`RelayHandle::notifier`]'s methods after each commit, exactly as
/// without a transport; every committed bucket is now also broadcast.
pub fn spawn_relay_with_transport<S, P, T>(
    store: S,
    publisher: P,
    options: RelayOptions,
    transport: T,
) -> Result<RelayHandle, RelayError>
where
    S: OutboxStore,
    P: Publisher,
    T: NotificationTransport,
{
    Relay::builder(store, publisher)
        .options(options)
        .transport(transport)
        .spawn_unbound()
}
