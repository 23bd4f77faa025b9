//! The transport contract: broadcast committed bucket ids, and receive everyone's.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use outbox_core::BoxError;

/// Why a transport call failed. Every failure is advisory: the workers log it, drop the
/// batch or resubscribe after a backoff, and polling covers whatever was missed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// Could not connect (or reconnect) to the broadcast service.
    #[error("could not connect to the notification service")]
    Connect(#[source] BoxError),
    /// Broadcasting a batch failed.
    #[error("could not broadcast a notification")]
    Publish(#[source] BoxError),
    /// Subscribing or receiving failed.
    #[error("the notification subscription failed")]
    Listen(#[source] BoxError),
    /// The subscription was closed by the other side.
    #[error("the notification subscription was closed")]
    Closed,
    /// A call took longer than the transport's configured limit and was abandoned.
    #[error("{operation} timed out after {after:?}")]
    Timeout {
        /// What timed out (`connect`, `publish`, ...).
        operation: &'static str,
        /// The configured limit.
        after: Duration,
    },
}

/// Broadcasts committed bucket ids between processes sharing one outbox table.
///
/// Implement it as an adapter to any broadcast service; this crate bundles
/// PostgreSQL LISTEN/NOTIFY and Redis pub/sub. One instance serves one local relay, and
/// [`publish`](Self::publish) and [`listen`](Self::listen) run concurrently on it.
///
/// **Wire form.** A bucket id is an `i32`; `-1` means "unknown bucket" and asks every
/// receiver to look for work in all the buckets it owns. Only these ids travel: never
/// outbox payloads or message ids.
///
/// **Delivery.** Every relay needs its own subscription that receives every broadcast
/// (fan-out, never a competing-consumer queue, which would hand a hint to a relay that does
/// not own the bucket). Hints are advisory: they may be lost, duplicated or reordered, and
/// they never authorize publishing without a lease. Polling stays on and covers startup,
/// lost hints and outages.
///
/// **Cancellation** is dropping the future. Both methods must be cancel-safe: a dropped
/// `publish` may or may not have sent its batch but leaves the transport usable, and a
/// dropped `listen` releases its subscription. Implementations bound their own network
/// waits (connect and send timeouts), so that a dead peer cannot stall the sender forever.
///
/// # Example
///
/// An adapter to an in-process channel; one to a real broadcast service has the same
/// shape, with a connection and a subscription in place of the channel.
///
/// ```
/// use std::sync::Arc;
/// use outbox_notify::{NotificationTransport, TransportError};
/// use tokio::sync::broadcast;
///
/// struct InProcess(broadcast::Sender<Arc<[i32]>>);
///
/// impl NotificationTransport for InProcess {
///     async fn publish(&self, buckets: &[i32]) -> Result<(), TransportError> {
///         // Copied: the slice is only lent for this call. No receiver is not an error.
///         let _ = self.0.send(Arc::from(buckets));
///         Ok(())
///     }
///
///     async fn listen(&self, on_hint: &(dyn Fn(i32) + Send + Sync)) -> Result<(), TransportError> {
///         // Subscribed here, unsubscribed when the future is dropped.
///         let mut hints = self.0.subscribe();
///         loop {
///             match hints.recv().await {
///                 Ok(buckets) => buckets.iter().for_each(|&bucket| on_hint(bucket)),
///                 // Some hints were missed: asking for discovery is always safe.
///                 Err(broadcast::error::RecvError::Lagged(_)) => on_hint(-1),
///                 Err(broadcast::error::RecvError::Closed) => return Err(TransportError::Closed),
///             }
///         }
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let transport = InProcess(broadcast::channel(1_024).0);
/// transport.publish(&[-1, 3]).await.unwrap();
/// # }
/// ```
pub trait NotificationTransport: Send + Sync + 'static {
    /// Broadcasts `buckets` (wire form; in practice `-1` first, then ascending ids).
    /// `buckets` is only borrowed for the call: the sender reuses its buffer.
    ///
    /// An error drops this advisory batch; the sender backs off and carries on with the
    /// next one. Called from one background sender, never on a commit path.
    fn publish(&self, buckets: &[i32]) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Subscribes and calls `on_hint` once for every received id, `-1` and buckets owned
    /// by other relays included (the local notifier filters by ownership), until the
    /// future is dropped. The callback is cheap and never blocks.
    ///
    /// Returning at all, with `Ok` or `Err`, means the subscription ended: the listener
    /// worker calls `listen` again after a backoff, so release the old subscription first.
    /// Reconnecting inside one call is also fine. An implementation that knows it missed
    /// hints may report `-1`, which makes the relay look in all its buckets. Since `on_hint` is only ever called
    /// synchronously from within this future, no callback is still running once the
    /// future has returned or been dropped.
    fn listen(
        &self,
        on_hint: &(dyn Fn(i32) + Send + Sync),
    ) -> impl Future<Output = Result<(), TransportError>> + Send;
}

/// A shared transport is a transport, so callers may keep a reference to it.
impl<T: NotificationTransport> NotificationTransport for Arc<T> {
    fn publish(&self, buckets: &[i32]) -> impl Future<Output = Result<(), TransportError>> + Send {
        (**self).publish(buckets)
    }

    fn listen(
        &self,
        on_hint: &(dyn Fn(i32) + Send + Sync),
    ) -> impl Future<Output = Result<(), TransportError>> + Send {
        (**self).listen(on_hint)
    }
}
