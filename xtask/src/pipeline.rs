//! The multi-step commands: `test` (the CI pipeline), `bench` and `demo`. Each step is
//! printed with its duration; a broker started for the run is stopped again at the end.

use crate::broker_cmd::{broker_version, ensure_broker, kind, stop_started};
use crate::cli::Args;
use crate::services::{MYSQL_URL, POSTGRES_URL, REDIS_URL, ensure_databases};
use crate::tools::{CARGO_DENY, NEXTEST, cargo, run_cmd};
use crate::workspace::{root, secs};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;
use xtask::broker::{self, BrokerKind};

pub(crate) struct Steps {
    pub(crate) total: usize,
    pub(crate) done: usize,
}

impl Steps {
    pub(crate) fn run<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.done += 1;
        println!("==> [{}/{}] {name}", self.done, self.total);
        let t = Instant::now();
        let result = f();
        match &result {
            Ok(_) => println!(
                "==> [{}/{}] {name}: ok ({:.1} s)",
                self.done,
                self.total,
                secs(t)
            ),
            Err(_) => println!(
                "==> [{}/{}] {name}: FAILED ({:.1} s)",
                self.done,
                self.total,
                secs(t)
            ),
        }
        result.with_context(|| format!("step {name:?} failed"))
    }

    pub(crate) fn skip(&mut self, name: &str, why: &str) {
        self.done += 1;
        println!("==> [{}/{}] {name}: skipped ({why})", self.done, self.total);
    }
}

/// `cargo xtask demo`: broker (Apache Kafka; Tansu when no Java 17+ is found, said in
/// one line), then the orders demo (SQLite unless --database-url is passed after `--`),
/// then the broker is stopped again if this command started it.
pub(crate) fn cmd_demo(args: &Args) -> Result<ExitCode> {
    let root = root();
    println!("cargo xtask demo");
    let mut kind = kind(args)?;
    if kind == BrokerKind::Kafka
        && args.brokers.is_none()
        && let Err(why) = broker::java_feature_version()
    {
        println!(
            "==> {why:#}; running the demo on {} instead",
            BrokerKind::Tansu.label()
        );
        kind = BrokerKind::Tansu;
    }
    let mut steps = Steps { total: 2, done: 0 };
    let (brokers, started) = steps.run(&format!("broker ({})", kind.label()), || {
        ensure_broker(args, kind)
    })?;
    let result = steps.run("demo", || {
        run_cmd(
            Command::new(cargo())
                .args([
                    "run",
                    "--quiet",
                    "--locked",
                    "-p",
                    "orders-demo",
                    "--",
                    "--brokers",
                    &brokers,
                ])
                .args(&args.passthrough)
                .current_dir(&root),
        )
    });
    stop_started(started)?;
    result.map(|()| ExitCode::SUCCESS)
}

/// `cargo xtask bench`: databases, broker (Apache Kafka unless `--broker tansu`), the
/// relay binary, then the benchmark program; a broker started here is stopped again, also
/// when the run fails.
pub(crate) fn cmd_bench(args: &Args) -> Result<ExitCode> {
    let t = Instant::now();
    let root = root();
    println!("cargo xtask bench {}", args.bench.join(" "));
    let kind = kind(args)?;
    let mut steps = Steps { total: 3, done: 0 };
    steps.run("databases (PostgreSQL, MariaDB, Redis)", ensure_databases)?;
    let (brokers, started) = steps.run(&format!("broker ({})", kind.label()), || {
        ensure_broker(args, kind)
    })?;
    let version = broker_version(args, kind);
    let outcome = steps.run("benchmark", || {
        run_bench(
            &root,
            &brokers,
            kind,
            &version,
            &args.bench,
            &args.passthrough,
        )
    });
    stop_started(started)?;
    outcome?;
    println!("==> cargo xtask bench: done in {:.1} s", secs(t));
    Ok(ExitCode::SUCCESS)
}

/// The cargo profile of a benchmark run: `--quick` (the CI smoke) stays on the tests'
/// `dev` profile so that CI compiles nothing twice; a full run uses the optimized
/// `bench-opt` profile (workspace Cargo.toml).
pub(crate) fn bench_profile(bench_args: &[String]) -> &'static str {
    if bench_args.iter().any(|a| a == "--quick") {
        "dev"
    } else {
        "bench-opt"
    }
}

/// Where cargo puts a profile's binaries under the target directory.
fn profile_dir(profile: &str) -> &str {
    if profile == "dev" { "debug" } else { profile }
}

/// Builds the relay binary (and, on a full run, the orders demo), then runs the benchmark
/// program, all in the profile [`bench_profile`] picks.
pub(crate) fn run_bench(
    root: &Path,
    brokers: &str,
    kind: BrokerKind,
    broker_version: &str,
    bench_args: &[String],
    extra: &[String],
) -> Result<()> {
    let cargo = cargo();
    let profile = bench_profile(bench_args);
    // The CI smoke builds only what it built before (the relay): building the demo as
    // well would compile the dependencies once more with another feature set. Without
    // the demo binary the sqlite-demo section reports itself as not run.
    let full = profile != "dev";
    let mut packages = vec!["-p", "outbox-relay"];
    if full {
        packages.extend(["-p", "orders-demo"]);
    }
    run_cmd(
        Command::new(&cargo)
            .args(["build", "--locked", "--profile", profile])
            .args(&packages)
            .current_dir(root),
    )?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let bin_dir = target.join(profile_dir(profile));
    let relay_bin = bin_dir.join("outbox-relay");
    let demo_bin = if full {
        bin_dir.join("orders-demo")
    } else {
        PathBuf::new()
    };
    for bin in [&relay_bin, &demo_bin] {
        if !bin.as_os_str().is_empty() && !bin.exists() {
            bail!("the binary is not at {}", bin.display());
        }
    }
    let json = target.join("bench").join("latest.json");
    run_cmd(
        Command::new(&cargo)
            .args([
                "bench",
                "--locked",
                "--profile",
                profile,
                "-p",
                "outbox-tests",
                "--bench",
                "relay",
                "--",
                "--brokers",
                brokers,
            ])
            .arg("--json")
            .arg(&json)
            .args(bench_args)
            .args(extra)
            .current_dir(root)
            .env("OUTBOX_BENCH_PROFILE", profile)
            .env("OUTBOX_BENCH_RELAY_BIN", &relay_bin)
            .env("OUTBOX_BENCH_DEMO_BIN", &demo_bin)
            .env("OUTBOX_BENCH_BROKER_VERSION", broker_version)
            .env("OUTBOX_BENCH_BROKER_KIND", kind.name())
            .env("OUTBOX_TEST_POSTGRES_URL", POSTGRES_URL)
            .env("OUTBOX_TEST_MYSQL_URL", MYSQL_URL)
            .env("OUTBOX_TEST_REDIS_URL", REDIS_URL),
    )
}

/// The environment every test run gets: the databases' URLs and the brokers.
fn test_env(cmd: &mut Command, brokers: &str, kind: BrokerKind, tansu: &str) {
    cmd.env("OUTBOX_TEST_BROKERS", brokers)
        .env("OUTBOX_TEST_BROKER_KIND", kind.name())
        .env("OUTBOX_TEST_TANSU_BROKERS", tansu)
        .env("OUTBOX_TEST_POSTGRES_URL", POSTGRES_URL)
        .env("OUTBOX_TEST_MYSQL_URL", MYSQL_URL)
        .env("OUTBOX_TEST_REDIS_URL", REDIS_URL);
}

pub(crate) fn cmd_test(args: &Args) -> Result<ExitCode> {
    let t = Instant::now();
    let root = root();
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    println!(
        "cargo xtask test (workspace {}{})",
        root.display(),
        if in_ci { ", CI=true" } else { "" }
    );
    let cargo = cargo();
    let mut steps = Steps { total: 8, done: 0 };

    let (nextest, deny) = steps.run(
        "provision (PostgreSQL, MariaDB, Redis, cargo-nextest, cargo-deny, Apache Kafka, Tansu)",
        || {
            ensure_databases()?;
            let nextest = NEXTEST.ensure(&cargo)?;
            let deny = if args.no_lint {
                None
            } else {
                Some(CARGO_DENY.ensure(&cargo)?)
            };
            let kafka = broker::ensure_kafka_installed()?;
            println!(
                "    {} in {}",
                BrokerKind::Kafka.label(),
                kafka.dir().display()
            );
            let tansu = broker::ensure_installed(&root)?;
            println!("    {} at {}", BrokerKind::Tansu.label(), tansu.display());
            Ok((nextest, deny))
        },
    )?;

    // Held until the end of this function and stopped there, also when a step fails.
    let (brokers, kafka) = steps.run("broker (Apache Kafka)", || {
        ensure_broker(args, BrokerKind::Kafka)
    })?;
    let kafka_guard = StartedBroker(kafka);
    let tansu_args = Args::default();
    let (tansu, tansu_broker) = steps.run("second broker (Tansu)", || {
        ensure_broker(&tansu_args, BrokerKind::Tansu)
    })?;
    let tansu_guard = StartedBroker(tansu_broker);

    let nextest_run = |extra: &[&str]| {
        let mut cmd = Command::new(&nextest);
        cmd.args([
            "nextest",
            "run",
            "--workspace",
            "--locked",
            "--no-fail-fast",
        ])
        .args(extra)
        .current_dir(&root);
        cmd
    };
    let outcome = (|| -> Result<()> {
        match &deny {
            None => steps.skip("lint", "--no-lint"),
            Some(deny) => steps.run("lint (shape, rustfmt, cargo-deny, clippy)", || {
                crate::arch::check(&root)?;
                run_cmd(
                    Command::new(&cargo)
                        .args(["fmt", "--all", "--check"])
                        .current_dir(&root),
                )?;
                run_cmd(
                    Command::new(deny)
                        .args(["deny", "check", "licenses", "bans", "sources"])
                        .current_dir(&root),
                )?;
                run_cmd(
                    Command::new(&cargo)
                        .args([
                            "clippy",
                            "--workspace",
                            "--all-targets",
                            "--locked",
                            "--",
                            "-D",
                            "warnings",
                        ])
                        .current_dir(&root),
                )
            })?,
        }

        steps.run("tests (on Apache Kafka)", || {
            let mut cmd = nextest_run(&[]);
            cmd.args(&args.passthrough);
            test_env(&mut cmd, &brokers, BrokerKind::Kafka, &tansu);
            run_cmd(&mut cmd)
        })?;

        // The publisher's broker suite once more on the second kind, from the same test
        // build (a filter, not `-p`, so that features and so the build stay the same).
        steps.run("publisher broker suite on Tansu", || {
            let mut cmd = nextest_run(&["-E", "package(outbox-kafka) & binary(broker)"]);
            test_env(&mut cmd, &tansu, BrokerKind::Tansu, &tansu);
            run_cmd(&mut cmd)
        })?;

        // The workspace test build has every feature on (the tests crate turns on `otel`
        // and every backend, and features unify), so what a build without a feature does
        // is checked on another build: outbox-core without `otel` ("no feature, nothing
        // captured"), outbox-kafka with only `gzip` (another codec is a typed error) and
        // outbox-seaorm with only `sqlite` (another backend's URL is a typed error). One
        // build for the three: together they resolve every dependency with the workspace
        // build's features, so only they, the tests crate and sea-orm-migration compile
        // again (each crate alone would rebuild tokio, sqlx and sea-orm). One run per
        // crate, so that each must find a `feature_off` test (nextest fails on none).
        let feature_off_build = [
            "-p",
            "outbox-core",
            "-p",
            "outbox-kafka",
            "-p",
            "outbox-seaorm",
            "--no-default-features",
            "--features",
            "outbox-core/default,outbox-kafka/gzip,outbox-seaorm/sqlite",
        ];
        steps.run(
            "feature off (core: no otel; kafka: gzip only; seaorm: sqlite only)",
            || {
                for package in ["outbox-core", "outbox-kafka", "outbox-seaorm"] {
                    let mut cmd = Command::new(&nextest);
                    cmd.args(["nextest", "run", "--lib", "--locked"])
                        .args(feature_off_build)
                        .args(["-E", &format!("package({package}) & test(feature_off)")]);
                    run_cmd(cmd.current_dir(&root))?;
                }
                Ok(())
            },
        )?;

        // A smoke run of the benchmark: it must work; no figure is asserted.
        let version = broker_version(args, BrokerKind::Kafka);
        steps.run("bench smoke (cargo xtask bench --quick)", || {
            run_bench(
                &root,
                &brokers,
                BrokerKind::Kafka,
                &version,
                &["--quick".to_owned()],
                &[],
            )
        })
    })();

    tansu_guard.stop()?;
    kafka_guard.stop()?;
    outcome?;
    println!("==> cargo xtask test: all steps passed in {:.1} s", secs(t));
    Ok(ExitCode::SUCCESS)
}

/// A broker the pipeline started: stopped with a message at the end, or by its own drop
/// when a step returns early.
struct StartedBroker(Option<xtask::broker::Broker>);

impl StartedBroker {
    fn stop(mut self) -> Result<()> {
        stop_started(self.0.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_runs_stay_on_the_test_profile_and_full_runs_are_optimized() {
        assert_eq!(bench_profile(&["--quick".to_owned()]), "dev");
        assert_eq!(
            bench_profile(&["--rows".to_owned(), "10".to_owned()]),
            "bench-opt"
        );
        assert_eq!(bench_profile(&[]), "bench-opt");
        assert_eq!(profile_dir("dev"), "debug");
        assert_eq!(profile_dir("bench-opt"), "bench-opt");
    }
}
