//! Section 7: a database far away. The relay talks to the database through the tests'
//! [`SlowLink`], which holds every client → server message for a fixed time (0.5 s and
//! 1.0 s: the two cases), with leases of 6 s renewed every 2 s and 400 rows
//! pending when it starts. Reported per latency: the time from the relay's start until
//! the table is empty, the round trips that went through the link, and the lease calls
//! (acquisitions, renewals, their slowest) against the lease they must fit in. The fault
//! suite's scenario 10 asserts the first case in CI; this section measures both.
//!
//! Not on SQLite (an embedded database has no link to slow down).

use std::time::{Duration, Instant};

use outbox_core::driver::Relay;
use outbox_seaorm::SeaOrmStore;
use outbox_tests::slow_link::SlowLink;

use crate::args::DbKind;
use crate::data;
use crate::env::{Env, VALUE_SIZE, wait_until};
use crate::report::{Report, ms};
use crate::timing::{Timed, Timings};

const SECTION: &str = "7 slow database";
const LEASE: Duration = Duration::from_secs(6);
const RENEW: Duration = Duration::from_secs(2);
/// Rows pending before the relay starts (the case).
const BACKLOG: u64 = 400;
/// Latency per client → server message, and the drain bound for it.
const CASES: [(Duration, Duration); 2] = [
    (Duration::from_millis(500), Duration::from_secs(45)),
    (Duration::from_millis(1_000), Duration::from_secs(90)),
];

pub async fn run(env: &Env, report: &mut Report) {
    if env.kind() == DbKind::Sqlite {
        report.line(
            SECTION,
            "not applicable",
            "SQLite is embedded: no link to slow down".into(),
        );
        return;
    }
    // The smoke run (`--quick`) checks the section works with a short case.
    let cases: Vec<(Duration, Duration, u64)> = if env.args.quick {
        vec![(Duration::from_millis(100), Duration::from_secs(45), 50)]
    } else {
        CASES.iter().map(|&(l, b)| (l, b, BACKLOG)).collect()
    };
    let db = env.db().await;
    for (latency, bound, backlog) in cases {
        println!(
            "\n== {SECTION}: {backlog} rows pending, {} per client -> server message, lease {LEASE:?} renewed every {RENEW:?}",
            ms(latency)
        );
        let tables = env.tables(&db).await;
        let topic = env.topic().await;
        data::fill(
            &db,
            &tables,
            &topic,
            0..backlog,
            VALUE_SIZE,
            &env.enqueue_config(8),
        )
        .await;
        let link = SlowLink::start(&outbox_tests::host_port(&env.url), latency)
            .await
            .unwrap();
        let far_url = outbox_tests::database_url_through(&env.url, link.addr());
        let schema = env.schema(&tables, 8);
        let timings = Timings::default();
        let started = Instant::now();
        let store = Timed::new(
            SeaOrmStore::new(env.db_at(&far_url).await, schema.clone()).unwrap(),
            timings.clone(),
        );
        let options = env
            .relay_options(&schema)
            .lease_duration(LEASE)
            .lease_renew_interval(RENEW)
            .build()
            .unwrap();
        let relay = Relay::spawn(store, env.publisher().await, options).unwrap();
        // Generous: the report says whether the bound was met.
        let give_up = bound * 3;
        let mut drained = true;
        while !data::is_empty(&db, &tables).await {
            if started.elapsed() > give_up {
                drained = false;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let took = started.elapsed();
        let round_trips = link.round_trips();
        relay.stop(Duration::from_secs(30)).await.unwrap();
        let left = data::count(&db, &tables).await;
        if drained {
            wait_until(
                "every row in the topic",
                Duration::from_secs(30),
                Duration::from_millis(50),
                || async { env.topic_count(&topic).await >= backlog },
            )
            .await;
        }
        env.drop_tables(&db, &tables).await;

        let key = format!("{}ms", latency.as_millis());
        let lease_calls: Vec<_> = timings
            .summary()
            .into_iter()
            .filter(|(op, ..)| op == "acquire_leases" || op == "renew_leases")
            .collect();
        let calls = |name: &str| {
            lease_calls
                .iter()
                .find(|(op, ..)| op == name)
                .map_or(0, |(_, n, ..)| *n)
        };
        let slowest = lease_calls
            .iter()
            .map(|(.., p99)| *p99)
            .max()
            .unwrap_or_default();
        report.line(
            SECTION,
            &format!(
                "{} per message: {backlog} rows drained in (bound {bound:?})",
                ms(latency)
            ),
            if drained {
                format!("{:.1} s, {round_trips} round trips", took.as_secs_f64())
            } else {
                format!("not drained: {left} of {backlog} left after {give_up:?}")
            },
        );
        report.line(
            SECTION,
            &format!(
                "{} per message: acquisitions, renewals, slowest lease call (p99) vs lease {LEASE:?}",
                ms(latency)
            ),
            format!(
                "{}, {}, {}",
                calls("acquire_leases"),
                calls("renew_leases"),
                ms(slowest)
            ),
        );
        report.set(SECTION, &format!("{key}_drained"), drained);
        report.set(SECTION, &format!("{key}_seconds"), took.as_secs_f64());
        report.set(SECTION, &format!("{key}_round_trips"), round_trips);
        report.set(SECTION, &format!("{key}_left"), left);
        report.set(
            SECTION,
            &format!("{key}_acquisitions"),
            calls("acquire_leases"),
        );
        report.set(SECTION, &format!("{key}_renewals"), calls("renew_leases"));
        report.set(
            SECTION,
            &format!("{key}_slowest_lease_call_ms"),
            slowest.as_secs_f64() * 1e3,
        );
        if !env.args.quick {
            report.target(
                &format!(
                    "slow database, {} per message: {BACKLOG} rows drained",
                    ms(latency)
                ),
                &format!("within {bound:?}"),
                format!("{:.1} s", took.as_secs_f64()),
                Some(drained && took <= bound),
            );
        }
    }
}
