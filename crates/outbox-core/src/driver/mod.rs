//! The thin tokio shell around [`RelayMachine`]: executes its commands against a
//! store and a publisher, sleeps until its deadlines, and feeds it commit hints.
//!
//! ```no_run
//! # async fn demo(store: outbox_core::testing::MemoryStore, publisher: outbox_core::testing::MemoryPublisher) -> Result<(), outbox_core::driver::RelayError> {
//! use std::time::Duration;
//! use outbox_core::{RelayOptions, driver::Relay};
//!
//! let options = RelayOptions::builder().build()?;
//! let relay = Relay::spawn(store, publisher, options)?;
//! // Writers call `relay.notifier().notify_buckets(..)` after each commit.
//! relay.stop(Duration::from_secs(10)).await?;
//! # Ok(()) }
//! ```

mod local_notifier;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{Instrument, debug, debug_span, error, info, info_span, warn};

pub use local_notifier::LocalNotifier;

use crate::error::Misconfiguration;
use crate::metrics::{BacklogSampler, RelayMetrics};
use crate::options::{OptionsError, RelayOptions};
use crate::publisher::Publisher;
use crate::relay::{Command, Outcome, RelayEvent, RelayMachine};
use crate::store::{LeaseRequest, OutboxStore};
use crate::time::Timestamp;

/// Why a relay could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// A misconfiguration that retrying cannot fix.
    #[error(transparent)]
    Misconfigured(#[from] Misconfiguration),
    /// Invalid options.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// `spawn` was called outside a tokio runtime.
    #[error("the relay must be spawned inside a tokio runtime")]
    NoRuntime,
    /// The relay task panicked (a bug); nothing was deleted past the panic.
    #[error("the relay task panicked: {0}")]
    Panicked(String),
}

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

const RUN: u8 = 0;
const GRACEFUL: u8 = 1;
const ABANDON: u8 = 2;

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
        let machine = RelayMachine::new(options, store.capabilities(), Timestamp::now())?;
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
            );
            runtime.spawn(task.instrument(span.clone()))
        });
        let ready = Arc::new(AtomicBool::new(false));
        let driver = Driver {
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

type OpFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

struct Driver<S, P> {
    machine: RelayMachine,
    store: Arc<S>,
    publisher: Arc<P>,
    notifier: Arc<LocalNotifier>,
    control: watch::Receiver<u8>,
    metrics: Arc<RelayMetrics>,
    /// Shared with the backlog sampler, for bucket-zero-only sampling.
    owns_bucket_zero: Arc<AtomicBool>,
    sampler: Option<JoinHandle<()>>,
    cycle_span: Option<tracing::Span>,
    /// Set after the first successful acquisition (heartbeat recorded, share known).
    ready: Arc<AtomicBool>,
}

impl<S, P> Drop for Driver<S, P> {
    fn drop(&mut self) {
        // The sampler's query is cancelled with it; the relay's observations go with
        // the last `RelayMetrics` reference.
        if let Some(sampler) = self.sampler.take() {
            sampler.abort();
        }
    }
}

impl<S: OutboxStore, P: Publisher> Driver<S, P> {
    async fn run(mut self) -> Result<(), RelayError> {
        info!("relay started");
        let mut main: Option<OpFuture> = None;
        let mut renewal: Option<OpFuture> = None;
        let mut hints = Vec::new();
        let mut shutting_down = false;
        let mut control_open = true;
        loop {
            let now = Timestamp::now();
            while let Some(command) = self.machine.poll_command(now) {
                let is_renewal = matches!(command, Command::RenewLeases { .. });
                let op = self.execute(command);
                if is_renewal {
                    renewal = Some(op)
                } else {
                    main = Some(op)
                }
            }
            self.report_events();
            self.owns_bucket_zero
                .store(self.machine.may_act_on(0, now), Ordering::Release);
            if self.machine.is_finished() {
                break;
            }
            let sleep = self.machine.poll_timeout().map(|deadline| {
                tokio::time::sleep(Duration::from_millis(
                    u64::try_from(deadline.as_millis().saturating_sub(now.as_millis()))
                        .unwrap_or(0),
                ))
            });
            tokio::select! {
                result = poll_slot(&mut main) => {
                    main = None;
                    self.complete(result);
                }
                result = poll_slot(&mut renewal) => {
                    renewal = None;
                    self.complete(result);
                }
                () = self.notifier.notified() => {
                    self.notifier.take_hints(&mut hints);
                    let now = Timestamp::now();
                    for hint in hints.drain(..) {
                        self.machine.handle_hint(now, hint);
                    }
                }
                () = sleep_opt(sleep) => self.machine.handle_timeout(Timestamp::now()),
                changed = self.control.changed(), if control_open => {
                    let Ok(()) = changed else {
                        // The handle was dropped: keep running, as documented.
                        control_open = false;
                        continue;
                    };
                    let state = *self.control.borrow_and_update();
                    if state != RUN && !shutting_down {
                        shutting_down = true;
                        self.machine.handle_shutdown();
                    }
                    if state == ABANDON {
                        if self.machine.is_publishing() {
                            // Dropping the future cancels the publish; nothing is deleted.
                            drop(main.take());
                            self.machine.handle(Timestamp::now(), Outcome::PublishCancelled);
                        }
                        self.report_events();
                        info!("relay stopped, in-flight work abandoned");
                        return Ok(());
                    }
                }
            }
        }
        match self.machine.fatal_error() {
            Some(error) => Err(RelayError::Misconfigured(error.clone())),
            None => Ok(()),
        }
    }

    fn complete(&mut self, outcome: Outcome) {
        self.machine.handle(Timestamp::now(), outcome);
    }

    /// Turns a command into a future; every store call and publish runs in its own span
    /// carrying the bucket and batch size where they apply.
    fn execute(&mut self, command: Command) -> OpFuture {
        // Every call belongs to the cycle (acquisition, probe, sweeps) that issued it.
        let cycle = self
            .cycle_span
            .get_or_insert_with(|| debug_span!("outbox_cycle"))
            .clone();
        let store = Arc::clone(&self.store);
        let options = self.machine.options();
        let relay_id = options.relay_id().to_owned();
        let bucket_count = options.bucket_count().get();
        let lease_duration = options.lease_duration();
        let lease = move |now| (relay_id, bucket_count, lease_duration, now);
        match command {
            Command::AcquireLeases { now } => {
                let (relay_id, bucket_count, lease_duration, now) = lease(now);
                let span = debug_span!(parent: &cycle, "store.acquire_leases", bucket_count);
                Box::pin(
                    async move {
                        let request = LeaseRequest {
                            relay_id: &relay_id,
                            bucket_count,
                            lease_duration,
                            now,
                        };
                        Outcome::Acquired(store.acquire_leases(&request).await)
                    }
                    .instrument(span),
                )
            }
            Command::ProbePending { buckets } => {
                let span = debug_span!(parent: &cycle, "store.buckets_with_pending", owned = buckets.len());
                Box::pin(
                    async move {
                        Outcome::Probed(store.buckets_with_pending(&buckets, bucket_count).await)
                    }
                    .instrument(span),
                )
            }
            Command::FetchBatch { bucket, limit } => {
                let span =
                    debug_span!(parent: &cycle, "store.next_batch", bucket, batch_size = limit);
                Box::pin(
                    async move { Outcome::Fetched(store.next_batch(bucket, limit).await) }
                        .instrument(span),
                )
            }
            Command::Publish { bucket, batch } => {
                let publisher = Arc::clone(&self.publisher);
                let span = info_span!(parent: &cycle, "publish", bucket, batch_size = batch.len());
                Box::pin(
                    async move { Outcome::Published(publisher.publish(&batch).await) }
                        .instrument(span),
                )
            }
            Command::MarkPublished {
                bucket,
                batch,
                count,
            } => {
                let span =
                    debug_span!(parent: &cycle, "store.mark_published", bucket, batch_size = count);
                Box::pin(
                    async move {
                        Outcome::Marked(
                            store
                                .mark_published(bucket, batch.get(..count).unwrap_or(&batch))
                                .await,
                        )
                    }
                    .instrument(span),
                )
            }
            Command::RenewLeases { now, buckets } => {
                let (relay_id, bucket_count, lease_duration, now) = lease(now);
                let span = debug_span!(parent: &cycle, "store.renew_leases", owned = buckets.len());
                Box::pin(
                    async move {
                        let request = LeaseRequest {
                            relay_id: &relay_id,
                            bucket_count,
                            lease_duration,
                            now,
                        };
                        Outcome::Renewed(store.renew_leases(&request, &buckets).await)
                    }
                    .instrument(span),
                )
            }
            Command::ReleaseLeases => {
                let (relay_id, ..) = lease(Timestamp::EPOCH);
                let span = debug_span!(parent: &cycle, "store.release_leases");
                Box::pin(
                    async move { Outcome::Released(store.release_leases(&relay_id).await) }
                        .instrument(span),
                )
            }
        }
    }

    fn report_events(&mut self) {
        while let Some(event) = self.machine.poll_event() {
            self.metrics.on_event(&event);
            if matches!(event, RelayEvent::CycleCompleted { .. }) {
                self.cycle_span = None;
            }
            match event {
                RelayEvent::Joined => {
                    self.ready.store(true, Ordering::Release);
                    info!("joined: heartbeat recorded, share of the buckets known");
                }
                RelayEvent::OwnershipChanged { owned } => {
                    self.notifier.set_owned(owned.iter().copied());
                    info!(?owned, "owned buckets changed");
                }
                RelayEvent::LeaseExpired { buckets } => {
                    warn!(buckets, "leases expired or were lost")
                }
                RelayEvent::Published {
                    bucket,
                    attempted,
                    acknowledged,
                    elapsed,
                    ..
                } => {
                    debug!(
                        bucket,
                        attempted,
                        acknowledged,
                        elapsed_ms = elapsed.as_millis() as u64,
                        "published"
                    )
                }
                RelayEvent::PublishFailed { bucket, error } => {
                    if error.is_permanent() {
                        warn!(bucket, message_id = ?error.message_id, %error, "permanent publish failure; the row stays pending until fixed");
                    } else {
                        warn!(bucket, %error, "publish failed; retrying after backoff");
                    }
                }
                RelayEvent::PublishCancelled { bucket } => {
                    info!(bucket, "publish cancelled by shutdown")
                }
                RelayEvent::StoreFailed { operation, error } => {
                    warn!(operation, %error, "store call failed")
                }
                RelayEvent::LeaseTooShortForPublish { remaining, needed } => error!(
                    remaining_ms = remaining.as_millis() as u64,
                    needed_ms = needed.as_millis() as u64,
                    "lease too short for max_publish_duration plus lease_renew_interval; rows stay pending"
                ),
                RelayEvent::BackingOff {
                    until,
                    consecutive_failures,
                } => {
                    debug!(%until, consecutive_failures, "backing off")
                }
                RelayEvent::Fatal(error) => error!(%error, "relay stopped by a misconfiguration"),
                RelayEvent::LeasesReleased { buckets } => {
                    info!(buckets, "leases handed back for the other relays");
                }
                RelayEvent::Stopped => info!("relay stopped"),
                RelayEvent::CycleCompleted { elapsed } => {
                    debug!(elapsed_ms = elapsed.as_millis() as u64, "cycle completed")
                }
            }
        }
    }
}

/// The backlog sampler: its own task, at most one query in flight, each with a deadline,
/// the next one an interval after the previous completed. The age gauge is refreshed every
/// second so that it grows between samples.
async fn sample_backlog<S: OutboxStore>(
    store: Arc<S>,
    metrics: Arc<RelayMetrics>,
    owns_bucket_zero: Arc<AtomicBool>,
    options: RelayOptions,
) {
    let mut sampler = BacklogSampler::new(
        Timestamp::now(),
        options.metrics_collection_interval(),
        options.metrics_collection_timeout(),
        options.collect_metrics_on_bucket_zero_owner_only(),
        store.capabilities().backlog_metrics,
    );
    loop {
        let now = Timestamp::now();
        match sampler.poll_sample(now, owns_bucket_zero.load(Ordering::Acquire)) {
            Ok(Some(deadline)) => {
                let budget = deadline.saturating_duration_since(now);
                let sample = match tokio::time::timeout(budget, store.pending_metrics()).await {
                    Ok(Ok(sample)) => sample,
                    Ok(Err(error)) => {
                        warn!(%error, "backlog sample failed");
                        None
                    }
                    Err(_) => {
                        warn!(
                            timeout_ms = budget.as_millis() as u64,
                            "backlog sample timed out"
                        );
                        None
                    }
                };
                let done = Timestamp::now();
                let snapshot =
                    sampler.handle_sample(done, sample, owns_bucket_zero.load(Ordering::Acquire));
                metrics.set_backlog(snapshot, done);
                continue;
            }
            Ok(None) => metrics.refresh_age(now),
            Err(snapshot) => metrics.set_backlog(snapshot, now),
        }
        let next = sampler.poll_timeout().map_or(Duration::from_secs(1), |at| {
            at.saturating_duration_since(now)
        });
        tokio::time::sleep(next.min(Duration::from_secs(1))).await;
    }
}

/// Awaits the future in `slot`, or never completes when the slot is empty.
async fn poll_slot(slot: &mut Option<OpFuture>) -> Outcome {
    match slot {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

async fn sleep_opt(sleep: Option<tokio::time::Sleep>) {
    match sleep {
        Some(sleep) => sleep.await,
        None => std::future::pending().await,
    }
}
