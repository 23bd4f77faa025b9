//! The demo binary as a new user runs it: default SQLite file, a real (private) Tansu
//! broker, twice in a row (the second run finds the topic already there). Its output
//! must hold no warning or error line, and its counts must add up both times. A third
//! run with `--poison` shows a corrupt row parked, repaired and requeued.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn run_demo(brokers: &str, extra: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_orders-demo"))
        .args(["--brokers", brokers, "--orders", "300", "--rate", "500"])
        .args(extra)
        // What a user's terminal has: no RUST_LOG, so the demo's default filter.
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "the demo failed:\n{text}");
    text
}

fn assert_quiet(run: &str, text: &str) {
    let noisy: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    assert!(
        noisy.is_empty(),
        "{run}: the demo printed warnings or errors:\n{}",
        noisy.join("\n")
    );
    assert!(
        text.contains("every committed order was published exactly once"),
        "{run}: the counts do not add up:\n{text}"
    );
}

#[test]
fn the_demo_prints_no_warning_or_error_on_a_fresh_or_existing_topic() {
    let broker = outbox_tests::private_broker();
    let brokers = broker.addr();
    let first = run_demo(&brokers, &[]);
    assert_quiet("first run (creates the topic)", &first);
    let second = run_demo(&brokers, &[]);
    assert_quiet("second run (the topic exists)", &second);
    // `--poison`: the corrupt row is parked (its WARN lines are the point of this run),
    // then repaired and requeued, and its customer's orders arrive in commit order.
    let poisoned = run_demo(&brokers, &["--poison"]);
    for expected in [
        "row parked: it cannot be published",
        "parked     row",
        "requeued   ",
        "arrived in commit order, the repaired row first",
        "every committed order was published exactly once",
    ] {
        assert!(
            poisoned.contains(expected),
            "--poison run: missing {expected:?}:\n{poisoned}"
        );
    }
    assert!(
        !poisoned.contains("ERROR"),
        "--poison run printed an error:\n{poisoned}"
    );
}
