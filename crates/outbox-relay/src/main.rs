//! `outbox-relay`: the relay as its own process, for deployments where writers and
//! relays run separately. See `outbox-relay --help` for every option.

mod config;
mod connect;
mod duration;
mod http;
mod parked;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Parser;
use outbox_core::driver::{Relay, RelayError};
use tokio::signal::unix::{SignalKind, signal};
use tracing::{error, info, warn};

use crate::http::Health;

/// Exit status for invalid configuration (detected before starting).
const EXIT_CONFIG: u8 = 1;
/// Exit status for a misconfiguration detected while running (e.g. bucket counts differ).
const EXIT_FATAL: u8 = 2;

fn main() -> ExitCode {
    let mut cli = config::Cli::parse();
    if let Some(parked::Command::Parked(command)) = cli.command.take() {
        return run_parked(&cli, &command);
    }
    let config = match cli.resolve() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("outbox-relay: invalid configuration: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("outbox-relay: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(config))
}

async fn run(config: config::Config) -> ExitCode {
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
    let store = match connect::store(&config).await {
        Ok(store) => store,
        Err(e) => return start_failed(&e.to_string()),
    };
    if let Err(e) = publisher.connect().await {
        // Not fatal: the broker may come up later, and the relay retries with backoff.
        warn!(error = %e, "the brokers are not reachable yet; the relay will keep trying");
    }
    let relay = match Relay::spawn(store, publisher, config.relay.clone()) {
        Ok(relay) => relay,
        Err(e) => return start_failed(&e.to_string()),
    };
    info!(relay_id = relay.relay_id(), listen = %config.listen, "relay running");

    let health = Arc::new(Health::default());
    health.live.store(true, Ordering::Release);
    let render: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(move || metrics.render());
    let server = tokio::spawn(http::serve(listener, Arc::clone(&health), render));

    let (mut terminate, mut interrupt) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(i)) => (t, i),
        _ => return start_failed("cannot install signal handlers"),
    };
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let outcome = loop {
        tokio::select! {
            _ = terminate.recv() => break None,
            _ = interrupt.recv() => break None,
            _ = tick.tick() => {
                health.ready.store(relay.is_ready(), Ordering::Release);
                if relay.is_finished() {
                    health.live.store(false, Ordering::Release);
                    break Some(());
                }
            }
        }
    };
    let result = match outcome {
        None => {
            info!(
                grace_ms = config.shutdown_grace.as_millis() as u64,
                "stopping"
            );
            relay.stop(config.shutdown_grace).await
        }
        Some(()) => relay.join().await,
    };
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

/// `outbox-relay parked ...`: one operator command against the database, no broker.
fn run_parked(cli: &config::Cli, command: &parked::ParkedCommand) -> ExitCode {
    let database = match cli.resolve_database() {
        Ok(database) => database,
        Err(e) => {
            eprintln!("outbox-relay: invalid configuration: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("outbox-relay: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let store = match connect::operator_store(&database).await {
            Ok(store) => store,
            Err(e) => {
                eprintln!("outbox-relay: {e}");
                return ExitCode::FAILURE;
            }
        };
        match parked::run(&store, command, outbox_core::Timestamp::now()).await {
            Ok(output) => {
                println!("{output}");
                ExitCode::SUCCESS
            }
            Err(parked::CommandError::NotConfirmed) => {
                eprintln!("outbox-relay: {}", parked::CommandError::NotConfirmed);
                ExitCode::from(EXIT_CONFIG)
            }
            Err(e) => {
                eprintln!("outbox-relay: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

fn start_failed(reason: &str) -> ExitCode {
    eprintln!("outbox-relay: cannot start: {reason}");
    ExitCode::from(EXIT_CONFIG)
}
