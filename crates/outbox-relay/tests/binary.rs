//! The `outbox-relay` binary as an operator runs it: real process, SQLite database, the
//! broker started by `cargo xtask test`, HTTP endpoints, signals and exit codes.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use outbox_core::metrics::names;

const BIN: &str = env!("CARGO_BIN_EXE_outbox-relay");

fn sqlite_file(tag: &str) -> String {
    let path = std::env::temp_dir().join(format!("outbox-relay-{tag}-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    format!("sqlite://{}?mode=rwc", path.display())
}

use outbox_tests::endpoint::{free_port, http_get as get, wait_until as wait_for};

fn spawn(args: &[&str]) -> Child {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_exit(child: &mut Child, within: Duration) -> ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the relay did not exit in time");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serves_health_readiness_and_every_instrument_then_stops_on_sigterm() {
    outbox_tests::require_broker();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let url = sqlite_file("endpoints");
    let mut relay = spawn(&[
        "--database-url",
        &url,
        "--migrate",
        "true",
        "--brokers",
        &outbox_tests::brokers(),
        "--listen",
        &listen,
    ]);
    assert!(
        wait_for(
            || get(port, "/healthz").is_some_and(|(s, _)| s == 200),
            Duration::from_secs(30)
        ),
        "healthz"
    );
    assert!(
        wait_for(
            || get(port, "/readyz").is_some_and(|(s, _)| s == 200),
            Duration::from_secs(30)
        ),
        "readyz once leases are acquired"
    );
    let mut metrics = String::new();
    let all_present = wait_for(
        || {
            metrics = get(port, "/metrics")
                .map(|(_, body)| body)
                .unwrap_or_default();
            // Histograms appear after the first cycle; everything else at start.
            [
                "outbox_owned_buckets",
                "outbox_publish_acknowledged_total",
                "outbox_publish_failures_total",
                "outbox_lease_expirations_total",
                "outbox_lease_slow_calls_total",
                "outbox_cycle_duration_seconds",
                "outbox_pending_messages",
                "outbox_pending_oldest_age_seconds",
                "outbox_pending_available",
                "outbox_parked_total",
                "outbox_parked_messages",
                "outbox_parked_oldest_age_seconds",
            ]
            .iter()
            .all(|series| metrics.contains(series))
        },
        Duration::from_secs(30),
    );
    assert!(all_present, "instruments missing from /metrics:\n{metrics}");
    assert_eq!(
        names::ALL.len(),
        13,
        "the list above covers every instrument but publish.duration, which needs a publish"
    );
    assert_eq!(get(port, "/nope").map(|(s, _)| s), Some(404));
    Command::new("kill")
        .args(["-TERM", &relay.id().to_string()])
        .status()
        .unwrap();
    let status = wait_exit(&mut relay, Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "SIGTERM is a clean stop");
}

#[test]
fn invalid_configuration_exits_with_1_and_names_the_option() {
    let output = Command::new(BIN)
        .args([
            "--database-url",
            "sqlite://x.db",
            "--brokers",
            "127.0.0.1:9092",
            "--lease-renew-interval",
            "45s",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("lease_renew_interval"), "{stderr}");
    let output = Command::new(BIN)
        .args(["--brokers", "127.0.0.1:9092"])
        .env_remove("OUTBOX_DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("OUTBOX_DATABASE_URL"));
}

#[test]
fn a_writer_with_a_larger_bucket_count_stops_the_relay_with_exit_2() {
    outbox_tests::require_broker();
    let url = sqlite_file("misconfigured");
    // First run creates the tables, then stop it. A stopped relay keeps its leases until
    // they expire, and the next relay only probes (and finds the stray bucket) once it
    // owns buckets, which it retries every renew interval: with the defaults (30 s
    // lease, 10 s renewal) this test used to wait up to 30 s for that. Short leases on
    // both runs keep it to about a second.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let brokers = outbox_tests::brokers();
    let mut first = spawn(&[
        "--database-url",
        &url,
        "--migrate",
        "true",
        "--brokers",
        &brokers,
        "--listen",
        &listen,
        "--lease-duration",
        "2s",
        "--lease-renew-interval",
        "500ms",
    ]);
    assert!(wait_for(
        || get(port, "/readyz").is_some_and(|(s, _)| s == 200),
        Duration::from_secs(30)
    ));
    Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(
        wait_exit(&mut first, Duration::from_secs(30)).code(),
        Some(0)
    );
    // A writer configured with 32 buckets leaves a row in bucket 20.
    let path = url
        .trim_start_matches("sqlite://")
        .trim_end_matches("?mode=rwc")
        .to_owned();
    let status = Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"insert into outbox_messages(message_id,bucket,topic,created_at) values (?,20,'t','2025-01-01 00:00:00+00:00')\", (bytes(16),)); c.commit()",
            &path,
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut relay = spawn(&[
        "--database-url",
        &url,
        "--brokers",
        &brokers,
        "--listen",
        &listen,
        "--lease-duration",
        "2s",
        "--lease-renew-interval",
        "500ms",
    ]);
    let status = wait_exit(&mut relay, Duration::from_secs(60));
    assert_eq!(
        status.code(),
        Some(2),
        "fatal misconfiguration exits with 2"
    );
    let mut stderr = String::new();
    relay
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(stderr.contains("bucket 20"), "{stderr}");
}

/// The parked commands need only the database: on an empty parked table `list` says so
/// (and prints `[]` with `--json`), `show` names the missing id, and `discard` refuses
/// without `--yes`, exiting 1 and changing nothing.
#[test]
fn parked_commands_answer_on_an_empty_table_and_discard_needs_yes() {
    let url = sqlite_file("parked");
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let db = outbox_seaorm::connect(&url).await.unwrap();
        for migration in outbox_seaorm::migrations(outbox_core::OutboxSchema::default()) {
            migration
                .up(&sea_orm_migration::SchemaManager::new(&db))
                .await
                .unwrap();
        }
    });
    let parked = |args: &[&str]| {
        Command::new(BIN)
            .env_remove("RUST_LOG")
            .args(["--database-url", &url, "parked"])
            .args(args)
            .output()
            .unwrap()
    };
    let list = parked(&["list"]);
    assert!(list.status.success(), "{list:?}");
    assert_eq!(
        String::from_utf8_lossy(&list.stdout).trim(),
        "no parked rows"
    );
    let json = parked(&["list", "--json"]);
    assert_eq!(String::from_utf8_lossy(&json.stdout).trim(), "[]");
    let show = parked(&["show", "5"]);
    assert!(!show.status.success());
    assert!(String::from_utf8_lossy(&show.stderr).contains("no parked row has id 5"));
    let discard = parked(&["discard", "--all"]);
    assert_eq!(discard.status.code(), Some(1), "{discard:?}");
    assert!(String::from_utf8_lossy(&discard.stderr).contains("--yes"));
    let neither = parked(&["requeue"]);
    assert!(!neither.status.success(), "a selection is required");
}
