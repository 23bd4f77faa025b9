//! The builder scaffolding every bundled transport shares: a channel, where to connect (a
//! URL, or the backend's own connection settings built in code) and the two timeouts,
//! validated once into [`Settings`].

use std::time::Duration;

use outbox_core::BoxError;

use crate::channel::ChannelName;
use crate::config::{ConfigError, positive};

/// Settings for a bundled transport: [`PostgresTransportBuilder`] (`S` is sqlx's
/// `PgConnectOptions`) or [`RedisTransportBuilder`] (`S` is a redis `Client`). Created by
/// the transport's `builder` functions; `build` validates and connects nothing.
///
/// [`PostgresTransportBuilder`]: crate::postgres::PostgresTransportBuilder
/// [`RedisTransportBuilder`]: crate::redis::RedisTransportBuilder
#[derive(Debug, Clone)]
pub struct TransportBuilder<S> {
    channel: ChannelName,
    source: Source<S>,
    connect_timeout: Duration,
    send_timeout: Duration,
}

#[derive(Debug, Clone)]
enum Source<S> {
    Url(String),
    /// Boxed: connection settings can be large (sqlx's are several hundred bytes).
    Native(Box<S>),
}

/// What a transport runs on, validated.
#[derive(Debug)]
pub(crate) struct Settings<S> {
    pub(crate) channel: ChannelName,
    pub(crate) connection: S,
    pub(crate) connect_timeout: Duration,
    pub(crate) send_timeout: Duration,
}

impl<S> TransportBuilder<S> {
    /// Settings for a server at `url`, parsed when the builder is built.
    pub(crate) fn from_url(channel: ChannelName, url: String) -> Self {
        Self::new(channel, Source::Url(url))
    }

    /// Settings for a server described by connection settings built in code.
    pub(crate) fn from_native(channel: ChannelName, native: S) -> Self {
        Self::new(channel, Source::Native(Box::new(native)))
    }

    fn new(channel: ChannelName, source: Source<S>) -> Self {
        TransportBuilder {
            channel,
            source,
            connect_timeout: Duration::from_secs(5),
            send_timeout: Duration::from_secs(5),
        }
    }

    /// Limit on opening a connection and, for the listener, on subscribing. Default 5 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Limit on one broadcast; a send that takes longer is abandoned together with its
    /// connection. Default 5 s.
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.send_timeout = timeout;
        self
    }

    /// Validates the settings, parsing a URL with `parse_url`.
    pub(crate) fn validate(
        self,
        parse_url: impl FnOnce(&str) -> Result<S, BoxError>,
    ) -> Result<Settings<S>, ConfigError> {
        let connection = match self.source {
            Source::Url(url) => parse_url(&url).map_err(ConfigError::InvalidUrl)?,
            Source::Native(native) => *native,
        };
        Ok(Settings {
            channel: self.channel,
            connection,
            connect_timeout: positive("connect_timeout", self.connect_timeout)?,
            send_timeout: positive("send_timeout", self.send_timeout)?,
        })
    }
}
