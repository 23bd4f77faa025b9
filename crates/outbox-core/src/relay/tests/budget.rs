//! Stores that cannot renew leases: a publish starts only when the lease covers the
//! publish budget, and a publish that overruns the budget stops the relay.

use std::time::Duration;

use super::*;
use crate::error::Misconfiguration;

#[test]
fn without_renewal_a_publish_budget_is_required() {
    let err = RelayMachine::new(options().build().unwrap(), NO_RENEWAL, at(0)).unwrap_err();
    assert_eq!(err, Misconfiguration::MissingPublishBudget);
}

#[test]
fn without_renewal_the_budget_is_reserved_by_acquiring_first() {
    let opts = options()
        .poll_interval(Duration::from_secs(60))
        .max_publish_duration(Duration::from_secs(15))
        .build()
        .unwrap();
    let mut h = TestRelay::new(opts, NO_RENEWAL);
    h.start(&[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.at(6_000); // 24 s left, 25 s needed
    h.fetched(0, rows(0, 1..=1));
    // The reservation may ask for the acquisition on the next poll (its deadline is now).
    let mut briefs = h.briefs();
    briefs.extend(h.briefs());
    assert_eq!(briefs, ["acquire"], "extend the lease before publishing");
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0].into())));
    let mut briefs = h.briefs();
    if briefs == ["fetch 0 from head limit 2"] {
        // Reading the rows again is allowed too.
        h.fetched(0, rows(0, 1..=1));
        briefs = h.briefs();
    }
    assert_eq!(
        briefs,
        ["publish 0 [1]"],
        "no renewal calls against a store without the capability"
    );
}

#[test]
fn without_renewal_a_lease_too_short_keeps_the_rows() {
    let opts = options()
        .lease_duration(Duration::from_secs(30))
        .max_publish_duration(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut h = TestRelay::new(opts, NO_RENEWAL);
    // The acquisition took a second: 29 s left, 30 s needed.
    h.join_at(1_000, &[0], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=1));
    let mut briefs = h.briefs();
    briefs.extend(h.briefs());
    assert_eq!(briefs, ["acquire"]);
    h.at(2_000);
    h.m.handle(h.now, Outcome::Acquired(Ok(vec![0].into())));
    let briefs = h.briefs();
    assert!(
        !briefs.iter().any(|b| b.starts_with("publish")),
        "rows stay pending: {briefs:?}"
    );
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RelayEvent::LeaseTooShortForPublish { .. }))
    );
    assert_eq!(
        lane_backoffs(&events, 0),
        [(1_000, 1)],
        "the lane backs off"
    );
}

#[test]
fn without_renewal_exceeding_the_budget_is_fatal() {
    let opts = options()
        .max_publish_duration(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut h = TestRelay::new(opts, NO_RENEWAL);
    h.start(&[0, 1], &[0, 1]);
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 2", "fetch 1 from head limit 2"]
    );
    h.fetched(0, rows(0, 1..=1));
    h.fetched(1, rows(1, 2..=2));
    assert_eq!(h.briefs(), ["publish 0 [1]", "publish 1 [2]"]);
    h.at(5_001);
    h.acked(0, 1);
    h.acked(1, 1);
    assert_eq!(
        h.cmd(),
        None,
        "nothing is deleted after the budget was broken"
    );
    assert!(matches!(
        h.m.fatal_error(),
        Some(Misconfiguration::PublishBudgetExceeded { .. })
    ));
}
