//! The relay's own options as clap parses them: each a flag with an `OUTBOX_...`
//! environment fallback, all optional here, because an unset one falls through to the
//! config file and then to its default (both in `config`). The `--help` text is these
//! doc comments; `help` appends the defaults.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use super::command::Command;
use crate::duration::parse_duration;
use crate::logging::LogFormat;
use crate::notify::NotifyKind;

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
    pub command: Option<Command>,

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

/// `--log-format`, and `log_format` in the config file.
pub fn parse_log_format(text: &str) -> Result<LogFormat, String> {
    text.parse()
}

/// `--notify`, and `notify` in the config file.
pub fn parse_notify_kind(text: &str) -> Result<NotifyKind, String> {
    text.parse()
}
