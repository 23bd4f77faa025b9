//! Connection and delivery settings, validated once by [`KafkaPublisherBuilder::build`].
//!
//! Only what may legitimately differ between deployments is configurable. acks=all,
//! idempotence and the key partitioner have no setting at all: there is nothing a
//! user's configuration could override. Someone who wants other semantics implements
//! [`outbox_core::Publisher`] themselves, deliberately.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use outbox_core::OutboxSchema;
use outbox_core::options::DEFAULT_MESSAGE_ID_HEADER;
use outbox_core::validate::validate_label;
use outbox_core::wire_size::MAX_CLIENT_ID_LEN;

use crate::compression::Compression;

/// Kafka's default `max.request.size`, 1 MiB, the schema's default (one definition, in
/// `outbox-core`).
pub use outbox_core::wire_size::DEFAULT_MAX_REQUEST_SIZE;
/// Default bound on one request (and on connecting).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bound on one publish call's retries.
pub const DEFAULT_DELIVERY_TIMEOUT: Duration = Duration::from_secs(60);
/// Default client id sent to the brokers.
pub const DEFAULT_CLIENT_ID: &str = "outbox-relay";
/// The smallest accepted `max_request_size` (one definition, in `outbox-core`).
pub use outbox_core::wire_size::MIN_MAX_REQUEST_SIZE;

/// SASL credentials, passed to rskafka's SASL implementation.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sasl {
    /// SASL/PLAIN. Use only over TLS: the password travels as is.
    Plain {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
    /// SASL/SCRAM-SHA-256.
    ScramSha256 {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
    /// SASL/SCRAM-SHA-512.
    ScramSha512 {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
}

impl Sasl {
    fn username(&self) -> &str {
        match self {
            Sasl::Plain { username, .. }
            | Sasl::ScramSha256 { username, .. }
            | Sasl::ScramSha512 { username, .. } => username,
        }
    }

    fn mechanism(&self) -> &'static str {
        match self {
            Sasl::Plain { .. } => "PLAIN",
            Sasl::ScramSha256 { .. } => "SCRAM-SHA-256",
            Sasl::ScramSha512 { .. } => "SCRAM-SHA-512",
        }
    }

    pub(crate) fn to_rskafka(&self) -> rskafka::client::SaslConfig {
        use rskafka::client::{Credentials, SaslConfig};
        match self.clone() {
            Sasl::Plain { username, password } => {
                SaslConfig::Plain(Credentials::new(username, password))
            }
            Sasl::ScramSha256 { username, password } => {
                SaslConfig::ScramSha256(Credentials::new(username, password))
            }
            Sasl::ScramSha512 { username, password } => {
                SaslConfig::ScramSha512(Credentials::new(username, password))
            }
        }
    }
}

/// Never prints the password.
impl fmt::Debug for Sasl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sasl")
            .field("mechanism", &self.mechanism())
            .field("username", &self.username())
            .finish_non_exhaustive()
    }
}

/// A setting rejected by [`KafkaPublisherBuilder::build`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No bootstrap server given.
    #[error("at least one bootstrap server is required")]
    NoBootstrapServers,
    /// A bootstrap entry is not `host:port`.
    #[error("bootstrap server {0:?} is not `host:port` with a port in 1..=65535")]
    InvalidBootstrapServer(String),
    /// The client id is blank, too long or has control characters.
    #[error("client id {0:?} must be 1..=255 characters, not blank, without control characters")]
    InvalidClientId(String),
    /// A duration that must be positive is zero, or one too large for Kafka's
    /// millisecond fields.
    #[error("{name} must be between 1 ms and {max:?}, got {value:?}")]
    InvalidDuration {
        /// The setting.
        name: &'static str,
        /// The value given.
        value: Duration,
        /// The largest allowed value.
        max: Duration,
    },
    /// The delivery timeout must leave room for at least one request.
    #[error("delivery_timeout ({delivery:?}) must be at least request_timeout ({request:?})")]
    DeliveryShorterThanRequest {
        /// The delivery timeout.
        delivery: Duration,
        /// The request timeout.
        request: Duration,
    },
    /// The maximum retry backoff is below the initial one.
    #[error("max_retry_backoff ({max:?}) must be at least retry_backoff ({initial:?})")]
    BackoffOrder {
        /// The initial backoff.
        initial: Duration,
        /// The maximum backoff.
        max: Duration,
    },
    /// `max_request_size` is out of range.
    #[error(
        "max_request_size must be between {MIN_MAX_REQUEST_SIZE} and 2147483647 bytes, got {0}"
    )]
    InvalidMaxRequestSize(usize),
    /// A SASL user name is empty.
    #[error("the SASL user name must not be empty")]
    EmptySaslUsername,
    /// The chosen compression codec is not compiled into this build.
    #[error(
        "{codec:?} compression is not compiled in: enable outbox-kafka's `{feature}` cargo \
         feature (or the outbox crate's)"
    )]
    CompressionNotEnabled {
        /// The codec chosen.
        codec: Compression,
        /// The cargo feature that compiles it in.
        feature: &'static str,
    },
}

/// Validated settings of a [`KafkaPublisher`](crate::KafkaPublisher).
#[derive(Debug, Clone)]
pub struct KafkaPublisherConfig {
    pub(crate) bootstrap_servers: Vec<String>,
    pub(crate) client_id: String,
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
    pub(crate) sasl: Option<Sasl>,
    pub(crate) request_timeout: Duration,
    pub(crate) delivery_timeout: Duration,
    pub(crate) retry_backoff: Duration,
    pub(crate) max_retry_backoff: Duration,
    pub(crate) metadata_max_age: Duration,
    pub(crate) max_request_size: usize,
    pub(crate) compression: Compression,
    pub(crate) message_id_header: String,
}

impl KafkaPublisherConfig {
    /// Bootstrap servers, `host:port` each.
    pub fn bootstrap_servers(&self) -> &[String] {
        &self.bootstrap_servers
    }
    /// Client id sent to the brokers.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }
    /// Whether connections use TLS.
    pub fn uses_tls(&self) -> bool {
        self.tls.is_some()
    }
    /// SASL credentials, if any.
    pub fn sasl(&self) -> Option<&Sasl> {
        self.sasl.as_ref()
    }
    /// Bound on one request and on opening a connection.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }
    /// Bound on one publish call, retries included.
    pub fn delivery_timeout(&self) -> Duration {
        self.delivery_timeout
    }
    /// First and largest pause between retries within a publish call.
    pub fn retry_backoff(&self) -> (Duration, Duration) {
        (self.retry_backoff, self.max_retry_backoff)
    }
    /// How long partition metadata is trusted before it is fetched again.
    pub fn metadata_max_age(&self) -> Duration {
        self.metadata_max_age
    }
    /// The largest produce request sent; also the limit of one record.
    pub fn max_request_size(&self) -> usize {
        self.max_request_size
    }
    /// Batch compression.
    pub fn compression(&self) -> Compression {
        self.compression
    }
    /// Name of the header carrying the message id.
    pub fn message_id_header(&self) -> &str {
        &self.message_id_header
    }
}

/// Builds a [`KafkaPublisher`](crate::KafkaPublisher); every setting is checked in
/// [`build`](Self::build), which does no I/O.
#[derive(Debug, Clone)]
pub struct KafkaPublisherBuilder {
    config: KafkaPublisherConfig,
}

impl KafkaPublisherBuilder {
    pub(crate) fn new(bootstrap_servers: Vec<String>) -> Self {
        KafkaPublisherBuilder {
            config: KafkaPublisherConfig {
                bootstrap_servers,
                client_id: DEFAULT_CLIENT_ID.to_owned(),
                tls: None,
                sasl: None,
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                delivery_timeout: DEFAULT_DELIVERY_TIMEOUT,
                retry_backoff: Duration::from_millis(100),
                max_retry_backoff: Duration::from_secs(1),
                metadata_max_age: Duration::from_secs(300),
                max_request_size: DEFAULT_MAX_REQUEST_SIZE,
                compression: Compression::None,
                message_id_header: DEFAULT_MESSAGE_ID_HEADER.to_owned(),
            },
        }
    }

    /// Client id sent to the brokers (default [`DEFAULT_CLIENT_ID`]).
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.config.client_id = client_id.into();
        self
    }

    /// Connects with TLS using this rustls configuration (the certificate is checked
    /// against the host name of each broker address).
    pub fn tls(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.config.tls = Some(config);
        self
    }

    /// Authenticates every connection with SASL.
    pub fn sasl(mut self, sasl: Sasl) -> Self {
        self.config.sasl = Some(sasl);
        self
    }

    /// Bound on one request and on opening a connection (default 30 s). Also the time
    /// the broker may wait for its in-sync replicas.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// Bound on one publish call including its retries (default 60 s). Keep it below
    /// the relay's lease and publish budget.
    pub fn delivery_timeout(mut self, timeout: Duration) -> Self {
        self.config.delivery_timeout = timeout;
        self
    }

    /// Pause before the first retry within a publish call, doubling up to `max`
    /// (defaults 100 ms and 1 s).
    pub fn retry_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.config.retry_backoff = initial;
        self.config.max_retry_backoff = max;
        self
    }

    /// How long partition metadata is trusted before it is fetched again (default
    /// 5 min). Errors that point at stale metadata refresh it at once.
    pub fn metadata_max_age(mut self, age: Duration) -> Self {
        self.config.metadata_max_age = age;
        self
    }

    /// Batch compression (default none).
    pub fn compression(mut self, compression: Compression) -> Self {
        self.config.compression = compression;
        self
    }

    /// The outbox's schema, shared with the writers, the relay's
    /// [`RelayOptions`](outbox_core::RelayOptions) and the consumers: every record
    /// carries its message id in the schema's `message_id_header` (validated by the
    /// schema), and no produce request exceeds the schema's `max_request_size` (the
    /// limit the writers check each record against at enqueue, so a record they accepted
    /// is never refused here as too large). Default [`OutboxSchema::default`]: header
    /// `x-outbox-message-id`, 1 MiB requests.
    pub fn schema(mut self, schema: &OutboxSchema) -> Self {
        self.config.message_id_header = schema.message_id_header().to_owned();
        self.config.max_request_size = schema.max_request_size();
        self
    }

    /// Validates the settings and returns the configuration.
    pub fn build_config(self) -> Result<KafkaPublisherConfig, ConfigError> {
        let c = self.config;
        if c.bootstrap_servers.is_empty() {
            return Err(ConfigError::NoBootstrapServers);
        }
        if let Some(bad) = c.bootstrap_servers.iter().find(|s| !is_host_port(s)) {
            return Err(ConfigError::InvalidBootstrapServer(bad.clone()));
        }
        // Kafka's client id is a string of at most 32767 bytes; the core's label rule
        // (not blank, 255 characters, no control characters) keeps it loggable.
        // The writers' size check counts the longest client id a publisher accepts.
        if validate_label(&c.client_id, MAX_CLIENT_ID_LEN).is_err()
            || c.client_id.len() > MAX_CLIENT_ID_LEN
        {
            return Err(ConfigError::InvalidClientId(c.client_id));
        }
        let kafka_ms = Duration::from_millis(i32::MAX as u64);
        let day = Duration::from_secs(86_400);
        for (name, value, max) in [
            ("request_timeout", c.request_timeout, kafka_ms),
            ("delivery_timeout", c.delivery_timeout, kafka_ms),
            ("retry_backoff", c.retry_backoff, day),
            ("max_retry_backoff", c.max_retry_backoff, day),
            ("metadata_max_age", c.metadata_max_age, day),
        ] {
            if value < Duration::from_millis(1) || value > max {
                return Err(ConfigError::InvalidDuration { name, value, max });
            }
        }
        if c.delivery_timeout < c.request_timeout {
            return Err(ConfigError::DeliveryShorterThanRequest {
                delivery: c.delivery_timeout,
                request: c.request_timeout,
            });
        }
        if c.max_retry_backoff < c.retry_backoff {
            return Err(ConfigError::BackoffOrder {
                initial: c.retry_backoff,
                max: c.max_retry_backoff,
            });
        }
        if !(MIN_MAX_REQUEST_SIZE..=i32::MAX as usize).contains(&c.max_request_size) {
            return Err(ConfigError::InvalidMaxRequestSize(c.max_request_size));
        }
        if c.sasl.as_ref().is_some_and(|s| s.username().is_empty()) {
            return Err(ConfigError::EmptySaslUsername);
        }
        check_codec(c.compression, Compression::is_enabled)?;
        Ok(c)
    }
}

/// Refuses a codec `enabled` says is compiled out, naming its feature.
fn check_codec(
    codec: Compression,
    enabled: impl Fn(Compression) -> bool,
) -> Result<(), ConfigError> {
    match codec.feature() {
        Some(feature) if !enabled(codec) => {
            Err(ConfigError::CompressionNotEnabled { codec, feature })
        }
        _ => Ok(()),
    }
}

fn is_host_port(s: &str) -> bool {
    let Some((host, port)) = s.rsplit_once(':') else {
        return false;
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    !host.is_empty()
        && !host.chars().any(|c| c.is_whitespace() || c == '/')
        && port.parse::<u16>().is_ok_and(|p| p != 0)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
