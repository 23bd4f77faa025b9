//! What a backend hands the contract suites: a fresh outbox per check, and a way to plant
//! committed rows and hold a writer's transaction open.

use std::future::Future;

use crate::message::OutboxMessage;
use crate::store::OutboxStore;

/// A fresh outbox for one contract check.
pub trait StoreFixture: Send + Sync {
    /// The store under test.
    type Store: OutboxStore;

    /// A store handle onto this fixture's outbox; several handles share the data, like
    /// relays in several processes sharing one database.
    fn store(&self) -> impl Future<Output = Self::Store> + Send;

    /// Inserts and commits rows exactly as given (no validation, so that the suite can
    /// plant rows a misconfigured writer would produce). Returns the assigned ids.
    fn insert_committed(&self, rows: Vec<OutboxMessage>) -> impl Future<Output = Vec<i64>> + Send;

    /// A writer's transaction, open with its rows inserted but not committed.
    type Pending: PendingInsert;

    /// Inserts `rows` in a transaction that stays open until
    /// [`PendingInsert::commit`], so that other rows can commit while these hold their
    /// (lower) ids invisibly: the late-commit hazard. Returns the transaction and the
    /// assigned ids, or `None` on a store whose writers cannot overlap (SQLite runs one
    /// write transaction at a time, so no row can commit while another is pending).
    fn insert_pending(
        &self,
        rows: Vec<OutboxMessage>,
    ) -> impl Future<Output = Option<(Self::Pending, Vec<i64>)>> + Send;
}

/// An open writer transaction from [`StoreFixture::insert_pending`].
pub trait PendingInsert: Send {
    /// Commits the transaction's rows.
    fn commit(self) -> impl Future<Output = ()> + Send;
}
