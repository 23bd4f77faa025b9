//! What a checked configuration holds: [`Config`] for the relay, [`DatabaseConfig`]
//! for the operator commands that need only the database.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use outbox_core::{OutboxSchema, RelayOptions};

use crate::logging::LogFormat;
use crate::notify::NotifyConfig;

/// SASL settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sasl {
    /// plain, scram-sha-256 or scram-sha-512.
    pub mechanism: SaslMechanism,
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
}

/// Supported SASL mechanisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// PLAIN.
    Plain,
    /// SCRAM-SHA-256.
    ScramSha256,
    /// SCRAM-SHA-512.
    ScramSha512,
}

/// Everything the relay needs, validated.
#[derive(Debug, Clone)]
pub struct Config {
    /// Database URL.
    pub database_url: String,
    /// Run the migration first.
    pub migrate: bool,
    /// Bootstrap servers.
    pub brokers: Vec<String>,
    /// Client id.
    pub client_id: String,
    /// TLS on.
    pub tls: bool,
    /// Extra CA file.
    pub tls_ca_file: Option<PathBuf>,
    /// SASL.
    pub sasl: Option<Sasl>,
    /// Relay options, carrying the [`OutboxSchema`] (table names, bucket count,
    /// message-id header) that the store and the publisher are built from too.
    pub relay: RelayOptions,
    /// Endpoint address.
    pub listen: SocketAddr,
    /// Shutdown grace.
    pub shutdown_grace: Duration,
    /// Log line format.
    pub log_format: LogFormat,
    /// The commit-notification transport, if any.
    pub notify: Option<NotifyConfig>,
}

/// What the operator commands need: where the outbox's tables are, its bucket count,
/// and the relays' lease duration (by which `status` judges heartbeats and leases).
#[derive(Debug)]
pub struct DatabaseConfig {
    /// The database URL.
    pub database_url: String,
    /// The outbox's table names and bucket count.
    pub schema: OutboxSchema,
    /// The relays' lease duration.
    pub lease_duration: Duration,
}
