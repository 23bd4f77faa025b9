//! The per-connection state of the produce coalescer: the batches waiting on one broker
//! connection (with where each one's answer goes) and the publisher-wide counters of
//! produce traffic. A [`Connection`](crate::wire::Connection) owns one queue; the
//! coalescer's shell ([`super`]) pushes into it and sends what it hands out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use super::policy::{Coalescer, RequestLimit};
use crate::wire::ProduceAnswer;
use crate::wire::WireError;

/// The counter of produce requests sent, exported through the `metrics` facade.
pub const PRODUCE_REQUESTS_METRIC: &str = "outbox.kafka.produce_requests";

/// The counter of partition batches carried by those requests (a batch resent counts
/// again), exported through the `metrics` facade.
pub const PRODUCE_BATCHES_METRIC: &str = "outbox.kafka.produce_batches";

/// Produce traffic of one publisher, over all its connections.
#[derive(Debug, Default)]
pub(crate) struct ProduceCounters {
    requests: AtomicU64,
    batches: AtomicU64,
}

impl ProduceCounters {
    /// Produce requests sent so far.
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Partition batches those requests carried.
    pub(crate) fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }

    /// Counts one produce request carrying `batches` partition batches.
    pub(super) fn sent(&self, batches: usize) {
        let batches = u64::try_from(batches).unwrap_or(u64::MAX);
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.batches.fetch_add(batches, Ordering::Relaxed);
        metrics::counter!(PRODUCE_REQUESTS_METRIC).increment(1);
        metrics::counter!(PRODUCE_BATCHES_METRIC).increment(batches);
    }
}

/// How a publisher's connections gather produce requests.
#[derive(Debug, Clone)]
pub(crate) struct ProduceSettings {
    pub limit: RequestLimit,
    pub counters: Arc<ProduceCounters>,
}

/// Where one waiting batch's bytes are and where its answer goes.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) batch: Arc<[u8]>,
    pub(super) reply: oneshot::Sender<Result<ProduceAnswer, WireError>>,
}

/// The coalescer state of one connection.
#[derive(Debug)]
pub(crate) struct ProduceQueue {
    state: Mutex<Coalescer<Pending>>,
    pub(super) counters: Arc<ProduceCounters>,
}

impl ProduceQueue {
    pub(crate) fn new(settings: &ProduceSettings) -> Self {
        ProduceQueue {
            state: Mutex::new(Coalescer::new(settings.limit)),
            counters: Arc::clone(&settings.counters),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Coalescer<Pending>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
