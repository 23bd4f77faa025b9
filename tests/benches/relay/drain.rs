//! Section 1: drain throughput of one relay (default options, then the same relay with
//! `max_concurrent_lanes(1)`, on the same rows), the bench process's CPU per 10,000
//! messages, and the two ceilings the relay is measured against: the broker alone (the
//! better of Kafka's own producer tool, [`producer_perf`], and plain rskafka produce,
//! [`ceilings::produce`]) and the database alone (plain SQL, [`ceilings::fetch_delete`]),
//! each at its best concurrency; the shared-machine ceiling 1 / (1/broker + 1/database)
//! (all three share the same cores); and a hand-written concurrent relay on the same rows
//! ([`handwritten`]).

use std::time::{Duration, Instant};

use outbox_core::driver::Relay;
use outbox_seaorm::{OutboxTables, SeaOrmStore};
use sea_orm::DatabaseConnection;

use crate::ack::{Acks, Recording};
use crate::env::{BATCH, Env, VALUE_SIZE, wait_until};
use crate::report::{Report, int, ms};
use crate::timing::{Timed, Timings, process_cpu};
use crate::waits::{Sampler, report_table_scans};
use crate::{Shared, ceilings, data, handwritten, producer_perf};

const SECTION: &str = "1 drain";

/// One relay drain of the shared rows: its rate and the bench process's CPU time.
struct Drained {
    rate: f64,
    seconds: f64,
    cpu: Option<Duration>,
}

pub async fn run(env: &Env, shared: &mut Shared, report: &mut Report) {
    let n = env.args.rows;
    println!("\n== {SECTION}: {n} rows of {VALUE_SIZE} B, batch {BATCH}, 8 buckets, 8 partitions");
    let db = env.db().await;
    let source = shared.source(env, &db, report).await;

    // The ceilings first: Kafka's producer tool also warms the broker's JIT, which would
    // otherwise bill its compilation to whichever drain ran first.
    // (a) the broker alone: Kafka's own producer tool, and plain rskafka calls.
    let tool = match producer_perf::measure(env, n).await {
        Ok(runs) => {
            for run in &runs {
                report.line(
                    SECTION,
                    &format!("  Kafka's ProducerPerformance, {} (msgs/s)", run.settings),
                    int(run.rate),
                );
            }
            runs.into_iter().map(|r| r.rate).reduce(f64::max)
        }
        Err(why) => {
            report.line(
                SECTION,
                "ceiling (a1) broker: Kafka's ProducerPerformance",
                format!("not run: {why}"),
            );
            None
        }
    };
    if let Some(rate) = tool {
        report.line(
            SECTION,
            "ceiling (a1) broker: Kafka's ProducerPerformance, acks=all, idempotent, best (msgs/s)",
            int(rate),
        );
        report.set(SECTION, "ceiling_producer_perf_msgs_per_s", rate);
    }
    let topic = env.topic().await;
    let elapsed = ceilings::produce(env, &topic, n).await;
    assert_eq!(env.topic_count(&topic).await, n);
    let plain = n as f64 / elapsed.as_secs_f64();
    report.line(
        SECTION,
        "ceiling (a2) broker: rskafka produce, acks=all, 1 task per partition (msgs/s)",
        int(plain),
    );
    report.set(SECTION, "ceiling_produce_msgs_per_s", plain);
    // What the broker can take is the better of the two clients.
    let kafka = tool.map_or(plain, |t| t.max(plain));
    report.line(
        SECTION,
        "ceiling (a) broker: max(a1, a2) (msgs/s)",
        int(kafka),
    );
    report.set(SECTION, "ceiling_broker_msgs_per_s", kafka);

    // (b) the database alone.
    let tables = env.tables(&db).await;
    data::copy(&db, &source, &tables, "unused", None).await;
    let elapsed = ceilings::fetch_delete(env, &tables, 8).await;
    assert!(data::is_empty(&db, &tables).await);
    env.drop_tables(&db, &tables).await;
    let database = n as f64 / elapsed.as_secs_f64();
    report.line(
        SECTION,
        "ceiling (b) database: plain SQL fetch + delete, 1 connection per bucket (msgs/s)",
        int(database),
    );
    report.set(SECTION, "ceiling_database_msgs_per_s", database);

    // The relay with its default options (max_concurrent_lanes 8), then with one lane.
    let lanes = drain_once(env, &db, &source, n, None, "relay", report).await;
    let one = drain_once(env, &db, &source, n, Some(1), "relay_one_lane", report).await;
    shared.relay_rate = Some(lanes.rate);
    report.set(SECTION, "rows", n);
    report.line(
        SECTION,
        "relay drain, default options (msgs/s)",
        int(lanes.rate),
    );
    report.line(
        SECTION,
        "relay drain, max_concurrent_lanes(1) (msgs/s)",
        int(one.rate),
    );
    let lane_ratio = lanes.rate / one.rate;
    report.line(
        SECTION,
        "relay default / one lane",
        format!("{lane_ratio:.2}"),
    );
    report.set(SECTION, "relay_over_one_lane", lane_ratio);
    report.target(
        "relay / same relay with one lane",
        ">= 4",
        format!("{lane_ratio:.2}"),
        Some(lane_ratio >= 4.0),
    );
    for (who, d) in [("default", &lanes), ("one lane", &one)] {
        if let Some(cpu) = d.cpu {
            // The relay, the database client (sqlx) and the Kafka client all run in this
            // process: this is an upper bound on the relay's own CPU.
            let per_10k = cpu.as_secs_f64() / n as f64 * 10_000.0;
            report.line(
                SECTION,
                &format!("bench process CPU per 10,000 msgs, relay {who} (relay + DB client + Kafka client)"),
                format!(
                    "{:.0} ms ({:.2} cores busy: {:.1} s CPU in {:.1} s)",
                    per_10k * 1e3,
                    cpu.as_secs_f64() / d.seconds,
                    cpu.as_secs_f64(),
                    d.seconds
                ),
            );
            let key = if who == "default" {
                "relay"
            } else {
                "relay_one_lane"
            };
            report.set(SECTION, &format!("{key}_cpu_ms_per_10k"), per_10k * 1e3);
            report.set(
                SECTION,
                &format!("{key}_process_cpu_cores"),
                cpu.as_secs_f64() / d.seconds,
            );
        }
    }

    // (c) the hand-written concurrent relay on the same rows: no project store or
    // publisher code (see `handwritten`).
    let tables = env.tables(&db).await;
    let topic = env.topic().await;
    data::copy(&db, &source, &tables, &topic, None).await;
    let sampler = Sampler::start(env, None).await;
    let elapsed = handwritten::drain(env, &tables, &topic, 8).await;
    sampler.finish(report, SECTION, "handwritten").await;
    report_table_scans(env, &db, tables.messages(), report, SECTION, "handwritten").await;
    assert!(data::is_empty(&db, &tables).await);
    assert_eq!(env.topic_count(&topic).await, n);
    env.drop_tables(&db, &tables).await;
    let by_hand = n as f64 / elapsed.as_secs_f64();
    report.line(
        SECTION,
        "baseline: hand-written relay, 8 tasks (fetch by bucket, produce, await acks, delete by ids) (msgs/s)",
        int(by_hand),
    );
    report.set(SECTION, "handwritten_msgs_per_s", by_hand);
    let over_hand = lanes.rate / by_hand;
    report.line(SECTION, "relay / hand-written", format!("{over_hand:.2}"));
    report.set(SECTION, "relay_over_handwritten", over_hand);
    report.target(
        "relay / hand-written concurrent relay",
        ">= 1.5",
        format!("{over_hand:.2}"),
        Some(over_hand >= 1.5),
    );

    // Database, broker and relay share the machine's cores, so a message costs the
    // database's time and the broker's time: the shared-machine ceiling.
    let shared_ceiling = 1.0 / (1.0 / database + 1.0 / kafka);
    report.line(
        SECTION,
        "ceiling (d) shared machine: 1 / (1/a + 1/b) (msgs/s)",
        int(shared_ceiling),
    );
    report.set(SECTION, "ceiling_shared_msgs_per_s", shared_ceiling);
    let over_shared = lanes.rate / shared_ceiling;
    report.line(SECTION, "relay / d", format!("{over_shared:.2}"));
    report.set(SECTION, "relay_over_shared_ceiling", over_shared);
    report.target(
        "relay / shared-machine ceiling",
        ">= 0.8",
        format!("{over_shared:.2}"),
        Some(over_shared >= 0.8),
    );

    let lower = if kafka <= database {
        "broker"
    } else {
        "database"
    };
    let ratio = lanes.rate / kafka.min(database);
    report.line(
        SECTION,
        &format!("relay / min(a, b) (the lower is the {lower})"),
        format!("{ratio:.2}"),
    );
    report.set(SECTION, "lower_ceiling", lower);
    report.set(SECTION, "relay_over_min_ceiling", ratio);
    report.target(
        "relay / min(ceilings)",
        ">= 0.8",
        format!("{ratio:.2} ({lower})"),
        Some(ratio >= 0.8),
    );
}

/// Copies the shared rows into fresh tables and a fresh topic, drains them with one relay
/// (`lanes` = `max_concurrent_lanes`, default when `None`) and reports its breakdown.
async fn drain_once(
    env: &Env,
    db: &DatabaseConnection,
    source: &OutboxTables,
    n: u64,
    lanes: Option<usize>,
    who: &str,
    report: &mut Report,
) -> Drained {
    let tables = env.tables(db).await;
    let topic = env.topic().await;
    data::copy(db, source, &tables, &topic, None).await;
    let timings = Timings::default();
    let cpu_before = process_cpu();
    let mut sampler = None;
    let drained = relay_drain(env, db, &tables, n, 8, lanes, &timings, Some(&mut sampler)).await;
    let elapsed = drained.elapsed;
    let cpu = process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    if let Some(sampler) = sampler {
        sampler.finish(report, SECTION, who).await;
        report_table_scans(env, db, tables.messages(), report, SECTION, who).await;
    }
    let in_topic = env.topic_count(&topic).await;
    assert_eq!(in_topic, n, "the topic must hold every drained row");
    env.drop_tables(db, &tables).await;
    let rate = n as f64 / elapsed.as_secs_f64();
    report.set(SECTION, &format!("{who}_seconds"), elapsed.as_secs_f64());
    report.set(SECTION, &format!("{who}_msgs_per_s"), rate);
    breakdown(report, SECTION, who, &timings);
    report.line(
        SECTION,
        &format!("{who}: produce requests, partition batches they carried"),
        format!("{}, {}", drained.produce_requests, drained.produce_batches),
    );
    Drained {
        rate,
        seconds: elapsed.as_secs_f64(),
        cpu,
    }
}

/// Starts one relay on `tables` (publisher connected first), returns the time from its
/// start until `n` rows were acknowledged and the table is empty, and stops it. With
/// `sampled`, a [`Sampler`] watching the store's pool is started into it beside the relay.
#[allow(clippy::too_many_arguments)]
pub async fn relay_drain(
    env: &Env,
    db: &DatabaseConnection,
    tables: &OutboxTables,
    n: u64,
    bucket_count: u32,
    lanes: Option<usize>,
    timings: &Timings,
    sampled: Option<&mut Option<Sampler>>,
) -> RelayDrain {
    let acks = Acks::default();
    let schema = env.schema(tables, bucket_count);
    let store_db = env.db().await;
    if let Some(slot) = sampled {
        *slot = Some(Sampler::start(env, Some(&store_db)).await);
    }
    let store = Timed::new(
        SeaOrmStore::new(store_db, schema.clone()).unwrap(),
        timings.clone(),
    );
    let kafka = env.publisher().await;
    let publisher = Recording::new(Timed::new(kafka.clone(), timings.clone()), acks.clone());
    let mut options = env.relay_options(&schema);
    if let Some(lanes) = lanes {
        options = options.max_concurrent_lanes(lanes);
    }
    let options = options.build().unwrap();
    let started = Instant::now();
    let relay = Relay::spawn(store, publisher, options).unwrap();
    acks.wait_for(n, drain_timeout(n)).await;
    wait_until(
        "the drained table to be empty",
        Duration::from_secs(30),
        Duration::from_millis(2),
        || data::is_empty(db, tables),
    )
    .await;
    let elapsed = started.elapsed();
    relay.stop(Duration::from_secs(10)).await.unwrap();
    RelayDrain {
        elapsed,
        produce_requests: kafka.produce_requests(),
        produce_batches: kafka.produce_batches(),
    }
}

/// What [`relay_drain`] measured.
pub struct RelayDrain {
    /// From spawning the relay to the table found empty.
    pub elapsed: Duration,
    /// Produce requests the relay's publisher sent.
    pub produce_requests: u64,
    /// Partition batches those requests carried.
    pub produce_batches: u64,
}

/// Generous: nobody drains slower than 200 rows per second plus a minute.
pub fn drain_timeout(n: u64) -> Duration {
    Duration::from_secs(60 + n / 200)
}

/// One table line per relay operation: calls, mean and p50 / p99 duration.
pub fn breakdown(report: &mut Report, section: &str, who: &str, timings: &Timings) {
    for (op, calls, mean, p50, p99) in timings.summary() {
        if ![
            "fetch",
            "fetch_from_head",
            "fetch_after_cursor",
            "fetch_cursor_refused",
            "publish",
            "delete",
            "probe",
        ]
        .contains(&op.as_str())
        {
            continue;
        }
        report.line(
            section,
            &format!("{who} {op}: calls, mean, p50 / p99"),
            format!("{calls}, {}, {} / {}", ms(mean), ms(p50), ms(p99)),
        );
        report.set(section, &format!("{who}_{op}_calls"), calls);
        report.set(
            section,
            &format!("{who}_{op}_mean_ms"),
            mean.as_secs_f64() * 1e3,
        );
        report.set(
            section,
            &format!("{who}_{op}_p50_ms"),
            p50.as_secs_f64() * 1e3,
        );
        report.set(
            section,
            &format!("{who}_{op}_p99_ms"),
            p99.as_secs_f64() * 1e3,
        );
    }
}
