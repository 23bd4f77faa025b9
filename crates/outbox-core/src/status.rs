//! The operator's view of one outbox: which relays are alive, who holds which bucket and
//! until when, what waits in each bucket, and whether a writer used a bucket the relays
//! never serve.
//!
//! A store reads the raw rows once ([`StatusSnapshot`]: heartbeats and leases as the
//! lease planner sees them, plus per-bucket counts of pending and parked rows), and
//! [`OutboxStatus::assemble`] turns them into the view, at a wall-clock `now` passed in.
//! The assembly reads no clock and does no I/O, so every rule is unit-tested with
//! explicit instants.
//!
//! The view judges with the relays' own rules, not a copy of them:
//! * a relay is alive when [`relay_is_live`] says so (the rule that decides which relays
//!   share the buckets), with the relays' `lease_duration`;
//! * a lease is expired when [`LeaseRow::is_expired_at`] says so (the rule by which a
//!   relay may claim it);
//! * a live relay's share is [`fair_shares`] over the live relays.
//!
//! So a relay shown stale is one the others no longer count, and a bucket shown expired
//! is one any relay may take at its next acquisition.
//!
//! Rows outside `0..bucket_count` are listed apart ([`OutboxStatus::out_of_range`]): no
//! relay of this outbox ever publishes them. They come from a writer configured with
//! another bucket count (a running relay stops on finding them).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::fair_share::fair_shares;
use crate::lease_plan::{LeaseRow, LeaseSnapshot, relay_is_live};
use crate::time::Timestamp;

/// How many rows one bucket holds and when the oldest of them was stamped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BucketRows {
    /// Rows in the bucket.
    pub count: u64,
    /// The oldest row's stamp: `created_at` for pending rows (the writer's clock),
    /// `parked_at` for parked rows (the parking relay's clock). `None` when empty or
    /// unreadable.
    pub oldest: Option<Timestamp>,
}

/// The raw rows a status is built from, as a store reads them (one query per table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusSnapshot {
    /// The lease rows and the heartbeats, exactly what an acquisition reads.
    pub leases: LeaseSnapshot,
    /// Pending rows per bucket (buckets without rows may be absent), any bucket value.
    pub pending: BTreeMap<i32, BucketRows>,
    /// Parked rows per bucket (buckets without rows may be absent), any bucket value.
    pub parked: BTreeMap<i32, BucketRows>,
}

/// One relay, from its heartbeat row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayStatus {
    /// The relay's id.
    pub relay_id: String,
    /// Its last heartbeat.
    pub last_seen: Timestamp,
    /// How long ago that was (zero for a heartbeat stamped ahead of `now`: clock skew).
    pub age: Duration,
    /// Whether the relays count it in their fair split ([`relay_is_live`]).
    pub alive: bool,
    /// Its fair share among the live relays; `None` for a stale relay.
    pub fair_share: Option<u32>,
    /// The buckets of `0..bucket_count` it holds by an unexpired lease, ascending.
    pub owned: Vec<i32>,
}

/// Who holds one bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    /// No lease row yet: no relay has run against this bucket count.
    Missing,
    /// Released, or never claimed.
    Free,
    /// Held, unexpired.
    Held {
        /// The holding relay.
        owner: String,
        /// When the lease runs out.
        expires_at: Timestamp,
        /// How long it still runs.
        left: Duration,
        /// Whether the owner's heartbeat is live; a held lease of a stale relay (a crashed
        /// one) runs out by itself.
        owner_alive: bool,
    },
    /// Its owner's lease ran out: any relay may claim the bucket at its next acquisition.
    Expired {
        /// The last holder.
        owner: String,
        /// When the lease ran out.
        expired_at: Timestamp,
        /// How long ago that was.
        ago: Duration,
    },
}

impl LeaseState {
    /// The relay holding the bucket by an unexpired lease.
    pub fn holder(&self) -> Option<&str> {
        match self {
            LeaseState::Held { owner, .. } => Some(owner),
            _ => None,
        }
    }
}

/// One bucket of `0..bucket_count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketStatus {
    /// The bucket.
    pub bucket: i32,
    /// Who holds it.
    pub lease: LeaseState,
    /// Pending rows.
    pub pending: u64,
    /// The oldest pending row's `created_at`.
    pub oldest_pending: Option<Timestamp>,
    /// Its age at `now` (the writer's clock against the reader's).
    pub oldest_pending_age: Option<Duration>,
    /// Parked rows.
    pub parked: u64,
}

/// Rows in a bucket outside `0..bucket_count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfRange {
    /// The bucket value the writer stored.
    pub bucket: i32,
    /// Pending rows there.
    pub pending: u64,
    /// Parked rows there.
    pub parked: u64,
}

/// The operator's view of one outbox at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxStatus {
    /// The instant it was judged at.
    pub now: Timestamp,
    /// The outbox's bucket count.
    pub bucket_count: u32,
    /// The relays' lease duration, which also bounds a live heartbeat's age.
    pub lease_duration: Duration,
    /// Every relay with a heartbeat row, by id.
    pub relays: Vec<RelayStatus>,
    /// Every bucket of `0..bucket_count`, ascending.
    pub buckets: Vec<BucketStatus>,
    /// Buckets outside `0..bucket_count` that hold rows, ascending.
    pub out_of_range: Vec<OutOfRange>,
}

impl OutboxStatus {
    /// Builds the view from `snapshot` at `now`, judging liveness and expiry with
    /// `lease_duration` (the relays' own) by the relays' own rules.
    pub fn assemble(
        snapshot: &StatusSnapshot,
        bucket_count: u32,
        lease_duration: Duration,
        now: Timestamp,
    ) -> OutboxStatus {
        let in_range = |bucket: i32| u32::try_from(bucket).is_ok_and(|b| b < bucket_count);
        let live_ids = snapshot
            .leases
            .relays
            .iter()
            .filter(|(_, seen)| relay_is_live(**seen, now, lease_duration))
            .map(|(id, _)| id.as_str());
        let shares: BTreeMap<&str, u32> = fair_shares(live_ids, bucket_count).into_iter().collect();
        let live = |id: &str| shares.contains_key(id);

        // Bucket columns are 32-bit; a validated schema keeps the count far below that.
        let buckets: Vec<BucketStatus> = (0..i32::try_from(bucket_count).unwrap_or(i32::MAX))
            .map(|bucket| {
                let pending = snapshot.pending.get(&bucket).copied().unwrap_or_default();
                let parked = snapshot.parked.get(&bucket).copied().unwrap_or_default();
                BucketStatus {
                    bucket,
                    lease: lease_state(snapshot.leases.leases.get(&bucket), now, &live),
                    pending: pending.count,
                    oldest_pending: pending.oldest,
                    oldest_pending_age: pending
                        .oldest
                        .map(|oldest| now.saturating_duration_since(oldest)),
                    parked: parked.count,
                }
            })
            .collect();

        let relays = snapshot
            .leases
            .relays
            .iter()
            .map(|(id, seen)| RelayStatus {
                relay_id: id.clone(),
                last_seen: *seen,
                age: now.saturating_duration_since(*seen),
                alive: live(id),
                fair_share: shares.get(id.as_str()).copied(),
                owned: buckets
                    .iter()
                    .filter(|b| b.lease.holder() == Some(id.as_str()))
                    .map(|b| b.bucket)
                    .collect(),
            })
            .collect();

        let mut out_of_range: BTreeMap<i32, OutOfRange> = BTreeMap::new();
        let outside = |rows: &BTreeMap<i32, BucketRows>| {
            rows.iter()
                .filter(|(bucket, rows)| !in_range(**bucket) && rows.count > 0)
                .map(|(bucket, rows)| (*bucket, rows.count))
                .collect::<Vec<_>>()
        };
        let empty = |bucket| OutOfRange {
            bucket,
            pending: 0,
            parked: 0,
        };
        for (bucket, count) in outside(&snapshot.pending) {
            out_of_range
                .entry(bucket)
                .or_insert_with(|| empty(bucket))
                .pending = count;
        }
        for (bucket, count) in outside(&snapshot.parked) {
            out_of_range
                .entry(bucket)
                .or_insert_with(|| empty(bucket))
                .parked = count;
        }

        OutboxStatus {
            now,
            bucket_count,
            lease_duration,
            relays,
            buckets,
            out_of_range: out_of_range.into_values().collect(),
        }
    }

    /// Pending rows in `0..bucket_count`.
    pub fn pending(&self) -> u64 {
        self.buckets.iter().map(|b| b.pending).sum()
    }

    /// Parked rows in `0..bucket_count`.
    pub fn parked(&self) -> u64 {
        self.buckets.iter().map(|b| b.parked).sum()
    }

    /// The age of the oldest pending row in `0..bucket_count`.
    pub fn oldest_pending_age(&self) -> Option<Duration> {
        self.buckets
            .iter()
            .filter_map(|b| b.oldest_pending_age)
            .max()
    }

    /// Rows (pending and parked) outside `0..bucket_count`.
    pub fn out_of_range_rows(&self) -> u64 {
        self.out_of_range.iter().map(|o| o.pending + o.parked).sum()
    }

    /// The relays the others count in their fair split.
    pub fn alive_relays(&self) -> impl Iterator<Item = &RelayStatus> {
        self.relays.iter().filter(|r| r.alive)
    }

    /// Buckets with pending rows and no unexpired lease: nothing publishes them until a
    /// relay claims them (at once if one is alive and below its share).
    pub fn unowned_with_pending(&self) -> impl Iterator<Item = &BucketStatus> {
        self.buckets
            .iter()
            .filter(|b| b.pending > 0 && b.lease.holder().is_none())
    }
}

fn lease_state(row: Option<&LeaseRow>, now: Timestamp, live: &impl Fn(&str) -> bool) -> LeaseState {
    let Some(row) = row else {
        return LeaseState::Missing;
    };
    let Some(owner) = row.owner.clone() else {
        return LeaseState::Free;
    };
    if row.is_expired_at(now) {
        LeaseState::Expired {
            owner,
            expired_at: row.expires_at,
            ago: now.saturating_duration_since(row.expires_at),
        }
    } else {
        LeaseState::Held {
            owner_alive: live(&owner),
            owner,
            expires_at: row.expires_at,
            left: row.expires_at.saturating_duration_since(now),
        }
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
