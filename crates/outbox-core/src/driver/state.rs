//! The relay's life as an awaitable value: the driver publishes every transition on a
//! `tokio::sync::watch` channel, and the handle's waits (`ready`, `drained`, `stop_on`)
//! are built on it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::error::RelayError;
use crate::error::StoreError;
use crate::store::{OutboxStore, PendingMetrics};

/// Where a relay is in its life. Moves only forward:
/// `Starting → Ready → Stopping → Stopped`, with `Failed` reachable from every state but
/// `Stopped`, and `Stopping` reachable from `Starting` (stopped before it joined).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RelayState {
    /// Spawned; the first lease acquisition has not completed yet.
    Starting,
    /// The first lease acquisition completed: the heartbeat is in the store and the relay
    /// owns its share of the buckets (possibly none). The same moment
    /// [`RelayHandle::is_ready`](super::RelayHandle::is_ready) turns true.
    Ready,
    /// A stop was asked for: in-flight work finishes (or is abandoned after the grace
    /// period), then leases are handed back.
    Stopping,
    /// The relay ended without error.
    Stopped,
    /// The relay ended with an error (a misconfiguration, or a panic of its task).
    Failed(Arc<RelayError>),
}

impl RelayState {
    /// Whether the relay task has ended (`Stopped` or `Failed`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, RelayState::Stopped | RelayState::Failed(_))
    }
}

/// Why a wait on a relay ended without its condition being met.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum WaitError {
    /// The relay is stopping or stopped, so the condition can no longer be met by it.
    #[error("the relay stopped before the awaited condition was met")]
    Stopped,
    /// The relay failed.
    #[error("the relay failed: {0}")]
    Failed(Arc<RelayError>),
    /// `drained` needs the store's backlog capability (`pending_metrics`), which this
    /// store lacks.
    #[error("the store cannot count its backlog (no backlog_metrics capability)")]
    BacklogUnsupported,
    /// The store's backlog query failed.
    #[error("counting the backlog failed: {0}")]
    Store(Arc<StoreError>),
}

impl WaitError {
    /// The error for a relay found in `state` while it was expected to be running.
    fn ended(state: &RelayState) -> WaitError {
        match state {
            RelayState::Failed(error) => WaitError::Failed(Arc::clone(error)),
            _ => WaitError::Stopped,
        }
    }
}

/// The store's backlog count, type-erased so the handle does not carry the store type.
pub(super) type BacklogProbe = Arc<
    dyn Fn() -> Pin<Box<dyn Future<Output = Result<Option<PendingMetrics>, StoreError>> + Send>>
        + Send
        + Sync,
>;

/// A probe calling `store.pending_metrics()`, or `None` when the store lacks the
/// capability.
pub(super) fn backlog_probe<S: OutboxStore>(store: &Arc<S>) -> Option<BacklogProbe> {
    if !store.capabilities().backlog_metrics {
        return None;
    }
    let store = Arc::clone(store);
    Some(Arc::new(move || {
        let store = Arc::clone(&store);
        Box::pin(async move { store.pending_metrics().await })
    }))
}

/// How often [`drained`] counts the backlog while rows are pending.
pub(super) const DRAIN_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// Waits until the state is `Ready`; an error once it can no longer become ready.
pub(super) async fn ready(mut state: watch::Receiver<RelayState>) -> Result<(), WaitError> {
    let reached = state
        .wait_for(|s| !matches!(s, RelayState::Starting))
        .await
        .map(|s| s.clone());
    match reached {
        Ok(RelayState::Ready) => Ok(()),
        Ok(other) => Err(WaitError::ended(&other)),
        // The driver drops its sender only after publishing a terminal state.
        Err(_) => Err(WaitError::ended(&state.borrow())),
    }
}

/// Waits until the relay has ended by itself or been stopped.
pub(super) async fn ended(mut state: watch::Receiver<RelayState>) {
    let _ = state.wait_for(RelayState::is_terminal).await;
}

/// Counts the backlog every [`DRAIN_CHECK_INTERVAL`] until it is zero.
pub(super) async fn drained(
    probe: Option<&BacklogProbe>,
    state: watch::Receiver<RelayState>,
) -> Result<(), WaitError> {
    let probe = probe.ok_or(WaitError::BacklogUnsupported)?;
    loop {
        let metrics = match probe().await {
            Ok(metrics) => metrics,
            Err(StoreError::Unsupported(_)) => return Err(WaitError::BacklogUnsupported),
            Err(error) => return Err(WaitError::Store(Arc::new(error))),
        };
        let Some(metrics) = metrics else {
            return Err(WaitError::BacklogUnsupported);
        };
        // Parked rows live in their own table: they are not part of `count`.
        if metrics.count == 0 {
            return Ok(());
        }
        let current = state.borrow().clone();
        if matches!(current, RelayState::Stopping) || current.is_terminal() {
            return Err(WaitError::ended(&current));
        }
        tokio::time::sleep(DRAIN_CHECK_INTERVAL).await;
    }
}
