//! One call that starts a relay together with its notification workers.

use std::sync::Arc;

use outbox_core::driver::{Relay, RelayError, RelayHandle};
use outbox_core::{OutboxStore, Publisher, RelayOptions};
use tokio::runtime::Handle;
use tracing::info_span;

use crate::backoff::Backoff;
use crate::transport::NotificationTransport;
use crate::workers::spawn_on;

/// Spawns a relay (as [`Relay::spawn`] does) and the sender and listener for `transport`,
/// tied to it: [`RelayHandle::stop`] and [`RelayHandle::join`] abort the workers once the
/// relay has stopped, which drops the transport and its connections. The workers back off
/// with the relay's own `error_backoff` / `max_error_backoff`.
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
    // Checked first so that a failure cannot leave a relay running without its workers.
    let runtime = Handle::try_current().map_err(|_| RelayError::NoRuntime)?;
    let backoff = Backoff::from_relay_options(&options);
    let mut relay = Relay::spawn(store, publisher, options)?;
    let span = info_span!("outbox_notify", relay_id = %relay.relay_id());
    let workers =
        span.in_scope(|| spawn_on(&runtime, Arc::new(transport), relay.notifier(), backoff));
    relay.attach(workers.sender);
    relay.attach(workers.listener);
    Ok(relay)
}
