//! Scenario 6: a rolling change of the relay count, 1 → 3 → 1, under a steady writer.
//! Expected: the buckets rebalance to the fair split within a few lease periods after
//! each change, and nothing is lost.
//!
//! A relay stopped with SIGTERM hands its leases back and deletes its heartbeat before it
//! exits, so the survivor takes its buckets at its next rebalance, not after expiry.

use std::time::Duration;

use outbox_tests::faults::{RelayProcess, Scenario, log_tails, run_within};

use crate::BIN;

const BUCKETS: u32 = 16;
/// The lease duration of every relay here (the harness default).
const LEASE: Duration = Duration::from_secs(3);
/// "A few lease periods".
const REBALANCE_BOUND: Duration = Duration::from_secs(5 * 3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_1_3_1_reaches_the_fair_share_and_loses_nothing() {
    run_within("scenario 6", Duration::from_secs(90), scenario()).await;
}

async fn wait_fair(s: &Scenario, ids: &[&str], relays: &[&RelayProcess], step: &str) {
    let want = s.fair_split(ids);
    match s.wait_for_split(&want, REBALANCE_BOUND).await {
        Ok(took) => eprintln!(
            "{step}: fair split {want:?} after {took:?} ({:.1} lease periods)",
            took.as_secs_f64() / LEASE.as_secs_f64()
        ),
        Err(last) => panic!(
            "{step}: leases {last:?}, expected {want:?} within {REBALANCE_BOUND:?}\n{}",
            log_tails(relays, 15)
        ),
    }
}

async fn scenario() {
    let s = Scenario::new(BIN, "fault_rolling", &outbox_tests::brokers(), 4, BUCKETS).await;
    let spec = |id: &str| {
        let mut spec = s.relay(id);
        spec.lease = LEASE;
        spec
    };
    let (a, b, c) = ("roll_a", "roll_b", "roll_c");
    let relay_a = spec(a).spawn();
    let writer = s.writer(16, 2);
    wait_fair(&s, &[a], &[&relay_a], "1 relay").await;

    let mut relay_b = spec(b).spawn();
    let mut relay_c = spec(c).spawn();
    wait_fair(&s, &[a, b, c], &[&relay_a, &relay_b, &relay_c], "1 -> 3").await;

    relay_b.terminate();
    relay_c.terminate();
    for relay in [&mut relay_b, &mut relay_c] {
        let status = relay.wait_exit(Duration::from_secs(10));
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(0),
            "SIGTERM is a clean stop\n{}",
            relay.log_tail(20)
        );
    }
    // Checked right after the exits, while the leases they last renewed (for 3 s, every
    // second) would still be live had they not been handed back.
    let held = s.env.leases_by_owner().await;
    assert!(
        !held.contains_key(b) && !held.contains_key(c),
        "stopped relays released their leases: {held:?}"
    );
    wait_fair(&s, &[a], &[&relay_a], "3 -> 1").await;

    let report = s.drain(writer, &[&relay_a]).await;
    let verdict = s.check_topic(&report, "rolling 1 -> 3 -> 1").await;
    // No fault here explains a duplicate: a relay hands a bucket over only between
    // batches (its acquisition, which releases surplus, never overlaps a publish), and a
    // relay stopped with SIGTERM finishes and deletes its in-flight batch first.
    assert_eq!(verdict.duplicates, 0, "{}", verdict.summary());
    relay_a.terminate();
    s.env.drop_tables().await;
}
