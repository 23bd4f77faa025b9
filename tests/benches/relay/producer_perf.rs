//! Ceiling (a) of section 1, measured by Apache Kafka's own producer performance tool
//! (`org.apache.kafka.tools.ProducerPerformance`, from the broker's jars): the Java
//! producer with acks=all and idempotence on, 1 KiB records, keyed, no compression, over a
//! few batch/linger settings; the best steady-state rate is the broker's ceiling. None of
//! our code is on this path, and the Java client is the one Kafka's own authors tune.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::env::{Env, VALUE_SIZE};

/// One run of the tool: the producer settings it was given and its steady-state rate.
pub struct ToolRun {
    pub settings: String,
    pub rate: f64,
}

/// Producer settings tried (each a run on a topic of its own). A quick run tries only the
/// one that was best on this machine (large batches, a short linger).
fn settings(quick: bool) -> &'static [&'static [&'static str]] {
    const ALL: &[&[&str]] = &[
        &["batch.size=16384", "linger.ms=5"],
        &["batch.size=524288", "linger.ms=5"],
        &["batch.size=524288", "linger.ms=20"],
    ];
    if quick { &ALL[1..2] } else { ALL }
}

/// The longest one run may take: `n` records at a rate far below any broker's (500/s),
/// plus the JVM's start. A broker that never answers the Java producer fails the step
/// instead of hanging the bench.
fn deadline(n: u64) -> Duration {
    Duration::from_secs(60 + n / 500)
}

/// Runs the tool once per setting with `n` records each; the records of each run are
/// counted on the broker before its rate is taken. `Err` says why it cannot run here (no
/// Kafka jars, no Java, a broker the Java producer cannot use); a run that fails panics,
/// as every other failed step of the bench.
pub async fn measure(env: &Env, n: u64) -> Result<Vec<ToolRun>, String> {
    // Measured on 2026-12-06: against Tansu 0.6 Kafka 4.4's idempotent Java producer
    // never sends a record; it reconnects about once a second, forever, and Tansu logs
    // `UnexpectedEof` for each connection. The ceiling there is plain rskafka produce.
    if broker_version().starts_with("Tansu") {
        return Err(
            "Tansu 0.6 does not serve Kafka 4.4's idempotent Java producer \
                    (it reconnects forever without sending a record)"
                .into(),
        );
    }
    let home = xtask::broker::kafka_installed()
        .ok_or("Kafka's jars are not installed (cargo xtask broker start installs them)")?;
    xtask::broker::java_feature_version().map_err(|e| format!("{e:#}"))?;
    let mut runs = Vec::new();
    for props in settings(env.args.quick) {
        let topic = env.topic().await;
        let warmup = n / 10;
        let mut cmd = home.java("org.apache.kafka.tools.ProducerPerformance");
        cmd.args(["--bootstrap-server", &env.brokers, "--topic", &topic])
            .args(["--num-records", &n.to_string()])
            .args(["--record-size", &VALUE_SIZE.to_string()])
            .args(["--throughput", "-1"])
            .args(["--key-distribution", "range", "--record-key-range", "10000"])
            .args(["--warmup-records", &warmup.to_string()])
            .args(["--command-property", "acks=all", "enable.idempotence=true"])
            .args([
                "compression.type=none",
                "max.in.flight.requests.per.connection=5",
            ])
            .args(props.iter())
            .stdin(Stdio::null());
        let limit = deadline(n);
        let out = run_until(cmd, limit)
            .await
            .unwrap_or_else(|e| panic!("ProducerPerformance: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            panic!(
                "ProducerPerformance exited with {}: {} | {}",
                out.status,
                stdout.lines().rev().take(5).collect::<Vec<_>>().join(" | "),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
        let rate = steady_rate(&stdout, warmup > 0)
            .unwrap_or_else(|| panic!("no rate in ProducerPerformance's output: {stdout}"));
        let on_broker = env.topic_count(&topic).await;
        assert_eq!(
            on_broker, n,
            "ProducerPerformance reported {n} records sent; the broker holds {on_broker}"
        );
        runs.push(ToolRun {
            settings: props.join(" "),
            rate,
        });
    }
    Ok(runs)
}

/// The broker's name and version as `cargo xtask bench` passes it ("Apache Kafka 4.4.0",
/// "Tansu 0.6.0"); empty for an external broker.
fn broker_version() -> String {
    std::env::var("OUTBOX_BENCH_BROKER_VERSION").unwrap_or_default()
}

/// Runs `cmd` to its end and collects its output; kills it once `limit` has passed.
async fn run_until(cmd: Command, limit: Duration) -> Result<Output, String> {
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    match tokio::time::timeout(limit, cmd.output()).await {
        Ok(out) => out.map_err(|e| format!("running java: {e}")),
        Err(_) => Err(format!(
            "no end after {} s (killed); the broker does not serve Kafka's Java producer",
            limit.as_secs()
        )),
    }
}

/// The records/sec of the tool's summary: the steady-state line when there was a warmup
/// (`180000 steady state records sent, 73319.75 records/sec (…)`), else the total line
/// (`200000 records sent, 62441.46 records/sec (…)`). A change of format fails the run
/// (the bench smoke of `cargo xtask test` runs this), never a silent zero.
fn steady_rate(stdout: &str, warmup: bool) -> Option<f64> {
    let line = stdout.lines().rev().find(|l| {
        l.contains(" records/sec ") && (!warmup || l.contains(" steady state records sent"))
    })?;
    let (before, _) = line.split_once(" records/sec")?;
    before.rsplit(", ").next()?.trim().parse().ok()
}
