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
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(30);
    const NOW: Timestamp = Timestamp::from_millis(1_765_000_000_000);

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn before(s: u64) -> Timestamp {
        NOW.saturating_sub(secs(s))
    }

    fn after(s: u64) -> Timestamp {
        NOW.saturating_add(secs(s))
    }

    fn held(owner: &str, until: Timestamp) -> LeaseRow {
        LeaseRow {
            owner: Some(owner.to_owned()),
            expires_at: until,
        }
    }

    fn rows(count: u64, oldest: Timestamp) -> BucketRows {
        BucketRows {
            count,
            oldest: Some(oldest),
        }
    }

    fn snapshot() -> StatusSnapshot {
        let mut s = StatusSnapshot::default();
        s.leases.relays.insert("a".into(), before(2));
        s.leases.relays.insert("b".into(), before(29));
        s.leases.relays.insert("old".into(), before(300));
        s.leases.leases.insert(0, held("a", after(28)));
        s.leases.leases.insert(1, held("b", after(1)));
        s.leases.leases.insert(2, held("old", before(270)));
        s.leases.leases.insert(3, LeaseRow::free());
        s.leases.leases.insert(9, held("a", after(28)));
        s
    }

    fn relay<'a>(status: &'a OutboxStatus, id: &str) -> &'a RelayStatus {
        status.relays.iter().find(|r| r.relay_id == id).unwrap()
    }

    #[test]
    fn relays_are_alive_by_the_fair_split_rule() {
        let status = OutboxStatus::assemble(&snapshot(), 5, LEASE, NOW);
        let ids: Vec<&str> = status.relays.iter().map(|r| r.relay_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "old"]);
        let a = relay(&status, "a");
        assert!(a.alive);
        assert_eq!(a.age, secs(2));
        assert_eq!(
            a.fair_share,
            Some(3),
            "5 buckets over a and b: a ranks first"
        );
        assert_eq!(relay(&status, "b").fair_share, Some(2));
        let old = relay(&status, "old");
        assert!(!old.alive);
        assert_eq!(old.fair_share, None);
        assert_eq!(old.age, secs(300));
        assert_eq!(status.alive_relays().count(), 2);
    }

    #[test]
    fn the_liveness_boundary_is_the_planners() {
        for (seen, lease) in [(before(30), LEASE), (before(29), LEASE), (NOW, secs(1))] {
            let mut s = StatusSnapshot::default();
            s.leases.relays.insert("r".into(), seen);
            let status = OutboxStatus::assemble(&s, 4, lease, NOW);
            assert_eq!(
                status.relays[0].alive,
                relay_is_live(seen, NOW, lease),
                "seen {seen}, lease {lease:?}"
            );
            // The planner gives a relay that is not live no share of its own.
            let plan = crate::plan_acquisition(&s.leases, "zz", NOW, lease, 4);
            let counted = plan.share < 4;
            assert_eq!(status.relays[0].alive, counted, "seen {seen}");
        }
        let mut s = StatusSnapshot::default();
        s.leases.relays.insert("r".into(), before(30));
        assert!(
            !OutboxStatus::assemble(&s, 4, LEASE, NOW).relays[0].alive,
            "exactly a lease old is stale"
        );
    }

    #[test]
    fn leases_are_held_expired_free_or_missing() {
        let status = OutboxStatus::assemble(&snapshot(), 5, LEASE, NOW);
        let lease = |b: usize| status.buckets[b].lease.clone();
        assert_eq!(
            lease(0),
            LeaseState::Held {
                owner: "a".into(),
                expires_at: after(28),
                left: secs(28),
                owner_alive: true
            }
        );
        assert_eq!(lease(1).holder(), Some("b"));
        assert_eq!(
            lease(2),
            LeaseState::Expired {
                owner: "old".into(),
                expired_at: before(270),
                ago: secs(270)
            }
        );
        assert_eq!(lease(3), LeaseState::Free);
        assert_eq!(lease(4), LeaseState::Missing);
        assert_eq!(status.buckets.len(), 5);
        assert_eq!(relay(&status, "a").owned, [0], "bucket 9 is out of range");
        assert!(relay(&status, "old").owned.is_empty(), "its lease expired");
    }

    #[test]
    fn a_lease_expiring_now_is_expired_as_the_planner_sees_it() {
        let mut s = StatusSnapshot::default();
        s.leases.leases.insert(0, held("a", NOW));
        let status = OutboxStatus::assemble(&s, 1, LEASE, NOW);
        assert!(matches!(
            status.buckets[0].lease,
            LeaseState::Expired { .. }
        ));
        let plan = crate::plan_acquisition(&s.leases, "b", NOW, LEASE, 1);
        assert_eq!(plan.claim, [0], "the planner claims it too");
    }

    #[test]
    fn a_held_lease_of_a_stale_relay_says_so() {
        let mut s = StatusSnapshot::default();
        s.leases.relays.insert("gone".into(), before(40));
        s.leases.leases.insert(0, held("gone", after(5)));
        let status = OutboxStatus::assemble(&s, 1, LEASE, NOW);
        assert!(matches!(
            status.buckets[0].lease,
            LeaseState::Held {
                owner_alive: false,
                ..
            }
        ));
        assert_eq!(relay(&status, "gone").owned, [0]);
    }

    #[test]
    fn pending_and_parked_rows_per_bucket() {
        let mut s = snapshot();
        s.pending.insert(0, rows(12, before(3)));
        s.pending.insert(3, rows(1, before(60)));
        s.parked.insert(0, rows(2, before(100)));
        let status = OutboxStatus::assemble(&s, 5, LEASE, NOW);
        let b0 = &status.buckets[0];
        assert_eq!((b0.pending, b0.parked), (12, 2));
        assert_eq!(b0.oldest_pending, Some(before(3)));
        assert_eq!(b0.oldest_pending_age, Some(secs(3)));
        assert_eq!(status.buckets[1].pending, 0);
        assert_eq!(status.buckets[1].oldest_pending_age, None);
        assert_eq!(status.pending(), 13);
        assert_eq!(status.parked(), 2);
        assert_eq!(status.oldest_pending_age(), Some(secs(60)));
        let unowned: Vec<i32> = status.unowned_with_pending().map(|b| b.bucket).collect();
        assert_eq!(unowned, [3], "bucket 3 is free and holds a row");
        assert!(status.out_of_range.is_empty());
        assert_eq!(status.out_of_range_rows(), 0);
    }

    #[test]
    fn rows_outside_the_bucket_count_are_listed_apart() {
        let mut s = StatusSnapshot::default();
        s.pending.insert(-1, rows(1, before(1)));
        s.pending.insert(1, rows(4, before(1)));
        s.pending.insert(4, rows(3, before(1)));
        s.pending.insert(7, BucketRows::default());
        s.parked.insert(4, rows(2, before(1)));
        s.parked.insert(9, rows(1, before(1)));
        let status = OutboxStatus::assemble(&s, 4, LEASE, NOW);
        assert_eq!(
            status.out_of_range,
            [
                OutOfRange {
                    bucket: -1,
                    pending: 1,
                    parked: 0
                },
                OutOfRange {
                    bucket: 4,
                    pending: 3,
                    parked: 2
                },
                OutOfRange {
                    bucket: 9,
                    pending: 0,
                    parked: 1
                },
            ]
        );
        assert_eq!(status.out_of_range_rows(), 7);
        assert_eq!(
            status.pending(),
            4,
            "only rows of 0..4 count as pending here"
        );
    }

    #[test]
    fn a_heartbeat_from_the_future_has_no_age() {
        let mut s = StatusSnapshot::default();
        s.leases.relays.insert("skewed".into(), after(3));
        let status = OutboxStatus::assemble(&s, 1, LEASE, NOW);
        assert_eq!(status.relays[0].age, Duration::ZERO);
        assert!(status.relays[0].alive);
    }
}
