use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use uuid::Uuid;

use crate::error::PublishError;
use crate::message::OutboxMessage;
use crate::publisher::{PublishOutcome, Publisher};

/// A record as the in-memory "topic" holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedRecord {
    /// The row id it came from.
    pub id: i64,
    /// The message id header.
    pub message_id: Uuid,
    /// Bucket of the row.
    pub bucket: i32,
    /// Topic.
    pub topic: String,
    /// Key bytes.
    pub key: Option<Vec<u8>>,
    /// Value bytes.
    pub value: Option<Vec<u8>>,
}

impl From<&OutboxMessage> for PublishedRecord {
    fn from(m: &OutboxMessage) -> Self {
        PublishedRecord {
            id: m.id,
            message_id: m.message_id,
            bucket: m.bucket,
            topic: m.topic.clone(),
            key: m.key.clone(),
            value: m.value.clone(),
        }
    }
}

/// The scripted result of one publish call. Unscripted calls acknowledge everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scripted {
    /// Every record stored and acknowledged.
    AckAll,
    /// The first `acknowledged` records stored and acknowledged, then a failure; the
    /// rest is neither stored nor acknowledged (an order-preserving publisher).
    AckPrefix {
        /// Records stored and acknowledged.
        acknowledged: usize,
        /// Whether the failure is permanent.
        permanent: bool,
    },
    /// The broker stored the first `appended` records but the acknowledgement was lost:
    /// nothing is reported acknowledged, so the relay retries and duplicates appear.
    LostAck {
        /// Records stored without acknowledgement.
        appended: usize,
    },
}

#[derive(Debug, Default)]
struct State {
    topic: Vec<PublishedRecord>,
    script: VecDeque<Scripted>,
    calls: usize,
    /// Messages refused for good, as a broker refuses a record that is too large.
    rejected: std::collections::HashSet<Uuid>,
}

/// A publisher that appends to an in-memory topic, shared by every clone.
#[derive(Debug, Clone, Default)]
pub struct MemoryPublisher {
    state: Arc<Mutex<State>>,
}

impl MemoryPublisher {
    /// An empty topic that acknowledges everything.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues results for the next calls, in order.
    pub fn script(&self, results: impl IntoIterator<Item = Scripted>) {
        self.lock().script.extend(results);
    }

    /// Refuses `message_id` for good from now on: a batch holding it is stored up to it
    /// and fails there with a permanent error naming it (after any scripted result).
    pub fn reject(&self, message_id: Uuid) {
        self.lock().rejected.insert(message_id);
    }

    /// Accepts `message_id` again (the operator repaired what made it fail).
    pub fn accept(&self, message_id: Uuid) {
        self.lock().rejected.remove(&message_id);
    }

    /// Everything stored so far, in append order (duplicates included).
    pub fn records(&self) -> Vec<PublishedRecord> {
        self.lock().topic.clone()
    }

    /// Number of publish calls so far.
    pub fn calls(&self) -> usize {
        self.lock().calls
    }

    /// Applies one call's script to `batch` and returns its outcome; the synchronous core
    /// of [`Publisher::publish`], usable by simulations that drive time themselves.
    pub fn publish_now(&self, batch: &[OutboxMessage]) -> PublishOutcome {
        let mut state = self.lock();
        state.calls += 1;
        let step = state.script.pop_front().unwrap_or(Scripted::AckAll);
        if step == Scripted::AckAll
            && let Some(at) = batch
                .iter()
                .position(|m| state.rejected.contains(&m.message_id))
        {
            state
                .topic
                .extend(batch[..at].iter().map(PublishedRecord::from));
            let error = PublishError::permanent(Some(batch[at].message_id), "rejected for good");
            return PublishOutcome::partial(at, error);
        }
        match step {
            Scripted::AckAll => {
                state.topic.extend(batch.iter().map(PublishedRecord::from));
                PublishOutcome::all(batch.len())
            }
            Scripted::AckPrefix {
                acknowledged,
                permanent,
            } => {
                let acknowledged = acknowledged.min(batch.len());
                state
                    .topic
                    .extend(batch[..acknowledged].iter().map(PublishedRecord::from));
                if acknowledged == batch.len() {
                    return PublishOutcome::all(acknowledged);
                }
                let failed = batch.get(acknowledged).map(|m| m.message_id);
                let error = if permanent {
                    PublishError::permanent(failed, "scripted permanent failure")
                } else {
                    PublishError::retryable("scripted retryable failure")
                };
                PublishOutcome::partial(acknowledged, error)
            }
            Scripted::LostAck { appended } => {
                let appended = appended.min(batch.len());
                state
                    .topic
                    .extend(batch[..appended].iter().map(PublishedRecord::from));
                PublishOutcome::partial(0, PublishError::retryable("scripted lost acknowledgement"))
            }
        }
    }
}

impl Publisher for MemoryPublisher {
    async fn publish(&self, batch: &[OutboxMessage]) -> PublishOutcome {
        self.publish_now(batch)
    }
}
