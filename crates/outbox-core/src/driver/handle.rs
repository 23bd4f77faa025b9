//! Spawning a relay and controlling it from outside: shutdown, readiness, state, join.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{Instrument, info, info_span};

use super::RelayError;
use super::builder::{CompanionContext, Companions};
use super::clock::Clock;
use super::local_notifier::LocalNotifier;
use super::run_loop::Driver;
use super::sampler::sample_backlog;
use super::state::{self, BacklogProbe, RelayState, WaitError, backlog_probe};
use crate::metrics::RelayMetrics;
use crate::notifier::CommitNotifier;
use crate::options::RelayOptions;
use crate::publisher::Publisher;
use crate::relay::RelayMachine;
use crate::store::OutboxStore;

/// Entry point: spawns relays ([`Relay::builder`], or [`Relay::spawn`]).
#[derive(Debug, Clone, Copy)]
pub struct Relay;

/// Controls a running relay, and holds the writer bound to it (`W`, from
/// [`Relay::builder`]; `()` from [`Relay::spawn`]).
///
/// Dropping the handle does not stop the relay: call [`stop`](Self::stop) (or
/// [`stop_on`](Self::stop_on), or [`shutdown`](Self::shutdown) and [`join`](Self::join)).
#[must_use = "dropping a RelayHandle leaves the relay running with its leases held and no way to stop it gracefully; keep it and call `stop` or `stop_on`"]
pub struct RelayHandle<W = ()> {
    relay_id: String,
    notifier: Arc<LocalNotifier>,
    outbox: W,
    /// 0 = run, 1 = finish the in-flight work and stop, 2 = abandon it and stop.
    control: watch::Sender<u8>,
    task: JoinHandle<Result<(), RelayError>>,
    companions: Vec<JoinHandle<()>>,
    ready: Arc<AtomicBool>,
    state: watch::Receiver<RelayState>,
    backlog: Option<BacklogProbe>,
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

/// Control states sent from the handle to the loop.
pub(super) const RUN: u8 = 0;
pub(super) const GRACEFUL: u8 = 1;
pub(super) const ABANDON: u8 = 2;

impl Relay {
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

/// Starts the relay, its companions and its sampler; `writer_of` builds the handle's
/// writer from the notifier. Everything fallible happens before the first task starts.
pub(super) fn start<S, P, W>(
    store: S,
    publisher: P,
    options: RelayOptions,
    companions: Companions,
    writer_of: impl FnOnce(&S, Arc<dyn CommitNotifier>) -> W,
) -> Result<RelayHandle<W>, RelayError>
where
    S: OutboxStore,
    P: Publisher,
{
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| RelayError::NoRuntime)?;
    let clock = Clock::start();
    let machine = RelayMachine::new(options, store.capabilities(), clock.now())?;
    let relay_id = machine.options().relay_id().to_owned();
    let notifier = Arc::new(LocalNotifier::new(machine.options().bucket_count().get()));
    let outbox = writer_of(&store, Arc::clone(&notifier) as Arc<dyn CommitNotifier>);
    let (control, control_rx) = watch::channel(RUN);
    let (state_tx, state) = watch::channel(RelayState::Starting);
    let span = info_span!("outbox_relay", relay_id = %relay_id, outbox = %machine.options().metrics_name());
    // Companions start before the relay's first step, so a transport's outgoing buffer
    // is on before anything could be committed through this relay's notifier.
    let context = CompanionContext {
        notifier: &notifier,
        options: machine.options(),
        runtime: &runtime,
    };
    let companions: Vec<JoinHandle<()>> = companions
        .into_iter()
        .flat_map(|start| start(&context))
        .collect();
    let store = Arc::new(store);
    let backlog = backlog_probe(&store);
    let metrics = Arc::new(RelayMetrics::new(
        machine.options().metrics_name(),
        &relay_id,
    ));
    let owns_bucket_zero = Arc::new(AtomicBool::new(false));
    let sampler = machine.options().backlog_sampling().then(|| {
        let task = sample_backlog(
            Arc::clone(&store),
            Arc::clone(&metrics),
            Arc::clone(&owns_bucket_zero),
            machine.options().clone(),
            clock,
        );
        runtime.spawn(task.instrument(span.clone()))
    });
    let ready = Arc::new(AtomicBool::new(false));
    let driver = Driver {
        clock,
        ready: Arc::clone(&ready),
        machine,
        store,
        publisher: Arc::new(publisher),
        notifier: Arc::clone(&notifier),
        control: control_rx,
        metrics,
        owns_bucket_zero,
        sampler,
        cycle_span: None,
        state: state_tx,
    };
    let task = runtime.spawn(driver.run().instrument(span));
    Ok(RelayHandle {
        relay_id,
        notifier,
        outbox,
        control,
        task,
        companions,
        ready,
        state,
        backlog,
    })
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

    /// The writer bound to this relay's notifier (from [`Relay::builder`]): rows enqueued
    /// through it wake this relay as soon as their transaction commits.
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
    /// them with [`OutboxStore::pending_metrics`] every 100 ms. Fails at once with
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
