//! Scenario 5: a writer configured with a larger bucket count than the relay. The relay
//! must stop with the fatal misconfiguration error and exit status 2, promptly.

use std::time::{Duration, Instant};

use outbox_tests::faults::{Scenario, run_within};

use crate::BIN;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_with_more_buckets_stops_the_relay_with_exit_2() {
    run_within("scenario 5", Duration::from_secs(60), scenario()).await;
}

async fn scenario() {
    // The writer's bucket count: 16 keys over 64 buckets, so some land at bucket 8 or
    // above, outside the relay's range.
    let s = Scenario::new(BIN, "fault_buckets", &outbox_tests::brokers(), 4, 64).await;
    let writer = s.writer(16, 4);
    let mut spec = s.relay("buckets_r1");
    spec.bucket_count = 8;
    let mut relay = spec.spawn();
    let started = Instant::now();
    let status = relay.wait_exit(Duration::from_secs(30));
    let report = writer.stop().await;
    assert!(!report.committed.is_empty(), "the writer committed nothing");
    let status = status
        .unwrap_or_else(|| panic!("the relay did not stop within 30 s\n{}", relay.log_tail(30)));
    eprintln!("relay exited with {status} after {:?}", started.elapsed());
    assert_eq!(
        status.code(),
        Some(2),
        "fatal misconfiguration exits with 2\n{}",
        relay.log_tail(30)
    );
    let log = relay.log();
    assert!(
        log.contains("fatal misconfiguration")
            && log.contains("a writer uses a different bucket count"),
        "{}",
        relay.log_tail(30)
    );
    s.env.drop_tables().await;
}
