//! Section "sqlite-demo": the orders demo (`examples/orders`) on SQLite at its default
//! rate, run as the binary xtask built (`OUTBOX_BENCH_DEMO_BIN`); its summary's
//! commit-to-consumer p50 / p99 are read from its output.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use crate::env::Env;
use crate::report::Report;

const SECTION: &str = "sqlite-demo";

pub async fn run(env: &Env, report: &mut Report) {
    let bin = match std::env::var_os("OUTBOX_BENCH_DEMO_BIN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => {
            println!(
                "\n== {SECTION}: skipped (no demo binary: a full `cargo xtask bench` builds it; --quick does not)"
            );
            report.target(
                "SQLite demo p99 commit-to-consumer",
                "<= 50 ms",
                "(not run: full runs only)".into(),
                None,
            );
            return;
        }
    };
    println!(
        "\n== {SECTION}: {} --brokers {} (defaults: SQLite, 2000 orders at 500/s)",
        bin.display(),
        env.brokers
    );
    let started = Instant::now();
    let brokers = env.brokers.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&bin)
            .args(["--brokers", &brokers, "--print-every", "0"])
            .env("RUST_LOG", "warn")
            .output()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()))
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the demo failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let (p50, p99) = (
        summary_ms(&stdout, "commit-to-consumer p50"),
        summary_ms(&stdout, "commit-to-consumer p99"),
    );
    let (Some(p50), Some(p99)) = (p50, p99) else {
        panic!("the demo's summary has no commit-to-consumer figures:\n{stdout}");
    };
    report.line(
        SECTION,
        &format!(
            "demo commit-to-consumer p50 / p99 (run took {:.1} s)",
            started.elapsed().as_secs_f64()
        ),
        format!("{p50:.1} ms / {p99:.1} ms"),
    );
    report.set(SECTION, "p50_ms", p50);
    report.set(SECTION, "p99_ms", p99);
    report.target(
        "SQLite demo p99 commit-to-consumer (default rate)",
        "<= 50 ms",
        format!("{p99:.1} ms"),
        Some(p99 <= 50.0),
    );
}

/// The milliseconds on the summary line starting with `label` (`  label    12.3 ms`).
fn summary_ms(stdout: &str, label: &str) -> Option<f64> {
    stdout
        .lines()
        .find_map(|line| line.trim_start().strip_prefix(label))
        .and_then(|rest| rest.trim().strip_suffix("ms"))
        .and_then(|v| v.trim().parse().ok())
}
