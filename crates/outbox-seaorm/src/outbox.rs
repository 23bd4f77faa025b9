//! [`Outbox`], the writer side of one outbox (its settings and the notifier it wakes),
//! and [`Enqueued`], the receipt of what an enqueue wrote. Writing rows is in
//! `enqueue`, transactions that notify after their commit in `transaction`.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use outbox_core::{CommitNotifier, EnqueueConfig, NoopNotifier, OutboxMessage};

use crate::tables::OutboxTables;

/// The writer side of one outbox: its [`OutboxSchema`](outbox_core::OutboxSchema) (tables, bucket count, message-id
/// header) and record size limit, and the notifier to wake after commits. Cheap to clone; build one at startup and share it.
///
/// Where a row goes decides when the local relay hears about it:
///
/// | `enqueue(target, ..)` with | the row commits | the relay is woken |
/// |---|---|---|
/// | [`OutboxTransaction`](crate::OutboxTransaction) (from [`begin`](Self::begin) / [`transaction`](Self::transaction)) | with the transaction | after a successful commit, with the buckets of every row enqueued in it |
/// | [`DatabaseConnection`](sea_orm::DatabaseConnection) (no explicit transaction) | at once | right after the insert succeeded |
/// | a plain [`DatabaseTransaction`](sea_orm::DatabaseTransaction) | with the transaction | not by the commit: `enqueue` returns a `#[must_use]` [`NotifyAfterCommit`](crate::NotifyAfterCommit); pass it to [`notify`](Self::notify) after your commit (else the relay's next poll finds the rows) |
///
/// A rollback, a failed commit or a transaction dropped without commit wakes nothing.
/// Nobody waits for Kafka: a notification only records a hint and returns.
#[derive(Clone)]
pub struct Outbox {
    config: Arc<EnqueueConfig>,
    notifier: Arc<dyn CommitNotifier>,
}

impl fmt::Debug for Outbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outbox")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What an enqueue wrote: how many rows, in which buckets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Enqueued {
    count: usize,
    buckets: Vec<i32>,
}

impl Enqueued {
    /// The receipt for `rows`.
    pub(crate) fn of(rows: &[OutboxMessage]) -> Self {
        let buckets: BTreeSet<i32> = rows.iter().map(|m| m.bucket).collect();
        Enqueued {
            count: rows.len(),
            buckets: buckets.into_iter().collect(),
        }
    }

    /// Rows written.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The distinct buckets of the rows written, ascending.
    pub fn buckets(&self) -> &[i32] {
        &self.buckets
    }
}

impl Outbox {
    /// An outbox writing with `config`: an [`OutboxSchema`](outbox_core::OutboxSchema) (the one the relays use), an
    /// [`EnqueueConfig`] when records need a size limit, or
    /// [`RelayOptions::enqueue_config`](outbox_core::RelayOptions::enqueue_config) in a
    /// process that also runs the relay. Until [`with_notifier`](Self::with_notifier) is
    /// called, commits wake nobody and relays find the rows by polling.
    pub fn new(config: impl Into<EnqueueConfig>) -> Self {
        Outbox {
            config: Arc::new(config.into()),
            notifier: Arc::new(NoopNotifier),
        }
    }

    /// Wakes this notifier after commits, typically the local relay's
    /// (`RelayHandle::notifier()`).
    pub fn with_notifier(mut self, notifier: Arc<dyn CommitNotifier>) -> Self {
        self.notifier = notifier;
        self
    }

    /// The table names.
    pub fn tables(&self) -> &OutboxTables {
        self.config.schema().tables()
    }

    /// The enqueue settings.
    pub fn config(&self) -> &EnqueueConfig {
        &self.config
    }

    /// Wakes the notifier for rows you committed yourself (enqueued through a plain
    /// [`DatabaseTransaction`](sea_orm::DatabaseTransaction): pass the
    /// [`NotifyAfterCommit`](crate::NotifyAfterCommit) it returned, which derefs
    /// to [`Enqueued`]). Call it only after the commit succeeded.
    pub fn notify(&self, enqueued: &Enqueued) {
        if !enqueued.is_empty() {
            self.notifier.notify_buckets(&enqueued.buckets);
        }
    }

    /// The notifier woken after commits.
    pub(crate) fn notifier(&self) -> &Arc<dyn CommitNotifier> {
        &self.notifier
    }
}
