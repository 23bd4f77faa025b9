//! Scenario 6: a rolling change of the relay count, 1 → 3 → 1, under a steady writer.
//! Expected: the buckets rebalance to the fair split within a few lease periods after
//! each change, and nothing is lost.
//!
//! A relay stopped with SIGTERM hands its leases back and deletes its heartbeat before it
//! exits, so the survivor takes its buckets at its next rebalance, not after expiry.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use outbox_tests::faults::{FaultEnv, RelayProcess, RelaySpec, Writer, checker};

const BIN: &str = env!("CARGO_BIN_EXE_outbox-relay");
const BUCKETS: u32 = 16;
/// The lease duration of every relay here (the harness default).
const LEASE: Duration = Duration::from_secs(3);
/// "A few lease periods".
const REBALANCE_BOUND: Duration = Duration::from_secs(5 * 3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_1_3_1_reaches_the_fair_share_and_loses_nothing() {
    tokio::time::timeout(Duration::from_secs(90), scenario())
        .await
        .expect("scenario 6 did not finish within 90 s");
}

fn expected(ids: &[&str]) -> BTreeMap<String, usize> {
    outbox_core::fair_shares(ids.iter().copied(), BUCKETS)
        .into_iter()
        .map(|(id, n)| (id.to_owned(), n as usize))
        .collect()
}

async fn wait_fair(env: &FaultEnv, ids: &[&str], relays: &[&RelayProcess], step: &str) {
    let want = expected(ids);
    let started = Instant::now();
    let deadline = started + REBALANCE_BOUND;
    let (reached, last) = loop {
        let now = env.leases_by_owner().await;
        if now == want || Instant::now() >= deadline {
            break (now == want, now);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let logs: Vec<String> = relays.iter().map(|r| r.log_tail(15)).collect();
    assert!(
        reached,
        "{step}: leases {last:?}, expected {want:?} within {REBALANCE_BOUND:?}\n{}",
        logs.join("\n")
    );
    eprintln!(
        "{step}: fair split {want:?} after {:?} ({:.1} lease periods)",
        started.elapsed(),
        started.elapsed().as_secs_f64() / LEASE.as_secs_f64()
    );
}

async fn scenario() {
    let env = FaultEnv::new("fault_rolling", &outbox_tests::brokers(), 4).await;
    let spec = |id: &str| {
        let mut s = RelaySpec::new(BIN, &env, id, BUCKETS);
        s.lease = LEASE;
        s
    };
    let (a, b, c) = ("roll_a", "roll_b", "roll_c");
    let relay_a = spec(a).spawn();
    let writer = Writer::start(&env, BUCKETS, 16, 2, Duration::from_millis(20));
    wait_fair(&env, &[a], &[&relay_a], "1 relay").await;

    let mut relay_b = spec(b).spawn();
    let mut relay_c = spec(c).spawn();
    wait_fair(&env, &[a, b, c], &[&relay_a, &relay_b, &relay_c], "1 -> 3").await;

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
    let held = env.leases_by_owner().await;
    assert!(
        !held.contains_key(b) && !held.contains_key(c),
        "stopped relays released their leases: {held:?}"
    );
    wait_fair(&env, &[a], &[&relay_a], "3 -> 1").await;

    let report = writer.stop().await;
    assert!(
        env.wait_drained(Duration::from_secs(30)).await,
        "backlog not drained: {} rows pending\n{}",
        env.pending().await,
        relay_a.log_tail(40)
    );
    let published = checker::read_topic(&env.brokers, &env.topic).await;
    let verdict = checker::check(&report, &[&published]);
    eprintln!("scenario 6: {}", verdict.summary());
    verdict.assert_sound("rolling 1 -> 3 -> 1");
    // No fault here explains a duplicate: a relay hands a bucket over only between
    // batches (its acquisition, which releases surplus, never overlaps a publish), and a
    // relay stopped with SIGTERM finishes and deletes its in-flight batch first.
    assert_eq!(verdict.duplicates, 0, "{}", verdict.summary());
    relay_a.terminate();
    env.drop_tables().await;
}
