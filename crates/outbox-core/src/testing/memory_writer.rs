//! The in-memory store's writer: commits rows and wakes the relay, as a real writer's
//! commit hook does.

use std::fmt;
use std::sync::Arc;

use crate::message::OutboxMessage;
use crate::notifier::CommitNotifier;
use crate::schema::OutboxSchema;
use crate::writer::BindWriter;

use super::memory_store::MemoryStore;

/// Writes into a [`MemoryStore`] and notifies after each commit: what
/// `Relay::builder(memory_store, ..).spawn()` hands out as the handle's `outbox()`.
#[derive(Clone)]
pub struct MemoryWriter {
    store: MemoryStore,
    notifier: Arc<dyn CommitNotifier>,
}

impl fmt::Debug for MemoryWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryWriter").finish_non_exhaustive()
    }
}

impl MemoryWriter {
    /// A writer into `store` that calls `notifier` after each commit.
    pub fn new(store: MemoryStore, notifier: Arc<dyn CommitNotifier>) -> Self {
        MemoryWriter { store, notifier }
    }

    /// Commits `message` (its bucket as given) and then notifies its bucket; returns
    /// the row's id.
    pub fn enqueue(&self, message: OutboxMessage) -> i64 {
        let bucket = message.bucket;
        let id = self.store.enqueue(message);
        self.notifier.notify_buckets(&[bucket]);
        id
    }
}

impl BindWriter for MemoryStore {
    type Writer = MemoryWriter;

    /// The memory store has no schema of its own: the relay's options decide.
    fn writer_schema(&self) -> Option<&OutboxSchema> {
        None
    }

    fn bind_writer(&self, notifier: Arc<dyn CommitNotifier>) -> MemoryWriter {
        MemoryWriter::new(self.clone(), notifier)
    }
}
