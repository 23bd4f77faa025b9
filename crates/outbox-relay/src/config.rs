//! Configuration from flags, environment variables and an optional TOML file, in that
//! order of precedence, validated completely before anything starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use outbox_core::{
    OptionsError, OutboxSchema, OutboxTables, ParkPolicy, RelayOptions, SchemaError,
};
use serde::Deserialize;

use crate::duration::parse_duration;
use crate::logging::LogFormat;
use crate::notify::{NotifyConfig, NotifyKind};

/// Default `--client-id`.
pub const DEFAULT_CLIENT_ID: &str = "outbox-relay";
/// Default `--listen`: loopback only, so the endpoints are not exposed by accident.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    9464,
));
/// Default `--shutdown-grace`.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Default `--migrate`: the tables are the application's to create.
pub const DEFAULT_MIGRATE: bool = false;
/// Default `--tls`.
pub const DEFAULT_TLS: bool = false;
/// Default `--backlog-sampling`: on for the binary (the library's default is off), since
/// a standalone relay is where an operator reads the backlog gauges.
pub const DEFAULT_BACKLOG_SAMPLING: bool = true;

/// Command line. Every option can also come from the environment (`OUTBOX_...`) or the
/// TOML file named by `--config` (same names, `-` becomes `_`).
#[derive(Debug, Parser, Default)]
#[command(
    name = "outbox-relay",
    version,
    about = "Publishes pending transactional-outbox rows from a database to Kafka.",
    long_about = "Publishes pending transactional-outbox rows from a database to Kafka, \
deleting each row only after the broker acknowledged it. Run any number of instances \
against one outbox: they divide its buckets between them.\n\n\
Precedence: command-line flag, then environment variable, then the --config file, then the default.\n\
Durations are written like 500ms, 30s, 2m or 1h.\n\n\
Endpoints on --listen, served from the start: /metrics (Prometheus), /healthz (200 while the \
process runs), /readyz (200 once the database and the brokers answer and the leases are \
acquired; otherwise 503 with a body naming what it waits for, its address and last error).\n\n\
Dependencies: the database and the brokers are connected with retries, never a reason to \
exit: the first attempt at once, the next after --error-backoff, doubling up to \
--max-error-backoff, each failure one WARN line (what, where with the password redacted, \
the error, retry_in_ms). While running, each is checked every --lease-renew-interval (a TCP \
connection to the database and a ping on a connection of its own; a TCP connection to one \
bootstrap server); a failing one makes /readyz 503 naming it until it answers again, while \
the relay keeps retrying its own work.\n\n\
Logs: standard output, text or --log-format json; this project's crates at INFO and \
everything else at WARN unless RUST_LOG says otherwise; colour only on a terminal without \
NO_COLOR.\n\n\
Exit status: 0 after SIGTERM/SIGINT, 1 on invalid configuration, 2 on a fatal misconfiguration \
found at run time (for example a writer using a larger bucket count)."
)]
pub struct Cli {
    /// Operator commands; without one, the relay runs.
    #[command(subcommand)]
    pub command: Option<crate::parked::Command>,

    /// TOML file with any of the options below.
    #[arg(long, env = "OUTBOX_CONFIG", value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,

    /// Database URL: postgres://, mysql:// or sqlite://.
    #[arg(long, env = "OUTBOX_DATABASE_URL", value_name = "URL", global = true)]
    pub database_url: Option<String>,
    /// Run the outbox migration before starting (creates the tables if missing).
    #[arg(long, env = "OUTBOX_MIGRATE")]
    pub migrate: Option<bool>,
    /// Database schema of the outbox tables (PostgreSQL).
    #[arg(long, env = "OUTBOX_SCHEMA", global = true)]
    pub schema: Option<String>,
    /// Messages table name.
    #[arg(long, env = "OUTBOX_MESSAGES_TABLE", global = true)]
    pub messages_table: Option<String>,
    /// Leases table name.
    #[arg(long, env = "OUTBOX_LEASES_TABLE", global = true)]
    pub leases_table: Option<String>,
    /// Relays (heartbeat) table name.
    #[arg(long, env = "OUTBOX_RELAYS_TABLE", global = true)]
    pub relays_table: Option<String>,
    /// Parked-rows table name.
    #[arg(long, env = "OUTBOX_PARKED_TABLE", global = true)]
    pub parked_table: Option<String>,

    /// Kafka bootstrap servers, comma-separated host:port.
    #[arg(long, env = "OUTBOX_BROKERS", value_name = "HOST:PORT,...")]
    pub brokers: Option<String>,
    /// Kafka client id.
    #[arg(long, env = "OUTBOX_CLIENT_ID")]
    pub client_id: Option<String>,
    /// Connect to the brokers with TLS.
    #[arg(long, env = "OUTBOX_TLS")]
    pub tls: Option<bool>,
    /// PEM file with the CA certificates to trust (default: the platform's web roots).
    #[arg(long, env = "OUTBOX_TLS_CA_FILE", value_name = "FILE")]
    pub tls_ca_file: Option<PathBuf>,
    /// SASL mechanism: plain, scram-sha-256 or scram-sha-512.
    #[arg(long, env = "OUTBOX_SASL_MECHANISM")]
    pub sasl_mechanism: Option<String>,
    /// SASL user name.
    #[arg(long, env = "OUTBOX_SASL_USERNAME")]
    pub sasl_username: Option<String>,
    /// SASL password (prefer the environment variable to the flag).
    #[arg(long, env = "OUTBOX_SASL_PASSWORD", hide_env_values = true)]
    pub sasl_password: Option<String>,

    /// This relay's id in the lease tables. Default: `<host>-<metrics name>`, the host from
    /// POD_NAME, HOSTNAME or the kernel's host name: stable across restarts, so a relay
    /// restarted after a crash takes its own leases back at once (docs/relay-id.md). Two
    /// live relays of one outbox on one host need explicit, distinct ids.
    #[arg(long, env = "OUTBOX_RELAY_ID")]
    pub relay_id: Option<String>,
    /// Ordering buckets; identical for every writer and relay of the outbox.
    #[arg(long, env = "OUTBOX_BUCKET_COUNT", global = true)]
    pub bucket_count: Option<u32>,
    /// Rows per batch.
    #[arg(long, env = "OUTBOX_BATCH_SIZE")]
    pub batch_size: Option<usize>,
    /// Fallback discovery interval (commit notifications cut idle waits short).
    #[arg(long, env = "OUTBOX_POLL_INTERVAL", value_parser = parse_duration)]
    pub poll_interval: Option<Duration>,
    /// Lease duration; a relay whose heartbeat is older counts as gone.
    #[arg(long, env = "OUTBOX_LEASE_DURATION", value_parser = parse_duration, global = true)]
    pub lease_duration: Option<Duration>,
    /// Lease renewal interval; also the pause between two dependency checks while running.
    #[arg(long, env = "OUTBOX_LEASE_RENEW_INTERVAL", value_parser = parse_duration)]
    pub lease_renew_interval: Option<Duration>,
    /// Whole-call publish budget (only needed for stores without lease renewal).
    #[arg(long, env = "OUTBOX_MAX_PUBLISH_DURATION", value_parser = parse_duration)]
    pub max_publish_duration: Option<Duration>,
    /// Largest produce request in bytes; writers must use the same value (it is their
    /// record-size limit).
    #[arg(long, env = "OUTBOX_MAX_REQUEST_SIZE", value_name = "BYTES")]
    pub max_request_size: Option<usize>,
    /// Header carrying the message id.
    #[arg(long, env = "OUTBOX_MESSAGE_ID_HEADER")]
    pub message_id_header: Option<String>,
    /// Value of the outbox.name metric label.
    #[arg(long, env = "OUTBOX_METRICS_NAME")]
    pub metrics_name: Option<String>,
    /// Sample the backlog for the pending-message gauges.
    #[arg(long, env = "OUTBOX_BACKLOG_SAMPLING")]
    pub backlog_sampling: Option<bool>,
    /// Pause after each backlog sample.
    #[arg(long, env = "OUTBOX_METRICS_INTERVAL", value_parser = parse_duration)]
    pub metrics_interval: Option<Duration>,
    /// Deadline of one backlog sample.
    #[arg(long, env = "OUTBOX_METRICS_TIMEOUT", value_parser = parse_duration)]
    pub metrics_timeout: Option<Duration>,
    /// Sample the backlog only on the relay holding bucket 0.
    #[arg(long, env = "OUTBOX_METRICS_BUCKET_ZERO_ONLY")]
    pub metrics_bucket_zero_only: Option<bool>,
    /// Permanent failures of one row before it is parked; `never` retries it forever (its
    /// bucket then waits behind it).
    #[arg(long, env = "OUTBOX_MAX_PUBLISH_ATTEMPTS", value_name = "N|never")]
    pub max_publish_attempts: Option<String>,
    /// What happens to a parked row's key: hold-key (its later rows are parked behind it,
    /// order kept) or skip-row (they are published, order broken).
    #[arg(long, env = "OUTBOX_PARK_POLICY", value_name = "hold-key|skip-row")]
    pub park_policy: Option<String>,
    /// First backoff after a failure (also the first wait before reconnecting the database
    /// or the brokers); doubles per consecutive failure.
    #[arg(long, env = "OUTBOX_ERROR_BACKOFF", value_parser = parse_duration)]
    pub error_backoff: Option<Duration>,
    /// Backoff ceiling.
    #[arg(long, env = "OUTBOX_MAX_ERROR_BACKOFF", value_parser = parse_duration)]
    pub max_error_backoff: Option<Duration>,

    /// Address of the /metrics, /healthz and /readyz endpoints.
    #[arg(long, env = "OUTBOX_LISTEN", value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// How long an in-flight publish may finish after SIGTERM before it is abandoned
    /// (nothing is deleted then).
    #[arg(long, env = "OUTBOX_SHUTDOWN_GRACE", value_parser = parse_duration)]
    pub shutdown_grace: Option<Duration>,

    /// Log line format: text, or json (one JSON object per line). RUST_LOG sets the
    /// filter.
    #[arg(long, env = "OUTBOX_LOG_FORMAT", value_name = "text|json", value_parser = parse_log_format)]
    pub log_format: Option<LogFormat>,

    /// Cross-process commit notifications: none (polling only), postgres (LISTEN/NOTIFY)
    /// or redis (pub/sub). Hints only wake the relay early; polling stays on.
    #[arg(long, env = "OUTBOX_NOTIFY", value_name = "none|postgres|redis", value_parser = parse_notify_kind)]
    pub notify: Option<NotifyKind>,
    /// Server of the notifications: required for redis; for postgres the database URL
    /// when not set.
    #[arg(long, env = "OUTBOX_NOTIFY_URL", value_name = "URL")]
    pub notify_url: Option<String>,
    /// Notification channel, the same on every writer and relay of the outbox
    /// (a-z, 0-9 and _, at most 63 bytes).
    #[arg(long, env = "OUTBOX_NOTIFY_CHANNEL", value_name = "NAME")]
    pub notify_channel: Option<String>,
}

/// The same options as a TOML file; unknown keys are an error.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    database_url: Option<String>,
    migrate: Option<bool>,
    schema: Option<String>,
    messages_table: Option<String>,
    leases_table: Option<String>,
    relays_table: Option<String>,
    parked_table: Option<String>,
    brokers: Option<String>,
    client_id: Option<String>,
    tls: Option<bool>,
    tls_ca_file: Option<PathBuf>,
    sasl_mechanism: Option<String>,
    sasl_username: Option<String>,
    sasl_password: Option<String>,
    relay_id: Option<String>,
    bucket_count: Option<u32>,
    batch_size: Option<usize>,
    poll_interval: Option<String>,
    lease_duration: Option<String>,
    lease_renew_interval: Option<String>,
    max_publish_duration: Option<String>,
    message_id_header: Option<String>,
    max_request_size: Option<usize>,
    metrics_name: Option<String>,
    backlog_sampling: Option<bool>,
    metrics_interval: Option<String>,
    metrics_timeout: Option<String>,
    metrics_bucket_zero_only: Option<bool>,
    max_publish_attempts: Option<String>,
    park_policy: Option<String>,
    error_backoff: Option<String>,
    max_error_backoff: Option<String>,
    listen: Option<String>,
    shutdown_grace: Option<String>,
    log_format: Option<String>,
    notify: Option<String>,
    notify_url: Option<String>,
    notify_channel: Option<String>,
}

/// A configuration problem, naming the option.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required option is missing.
    #[error("{0} is required (flag --{1}, environment {2}, or `{3}` in the config file)")]
    Missing(&'static str, &'static str, &'static str, &'static str),
    /// The file could not be read or parsed.
    #[error("config file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A value is invalid.
    #[error("{option}: {reason}")]
    Invalid {
        /// The option.
        option: &'static str,
        /// Why.
        reason: String,
    },
    /// The relay options broke a rule.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The table names, bucket count or message-id header broke a rule.
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

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

/// The database URL from the flag/environment or the file, with a supported scheme.
fn database_url(cli: Option<String>, file: Option<String>) -> Result<String, ConfigError> {
    let database_url = cli.or(file).ok_or(ConfigError::Missing(
        "the database URL",
        "database-url",
        "OUTBOX_DATABASE_URL",
        "database_url",
    ))?;
    if ![
        "postgres://",
        "postgresql://",
        "mysql://",
        "mariadb://",
        "sqlite:",
    ]
    .iter()
    .any(|p| database_url.starts_with(p))
    {
        return Err(ConfigError::Invalid {
            option: "database-url",
            reason: "must start with postgres://, mysql:// or sqlite:".into(),
        });
    }
    Ok(database_url)
}

/// Schema, messages, leases, relays and parked table names, each optional.
fn tables(names: [Option<String>; 5]) -> Result<OutboxTables, ConfigError> {
    let [schema, messages, leases, relays, parked] = names;
    let mut tables = OutboxTables::builder();
    if let Some(v) = schema {
        tables = tables.schema(v);
    }
    if let Some(v) = messages {
        tables = tables.messages(v);
    }
    if let Some(v) = leases {
        tables = tables.leases(v);
    }
    if let Some(v) = relays {
        tables = tables.relays(v);
    }
    if let Some(v) = parked {
        tables = tables.parked(v);
    }
    Ok(tables.build().map_err(SchemaError::from)?)
}

/// `N` (>= 1) or `never`.
fn parse_attempts(text: &str) -> Result<Option<std::num::NonZeroU32>, ConfigError> {
    if text.eq_ignore_ascii_case("never") {
        return Ok(None);
    }
    text.parse::<std::num::NonZeroU32>()
        .map(Some)
        .map_err(|_| ConfigError::Invalid {
            option: "max-publish-attempts",
            reason: format!("{text:?} is neither a positive number nor `never`"),
        })
}

/// The name `--park-policy` takes for `policy` (`None` for a policy the binary does not
/// offer).
pub fn park_policy_name(policy: ParkPolicy) -> Option<&'static str> {
    match policy {
        ParkPolicy::HoldKey => Some("hold-key"),
        ParkPolicy::SkipRow => Some("skip-row"),
        _ => None,
    }
}

fn parse_log_format(text: &str) -> Result<LogFormat, String> {
    text.parse()
}

fn parse_notify_kind(text: &str) -> Result<NotifyKind, String> {
    text.parse()
}

fn parse_park_policy(text: &str) -> Result<ParkPolicy, ConfigError> {
    match text.to_ascii_lowercase().as_str() {
        "hold-key" => Ok(ParkPolicy::HoldKey),
        "skip-row" => Ok(ParkPolicy::SkipRow),
        _ => Err(ConfigError::Invalid {
            option: "park-policy",
            reason: format!("{text:?} is neither hold-key nor skip-row"),
        }),
    }
}

/// A config-file value through `parse`; a refusal names the option.
fn file_value<T>(
    option: &'static str,
    value: Option<String>,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, ConfigError> {
    value
        .map(|v| parse(&v).map_err(|reason| ConfigError::Invalid { option, reason }))
        .transpose()
}

fn file_duration(
    option: &'static str,
    value: Option<String>,
) -> Result<Option<Duration>, ConfigError> {
    file_value(option, value, parse_duration)
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

impl Cli {
    fn file(&self) -> Result<FileConfig, ConfigError> {
        match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                toml::from_str::<FileConfig>(&text).map_err(|e| ConfigError::File {
                    path: path.clone(),
                    reason: e.to_string(),
                })
            }
            None => Ok(FileConfig::default()),
        }
    }

    /// The database, table names, bucket count and lease duration only (for
    /// `outbox-relay parked ...` and `outbox-relay status`, which need no broker).
    pub fn resolve_database(&self) -> Result<DatabaseConfig, ConfigError> {
        let file = self.file()?;
        let database_url = database_url(self.database_url.clone(), file.database_url.clone())?;
        let tables = tables([
            self.schema.clone().or(file.schema),
            self.messages_table.clone().or(file.messages_table),
            self.leases_table.clone().or(file.leases_table),
            self.relays_table.clone().or(file.relays_table),
            self.parked_table.clone().or(file.parked_table),
        ])?;
        let mut schema = OutboxSchema::builder().tables(tables);
        if let Some(v) = self.bucket_count.or(file.bucket_count) {
            schema = schema.bucket_count(v);
        }
        // The relays' value, so that `status` judges their heartbeats by their own rule;
        // the relays refuse zero, and so does this.
        let lease_duration = self
            .lease_duration
            .or(file_duration("lease-duration", file.lease_duration)?)
            .unwrap_or_else(|| RelayOptions::default().lease_duration());
        if lease_duration.is_zero() {
            return Err(ConfigError::Invalid {
                option: "lease-duration",
                reason: "must be above zero".into(),
            });
        }
        Ok(DatabaseConfig {
            database_url,
            schema: schema.build()?,
            lease_duration,
        })
    }

    /// Merges the file under the flags and environment, and validates everything.
    pub fn resolve(self) -> Result<Config, ConfigError> {
        let file = self.file()?;
        let database_url = database_url(self.database_url, file.database_url)?;
        let brokers_text = self.brokers.or(file.brokers).ok_or(ConfigError::Missing(
            "the Kafka bootstrap servers",
            "brokers",
            "OUTBOX_BROKERS",
            "brokers",
        ))?;
        let brokers: Vec<String> = brokers_text
            .split(',')
            .map(str::trim)
            .filter(|b| !b.is_empty())
            .map(str::to_owned)
            .collect();
        if brokers.is_empty() {
            return Err(ConfigError::Invalid {
                option: "brokers",
                reason: "lists no server".into(),
            });
        }
        for broker in &brokers {
            let port_ok = broker
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if !port_ok {
                return Err(ConfigError::Invalid {
                    option: "brokers",
                    reason: format!("{broker:?} is not host:port"),
                });
            }
        }
        let sasl = match (
            self.sasl_mechanism.or(file.sasl_mechanism),
            self.sasl_username.or(file.sasl_username),
            self.sasl_password.or(file.sasl_password),
        ) {
            (None, None, None) => None,
            (Some(mechanism), Some(username), Some(password)) => {
                let mechanism = match mechanism.to_ascii_lowercase().as_str() {
                    "plain" => SaslMechanism::Plain,
                    "scram-sha-256" => SaslMechanism::ScramSha256,
                    "scram-sha-512" => SaslMechanism::ScramSha512,
                    other => {
                        return Err(ConfigError::Invalid {
                            option: "sasl-mechanism",
                            reason: format!("{other:?}; use plain, scram-sha-256 or scram-sha-512"),
                        });
                    }
                };
                Some(Sasl {
                    mechanism,
                    username,
                    password,
                })
            }
            _ => {
                return Err(ConfigError::Invalid {
                    option: "sasl-mechanism",
                    reason: "SASL needs a mechanism, a user name and a password together".into(),
                });
            }
        };
        let listen = match self.listen {
            Some(addr) => addr,
            None => match file.listen {
                Some(text) => text.parse().map_err(|e| ConfigError::Invalid {
                    option: "listen",
                    reason: format!("{text:?}: {e}"),
                })?,
                None => DEFAULT_LISTEN,
            },
        };

        let tables = tables([
            self.schema.or(file.schema),
            self.messages_table.or(file.messages_table),
            self.leases_table.or(file.leases_table),
            self.relays_table.or(file.relays_table),
            self.parked_table.or(file.parked_table),
        ])?;
        let mut schema = OutboxSchema::builder().tables(tables);
        if let Some(v) = self.bucket_count.or(file.bucket_count) {
            schema = schema.bucket_count(v);
        }
        if let Some(v) = self.message_id_header.or(file.message_id_header) {
            schema = schema.message_id_header(v);
        }
        if let Some(v) = self.max_request_size.or(file.max_request_size) {
            schema = schema.max_request_size(v);
        }

        let mut b = RelayOptions::builder().schema(schema.build()?);
        if let Some(v) = self.relay_id.or(file.relay_id) {
            b = b.relay_id(v);
        }
        if let Some(v) = self.batch_size.or(file.batch_size) {
            b = b.batch_size(v);
        }
        macro_rules! duration {
            ($cli:expr, $file:expr, $option:literal, $setter:ident) => {
                if let Some(v) = $cli.or(file_duration($option, $file)?) {
                    b = b.$setter(v);
                }
            };
        }
        duration!(
            self.poll_interval,
            file.poll_interval,
            "poll-interval",
            poll_interval
        );
        duration!(
            self.lease_duration,
            file.lease_duration,
            "lease-duration",
            lease_duration
        );
        duration!(
            self.lease_renew_interval,
            file.lease_renew_interval,
            "lease-renew-interval",
            lease_renew_interval
        );
        duration!(
            self.max_publish_duration,
            file.max_publish_duration,
            "max-publish-duration",
            max_publish_duration
        );
        duration!(
            self.metrics_interval,
            file.metrics_interval,
            "metrics-interval",
            metrics_collection_interval
        );
        duration!(
            self.metrics_timeout,
            file.metrics_timeout,
            "metrics-timeout",
            metrics_collection_timeout
        );
        duration!(
            self.error_backoff,
            file.error_backoff,
            "error-backoff",
            error_backoff
        );
        duration!(
            self.max_error_backoff,
            file.max_error_backoff,
            "max-error-backoff",
            max_error_backoff
        );
        if let Some(v) = self.metrics_name.or(file.metrics_name) {
            b = b.metrics_name(v);
        }
        if let Some(v) = self.max_publish_attempts.or(file.max_publish_attempts) {
            b = b.max_publish_attempts(parse_attempts(&v)?);
        }
        if let Some(v) = self.park_policy.or(file.park_policy) {
            b = b.park_policy(parse_park_policy(&v)?);
        }
        b = b.backlog_sampling(
            self.backlog_sampling
                .or(file.backlog_sampling)
                .unwrap_or(DEFAULT_BACKLOG_SAMPLING),
        );
        if let Some(v) = self
            .metrics_bucket_zero_only
            .or(file.metrics_bucket_zero_only)
        {
            b = b.collect_metrics_on_bucket_zero_owner_only(v);
        }
        let relay = b.build()?;
        let shutdown_grace = match self.shutdown_grace {
            Some(d) => d,
            None => file_duration("shutdown-grace", file.shutdown_grace)?
                .unwrap_or(DEFAULT_SHUTDOWN_GRACE),
        };
        let log_format = match self.log_format {
            Some(format) => format,
            None => {
                file_value("log-format", file.log_format, parse_log_format)?.unwrap_or_default()
            }
        };
        let notify_kind = match self.notify {
            Some(kind) => kind,
            None => file_value("notify", file.notify, parse_notify_kind)?.unwrap_or_default(),
        };
        let notify = crate::notify::resolve(
            notify_kind,
            self.notify_url.or(file.notify_url),
            self.notify_channel.or(file.notify_channel),
            &database_url,
            relay.schema().tables(),
        )?;
        Ok(Config {
            database_url,
            migrate: self.migrate.or(file.migrate).unwrap_or(DEFAULT_MIGRATE),
            brokers,
            client_id: self
                .client_id
                .or(file.client_id)
                .unwrap_or_else(|| DEFAULT_CLIENT_ID.to_owned()),
            tls: self.tls.or(file.tls).unwrap_or(DEFAULT_TLS),
            tls_ca_file: self.tls_ca_file.or(file.tls_ca_file),
            sasl,
            relay,
            listen,
            shutdown_grace,
            log_format,
            notify,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> Cli {
        let mut argv = vec!["outbox-relay"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).unwrap()
    }

    #[test]
    fn minimal_flags_resolve_with_defaults() {
        let c = cli(&[
            "--database-url",
            "sqlite://x.db",
            "--brokers",
            "127.0.0.1:9092",
        ])
        .resolve()
        .unwrap();
        assert_eq!(c.brokers, vec!["127.0.0.1:9092"]);
        assert_eq!(c.relay.bucket_count().get(), 8);
        assert!(c.relay.backlog_sampling());
        assert_eq!(c.listen, SocketAddr::from(([127, 0, 0, 1], 9464)));
        assert_eq!(c.shutdown_grace, Duration::from_secs(10));
        assert_eq!(c.relay.max_publish_attempts().map(|n| n.get()), Some(3));
        assert_eq!(c.relay.park_policy(), ParkPolicy::HoldKey);
        assert_eq!(c.relay.schema().tables().parked(), "outbox_parked");
    }

    #[test]
    fn parking_options_resolve_and_reject_nonsense() {
        let base = ["--database-url", "sqlite://x.db", "--brokers", "b:1"];
        let with = |extra: &[&str]| {
            let mut args = base.to_vec();
            args.extend_from_slice(extra);
            cli(&args).resolve()
        };
        let c = with(&[
            "--max-publish-attempts",
            "never",
            "--park-policy",
            "skip-row",
            "--parked-table",
            "orders_parked",
        ])
        .unwrap();
        assert_eq!(c.relay.max_publish_attempts(), None);
        assert_eq!(c.relay.park_policy(), ParkPolicy::SkipRow);
        assert_eq!(c.relay.schema().tables().parked(), "orders_parked");
        assert_eq!(
            with(&["--max-publish-attempts", "5"])
                .unwrap()
                .relay
                .max_publish_attempts()
                .map(|n| n.get()),
            Some(5)
        );
        for (flag, value) in [
            ("--max-publish-attempts", "0"),
            ("--max-publish-attempts", "many"),
            ("--park-policy", "drop"),
        ] {
            let e = with(&[flag, value]).unwrap_err().to_string();
            assert!(e.contains(flag.trim_start_matches("--")), "{e}");
        }
    }

    #[test]
    fn missing_and_invalid_values_name_the_option() {
        let e = cli(&["--brokers", "b:1"])
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(e.contains("OUTBOX_DATABASE_URL"), "{e}");
        let e = cli(&["--database-url", "sqlite://x", "--brokers", "nope"])
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(e.contains("brokers") && e.contains("host:port"), "{e}");
        let e = cli(&["--database-url", "oracle://x", "--brokers", "b:1"])
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(e.contains("database-url"), "{e}");
        let e = cli(&[
            "--database-url",
            "sqlite://x",
            "--brokers",
            "b:1",
            "--lease-renew-interval",
            "40s",
        ])
        .resolve()
        .unwrap_err()
        .to_string();
        assert!(e.contains("lease_renew_interval"), "{e}");
        let e = cli(&[
            "--database-url",
            "sqlite://x",
            "--brokers",
            "b:1",
            "--sasl-mechanism",
            "plain",
        ])
        .resolve()
        .unwrap_err()
        .to_string();
        assert!(e.contains("together"), "{e}");
        // Table names, bucket count and header are checked once, as the outbox schema.
        let schema_error = |flag: &str, value: &str| {
            cli(&[
                "--database-url",
                "sqlite://x",
                "--brokers",
                "b:1",
                flag,
                value,
            ])
            .resolve()
            .unwrap_err()
        };
        for (flag, value, says) in [
            ("--bucket-count", "0", "bucket_count"),
            ("--message-id-header", " ", "message_id_header"),
            ("--messages-table", "a;b", "messages table"),
        ] {
            let e = schema_error(flag, value);
            assert!(matches!(e, ConfigError::Schema(_)), "{flag}: {e:?}");
            assert!(e.to_string().contains(says), "{flag}: {e}");
        }
        assert!(
            Cli::try_parse_from(["outbox-relay", "--poll-interval", "5"]).is_err(),
            "a duration needs a unit"
        );
    }

    #[test]
    fn the_file_fills_gaps_and_flags_win() {
        let dir = std::env::temp_dir().join(format!("outbox-relay-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("relay.toml");
        std::fs::write(
            &path,
            "database_url = \"postgres://db/x\"\nbrokers = \"k1:9092,k2:9092\"\nbucket_count = 16\npoll_interval = \"250ms\"\nmessages_table = \"orders_outbox\"\n",
        )
        .unwrap();
        let c = cli(&["--config", path.to_str().unwrap(), "--bucket-count", "32"])
            .resolve()
            .unwrap();
        assert_eq!(c.database_url, "postgres://db/x");
        assert_eq!(c.brokers.len(), 2);
        assert_eq!(c.relay.bucket_count().get(), 32, "flag beats file");
        assert_eq!(c.relay.poll_interval(), Duration::from_millis(250));
        assert_eq!(c.relay.schema().tables().messages(), "orders_outbox");
        assert_eq!(c.relay.schema().bucket_count().get(), 32);
        // The log format and the notification transport come from the file too.
        std::fs::write(
            &path,
            "database_url = \"postgres://db/x\"\nbrokers = \"k:9092\"\nlog_format = \"json\"\nnotify = \"postgres\"\nnotify_channel = \"orders_prod\"\n",
        )
        .unwrap();
        let c = cli(&["--config", path.to_str().unwrap()])
            .resolve()
            .unwrap();
        assert_eq!(c.log_format, LogFormat::Json);
        let notify = c.notify.unwrap();
        assert_eq!(notify.kind, NotifyKind::Postgres);
        assert_eq!(notify.url, "postgres://db/x", "the database by default");
        assert_eq!(notify.channel.as_str(), "orders_prod");
        let c = cli(&[
            "--config",
            path.to_str().unwrap(),
            "--log-format",
            "text",
            "--notify",
            "none",
            "--notify-channel",
            "x",
        ])
        .resolve();
        assert!(
            c.unwrap_err().to_string().contains("notify-channel"),
            "a channel without a transport is a mistake"
        );
        std::fs::write(
            &path,
            "database_url = \"postgres://db/x\"\nbrokers = \"k:9092\"\nlog_format = \"xml\"\n",
        )
        .unwrap();
        let e = cli(&["--config", path.to_str().unwrap()])
            .resolve()
            .unwrap_err();
        assert!(e.to_string().contains("log-format"), "{e}");
        std::fs::write(&path, "databse_url = \"typo\"\n").unwrap();
        let e = cli(&["--config", path.to_str().unwrap()])
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
