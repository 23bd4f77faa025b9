//! The idempotent producer's identity and per-partition sequence numbers.
//!
//! A *session* is one producer id and epoch from InitProducerId. Each session has a
//! generation number; a partition's sequence restarts at 0 whenever it is first used
//! in a newer generation. When a partition's sequence can no longer be trusted (the
//! broker says out of order, unknown producer or fenced, or a batch's fate stayed
//! unknown) the session is invalidated and the next send asks for a new producer id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tracing::{info, warn};

/// One producer identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Session {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub generation: u64,
}

#[derive(Debug, Default)]
struct Current {
    session: Option<Session>,
    last_generation: u64,
}

/// The current session, shared by every send.
#[derive(Debug, Default)]
pub(crate) struct SessionCell {
    current: Mutex<Current>,
    /// Serializes InitProducerId so that concurrent sends share one new id.
    pub init_lock: tokio::sync::Mutex<()>,
}

impl SessionCell {
    fn lock(&self) -> MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The valid session, if any.
    pub(crate) fn current(&self) -> Option<Session> {
        self.lock().session
    }

    /// Installs a new producer identity as the next generation.
    pub(crate) fn install(&self, producer_id: i64, producer_epoch: i16) -> Session {
        let mut current = self.lock();
        current.last_generation += 1;
        let session = Session {
            producer_id,
            producer_epoch,
            generation: current.last_generation,
        };
        current.session = Some(session);
        info!(
            producer_id,
            producer_epoch,
            generation = session.generation,
            "idempotent producer initialised"
        );
        session
    }

    /// Drops the session of `generation` (if still current): its sequences can no
    /// longer be trusted.
    pub(crate) fn invalidate(&self, generation: u64, why: &str) {
        let mut current = self.lock();
        if current.session.is_some_and(|s| s.generation == generation) {
            warn!(
                generation,
                reason = why,
                "producer sequence state invalidated; a new producer id will be requested"
            );
            current.session = None;
        }
    }
}

/// Sequence state of one partition under one session generation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PartitionSequence {
    generation: u64,
    next: i32,
}

impl PartitionSequence {
    /// The next base sequence for `session`, restarting at 0 in a new generation.
    pub(crate) fn next_for(&mut self, session: &Session) -> i32 {
        if self.generation != session.generation {
            self.generation = session.generation;
            self.next = 0;
        }
        self.next
    }

    /// Records that `count` records from the current next sequence were appended.
    pub(crate) fn advance(&mut self, count: i32) {
        self.next = increment_sequence(self.next, count);
    }
}

/// Kafka's sequence arithmetic: sequences wrap from `i32::MAX` to 0.
pub(crate) fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

/// Key of a partition's sequence state.
pub(crate) type TopicPartition = (String, i32);

/// One lock per partition: sends to a partition are strictly one after the other, so
/// a partition's sequence is never used twice at once.
#[derive(Debug, Default)]
pub(crate) struct Sequences {
    partitions: Mutex<HashMap<TopicPartition, Arc<tokio::sync::Mutex<PartitionSequence>>>>,
}

impl Sequences {
    pub(crate) fn partition(
        &self,
        topic: &str,
        partition: i32,
    ) -> Arc<tokio::sync::Mutex<PartitionSequence>> {
        let mut map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(map.entry((topic.to_owned(), partition)).or_default())
    }
}

/// Invalidates the session if dropped while armed: a batch was handed to the broker
/// and its fate is unknown, for instance because the publish future was dropped.
#[derive(Debug)]
pub(crate) struct InFlight<'a> {
    cell: &'a SessionCell,
    generation: u64,
    armed: bool,
}

impl<'a> InFlight<'a> {
    pub(crate) fn new(cell: &'a SessionCell, generation: u64) -> Self {
        InFlight {
            cell,
            generation,
            armed: false,
        }
    }

    /// A request is about to be sent: from now on its fate may be unknown.
    pub(crate) fn arm(&mut self) {
        self.armed = true;
    }

    /// The batch's fate is known (appended, or never appended by any attempt).
    pub(crate) fn settle(&mut self) {
        self.armed = false;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.cell.invalidate(
                self.generation,
                "a batch's outcome is unknown (cancelled or timed out)",
            );
        }
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
