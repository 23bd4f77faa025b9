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

use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::{Connection as _, PgConnection};
use tokio::sync::Mutex;
use tracing::{info, warn};

pub use sqlx::postgres::PgConnectOptions;

use crate::builder::{Settings, TransportBuilder};
use crate::channel::ChannelName;
use crate::codec;
use crate::config::ConfigError;
use crate::connection::{BatchSender, connected, publish_on_slot, published, subscribed, within};
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
    settings: Settings<PgConnectOptions>,
    /// `None` until the first send, and again after a failed or cancelled one.
    sender: Mutex<Option<PgConnection>>,
}

/// Settings for a [`PostgresTransport`]; see [`PostgresTransport::builder`].
pub type PostgresTransportBuilder = TransportBuilder<PgConnectOptions>;

impl TransportBuilder<PgConnectOptions> {
    /// Validates the settings. Connects nothing: the first send or listen does.
    pub fn build(self) -> Result<PostgresTransport, ConfigError> {
        let settings = self.validate(|url| Ok(url.parse::<PgConnectOptions>()?))?;
        Ok(PostgresTransport {
            settings,
            sender: Mutex::new(None),
        })
    }
}

impl PostgresTransport {
    /// A transport on `channel` (use the same one on every writer and relay of the outbox
    /// table) for the database at `url`, for example `postgres://user@host:5432/db`.
    pub fn builder(channel: ChannelName, url: impl Into<String>) -> PostgresTransportBuilder {
        TransportBuilder::from_url(channel, url.into())
    }

    /// Like [`builder`](Self::builder), with connection options built in code (TLS,
    /// passwords from a secret store, an `application_name` to spot the connections).
    pub fn builder_with_options(
        channel: ChannelName,
        options: PgConnectOptions,
    ) -> PostgresTransportBuilder {
        TransportBuilder::from_native(channel, options)
    }

    /// The channel this transport sends and listens on.
    pub fn channel(&self) -> &ChannelName {
        &self.settings.channel
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
            .acquire_timeout(self.settings.connect_timeout)
            .connect_lazy_with(self.settings.connection.clone());
        let subscribe = async {
            let mut listener = connected(PgListener::connect_with(&pool).await)?;
            subscribed(listener.listen(self.channel().as_str()).await)?;
            Ok(listener)
        };
        within(self.settings.connect_timeout, "subscribe", subscribe).await
    }
}

impl BatchSender for PostgresTransport {
    type Native = PgConnectOptions;
    type Connection = PgConnection;
    type Batch = Vec<String>;
    const MAX_PAYLOAD_BYTES: usize = MAX_PAYLOAD_BYTES;

    fn batch(&self, payloads: Vec<String>) -> Self::Batch {
        payloads
    }

    fn settings(&self) -> &Settings<PgConnectOptions> {
        &self.settings
    }

    async fn open_sender(&self) -> Result<Self::Connection, TransportError> {
        connected(PgConnection::connect_with(&self.settings.connection).await)
    }

    async fn send(
        &self,
        connection: &mut Self::Connection,
        batch: &Self::Batch,
    ) -> Result<(), TransportError> {
        let query = sqlx::query(SEND).bind(self.channel().as_str()).bind(batch);
        published(query.execute(connection).await)
    }
}

impl NotificationTransport for PostgresTransport {
    async fn publish(&self, buckets: &[i32]) -> Result<(), TransportError> {
        publish_on_slot(self, &self.sender, buckets).await
    }

    async fn listen(&self, on_hint: &(dyn Fn(i32) + Send + Sync)) -> Result<(), TransportError> {
        let mut listener = self.subscribe().await?;
        info!(channel = %self.settings.channel, "listening for commit hints");
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    if !codec::decode(notification.payload(), on_hint) {
                        warn!(
                            channel = %self.settings.channel,
                            payload = codec::excerpt(notification.payload()),
                            "unreadable commit hint; treated as an unknown bucket"
                        );
                    }
                }
                // The connection was lost; PgListener reconnected and subscribed again before
                // returning (a failed reconnection comes back as an error instead).
                Ok(None) => warn!(
                    channel = %self.settings.channel,
                    "the LISTEN connection was lost and reopened; hints sent meanwhile are lost"
                ),
                Err(error) => return Err(TransportError::Listen(error.into())),
            }
        }
    }
}
