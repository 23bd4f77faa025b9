//! Scenario 10: the whole database is far away. Every round trip between the relay and
//! PostgreSQL takes half a second (the tests' protocol-blind [`SlowLink`] holds each
//! client → server request for 0.5 s), with leases of 6 s renewed every 2 s and 400 rows
//! already pending when the relay starts.
//!
//! This is the operator's report the lease work started from: with an acquisition of
//! about fifteen round trips, every acquisition outlasted the lease it acquired, so the
//! relay gained and lost its buckets in a loop and published nothing. Now an acquisition
//! is at most two requests, a renewal one, and renewals start against the deadline, so
//! the backlog must drain with the latency in place.
//!
//! Expected: all 400 rows published within 45 s of the relay's start, every one read back
//! from the topic in per-key order, and no lease lost on the way (`leases expired or were
//! lost` never logged, `outbox_lease_expirations_total` stays 0).

use std::time::{Duration, Instant};

use outbox_tests::faults::{Scenario, run_within};
use outbox_tests::slow_link::SlowLink;

use crate::BIN;

const BUCKETS: u32 = 8;
const LEASE: Duration = Duration::from_secs(6);
const RENEW: Duration = Duration::from_secs(2);
/// Added to every round trip to the database.
const LATENCY: Duration = Duration::from_millis(500);
/// Rows pending before the relay starts.
const BACKLOG: usize = 400;
/// The target of the issue: the backlog drains within this, counted from the spawn.
const DRAIN_WITHIN: Duration = Duration::from_secs(45);
const EXPIRATIONS: &str = "outbox_lease_expirations_total";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_half_a_second_away_still_drains_the_backlog_without_losing_a_lease() {
    run_within("scenario 10", Duration::from_secs(120), scenario()).await;
}

async fn scenario() {
    let s = Scenario::new(BIN, "fault_slowdb", &outbox_tests::brokers(), 4, BUCKETS).await;
    let env = &s.env;
    // The writer talks to the database directly: only the relay is far away.
    let writer = s.writer(16, 8);
    let filled = Instant::now();
    while writer.committed_count() < BACKLOG {
        assert!(
            filled.elapsed() < Duration::from_secs(30),
            "the writer committed only {} rows in 30 s",
            writer.committed_count()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let report = writer.stop().await;
    let pending = env.pending().await;
    assert!(
        pending >= BACKLOG as i64,
        "{pending} rows pending before the relay started, expected at least {BACKLOG}"
    );

    let link = SlowLink::start(&outbox_tests::host_port(&env.database_url), LATENCY)
        .await
        .unwrap_or_else(|e| panic!("starting the slow link: {e}"));
    let mut spec = s.relay("slowdb_r1");
    spec.database_url = env.database_url_via(link.addr(), &spec.relay_id);
    spec.lease = LEASE;
    spec.renew = RENEW;
    let started = Instant::now();
    let mut relay = spec.spawn();
    let drained = env.wait_drained(DRAIN_WITHIN).await;
    let took = started.elapsed();
    eprintln!(
        "scenario 10: {pending} rows pending, {LATENCY:?} per round trip: drained {drained} \
         after {:.1} s, {} round trips through the link",
        took.as_secs_f64(),
        link.round_trips()
    );
    assert!(
        drained,
        "with {LATENCY:?} per database round trip (lease {LEASE:?}, renewal every {RENEW:?}), \
         {} of {pending} rows were still pending after {DRAIN_WITHIN:?}\n{}",
        env.pending().await,
        relay.log_tail(40)
    );
    // The fault really hit: the relay's requests all went through the slow link.
    assert!(
        link.round_trips() > 0,
        "no round trip went through the slow link"
    );

    s.check_topic(&report, "a slow database").await;
    let log = relay.log();
    assert!(
        !log.contains("leases expired or were lost"),
        "the relay lost its leases with {LATENCY:?} per round trip\n{}",
        relay.log_tail(40)
    );
    let expirations = relay.metric_sum(EXPIRATIONS).unwrap_or(0.0);
    assert!(
        expirations == 0.0,
        "{EXPIRATIONS} is {expirations}, expected 0\n{}",
        relay.log_tail(40)
    );
    assert!(relay.exited().is_none(), "{}", relay.log_tail(30));
    relay.terminate();
    relay.wait_exit(Duration::from_secs(10));
    env.drop_tables().await;
}
