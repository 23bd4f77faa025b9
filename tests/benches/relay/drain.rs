//! Section 1: drain throughput of one relay, and the two ceilings it is measured
//! against: the broker alone (plain rskafka produce) and the database alone (fetch +
//! delete through the store), each with the same records in the same batch size, one
//! request in flight, as the relay works.

use std::time::{Duration, Instant};

use outbox_core::driver::Relay;
use outbox_seaorm::{OutboxTables, SeaOrmStore};
use sea_orm::DatabaseConnection;

use crate::ack::{Acks, Recording};
use crate::env::{BATCH, Env, VALUE_SIZE, wait_until};
use crate::report::{Report, int, ms};
use crate::timing::{Timed, Timings, process_cpu};
use crate::{Shared, ceilings, data};

const SECTION: &str = "1 drain";

pub async fn run(env: &Env, shared: &mut Shared, report: &mut Report) {
    let n = env.args.rows;
    println!("\n== {SECTION}: {n} rows of {VALUE_SIZE} B, batch {BATCH}, 8 buckets, 8 partitions");
    let db = env.db().await;
    let source = shared.source(env, &db, report).await;

    // The relay.
    let tables = env.tables(&db).await;
    let topic = env.topic().await;
    data::copy(&db, &source, &tables, &topic, None).await;
    let timings = Timings::default();
    let cpu_before = process_cpu();
    let elapsed = relay_drain(env, &db, &tables, n, 8, &timings).await;
    let cpu = process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let in_topic = env.topic_count(&topic).await;
    assert_eq!(in_topic, n, "the topic must hold every drained row");
    env.drop_tables(&db, &tables).await;
    let relay = n as f64 / elapsed.as_secs_f64();
    shared.relay_rate = Some(relay);
    report.line(SECTION, "relay drain (msgs/s)", int(relay));
    report.set(SECTION, "rows", n);
    report.set(SECTION, "relay_seconds", elapsed.as_secs_f64());
    report.set(SECTION, "relay_msgs_per_s", relay);
    breakdown(report, SECTION, "relay", &timings);
    if let Some(cpu) = cpu {
        // The relay, the database client and the Kafka client all run in this process.
        let share = cpu.as_secs_f64() / elapsed.as_secs_f64();
        report.line(
            SECTION,
            "bench process CPU during the relay drain (cores busy)",
            format!(
                "{share:.2} ({:.1} s CPU in {:.1} s)",
                cpu.as_secs_f64(),
                elapsed.as_secs_f64()
            ),
        );
        report.set(SECTION, "relay_process_cpu_cores", share);
    }

    // (a) the broker alone.
    let topic = env.topic().await;
    let elapsed = ceilings::produce(env, &topic, n).await;
    assert_eq!(env.topic_count(&topic).await, n);
    let kafka = n as f64 / elapsed.as_secs_f64();
    report.line(
        SECTION,
        "ceiling (a) rskafka produce alone (msgs/s)",
        int(kafka),
    );
    report.set(SECTION, "ceiling_produce_msgs_per_s", kafka);

    // (b) the database alone.
    let tables = env.tables(&db).await;
    data::copy(&db, &source, &tables, "unused", None).await;
    let elapsed = ceilings::fetch_delete(env, &tables, 8).await;
    assert!(data::is_empty(&db, &tables).await);
    env.drop_tables(&db, &tables).await;
    let database = n as f64 / elapsed.as_secs_f64();
    report.line(
        SECTION,
        "ceiling (b) fetch + delete alone (msgs/s)",
        int(database),
    );
    report.set(SECTION, "ceiling_database_msgs_per_s", database);

    let ratio = relay / kafka.min(database);
    // Both halves run one after the other in the relay, so the time per row adds up:
    // 1 / (1/a + 1/b) is what a strictly sequential fetch-publish-delete loop can reach.
    let serial = 1.0 / (1.0 / kafka + 1.0 / database);
    report.line(SECTION, "relay / min(a, b)", format!("{ratio:.2}"));
    report.line(
        SECTION,
        "relay / serial bound 1/(1/a + 1/b)",
        format!("{:.2}", relay / serial),
    );
    report.set(SECTION, "relay_over_min_ceiling", ratio);
    report.set(SECTION, "serial_bound_msgs_per_s", serial);
    report.set(SECTION, "relay_over_serial_bound", relay / serial);
    report.target(
        "relay / min(ceilings)",
        ">= 0.8",
        format!("{ratio:.2}"),
        Some(ratio >= 0.8),
    );
}

/// Starts one relay on `tables` (publisher connected first), returns the time from its
/// start until `n` rows were acknowledged and the table is empty, and stops it.
pub async fn relay_drain(
    env: &Env,
    db: &DatabaseConnection,
    tables: &OutboxTables,
    n: u64,
    bucket_count: u32,
    timings: &Timings,
) -> Duration {
    let acks = Acks::default();
    let schema = env.schema(tables, bucket_count);
    let store = Timed::new(
        SeaOrmStore::new(env.db().await, schema.clone()).unwrap(),
        timings.clone(),
    );
    let publisher = Recording::new(
        Timed::new(env.publisher().await, timings.clone()),
        acks.clone(),
    );
    let options = env.relay_options(&schema).build().unwrap();
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
    elapsed
}

/// Generous: nobody drains slower than 200 rows per second plus a minute.
pub fn drain_timeout(n: u64) -> Duration {
    Duration::from_secs(60 + n / 200)
}

/// One table line per relay operation: calls, mean and p50 / p99 duration.
pub fn breakdown(report: &mut Report, section: &str, who: &str, timings: &Timings) {
    for (op, calls, mean, p50, p99) in timings.summary() {
        if !["fetch", "publish", "delete", "probe"].contains(&op.as_str()) {
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
