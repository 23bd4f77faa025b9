//! Starting a relay: everything fallible first (runtime, options, machine), then the
//! companions, the backlog sampler and the relay loop's task; returns the handle that
//! controls them.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{Instrument, info_span};

use super::clock::Clock;
use super::companion::{CompanionContext, Companions};
use super::control::RUN;
use super::error::RelayError;
use super::handle::RelayHandle;
use super::local_notifier::LocalNotifier;
use super::run_loop::Driver;
use super::sampler::sample_backlog;
use super::state::{RelayState, backlog_probe};
use crate::metrics::RelayMetrics;
use crate::notifier::CommitNotifier;
use crate::options::RelayOptions;
use crate::publisher::Publisher;
use crate::relay::RelayMachine;
use crate::store::OutboxStore;

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
