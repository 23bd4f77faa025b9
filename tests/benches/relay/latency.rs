//! Section 3: commit-to-ack latency. A writer commits one outbox row per transaction at a
//! fixed rate; the commit instant is taken when `commit()` returns, the acknowledgement
//! instant when the relay's publisher returns the row as acknowledged (the [`Recording`]
//! decorator). Three cases: the local notifier wakes the in-process relay; no notifier
//! (polling only, the contrast); two relays with a cross-pod transport, the writer beside
//! relay A writing only into buckets relay B owns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use outbox_core::driver::{Relay, RelayHandle};
use outbox_core::{CommitNotifier, EnqueueConfig, OutboxMessage, OutboxSchema, Uuid};
use outbox_kafka::KafkaPublisher;
use outbox_notify::postgres::PostgresTransport;
use outbox_notify::redis::RedisTransport;
use outbox_notify::{ChannelName, spawn_relay_with_transport};
use outbox_seaorm::entity::lease;
use outbox_seaorm::{Outbox, OutboxTables, SeaOrmStore, SqlNames};
use outbox_tests::unique_name;
use sea_orm::sea_query::Query;
use sea_orm::{ConnectionTrait, DatabaseConnection, FromQueryResult};
use tokio::task::JoinSet;

use crate::ack::{Acks, Recording};
use crate::args::DbKind;
use crate::data;
use crate::env::{Env, VALUE_SIZE, wait_until};
use crate::report::{Report, ms};
use crate::timing::{Timed, Timings};

const SECTION: &str = "3 latency";

/// The writer rates of the targets, with their p99 bounds (local notification).
const RATES: [(u64, u64); 2] = [(1_000, 25), (5_000, 100)];

pub async fn run(env: &Env, report: &mut Report) {
    let seconds = env.args.pick(10, 2);
    // `--rate` measures that one rate (its bound: the one of the nearest target rate).
    let rates: Vec<(u64, u64)> = match env.args.rate {
        Some(rate) => vec![(
            rate,
            if rate <= RATES[0].0 {
                RATES[0].1
            } else {
                RATES[1].1
            },
        )],
        None => RATES.to_vec(),
    };
    let db = env.db().await;
    for (i, &(rate, bound_ms)) in rates.iter().enumerate() {
        println!(
            "\n== {SECTION}: writer at {rate} msg/s for {seconds} s, one 1 KiB outbox row per transaction"
        );
        let timings = Timings::default();
        let local = single_relay(env, &db, rate, seconds, true, &timings).await;
        let name = format!("local_{rate}");
        local.report(report, &name, &format!("local notification at {rate}/s"));
        crate::drain::breakdown(report, SECTION, &name, &timings);
        report.target(
            &format!("p99 commit-to-ack at {rate} msg/s, local notification"),
            &format!("<= {bound_ms} ms"),
            format!(
                "{} (writer achieved {:.0}/s)",
                ms(local.p99),
                local.achieved_rate
            ),
            Some(local.p99 <= Duration::from_millis(bound_ms)),
        );
        if i > 0 {
            continue;
        }
        // The contrasts, at the first rate only.
        let polling = single_relay(env, &db, rate, seconds, false, &Timings::default()).await;
        polling.report(
            report,
            "polling",
            &format!("polling only (poll interval 1 s) at {rate}/s"),
        );
        report.target(
            "p99 commit-to-ack, polling only",
            "about the poll interval (1 s)",
            ms(polling.p99),
            Some(polling.p99 <= Duration::from_millis(1_250)),
        );
        let cross = cross_pod(env, &db, rate, seconds).await;
        cross.report(
            report,
            "cross_pod",
            &format!("cross-pod, bucket of the other relay, at {rate}/s"),
        );
    }
}

#[derive(Debug)]
struct Stats {
    sent: usize,
    achieved_rate: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
}

impl Stats {
    fn report(&self, report: &mut Report, key: &str, label: &str) {
        report.line(
            SECTION,
            &format!(
                "{label}: p50 / p99 / max ({} msgs at {:.0}/s)",
                self.sent, self.achieved_rate
            ),
            format!("{} / {} / {}", ms(self.p50), ms(self.p99), ms(self.max)),
        );
        report.set(SECTION, &format!("{key}_sent"), self.sent);
        report.set(SECTION, &format!("{key}_rate"), self.achieved_rate);
        report.set(
            SECTION,
            &format!("{key}_p50_ms"),
            self.p50.as_secs_f64() * 1e3,
        );
        report.set(
            SECTION,
            &format!("{key}_p99_ms"),
            self.p99.as_secs_f64() * 1e3,
        );
        report.set(
            SECTION,
            &format!("{key}_max_ms"),
            self.max.as_secs_f64() * 1e3,
        );
    }
}

/// One in-process relay; the writer's outbox wakes it when `notify`, else it polls.
async fn single_relay(
    env: &Env,
    db: &DatabaseConnection,
    rate: u64,
    seconds: u64,
    notify: bool,
    timings: &Timings,
) -> Stats {
    let tables = env.tables(db).await;
    let topic = env.topic().await;
    let acks = Acks::with_instants();
    let schema = env.schema(&tables, 8);
    let (store, publisher) = timed_relay_parts(env, &schema, timings, &acks).await;
    let options = env.relay_options(&schema).build().unwrap();
    let mut outbox = Outbox::new(options.enqueue_config());
    let relay = Relay::spawn(store, publisher, options).unwrap();
    if notify {
        outbox = outbox.with_notifier(relay.notifier());
    }
    ready(&relay).await;
    let keys: Vec<String> = (0..data::KEYS).map(data::key).collect();
    let watch = Watch {
        tables: &tables,
        timings,
        acks: &acks,
    };
    let stats = measure(db, &outbox, &topic, &keys, rate, seconds, &watch).await;
    relay.stop(Duration::from_secs(10)).await.unwrap();
    env.drop_tables(db, &tables).await;
    stats
}

/// A relay's store and publisher for this section: each call timed and journaled in
/// `timings`, each acknowledgement recorded in `acks`.
async fn timed_relay_parts(
    env: &Env,
    schema: &OutboxSchema,
    timings: &Timings,
    acks: &Acks,
) -> (Timed<SeaOrmStore>, Recording<Timed<KafkaPublisher>>) {
    let store = Timed::new(
        SeaOrmStore::new(env.db().await, schema.clone()).unwrap(),
        timings.clone(),
    );
    let publisher = Recording::new(
        Timed::new(env.publisher().await, timings.clone()),
        acks.clone(),
    );
    (store, publisher)
}

/// Two relays joined by a transport (PostgreSQL LISTEN/NOTIFY, or Redis pub/sub on the
/// other databases), fallback poll 30 s so that every wake-up comes through it.
async fn cross_pod(env: &Env, db: &DatabaseConnection, rate: u64, seconds: u64) -> Stats {
    let tables = env.tables(db).await;
    let topic = env.topic().await;
    let acks = Acks::with_instants();
    let channel = ChannelName::new(&unique_name("bench")).unwrap();
    let schema = env.schema(&tables, 8);
    let relay = |id: String| {
        env.relay_options(&schema)
            .relay_id(id)
            .poll_interval(Duration::from_secs(30))
            .lease_duration(Duration::from_secs(10))
            .lease_renew_interval(Duration::from_secs(1))
            .build()
            .unwrap()
    };
    let (a_id, b_id) = (unique_name("a"), unique_name("b"));
    let mut handles: Vec<RelayHandle> = Vec::new();
    let timings = Timings::default();
    for id in [&a_id, &b_id] {
        let (store, publisher) = timed_relay_parts(env, &schema, &timings, &acks).await;
        let handle = if env.kind() == DbKind::Postgres {
            let transport = PostgresTransport::builder(channel.clone(), env.url.clone())
                .build()
                .unwrap();
            spawn_relay_with_transport(store, publisher, relay(id.clone()), transport)
        } else {
            let transport = RedisTransport::builder(channel.clone(), outbox_tests::redis_url())
                .build()
                .unwrap();
            spawn_relay_with_transport(store, publisher, relay(id.clone()), transport)
        };
        handles.push(handle.unwrap());
    }
    let transport = if env.kind() == DbKind::Postgres {
        "postgres LISTEN/NOTIFY"
    } else {
        "redis pub/sub"
    };
    wait_until(
        "the two relays to split the buckets",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || async { owned_by(db, &tables, &b_id).await.len() == 4 },
    )
    .await;
    // Let A's listener subscribe and the leases settle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let b_buckets = owned_by(db, &tables, &b_id).await;
    let config = EnqueueConfig::from(schema.clone());
    let keys: Vec<String> = (0..data::KEYS)
        .map(data::key)
        .filter(|k| {
            let bucket = OutboxMessage::builder("t")
                .key(k.as_str())
                .build(&config)
                .unwrap()
                .bucket;
            b_buckets.contains(&bucket)
        })
        .collect();
    let notifier: Arc<dyn CommitNotifier> = handles[0].notifier();
    let outbox = Outbox::new(config).with_notifier(notifier);
    println!(
        "  (transport: {transport}; writer beside relay A, rows in relay B's buckets {b_buckets:?})"
    );
    let watch = Watch {
        tables: &tables,
        timings: &timings,
        acks: &acks,
    };
    let stats = measure(db, &outbox, &topic, &keys, rate, seconds, &watch).await;
    for h in handles {
        h.stop(Duration::from_secs(10)).await.unwrap();
    }
    env.drop_tables(db, &tables).await;
    stats
}

async fn owned_by(db: &DatabaseConnection, tables: &OutboxTables, relay_id: &str) -> Vec<i32> {
    let stmt = Query::select()
        .columns([
            lease::Column::Bucket,
            lease::Column::Owner,
            lease::Column::ExpiresAtMs,
        ])
        .from(tables.leases_ref())
        .to_owned();
    let now = outbox_core::Timestamp::now().as_millis();
    db.query_all(&stmt)
        .await
        .unwrap()
        .iter()
        .map(|row| lease::Model::from_query_result(row, "").unwrap())
        .filter(|l| l.owner.as_deref() == Some(relay_id) && l.expires_at_ms > now)
        .map(|l| l.bucket)
        .collect()
}

pub(crate) async fn ready(relay: &RelayHandle) {
    wait_until(
        "the relay to hold its leases",
        Duration::from_secs(30),
        Duration::from_millis(10),
        || async { relay.is_ready() },
    )
    .await;
}

/// What [`measure`] watches: the relay's acknowledgements, and for a row never
/// acknowledged, its table and the journal of the relay's calls.
struct Watch<'a> {
    tables: &'a OutboxTables,
    timings: &'a Timings,
    acks: &'a Acks,
}

/// Writes at `rate` for `seconds` (after a 0.5 s warm-up that is not counted), each
/// transaction in its own task so that a slow commit does not delay the next; waits for
/// every row's acknowledgement and summarises commit-to-ack.
async fn measure(
    db: &DatabaseConnection,
    outbox: &Outbox,
    topic: &str,
    keys: &[String],
    rate: u64,
    seconds: u64,
    watch: &Watch<'_>,
) -> Stats {
    let acks = watch.acks;
    let warm = (rate / 2).max(1);
    let total = rate * seconds;
    let period = Duration::from_secs(1).div_f64(rate as f64);
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = JoinSet::new();
    let mut started = Instant::now();
    for i in 0..warm + total {
        if i == warm {
            started = Instant::now();
        }
        tick.tick().await;
        let (db, outbox) = (db.clone(), outbox.clone());
        let key = keys[(i as usize * 7919) % keys.len()].clone();
        let topic = topic.to_owned();
        tasks.spawn(async move {
            let (id, at) = commit_one(&db, &outbox, topic, key, data::value(i, VALUE_SIZE)).await;
            (i >= warm, id, at)
        });
    }
    let mut committed = Vec::with_capacity(total as usize);
    let mut every = Vec::with_capacity((warm + total) as usize);
    while let Some(done) = tasks.join_next().await {
        let (counted, id, at) = done.unwrap();
        if counted {
            committed.push((id, at));
        }
        every.push((id, at));
    }
    let writing = started.elapsed();
    let timeout = Duration::from_secs(60);
    if acks.try_wait_for(warm + total, timeout).await.is_none() {
        let summary = format!(
            "only {} of {} records acknowledged within {timeout:?}",
            acks.count(),
            warm + total
        );
        crate::stuck::explain_and_fail(db, watch.tables, watch.timings, &every, acks, summary)
            .await;
    }
    let mut latencies: Vec<Duration> = committed
        .iter()
        .map(|(id, at)| {
            acks.instant(id)
                .expect("every committed row is acknowledged")
                .saturating_duration_since(*at)
        })
        .collect();
    latencies.sort();
    Stats {
        sent: latencies.len(),
        achieved_rate: total as f64 / writing.as_secs_f64(),
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        max: percentile(&latencies, 1.0),
    }
}

/// One transaction holding one outbox row of `topic` / `key` / `value`, committed; the
/// row's message id and the instant `commit()` returned.
pub(crate) async fn commit_one(
    db: &DatabaseConnection,
    outbox: &Outbox,
    topic: String,
    key: String,
    value: Vec<u8>,
) -> (Uuid, Instant) {
    let id = Uuid::now_v7();
    let txn = outbox.begin(db).await.unwrap();
    txn.enqueue(
        OutboxMessage::builder(topic)
            .key(key)
            .value(value)
            .message_id(id),
    )
    .await
    .unwrap();
    txn.commit().await.unwrap();
    (id, Instant::now())
}

/// The `p` quantile (0..=1) of `sorted`; zero when it is empty.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let last = sorted.len().saturating_sub(1);
    sorted
        .get(((sorted.len() as f64 * p) as usize).min(last))
        .copied()
        .unwrap_or_default()
}
