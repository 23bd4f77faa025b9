//! Lease planning properties: a plan never takes a live lease of another relay, its sets
//! are disjoint and within `0..bucket_count`, rows at or beyond the bucket count never
//! count, and repeated rounds among a stable set of relays reach the fair share, with a
//! newcomer served within a few rounds.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use outbox_core::{LeasePlan, LeaseRow, LeaseSnapshot, Timestamp, fair_share, plan_acquisition};
use proptest::prelude::*;

const LEASE: Duration = Duration::from_secs(30);
const NOW: Timestamp = Timestamp::from_millis(1_765_000_000_000);
const RELAYS: [&str; 5] = ["a", "b", "c", "d", "e"];

fn offset(ms: i64) -> Timestamp {
    Timestamp::from_millis(NOW.as_millis() + ms)
}

/// A lease row around `NOW`: free, or held by one of five relays with an expiry up to one
/// lease either side of `NOW`, often right at the boundary (a millisecond before, at, or
/// after `NOW`), where an off-by-one in the expiry rule would show.
fn lease_row() -> impl Strategy<Value = LeaseRow> {
    let lease_ms = i64::try_from(LEASE.as_millis()).unwrap();
    let expiry = prop_oneof![
        (-1i64..=1).prop_map(offset),
        (-lease_ms..=lease_ms).prop_map(offset)
    ];
    prop_oneof![
        Just(LeaseRow::free()),
        (0..RELAYS.len(), expiry).prop_map(|(r, expires_at)| LeaseRow {
            owner: Some(RELAYS[r].to_owned()),
            expires_at,
        }),
    ]
}

/// Heartbeats: some live, some silent, some a day old.
fn heartbeats() -> impl Strategy<Value = BTreeMap<String, Timestamp>> {
    let lease_ms = i64::try_from(LEASE.as_millis()).unwrap();
    prop::collection::btree_map(
        (0..RELAYS.len()).prop_map(|r| RELAYS[r].to_owned()),
        prop_oneof![
            (-2 * lease_ms..=0).prop_map(offset),
            Just(offset(-90_000_000)),
        ],
        0..=RELAYS.len(),
    )
}

/// A snapshot whose rows reach beyond `0..bucket_count` on both sides.
fn snapshot() -> impl Strategy<Value = (LeaseSnapshot, u32)> {
    (1u32..40).prop_flat_map(|buckets| {
        let reach = i32::try_from(buckets).unwrap() + 4;
        (
            prop::collection::btree_map(-3..reach, lease_row(), 0..48),
            heartbeats(),
            Just(buckets),
        )
            .prop_map(|(leases, relays, buckets)| (LeaseSnapshot { leases, relays }, buckets))
    })
}

fn me() -> impl Strategy<Value = &'static str> {
    (0..RELAYS.len()).prop_map(|r| RELAYS[r])
}

fn in_range(bucket: i32, buckets: u32) -> bool {
    u32::try_from(bucket).is_ok_and(|b| b < buckets)
}

fn live_for_other(row: Option<&LeaseRow>, me: &str, now: Timestamp) -> bool {
    row.is_some_and(|r| r.owner.as_deref().is_some_and(|o| o != me) && r.expires_at > now)
}

/// Writes a plan without any guard: what the plan itself asks for.
fn apply_unguarded(snapshot: &mut LeaseSnapshot, me: &str, plan: &LeasePlan) {
    for b in &plan.create {
        snapshot.leases.insert(*b, LeaseRow::free());
    }
    for b in &plan.release {
        snapshot.leases.insert(*b, LeaseRow::free());
    }
    for b in plan.extend.iter().chain(&plan.claim) {
        snapshot.leases.insert(
            *b,
            LeaseRow {
                owner: Some(me.to_owned()),
                expires_at: plan.expires_at,
            },
        );
    }
}

proptest! {
    #[test]
    fn plan_sets_are_disjoint_ascending_and_in_range((snapshot, buckets) in snapshot(), me in me()) {
        let plan = plan_acquisition(&snapshot, me, NOW, LEASE, buckets);
        let mut seen = BTreeSet::new();
        for (name, set) in [("release", &plan.release), ("extend", &plan.extend), ("claim", &plan.claim)] {
            prop_assert!(set.windows(2).all(|w| w[0] < w[1]), "{name} not ascending: {plan:?}");
            for b in set {
                prop_assert!(in_range(*b, buckets), "{name} has {b} outside 0..{buckets}");
                prop_assert!(seen.insert(*b), "bucket {b} in two sets: {plan:?}");
            }
        }
        prop_assert!(plan.create.windows(2).all(|w| w[0] < w[1]));
        for b in &plan.create {
            prop_assert!(in_range(*b, buckets) && !snapshot.leases.contains_key(b));
        }
        prop_assert!(plan.extend.len() + plan.claim.len() <= usize::try_from(plan.share).unwrap());
        prop_assert!(plan.release.is_empty() || plan.claim.is_empty());
    }

    #[test]
    fn a_plan_never_takes_a_live_lease_of_another_relay((snapshot, buckets) in snapshot(), me in me()) {
        let plan = plan_acquisition(&snapshot, me, NOW, LEASE, buckets);
        for b in plan.claim.iter().chain(&plan.extend).chain(&plan.release) {
            prop_assert!(
                !live_for_other(snapshot.leases.get(b), me, NOW),
                "bucket {b} is live for {:?}: {plan:?}", snapshot.leases.get(b)
            );
        }
        // Held means own and unexpired: only those are extended or released.
        for b in plan.extend.iter().chain(&plan.release) {
            let row = &snapshot.leases[b];
            prop_assert!(row.owner.as_deref() == Some(me) && row.expires_at > NOW);
        }
        // Written as asked, without guards, the plan leaves every other live lease alone.
        let mut after = snapshot.clone();
        apply_unguarded(&mut after, me, &plan);
        for (b, row) in &snapshot.leases {
            if live_for_other(Some(row), me, NOW) {
                prop_assert_eq!(&after.leases[b], row);
            }
        }
    }

    #[test]
    fn rows_at_or_beyond_the_bucket_count_never_count((snapshot, buckets) in snapshot(), me in me()) {
        let plan = plan_acquisition(&snapshot, me, NOW, LEASE, buckets);
        let mut trimmed = snapshot.clone();
        trimmed.leases.retain(|b, _| in_range(*b, buckets));
        prop_assert_eq!(&plan, &plan_acquisition(&trimmed, me, NOW, LEASE, buckets));
        let mut after = snapshot.clone();
        after.apply(me, &plan);
        for (b, row) in &snapshot.leases {
            if !in_range(*b, buckets) {
                prop_assert_eq!(&after.leases[b], row);
            }
        }
    }

    #[test]
    fn the_share_counts_live_relays_and_the_caller((snapshot, buckets) in snapshot(), me in me()) {
        let plan = plan_acquisition(&snapshot, me, NOW, LEASE, buckets);
        let live_after = NOW.saturating_sub(LEASE);
        let live = snapshot.relays.iter().filter(|(_, t)| **t > live_after).map(|(r, _)| r.as_str());
        prop_assert_eq!(plan.share, fair_share(live, me, buckets));
        // Without anything in the way, the caller gets its whole share.
        let free = LeaseSnapshot { leases: BTreeMap::new(), relays: snapshot.relays.clone() };
        let plan = plan_acquisition(&free, me, NOW, LEASE, buckets);
        prop_assert_eq!(plan.claim.len(), usize::try_from(plan.share).unwrap());
    }

    #[test]
    fn rounds_among_stable_relays_reach_the_fair_share_and_serve_a_newcomer(
        relays in 1usize..=4,
        buckets in 1u32..48,
        orders in prop::collection::vec(Just(()).prop_perturb(|_, mut rng| {
            let mut order: Vec<usize> = (0..RELAYS.len()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.random_range(0..=i));
            }
            order
        }), 6),
        stale in prop::collection::btree_map(0i32..8, lease_row(), 0..4),
    ) {
        let mut tables = LeaseSnapshot::default();
        // Stale rows beyond the bucket count, some live and held by relays in the set.
        for (b, row) in stale {
            tables.leases.insert(i32::try_from(buckets).unwrap() + b, row);
        }
        let mut now = NOW;
        let mut held: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        let mut round = |tables: &mut LeaseSnapshot, members: usize, order: &[usize], held: &mut BTreeMap<&'static str, Vec<i32>>| {
            for &r in order.iter().filter(|r| **r < members) {
                now = now.saturating_add(Duration::from_millis(100));
                let me = RELAYS[r];
                tables.heartbeat(me, now);
                let plan = plan_acquisition(tables, me, now, LEASE, buckets);
                held.insert(me, tables.apply(me, &plan));
                // One holder per bucket at every step, as the relays see it.
                let mut seen = BTreeSet::new();
                for (relay, set) in held.iter() {
                    for b in set {
                        assert!(seen.insert(*b), "bucket {b} held twice ({relay}): {held:?}");
                    }
                }
            }
        };
        let at_fair_share = |held: &BTreeMap<&str, Vec<i32>>, members: usize| {
            let ids = &RELAYS[..members];
            ids.iter().all(|id| {
                let share = fair_share(ids.iter().copied(), id, buckets);
                held.get(id).map_or(0, Vec::len) == usize::try_from(share).unwrap()
            })
        };
        for order in &orders[..3] {
            round(&mut tables, relays, order, &mut held);
        }
        prop_assert!(at_fair_share(&held, relays), "{relays} relays after 3 rounds: {held:?}");
        // A newcomer joins; within three rounds every relay, it included, is at its share.
        for order in &orders[3..] {
            round(&mut tables, relays + 1, order, &mut held);
        }
        prop_assert!(at_fair_share(&held, relays + 1), "after a newcomer joined: {held:?}");
    }
}
