//! The two background tasks that connect a [`LocalNotifier`] to a transport.
//!
//! The sender drains the notifier's coalescing outgoing buffer and broadcasts it; commits
//! only ever set bits in that buffer, so a slow or failing transport never reaches the
//! commit path. The listener feeds received ids to
//! [`LocalNotifier::receive_remote`], which never queues them for broadcast again, so
//! hints (our own echoes included) cannot loop between processes.

use std::error::Error;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use outbox_core::driver::LocalNotifier;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tracing::{Instrument, debug, info_span, trace, warn};

use crate::backoff::Backoff;
use crate::transport::NotificationTransport;

/// `spawn_workers` was called outside a tokio runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the notification workers must be spawned inside a tokio runtime")]
pub struct NoRuntime;

/// The running sender and listener. They run until aborted: attach them to the relay
/// ([`RelayHandle::attach`](outbox_core::driver::RelayHandle::attach), which
/// [`spawn_relay_with_transport`](crate::spawn_relay_with_transport) does) or call
/// [`abort`](Self::abort). Aborting drops their transport reference and whatever hints were
/// still buffered; nothing is flushed on the way out.
#[derive(Debug)]
pub struct Workers {
    /// Broadcasts this process's committed buckets.
    pub sender: JoinHandle<()>,
    /// Receives every process's hints and wakes the local relay for its own buckets.
    pub listener: JoinHandle<()>,
}

impl Workers {
    /// Stops both tasks (at their next await point).
    pub fn abort(&self) {
        self.sender.abort();
        self.listener.abort();
    }
}

/// Starts the sender and listener for `notifier` on the current tokio runtime and turns
/// on the notifier's outgoing buffer
/// ([`LocalNotifier::enable_outgoing`]). Failures are logged and retried after `backoff`
/// (doubling per consecutive failure): a failed send drops that batch, a listener that
/// fails or ends subscribes again.
pub fn spawn_workers<T: NotificationTransport>(
    transport: Arc<T>,
    notifier: Arc<LocalNotifier>,
    backoff: Backoff,
) -> Result<Workers, NoRuntime> {
    let runtime = Handle::try_current().map_err(|_| NoRuntime)?;
    Ok(spawn_on(&runtime, transport, notifier, backoff))
}

pub(crate) fn spawn_on<T: NotificationTransport>(
    runtime: &Handle,
    transport: Arc<T>,
    notifier: Arc<LocalNotifier>,
    backoff: Backoff,
) -> Workers {
    notifier.enable_outgoing();
    let sender = run_sender(Arc::clone(&transport), Arc::clone(&notifier), backoff)
        .instrument(info_span!("outbox_notify_sender"));
    let listener =
        run_listener(transport, notifier, backoff).instrument(info_span!("outbox_notify_listener"));
    Workers {
        sender: runtime.spawn(sender),
        listener: runtime.spawn(listener),
    }
}

async fn run_sender<T: NotificationTransport>(
    transport: Arc<T>,
    notifier: Arc<LocalNotifier>,
    backoff: Backoff,
) {
    // One buffer for the task's life: no allocation per batch once it has grown.
    let mut batch = Vec::new();
    let mut failures = 0u32;
    loop {
        batch.clear();
        notifier.next_outgoing(&mut batch).await;
        match transport.publish(&batch).await {
            Ok(()) => {
                failures = 0;
                trace!(ids = batch.len(), "commit hints broadcast");
            }
            Err(error) => {
                failures = failures.saturating_add(1);
                let wait = backoff.after(failures);
                // Dropped, not retried: the hints are advisory and stale by now; commits
                // during the backoff coalesce into the next batch.
                warn!(
                    error = %chain(&error),
                    dropped_ids = batch.len(),
                    consecutive_failures = failures,
                    retry_in_ms = wait.as_millis() as u64,
                    "could not broadcast commit hints; dropped them (polling still finds the rows)"
                );
                tokio::time::sleep(wait).await;
            }
        }
    }
}

async fn run_listener<T: NotificationTransport>(
    transport: Arc<T>,
    notifier: Arc<LocalNotifier>,
    backoff: Backoff,
) {
    let on_hint = move |bucket: i32| notifier.receive_remote(bucket);
    let mut failures = 0u32;
    loop {
        let started = Instant::now();
        let result = transport.listen(&on_hint).await;
        // A subscription that lived longer than the longest backoff was healthy: start
        // the doubling afresh instead of punishing one disconnection a day.
        if started.elapsed() >= backoff.max() {
            failures = 0;
        }
        failures = failures.saturating_add(1);
        let wait = backoff.after(failures);
        match result {
            Ok(()) => warn!(
                consecutive_failures = failures,
                retry_in_ms = wait.as_millis() as u64,
                "the notification subscription ended; subscribing again after a backoff"
            ),
            Err(error) => warn!(
                error = %chain(&error),
                consecutive_failures = failures,
                retry_in_ms = wait.as_millis() as u64,
                "the notification subscription failed; subscribing again after a backoff"
            ),
        }
        tokio::time::sleep(wait).await;
        debug!("subscribing again");
    }
}

/// `error: source: source ...`, since log lines show only the top error otherwise.
fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}
