//! The relay process: endpoints first, then the dependencies, then the relay, until a
//! signal or a fatal error.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use outbox_core::driver::RelayError;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tracing::{error, info};

use crate::config::Config;
use crate::dependencies::{
    Database, check_brokers, check_database, connect_brokers, connect_database, until_connected,
    watch,
};
use crate::exit::{EXIT_CONFIG, EXIT_FATAL};
use crate::notify::spawn_relay;
use crate::probe::redact_url;
use crate::readiness::{Dependency, Readiness};
use crate::{connect, http};

/// How often the relay's readiness and liveness are copied to the probes.
const PROBE_REFRESH: Duration = Duration::from_millis(200);

/// SIGTERM and SIGINT.
struct Signals {
    terminate: Signal,
    interrupt: Signal,
}

impl Signals {
    fn install() -> std::io::Result<Self> {
        Ok(Signals {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}

/// Runs the relay until SIGTERM/SIGINT or a fatal error; the exit status says which.
pub async fn run(config: Config) -> ExitCode {
    let metrics = match outbox_core::metrics::prometheus::builder().map(|b| b.install_recorder()) {
        Ok(Ok(handle)) => handle,
        Ok(Err(e)) => return start_failed(&e.to_string()),
        Err(e) => return start_failed(&e.to_string()),
    };
    let listener = match http::bind(config.listen).await {
        Ok(listener) => listener,
        Err(e) => return start_failed(&format!("cannot listen on {}: {e}", config.listen)),
    };
    let publisher = match connect::publisher(&config) {
        Ok(publisher) => publisher,
        Err(e) => return start_failed(&e.to_string()),
    };
    let mut signals = match Signals::install() {
        Ok(signals) => signals,
        Err(e) => return start_failed(&format!("cannot install signal handlers: {e}")),
    };
    // The probes answer from here on: alive, and not ready until the dependencies answer
    // and the leases are acquired.
    let readiness = Arc::new(Readiness::new(
        redact_url(&config.database_url),
        config.brokers.join(","),
    ));
    let render: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(move || metrics.render());
    let server = tokio::spawn(http::serve(listener, Arc::clone(&readiness), render));
    info!(listen = %config.listen, "serving /metrics, /healthz and /readyz");

    let connect_both = async {
        tokio::join!(
            until_connected(Dependency::Database, &readiness, &config.relay, || {
                connect_database(&config)
            }),
            until_connected(Dependency::Broker, &readiness, &config.relay, || {
                connect_brokers(&publisher, &config.brokers)
            }),
        )
    };
    let (Database { store, watch: db }, ()) = tokio::select! {
        connected = connect_both => connected,
        () = signals.recv() => {
            info!("stopped before the dependencies answered");
            server.abort();
            return ExitCode::SUCCESS;
        }
    };

    let relay = match spawn_relay(
        store,
        publisher,
        config.relay.clone(),
        config.notify.as_ref(),
    ) {
        Ok(relay) => relay,
        Err(e) => return start_failed(&e.to_string()),
    };
    info!(relay_id = relay.relay_id(), listen = %config.listen, "relay running");
    let watches = spawn_watches(&config, &readiness, db);

    let mut tick = tokio::time::interval(PROBE_REFRESH);
    let finished = loop {
        tokio::select! {
            () = signals.recv() => break false,
            _ = tick.tick() => {
                readiness.set_relay_ready(relay.is_ready());
                if relay.is_finished() {
                    readiness.set_dead();
                    break true;
                }
            }
        }
    };
    let result = if finished {
        relay.join().await
    } else {
        info!(
            grace_ms = u64::try_from(config.shutdown_grace.as_millis()).unwrap_or(u64::MAX),
            "stopping"
        );
        relay.stop(config.shutdown_grace).await
    };
    for task in watches {
        task.abort();
    }
    server.abort();
    match result {
        Ok(()) => {
            info!("stopped");
            ExitCode::SUCCESS
        }
        Err(RelayError::Misconfigured(e)) => {
            error!(error = %e, "fatal misconfiguration");
            eprintln!("outbox-relay: fatal misconfiguration: {e}");
            ExitCode::from(EXIT_FATAL)
        }
        Err(e) => {
            error!(error = %e, "relay failed");
            eprintln!("outbox-relay: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The running watch of both dependencies (see [`crate::dependencies`]).
fn spawn_watches(
    config: &Config,
    readiness: &Arc<Readiness>,
    db: sea_orm::DatabaseConnection,
) -> [tokio::task::JoinHandle<()>; 2] {
    let database = {
        let (readiness, options) = (Arc::clone(readiness), config.relay.clone());
        let url = config.database_url.clone();
        tokio::spawn(async move {
            watch(Dependency::Database, &readiness, &options, || {
                check_database(&url, &db)
            })
            .await;
        })
    };
    let brokers = {
        let (readiness, options) = (Arc::clone(readiness), config.relay.clone());
        let brokers = config.brokers.clone();
        tokio::spawn(async move {
            watch(Dependency::Broker, &readiness, &options, || {
                check_brokers(&brokers)
            })
            .await;
        })
    };
    [database, brokers]
}

fn start_failed(reason: &str) -> ExitCode {
    eprintln!("outbox-relay: cannot start: {reason}");
    ExitCode::from(EXIT_CONFIG)
}
