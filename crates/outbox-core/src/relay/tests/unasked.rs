//! Outcomes the machine did not ask for are caller bugs: a debug assertion in debug
//! builds, ignored in release builds.

use super::*;

/// Hands `outcome` to the machine and tells whether it panicked.
fn panics(h: &mut TestRelay, outcome: Outcome) -> bool {
    let now = h.now;
    let machine = &mut h.m;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        machine.handle(now, outcome)
    }))
    .is_err()
}

#[test]
fn unexpected_results_trip_a_debug_assertion_and_are_otherwise_ignored() {
    let mut h = TestRelay::renewing();
    let unasked = [
        Outcome::Published {
            bucket: 0,
            outcome: PublishOutcome::all(3),
        },
        Outcome::Deleted {
            bucket: 0,
            result: Ok(()),
        },
        Outcome::Fetched {
            bucket: 0,
            result: Ok(rows(0, 1..=1)),
        },
        Outcome::Renewed(Ok(RenewOutcome::default())),
        Outcome::Released(Ok(())),
        Outcome::PublishCancelled { bucket: 0 },
        Outcome::Probed(Ok(vec![])),
    ];
    for outcome in unasked {
        assert!(!h.m.awaits(&outcome), "{outcome:?} was not asked for");
        assert_eq!(
            panics(&mut h, outcome),
            cfg!(debug_assertions),
            "debug builds assert, release builds ignore"
        );
    }
    assert_eq!(
        h.cmd(),
        Some(Command::AcquireLeases {
            now: h.now.wall,
            busy: vec![]
        })
    );
    assert!(
        h.m.awaits(&Outcome::Acquired(Ok(vec![].into()))),
        "and it awaits what it asked for"
    );
}

#[test]
fn an_outcome_for_another_lane_than_the_one_in_flight_is_not_awaited() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1, 2], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    let wrong_lane = Outcome::Fetched {
        bucket: 1,
        result: Ok(rows(1, 1..=1)),
    };
    assert!(!h.m.awaits(&wrong_lane));
    assert!(h.m.awaits(&Outcome::Fetched {
        bucket: 0,
        result: Ok(vec![])
    }));
    assert_eq!(panics(&mut h, wrong_lane), cfg!(debug_assertions));
    h.fetched(0, rows(0, 1..=1));
    assert_eq!(h.briefs(), ["publish 0 [1]"]);
    for outcome in [
        Outcome::Published {
            bucket: 1,
            outcome: PublishOutcome::all(1),
        },
        Outcome::PublishCancelled { bucket: 2 },
        Outcome::Deleted {
            bucket: 0,
            result: Ok(()),
        },
        Outcome::Fetched {
            bucket: 0,
            result: Ok(vec![]),
        },
    ] {
        assert!(!h.m.awaits(&outcome), "{outcome:?} was not asked for");
        assert_eq!(panics(&mut h, outcome), cfg!(debug_assertions));
    }
    // The lane is untouched by the stray outcomes: its publish is still awaited.
    h.acked(0, 1);
    assert_eq!(h.briefs(), ["delete 0 [1]"]);
}
