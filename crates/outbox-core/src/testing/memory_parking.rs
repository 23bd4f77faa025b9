//! [`MemoryStore`]'s parked table: parking under the lease, and the operator commands,
//! executing the policies of [`park`](crate::park) exactly as a relational store does.

use crate::error::StoreError;
use crate::park::{
    HoldKey, ParkOutcome, ParkRequest, ParkedRow, ParkedRows, ParkedSelection, park_decisions,
    requeue_closure,
};
use crate::store::OutboxStore;

use super::memory_store::{MemoryStore, State, StoreOp};

impl State {
    fn parked_holds_of(&self, bucket: i32) -> Vec<(Option<HoldKey>, i64)> {
        let mut groups: Vec<(Option<HoldKey>, i64)> = Vec::new();
        for row in self.parked.values().filter(|r| r.message.bucket == bucket) {
            let key = HoldKey::of(&row.message);
            if !groups.iter().any(|(k, _)| *k == key) {
                // Ascending ids: the first row of a group is its lowest.
                groups.push((key, row.message.id));
            }
        }
        groups
    }
}

impl MemoryStore {
    pub(super) fn park_rows_now(
        &self,
        request: &ParkRequest<'_>,
    ) -> Result<ParkOutcome, StoreError> {
        if !self.capabilities().parking {
            return Err(StoreError::Unsupported("parking"));
        }
        let mut state = self.fault(StoreOp::ParkRows)?;
        let owns = state
            .tables
            .leases
            .get(&request.bucket)
            .is_some_and(|lease| {
                lease.owner.as_deref() == Some(request.relay_id) && lease.expires_at > request.now
            });
        if !owns {
            return Ok(ParkOutcome {
                lease_lost: true,
                ..ParkOutcome::default()
            });
        }
        let decisions = park_decisions(&state.parked_holds_of(request.bucket), request.rows);
        let mut outcome = ParkOutcome::default();
        for (row, park) in request.rows.iter().zip(decisions) {
            let id = row.message.id;
            if !park {
                outcome.released.push(id);
                continue;
            }
            let Some(message) = state.pending.remove(&(request.bucket, id)) else {
                continue;
            };
            state.parked.insert(
                id,
                ParkedRow {
                    message,
                    reason: row.reason.clone(),
                    parked_at: request.now,
                },
            );
            outcome.parked.push(id);
        }
        Ok(outcome)
    }

    pub(super) fn parked_holds_now(
        &self,
        bucket: i32,
    ) -> Result<Vec<(Option<HoldKey>, i64)>, StoreError> {
        if !self.capabilities().parking {
            return Err(StoreError::Unsupported("parking"));
        }
        Ok(self.fault(StoreOp::ParkedHolds)?.parked_holds_of(bucket))
    }

    /// Every parked row, ascending by id (for tests and the simulation).
    pub fn parked(&self) -> Vec<ParkedRow> {
        self.lock().parked.values().cloned().collect()
    }
}

impl ParkedRows for MemoryStore {
    async fn list_parked(&self, limit: usize) -> Result<Vec<ParkedRow>, StoreError> {
        Ok(self.lock().parked.values().take(limit).cloned().collect())
    }

    async fn show_parked(&self, id: i64) -> Result<Option<ParkedRow>, StoreError> {
        Ok(self.lock().parked.get(&id).cloned())
    }

    async fn requeue_parked(&self, selection: &ParkedSelection) -> Result<Vec<i64>, StoreError> {
        let mut state = self.lock();
        let parked: Vec<ParkedRow> = state.parked.values().cloned().collect();
        let ids = requeue_closure(&parked, selection);
        for id in &ids {
            if let Some(row) = state.parked.remove(id) {
                // Back under its original id: below every later row of its key.
                state
                    .pending
                    .insert((row.message.bucket, row.message.id), row.message);
            }
        }
        Ok(ids)
    }

    async fn discard_parked(&self, selection: &ParkedSelection) -> Result<Vec<i64>, StoreError> {
        let mut state = self.lock();
        let ids: Vec<i64> = state
            .parked
            .values()
            .filter(|r| selection.selects(&r.message))
            .map(|r| r.message.id)
            .collect();
        for id in &ids {
            state.parked.remove(id);
        }
        Ok(ids)
    }
}
