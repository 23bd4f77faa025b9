//! Lease calls cost a fixed number of round trips whatever the bucket count: an
//! acquisition two (read, then write and read back), a renewal one, a release one. With
//! one statement per bucket, or one round trip per statement, a relay behind a slow link
//! (or owning many buckets) spends longer acquiring than its lease lasts, and loses every
//! bucket it just won.
//!
//! Counted on the wire, through the tests' [`SlowLink`] proxy (a round trip is a client
//! request after the server last spoke), on PostgreSQL and MariaDB. sqlx pings every
//! connection as it goes back to the pool (`PoolConnection::return_to_pool` in
//! sqlx-core 0.9), after the caller has its answer; each request of a lease call checks
//! a connection out once, so the wire shows two round trips per request, one of which
//! the call waits for. SQLite runs in the process and has no round trips: there the
//! scenario runs and its outcome is checked, and the suite's output says that the bound
//! does not apply.

use std::sync::Arc;
use std::time::Duration;

use outbox_core::{LeaseRequest, OutboxSchema, OutboxStore, Timestamp};
use outbox_seaorm::{ConnectSettings, SeaOrmStore};
use outbox_tests::slow_link::SlowLink;

use crate::on_each_database;
use crate::support::{Kind, TestDb};

/// Requests a call sends; on the wire each is followed by sqlx's release ping.
const MAX_ACQUISITION_REQUESTS: usize = 2;
const MAX_RENEWAL_REQUESTS: usize = 1;
const MAX_RELEASE_REQUESTS: usize = 1;
/// Round trips on the wire per request: the request, and the ping on release.
const WIRE_PER_REQUEST: usize = 2;
const LEASE: Duration = Duration::from_secs(30);
const T0: Timestamp = Timestamp::from_millis(1_765_000_000_000);

/// Round trips per step of a fixed scenario, at `bucket_count` buckets (`None` on SQLite).
async fn round_trips_per_step(
    tdb: &TestDb,
    bucket_count: u32,
) -> Vec<(&'static str, Option<usize>, usize)> {
    let tables = tdb.fresh_tables().await;
    let link = match tdb.kind {
        Kind::Sqlite => None,
        _ => Some(
            SlowLink::start(&outbox_tests::host_port(&tdb.url), Duration::ZERO)
                .await
                .unwrap_or_else(|e| panic!("starting the round-trip counter: {e}")),
        ),
    };
    let url = match &link {
        Some(link) => tdb
            .url
            .replacen(&outbox_tests::host_port(&tdb.url), link.addr(), 1),
        None => tdb.url.clone(),
    };
    // One connection, so that no connection is opened (and its handshake counted) in
    // the middle of a step.
    let db = ConnectSettings::new(url)
        .max_connections(1)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connecting through the counter: {e}"));
    let schema = OutboxSchema::builder()
        .tables(tables)
        .bucket_count(bucket_count)
        .build()
        .unwrap();
    let store = SeaOrmStore::new(db, schema).unwrap();
    let at = |s: u64| T0.saturating_add(Duration::from_secs(s));
    let request = |relay_id, second| LeaseRequest {
        relay_id,
        bucket_count,
        lease_duration: LEASE,
        now: at(second),
        busy: &[],
    };
    let count = || link.as_ref().map(SlowLink::round_trips);
    let spent = |before: Option<usize>| count().zip(before).map(|(now, then)| now - then);
    let steps = [
        ("acquire: create and claim every row", "relay-a", 0),
        ("acquire: extend", "relay-a", 1),
        ("acquire: newcomer facing live leases", "relay-b", 2),
        (
            "acquire: owner above its share releases and extends",
            "relay-a",
            3,
        ),
        ("acquire: newcomer claims the released half", "relay-b", 4),
    ];
    let mut out = Vec::new();
    for (name, relay_id, second) in steps {
        let before = count();
        let held = store
            .acquire_leases(&request(relay_id, second))
            .await
            .unwrap()
            .held;
        out.push((name, spent(before), held.len()));
    }
    let before = count();
    let renewal = store
        .renew_leases(
            &request("relay-a", 5),
            &(0..bucket_count as i32).collect::<Vec<_>>(),
        )
        .await
        .unwrap();
    out.push((
        "renew: half renewed, half lost",
        spent(before),
        renewal.renewed.len(),
    ));
    let before = count();
    store.release_leases("relay-b").await.unwrap();
    out.push(("release", spent(before), 0));
    let all = usize::try_from(bucket_count).unwrap();
    let held: Vec<usize> = out.iter().map(|(_, _, held)| *held).collect();
    assert_eq!(
        held,
        [all, all, 0, all / 2, all / 2, all / 2, 0],
        "the scenario ran as planned at {bucket_count} buckets: {out:?}"
    );
    assert_eq!(
        renewal.lost.len(),
        all / 2,
        "the released half is reported lost"
    );
    out
}

async fn lease_calls_cost_a_fixed_number_of_round_trips(tdb: Arc<TestDb>) {
    let small = round_trips_per_step(&tdb, 8).await;
    let large = round_trips_per_step(&tdb, 1024).await;
    println!("round trips per lease call at 8 and 1024 buckets: {small:?} / {large:?}");
    if tdb.kind == Kind::Sqlite {
        println!("round-trip bound: not applicable on SQLite (in-process, no round trips)");
        return;
    }
    let trips = |steps: &[(&str, Option<usize>, usize)]| -> Vec<usize> {
        steps.iter().map(|(_, trips, _)| trips.unwrap()).collect()
    };
    assert_eq!(
        trips(&small),
        trips(&large),
        "a lease call costs the same round trips at 8 and 1024 buckets"
    );
    for (step, trips, _) in &large {
        let trips = trips.unwrap();
        let requests = if step.starts_with("acquire") {
            MAX_ACQUISITION_REQUESTS
        } else if step.starts_with("renew") {
            MAX_RENEWAL_REQUESTS
        } else {
            MAX_RELEASE_REQUESTS
        };
        let bound = requests * WIRE_PER_REQUEST;
        assert!(
            trips <= bound,
            "{step}: {trips} round trips on the wire, more than {requests} requests \
             each followed by a release ping ({bound})"
        );
    }
}

on_each_database!(lease_calls_cost_a_fixed_number_of_round_trips => super::lease_calls_cost_a_fixed_number_of_round_trips);
