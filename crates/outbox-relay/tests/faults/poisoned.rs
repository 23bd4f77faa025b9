//! Scenario 7: one row that can never be published sits at the front of bucket 0 (its
//! headers blob does not decode, as if written by an external writer that bypassed the
//! outbox API), while a writer commits steadily on every bucket.
//!
//! Where it fails: the store hands stored headers through as bytes; the Kafka publisher
//! decodes them while planning the batch and stops at the first row that does not
//! decode, so the poisoned row fails every **publish** of bucket 0 (acknowledged prefix:
//! zero rows). Nothing fails at fetch, and no other bucket's batch contains the row.
//!
//! Expected: every committed row of buckets 1..7 reaches the topic and leaves the table;
//! every row of bucket 0 stays pending behind the poisoned one (per-key order: nothing of
//! bucket 0 may overtake it); the relay logs the bucket's failures with a growing backoff
//! (`lane backing off bucket=0 consecutive_failures=N backoff_ms=M`, M growing) and
//! counts them (`outbox_publish_failures_total`).

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;
use std::time::Duration;

use outbox_core::bucket::bucket_for;
use outbox_tests::faults::{Scenario, Uuid, WriterReport, checker, eventually, run_within};
use sea_orm::{ConnectionTrait, Statement};

use crate::BIN;

const BUCKETS: u32 = 8;
const POISONED: i32 = 0;
/// How long the writer commits while the poisoned row blocks bucket 0.
const WRITE_FOR: Duration = Duration::from_secs(5);
/// How long buckets 1..7 may take to empty once the writer stopped.
const OTHERS_DRAIN_WITHIN: Duration = Duration::from_secs(20);
const FAILURES: &str = "outbox_publish_failures_total";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_row_blocks_only_its_own_bucket_with_a_growing_backoff() {
    run_within("scenario 7", Duration::from_secs(90), scenario()).await;
}

fn bucket_of(key: &str) -> i32 {
    let count = NonZeroU32::new(BUCKETS).expect("a positive bucket count");
    // Keyed records: the message id plays no part in the bucket.
    bucket_for(Some(key.as_bytes()), None, &Uuid::nil(), count)
}

/// Inserts, with plain SQL as an external writer would, a row at the front of bucket 0
/// whose headers blob has an unknown version byte: it can never be decoded, so never
/// published. Its key hashes to bucket 0, like a real row of that bucket.
async fn insert_poisoned_row(s: &Scenario) -> Uuid {
    let key = (0..)
        .map(|n| format!("poison{n}"))
        .find(|k| bucket_of(k) == POISONED)
        .expect("some key hashes to bucket 0");
    let id = Uuid::new_v4();
    let sql = format!(
        "INSERT INTO \"{}\" (\"message_id\", \"bucket\", \"topic\", \"key\", \"value\", \"headers\", \
         \"partition\", \"created_at\") VALUES ('{id}', {POISONED}, '{}', convert_to('{key}', 'UTF8'), \
         convert_to('poison', 'UTF8'), decode('ff000000', 'hex'), NULL, now())",
        s.env.tables.messages(),
        s.env.topic
    );
    s.env
        .db
        .execute_raw(Statement::from_string(s.env.db.get_database_backend(), sql))
        .await
        .unwrap_or_else(|e| panic!("inserting the poisoned row: {e}"));
    id
}

/// One `lane backing off` line of bucket 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Backoff {
    consecutive_failures: u64,
    backoff_ms: u64,
}

/// The number after ` name=` in `line`.
fn field(line: &str, name: &str) -> Option<u64> {
    let rest = line.split(&format!(" {name}=")).nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Every `lane backing off` line of `bucket` in `log`, in order.
fn backoffs(log: &str, bucket: i32) -> Vec<Backoff> {
    log.lines()
        .filter(|l| l.contains("lane backing off"))
        .filter(|l| field(l, "bucket") == u64::try_from(bucket).ok())
        .filter_map(|l| {
            Some(Backoff {
                consecutive_failures: field(l, "consecutive_failures")?,
                backoff_ms: field(l, "backoff_ms")?,
            })
        })
        .collect()
}

/// Whether the backoff grows: at least three lines, failures counted up, waits never
/// shorter than the one before and the last longer than the first. `Err` says why not.
fn check_growing(lines: &[Backoff]) -> Result<(), String> {
    if lines.len() < 3 {
        return Err(format!(
            "{} backoff lines for bucket 0, expected at least 3",
            lines.len()
        ));
    }
    for pair in lines.windows(2) {
        if pair[1].consecutive_failures <= pair[0].consecutive_failures {
            return Err(format!("the failure count did not grow: {pair:?}"));
        }
        if pair[1].backoff_ms < pair[0].backoff_ms {
            return Err(format!("the backoff shrank: {pair:?}"));
        }
    }
    let (first, last) = (lines[0], lines[lines.len() - 1]);
    if last.backoff_ms <= first.backoff_ms {
        return Err(format!(
            "the backoff never grew past {} ms",
            first.backoff_ms
        ));
    }
    Ok(())
}

async fn scenario() {
    let s = Scenario::new(BIN, "fault_poison", &outbox_tests::brokers(), 8, BUCKETS).await;
    let env = &s.env;
    let poisoned_id = insert_poisoned_row(&s).await;
    let mut spec = s.relay("poison_r1");
    // Short first step, room to double several times within the scenario.
    spec.error_backoff = Duration::from_millis(200);
    spec.max_error_backoff = Duration::from_secs(5);
    let mut relay = spec.spawn();
    // The fewest keys `k0, k1, ...` (the writer's names) that cover every bucket.
    let keys = (1..)
        .find(|n| {
            (0..*n)
                .map(|k| bucket_of(&format!("k{k}")))
                .collect::<BTreeSet<i32>>()
                .len()
                == BUCKETS as usize
        })
        .expect("keys for every bucket");
    let writer = s.writer(keys, 2);
    tokio::time::sleep(WRITE_FOR).await;
    let report = writer.stop().await;

    let (bucket0, others): (Vec<_>, Vec<_>) = report
        .committed
        .iter()
        .cloned()
        .partition(|c| bucket_of(&c.key) == POISONED);
    let written: BTreeSet<i32> = report.committed.iter().map(|c| bucket_of(&c.key)).collect();
    assert_eq!(
        written,
        (0..BUCKETS.cast_signed()).collect(),
        "the writer must commit on every bucket"
    );

    // 1. Every other bucket drains. On a relay that sweeps buckets in order and stops a
    //    sweep at the first failure, this is where it fails.
    let drained = eventually(OTHERS_DRAIN_WITHIN, || async {
        env.pending_by_bucket().await.keys().all(|b| *b == POISONED)
    })
    .await;
    if !drained {
        let pending = env.pending_by_bucket().await;
        let others_pending: BTreeMap<i32, i64> = pending
            .iter()
            .filter(|(b, _)| **b != POISONED)
            .map(|(b, n)| (*b, *n))
            .collect();
        panic!(
            "the poisoned row at the front of bucket {POISONED} held up the other buckets: \
             {OTHERS_DRAIN_WITHIN:?} after the writer stopped, buckets 1..{} still hold rows \
             (pending per bucket: {others_pending:?}; bucket {POISONED}: {:?}); \
             every bucket but {POISONED} must drain\n{}",
            BUCKETS - 1,
            pending.get(&POISONED),
            relay.log_tail(30)
        );
    }

    // 2. Bucket 0 waits, whole: the poisoned row and every committed row behind it.
    let bucket0_pending: BTreeSet<Uuid> = env
        .db
        .query_all_raw(Statement::from_string(
            env.db.get_database_backend(),
            format!(
                "SELECT message_id FROM \"{}\" WHERE bucket = {POISONED}",
                env.tables.messages()
            ),
        ))
        .await
        .unwrap()
        .iter()
        .map(|row| row.try_get_by_index(0).unwrap())
        .collect();
    assert!(
        bucket0_pending.contains(&poisoned_id),
        "the poisoned row left the table"
    );
    let left: Vec<&Uuid> = bucket0
        .iter()
        .map(|c| &c.message_id)
        .filter(|id| !bucket0_pending.contains(id))
        .collect();
    assert!(
        left.is_empty(),
        "{} of {} committed rows of bucket {POISONED} left the table ahead of the poisoned row \
         (first: {:?})",
        left.len(),
        bucket0.len(),
        left.first()
    );

    // 3. The topic: every committed row of buckets 1..7, in per-key order, and nothing of
    //    bucket 0 (its records are not in the report, so the checker counts any of them
    //    on the topic as foreign).
    let expected = WriterReport {
        committed: others,
        uncertain: report
            .uncertain
            .iter()
            .filter(|c| bucket_of(&c.key) != POISONED)
            .cloned()
            .collect(),
        failed_transactions: report.failed_transactions,
    };
    let published = s.read_topic().await;
    let verdict = checker::check(&expected, &[&published]);
    eprintln!(
        "scenario 7: buckets 1..{}: {}; bucket {POISONED}: {} committed rows pending behind the poisoned one",
        BUCKETS - 1,
        verdict.summary(),
        bucket0.len()
    );
    verdict.assert_sound("poisoned bucket 0 (buckets 1..7 published, bucket 0 not)");

    // 4. Logged with a growing backoff. The backoff doubles from 200 ms, so the third
    //    line comes about 1.4 s after the first failure: wait for it if need be.
    let grown = eventually(Duration::from_secs(15), || async {
        check_growing(&backoffs(&relay.log(), POISONED)).is_ok()
    })
    .await;
    if !grown {
        let lines = backoffs(&relay.log(), POISONED);
        panic!(
            "bucket {POISONED}'s failures were not logged with a growing backoff: {} \
             (lines: {lines:?}); expected WARN `lane backing off bucket={POISONED} \
             consecutive_failures=N backoff_ms=M` lines with M growing\n{}",
            check_growing(&lines).err().unwrap_or_default(),
            relay.log_tail(30)
        );
    }

    // 5. Counted.
    let failures = relay.metric_sum(FAILURES);
    assert!(
        failures.is_some_and(|n| n > 0.0),
        "{FAILURES} is {failures:?}, expected > 0 after bucket {POISONED}'s failures"
    );
    eprintln!(
        "scenario 7: backoff {:?} ms; {FAILURES} {failures:?}",
        backoffs(&relay.log(), POISONED)
            .iter()
            .map(|b| b.backoff_ms)
            .collect::<Vec<_>>()
    );
    assert!(relay.exited().is_none(), "{}", relay.log_tail(30));
    relay.terminate();
    relay.wait_exit(Duration::from_secs(10));
    env.drop_tables().await;
}

#[test]
fn the_backoff_check_wants_growth() {
    let log = "x WARN outbox_core::driver: lane backing off bucket=0 consecutive_failures=1 backoff_ms=200\n\
               x WARN outbox_core::driver: lane backing off bucket=3 consecutive_failures=1 backoff_ms=200\n\
               x WARN outbox_core::driver: lane backing off bucket=0 consecutive_failures=2 backoff_ms=400\n\
               x WARN outbox_core::driver: lane backing off bucket=0 consecutive_failures=3 backoff_ms=800\n";
    let lines = backoffs(log, 0);
    assert_eq!(lines.len(), 3);
    assert_eq!(check_growing(&lines), Ok(()));
    let flat = [Backoff {
        consecutive_failures: 1,
        backoff_ms: 1000,
    }; 3];
    assert!(check_growing(&flat).is_err());
    let reset: Vec<Backoff> = [(1, 200), (2, 400), (1, 200)]
        .map(|(n, ms)| Backoff {
            consecutive_failures: n,
            backoff_ms: ms,
        })
        .to_vec();
    assert!(check_growing(&reset).is_err());
    assert!(check_growing(&lines[..2]).is_err());
}
