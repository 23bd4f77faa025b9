//! The multi-step commands: `test` (the CI pipeline), `bench` and `demo`. Each step is
//! printed with its duration; a broker started for the run is stopped again at the end.

use crate::broker_cmd::{broker_version, ensure_broker};
use crate::cli::Args;
use crate::services::{MYSQL_URL, POSTGRES_URL, REDIS_URL, ensure_databases};
use crate::tools::{cargo, ensure_cargo_deny, has_nextest, run_cmd};
use crate::{root, secs};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;
use xtask::broker;

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

/// `cargo xtask demo`: broker, then the orders demo (SQLite unless --database-url is
/// passed after `--`), then the broker is stopped again if this command started it.
pub(crate) fn cmd_demo(args: &Args) -> Result<ExitCode> {
    let root = root();
    println!("cargo xtask demo");
    let mut steps = Steps { total: 2, done: 0 };
    let (brokers, mut started) = steps.run("broker", || ensure_broker(args, &root))?;
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
    if let Some(mut broker) = started.take() {
        broker.stop()?;
        println!("==> stopped the Tansu broker started for the demo");
    }
    result.map(|()| ExitCode::SUCCESS)
}

/// `cargo xtask bench`: databases, broker, the relay binary, then the benchmark program;
/// a broker started here is stopped again, also when the run fails.
pub(crate) fn cmd_bench(args: &Args) -> Result<ExitCode> {
    let t = Instant::now();
    let root = root();
    println!("cargo xtask bench {}", args.bench.join(" "));
    let mut steps = Steps { total: 3, done: 0 };
    steps.run("databases (PostgreSQL, MariaDB, Redis)", ensure_databases)?;
    let (brokers, mut started) = steps.run("broker", || ensure_broker(args, &root))?;
    let version = broker_version(args, started.is_some());
    let outcome = steps.run("benchmark", || {
        run_bench(&root, &brokers, &version, &args.bench, &args.passthrough)
    });
    if let Some(mut b) = started.take() {
        b.stop()?;
        println!("==> stopped the Tansu broker started for this run");
    }
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
            .env("OUTBOX_TEST_POSTGRES_URL", POSTGRES_URL)
            .env("OUTBOX_TEST_MYSQL_URL", MYSQL_URL)
            .env("OUTBOX_TEST_REDIS_URL", REDIS_URL),
    )
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
    let mut steps = Steps { total: 6, done: 0 };

    steps.run("databases (PostgreSQL, MariaDB, Redis)", ensure_databases)?;

    // Held until the end of this function: dropping it stops a broker we started, also
    // when a later step fails and `?` returns early.
    let (brokers, mut started) = steps.run("broker", || ensure_broker(args, &root))?;

    let cargo = cargo();
    // Lint and tests; whatever happens, a broker we started is stopped afterwards.
    let outcome = (|| -> Result<()> {
        if args.no_lint {
            steps.skip("lint", "--no-lint");
        } else {
            steps.run("lint (rustfmt, cargo-deny, clippy)", || {
                run_cmd(
                    Command::new(&cargo)
                        .args(["fmt", "--all", "--check"])
                        .current_dir(&root),
                )?;
                let deny = ensure_cargo_deny(&cargo, &root)?;
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
            })?;
        }

        steps.run("tests", || {
            let mut cmd = Command::new(&cargo);
            if has_nextest(&cargo) {
                cmd.args([
                    "nextest",
                    "run",
                    "--workspace",
                    "--locked",
                    "--no-fail-fast",
                ]);
            } else {
                println!("    cargo-nextest not found: falling back to cargo test");
                cmd.args(["test", "--workspace", "--locked"]);
            }
            cmd.args(&args.passthrough)
                .current_dir(&root)
                .env("OUTBOX_TEST_BROKERS", &brokers)
                .env("OUTBOX_TEST_POSTGRES_URL", POSTGRES_URL)
                .env("OUTBOX_TEST_MYSQL_URL", MYSQL_URL)
                .env("OUTBOX_TEST_REDIS_URL", REDIS_URL);
            if let Some(bin) = broker::installed(&root) {
                cmd.env("OUTBOX_TEST_TANSU_BIN", bin);
            }
            run_cmd(&mut cmd)
        })?;

        // The workspace test build has `otel` on (the tests crate turns it on, and features
        // unify), so the promise "no feature, nothing captured" is checked on a build of
        // outbox-core alone, which resolves without it.
        steps.run("feature off (outbox-core without `otel`)", || {
            let mut cmd = Command::new(&cargo);
            if has_nextest(&cargo) {
                cmd.args(["nextest", "run", "-p", "outbox-core", "--lib", "--locked"])
                    .args(["-E", "test(feature_off)"]);
            } else {
                cmd.args([
                    "test",
                    "-p",
                    "outbox-core",
                    "--lib",
                    "--locked",
                    "feature_off",
                ]);
            }
            run_cmd(cmd.current_dir(&root))
        })?;

        // A smoke run of the benchmark: it must work; no figure is asserted.
        let version = broker_version(args, started.is_some());
        steps.run("bench smoke (cargo xtask bench --quick)", || {
            run_bench(&root, &brokers, &version, &["--quick".to_owned()], &[])
        })
    })();

    if let Some(mut b) = started.take() {
        let ts = Instant::now();
        let pid = b.pid();
        b.stop()?;
        println!(
            "==> stopped the Tansu broker started for this run (pid {pid}, {:.1} s)",
            secs(ts)
        );
    }
    outcome?;
    println!("==> cargo xtask test: all steps passed in {:.1} s", secs(t));
    Ok(ExitCode::SUCCESS)
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
