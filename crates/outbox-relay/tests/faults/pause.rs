//! Scenario 2: three relays, one frozen (SIGSTOP) past its lease, then continued.
//! Expected: the other two take its buckets over; nothing is lost; duplicates are
//! allowed; and the frozen relay, once continued, notices that its leases are gone
//! before it publishes anything but the one batch it had in flight.
//!
//! What the last point is checked on: the continued relay's own account, its
//! `outbox_lease_expirations_total` counter and its log. The log (debug level for
//! `outbox_core`) has one `published bucket=N` line per publish call and an
//! `owned buckets changed owned=[..]` line for every change of its lease set; everything
//! after the moment it was frozen was written after it was continued (a stopped process
//! writes nothing). After continuing it must log `leases expired or were lost`, and
//! every publish but one (the batch in flight when it froze, which completes but deletes
//! nothing) must be for a bucket in the lease set it most recently announced.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use outbox_tests::faults::{
    RelayProcess, Scenario, await_acknowledged, eventually, log_tails, run_within,
};

use crate::BIN;

const BUCKETS: u32 = 16;
const BOUND: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_frozen_past_its_lease_is_taken_over_and_stops_publishing_lost_buckets() {
    run_within("scenario 2", Duration::from_secs(90), scenario()).await;
}

async fn wait_leases(s: &Scenario, want: &BTreeMap<String, usize>, relays: &[&RelayProcess]) {
    if let Err(now) = s.wait_for_split(want, BOUND).await {
        panic!(
            "leases {now:?}, expected {want:?} within {BOUND:?}\n{}",
            log_tails(relays, 15)
        );
    }
}

/// The number after `name=` in `line`.
fn field(line: &str, name: &str) -> Option<i32> {
    let rest = line.split(&format!(" {name}=")).nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Checks the continued relay's log (see the module docs); returns how many publishes
/// it made on buckets it had (re-)acquired after continuing.
fn check_log_after_resume(log: &str) -> usize {
    let mut noticed = false;
    // `None` until the relay announces a lease set after continuing: the buckets it held
    // before freezing, which it no longer owns.
    let mut owned: Option<BTreeSet<i32>> = None;
    let mut stale = Vec::new();
    let mut on_owned = 0;
    for line in log.lines() {
        if line.contains("leases expired or were lost") {
            noticed = true;
        } else if let Some(list) = line.split("owned buckets changed owned=[").nth(1) {
            owned = Some(
                list.trim_end_matches(']')
                    .split(", ")
                    .filter_map(|b| b.trim().parse().ok())
                    .collect(),
            );
        } else if line.contains("outbox_core::driver: published ") {
            let bucket = field(line, "bucket").expect("bucket in a published line");
            if owned.as_ref().is_some_and(|o| o.contains(&bucket)) {
                on_owned += 1;
            } else {
                stale.push(line);
            }
        }
    }
    assert!(noticed, "no lease loss logged after continuing:\n{log}");
    // The batch in flight when it froze completes after continuing (its rows are not
    // deleted: the relay sees the lease lost). No other publish may be on a bucket it
    // does not own.
    assert!(
        stale.len() <= 1,
        "{} publishes on buckets it did not own after continuing; only the batch in flight may complete:\n{}\n\n{log}",
        stale.len(),
        stale.join("\n")
    );
    on_owned
}

async fn scenario() {
    let s = Scenario::new(BIN, "fault_pause", &outbox_tests::brokers(), 4, BUCKETS).await;
    let (a, b, c) = ("pause_a", "pause_b", "pause_c");
    let relay_a = s.relay(a).spawn();
    let relay_b = s.relay(b).spawn();
    let relay_c = s.relay(c).spawn();
    let all = [&relay_a, &relay_b, &relay_c];
    let writer = s.writer(16, 3);
    wait_leases(&s, &s.fair_split(&[a, b, c]), &all).await;
    // b publishes before it is frozen.
    await_acknowledged(&[&relay_b], 0.0, BOUND).await;
    let expirations_before = relay_b
        .metric_sum("outbox_lease_expirations_total")
        .unwrap_or(0.0);

    relay_b.pause();
    // Give the kernel a moment to stop it; from here on its log does not grow.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let frozen_at = relay_b.log_len();
    // Takeover: once its heartbeat and leases expire, the other two split its buckets.
    wait_leases(&s, &s.fair_split(&[a, c]), &all).await;
    assert_eq!(
        relay_b.log_len(),
        frozen_at,
        "a stopped process wrote to its log"
    );

    relay_b.resume();
    assert!(
        eventually(BOUND, || async {
            relay_b
                .metric_sum("outbox_lease_expirations_total")
                .is_some_and(|n| n > expirations_before)
        })
        .await,
        "{b} never counted the lease loss\n{}",
        relay_b.log_tail(30)
    );
    // It rejoins: the fair split of three again.
    wait_leases(&s, &s.fair_split(&[a, b, c]), &all).await;

    let report = s.drain(writer, &all).await;
    let after_resume = relay_b
        .log()
        .get(frozen_at..)
        .unwrap_or_default()
        .to_owned();
    let published_after_notice = check_log_after_resume(&after_resume);
    eprintln!(
        "scenario 2: {b} published {published_after_notice} batches on re-acquired buckets after continuing"
    );
    s.check_topic(&report, "relay paused past its lease").await;
    s.env.drop_tables().await;
}

#[test]
fn the_log_check_rejects_publishes_on_lost_buckets() {
    let ok = "x leases expired or were lost\n\
              x outbox_core::driver: published bucket=3 attempted=1\n\
              x owned buckets changed owned=[]\n\
              x owned buckets changed owned=[4, 5]\n\
              x outbox_core::driver: published bucket=5 attempted=1\n";
    assert_eq!(check_log_after_resume(ok), 1);
    let lost = "x outbox_core::driver: published bucket=3 attempted=1\n\
                x leases expired or were lost\n\
                x owned buckets changed owned=[4]\n\
                x outbox_core::driver: published bucket=3 attempted=1\n";
    assert!(std::panic::catch_unwind(|| check_log_after_resume(lost)).is_err());
    let unnoticed = "x outbox_core::driver: published bucket=3 attempted=1\n";
    assert!(std::panic::catch_unwind(|| check_log_after_resume(unnoticed)).is_err());
}
