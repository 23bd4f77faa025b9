//! Scenario 8: every lease call is slower than the renew interval (a slow database for
//! those statements), while the relay's fetches and deletes run at full speed.
//!
//! The relay reaches PostgreSQL through the tests' [`StatementDelayProxy`], which delays
//! each execution of the heartbeat upsert (`INSERT INTO "<relays table>"`) by 2.5 s.
//! Both lease calls start with exactly that statement, once: an acquisition (heartbeat,
//! read heartbeats and leases, then release / extend / claim) and a renewal (heartbeat,
//! extend). So each lease call takes at least 2.5 s, longer than the 2 s renew interval
//! and well inside the 6 s lease, and it does so once per call. Matching the leases table
//! instead would delay an acquisition two to four times (it reads and updates that table
//! in several statements), beyond what the lease can cover; fetches and deletes touch
//! only the messages table and are never delayed.
//!
//! Expected: no livelock. Once the relay first publishes, acknowledgements keep coming
//! (no gap of a renew interval without one) while a writer commits steadily, the backlog
//! drains with the latency still in place, nothing is lost, and the relay never loses a
//! lease (`leases expired or were lost` never logged, `outbox_lease_expirations_total`
//! stays 0).

use std::time::{Duration, Instant};

use outbox_tests::faults::{Scenario, acknowledged, eventually, run_within};
use outbox_tests::statement_delay::StatementDelayProxy;

use crate::BIN;

const BUCKETS: u32 = 8;
const LEASE: Duration = Duration::from_secs(6);
const RENEW: Duration = Duration::from_secs(2);
/// Above the renew interval, below lease - renew interval.
const LATENCY: Duration = Duration::from_millis(2500);
/// How long the writer commits once the relay has published.
const WRITE_FOR: Duration = Duration::from_secs(12);
/// The longest the acknowledged count may stand still while rows are pending.
const MAX_STALL: Duration = RENEW;
const EXPIRATIONS: &str = "outbox_lease_expirations_total";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_calls_slower_than_the_renew_interval_do_not_stop_publishing() {
    run_within("scenario 8", Duration::from_secs(90), scenario()).await;
}

/// The longest stretch between two samples at which the count grew, and where it
/// started (seconds after the first sample).
fn longest_stall(samples: &[(Instant, f64)]) -> (Duration, f64) {
    let Some(&(start, first)) = samples.first() else {
        return (Duration::ZERO, 0.0);
    };
    let (mut last_growth, mut last_value) = (start, first);
    let mut worst = (Duration::ZERO, 0.0);
    for &(at, value) in samples {
        if value > last_value {
            last_growth = at;
            last_value = value;
        }
        let stall = at.duration_since(last_growth);
        if stall > worst.0 {
            worst = (stall, last_growth.duration_since(start).as_secs_f64());
        }
    }
    worst
}

async fn scenario() {
    let s = Scenario::new(BIN, "fault_slow", &outbox_tests::brokers(), 4, BUCKETS).await;
    let env = &s.env;
    let pattern = format!("INSERT INTO \"{}\"", env.tables.relays());
    let proxy = StatementDelayProxy::start(
        &outbox_tests::host_port(&env.database_url),
        &pattern,
        LATENCY,
    )
    .await
    .unwrap_or_else(|e| panic!("starting the statement-delay proxy: {e}"));
    let mut spec = s.relay("slowlease_r1");
    spec.database_url = env.database_url_via(proxy.addr(), &spec.relay_id);
    spec.lease = LEASE;
    spec.renew = RENEW;
    let mut relay = spec.spawn();
    let writer = s.writer(16, 2);
    // The first acquisition alone takes the latency; publishing must follow it.
    let first = Duration::from_secs(20);
    if !eventually(first, || async { acknowledged(&[&relay]) > 0.0 }).await {
        panic!(
            "with every lease call taking {LATENCY:?} (renew interval {RENEW:?}, lease \
             {LEASE:?}), the relay published nothing within {first:?}: {} lease calls were \
             delayed, back to back, and no fetch got between them (a lease-call livelock)\n{}",
            proxy.delayed(),
            relay.log_tail(20)
        );
    }

    let delayed_before = proxy.delayed();
    let mut samples = Vec::new();
    let started = Instant::now();
    while started.elapsed() < WRITE_FOR {
        samples.push((Instant::now(), acknowledged(&[&relay])));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (stall, at) = longest_stall(&samples);
    let delayed = proxy.delayed() - delayed_before;
    // A lease call starts at least once per renew interval plus its own latency.
    let calls_expected = (WRITE_FOR.as_secs_f64() / (RENEW + LATENCY).as_secs_f64()).floor();
    eprintln!(
        "scenario 8: {delayed} lease calls delayed by {LATENCY:?}; acknowledged {} → {}; \
         longest stall {stall:?} at {at:.1} s",
        samples.first().map_or(0.0, |s| s.1),
        samples.last().map_or(0.0, |s| s.1),
    );
    // The fault really hit: the lease calls were slow all along.
    assert!(
        delayed as f64 >= calls_expected,
        "only {delayed} statement executions were delayed in {WRITE_FOR:?}, expected at least \
         {calls_expected} (pattern {pattern:?}): the proxy did not slow the lease calls\n{}",
        relay.log_tail(30)
    );
    assert!(
        stall < MAX_STALL,
        "with every lease call taking {LATENCY:?} (renew interval {RENEW:?}, lease {LEASE:?}), \
         the relay acknowledged nothing for {stall:?} from {at:.1} s on while the writer kept \
         committing: slow lease calls must not hold up publishing while the lease is valid\n{}",
        relay.log_tail(40)
    );

    let report = s.drain(writer, &[&relay]).await;
    s.check_topic(&report, "slow lease calls").await;
    let log = relay.log();
    assert!(
        !log.contains("leases expired or were lost"),
        "the relay lost its leases with lease calls of {LATENCY:?}\n{}",
        relay.log_tail(40)
    );
    let expirations = relay.metric_sum(EXPIRATIONS).unwrap_or(0.0);
    assert!(
        expirations == 0.0,
        "{EXPIRATIONS} is {expirations}, expected 0"
    );
    assert!(relay.exited().is_none(), "{}", relay.log_tail(30));
    relay.terminate();
    relay.wait_exit(Duration::from_secs(10));
    env.drop_tables().await;
}

#[test]
fn the_longest_stall_is_measured_between_growths() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let samples = [
        (at(0), 1.0),
        (at(500), 2.0),
        (at(1000), 2.0),
        (at(2500), 2.0),
        (at(3000), 5.0),
        (at(3500), 6.0),
    ];
    let (stall, from) = longest_stall(&samples);
    assert_eq!(stall, Duration::from_millis(2000));
    assert!((from - 0.5).abs() < 1e-9);
}
