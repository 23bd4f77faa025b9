//! Lease planning: the fair-share claim / release / extension policy, written once.
//!
//! Every store runs an acquisition the same way: record the caller's heartbeat, read a
//! [`LeaseSnapshot`] (the lease rows and the heartbeats), ask [`plan_acquisition`] what
//! to do, and execute the [`LeasePlan`] with guarded writes. The policy lives only here,
//! so the deterministic simulation (which runs the in-memory store) exercises exactly the
//! decisions a relational store makes in production.
//!
//! # The rules
//!
//! * A relay is live when its heartbeat is newer than `now - lease_duration`; the caller
//!   always counts, so its own just-written heartbeat is never needed to see itself.
//! * Its share follows from the live relays ([`fair_share`]).
//! * Only rows of `0..bucket_count` count: a stale row at or beyond the bucket count (left
//!   by a deployment with more buckets) is neither held, nor claimed, nor released.
//! * Held means owned by the caller and not yet expired. Above the share, the caller
//!   releases its *highest* buckets, so owners shrink from the top and a newcomer finds
//!   the same buckets free; the kept ones are extended.
//! * Below the share, it claims the lowest buckets that are free, expired, or its own
//!   (an expired lease of its own is claimed again, not extended).
//! * Missing lease rows of `0..bucket_count` are created free, on first use.
//! * Heartbeat rows silent for a day (or ten lease durations, if longer) are forgotten.
//!
//! # Why the guards are part of the plan
//!
//! Between the snapshot and the writes another relay may act, so a store never writes a
//! plan blindly: a claim is granted only if, at the write, the row is still free, expired
//! by [`LeasePlan::expired_by`], or the caller's own ([`LeasePlan::may_claim`]);
//! releases and extensions touch only rows the caller owns. The expiry threshold comes
//! from the plan rather than from each store, so the rule "a live lease is never taken"
//! is decided once, here, and every store (and the simulation) executes the same one.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::fair_share::fair_share;
use crate::store::LeaseWait;
use crate::time::Timestamp;

/// Heartbeat rows older than this are forgotten: the relays are long gone, and the table
/// would otherwise grow by one row per relay id ever used.
pub const RELAY_ROW_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// One lease row: who holds a bucket and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    /// The holding relay, `None` when the bucket is free.
    pub owner: Option<String>,
    /// When the lease runs out; [`Timestamp::EPOCH`] for a free row.
    pub expires_at: Timestamp,
}

impl LeaseRow {
    /// A free row, as created on first use and left by a release.
    pub fn free() -> Self {
        LeaseRow {
            owner: None,
            expires_at: Timestamp::EPOCH,
        }
    }

    fn owned_by(&self, relay_id: &str) -> bool {
        self.owner.as_deref() == Some(relay_id)
    }

    /// Whether the lease has run out at `instant`: an expiry at or before it is expired
    /// (no longer held, and claimable). The one expiry rule of the planner, the stores'
    /// guards and the operator's status.
    pub fn is_expired_at(&self, instant: Timestamp) -> bool {
        self.expires_at <= instant
    }
}

/// Whether a relay last seen at `last_seen` counts as live at `now`: its heartbeat is
/// newer than `now - lease_duration`. The one liveness rule of the fair split (which
/// relays share the buckets) and of the operator's status.
pub fn relay_is_live(last_seen: Timestamp, now: Timestamp, lease_duration: Duration) -> bool {
    last_seen > now.saturating_sub(lease_duration)
}

/// What an acquisition reads before it plans: the lease rows and the heartbeats.
///
/// A map per table, because both tables are keyed (by bucket, by relay id): a snapshot
/// cannot hold two rows for one bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseSnapshot {
    /// Lease rows by bucket, including any outside `0..bucket_count`.
    pub leases: BTreeMap<i32, LeaseRow>,
    /// Last heartbeat by relay id.
    pub relays: BTreeMap<String, Timestamp>,
}

/// What one acquisition does, for a store to execute with guarded writes.
///
/// The sets are ascending, disjoint, and within `0..bucket_count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeasePlan {
    /// The caller's fair share among the live relays.
    pub share: u32,
    /// Delete heartbeat rows last seen before this instant (guarded by that age, so a
    /// relay that came back in between keeps its row). `None` when the snapshot had none.
    pub forget_relays_seen_before: Option<Timestamp>,
    /// Missing lease rows to insert free (insert-if-absent).
    pub create: Vec<i32>,
    /// Held buckets above the share, to free (guarded by `owner = caller`).
    pub release: Vec<i32>,
    /// Held buckets to keep, to extend to [`expires_at`](Self::expires_at) (guarded by
    /// `owner = caller`).
    pub extend: Vec<i32>,
    /// Buckets to take, each guarded by [`may_claim`](Self::may_claim) at the write.
    pub claim: Vec<i32>,
    /// Held buckets above the share that are kept (and extended) anyway because the
    /// caller is still working on them (see [`keeping_busy`](Self::keeping_busy)); the
    /// caller finishes that work, starts nothing new there, and releases them at its next
    /// acquisition.
    pub surplus: Vec<i32>,
    /// A lease whose expiry is at or before this instant is expired: it is no longer
    /// held, and may be claimed.
    pub expired_by: Timestamp,
    /// The expiry written by extensions and claims.
    pub expires_at: Timestamp,
    /// When the claims fall short of the share: the buckets the caller waits for, lowest
    /// first and at most the shortfall, each held unexpired by a relay that is silent
    /// (crashed, its lease runs out by itself) or live above its own share (it hands the
    /// bucket over at its next acquisition). A relay logs them so that a slow start says
    /// why. Empty when the share is reached.
    pub waiting: Vec<LeaseWait>,
}

impl LeasePlan {
    /// The claim guard: `row` may go to `relay_id` if it is free, expired, or already its
    /// own. A store checks this atomically with the write (in SQL, `WHERE owner IS NULL
    /// OR expires_at_ms <= expired_by OR owner = relay_id`).
    pub fn may_claim(&self, row: &LeaseRow, relay_id: &str) -> bool {
        row.owner.is_none() || self.is_expired(row) || row.owned_by(relay_id)
    }

    fn is_expired(&self, row: &LeaseRow) -> bool {
        row.is_expired_at(self.expired_by)
    }

    /// Keeps the `busy` buckets this plan would release: they move from
    /// [`release`](Self::release) to [`extend`](Self::extend) and are listed in
    /// [`surplus`](Self::surplus). A relay passes the buckets with a publish or a delete in
    /// flight, so that an acquisition can run beside its lanes: a bucket is never handed
    /// to another relay while this one may still publish or delete in it.
    pub fn keeping_busy(mut self, busy: &[i32]) -> Self {
        let (kept, released): (Vec<i32>, Vec<i32>) =
            self.release.iter().partition(|b| busy.contains(b));
        if kept.is_empty() {
            return self;
        }
        self.release = released;
        self.extend.extend(kept.iter().copied());
        self.extend.sort_unstable();
        self.surplus = kept;
        self
    }
}

/// Plans `me`'s acquisition at `now` from `snapshot` (which should already contain the
/// heartbeat `me` has just written, though `me` counts as live regardless).
///
/// Pure and deterministic: the same snapshot gives the same plan.
pub fn plan_acquisition(
    snapshot: &LeaseSnapshot,
    me: &str,
    now: Timestamp,
    lease_duration: Duration,
    bucket_count: u32,
) -> LeasePlan {
    let mut plan = LeasePlan {
        share: 0,
        forget_relays_seen_before: None,
        create: Vec::new(),
        release: Vec::new(),
        extend: Vec::new(),
        claim: Vec::new(),
        surplus: Vec::new(),
        expired_by: now,
        expires_at: now.saturating_add(lease_duration),
        waiting: Vec::new(),
    };

    let live = || {
        snapshot
            .relays
            .iter()
            .filter(move |(_, seen)| relay_is_live(**seen, now, lease_duration))
            .map(|(id, _)| id.as_str())
    };
    plan.share = fair_share(live(), me, bucket_count);
    let share = usize::try_from(plan.share).unwrap_or(usize::MAX);

    let retention = RELAY_ROW_RETENTION.max(lease_duration.saturating_mul(10));
    let horizon = now.saturating_sub(retention);
    if snapshot.relays.values().any(|seen| *seen < horizon) {
        plan.forget_relays_seen_before = Some(horizon);
    }

    // Bucket columns are 32-bit; validated options keep the count far below that.
    let buckets = 0..i32::try_from(bucket_count).unwrap_or(i32::MAX);
    let mut held = Vec::new();
    for bucket in buckets.clone() {
        match snapshot.leases.get(&bucket) {
            None => plan.create.push(bucket),
            Some(row) if row.owned_by(me) && !plan.is_expired(row) => held.push(bucket),
            Some(_) => {}
        }
    }

    // Owners shrink from the top, so a newcomer finds the same buckets free.
    if held.len() > share {
        plan.release = held.split_off(share);
    }
    let need = share.saturating_sub(held.len());
    plan.extend = held;
    if need > 0 {
        let free = LeaseRow::free();
        plan.claim = buckets
            .filter(|b| plan.extend.binary_search(b).is_err())
            .filter(|b| plan.may_claim(snapshot.leases.get(b).unwrap_or(&free), me))
            .take(need)
            .collect();
    }
    let shortfall = need.saturating_sub(plan.claim.len());
    if shortfall > 0 {
        plan.waiting = waiting_for(snapshot, &plan, me, bucket_count, shortfall, &live);
    }
    plan
}

/// The unexpired leases of others that `me` waits for (see [`LeasePlan::waiting`]).
fn waiting_for<'a, L, I>(
    snapshot: &'a LeaseSnapshot,
    plan: &LeasePlan,
    me: &str,
    bucket_count: u32,
    shortfall: usize,
    live: &L,
) -> Vec<LeaseWait>
where
    L: Fn() -> I,
    I: Iterator<Item = &'a str>,
{
    let in_range = |b: &i32| u32::try_from(*b).is_ok_and(|b| b < bucket_count);
    let held_by_others = || {
        snapshot
            .leases
            .iter()
            .filter(|(b, _)| in_range(b))
            .filter(|(_, row)| !plan.is_expired(row) && !row.owned_by(me))
            .filter_map(|(b, row)| row.owner.as_deref().map(|o| (*b, o, row.expires_at)))
    };
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for (_, holder, _) in held_by_others() {
        *counts.entry(holder).or_default() += 1;
    }
    held_by_others()
        .filter_map(|(bucket, holder, until)| {
            let holder_live = live().any(|id| id == holder);
            let above_share =
                counts.get(holder).copied().unwrap_or(0) > fair_share(live(), holder, bucket_count);
            (!holder_live || above_share).then(|| LeaseWait {
                bucket,
                holder: holder.to_owned(),
                until,
                holder_live,
            })
        })
        .take(shortfall)
        .collect()
}

impl LeaseSnapshot {
    /// Records `relay_id`'s heartbeat at `now` (an upsert).
    pub fn heartbeat(&mut self, relay_id: &str, now: Timestamp) {
        self.relays.insert(relay_id.to_owned(), now);
    }

    /// Executes `plan` for `relay_id` on these tables, with the same guards a relational
    /// store writes, and returns the buckets the relay holds afterwards (ascending).
    ///
    /// The in-memory store runs this under its lock, right after planning on the same
    /// tables, so the guards never refuse there; they still run, so that a plan from an
    /// older snapshot is executed exactly as a database would.
    pub fn apply(&mut self, relay_id: &str, plan: &LeasePlan) -> Vec<i32> {
        if let Some(before) = plan.forget_relays_seen_before {
            self.relays.retain(|_, seen| *seen >= before);
        }
        for bucket in &plan.create {
            self.leases.entry(*bucket).or_insert_with(LeaseRow::free);
        }
        for bucket in &plan.release {
            if let Some(row) = self.leases.get_mut(bucket)
                && row.owned_by(relay_id)
            {
                *row = LeaseRow::free();
            }
        }
        let mut held = Vec::with_capacity(plan.extend.len() + plan.claim.len());
        for bucket in &plan.extend {
            if let Some(row) = self.leases.get_mut(bucket)
                && row.owned_by(relay_id)
            {
                row.expires_at = plan.expires_at;
                held.push(*bucket);
            }
        }
        for bucket in &plan.claim {
            if let Some(row) = self.leases.get_mut(bucket)
                && plan.may_claim(row, relay_id)
            {
                *row = LeaseRow {
                    owner: Some(relay_id.to_owned()),
                    expires_at: plan.expires_at,
                };
                held.push(*bucket);
            }
        }
        held.sort_unstable();
        held.dedup();
        held
    }
}

#[cfg(test)]
#[path = "lease_plan_tests.rs"]
mod tests;
