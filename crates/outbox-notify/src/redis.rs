//! [`RedisTransport`]: hints over Redis pub/sub (feature `redis`).
//!
//! Sending uses one multiplexed connection, opened on first use and replaced after any
//! error; a batch too large for one payload goes out as several `PUBLISH`es in one
//! pipeline. Listening holds one dedicated pub/sub connection per call of
//! [`listen`](NotificationTransport::listen), that is one subscription per relay; when the
//! server closes it (restart, `CLIENT KILL`, network loss), `listen` returns
//! [`TransportError::Closed`] and the listener worker subscribes again after its backoff.
//!
//! Pub/sub delivers only to connected subscribers, so hints sent while a listener
//! reconnects are lost; polling finds those rows. Plain TCP only (no TLS feature is
//! enabled); use a `redis://` URL.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use outbox_core::{CommitNotifier, OutboxStore, Publisher, RelayOptions};
//! use outbox_notify::redis::RedisTransport;
//! use outbox_notify::{ChannelName, spawn_relay_with_transport};
//!
//! async fn run(store: impl OutboxStore, publisher: impl Publisher)
//!     -> Result<(), Box<dyn std::error::Error>> {
//!     let transport = RedisTransport::builder(
//!         ChannelName::for_outbox("outbox_messages", "prod")?,
//!         "redis://cache.internal:6379/",
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

use std::fmt;

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, IntoConnectionInfo};
use futures::StreamExt as _;
use tokio::sync::Mutex;
use tracing::{info, warn};

pub use ::redis::Client;

use crate::builder::{Settings, TransportBuilder};
use crate::channel::ChannelName;
use crate::codec;
use crate::config::ConfigError;
use crate::connection::{BatchSender, connected, publish_on_slot, published, subscribed, within};
use crate::transport::{NotificationTransport, TransportError};

/// Payload size per `PUBLISH`. Redis allows far more; this only keeps one message (and
/// the work it causes on every subscriber) modest.
pub const MAX_PAYLOAD_BYTES: usize = 65_536;

/// Commit hints over Redis pub/sub. Uses one connection for sending and, while
/// [`listen`](NotificationTransport::listen) runs, one subscribed connection; they close
/// when the transport (sender) or the listen future (subscription) is dropped.
pub struct RedisTransport {
    settings: Settings<Client>,
    /// `None` until the first send, and again after a failed or cancelled one.
    sender: Mutex<Option<MultiplexedConnection>>,
}

impl fmt::Debug for RedisTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTransport")
            .field("channel", &self.settings.channel)
            .field("connect_timeout", &self.settings.connect_timeout)
            .field("send_timeout", &self.settings.send_timeout)
            .finish_non_exhaustive()
    }
}

/// Settings for a [`RedisTransport`]; see [`RedisTransport::builder`].
pub type RedisTransportBuilder = TransportBuilder<Client>;

impl TransportBuilder<Client> {
    /// Validates the settings. Connects nothing: the first send or listen does.
    pub fn build(self) -> Result<RedisTransport, ConfigError> {
        let settings =
            self.validate(|url| Ok(url.into_connection_info().and_then(Client::open)?))?;
        Ok(RedisTransport {
            settings,
            sender: Mutex::new(None),
        })
    }
}

impl RedisTransport {
    /// A transport on `channel` (use the same one on every writer and relay of the outbox
    /// table) for the server at `url`, for example `redis://127.0.0.1:6379/`.
    pub fn builder(channel: ChannelName, url: impl Into<String>) -> RedisTransportBuilder {
        TransportBuilder::from_url(channel, url.into())
    }

    /// Like [`builder`](Self::builder), with a client configured in code.
    pub fn builder_with_client(channel: ChannelName, client: Client) -> RedisTransportBuilder {
        TransportBuilder::from_native(channel, client)
    }

    /// The channel this transport sends and listens on.
    pub fn channel(&self) -> &ChannelName {
        &self.settings.channel
    }

    /// Connects and subscribes, both within the connect timeout.
    async fn subscribe(&self) -> Result<::redis::aio::PubSub, TransportError> {
        let subscribe = async {
            let mut pubsub = connected(self.settings.connection.get_async_pubsub().await)?;
            subscribed(pubsub.subscribe(self.channel().as_str()).await)?;
            Ok(pubsub)
        };
        within(self.settings.connect_timeout, "subscribe", subscribe).await
    }
}

impl BatchSender for RedisTransport {
    type Native = Client;
    type Connection = MultiplexedConnection;
    type Batch = ::redis::Pipeline;
    const MAX_PAYLOAD_BYTES: usize = MAX_PAYLOAD_BYTES;

    fn batch(&self, payloads: Vec<String>) -> Self::Batch {
        let mut pipe = ::redis::pipe();
        for payload in &payloads {
            pipe.publish(self.channel().as_str(), payload).ignore();
        }
        pipe
    }

    fn settings(&self) -> &Settings<Client> {
        &self.settings
    }

    async fn open_sender(&self) -> Result<Self::Connection, TransportError> {
        // The client's own connection timeout covers the TCP connect; the caller's limit
        // also covers the handshake that follows.
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.settings.connect_timeout))
            .set_response_timeout(Some(self.settings.send_timeout));
        let connection = &self.settings.connection;
        connected(
            connection
                .get_multiplexed_async_connection_with_config(&config)
                .await,
        )
    }

    async fn send(
        &self,
        connection: &mut Self::Connection,
        batch: &Self::Batch,
    ) -> Result<(), TransportError> {
        published(batch.query_async::<()>(connection).await)
    }
}

impl NotificationTransport for RedisTransport {
    async fn publish(&self, buckets: &[i32]) -> Result<(), TransportError> {
        publish_on_slot(self, &self.sender, buckets).await
    }

    async fn listen(&self, on_hint: &(dyn Fn(i32) + Send + Sync)) -> Result<(), TransportError> {
        let mut pubsub = self.subscribe().await?;
        info!(channel = %self.settings.channel, "listening for commit hints");
        let mut messages = pubsub.on_message();
        while let Some(message) = messages.next().await {
            let readable = std::str::from_utf8(message.get_payload_bytes())
                .map(|payload| codec::decode(payload, on_hint))
                .unwrap_or_else(|_| {
                    on_hint(codec::UNKNOWN);
                    false
                });
            if !readable {
                warn!(
                    channel = %self.settings.channel,
                    payload = codec::excerpt(&String::from_utf8_lossy(message.get_payload_bytes())),
                    "unreadable commit hint; treated as an unknown bucket"
                );
            }
        }
        // The connection's reader ended: the server or the network closed it.
        Err(TransportError::Closed)
    }
}
