//! Reaching the database and the brokers at start-up, and watching them while running.
//!
//! **Start-up** ([`until_connected`]): the HTTP endpoints already answer; the database
//! and the brokers are connected side by side, each retried until it answers. The first
//! attempt is immediate; after the n-th failure in a row the next one waits
//! [`RelayOptions::backoff_after`]`(n)`: `--error-backoff` (1 s by default) doubling up to
//! `--max-error-backoff`, the relay's own backoff rule. Each failure is one WARN line
//! naming the dependency, where it is (URL with the password redacted, or the
//! bootstrap list), the error and `retry_in_ms`, and `/readyz` says the same. An attempt
//! is a TCP check first (so a refused connection is named as such at once), then the
//! real client: for the database the pool, the migration when asked and the store; for
//! the brokers the publisher's connection and producer id.
//!
//! **Running** ([`watch`]): every `--lease-renew-interval` each dependency is checked
//! lightly: the database with the TCP check and a ping on a connection of its own, the
//! brokers with the TCP check (any one bootstrap server answering is enough). A failed
//! check makes `/readyz` 503 naming the dependency and is retried with the same backoff
//! and WARN lines; the first success makes it ready again (logged at INFO). The relay
//! itself keeps running through such outages: its own calls back off and resume.

use std::future::Future;
use std::time::Duration;

use outbox_core::RelayOptions;
use outbox_kafka::KafkaPublisher;
use outbox_seaorm::SeaOrmStore;
use sea_orm::DatabaseConnection;
use tracing::{info, warn};

use crate::config::Config;
use crate::connect;
use crate::probe::{PROBE_TIMEOUT, database_reachable, tcp_reachable};
use crate::readiness::{Dependency, Readiness, Status};

/// Consecutive failures of one dependency: logs them and keeps `/readyz` current.
struct Tracker<'a> {
    dependency: Dependency,
    readiness: &'a Readiness,
    options: &'a RelayOptions,
    failures: u32,
}

impl<'a> Tracker<'a> {
    fn new(dependency: Dependency, readiness: &'a Readiness, options: &'a RelayOptions) -> Self {
        Tracker {
            dependency,
            readiness,
            options,
            failures: 0,
        }
    }

    /// Records a failure; returns the wait before the next attempt.
    fn failed(&mut self, problem: String) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let wait = self.options.backoff_after(self.failures);
        warn!(
            dependency = %self.dependency,
            address = %self.readiness.address(self.dependency),
            error = %problem,
            attempt = self.failures,
            retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "{} not reachable; retrying",
            self.dependency
        );
        self.readiness.set(self.dependency, Status::Down(problem));
        wait
    }

    /// Records a success; says so when it ends an outage.
    fn succeeded(&mut self) {
        if self.failures > 0 {
            info!(
                dependency = %self.dependency,
                address = %self.readiness.address(self.dependency),
                failed_attempts = self.failures,
                "{} reachable again",
                self.dependency
            );
        }
        self.failures = 0;
        self.readiness.set(self.dependency, Status::Up);
    }
}

/// Runs `attempt` until it succeeds (see the [module](self) docs) and returns its value.
pub async fn until_connected<T, F, Fut>(
    dependency: Dependency,
    readiness: &Readiness,
    options: &RelayOptions,
    mut attempt: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let mut tracker = Tracker::new(dependency, readiness, options);
    loop {
        match attempt().await {
            Ok(value) => {
                tracker.succeeded();
                info!(
                    dependency = %dependency,
                    address = %readiness.address(dependency),
                    "connected to the {dependency}"
                );
                return value;
            }
            Err(problem) => {
                let wait = tracker.failed(problem);
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// Checks `dependency` with `check` every `lease_renew_interval` while it answers, and
/// with the error backoff while it does not; runs until aborted.
pub async fn watch<F, Fut>(
    dependency: Dependency,
    readiness: &Readiness,
    options: &RelayOptions,
    mut check: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut tracker = Tracker::new(dependency, readiness, options);
    loop {
        tokio::time::sleep(options.lease_renew_interval()).await;
        while let Err(problem) = check().await {
            let wait = tracker.failed(problem);
            tokio::time::sleep(wait).await;
        }
        tracker.succeeded();
    }
}

/// What a successful database attempt yields.
#[derive(Debug)]
pub struct Database {
    /// The relay's store.
    pub store: SeaOrmStore,
    /// The watch's connection.
    pub watch: DatabaseConnection,
}

/// One start-up attempt on the database: TCP check, store (migrating when asked), and
/// the watch's connection.
pub async fn connect_database(config: &Config) -> Result<Database, String> {
    database_reachable(&config.database_url).await?;
    let store = connect::store(config)
        .await
        .map_err(|e| format!("error: {e}"))?;
    let watch = connect::watch_connection(config)
        .await
        .map_err(|e| format!("error: {e}"))?;
    Ok(Database { store, watch })
}

/// One check of the database while running: TCP check, then a ping.
pub async fn check_database(database_url: &str, db: &DatabaseConnection) -> Result<(), String> {
    database_reachable(database_url).await?;
    match tokio::time::timeout(PROBE_TIMEOUT, db.ping()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("error: {e}")),
        Err(_) => Err(format!(
            "error: no answer to a ping within {PROBE_TIMEOUT:?}"
        )),
    }
}

/// One start-up attempt on the brokers: TCP check, then the publisher's connection and
/// producer id (which retries within the publisher's delivery timeout).
pub async fn connect_brokers(publisher: &KafkaPublisher, brokers: &[String]) -> Result<(), String> {
    tcp_reachable(brokers, PROBE_TIMEOUT).await?;
    publisher.connect().await.map_err(|e| format!("error: {e}"))
}

/// One check of the brokers while running: one bootstrap server accepts a connection.
pub async fn check_brokers(brokers: &[String]) -> Result<(), String> {
    tcp_reachable(brokers, PROBE_TIMEOUT).await
}

#[cfg(test)]
#[path = "dependencies_tests.rs"]
mod tests;
