//! What `/healthz` and `/readyz` answer.
//!
//! Alive (`/healthz` 200) from the moment the listener is bound until the relay task
//! ends. Ready (`/readyz` 200) only when the database and the brokers answer and the
//! relay has acquired its leases; otherwise 503 with a body that names each dependency it
//! waits for, where it is, and the last error, for example
//! `not ready: broker 127.0.0.1:9092 unreachable: connection refused (retrying)`.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// One of the two services the relay cannot work without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    /// The outbox database.
    Database,
    /// The Kafka brokers.
    Broker,
}

impl fmt::Display for Dependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dependency::Database => "database",
            Dependency::Broker => "broker",
        })
    }
}

/// What is known about a dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The first attempt is under way.
    Connecting,
    /// The last attempt or check succeeded.
    Up,
    /// The last attempt or check failed with this problem; another follows.
    Down(String),
}

#[derive(Debug)]
struct Watched {
    address: String,
    status: Status,
}

#[derive(Debug)]
struct State {
    database: Watched,
    broker: Watched,
    relay_ready: bool,
}

/// The shared state behind the probes.
#[derive(Debug)]
pub struct Readiness {
    live: AtomicBool,
    state: Mutex<State>,
}

impl Readiness {
    /// Alive, not ready: both dependencies connecting, at these (redacted) addresses.
    pub fn new(database_address: String, broker_address: String) -> Self {
        let watched = |address| Watched {
            address,
            status: Status::Connecting,
        };
        Readiness {
            live: AtomicBool::new(true),
            state: Mutex::new(State {
                database: watched(database_address),
                broker: watched(broker_address),
                relay_ready: false,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is plain data, valid after any panic elsewhere.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where `dependency` is, as logs and `/readyz` show it.
    pub fn address(&self, dependency: Dependency) -> String {
        let state = self.state();
        match dependency {
            Dependency::Database => state.database.address.clone(),
            Dependency::Broker => state.broker.address.clone(),
        }
    }

    /// Records the outcome of an attempt or a check.
    pub fn set(&self, dependency: Dependency, status: Status) {
        let mut state = self.state();
        match dependency {
            Dependency::Database => state.database.status = status,
            Dependency::Broker => state.broker.status = status,
        }
    }

    /// Records whether the relay holds its leases (its first acquisition is done).
    pub fn set_relay_ready(&self, ready: bool) {
        self.state().relay_ready = ready;
    }

    /// Marks the process dead (the relay task ended).
    pub fn set_dead(&self) {
        self.live.store(false, Ordering::Release);
    }

    /// `/healthz`.
    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// `/readyz`: `Ok` when ready, else why not (one clause per reason).
    pub fn check(&self) -> Result<(), String> {
        let state = self.state();
        let mut reasons = Vec::new();
        for (dependency, watched) in [
            (Dependency::Database, &state.database),
            (Dependency::Broker, &state.broker),
        ] {
            match &watched.status {
                Status::Up => {}
                Status::Connecting => {
                    reasons.push(format!("{dependency} {} connecting", watched.address));
                }
                Status::Down(problem) => reasons.push(format!(
                    "{dependency} {} {problem} (retrying)",
                    watched.address
                )),
            }
        }
        if reasons.is_empty() && !state.relay_ready {
            reasons.push("acquiring leases".to_owned());
        }
        if reasons.is_empty() {
            Ok(())
        } else {
            Err(format!("not ready: {}", reasons.join("; ")))
        }
    }
}

#[cfg(test)]
#[path = "readiness_tests.rs"]
mod tests;
