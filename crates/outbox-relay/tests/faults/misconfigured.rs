//! Scenario 5: a writer configured with a larger bucket count than the relay. The relay
//! must stop with the fatal misconfiguration error and exit status 2, promptly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use outbox_tests::faults::{FaultEnv, RelaySpec, Writer};

const BIN: &str = env!("CARGO_BIN_EXE_outbox-relay");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_with_more_buckets_stops_the_relay_with_exit_2() {
    tokio::time::timeout(Duration::from_secs(60), scenario())
        .await
        .expect("scenario 5 did not finish within 60 s");
}

async fn scenario() {
    let env = FaultEnv::new("fault_buckets", &outbox_tests::brokers(), 4).await;
    // 16 keys over 64 buckets: some land at bucket 8 or above, outside the relay's range.
    let writer = Writer::start(&env, 64, 16, 4, Duration::from_millis(20));
    let mut relay = RelaySpec::new(BIN, &env, "buckets_r1", 8).spawn();
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
    env.drop_tables().await;
}
