//! Stopping: in-flight work is awaited, acknowledged prefixes are deleted, the leases
//! are handed back last, and never after an abandoned publish.

use super::*;

#[test]
fn shutdown_waits_for_every_lane_and_deletes_only_acknowledged_prefixes() {
    let mut h = TestRelay::renewing();
    h.start(&[0, 1], &[0, 1]);
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 2", "fetch 1 from head limit 2"]
    );
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(h.briefs(), ["publish 0 [1, 2]", "fetch 0 after 2 limit 4"]);
    h.m.handle_shutdown();
    // Fetches answered after the request publish nothing.
    h.fetched(1, rows(1, 10..=11));
    h.fetched(0, rows(0, 3..=4));
    assert_eq!(h.cmd(), None);
    assert!(!h.m.is_finished());
    h.publish_failed(0, 1);
    assert_eq!(h.briefs(), ["delete 0 [1]"]);
    assert!(!h.m.is_finished());
    h.deleted(0);
    assert_eq!(h.cmd(), None, "no further work after shutdown");
    assert!(h.m.is_finished());
    let events = h.events();
    assert!(events.iter().any(|e| matches!(e, RelayEvent::Stopped)));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RelayEvent::Published { bucket: 1, .. })),
        "bucket 1 was never published"
    );
}

#[test]
fn shutdown_with_a_cancelled_publish_deletes_nothing() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=1));
    assert_eq!(h.briefs(), ["publish 0 [1]"]);
    h.m.handle_shutdown();
    h.m.handle(h.now, Outcome::PublishCancelled { bucket: 0 });
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RelayEvent::PublishCancelled { bucket: 0 }))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RelayEvent::PublishFailed { .. }))
    );
}

#[test]
fn a_graceful_stop_hands_the_leases_back_after_the_last_delete_of_every_lane() {
    let mut h = TestRelay::new(options().build().unwrap(), RELEASING);
    h.start(&[0, 1], &[0, 1]);
    assert_eq!(h.cmds().len(), 2);
    h.fetched(0, rows(0, 1..=1));
    h.fetched(1, rows(1, 2..=2));
    assert_eq!(h.briefs(), ["publish 0 [1]", "publish 1 [2]"]);
    h.m.handle_shutdown();
    assert_eq!(h.cmd(), None, "nothing while the publishes are in flight");
    h.acked(0, 1);
    assert_eq!(h.briefs(), ["delete 0 [1]"]);
    h.deleted(0);
    assert_eq!(h.cmd(), None, "bucket 1 is still publishing");
    h.acked(1, 1);
    assert_eq!(
        h.briefs(),
        ["delete 1 [2]"],
        "the delete comes before the release"
    );
    h.deleted(1);
    assert_eq!(h.cmd(), Some(Command::ReleaseLeases));
    assert!(!h.m.is_finished());
    assert_eq!(h.cmd(), None, "released once");
    h.m.handle(h.now, Outcome::Released(Ok(())));
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
    let events = h.events();
    let released = events
        .iter()
        .position(|e| matches!(e, RelayEvent::LeasesReleased { buckets: 2 }));
    let stopped = events.iter().position(|e| matches!(e, RelayEvent::Stopped));
    assert!(
        matches!((released, stopped), (Some(r), Some(s)) if r < s),
        "released, then stopped: {events:?}"
    );
}

#[test]
fn a_relay_owns_nothing_once_its_release_is_issued() {
    // Simulation seed 1592596111: the store may give the buckets to another relay as
    // soon as the release is issued, so the stopping relay must stop counting them as
    // its own then, not when the answer comes back.
    let mut h = TestRelay::new(options().build().unwrap(), RELEASING);
    h.start(&[0, 1], &[]);
    h.events();
    h.m.handle_shutdown();
    assert_eq!(h.cmd(), Some(Command::ReleaseLeases));
    assert!(!h.m.may_act_on(0, h.now) && !h.m.may_act_on(1, h.now));
    assert_eq!(h.m.owned().count(), 0);
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::OwnershipChanged { owned } if owned.is_empty())),
        "listeners (the notifier, readiness) learn it at once"
    );
    h.hint(0);
    assert_eq!(h.cmd(), None, "a hint gives a released relay no work");
    h.m.handle(h.now, Outcome::Released(Ok(())));
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, RelayEvent::LeasesReleased { buckets: 2 })),
        "the release still reports what it handed back"
    );
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
}

#[test]
fn a_release_waits_for_an_acquisition_in_flight_and_a_failed_release_still_stops() {
    let mut h = TestRelay::new(options().build().unwrap(), RELEASING);
    h.start(&[0], &[]);
    let now = h.idle_until_acquisition();
    h.m.handle_shutdown();
    assert_eq!(h.cmd(), None, "the acquisition is still in flight");
    h.m.handle(now, Outcome::Acquired(Ok(vec![0].into())));
    assert_eq!(h.cmd(), Some(Command::ReleaseLeases));
    h.m.handle(
        h.now,
        Outcome::Released(Err(StoreError::unavailable("down"))),
    );
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
    assert!(h.events().iter().any(|e| matches!(
        e,
        RelayEvent::StoreFailed {
            operation: "release_leases",
            bucket: None,
            ..
        }
    )));
}

#[test]
fn a_release_waits_for_a_renewal_in_flight() {
    let opts = options()
        .poll_interval(std::time::Duration::from_secs(60))
        .build()
        .unwrap();
    let mut h = TestRelay::new(opts, RELEASING);
    // Answered at 0.5 s: the renewal is due at 10 s, the acquisition at 10.5 s.
    h.join_at(500, &[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=1));
    assert_eq!(h.briefs(), ["publish 0 [1]"]);
    h.at(10_000);
    assert_eq!(h.briefs(), ["renew [0]"]);
    h.m.handle_shutdown();
    h.acked(0, 1);
    assert_eq!(h.briefs(), ["delete 0 [1]"]);
    h.deleted(0);
    assert_eq!(h.cmd(), None, "the renewal is still in flight");
    h.renewed(&[0], &[]);
    assert_eq!(h.cmd(), Some(Command::ReleaseLeases));
}

#[test]
fn an_abandoned_publish_keeps_the_leases_until_they_run_out() {
    let mut h = TestRelay::new(options().build().unwrap(), RELEASING);
    h.start(&[0, 1], &[0, 1]);
    assert_eq!(h.cmds().len(), 2);
    h.fetched(0, rows(0, 1..=1));
    h.fetched(1, rows(1, 2..=2));
    assert_eq!(h.briefs(), ["publish 0 [1]", "publish 1 [2]"]);
    h.m.handle_shutdown();
    h.m.handle(h.now, Outcome::PublishCancelled { bucket: 0 });
    h.acked(1, 1);
    assert_eq!(
        h.briefs(),
        ["delete 1 [2]"],
        "another lane's acknowledged rows are still deleted"
    );
    h.deleted(1);
    assert_eq!(
        h.cmd(),
        None,
        "bucket 0's request may still reach the broker: no release"
    );
    assert!(h.m.is_finished());
}

#[test]
fn without_the_capability_a_stop_releases_nothing() {
    let mut h = TestRelay::renewing();
    h.start(&[0], &[]);
    h.m.handle_shutdown();
    assert_eq!(h.cmd(), None);
    assert!(h.m.is_finished());
}
