//! Controlling a running relay from outside: shutdown, readiness, state, join. The
//! handle is built by `spawn`, which starts the relay.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::info;

use super::control::{ABANDON, GRACEFUL, RUN};
use super::error::RelayError;
use super::local_notifier::LocalNotifier;
use super::state::{self, BacklogProbe, RelayState, WaitError};

/// Controls a running relay, and holds the writer bound to it (`W`, from
/// [`Relay::builder`](super::Relay::builder); `()` from
/// [`Relay::spawn`](super::Relay::spawn)).
///
/// Dropping the handle does not stop the relay: call [`stop`](Self::stop) (or
/// [`stop_on`](Self::stop_on), or [`shutdown`](Self::shutdown) and [`join`](Self::join)).
#[must_use = "dropping a RelayHandle leaves the relay running with its leases held and no way to stop it gracefully; keep it and call `stop` or `stop_on`"]
pub struct RelayHandle<W = ()> {
    pub(super) relay_id: String,
    pub(super) notifier: Arc<LocalNotifier>,
    pub(super) outbox: W,
    /// `RUN`, `GRACEFUL` (finish the in-flight work and stop) or `ABANDON` (abandon it
    /// and stop): see `control`.
    pub(super) control: watch::Sender<u8>,
    pub(super) task: JoinHandle<Result<(), RelayError>>,
    pub(super) companions: Vec<JoinHandle<()>>,
    pub(super) ready: Arc<AtomicBool>,
    pub(super) state: watch::Receiver<RelayState>,
    pub(super) backlog: Option<BacklogProbe>,
}

impl<W: fmt::Debug> fmt::Debug for RelayHandle<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelayHandle")
            .field("relay_id", &self.relay_id)
            .field("outbox", &self.outbox)
            .field("state", &*self.state.borrow())
            .field("companions", &self.companions.len())
            .finish_non_exhaustive()
    }
}

impl<W> RelayHandle<W> {
    /// This relay's id in the lease tables.
    pub fn relay_id(&self) -> &str {
        &self.relay_id
    }

    /// The notifier that writers in this process call after each commit.
    pub fn notifier(&self) -> Arc<LocalNotifier> {
        Arc::clone(&self.notifier)
    }

    /// The writer bound to this relay's notifier (from
    /// [`Relay::builder`](super::Relay::builder)): rows enqueued through it wake this
    /// relay as soon as their transaction commits.
    pub fn outbox(&self) -> &W {
        &self.outbox
    }

    /// The relay's current state.
    pub fn state(&self) -> RelayState {
        self.state.borrow().clone()
    }

    /// Every state transition from now on, for waits of your own
    /// (`watch::Receiver::wait_for`).
    pub fn subscribe(&self) -> watch::Receiver<RelayState> {
        self.state.clone()
    }

    /// Waits until the relay is [`Ready`](RelayState::Ready): its first lease acquisition
    /// completed. Fails when it stops or fails first. While the store is unreachable this
    /// waits (the relay keeps retrying): bound it with a timeout where that matters.
    pub async fn ready(&self) -> Result<(), WaitError> {
        state::ready(self.state.clone()).await
    }

    /// Waits until the store reports no pending row (parked rows do not count), counting
    /// them with [`OutboxStore::pending_metrics`](crate::store::OutboxStore::pending_metrics)
    /// every 100 ms. Fails at once with
    /// [`WaitError::BacklogUnsupported`] when the store lacks the backlog capability,
    /// and with [`WaitError::Stopped`] / [`WaitError::Failed`] when the relay ends while
    /// rows are still pending.
    ///
    /// Meant for after the writers stopped (tests, batch jobs, a graceful drain before
    /// [`stop`](Self::stop)): while writers keep committing it may never resolve. The
    /// count covers the whole table, buckets owned by other relays included.
    pub async fn drained(&self) -> Result<(), WaitError> {
        state::drained(self.backlog.as_ref(), self.state.clone()).await
    }

    /// Runs until `signal` resolves (say `tokio::signal::ctrl_c()`, mapped to `()`) or the
    /// relay ends by itself, then stops it as [`stop`](Self::stop) does with `grace`.
    /// Returns the relay's fatal error if it failed. In the manner of axum's
    /// `with_graceful_shutdown`.
    pub async fn stop_on(
        self,
        signal: impl Future<Output = ()>,
        grace: Duration,
    ) -> Result<(), RelayError> {
        tokio::select! {
            () = signal => info!("stop signal received; stopping the relay"),
            () = state::ended(self.state.clone()) => {}
        }
        self.stop(grace).await
    }

    /// Asks the relay to stop after its in-flight work; returns immediately.
    pub fn shutdown(&self) {
        self.control.send_if_modified(|state| {
            let changed = *state == RUN;
            if changed {
                *state = GRACEFUL;
            }
            changed
        });
    }

    /// Ties a background task to this relay (a notification transport's workers, say):
    /// it is aborted once the relay has stopped, through [`stop`](Self::stop) or
    /// [`join`](Self::join). Like the relay, it keeps running when the handle is dropped.
    pub fn attach(&mut self, task: JoinHandle<()>) {
        self.companions.push(task);
    }

    /// Whether the relay has completed its first lease acquisition: its heartbeat is in
    /// the store and it owns its share (possibly zero buckets). For readiness probes.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire) && !self.task.is_finished()
    }

    /// Whether the relay task has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits until the relay ends by itself (a fatal error) or after a shutdown.
    pub async fn join(self) -> Result<(), RelayError> {
        let result = match self.task.await {
            Ok(result) => result,
            Err(e) => Err(RelayError::Panicked(e.to_string())),
        };
        abort_all(self.companions);
        result
    }

    /// Stops the relay: in-flight work gets `grace` to finish (an acknowledged prefix is
    /// still deleted), then the relay hands its leases back so other relays take its
    /// buckets at once (stores with the release capability). After `grace` an in-flight
    /// publish is abandoned without deleting anything, and its leases are left to run
    /// out. Returns the fatal error if the relay had already failed.
    pub async fn stop(self, grace: Duration) -> Result<(), RelayError> {
        self.shutdown();
        let RelayHandle {
            control,
            mut task,
            companions,
            ..
        } = self;
        let result = match tokio::time::timeout(grace, &mut task).await {
            Ok(joined) => joined.unwrap_or_else(|e| Err(RelayError::Panicked(e.to_string()))),
            Err(_) => {
                control.send_replace(ABANDON);
                task.await
                    .unwrap_or_else(|e| Err(RelayError::Panicked(e.to_string())))
            }
        };
        abort_all(companions);
        result
    }
}

fn abort_all(tasks: Vec<JoinHandle<()>>) {
    for task in tasks {
        task.abort();
    }
}
