//! An in-process transport with fault injection (feature `testing`), for tests and
//! examples that need no broadcast service.
//!
//! A [`MemoryBus`] stands in for the service (a `tokio::sync::broadcast` channel carrying
//! the same text payloads as the bundled transports); each relay gets its own
//! [`MemoryTransport`] on it, as each process would get its own connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{broadcast, watch};
use tracing::debug;

use crate::codec;
use crate::transport::{NotificationTransport, TransportError};

/// Payloads the bus keeps for a slow subscriber before it starts losing them.
const CAPACITY: usize = 1_024;

/// Payload limit, small enough that big batches exercise splitting.
const PAYLOAD_LIMIT: usize = 512;

/// The shared "broadcast service". Cheap to clone; clones are the same bus.
#[derive(Debug, Clone)]
pub struct MemoryBus {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    payloads: broadcast::Sender<Arc<str>>,
    /// Bumped by `disconnect_all`; every running `listen` ends when it changes.
    generation: watch::Sender<u64>,
    publish_calls: AtomicUsize,
    listen_calls: AtomicUsize,
    subscribed: AtomicUsize,
    failing_publishes: AtomicUsize,
    failing_listens: AtomicUsize,
}

/// One process's connection to a [`MemoryBus`].
#[derive(Debug, Clone)]
pub struct MemoryTransport {
    bus: MemoryBus,
}

impl Default for MemoryBus {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBus {
    /// An empty bus.
    pub fn new() -> Self {
        let (payloads, _) = broadcast::channel(CAPACITY);
        let (generation, _) = watch::channel(0);
        MemoryBus {
            inner: Arc::new(Inner {
                payloads,
                generation,
                publish_calls: AtomicUsize::new(0),
                listen_calls: AtomicUsize::new(0),
                subscribed: AtomicUsize::new(0),
                failing_publishes: AtomicUsize::new(0),
                failing_listens: AtomicUsize::new(0),
            }),
        }
    }

    /// A new connection to this bus.
    pub fn transport(&self) -> MemoryTransport {
        MemoryTransport { bus: self.clone() }
    }

    /// Broadcasts a raw payload, as a foreign writer or a hand-written `NOTIFY` would.
    pub fn send_raw(&self, payload: &str) {
        // No subscriber is not an error for a broadcast.
        let _ = self.inner.payloads.send(Arc::from(payload));
    }

    /// `publish` calls so far (failed ones included).
    pub fn publish_calls(&self) -> usize {
        self.inner.publish_calls.load(Ordering::SeqCst)
    }

    /// `listen` calls so far (failed ones included).
    pub fn listen_calls(&self) -> usize {
        self.inner.listen_calls.load(Ordering::SeqCst)
    }

    /// Subscriptions currently open.
    pub fn subscriptions(&self) -> usize {
        self.inner.subscribed.load(Ordering::SeqCst)
    }

    /// The next `n` `publish` calls fail without sending.
    pub fn fail_next_publishes(&self, n: usize) {
        self.inner.failing_publishes.store(n, Ordering::SeqCst);
    }

    /// The next `n` `listen` calls fail at once.
    pub fn fail_next_listens(&self, n: usize) {
        self.inner.failing_listens.store(n, Ordering::SeqCst);
    }

    /// Ends every open subscription with [`TransportError::Closed`], like a server
    /// dropping its clients.
    pub fn disconnect_all(&self) {
        self.inner.generation.send_modify(|g| *g += 1);
    }
}

/// Takes one unit from a fault counter, if any is left.
fn take_fault(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

/// Counts an open subscription for as long as it lives.
struct Subscribed<'a>(&'a AtomicUsize);

impl<'a> Subscribed<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Subscribed(counter)
    }
}

impl Drop for Subscribed<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl NotificationTransport for MemoryTransport {
    async fn publish(&self, buckets: &[i32]) -> Result<(), TransportError> {
        let inner = &self.bus.inner;
        inner.publish_calls.fetch_add(1, Ordering::SeqCst);
        if take_fault(&inner.failing_publishes) {
            return Err(TransportError::Publish("injected publish failure".into()));
        }
        for payload in codec::encode(buckets, PAYLOAD_LIMIT) {
            let _ = inner.payloads.send(Arc::from(payload));
        }
        Ok(())
    }

    async fn listen(&self, on_hint: &(dyn Fn(i32) + Send + Sync)) -> Result<(), TransportError> {
        let inner = &self.bus.inner;
        inner.listen_calls.fetch_add(1, Ordering::SeqCst);
        if take_fault(&inner.failing_listens) {
            return Err(TransportError::Listen("injected listen failure".into()));
        }
        let mut payloads = inner.payloads.subscribe();
        let mut generation = inner.generation.subscribe();
        let _subscribed = Subscribed::new(&inner.subscribed);
        loop {
            tokio::select! {
                received = payloads.recv() => match received {
                    Ok(payload) => {
                        codec::decode(&payload, on_hint);
                    }
                    // Lost hints, as on a real service under load; polling covers them.
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        debug!(missed, "slow subscriber lost payloads");
                    }
                    Err(broadcast::error::RecvError::Closed) => return Err(TransportError::Closed),
                },
                _ = generation.changed() => return Err(TransportError::Closed),
            }
        }
    }
}
