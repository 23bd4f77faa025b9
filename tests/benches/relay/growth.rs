//! Section 6: does per-batch cost stay flat as the backlog grows? At each backlog size
//! the store's own batch read (`next_batch`, 500 rows), the exact delete
//! (`delete_published`) and the pending probe (`buckets_with_pending`) are timed, then a
//! relay drains a bounded number of rows. Values are 128 B here so that a million rows
//! load in seconds; on PostgreSQL the rows are generated inside the database
//! (`generate_series`, same keys and buckets as everywhere else).

use std::time::{Duration, Instant};

use outbox_core::OutboxStore;
use outbox_core::driver::Relay;
use outbox_seaorm::{OutboxTables, SeaOrmStore};
use outbox_tests::unique_name;
use sea_orm::sea_query::{Alias, ColumnDef, Query, Table};
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};

use crate::ack::{Acks, Recording};
use crate::args::DbKind;
use crate::data;
use crate::env::{BATCH, Env};
use crate::report::{Report, int, ms};

const SECTION: &str = "6 growth";
const VALUE: usize = 128;

pub async fn run(env: &Env, report: &mut Report) {
    let levels: Vec<u64> = match (env.kind(), env.args.quick) {
        (DbKind::Postgres, false) => vec![10_000, 100_000, 1_000_000],
        (DbKind::Postgres, true) => vec![10_000, 100_000],
        (_, false) => vec![10_000, 100_000],
        (_, true) => vec![1_000, 10_000],
    };
    println!(
        "\n== {SECTION}: backlog {levels:?} rows of {VALUE} B; per-batch cost and a bounded relay drain at each"
    );
    let db = env.db().await;
    let tables = env.tables(&db).await;
    let topic = env.topic().await;
    let keys = if env.kind() == DbKind::Postgres {
        Some(keys_table(env, &db).await)
    } else {
        None
    };
    let store = SeaOrmStore::new(env.db().await, tables.clone()).unwrap();
    let mut next_index = 0u64;
    let mut firsts: Option<(Duration, Duration)> = None;
    let mut worst_ratio: f64 = 0.0;
    let mut worst_probe: f64 = 0.0;
    for level in &levels {
        let have = data::count(&db, &tables).await;
        let add = level.saturating_sub(have);
        let started = Instant::now();
        match &keys {
            Some(keys) => generate(&db, &tables, keys, &topic, next_index..next_index + add).await,
            None => {
                let config = env.enqueue_config(8);
                data::fill(
                    &db,
                    &tables,
                    &topic,
                    next_index..next_index + add,
                    VALUE,
                    &config,
                )
                .await;
            }
        }
        next_index += add;
        let fill = started.elapsed();
        if env.kind() == DbKind::Postgres {
            db.execute_unprepared(&format!("ANALYZE \"{}\"", tables.messages()))
                .await
                .unwrap();
        }

        // Per-batch costs, on a quarter of the backlog at most.
        let batches = (level / 4 / BATCH as u64).clamp(2, 20) as usize;
        let mut fetch = Vec::new();
        let mut delete = Vec::new();
        let mut probe = Vec::new();
        let all: Vec<i32> = (0..8).collect();
        for b in 0..batches {
            let bucket = (b % 8) as i32;
            let t = Instant::now();
            store.buckets_with_pending(&all, 8).await.unwrap();
            probe.push(t.elapsed());
            let t = Instant::now();
            let batch = store.next_batch(bucket, None, BATCH).await.unwrap();
            fetch.push(t.elapsed());
            let t = Instant::now();
            store.delete_published(bucket, &batch).await.unwrap();
            delete.push(t.elapsed());
        }
        let (fetch, delete, probe) = (median(fetch), median(delete), median(probe));
        let per_batch = fetch + delete;

        // A relay drains a bounded number of rows; the rate from its first acknowledged
        // batch to the last, so start-up is not counted.
        let bounded = (level / 4)
            .min(env.args.pick(20_000, 5_000))
            .max(BATCH as u64 * 2);
        let rate = relay_rate(env, &tables, bounded).await;

        let (first_batch, first_probe) = *firsts.get_or_insert((per_batch, probe));
        let ratio = per_batch.as_secs_f64() / first_batch.as_secs_f64();
        let probe_ratio = probe.as_secs_f64() / first_probe.as_secs_f64();
        worst_ratio = worst_ratio.max(ratio);
        worst_probe = worst_probe.max(probe_ratio);
        report.line(
            SECTION,
            &format!(
                "backlog {}: fetch / delete / probe p50 (batch {BATCH})",
                int(*level as f64)
            ),
            format!(
                "{} / {} / {} (x{ratio:.2})",
                ms(fetch),
                ms(delete),
                ms(probe)
            ),
        );
        report.line(
            SECTION,
            &format!(
                "backlog {}: relay drain of {} rows (msgs/s)",
                int(*level as f64),
                int(bounded as f64)
            ),
            int(rate),
        );
        let key = format!("backlog_{level}");
        report.set(SECTION, &format!("{key}_fill_seconds"), fill.as_secs_f64());
        report.set(
            SECTION,
            &format!("{key}_fetch_p50_ms"),
            fetch.as_secs_f64() * 1e3,
        );
        report.set(
            SECTION,
            &format!("{key}_delete_p50_ms"),
            delete.as_secs_f64() * 1e3,
        );
        report.set(
            SECTION,
            &format!("{key}_probe_p50_ms"),
            probe.as_secs_f64() * 1e3,
        );
        report.set(SECTION, &format!("{key}_per_batch_over_smallest"), ratio);
        report.set(SECTION, &format!("{key}_probe_over_smallest"), probe_ratio);
        report.set(SECTION, &format!("{key}_relay_msgs_per_s"), rate);
        report.set(SECTION, &format!("{key}_relay_rows"), bounded);
    }
    report.set(SECTION, "value_bytes", VALUE);
    report.target(
        &format!(
            "per-batch cost, backlog {} vs {}",
            int(levels[levels.len() - 1] as f64),
            int(levels[0] as f64)
        ),
        "within 1.5x",
        format!("x{worst_ratio:.2}"),
        Some(worst_ratio <= 1.5),
    );
    report.target(
        "pending probe cost, same backlogs",
        "within 1.5x (not an issue target; shown for the index claim)",
        format!("x{worst_probe:.2}"),
        Some(worst_probe <= 1.5),
    );
    if let Some(keys) = keys {
        let drop = Table::drop().table(Alias::new(&keys)).to_owned();
        db.execute(&drop).await.unwrap();
    }
    env.drop_tables(&db, &tables).await;
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn relay_rate(env: &Env, tables: &OutboxTables, rows: u64) -> f64 {
    let acks = Acks::default();
    let schema = env.schema(tables, 8);
    let store = SeaOrmStore::new(env.db().await, schema.clone()).unwrap();
    let publisher = Recording::new(env.publisher().await, acks.clone());
    let relay = Relay::spawn(
        store,
        publisher,
        env.relay_options(&schema).build().unwrap(),
    )
    .unwrap();
    let timeout = crate::drain::drain_timeout(rows);
    let t0 = acks.wait_for(1, timeout).await;
    let c0 = acks.count();
    let t1 = acks.wait_for(rows, timeout).await;
    let c1 = acks.count();
    relay.stop(Duration::from_secs(10)).await.unwrap();
    (c1 - c0) as f64 / (t1 - t0).as_secs_f64()
}

/// PostgreSQL: a table of the 10,000 keys with their buckets, for [`generate`].
async fn keys_table(env: &Env, db: &DatabaseConnection) -> String {
    let name = unique_name("keys");
    let create = Table::create()
        .table(Alias::new(&name))
        .col(
            ColumnDef::new(Alias::new("n"))
                .big_integer()
                .not_null()
                .primary_key(),
        )
        .col(ColumnDef::new(Alias::new("k")).binary().not_null())
        .col(ColumnDef::new(Alias::new("bucket")).integer().not_null())
        .to_owned();
    db.execute(&create).await.unwrap();
    let config = env.enqueue_config(8);
    for start in (0..data::KEYS).step_by(500) {
        let mut insert = Query::insert();
        insert.into_table(Alias::new(&name)).columns([
            Alias::new("n"),
            Alias::new("k"),
            Alias::new("bucket"),
        ]);
        for r in start..(start + 500).min(data::KEYS) {
            let key = format!("id-{r:05}");
            let bucket = outbox_core::OutboxMessage::builder("t")
                .key(key.as_str())
                .build(&config)
                .unwrap()
                .bucket;
            insert.values_panic([(r as i64).into(), key.into_bytes().into(), bucket.into()]);
        }
        db.execute(&insert).await.unwrap();
    }
    name
}

/// PostgreSQL: rows `range` generated inside the database. Row `i` gets the key of
/// `data::key(i)` and that key's bucket, as the library would write it.
async fn generate(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    keys: &str,
    topic: &str,
    range: std::ops::Range<u64>,
) {
    // In steps, so that no single statement runs for long.
    let mut start = range.start;
    while start < range.end {
        let end = (start + 100_000).min(range.end);
        let sql = format!(
            "INSERT INTO \"{m}\" (message_id, bucket, topic, \"key\", \"value\", headers, \"partition\", created_at) \
             SELECT gen_random_uuid(), k.bucket, $1, k.k, convert_to(lpad(g::text, {VALUE}, 'x'), 'UTF8'), NULL, NULL, now() \
             FROM generate_series($2::bigint, $3::bigint) AS g JOIN \"{keys}\" k ON k.n = (g * 2654435761) % {n} \
             ORDER BY g",
            m = tables.messages(),
            n = data::KEYS,
        );
        let stmt = Statement::from_sql_and_values(
            db.get_database_backend(),
            sql,
            [topic.into(), (start as i64).into(), (end as i64 - 1).into()],
        );
        db.execute_raw(stmt).await.unwrap();
        start = end;
    }
}
