//! Connection handling both bundled transports share: a time limit that turns into
//! [`TransportError::Timeout`], and the lazily opened sending connection that is retried
//! once on a fresh connection.

use std::future::Future;
use std::time::Duration;

use outbox_core::BoxError;
use tokio::sync::Mutex;

use crate::builder::Settings;
use crate::codec;
use crate::transport::TransportError;

/// A connection attempt's result, its error as [`TransportError::Connect`].
pub(crate) fn connected<T, E: Into<BoxError>>(result: Result<T, E>) -> Result<T, TransportError> {
    result.map_err(|e| TransportError::Connect(e.into()))
}

/// A broadcast's result, its error as [`TransportError::Publish`].
pub(crate) fn published<T, E: Into<BoxError>>(result: Result<T, E>) -> Result<(), TransportError> {
    result
        .map(|_| ())
        .map_err(|e| TransportError::Publish(e.into()))
}

/// A subscription's result, its error as [`TransportError::Listen`].
pub(crate) fn subscribed<T, E: Into<BoxError>>(result: Result<T, E>) -> Result<T, TransportError> {
    result.map_err(|e| TransportError::Listen(e.into()))
}

/// Runs `call`, abandoning it after `limit` as a timeout of `operation`.
pub(crate) async fn within<T>(
    limit: Duration,
    operation: &'static str,
    call: impl Future<Output = Result<T, TransportError>>,
) -> Result<T, TransportError> {
    tokio::time::timeout(limit, call)
        .await
        .unwrap_or(Err(TransportError::Timeout {
            operation,
            after: limit,
        }))
}

/// A transport's sending side: how to open a sending connection and send one batch on it.
pub(crate) trait BatchSender: Sync {
    /// The sending connection, kept between batches.
    type Connection: Send;
    /// The backend's own connection settings.
    type Native;
    /// One batch, ready to send.
    type Batch: Sync + Send;
    /// The largest payload one notification may carry.
    const MAX_PAYLOAD_BYTES: usize;

    /// The batch that sends these payloads (each one notification).
    fn batch(&self, payloads: Vec<String>) -> Self::Batch;

    /// Opens a sending connection.
    fn open_sender(&self) -> impl Future<Output = Result<Self::Connection, TransportError>> + Send;

    /// The transport's connection settings and limits.
    fn settings(&self) -> &Settings<Self::Native>;

    /// Sends `batch` on `connection`.
    fn send(
        &self,
        connection: &mut Self::Connection,
        batch: &Self::Batch,
    ) -> impl Future<Output = Result<(), TransportError>> + Send;
}

/// Broadcasts `buckets` with the connection kept in `slot`, opening one when there is
/// none: encoded into payloads of at most [`BatchSender::MAX_PAYLOAD_BYTES`], sent as one
/// batch (nothing is sent for no buckets).
///
/// The connection is out of the slot while in use: if the caller's future is dropped
/// mid-send, the connection (in an unknown protocol state) is dropped, and closed, with
/// it. An idle connection may have been closed since the last batch (a server restart, a
/// firewall, a client timeout), so a publish error on a kept connection gets one more try
/// on a fresh one: a duplicate hint, should the first have gone out after all, is harmless.
pub(crate) async fn publish_on_slot<S: BatchSender>(
    sender: &S,
    slot: &Mutex<Option<S::Connection>>,
    buckets: &[i32],
) -> Result<(), TransportError> {
    let payloads = codec::encode(buckets, S::MAX_PAYLOAD_BYTES);
    if payloads.is_empty() {
        return Ok(());
    }
    let batch = &sender.batch(payloads);
    let mut slot = slot.lock().await;
    let mut connection = match slot.take() {
        Some(mut connection) => match send_within(sender, &mut connection, batch).await {
            Ok(()) => {
                *slot = Some(connection);
                return Ok(());
            }
            Err(TransportError::Publish(_)) => open_within(sender).await?,
            Err(error) => return Err(error),
        },
        None => open_within(sender).await?,
    };
    send_within(sender, &mut connection, batch).await?;
    *slot = Some(connection);
    Ok(())
}

async fn send_within<S: BatchSender>(
    sender: &S,
    connection: &mut S::Connection,
    batch: &S::Batch,
) -> Result<(), TransportError> {
    let limit = sender.settings().send_timeout;
    within(limit, "publish", sender.send(connection, batch)).await
}

async fn open_within<S: BatchSender>(sender: &S) -> Result<S::Connection, TransportError> {
    let limit = sender.settings().connect_timeout;
    within(limit, "connect", sender.open_sender()).await
}
