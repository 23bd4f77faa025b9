//! Scenario 7: one row that can never be published sits at the front of bucket 0 (its
//! headers blob does not decode, as if written by an external writer that bypassed the
//! outbox API), with key K, while a writer commits steadily on K and on keys of every
//! bucket.
//!
//! Where it fails: the store hands stored headers through as bytes; the Kafka publisher
//! decodes them while planning the batch and stops at the row, blaming it, so every
//! publish of bucket 0 fails there until the relay parks the row (after
//! `max_publish_attempts`, 3 by default).
//!
//! Expected: the corrupt row is parked (WARN `row parked`, `outbox_parked_total`), K's
//! later rows are parked behind it and none of K's records reaches the topic, while every
//! other key, bucket 0's included, drains. `outbox-relay parked list --json` shows them.
//! An operator repairs the row (plain SQL on the parked table) and runs `outbox-relay
//! parked requeue --key K`; then a consumer reading the topic sees K's records in commit
//! order, the repaired row first, each once after deduplication, and nothing is lost.

use std::collections::{BTreeSet, HashSet};
use std::num::NonZeroU32;
use std::process::Command;
use std::time::Duration;

use outbox_core::bucket::bucket_for;
use outbox_tests::faults::{Scenario, Uuid, WriterReport, checker, eventually, run_within};
use sea_orm::{ConnectionTrait, Statement};

use crate::BIN;

const BUCKETS: u32 = 8;
const POISONED: i32 = 0;
/// How long the writer commits while K is parked.
const WRITE_FOR: Duration = Duration::from_secs(5);
/// How long the backlog may take to empty once the writer stopped (or K was requeued).
const DRAIN_WITHIN: Duration = Duration::from_secs(30);
const PARKED: &str = "outbox_parked_total";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_row_is_parked_its_key_held_and_requeued_in_commit_order() {
    run_within("scenario 7", Duration::from_secs(120), scenario()).await;
}

fn bucket_of(key: &str) -> i32 {
    let count = NonZeroU32::new(BUCKETS).expect("a positive bucket count");
    // Keyed records: the message id plays no part in the bucket.
    bucket_for(Some(key.as_bytes()), None, &Uuid::nil(), count)
}

/// Inserts, with plain SQL as an external writer would, a row of key `key` whose headers
/// blob has an unknown version byte: it can never be decoded, so never published.
async fn insert_poisoned_row(s: &Scenario, key: &str) -> Uuid {
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

/// Runs `outbox-relay parked <args>` on the scenario's tables and returns its stdout.
fn parked_command(s: &Scenario, args: &[&str]) -> String {
    let env = &s.env;
    let output = Command::new(BIN)
        .env_remove("RUST_LOG")
        .args(["--database-url", &env.database_url_for("operator")])
        .args(["--messages-table", env.tables.messages()])
        .args(["--leases-table", env.tables.leases()])
        .args(["--relays-table", env.tables.relays()])
        .args(["--parked-table", env.tables.parked()])
        .arg("parked")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running outbox-relay parked {args:?}: {e}"));
    assert!(
        output.status.success(),
        "outbox-relay parked {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The parked rows as `outbox-relay parked list --json` prints them.
fn parked_rows(s: &Scenario) -> Vec<serde_json::Value> {
    let out = parked_command(s, &["list", "--limit", "100000", "--json"]);
    serde_json::from_str::<serde_json::Value>(out.trim())
        .unwrap_or_else(|e| panic!("parked list --json printed {out:?}: {e}"))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn scenario() {
    let s = Scenario::new(BIN, "fault_poison", &outbox_tests::brokers(), 8, BUCKETS).await;
    let env = &s.env;
    // The fewest keys `k0, k1, ...` (the writer's names) that cover every bucket; K is
    // the first of them in bucket 0.
    let keys = (1..)
        .find(|n| {
            (0..*n)
                .map(|k| bucket_of(&format!("k{k}")))
                .collect::<BTreeSet<i32>>()
                .len()
                == BUCKETS as usize
        })
        .expect("keys for every bucket");
    let held_key = (0..keys)
        .map(|k| format!("k{k}"))
        .find(|k| bucket_of(k) == POISONED)
        .expect("a key of bucket 0");
    let poisoned_id = insert_poisoned_row(&s, &held_key).await;
    let mut spec = s.relay("poison_r1");
    spec.error_backoff = Duration::from_millis(200);
    spec.max_error_backoff = Duration::from_secs(1);
    let mut relay = spec.spawn();
    let writer = s.writer(keys, 2);
    tokio::time::sleep(WRITE_FOR).await;
    let report = writer.stop().await;
    let is_held = |key: &str| key == held_key;
    let held_committed: Vec<_> = report
        .committed
        .iter()
        .filter(|c| is_held(&c.key))
        .cloned()
        .collect();
    assert!(
        !held_committed.is_empty(),
        "the writer must commit rows of {held_key}"
    );
    assert!(
        report
            .committed
            .iter()
            .any(|c| !is_held(&c.key) && bucket_of(&c.key) == POISONED),
        "the writer must commit other keys of bucket {POISONED} too"
    );

    // 1. Everything but K drains (bucket 0's other keys included): K's rows are parked,
    //    not pending.
    let drained = eventually(DRAIN_WITHIN, || async { env.pending().await == 0 }).await;
    if !drained {
        panic!(
            "rows still pending {DRAIN_WITHIN:?} after the writer stopped: {:?}\n{}",
            env.pending_by_bucket().await,
            relay.log_tail(30)
        );
    }

    // 2. The operator's view: the corrupt row parked for its failures, every committed row
    //    of K parked behind it, nothing else.
    let rows = parked_rows(&s);
    let parked_ids: HashSet<String> = rows
        .iter()
        .filter_map(|r| r["message_id"].as_str().map(str::to_owned))
        .collect();
    let corrupt = rows
        .iter()
        .find(|r| r["message_id"] == poisoned_id.to_string())
        .unwrap_or_else(|| panic!("the corrupt row is not in parked list: {rows:?}"));
    assert_eq!(corrupt["reason"], "failed", "{corrupt}");
    assert!(
        corrupt["error"]
            .as_str()
            .is_some_and(|e| e.contains("headers")),
        "{corrupt}"
    );
    assert!(
        corrupt["attempts"].as_u64().is_some_and(|n| n >= 3),
        "{corrupt}"
    );
    assert!(
        rows.iter().all(|r| r["key"] == held_key.as_str()),
        "only {held_key} is parked: {rows:?}"
    );
    let missing: Vec<_> = held_committed
        .iter()
        .filter(|c| !parked_ids.contains(&c.message_id.to_string()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {held_key}'s committed rows are not parked behind the corrupt one: {missing:?}",
        missing.len()
    );
    let before_requeue = s.read_topic().await;
    assert!(
        before_requeue
            .iter()
            .all(|p| p.key.as_deref() != Some(held_key.as_str())),
        "a record of {held_key} reached the topic ahead of its parked row"
    );

    // 3. Repair the row as an operator would (its headers were garbage; drop them) and
    //    requeue the key with the binary.
    env.db
        .execute_raw(Statement::from_string(
            env.db.get_database_backend(),
            format!(
                "UPDATE \"{}\" SET headers = NULL WHERE message_id = '{poisoned_id}'",
                env.tables.parked()
            ),
        ))
        .await
        .unwrap_or_else(|e| panic!("repairing the parked row: {e}"));
    let requeued: serde_json::Value =
        serde_json::from_str(parked_command(&s, &["requeue", "--key", &held_key, "--json"]).trim())
            .unwrap();
    let requeued = requeued["requeued"].as_array().map_or(0, Vec::len);
    assert_eq!(
        requeued,
        rows.len(),
        "every parked row of {held_key} requeued"
    );
    let drained = eventually(DRAIN_WITHIN, || async {
        env.pending().await == 0 && parked_rows(&s).is_empty()
    })
    .await;
    assert!(
        drained,
        "the requeued key did not drain\n{}",
        relay.log_tail(30)
    );

    // 4. The topic: every other key complete and in order (the usual checker), and K's
    //    first deliveries exactly the repaired row, then K's committed rows in order.
    let published = s.read_topic().await;
    let (held_on_topic, others_on_topic): (Vec<_>, Vec<_>) = published
        .iter()
        .cloned()
        .partition(|p| p.key.as_deref() == Some(held_key.as_str()));
    let others = WriterReport {
        committed: report
            .committed
            .iter()
            .filter(|c| !is_held(&c.key))
            .cloned()
            .collect(),
        uncertain: report
            .uncertain
            .iter()
            .filter(|c| !is_held(&c.key))
            .cloned()
            .collect(),
        failed_transactions: report.failed_transactions,
    };
    let verdict = checker::check(&others, &[&others_on_topic]);
    verdict.assert_sound("poisoned: every other key published");
    let mut in_offset_order = held_on_topic;
    in_offset_order.sort_by_key(|p| (p.partition, p.offset));
    let mut seen = HashSet::new();
    let firsts: Vec<Uuid> = in_offset_order
        .iter()
        .filter_map(|p| p.message_id)
        .filter(|id| seen.insert(*id))
        .collect();
    let mut expected = vec![poisoned_id];
    let mut by_seq = held_committed.clone();
    by_seq.sort_by_key(|c| c.seq);
    expected.extend(by_seq.iter().map(|c| c.message_id));
    let uncertain: HashSet<Uuid> = report.uncertain.iter().map(|c| c.message_id).collect();
    let firsts: Vec<Uuid> = firsts
        .into_iter()
        .filter(|id| !uncertain.contains(id))
        .collect();
    assert_eq!(
        firsts, expected,
        "{held_key}'s first deliveries must be the repaired row, then its rows in commit order"
    );
    eprintln!(
        "scenario 7: {} other records: {}; {held_key}: {} rows parked, requeued, delivered in order",
        others.committed.len(),
        verdict.summary(),
        expected.len()
    );

    // 5. Logged and counted.
    assert!(
        relay
            .log()
            .lines()
            .any(|l| l.contains("row parked") && l.contains(&poisoned_id.to_string())),
        "no `row parked` line for the corrupt row\n{}",
        relay.log_tail(30)
    );
    let parked_total = relay.metric_sum(PARKED);
    assert!(
        parked_total.is_some_and(|n| n >= expected.len() as f64),
        "{PARKED} is {parked_total:?}, expected at least {}",
        expected.len()
    );
    assert!(relay.exited().is_none(), "{}", relay.log_tail(30));
    relay.terminate();
    relay.wait_exit(Duration::from_secs(10));
    env.drop_tables().await;
}
