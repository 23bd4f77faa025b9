//! `outbox-relay status` against PostgreSQL: while a real relay process runs it shows that
//! relay alive and owning every bucket, beside a stale relay's heartbeat and a parked
//! row; after the relay stopped, the free buckets, the pending rows per bucket with their
//! oldest age, and a warning for the row a writer put beyond the bucket count. Missing
//! tables and an unreachable database exit 1 with a message that says which.

use std::process::{Command, Output};
use std::time::Duration;

use outbox_core::{
    LeaseRequest, OutboxMessage, OutboxSchema, OutboxStore, ParkReason, ParkRequest, ParkRow,
    ParkedFailure, Timestamp, Uuid,
};
use outbox_seaorm::{SeaOrmStore, insert_rows};
use outbox_tests::faults::FaultEnv;
use serde_json::Value;

use crate::common::{BIN, Relay, free_port};
use crate::logs::table_args;

const BUCKETS: u32 = 4;
const LIVE: &str = "status-live";
const PARKER: &str = "status-parker";

/// Runs `outbox-relay <args>` to its end, with no `OUTBOX_*` variable of the suite's.
fn outbox_relay(args: &[String]) -> Output {
    let mut command = Command::new(BIN);
    command.args(args).env_remove("RUST_LOG");
    for (name, _) in std::env::vars() {
        if name.starts_with("OUTBOX_") && !name.starts_with("OUTBOX_TEST_") {
            command.env_remove(name);
        }
    }
    command.output().unwrap()
}

fn row(topic: &str, bucket: i32, created_at: Timestamp) -> OutboxMessage {
    OutboxMessage {
        id: 0,
        message_id: Uuid::now_v7(),
        bucket,
        topic: topic.to_owned(),
        key: Some(b"k".to_vec()),
        value: Some(b"{}".to_vec()),
        headers: None,
        partition: None,
        created_at,
        store_ref: None,
    }
}

/// `status` (and `status --json`, parsed): both must exit 0.
fn status(base: &[String]) -> (String, Value) {
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.push("status".to_owned());
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let output = outbox_relay(&args);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let text = run(&[]);
    let json = run(&["--json"]);
    let json = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    (text, json)
}

fn line<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_the_live_relay_its_buckets_the_backlog_and_stray_rows() {
    let env = FaultEnv::new("relay_status", &outbox_tests::brokers(), 1).await;
    let schema = OutboxSchema::builder()
        .tables(env.tables.clone())
        .bucket_count(BUCKETS)
        .build()
        .unwrap();
    let store = SeaOrmStore::new(env.db.clone(), schema).unwrap();

    // A relay that held every bucket two minutes ago and parked a row of bucket 1 then.
    let then = Timestamp::now().saturating_sub(Duration::from_secs(120));
    insert_rows(&env.db, &env.tables, &[row(&env.topic, 1, then)])
        .await
        .unwrap();
    let request = LeaseRequest {
        relay_id: PARKER,
        bucket_count: BUCKETS,
        lease_duration: Duration::from_secs(30),
        now: then,
        busy: &[],
    };
    assert_eq!(store.acquire_leases(&request).await.unwrap().held.len(), 4);
    let stuck = store.next_batch(1, None, 1).await.unwrap();
    let park = [ParkRow {
        message: stuck[0].clone(),
        reason: ParkReason::Failed(ParkedFailure {
            error: "refused".into(),
            attempts: 3,
            first_failed_at: then,
            last_failed_at: then,
        }),
    }];
    let parked = store
        .park_rows(&ParkRequest {
            relay_id: PARKER,
            now: then,
            bucket: 1,
            rows: &park,
        })
        .await
        .unwrap();
    assert_eq!(parked.parked.len(), 1);

    let mut base = vec![
        "--database-url".to_owned(),
        env.database_url.clone(),
        "--bucket-count".to_owned(),
        BUCKETS.to_string(),
    ];
    base.extend(table_args(&env));

    // A real relay takes the expired buckets over.
    let mut relay_args = base.clone();
    relay_args.extend(["--brokers", &env.brokers, "--relay-id", LIVE].map(str::to_owned));
    let relay_args: Vec<&str> = relay_args.iter().map(String::as_str).collect();
    let relay = Relay::start(&relay_args, &[]);
    relay.wait_ready(Duration::from_secs(30));

    let (text, json) = status(&base);
    let live = line(&text, &format!("  {LIVE} "));
    assert!(live.contains("alive") && live.contains("4: 0-3"), "{text}");
    assert!(
        line(&text, &format!("  {PARKER} ")).contains("stale"),
        "{text}"
    );
    assert!(
        line(&text, "relays:").contains("1 alive, 1 stale"),
        "{text}"
    );
    let relays = json["relays"].as_array().unwrap();
    let by_id = |id: &str| relays.iter().find(|r| r["relay_id"] == id).unwrap();
    assert_eq!(by_id(LIVE)["alive"], true, "{json}");
    assert_eq!(
        by_id(LIVE)["owned_buckets"],
        serde_json::json!([0, 1, 2, 3])
    );
    assert_eq!(by_id(LIVE)["fair_share"], 4);
    assert_eq!(by_id(PARKER)["alive"], false);
    assert!(by_id(PARKER)["age_ms"].as_u64().unwrap() >= 120_000);
    let buckets = json["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 4);
    for b in buckets {
        assert_eq!(b["lease"], "held", "{b}");
        assert_eq!(b["owner"], LIVE, "{b}");
        let left = b["lease_left_ms"].as_u64().unwrap();
        assert!(left > 0 && left <= 30_000, "{b}");
    }
    assert_eq!(buckets[1]["parked"], 1);
    assert_eq!(json["parked"], 1);
    assert_eq!(json["out_of_range_rows"], 0);
    assert_eq!(json["warnings"], serde_json::json!([]), "{json}");

    // A graceful stop hands the buckets back and removes the relay's heartbeat.
    let (exit, output) = relay.terminate();
    assert_eq!(exit.code(), Some(0), "{output}");

    // Rows nobody publishes now, one of them beyond the bucket count.
    let created = Timestamp::now().saturating_sub(Duration::from_secs(10));
    let rows = [
        row(&env.topic, 0, created),
        row(&env.topic, 0, created),
        row(&env.topic, 2, created),
        row(&env.topic, 7, created),
    ];
    insert_rows(&env.db, &env.tables, &rows).await.unwrap();

    let (text, json) = status(&base);
    assert!(
        line(&text, "relays:").contains("0 alive, 1 stale"),
        "{text}"
    );
    assert!(
        line(&text, "warning: 1 rows lie outside buckets 0..4").contains("bucket 7: 1 pending"),
        "{text}"
    );
    assert!(line(&text, "warning: no relay is alive").ends_with("nothing is published"));
    assert!(line(&text, "warning: pending rows in buckets no relay holds").ends_with("0, 2"));
    let buckets = json["buckets"].as_array().unwrap();
    let pending: Vec<u64> = buckets
        .iter()
        .map(|b| b["pending"].as_u64().unwrap())
        .collect();
    assert_eq!(pending, [2, 0, 1, 0], "{json}");
    for b in buckets {
        assert_eq!(b["lease"], "free", "{b}");
    }
    let oldest = buckets[0]["oldest_pending_age_ms"].as_u64().unwrap();
    assert!((10_000..60_000).contains(&oldest), "{oldest}");
    assert!(buckets[1]["oldest_pending_age_ms"].is_null());
    assert_eq!(
        json["out_of_range"],
        serde_json::json!([{ "bucket": 7, "pending": 1, "parked": 0 }])
    );
    let relays = json["relays"].as_array().unwrap();
    assert_eq!(relays.len(), 1, "{json}");
    assert_eq!(relays[0]["relay_id"], PARKER);

    // Tables that are not there, and a database that does not answer.
    let mut missing = vec!["--database-url".to_owned(), env.database_url.clone()];
    missing.extend(
        [
            "--messages-table",
            "status_absent_m",
            "--leases-table",
            "status_absent_l",
        ]
        .map(str::to_owned),
    );
    missing.extend(
        [
            "--relays-table",
            "status_absent_r",
            "--parked-table",
            "status_absent_p",
            "status",
        ]
        .map(str::to_owned),
    );
    let output = outbox_relay(&missing);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr.contains("cannot read the outbox tables")
            && stderr.contains("run the outbox migrations"),
        "{stderr}"
    );
    let nowhere = format!("postgres://postgres@127.0.0.1:{}/test", free_port());
    let started = std::time::Instant::now();
    let output = outbox_relay(&["--database-url".to_owned(), nowhere, "status".to_owned()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr.contains("cannot reach the database") && stderr.contains("connection refused"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a refused connection is reported at once, not after the pool timeout"
    );

    env.drop_tables().await;
}
