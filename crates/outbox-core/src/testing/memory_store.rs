use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Misconfiguration, StoreError};
use crate::lease_plan::{LeaseRow, LeaseSnapshot, plan_acquisition};
use crate::message::OutboxMessage;
use crate::store::{
    Acquired, LeaseRequest, OutboxStore, PendingMetrics, RenewOutcome, StoreCapabilities,
};
use crate::time::Timestamp;

/// Which store call a fault hook is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOp {
    /// [`OutboxStore::acquire_leases`].
    AcquireLeases,
    /// [`OutboxStore::buckets_with_pending`].
    BucketsWithPending,
    /// [`OutboxStore::next_batch`].
    NextBatch,
    /// [`OutboxStore::delete_published`].
    DeletePublished,
    /// [`OutboxStore::renew_leases`].
    RenewLeases,
    /// [`OutboxStore::pending_metrics`].
    PendingMetrics,
    /// [`OutboxStore::release_leases`].
    ReleaseLeases,
    /// [`OutboxStore::park_rows`].
    ParkRows,
    /// [`OutboxStore::parked_holds`].
    ParkedHolds,
}

/// Decides, per call, whether the call fails instead of running.
pub type FaultHook = Box<dyn FnMut(StoreOp) -> Option<StoreError> + Send>;

#[derive(Default)]
pub(super) struct State {
    next_id: i64,
    /// Committed, pending rows keyed the way the relational index is: (bucket, id).
    pub(super) pending: BTreeMap<(i32, i64), OutboxMessage>,
    /// Ids inserted by transactions that have neither committed nor rolled back.
    uncommitted: BTreeSet<i64>,
    /// The lease and heartbeat tables.
    pub(super) tables: LeaseSnapshot,
    deleted: Vec<i64>,
    /// The parked table, keyed by original id.
    pub(super) parked: BTreeMap<i64, crate::park::ParkedRow>,
    fault: Option<FaultHook>,
}

/// A store held in memory, shared by every clone.
///
/// Ids come from one counter at insert time, like a database sequence, so a
/// [`MemoryTransaction`] that commits late leaves a lower id appearing after higher ones,
/// which is exactly the hazard a real store must survive.
///
/// The rows are shared by every clone; the cursor bookkeeping of
/// [`next_batch`](OutboxStore::next_batch) is not: like a relational store value, each
/// clone is one relay's view.
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    capabilities: StoreCapabilities,
    /// Per bucket, for this view's own reads: every id at or below this was final
    /// (committed or rolled back) when one of them returned rows up to it, so no row at
    /// or below it can appear unseen by this view.
    settled_upto: Arc<Mutex<BTreeMap<i32, i64>>>,
}

impl Clone for MemoryStore {
    /// Shares the rows and tables; starts its own cursor bookkeeping.
    fn clone(&self) -> Self {
        MemoryStore {
            state: Arc::clone(&self.state),
            capabilities: self.capabilities,
            settled_upto: Arc::default(),
        }
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store with every optional capability.
    pub fn new() -> Self {
        MemoryStore {
            state: Arc::default(),
            settled_upto: Arc::default(),
            capabilities: StoreCapabilities {
                lease_renewal: true,
                backlog_metrics: true,
                lease_release: true,
                parking: true,
            },
        }
    }

    /// A handle onto the same data that reports (and honours) other capabilities, to
    /// exercise relays against stores without renewal or metrics.
    pub fn with_capabilities(&self, capabilities: StoreCapabilities) -> Self {
        MemoryStore {
            state: Arc::clone(&self.state),
            capabilities,
            settled_upto: Arc::default(),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock happens only inside a failing test; keep going
        // with the data as it was so that test reports its own failure.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn fault(&self, op: StoreOp) -> Result<MutexGuard<'_, State>, StoreError> {
        let mut state = self.lock();
        if let Some(hook) = state.fault.as_mut()
            && let Some(error) = hook(op)
        {
            return Err(error);
        }
        Ok(state)
    }

    /// Installs a hook consulted before every store call.
    pub fn set_fault_hook(&self, hook: FaultHook) {
        self.lock().fault = Some(hook);
    }

    /// Removes the fault hook.
    pub fn clear_fault_hook(&self) {
        self.lock().fault = None;
    }

    /// Inserts and commits one message; returns its id.
    pub fn enqueue(&self, message: OutboxMessage) -> i64 {
        let mut tx = self.begin();
        let id = tx.insert(message);
        tx.commit();
        id
    }

    /// Inserts and commits several messages in one transaction.
    pub fn enqueue_all(&self, messages: impl IntoIterator<Item = OutboxMessage>) -> Vec<i64> {
        let mut tx = self.begin();
        let ids = messages.into_iter().map(|m| tx.insert(m)).collect();
        tx.commit();
        ids
    }

    /// Starts a transaction whose rows become visible at [`MemoryTransaction::commit`].
    pub fn begin(&self) -> MemoryTransaction {
        MemoryTransaction {
            store: self.clone(),
            rows: Vec::new(),
        }
    }

    /// Every pending row, by bucket then id.
    pub fn pending(&self) -> Vec<OutboxMessage> {
        self.lock().pending.values().cloned().collect()
    }

    /// Number of pending rows.
    pub fn pending_count(&self) -> usize {
        self.lock().pending.len()
    }

    /// Number of pending rows of `bucket` with an id of at least `from_id`.
    pub fn pending_count_from(&self, bucket: i32, from_id: i64) -> usize {
        self.lock()
            .pending
            .range((bucket, from_id)..=(bucket, i64::MAX))
            .count()
    }

    /// Ids removed by `delete_published`, in the order they were removed.
    pub fn deleted_ids(&self) -> Vec<i64> {
        self.lock().deleted.clone()
    }

    /// The lease table: bucket, owner, expiry.
    pub fn leases(&self) -> Vec<(i32, Option<String>, Timestamp)> {
        self.lock()
            .tables
            .leases
            .iter()
            .map(|(b, l)| (*b, l.owner.clone(), l.expires_at))
            .collect()
    }

    /// The heartbeat table: relay id, last seen.
    pub fn relays(&self) -> Vec<(String, Timestamp)> {
        self.lock()
            .tables
            .relays
            .iter()
            .map(|(r, t)| (r.clone(), *t))
            .collect()
    }
}

/// Rows inserted but not yet visible. Dropping without [`commit`](Self::commit) rolls back.
#[derive(Debug)]
pub struct MemoryTransaction {
    store: MemoryStore,
    rows: Vec<OutboxMessage>,
}

impl MemoryTransaction {
    /// Assigns the next id (as a sequence would, at insert time) and stages the row.
    pub fn insert(&mut self, mut message: OutboxMessage) -> i64 {
        let mut state = self.store.lock();
        state.next_id += 1;
        message.id = state.next_id;
        state.uncommitted.insert(message.id);
        drop(state);
        let id = message.id;
        self.rows.push(message);
        id
    }

    /// Makes every staged row visible at once.
    pub fn commit(mut self) {
        let mut state = self.store.lock();
        for row in std::mem::take(&mut self.rows) {
            state.uncommitted.remove(&row.id);
            state.pending.insert((row.bucket, row.id), row);
        }
    }
}

impl Drop for MemoryTransaction {
    /// Rolls back whatever was not committed.
    fn drop(&mut self) {
        if self.rows.is_empty() {
            return;
        }
        let mut state = self.store.lock();
        for row in &self.rows {
            state.uncommitted.remove(&row.id);
        }
    }
}

impl OutboxStore for MemoryStore {
    fn capabilities(&self) -> StoreCapabilities {
        self.capabilities
    }

    async fn acquire_leases(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        let mut state = self.fault(StoreOp::AcquireLeases)?;
        // Heartbeat, snapshot, plan and writes all under one lock: the acquisition is
        // atomic here, which a database only approximates with its guarded writes.
        let me = request.relay_id;
        let heartbeat_before = state.tables.relays.get(me).copied();
        state.tables.heartbeat(me, request.now);
        let plan = plan_acquisition(
            &state.tables,
            me,
            request.now,
            request.lease_duration,
            request.bucket_count,
        )
        .keeping_busy(request.busy);
        let held = state.tables.apply(me, &plan);
        let surplus = plan
            .surplus
            .iter()
            .copied()
            .filter(|b| held.contains(b))
            .collect();
        Ok(Acquired {
            held,
            surplus,
            waiting: plan.waiting,
            heartbeat_before,
        })
    }

    async fn buckets_with_pending(
        &self,
        owned: &[i32],
        bucket_count: u32,
    ) -> Result<Vec<i32>, StoreError> {
        let state = self.fault(StoreOp::BucketsWithPending)?;
        let limit = i64::from(bucket_count);
        if let Some((bucket, _)) = state
            .pending
            .keys()
            .find(|(b, _)| *b < 0 || i64::from(*b) >= limit)
        {
            return Err(Misconfiguration::BucketOutOfRange {
                bucket: *bucket,
                bucket_count,
            }
            .into());
        }
        let mut found: Vec<i32> = owned
            .iter()
            .copied()
            .filter(|b| {
                state
                    .pending
                    .range((*b, i64::MIN)..=(*b, i64::MAX))
                    .next()
                    .is_some()
            })
            .collect();
        found.sort_unstable();
        found.dedup();
        Ok(found)
    }

    async fn next_batch(
        &self,
        bucket: i32,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<OutboxMessage>, StoreError> {
        let state = self.fault(StoreOp::NextBatch)?;
        // The cursor is honoured only when no id at or below it can still become
        // visible: an earlier read found every id up to it final. A row that was being
        // inserted then and committed since lies below the cursor and must be read, so
        // that a key's later row never goes out before it.
        let mut settled_upto = self
            .settled_upto
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let settled = settled_upto.get(&bucket).copied();
        let safe = after.filter(|a| settled.is_some_and(|s| *a <= s));
        let from = match safe {
            Some(id) => std::ops::Bound::Excluded((bucket, id)),
            None => std::ops::Bound::Included((bucket, i64::MIN)),
        };
        let rows: Vec<OutboxMessage> = state
            .pending
            .range((from, std::ops::Bound::Included((bucket, i64::MAX))))
            .take(limit)
            .map(|(_, m)| m.clone())
            .collect();
        if let Some(last) = rows.last().map(|m| m.id) {
            let final_below = state.uncommitted.first().map_or(i64::MAX, |u| u - 1);
            let bound = last.min(final_below);
            // Honoured or not, the read covered every visible row from its start.
            let entry = settled_upto.entry(bucket).or_insert(i64::MIN);
            *entry = (*entry).max(bound);
        }
        Ok(rows)
    }

    async fn delete_published(
        &self,
        bucket: i32,
        published: &[OutboxMessage],
    ) -> Result<(), StoreError> {
        let mut state = self.fault(StoreOp::DeletePublished)?;
        for message in published {
            // Already gone is fine: after a takeover the other relay may have deleted it.
            if state.pending.remove(&(bucket, message.id)).is_some() {
                state.deleted.push(message.id);
            }
        }
        Ok(())
    }

    async fn renew_leases(
        &self,
        request: &LeaseRequest<'_>,
        buckets: &[i32],
    ) -> Result<RenewOutcome, StoreError> {
        if !self.capabilities.lease_renewal {
            return Err(StoreError::Unsupported("lease renewal"));
        }
        let mut state = self.fault(StoreOp::RenewLeases)?;
        let me = request.relay_id;
        state.tables.heartbeat(me, request.now);
        let mut outcome = RenewOutcome::default();
        for bucket in buckets {
            match state.tables.leases.get_mut(bucket) {
                Some(lease)
                    if lease.owner.as_deref() == Some(me) && lease.expires_at > request.now =>
                {
                    lease.expires_at = request.expires_at();
                    outcome.renewed.push(*bucket);
                }
                _ => outcome.lost.push(*bucket),
            }
        }
        Ok(outcome)
    }

    async fn park_rows(
        &self,
        request: &crate::park::ParkRequest<'_>,
    ) -> Result<crate::park::ParkOutcome, StoreError> {
        self.park_rows_now(request)
    }

    async fn parked_holds(
        &self,
        bucket: i32,
    ) -> Result<Vec<(Option<crate::park::HoldKey>, i64)>, StoreError> {
        self.parked_holds_now(bucket)
    }

    async fn release_leases(&self, relay_id: &str) -> Result<(), StoreError> {
        if !self.capabilities.lease_release {
            return Err(StoreError::Unsupported("lease release"));
        }
        let mut state = self.fault(StoreOp::ReleaseLeases)?;
        state.tables.relays.remove(relay_id);
        for lease in state.tables.leases.values_mut() {
            if lease.owner.as_deref() == Some(relay_id) {
                *lease = LeaseRow::free();
            }
        }
        Ok(())
    }

    async fn pending_metrics(&self) -> Result<Option<PendingMetrics>, StoreError> {
        if !self.capabilities.backlog_metrics {
            return Err(StoreError::Unsupported("backlog metrics"));
        }
        let state = self.fault(StoreOp::PendingMetrics)?;
        Ok(Some(PendingMetrics {
            count: u64::try_from(state.pending.len()).unwrap_or(u64::MAX),
            oldest_created_at: state.pending.values().map(|m| m.created_at).min(),
            parked_count: Some(u64::try_from(state.parked.len()).unwrap_or(u64::MAX)),
            oldest_parked_at: state.parked.values().map(|p| p.parked_at).min(),
        }))
    }
}
