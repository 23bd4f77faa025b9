//! The relay loop: feeds the machine its inputs (command outcomes, hints, timeouts,
//! shutdown) and sleeps until the next of them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::info;

use super::clock::Clock;
use super::control::{ABANDON, RUN};
use super::error::RelayError;
use super::local_notifier::LocalNotifier;
use super::state::RelayState;
use crate::error::Misconfiguration;
use crate::metrics::RelayMetrics;
use crate::publisher::Publisher;
use crate::relay::{Outcome, RelayMachine};
use crate::store::OutboxStore;

pub(super) type OpFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

pub(super) struct Driver<S, P> {
    pub(super) machine: RelayMachine,
    pub(super) clock: Clock,
    pub(super) store: Arc<S>,
    pub(super) publisher: Arc<P>,
    pub(super) notifier: Arc<LocalNotifier>,
    pub(super) control: watch::Receiver<u8>,
    pub(super) metrics: Arc<RelayMetrics>,
    /// Shared with the backlog sampler, for bucket-zero-only sampling.
    pub(super) owns_bucket_zero: Arc<AtomicBool>,
    pub(super) sampler: Option<JoinHandle<()>>,
    pub(super) cycle_span: Option<tracing::Span>,
    /// Set after the first successful acquisition (heartbeat recorded, share known).
    pub(super) ready: Arc<AtomicBool>,
    /// The relay's life, for the handle's waits.
    pub(super) state: watch::Sender<RelayState>,
}

impl<S, P> Drop for Driver<S, P> {
    fn drop(&mut self) {
        // The sampler's query is cancelled with it; the relay's observations go with
        // the last `RelayMetrics` reference.
        if let Some(sampler) = self.sampler.take() {
            sampler.abort();
        }
        // `run` publishes its own ending; reaching here without one means the task
        // panicked or its runtime shut down under it.
        self.state.send_if_modified(|state| {
            if state.is_terminal() {
                return false;
            }
            let why = if std::thread::panicking() {
                "the relay task panicked"
            } else {
                "the relay task was cancelled (its runtime shut down)"
            };
            *state = RelayState::Failed(Arc::new(RelayError::Panicked(why.to_owned())));
            true
        });
    }
}

impl<S: OutboxStore, P: Publisher> Driver<S, P> {
    pub(super) async fn run(mut self) -> Result<(), RelayError> {
        let result = self.run_until_stopped().await;
        let end = match &result {
            Ok(()) => RelayState::Stopped,
            Err(error) => RelayState::Failed(Arc::new(RelayError::Misconfigured(error.clone()))),
        };
        self.state.send_replace(end);
        result.map_err(RelayError::Misconfigured)
    }

    async fn run_until_stopped(&mut self) -> Result<(), Misconfiguration> {
        info!("relay started");
        // Every call in flight: relay-level calls, a renewal, and each lane's store call
        // and publish. The machine bounds how many there are.
        let mut in_flight: FuturesUnordered<OpFuture> = FuturesUnordered::new();
        let mut hints = Vec::new();
        let mut shutting_down = false;
        let mut control_open = true;
        loop {
            let now = self.clock.now();
            while let Some(command) = self.machine.poll_command(now) {
                in_flight.push(self.execute(command));
            }
            self.report_events();
            self.owns_bucket_zero
                .store(self.machine.may_act_on(0, now), Ordering::Release);
            if self.machine.is_finished() {
                break;
            }
            let sleep = self
                .machine
                .poll_timeout()
                .map(|deadline| tokio::time::sleep_until(self.clock.instant(deadline)));
            tokio::select! {
                Some(result) = in_flight.next(), if !in_flight.is_empty() => {
                    self.complete(result);
                }
                () = self.notifier.notified() => {
                    self.notifier.take_hints(&mut hints);
                    let now = self.clock.now();
                    for hint in hints.drain(..) {
                        self.machine.handle_hint(now, hint);
                    }
                }
                () = sleep_opt(sleep) => self.machine.handle_timeout(self.clock.now()),
                changed = self.control.changed(), if control_open => {
                    let Ok(()) = changed else {
                        // The handle was dropped: keep running, as documented.
                        control_open = false;
                        continue;
                    };
                    let state = *self.control.borrow_and_update();
                    if state != RUN && !shutting_down {
                        shutting_down = true;
                        self.state.send_if_modified(|s| {
                            let running = matches!(s, RelayState::Starting | RelayState::Ready);
                            if running {
                                *s = RelayState::Stopping;
                            }
                            running
                        });
                        self.machine.handle_shutdown();
                    }
                    if state == ABANDON {
                        // Dropping the futures cancels the publishes; nothing is deleted.
                        let publishing = self.machine.publishing_buckets();
                        drop(std::mem::take(&mut in_flight));
                        for bucket in publishing {
                            self.machine
                                .handle(self.clock.now(), Outcome::PublishCancelled { bucket });
                        }
                        self.report_events();
                        info!("relay stopped, in-flight work abandoned");
                        return Ok(());
                    }
                }
            }
        }
        match self.machine.fatal_error() {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    fn complete(&mut self, outcome: Outcome) {
        self.machine.handle(self.clock.now(), outcome);
    }
}

async fn sleep_opt(sleep: Option<tokio::time::Sleep>) {
    match sleep {
        Some(sleep) => sleep.await,
        None => std::future::pending().await,
    }
}
