//! Stores that hand out their writer, bound to a relay's notifier.
//!
//! A writer (the code that inserts outbox rows in the business transaction) must wake
//! the relay of its process after each commit, so it needs that relay's
//! [`CommitNotifier`]; and it must bucket rows with the schema the relay reads them
//! with. A store that implements [`BindWriter`] builds that writer itself, so
//! `Relay::builder(store, publisher).spawn()` returns a handle whose `outbox()` is
//! already bound: no second place to configure the schema, and no construction order to
//! get wrong (the notifier exists only once the relay does).

use std::sync::Arc;

use crate::notifier::CommitNotifier;
use crate::schema::OutboxSchema;
use crate::store::OutboxStore;

/// A store that can produce the writer for its own tables, bound to a notifier.
///
/// Implemented by `outbox_seaorm::SeaOrmStore` (its writer is `outbox_seaorm::Outbox`)
/// and by the in-memory test store (feature `testing`).
pub trait BindWriter: OutboxStore {
    /// What writers enqueue through. Cheap to clone, typically.
    type Writer: Send + Sync + 'static;

    /// The schema the store reads and the writer writes with, when the store has one.
    /// The relay builder adopts it when no options were given and refuses options whose
    /// schema differs from it: rows bucketed with one bucket count and read with another
    /// would never be published.
    fn writer_schema(&self) -> Option<&OutboxSchema>;

    /// The writer for this store's tables that calls `notifier` after each commit.
    fn bind_writer(&self, notifier: Arc<dyn CommitNotifier>) -> Self::Writer;
}
