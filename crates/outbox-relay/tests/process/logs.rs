//! What a normal run prints: no escape codes into a pipe, no ERROR, no SQL statement and
//! no dependency chatter below WARN; with `--log-format json`, one JSON object per line.

use std::time::Duration;

use outbox_core::{OutboxMessage, OutboxSchema};
use outbox_seaorm::Outbox;
use outbox_tests::faults::FaultEnv;

use crate::common::{Relay, sqlite_args, wait_for};

/// The flags that point a relay at `env`'s tables.
pub fn table_args(env: &FaultEnv) -> Vec<String> {
    let t = &env.tables;
    [
        ("--messages-table", t.messages()),
        ("--leases-table", t.leases()),
        ("--relays-table", t.relays()),
        ("--parked-table", t.parked()),
    ]
    .into_iter()
    .flat_map(|(flag, value)| [flag.to_owned(), value.to_owned()])
    .collect()
}

/// Commits one record for `env`'s topic through the real writer (no notification).
pub async fn write_one(env: &FaultEnv, key: &str) {
    let schema = OutboxSchema::builder()
        .tables(env.tables.clone())
        .build()
        .unwrap();
    let outbox = Outbox::new(schema);
    let txn = outbox.begin(&env.db).await.unwrap();
    txn.enqueue(
        OutboxMessage::builder(env.topic.clone())
            .key(key.to_owned())
            .value("v"),
    )
    .await
    .unwrap();
    txn.commit().await.unwrap();
}

/// Whether a text log line is at `level` (the fmt layer pads it: ` INFO `, `DEBUG `).
fn level_of(line: &str) -> Option<&'static str> {
    ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"]
        .into_iter()
        .find(|level| line.split_whitespace().nth(1) == Some(*level))
}

/// The span names and the target of a text line: the `name{..}:` / `name:` words between
/// the level and the message, up to the first module path (`crate::module`).
fn targets(line: &str) -> Vec<String> {
    let rest = line
        .split_whitespace()
        .skip(2)
        .collect::<Vec<_>>()
        .join(" ");
    let mut names = Vec::new();
    for segment in rest.split(": ") {
        let name = segment.split('{').next().unwrap_or_default();
        let is_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ':');
        if !is_name {
            break;
        }
        names.push(name.to_owned());
        // The target is a module path and comes last: what follows is the message.
        if name.contains("::") {
            break;
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_run_prints_no_escape_code_no_error_no_sql_and_no_dependency_info() {
    let env = FaultEnv::new("relay_logs", &outbox_tests::brokers(), 1).await;
    let mut args = vec![
        "--database-url".to_owned(),
        env.database_url.clone(),
        "--brokers".to_owned(),
        env.brokers.clone(),
    ];
    args.extend(table_args(&env));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let relay = Relay::start(&args, &[]);
    relay.wait_ready(Duration::from_secs(30));
    write_one(&env, "k1").await;
    let published = wait_for(
        || {
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(env.pending())
            }) == 0
        },
        Duration::from_secs(30),
    );
    assert!(
        published,
        "the record was not published\n{}",
        relay.output()
    );
    let (status, output) = relay.terminate();
    assert_eq!(status.code(), Some(0), "{output}");
    assert!(
        !output.contains('\u{1b}'),
        "escape codes in a pipe:\n{output}"
    );
    assert!(output.contains("relay running"), "{output}");
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let level = level_of(line).unwrap_or_else(|| panic!("not a log line: {line:?}"));
        assert_ne!(level, "ERROR", "{line}");
        for sql in ["SELECT ", "INSERT INTO", "DELETE FROM", "UPDATE "] {
            assert!(!line.contains(sql), "an SQL statement in the log: {line}");
        }
        if level != "WARN" {
            let names = targets(line);
            assert!(!names.is_empty(), "no target in {line:?}");
            for name in names {
                assert!(
                    name.starts_with("outbox_"),
                    "a dependency's {level} line ({name}): {line}"
                );
            }
        }
    }
    env.drop_tables().await;
}

#[test]
fn json_logs_are_one_object_per_line_with_level_fields_and_target() {
    outbox_tests::require_broker();
    let url = outbox_tests::sqlite_url();
    let mut args = sqlite_args(&url);
    args.extend(["--brokers".to_owned(), outbox_tests::brokers()]);
    args.extend(["--log-format".to_owned(), "json".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let relay = Relay::start(&args, &[]);
    relay.wait_ready(Duration::from_secs(30));
    let (status, output) = relay.terminate();
    assert_eq!(status.code(), Some(0), "{output}");
    let mut messages = Vec::new();
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let event: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        let level = event["level"].as_str().unwrap_or_else(|| panic!("{line}"));
        let target = event["target"].as_str().unwrap_or_else(|| panic!("{line}"));
        assert!(event["fields"].is_object(), "{line}");
        if level == "INFO" || level == "DEBUG" || level == "TRACE" {
            assert!(
                target.starts_with("outbox_"),
                "a dependency's {level}: {line}"
            );
        }
        assert_ne!(level, "ERROR", "{line}");
        if let Some(message) = event["fields"]["message"].as_str() {
            messages.push(message.to_owned());
        }
    }
    for expected in [
        "connected to the database",
        "connected to the broker",
        "relay running",
        "stopped",
    ] {
        assert!(
            messages.iter().any(|m| m == expected),
            "no {expected:?} in {messages:?}"
        );
    }
}

#[test]
fn an_unknown_log_format_from_the_environment_is_rejected_before_starting() {
    let output = std::process::Command::new(crate::common::BIN)
        .args([
            "--database-url",
            "sqlite://x.db",
            "--brokers",
            "127.0.0.1:1",
        ])
        .env("OUTBOX_LOG_FORMAT", "yaml")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "clap rejects the value");
    assert!(String::from_utf8_lossy(&output.stderr).contains("yaml"));
}
