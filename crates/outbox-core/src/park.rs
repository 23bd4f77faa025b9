//! Parking: setting aside rows that can never be published, without breaking any key's
//! order.
//!
//! A row whose publish fails *permanently* (the error blames it, see
//! [`PublishError::blamed_message`](crate::PublishError::blamed_message)) is retried up to
//! [`max_publish_attempts`](crate::RelayOptions::max_publish_attempts) times; then the
//! bucket's lease owner moves it, in one transaction, from the messages table into the
//! parked table with the error, the attempt count and the first and last failure times.
//! The rest of the bucket keeps flowing. The count lives in the relay's memory: a restart
//! or a new owner of the bucket starts it over, so a row is parked after
//! `max_publish_attempts` failures within one ownership term. Errors that blame no row
//! (the broker is unreachable, authentication is refused) never count.
//!
//! # Holding a key
//!
//! Under [`ParkPolicy::HoldKey`] (the default) a parked row *holds* its [`HoldKey`]: the
//! row's topic and key, or its topic and partition when it pins one (keyless rows have
//! no order to keep and hold nothing). A later row of a held key is never published; the
//! relay parks it behind the blocking row instead ([`ParkReason::HeldBehind`]). The rule,
//! checked by [`Holds::blocking`] on the relay side and by [`park_decisions`] inside the
//! store's transaction, is one sentence: *a row of key K may be published only when no
//! parked row of K in its bucket has a lower id*. Ids are the enqueue order within a key,
//! so K's first deliveries keep their commit order across parking and requeueing.
//!
//! # Requeue and discard
//!
//! An operator repairs the cause and [requeues](ParkedRows::requeue_parked) a key: its
//! parked rows go back into the messages table *with their original ids*, atomically.
//! Rows of the key committed meanwhile have higher ids, so they stay behind the requeued
//! ones whatever the interleaving; and a selection always takes the parked rows of the
//! same key below it too ([`requeue_closure`]), so requeueing one row never lets it
//! overtake an earlier parked row of its key. A row the relay parks behind the key while
//! the requeue runs stays parked (it is behind the requeued rows either way); requeue
//! again. [Discarding](ParkedRows::discard_parked) deletes parked rows for good.
//!
//! [`ParkPolicy::SkipRow`] parks only the failing row and publishes the key's later rows
//! anyway: flow over order. Consumers then see the key's records out of commit order
//! once the parked row is requeued.

use std::collections::BTreeMap;
use std::future::Future;

use crate::error::StoreError;
use crate::message::OutboxMessage;
use crate::time::Timestamp;

/// What happens to a key's later rows while one of its rows is parked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ParkPolicy {
    /// Later rows of the key (or pinned partition) are parked behind the failing row and
    /// never published ahead of it; other keys keep flowing. Keeps every key's order.
    #[default]
    HoldKey,
    /// Only the failing row is parked; the key's later rows are published. Breaks the
    /// key's order: a requeued row arrives after rows committed after it.
    SkipRow,
}

/// The unit of order a parked row holds: its topic and key, or its topic and pinned
/// partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HoldKey {
    /// A keyed row without an explicit partition.
    Key {
        /// The topic.
        topic: String,
        /// The serialized key (an empty key is a key).
        key: Vec<u8>,
    },
    /// A row pinned to a partition (whatever its key).
    Partition {
        /// The topic.
        topic: String,
        /// The pinned partition.
        partition: i32,
    },
}

impl HoldKey {
    /// The key a row holds and is held by; `None` for keyless, unpinned rows, which
    /// promise no order.
    pub fn of(message: &OutboxMessage) -> Option<HoldKey> {
        HoldKey::from_parts(&message.topic, message.key.as_deref(), message.partition)
    }

    /// The same from a row's stored columns (what a store reads back from its parked
    /// table).
    pub fn from_parts(topic: &str, key: Option<&[u8]>, partition: Option<i32>) -> Option<HoldKey> {
        match (partition, key) {
            (Some(partition), _) => Some(HoldKey::Partition {
                topic: topic.to_owned(),
                partition,
            }),
            (None, Some(key)) => Some(HoldKey::Key {
                topic: topic.to_owned(),
                key: key.to_vec(),
            }),
            (None, None) => None,
        }
    }
}

/// A row's permanent failures, as the relay counted them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedFailure {
    /// The last error, as text.
    pub error: String,
    /// Publish attempts that failed permanently.
    pub attempts: u32,
    /// When the first of them failed (the relay's wall clock).
    pub first_failed_at: Timestamp,
    /// When the last of them failed.
    pub last_failed_at: Timestamp,
}

/// Why a row is parked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParkReason {
    /// The row itself failed permanently too often.
    Failed(ParkedFailure),
    /// The row's key is held by the parked row `blocking_id` (lower id, same key): the row
    /// waits behind it. The store parks it only if such a row is still parked when its
    /// transaction runs (see [`park_decisions`]).
    HeldBehind {
        /// The parked row it waits behind, as the relay knew it.
        blocking_id: i64,
    },
}

impl std::fmt::Display for ParkReason {
    /// One line for listings: the error and attempts, or the row it waits behind.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParkReason::Failed(failure) => {
                write!(f, "{} (failed {} times)", failure.error, failure.attempts)
            }
            ParkReason::HeldBehind { blocking_id } => {
                write!(f, "held behind parked row {blocking_id}")
            }
        }
    }
}

/// One row to park.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkRow {
    /// The row, as [`next_batch`](crate::OutboxStore::next_batch) returned it.
    pub message: OutboxMessage,
    /// Why.
    pub reason: ParkReason,
}

/// One [`park_rows`](crate::OutboxStore::park_rows) call.
#[derive(Debug, Clone, Copy)]
pub struct ParkRequest<'a> {
    /// The calling relay: it must hold `bucket`'s lease unexpired at `now`.
    pub relay_id: &'a str,
    /// The relay's clock; also the `parked_at` stamp.
    pub now: Timestamp,
    /// The bucket every row belongs to.
    pub bucket: i32,
    /// The rows, ascending by id.
    pub rows: &'a [ParkRow],
}

/// What a [`park_rows`](crate::OutboxStore::park_rows) call did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParkOutcome {
    /// The caller no longer holds the bucket's lease: nothing was parked.
    pub lease_lost: bool,
    /// Ids moved into the parked table.
    pub parked: Vec<i64>,
    /// Ids of [`HeldBehind`](ParkReason::HeldBehind) rows left pending because nothing
    /// of their key with a lower id is parked any more (an operator requeued or
    /// discarded it): they may be published now, in id order.
    pub released: Vec<i64>,
}

/// Which of `rows` a store parks, given the bucket's parked rows grouped by hold key
/// (each group with its lowest parked id, as
/// [`parked_holds`](crate::OutboxStore::parked_holds) returns them) at the moment its
/// transaction runs: every
/// [`Failed`](ParkReason::Failed) row, and each [`HeldBehind`](ParkReason::HeldBehind) row
/// whose key has a parked row with a lower id, counting rows parked earlier in the same
/// call. Both stores execute exactly this.
pub fn park_decisions(parked: &[(Option<HoldKey>, i64)], rows: &[ParkRow]) -> Vec<bool> {
    let mut lowest: BTreeMap<HoldKey, i64> = BTreeMap::new();
    for (key, id) in parked {
        if let Some(key) = key {
            lowest
                .entry(key.clone())
                .and_modify(|l| *l = (*l).min(*id))
                .or_insert(*id);
        }
    }
    rows.iter()
        .map(|row| {
            let key = HoldKey::of(&row.message);
            let park = match &row.reason {
                ParkReason::Failed(_) => true,
                ParkReason::HeldBehind { .. } => key
                    .as_ref()
                    .and_then(|k| lowest.get(k))
                    .is_some_and(|l| *l < row.message.id),
            };
            if park && let Some(k) = key {
                lowest
                    .entry(k)
                    .and_modify(|l| *l = (*l).min(row.message.id))
                    .or_insert(row.message.id);
            }
            park
        })
        .collect()
}

/// A lane's view of the parked rows of its bucket: each held key with its lowest parked
/// id, and whether keyless rows are parked.
///
/// While the view is not empty the lane reads its bucket from the head (no cursor): a
/// requeue puts rows back with their original ids, below any cursor.
///
/// Only the bucket's lease owner adds parked rows, and it records each of its own parks
/// here; operators only remove them. So after a load at the start of an ownership term
/// the view can only claim too much (a key already requeued), never too little, and a
/// claim that is too much is corrected by the store's guard ([`ParkOutcome::released`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holds {
    lowest: BTreeMap<HoldKey, i64>,
    keyless: bool,
}

impl Holds {
    /// The view of a store's [`parked_holds`](crate::OutboxStore::parked_holds) answer.
    pub fn from_parked(parked: Vec<(Option<HoldKey>, i64)>) -> Self {
        let mut holds = Holds::default();
        for (key, id) in parked {
            holds.add(key, id);
        }
        holds
    }

    /// Records a parked row (`None`: a keyless one).
    pub fn add(&mut self, key: Option<HoldKey>, id: i64) {
        match key {
            Some(key) => {
                self.lowest
                    .entry(key)
                    .and_modify(|l| *l = (*l).min(id))
                    .or_insert(id);
            }
            None => self.keyless = true,
        }
    }

    /// Nothing is parked in the bucket.
    pub fn is_empty(&self) -> bool {
        self.lowest.is_empty() && !self.keyless
    }

    /// How many keys are held.
    pub fn held_keys(&self) -> usize {
        self.lowest.len()
    }

    /// The parked row that keeps `message` from being published: a parked row of its key
    /// with a lower id.
    pub fn blocking(&self, message: &OutboxMessage) -> Option<i64> {
        let key = HoldKey::of(message)?;
        self.lowest
            .get(&key)
            .copied()
            .filter(|lowest| *lowest < message.id)
    }
}

/// A parked row as operators see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedRow {
    /// The row as it was pending; `message.id` is its original id, which a requeue
    /// restores.
    pub message: OutboxMessage,
    /// Why it was parked: its own failures, or the row it waits behind.
    pub reason: ParkReason,
    /// When it was parked (the parking relay's clock).
    pub parked_at: Timestamp,
}

/// Which parked rows an operator command acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParkedSelection {
    /// Every parked row with this key (any topic, unpinned rows).
    Key(Vec<u8>),
    /// The row with this id.
    Id(i64),
    /// Every parked row.
    All,
}

impl ParkedSelection {
    /// Whether `row` is selected (before [`requeue_closure`] widens a requeue).
    pub fn selects(&self, row: &OutboxMessage) -> bool {
        match self {
            ParkedSelection::Key(key) => row.partition.is_none() && row.key.as_ref() == Some(key),
            ParkedSelection::Id(id) => row.id == *id,
            ParkedSelection::All => true,
        }
    }
}

/// The ids a requeue of `selection` moves back, ascending: the selected rows plus every
/// parked row of the same bucket and [`HoldKey`] with a lower id than a selected one, so
/// that no requeued row can overtake a parked row of its key.
pub fn requeue_closure(parked: &[ParkedRow], selection: &ParkedSelection) -> Vec<i64> {
    let mut highest: BTreeMap<(i32, HoldKey), i64> = BTreeMap::new();
    let mut ids: Vec<i64> = Vec::new();
    for row in parked.iter().filter(|r| selection.selects(&r.message)) {
        ids.push(row.message.id);
        if let Some(key) = HoldKey::of(&row.message) {
            highest
                .entry((row.message.bucket, key))
                .and_modify(|h| *h = (*h).max(row.message.id))
                .or_insert(row.message.id);
        }
    }
    for row in parked {
        if let Some(key) = HoldKey::of(&row.message)
            && highest
                .get(&(row.message.bucket, key))
                .is_some_and(|h| row.message.id < *h)
        {
            ids.push(row.message.id);
        }
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Operators' access to the parked rows of one outbox (the relay binary's `parked`
/// commands run on it).
pub trait ParkedRows: Send + Sync {
    /// Up to `limit` parked rows, ascending by id.
    fn list_parked(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ParkedRow>, StoreError>> + Send;

    /// The parked row with this id.
    fn show_parked(
        &self,
        id: i64,
    ) -> impl Future<Output = Result<Option<ParkedRow>, StoreError>> + Send;

    /// Moves the rows of [`requeue_closure`]`(selection)` back into the messages table
    /// with their original ids, in one transaction; returns their ids, ascending.
    fn requeue_parked(
        &self,
        selection: &ParkedSelection,
    ) -> impl Future<Output = Result<Vec<i64>, StoreError>> + Send;

    /// Deletes the selected parked rows for good, in one transaction; returns their ids.
    fn discard_parked(
        &self,
        selection: &ParkedSelection,
    ) -> impl Future<Output = Result<Vec<i64>, StoreError>> + Send;
}

#[cfg(test)]
#[path = "park_tests.rs"]
mod tests;
