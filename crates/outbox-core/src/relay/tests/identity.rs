//! Relay identity: the heartbeat found under the relay's id, and the buckets it waits
//! for.

use super::*;
use crate::error::Misconfiguration;
use crate::store::{Acquired, LeaseWait};

fn found(held: &[i32], heartbeat_before: Option<i64>) -> Outcome {
    Outcome::Acquired(Ok(Acquired {
        held: held.to_vec(),
        heartbeat_before: heartbeat_before.map(Timestamp::from_millis),
        ..Acquired::default()
    }))
}

/// Answers the acquisition the machine hands out now with `outcome`.
fn acquire(h: &mut TestRelay, outcome: Outcome) {
    let cmds = h.cmds();
    assert!(
        cmds.iter()
            .any(|c| matches!(c, Command::AcquireLeases { .. })),
        "{:?}",
        cmds.iter().map(brief).collect::<Vec<_>>()
    );
    h.m.handle(h.now, outcome);
}

fn is_fatal_duplicate(events: &[RelayEvent]) -> bool {
    events.iter().any(|e| {
        matches!(e, RelayEvent::Fatal(Misconfiguration::DuplicateRelayId { relay_id, found_ms: 12_345 }) if relay_id == "r1")
    })
}

#[test]
fn a_fresh_foreign_heartbeat_at_start_is_taken_over_with_a_warning() {
    let mut h = TestRelay::quiet();
    h.at(20_000);
    // The crashed predecessor wrote at 15 s; its leases come back at once.
    acquire(&mut h, found(&[0, 1], Some(15_000)));
    let events = h.events();
    assert!(
        events.iter().any(|e| matches!(
            e,
            RelayEvent::RelayIdRecentlyUsed { relay_id, last_seen }
                if relay_id == "r1" && *last_seen == Timestamp::from_millis(15_000)
        )),
        "{events:?}"
    );
    assert!(!h.m.is_finished());
    assert_eq!(h.m.owned().collect::<Vec<_>>(), [0, 1]);
    // From now on the row holds this relay's own heartbeat (written at 20 s).
    h.at(30_000);
    acquire(&mut h, found(&[0, 1], Some(20_000)));
    assert!(!h.m.is_finished());
    assert!(
        !h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::RelayIdRecentlyUsed { .. }))
    );
}

#[test]
fn an_old_foreign_heartbeat_at_start_says_nothing() {
    let mut h = TestRelay::quiet();
    h.at(100_000);
    acquire(&mut h, found(&[0], Some(1_000)));
    assert!(
        !h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::RelayIdRecentlyUsed { .. }))
    );
    assert!(!h.m.is_finished());
}

#[test]
fn a_foreign_heartbeat_after_joining_stops_the_relay() {
    let mut h = TestRelay::quiet();
    acquire(&mut h, found(&[0], None));
    h.events();
    h.at(10_000);
    acquire(&mut h, found(&[0], Some(12_345)));
    assert!(is_fatal_duplicate(&h.events()));
    assert!(h.m.is_finished());
    assert!(matches!(
        h.m.fatal_error(),
        Some(Misconfiguration::DuplicateRelayId { .. })
    ));
}

#[test]
fn a_renewal_that_failed_after_writing_is_still_its_own() {
    let mut h = TestRelay::quiet();
    // Answered at 0.5 s: the renewal is due at 10 s, the next acquisition at 10.5 s.
    h.join_at(500, &[0], &[]);
    h.events();
    h.at(10_000);
    let cmds = h.briefs();
    assert!(cmds.contains(&"renew [0]".to_string()), "{cmds:?}");
    // The renewal wrote its heartbeat, then the connection broke.
    h.m.handle(
        h.now,
        Outcome::Renewed(Err(StoreError::unavailable("reset after commit"))),
    );
    h.at(10_500);
    acquire(&mut h, found(&[0], Some(10_000)));
    assert!(!h.m.is_finished(), "{:?}", h.events());
}

#[test]
fn an_acquisition_that_failed_may_still_have_written() {
    let mut h = TestRelay::quiet();
    acquire(&mut h, found(&[0], None));
    h.at(10_000);
    acquire(
        &mut h,
        Outcome::Acquired(Err(StoreError::unavailable("reset after commit"))),
    );
    h.at(12_000);
    // The failed call's heartbeat (10 s) is what the row holds.
    acquire(&mut h, found(&[0], Some(10_000)));
    assert!(!h.m.is_finished(), "{:?}", h.events());
}

#[test]
fn waiting_for_leases_is_reported_once_per_change() {
    let wait = |bucket, holder: &str| LeaseWait {
        bucket,
        holder: holder.into(),
        until: Timestamp::from_millis(30_000),
        holder_live: false,
    };
    let waiting = |h: &mut TestRelay| -> Vec<Vec<i32>> {
        h.events()
            .into_iter()
            .filter_map(|e| match e {
                RelayEvent::WaitingForLeases { waiting } => {
                    Some(waiting.iter().map(|w| w.bucket).collect())
                }
                _ => None,
            })
            .collect()
    };
    let answer = |waits: Vec<LeaseWait>| {
        Outcome::Acquired(Ok(Acquired {
            waiting: waits,
            ..Acquired::default()
        }))
    };
    let mut h = TestRelay::quiet();
    acquire(&mut h, answer(vec![wait(0, "old"), wait(1, "old")]));
    assert_eq!(waiting(&mut h), [vec![0, 1]]);
    h.at(10_000);
    acquire(&mut h, answer(vec![wait(0, "old"), wait(1, "old")]));
    assert!(waiting(&mut h).is_empty(), "unchanged: not reported again");
    h.at(20_000);
    acquire(&mut h, answer(vec![wait(1, "old")]));
    assert_eq!(waiting(&mut h), [vec![1]]);
    h.at(30_000);
    acquire(&mut h, answer(vec![]));
    assert_eq!(waiting(&mut h), [Vec::<i32>::new()], "the wait is over");
}

#[test]
fn a_late_write_of_the_crashed_predecessor_is_no_duplicate() {
    let mut h = TestRelay::quiet();
    h.at(20_000);
    acquire(&mut h, found(&[0], Some(15_000)));
    h.events();
    // The dead process's last heartbeat (stamped 16 s) reached the database late.
    h.at(30_000);
    acquire(&mut h, found(&[0], Some(16_000)));
    assert!(!h.m.is_finished(), "{:?}", h.events());
    // A write stamped after this relay joined is another live process.
    h.at(40_000);
    acquire(&mut h, found(&[0], Some(35_000)));
    assert!(h.m.is_finished());
}
