//! Spawning a relay and controlling it from outside: shutdown, readiness, join.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{Instrument, info_span};

use super::RelayError;
use super::clock::Clock;
use super::local_notifier::LocalNotifier;
use super::run_loop::Driver;
use super::sampler::sample_backlog;
use crate::metrics::RelayMetrics;
use crate::options::RelayOptions;
use crate::publisher::Publisher;
use crate::relay::RelayMachine;
use crate::store::OutboxStore;

/// Entry point: spawns relays.
#[derive(Debug, Clone, Copy)]
pub struct Relay;

/// Controls a running relay. Dropping the handle does not stop the relay; call
/// [`stop`](Self::stop) (or [`shutdown`](Self::shutdown) and [`join`](Self::join)).
#[derive(Debug)]
pub struct RelayHandle {
    relay_id: String,
    notifier: Arc<LocalNotifier>,
    /// 0 = run, 1 = finish the in-flight work and stop, 2 = abandon it and stop.
    control: watch::Sender<u8>,
    task: JoinHandle<Result<(), RelayError>>,
    companions: Vec<JoinHandle<()>>,
    ready: Arc<AtomicBool>,
}

/// Control states sent from the handle to the loop.
pub(super) const RUN: u8 = 0;
pub(super) const GRACEFUL: u8 = 1;
pub(super) const ABANDON: u8 = 2;

impl Relay {
    /// Starts a relay on the current tokio runtime.
    ///
    /// Fails at once (no task started) when the store cannot renew leases and
    /// `max_publish_duration` is unset, or outside a runtime.
    pub fn spawn<S: OutboxStore, P: Publisher>(
        store: S,
        publisher: P,
        options: RelayOptions,
    ) -> Result<RelayHandle, RelayError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| RelayError::NoRuntime)?;
        let clock = Clock::start();
        let machine = RelayMachine::new(options, store.capabilities(), clock.now())?;
        let relay_id = machine.options().relay_id().to_owned();
        let notifier = Arc::new(LocalNotifier::new(machine.options().bucket_count().get()));
        let (control, control_rx) = watch::channel(RUN);
        let span = info_span!("outbox_relay", relay_id = %relay_id, outbox = %machine.options().metrics_name());
        let store = Arc::new(store);
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
        };
        let task = runtime.spawn(driver.run().instrument(span));
        Ok(RelayHandle {
            relay_id,
            notifier,
            control,
            task,
            companions: Vec::new(),
            ready,
        })
    }
}

impl RelayHandle {
    /// This relay's id in the lease tables.
    pub fn relay_id(&self) -> &str {
        &self.relay_id
    }

    /// The notifier that writers in this process call after each commit.
    pub fn notifier(&self) -> Arc<LocalNotifier> {
        Arc::clone(&self.notifier)
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
