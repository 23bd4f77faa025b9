//! Scenario 1: `kill -9` a relay between the broker's acknowledgement and the delete, and
//! at random points. Expected: duplicates (the acknowledged batch is published again by
//! the restarted relay), no loss, per-key order of first deliveries kept.

use std::collections::HashSet;
use std::time::Duration;

use outbox_tests::faults::{Scenario, Uuid, await_acknowledged, eventually, run_within};
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};

use crate::BIN;

const BUCKETS: u32 = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_between_ack_and_delete_and_at_random_points_loses_nothing() {
    run_within("scenario 1", Duration::from_secs(90), scenario()).await;
}

async fn scenario() {
    let s = Scenario::new(BIN, "fault_kill", &outbox_tests::brokers(), 4, BUCKETS).await;
    let env = &s.env;
    let spec = s.relay("kill_r1");
    let mut relay = spec.spawn();
    let writer = s.writer(8, 2);
    await_acknowledged(&[&relay], 20.0, Duration::from_secs(20)).await;

    // The precise window. The relay deletes a batch only after the broker acknowledged
    // it, so a relay whose DELETE is waiting is between acknowledgement and delete. Hold
    // every row that is pending right now with a row lock (inserts go on; the relay's
    // reads take no locks), wait until the relay's DELETE of an acknowledged batch waits
    // on that lock, and kill it there.
    // The relay drains faster than the writer commits, so the table is sometimes empty
    // for a moment: lock again until the lock holds at least one pending row.
    let (lock, locked) = loop {
        let lock = env.db.begin().await.unwrap();
        let locked: HashSet<Uuid> = lock
            .query_all_raw(Statement::from_string(
                lock.get_database_backend(),
                format!(
                    "SELECT message_id FROM \"{}\" FOR UPDATE",
                    env.tables.messages()
                ),
            ))
            .await
            .unwrap()
            .iter()
            .map(|row| row.try_get_by_index(0).unwrap())
            .collect();
        if !locked.is_empty() {
            break (lock, locked);
        }
        lock.rollback().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let waiting = eventually(Duration::from_secs(15), || async {
        !env.deletes_waiting_on_lock(spec.relay_id.as_str())
            .await
            .is_empty()
    })
    .await;
    assert!(
        waiting,
        "the relay's DELETE never waited on the lock of {} pending rows\n{}",
        locked.len(),
        relay.log_tail(30)
    );
    relay.kill9();
    // The killed process's DELETE is still queued behind the lock in its server session
    // (PostgreSQL notices a dead client only when it next talks to it). End that session
    // first, as if the kill had come before the statement reached the server; then
    // release the lock.
    env.terminate_sessions(&spec.relay_id).await;
    lock.rollback().await.unwrap();

    // Restart (same id: it takes its own leases back at once), then a few kills at
    // random moments.
    relay = spec.spawn();
    for round in 0..3 {
        let delay = Duration::from_millis(300 + u64::from(random_u16() % 1200));
        tokio::time::sleep(delay).await;
        eprintln!("random kill {round} after {delay:?}");
        relay.kill9();
        relay = spec.spawn();
    }

    tokio::time::sleep(Duration::from_secs(1)).await;
    let report = s.drain(writer, &[&relay]).await;
    let verdict = s.check_topic(&report, "kill -9").await;
    // The batch whose DELETE was waiting when the relay died was acknowledged and not
    // deleted: the restarted relay publishes it again. Those duplicates prove the kill
    // hit the window.
    assert!(
        verdict.duplicated_ids.iter().any(|id| locked.contains(id)),
        "a row of the batch acknowledged before the kill must be published twice: {}",
        verdict.summary()
    );
    relay.terminate();
    relay.wait_exit(Duration::from_secs(10));
    env.drop_tables().await;
}

/// A random number without a random-number crate: std's randomly keyed hasher.
fn random_u16() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish() as u16
}
