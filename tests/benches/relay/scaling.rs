//! Section 5: drain throughput with 1, 2 and 4 relay processes (8 and 16 buckets), and
//! the idle cost of a relay that owns buckets and of one that owns none, counted from
//! the database side by a [`CountingProxy`].

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use outbox_seaorm::entity::lease;
use outbox_seaorm::{OutboxTables, SqlNames};
use outbox_tests::{host_port, unique_name};
use sea_orm::sea_query::Query;
use sea_orm::{ConnectionTrait, DatabaseConnection, FromQueryResult};

use crate::args::DbKind;
use crate::count_proxy::{CountingProxy, Counts, Protocol};
use crate::data;
use crate::env::{Env, VALUE_SIZE, wait_until};
use crate::processes::RelayProcess;
use crate::report::{Report, int};

const SECTION: &str = "5 scaling";

pub async fn run(env: &Env, report: &mut Report) {
    let n = env.args.pick((env.args.rows / 4).max(1), 2_000);
    println!(
        "\n== {SECTION}: outbox-relay processes draining {n} rows of {VALUE_SIZE} B (poll 100 ms, lease 6 s / renew 1 s so joins settle fast)"
    );
    let db = env.db().await;
    for buckets in [8u32, 16] {
        let source = env.tables(&db).await;
        data::fill(
            &db,
            &source,
            "unused",
            0..n,
            VALUE_SIZE,
            &env.enqueue_config(buckets),
        )
        .await;
        let mut one = None;
        for relays in [1usize, 2, 4] {
            let rate = drain(env, &db, &source, n, buckets, relays).await;
            let single = *one.get_or_insert(rate);
            report.line(
                SECTION,
                &format!("{relays} relay process(es), {buckets} buckets (msgs/s)"),
                format!("{} (x{:.2})", int(rate), rate / single),
            );
            report.set(
                SECTION,
                &format!("relays_{relays}_buckets_{buckets}_msgs_per_s"),
                rate,
            );
        }
        env.drop_tables(&db, &source).await;
    }
    idle(env, &db, report).await;
}

/// `relays` processes on a fresh table; once they share the buckets, `n` rows arrive in
/// one commit; the time from that commit until the table is empty.
async fn drain(
    env: &Env,
    db: &DatabaseConnection,
    source: &OutboxTables,
    n: u64,
    buckets: u32,
    relays: usize,
) -> f64 {
    let tables = env.tables(db).await;
    let topic = env.topic().await;
    let mut processes: Vec<RelayProcess> = (0..relays)
        .map(|i| {
            RelayProcess::spawn(
                &env.url,
                &tables,
                &env.brokers,
                buckets,
                &format!("scale-{relays}-{buckets}-{i}-{}", &unique_name("r")[2..10]),
                &[
                    "--poll-interval",
                    "100ms",
                    "--lease-duration",
                    "6s",
                    "--lease-renew-interval",
                    "1s",
                    "--backlog-sampling",
                    "false",
                ],
            )
        })
        .collect();
    let share = buckets as usize / relays;
    wait_until(
        "the relay processes to share the buckets",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || async {
            let owners = owners(db, &tables).await;
            owners.len() == relays && owners.values().all(|c| *c == share)
        },
    )
    .await;
    for p in &mut processes {
        p.assert_running();
    }
    data::copy(db, source, &tables, &topic, None).await;
    let started = Instant::now();
    wait_until(
        "the relay processes to drain the table",
        crate::drain::drain_timeout(n),
        Duration::from_millis(5),
        || data::is_empty(db, &tables),
    )
    .await;
    let elapsed = started.elapsed();
    for p in processes {
        p.stop();
    }
    assert_eq!(
        env.topic_count(&topic).await,
        n,
        "every row reaches the topic"
    );
    env.drop_tables(db, &tables).await;
    n as f64 / elapsed.as_secs_f64()
}

/// Unexpired leases per owner.
pub async fn owners(db: &DatabaseConnection, tables: &OutboxTables) -> BTreeMap<String, usize> {
    let stmt = Query::select()
        .columns([
            lease::Column::Bucket,
            lease::Column::Owner,
            lease::Column::ExpiresAtMs,
        ])
        .from(tables.leases_ref())
        .to_owned();
    let now = outbox_core::Timestamp::now().as_millis();
    let mut out = BTreeMap::new();
    for row in db.query_all(&stmt).await.unwrap() {
        let l = lease::Model::from_query_result(&row, "").unwrap();
        if let Some(owner) = l.owner
            && l.expires_at_ms > now
        {
            *out.entry(owner).or_default() += 1;
        }
    }
    out
}

/// One bucket, two relay processes with the binary's defaults (poll 1 s, lease 30 s,
/// renew 10 s, backlog sample every 30 s): one owns the bucket, the other owns nothing.
/// Each talks to the database through its own counting proxy.
async fn idle(env: &Env, db: &DatabaseConnection, report: &mut Report) {
    let window = Duration::from_secs(env.args.pick(15, 3));
    let protocol = match env.kind() {
        DbKind::Postgres => Protocol::Postgres,
        DbKind::MariaDb => Protocol::MySql,
        DbKind::Sqlite => {
            report.line(
                SECTION,
                "idle cost",
                "n/a (SQLite: no wire protocol to count)".into(),
            );
            report.target(
                "idle relay with buckets",
                "about 1 query/s",
                "n/a".into(),
                None,
            );
            report.target(
                "idle relay without buckets",
                "no polling queries",
                "n/a".into(),
                None,
            );
            return;
        }
    };
    println!(
        "  idle cost over {window:?}: 1 bucket, relay A owns it, relay B owns none (binary defaults)"
    );
    let tables = env.tables(db).await;
    let classify = {
        let (m, l, r) = (
            tables.messages().to_ascii_lowercase(),
            tables.leases().to_ascii_lowercase(),
            tables.relays().to_ascii_lowercase(),
        );
        move |sql: &str| {
            let s = sql.to_ascii_lowercase();
            let kind = if s.contains(&m) {
                if s.contains("count(") {
                    "backlog sample"
                } else {
                    "messages (probe/fetch/delete)"
                }
            } else if s.contains(&l) || s.contains(&r) {
                "leases and heartbeat"
            } else if ["begin", "commit", "rollback", "start", "savepoint"]
                .iter()
                .any(|w| s.trim_start().starts_with(w))
            {
                "transaction control"
            } else {
                "other"
            };
            kind.to_owned()
        }
    };
    let upstream = host_port(&env.url);
    let proxy_a = CountingProxy::start(&upstream, protocol, classify.clone()).await;
    let proxy_b = CountingProxy::start(&upstream, protocol, classify).await;
    let via = |proxy: &CountingProxy| {
        let url = env.url.replacen(&upstream, proxy.addr(), 1);
        let sep = if url.contains('?') { '&' } else { '?' };
        match protocol {
            Protocol::Postgres => format!("{url}{sep}sslmode=disable"),
            Protocol::MySql => format!("{url}{sep}ssl-mode=disabled"),
        }
    };
    let suffix = &unique_name("r")[2..10];
    let (a_id, b_id) = (format!("idle-a-{suffix}"), format!("idle-b-{suffix}"));
    let mut a = RelayProcess::spawn(&via(&proxy_a), &tables, &env.brokers, 1, &a_id, &[]);
    wait_until(
        "relay A to own the bucket",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async { owners(db, &tables).await.get(&a_id) == Some(&1) },
    )
    .await;
    let mut b = RelayProcess::spawn(&via(&proxy_b), &tables, &env.brokers, 1, &b_id, &[]);
    // B's first lease call registers its heartbeat; then both are idle.
    wait_until(
        "relay B to register",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async { proxy_b.take().contains_key("leases and heartbeat") },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    a.assert_running();
    b.assert_running();
    assert_eq!(
        owners(db, &tables).await.get(&a_id),
        Some(&1),
        "A still owns the bucket"
    );
    proxy_a.take();
    proxy_b.take();
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let (counts_a, counts_b) = (proxy_a.take(), proxy_b.take());
    let secs = started.elapsed().as_secs_f64();
    a.stop();
    b.stop();
    env.drop_tables(db, &tables).await;

    let per_s = |counts: &Counts| counts.values().sum::<u64>() as f64 / secs;
    let polling =
        |counts: &Counts| *counts.get("messages (probe/fetch/delete)").unwrap_or(&0) as f64 / secs;
    for (label, key, counts) in [
        ("idle relay owning the bucket", "owner", &counts_a),
        ("idle relay owning nothing", "no_buckets", &counts_b),
    ] {
        let detail: Vec<String> = counts
            .iter()
            .map(|(kind, n)| format!("{kind} {:.2}", *n as f64 / secs))
            .collect();
        report.line(
            SECTION,
            &format!("{label} (queries/s)"),
            format!("{:.2} [{}]", per_s(counts), detail.join(", ")),
        );
        report.set(SECTION, &format!("idle_{key}_queries_per_s"), per_s(counts));
        report.set(
            SECTION,
            &format!("idle_{key}_polling_queries_per_s"),
            polling(counts),
        );
        let by_kind: serde_json::Map<String, serde_json::Value> = counts
            .iter()
            .map(|(k, n)| (k.clone(), (*n as f64 / secs).into()))
            .collect();
        report.set(SECTION, &format!("idle_{key}_by_kind"), by_kind);
    }
    report.set(SECTION, "idle_window_seconds", secs);
    report.target(
        "idle relay with buckets",
        "about 1 query/s",
        format!("{:.2}/s", per_s(&counts_a)),
        Some(per_s(&counts_a) <= 2.0),
    );
    report.target(
        "idle relay without buckets",
        "no polling queries",
        format!(
            "{:.2} polling/s, {:.2} total/s",
            polling(&counts_b),
            per_s(&counts_b)
        ),
        Some(polling(&counts_b) == 0.0),
    );
}
