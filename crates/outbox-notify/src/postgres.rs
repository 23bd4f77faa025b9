//! [`PostgresTransport`]: hints over PostgreSQL `LISTEN` / `NOTIFY` (feature `postgres`).
//!
//! Sending runs `SELECT pg_notify($1, p) FROM unnest($2::text[]) p` on one lazily opened
//! connection: the channel is a bind parameter (nothing is spliced into SQL), and a batch
//! that does not fit one payload (PostgreSQL refuses 8000 bytes or more) goes out as
//! several notifications in one round trip. Listening holds a dedicated connection through
//! sqlx's [`PgListener`], which notices a lost connection, reconnects and subscribes again
//! by itself; a failed reconnection ends [`listen`](NotificationTransport::listen) with an
//! error, and the listener worker retries after its backoff.
//!
//! Notifications are delivered only to sessions listening at the time, so hints sent
//! while a listener reconnects are lost; polling finds those rows.
//!
//! Writers without this crate can hint too, in the [`codec`] format: for
//! example `SELECT pg_notify('outbox_orders_prod', '3')` in the writing transaction, or
//! from a trigger on the outbox table. PostgreSQL delivers a notification only when its
//! transaction commits, and never after a rollback, which is exactly when a hint is due.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use outbox_core::{CommitNotifier, OutboxStore, Publisher, RelayOptions};
//! use outbox_notify::postgres::{PgConnectOptions, PostgresTransport};
//! use outbox_notify::{ChannelName, spawn_relay_with_transport};
//!
//! async fn run(store: impl OutboxStore, publisher: impl Publisher)
//!     -> Result<(), Box<dyn std::error::Error>> {
//!     let connect: PgConnectOptions = "postgres://app@db.internal:5432/orders".parse()?;
//!     let transport = PostgresTransport::builder_with_options(
//!         ChannelName::for_outbox("outbox_messages", "prod")?, // LISTEN "outbox_outbox_messages_prod"
//!         connect.application_name("orders-outbox-hints"),     // easy to spot in pg_stat_activity
//!     )
//!     .connect_timeout(Duration::from_secs(5))
//!     .send_timeout(Duration::from_secs(2))
//!     .build()?;
//!     let relay =
//!         spawn_relay_with_transport(store, publisher, RelayOptions::builder().build()?, transport)?;
//!     // After each commit: every relay owning bucket 3, in any process, wakes up.
//!     relay.notifier().notify_buckets(&[3]);
//!     relay.stop(Duration::from_secs(10)).await?;
//!     Ok(())
//! }
//! ```

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::{Connection as _, PgConnection};
use tokio::sync::Mutex;
use tokio::time::timeout;
use tracing::{info, warn};

pub use sqlx::postgres::PgConnectOptions;

use crate::channel::ChannelName;
use crate::codec;
use crate::config::{ConfigError, positive};
use crate::transport::{NotificationTransport, TransportError};

/// The largest `NOTIFY` payload PostgreSQL accepts (it must be shorter than 8000 bytes).
pub const MAX_PAYLOAD_BYTES: usize = 7_999;

const SEND: &str = "SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload";

/// Commit hints over PostgreSQL `LISTEN` / `NOTIFY`. Uses two connections: one for
/// sending, opened on first use and replaced after any error, and one dedicated to
/// `LISTEN` while [`listen`](NotificationTransport::listen) runs. Both close when the
/// transport (sender) or the listen future (listener) is dropped.
#[derive(Debug)]
pub struct PostgresTransport {
    channel: ChannelName,
    connect_options: PgConnectOptions,
    connect_timeout: Duration,
    send_timeout: Duration,
    /// `None` until the first send, and again after a failed or cancelled one.
    sender: Mutex<Option<PgConnection>>,
}

/// Settings for a [`PostgresTransport`]; see [`PostgresTransport::builder`].
#[derive(Debug, Clone)]
pub struct PostgresTransportBuilder {
    channel: ChannelName,
    source: Source,
    connect_timeout: Duration,
    send_timeout: Duration,
}

#[derive(Debug, Clone)]
enum Source {
    Url(String),
    Options(Box<PgConnectOptions>),
}

impl PostgresTransport {
    /// A transport on `channel` (use the same one on every writer and relay of the outbox
    /// table) for the database at `url`, for example `postgres://user@host:5432/db`.
    pub fn builder(channel: ChannelName, url: impl Into<String>) -> PostgresTransportBuilder {
        PostgresTransportBuilder::new(channel, Source::Url(url.into()))
    }

    /// Like [`builder`](Self::builder), with connection options built in code (TLS,
    /// passwords from a secret store, an `application_name` to spot the connections).
    pub fn builder_with_options(
        channel: ChannelName,
        options: PgConnectOptions,
    ) -> PostgresTransportBuilder {
        PostgresTransportBuilder::new(channel, Source::Options(Box::new(options)))
    }

    /// The channel this transport sends and listens on.
    pub fn channel(&self) -> &ChannelName {
        &self.channel
    }

    async fn open_sender(&self) -> Result<PgConnection, TransportError> {
        match timeout(
            self.connect_timeout,
            PgConnection::connect_with(&self.connect_options),
        )
        .await
        {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(error)) => Err(TransportError::Connect(error.into())),
            Err(_) => Err(TransportError::Timeout {
                operation: "connect",
                after: self.connect_timeout,
            }),
        }
    }

    /// Connects and subscribes, both within the connect timeout.
    async fn subscribe(&self) -> Result<PgListener, TransportError> {
        // A pool of one, used by PgListener only to reconnect; no idle or lifetime limits,
        // which would close a healthy listening connection (and start reaper tasks).
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(self.connect_timeout)
            .connect_lazy_with(self.connect_options.clone());
        let subscribe = async {
            let mut listener = PgListener::connect_with(&pool)
                .await
                .map_err(|e| TransportError::Connect(e.into()))?;
            listener
                .listen(self.channel.as_str())
                .await
                .map_err(|e| TransportError::Listen(e.into()))?;
            Ok(listener)
        };
        timeout(self.connect_timeout, subscribe)
            .await
            .unwrap_or(Err(TransportError::Timeout {
                operation: "subscribe",
                after: self.connect_timeout,
            }))
    }
}

impl PostgresTransportBuilder {
    fn new(channel: ChannelName, source: Source) -> Self {
        PostgresTransportBuilder {
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

    /// Validates the settings. Connects nothing: the first send or listen does.
    pub fn build(self) -> Result<PostgresTransport, ConfigError> {
        let connect_options = match self.source {
            Source::Url(url) => url
                .parse::<PgConnectOptions>()
                .map_err(|e| ConfigError::InvalidUrl(e.into()))?,
            Source::Options(options) => *options,
        };
        Ok(PostgresTransport {
            channel: self.channel,
            connect_options,
            connect_timeout: positive("connect_timeout", self.connect_timeout)?,
            send_timeout: positive("send_timeout", self.send_timeout)?,
            sender: Mutex::new(None),
        })
    }
}

impl PostgresTransport {
    async fn send(
        &self,
        connection: &mut PgConnection,
        payloads: &[String],
    ) -> Result<(), TransportError> {
        let send = sqlx::query(SEND)
            .bind(self.channel.as_str())
            .bind(payloads)
            .execute(connection);
        match timeout(self.send_timeout, send).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(TransportError::Publish(error.into())),
            Err(_) => Err(TransportError::Timeout {
                operation: "publish",
                after: self.send_timeout,
            }),
        }
    }
}

impl NotificationTransport for PostgresTransport {
    async fn publish(&self, buckets: &[i32]) -> Result<(), TransportError> {
        let payloads = codec::encode(buckets, MAX_PAYLOAD_BYTES);
        if payloads.is_empty() {
            return Ok(());
        }
        let mut slot = self.sender.lock().await;
        // Out of the slot while in use: if this future is dropped mid-query, the connection
        // (in an unknown protocol state) is dropped, and closed, with it.
        let mut connection = match slot.take() {
            Some(mut connection) => match self.send(&mut connection, &payloads).await {
                Ok(()) => {
                    *slot = Some(connection);
                    return Ok(());
                }
                // An idle connection may have been closed by the server, a restart or a
                // firewall since the last batch: one more try on a fresh one (a duplicate
                // hint, should the first have gone out after all, is harmless).
                Err(TransportError::Publish(_)) => self.open_sender().await?,
                Err(error) => return Err(error),
            },
            None => self.open_sender().await?,
        };
        self.send(&mut connection, &payloads).await?;
        *slot = Some(connection);
        Ok(())
    }

    async fn listen(&self, on_hint: &(dyn Fn(i32) + Send + Sync)) -> Result<(), TransportError> {
        let mut listener = self.subscribe().await?;
        info!(channel = %self.channel, "listening for commit hints");
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    if !codec::decode(notification.payload(), on_hint) {
                        warn!(
                            channel = %self.channel,
                            payload = codec::excerpt(notification.payload()),
                            "unreadable commit hint; treated as an unknown bucket"
                        );
                    }
                }
                // The connection was lost; PgListener reconnected and subscribed again before
                // returning (a failed reconnection comes back as an error instead).
                Ok(None) => warn!(
                    channel = %self.channel,
                    "the LISTEN connection was lost and reopened; hints sent meanwhile are lost"
                ),
                Err(error) => return Err(TransportError::Listen(error.into())),
            }
        }
    }
}
