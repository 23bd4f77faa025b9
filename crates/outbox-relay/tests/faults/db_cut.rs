//! Scenario 4: the relay's database sessions are terminated repeatedly mid-stream
//! (`pg_terminate_backend` on its `application_name`). Expected: the relay reconnects and
//! drains the backlog, stays alive, loses nothing.

use std::time::Duration;

use outbox_tests::faults::{Scenario, acknowledged, await_acknowledged, run_within};

use crate::BIN;

const BUCKETS: u32 = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_database_sessions_lose_nothing_and_the_relay_recovers() {
    run_within("scenario 4", Duration::from_secs(90), scenario()).await;
}

async fn scenario() {
    let s = Scenario::new(BIN, "fault_dbcut", &outbox_tests::brokers(), 4, BUCKETS).await;
    let spec = s.relay("dbcut_r1");
    let mut relay = spec.spawn();
    let writer = s.writer(8, 3);
    // The relay publishes before the cuts.
    await_acknowledged(&[&relay], 20.0, Duration::from_secs(20)).await;
    let mut terminated = 0;
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        terminated += s.env.terminate_sessions(&spec.relay_id).await;
    }
    assert!(terminated > 0, "no relay session was terminated");
    // Recovery: it keeps publishing after the cuts.
    await_acknowledged(&[&relay], acknowledged(&[&relay]), Duration::from_secs(20)).await;
    let report = s.drain(writer, &[&relay]).await;
    assert!(
        relay.exited().is_none(),
        "the relay exited\n{}",
        relay.log_tail(40)
    );
    eprintln!("scenario 4: {terminated} sessions terminated");
    // Duplicates are possible here (a DELETE cut after the broker acknowledged), so they
    // are reported, not asserted.
    s.check_topic(&report, "database sessions terminated").await;
    relay.terminate();
    relay.wait_exit(Duration::from_secs(10));
    s.env.drop_tables().await;
}
