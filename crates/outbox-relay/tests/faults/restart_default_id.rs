//! Scenario 9: a relay started without `--relay-id` is killed with `kill -9` and started
//! again on the same host. Expected: it comes back under the same default id
//! (`<host>-<outbox name>`), recognises its own leases and publishes the rows committed
//! meanwhile within seconds, far inside the 30 s lease it left behind. (Under a random id
//! per start it would wait the whole lease: the leases belong to another id.)

use std::time::{Duration, Instant};

use outbox_core::relay_id::default_relay_id;
use outbox_tests::faults::{Scenario, eventually, run_within};

use crate::BIN;

const BUCKETS: u32 = 8;
/// The library's default lease: what a crash used to cost.
const LEASE: Duration = Duration::from_secs(30);
/// What a restart may take, start-up included.
const RESTART_BOUND: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_after_kill_9_under_the_default_id_publishes_at_once() {
    run_within("scenario 9", Duration::from_secs(90), scenario()).await;
}

async fn scenario() {
    let s = Scenario::new(BIN, "fault_defid", &outbox_tests::brokers(), 4, BUCKETS).await;
    let env = &s.env;
    let mut spec = s.relay("defid_host");
    spec.default_relay_id = true;
    spec.lease = LEASE;
    spec.renew = Duration::from_secs(10);
    // The host is `POD_NAME`, set by the harness; the outbox name is the binary's default.
    let id = default_relay_id(&spec.relay_id, "outbox").unwrap();

    let mut relay = spec.spawn();
    let all_leases = || async { env.leases_by_owner().await.get(&id).copied() == Some(8) };
    assert!(
        eventually(Duration::from_secs(20), all_leases).await,
        "the relay holds every lease under its default id {id:?}: {:?}\n{}",
        env.leases_by_owner().await,
        relay.log_tail(30)
    );
    relay.kill9();

    // Rows committed while no relay runs.
    let writer = s.writer(8, 2);
    assert!(
        eventually(Duration::from_secs(10), || async {
            env.pending().await >= 20
        })
        .await,
        "the writer commits"
    );
    let report = writer.stop().await;
    assert!(
        env.leases_by_owner().await.get(&id).copied() == Some(8),
        "the dead relay's leases are still live: a new id would have to wait for them"
    );

    let restarted = Instant::now();
    let relay = spec.spawn();
    let drained = env.wait_drained(RESTART_BOUND).await;
    assert!(
        drained,
        "{} rows still pending {:?} after the restart (lease {LEASE:?}): the restarted relay did not take its own leases back\n{}",
        env.pending().await,
        restarted.elapsed(),
        relay.log_tail(40)
    );
    eprintln!(
        "restart under the default id {id:?} drained in {:?}",
        restarted.elapsed()
    );
    let log = relay.log();
    assert!(
        log.contains("heartbeat younger than a lease"),
        "the takeover of a fresh heartbeat is announced\n{}",
        relay.log_tail(40)
    );
    assert!(
        !log.contains("another process is running as relay"),
        "a crashed predecessor is no duplicate\n{}",
        relay.log_tail(40)
    );
    s.check_topic(&report, "restart under the default id").await;
}
