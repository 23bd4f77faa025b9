//! A publisher decorator that records what the broker acknowledged, and when.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use outbox_core::{OutboxMessage, PublishOutcome, Publisher, Uuid};

#[derive(Debug, Default)]
struct Inner {
    count: AtomicU64,
    /// Acknowledgement instant per message id, kept only when asked for.
    instants: Option<Mutex<HashMap<Uuid, Instant>>>,
}

/// Shared record of acknowledgements (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct Acks(Arc<Inner>);

impl Acks {
    /// Counts acknowledgements and keeps each one's instant.
    pub fn with_instants() -> Acks {
        Acks(Arc::new(Inner {
            count: AtomicU64::new(0),
            instants: Some(Mutex::new(HashMap::new())),
        }))
    }

    pub fn count(&self) -> u64 {
        self.0.count.load(Ordering::Relaxed)
    }

    pub fn instant(&self, id: &Uuid) -> Option<Instant> {
        let map = self.0.instants.as_ref()?;
        map.lock().unwrap().get(id).copied()
    }

    fn record(&self, acknowledged: &[OutboxMessage], at: Instant) {
        if let Some(map) = &self.0.instants {
            let mut map = map.lock().unwrap();
            for m in acknowledged {
                map.entry(m.message_id).or_insert(at);
            }
        }
        self.0
            .count
            .fetch_add(acknowledged.len() as u64, Ordering::Relaxed);
    }

    /// Waits until at least `n` acknowledgements were counted; the instant it saw them.
    pub async fn wait_for(&self, n: u64, timeout: Duration) -> Instant {
        let seen = self.try_wait_for(n, timeout).await;
        seen.unwrap_or_else(|| {
            panic!(
                "only {} of {n} records acknowledged within {timeout:?}",
                self.count()
            )
        })
    }

    /// [`Acks::wait_for`] that returns `None` at the timeout, for a caller that explains
    /// the shortfall before it fails.
    pub async fn try_wait_for(&self, n: u64, timeout: Duration) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.count() >= n {
                return Some(Instant::now());
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// Wraps a publisher; every acknowledged prefix is recorded in [`Acks`] right after the
/// inner publisher returned.
pub struct Recording<P> {
    inner: P,
    acks: Acks,
}

impl<P> Recording<P> {
    pub fn new(inner: P, acks: Acks) -> Self {
        Recording { inner, acks }
    }
}

impl<P: Publisher> Publisher for Recording<P> {
    async fn publish(&self, batch: &[OutboxMessage]) -> PublishOutcome {
        let outcome = self.inner.publish(batch).await;
        let at = Instant::now();
        let acknowledged = outcome.acknowledged.min(batch.len());
        self.acks.record(&batch[..acknowledged], at);
        outcome
    }
}
