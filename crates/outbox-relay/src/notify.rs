//! `--notify none|postgres|redis`: cross-process commit hints through `outbox-notify`.
//!
//! A writer in another process broadcasts the buckets it committed on the channel; the
//! relay's listener wakes the lanes it owns, so a row is published within milliseconds
//! instead of at the next poll. Hints are advisory: polling stays on, a lost hint only
//! costs latency, and a transport that cannot connect never makes the relay unready (its
//! workers log and retry with the relay's error backoff).
//!
//! The channel defaults to [`ChannelName::for_outbox`]`(<messages table>,`
//! [`DEFAULT_CHANNEL_ENVIRONMENT`]`)`, `outbox_outbox_messages_default` for the default
//! table: writers that notify without choosing a channel must use the same name.

use std::fmt;
use std::str::FromStr;

use outbox_core::driver::{Relay, RelayError, RelayHandle};
use outbox_core::{OutboxStore, OutboxTables, Publisher, RelayOptions};
use outbox_notify::postgres::PostgresTransport;
use outbox_notify::redis::RedisTransport;
use outbox_notify::{ChannelError, ChannelName, spawn_relay_with_transport};

use crate::config::ConfigError;
use crate::probe::redact_url;

/// The environment part of the default channel name.
pub const DEFAULT_CHANNEL_ENVIRONMENT: &str = "default";

/// Which transport carries the hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotifyKind {
    /// Polling only.
    #[default]
    None,
    /// PostgreSQL `LISTEN` / `NOTIFY`.
    Postgres,
    /// Redis pub/sub.
    Redis,
}

impl FromStr for NotifyKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(NotifyKind::None),
            "postgres" | "postgresql" => Ok(NotifyKind::Postgres),
            "redis" => Ok(NotifyKind::Redis),
            _ => Err(format!("{text:?} is none of none, postgres and redis")),
        }
    }
}

impl fmt::Display for NotifyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotifyKind::None => "none",
            NotifyKind::Postgres => "postgres",
            NotifyKind::Redis => "redis",
        })
    }
}

/// A transport to start, validated (its URL parses, its channel is a valid name).
#[derive(Debug, Clone)]
pub struct NotifyConfig {
    /// Postgres or Redis (never `None`).
    pub kind: NotifyKind,
    /// The server's URL.
    pub url: String,
    /// The channel.
    pub channel: ChannelName,
}

/// The default channel for an outbox whose tables are `tables`.
pub fn default_channel(tables: &OutboxTables) -> Result<ChannelName, ChannelError> {
    ChannelName::for_outbox(tables.messages(), DEFAULT_CHANNEL_ENVIRONMENT)
}

fn invalid(option: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        option,
        reason: reason.into(),
    }
}

/// Checks the notification options together: a URL and a channel only with a transport,
/// a PostgreSQL URL for postgres (the database's by default), a URL for redis.
pub fn resolve(
    kind: NotifyKind,
    url: Option<String>,
    channel: Option<String>,
    database_url: &str,
    tables: &OutboxTables,
) -> Result<Option<NotifyConfig>, ConfigError> {
    let url = match kind {
        NotifyKind::None => {
            if url.is_some() {
                return Err(invalid("notify-url", "is set, but --notify is none"));
            }
            if channel.is_some() {
                return Err(invalid("notify-channel", "is set, but --notify is none"));
            }
            return Ok(None);
        }
        NotifyKind::Postgres => {
            let url = url.unwrap_or_else(|| database_url.to_owned());
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return Err(invalid(
                    "notify-url",
                    format!(
                        "--notify postgres needs a postgres:// URL; {} is not one (set --notify-url)",
                        redact_url(&url)
                    ),
                ));
            }
            url
        }
        NotifyKind::Redis => url.ok_or_else(|| {
            invalid(
                "notify-url",
                "--notify redis needs the Redis URL (flag --notify-url, environment OUTBOX_NOTIFY_URL, or `notify_url` in the config file)",
            )
        })?,
    };
    let channel = match channel {
        Some(name) => {
            ChannelName::new(&name).map_err(|e| invalid("notify-channel", e.to_string()))?
        }
        None => default_channel(tables).map_err(|e| {
            invalid(
                "notify-channel",
                format!("cannot derive the default from the messages table ({e}); set it"),
            )
        })?,
    };
    let config = NotifyConfig { kind, url, channel };
    // Parses the URL now, so a typo is a start-up error rather than a retried failure.
    match config.kind {
        NotifyKind::Postgres => postgres(&config).map(drop),
        _ => redis(&config).map(drop),
    }
    .map_err(|e| invalid("notify-url", e))?;
    Ok(Some(config))
}

fn postgres(config: &NotifyConfig) -> Result<PostgresTransport, String> {
    PostgresTransport::builder(config.channel.clone(), config.url.clone())
        .build()
        .map_err(|e| format!("{}: {e}", redact_url(&config.url)))
}

fn redis(config: &NotifyConfig) -> Result<RedisTransport, String> {
    RedisTransport::builder(config.channel.clone(), config.url.clone())
        .build()
        .map_err(|e| format!("{}: {e}", redact_url(&config.url)))
}

/// Why the relay could not be spawned.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The relay refused its options.
    #[error(transparent)]
    Relay(#[from] RelayError),
    /// The transport refused its settings (checked at configuration already).
    #[error("notifications: {0}")]
    Transport(String),
}

/// Spawns the relay, with the notification workers when a transport is configured.
pub fn spawn_relay<S: OutboxStore, P: Publisher>(
    store: S,
    publisher: P,
    options: RelayOptions,
    notify: Option<&NotifyConfig>,
) -> Result<RelayHandle, SpawnError> {
    let Some(config) = notify else {
        return Ok(Relay::spawn(store, publisher, options)?);
    };
    let relay = match config.kind {
        NotifyKind::Postgres => {
            let transport = postgres(config).map_err(SpawnError::Transport)?;
            spawn_relay_with_transport(store, publisher, options, transport)?
        }
        _ => {
            let transport = redis(config).map_err(SpawnError::Transport)?;
            spawn_relay_with_transport(store, publisher, options, transport)?
        }
    };
    tracing::info!(
        transport = %config.kind,
        url = %redact_url(&config.url),
        channel = %config.channel,
        "listening for commit notifications"
    );
    Ok(relay)
}

#[cfg(test)]
#[path = "notify_tests.rs"]
mod tests;
