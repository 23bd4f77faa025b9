//! Wake-up latency of cross-process hints: relay A's process commits a row to a bucket
//! that relay B owns and notifies A's notifier; the time until B's publisher sees the row.
//! B's fallback poll is 30 s, so every row is found through the transport.
//!
//! ```text
//! cargo bench --profile dev -p outbox-notify --bench wake_latency            # 500 commits each
//! cargo bench --profile dev -p outbox-notify --bench wake_latency -- 2000    # more
//! ```
//!
//! `--profile dev` reuses the test build; the work measured is I/O and scheduling, and a
//! plain `cargo bench` would first build every dev-dependency (sea-orm, rskafka...) in
//! release. The first round, which opens the sender's connection, is reported apart.
//!
//! Uses the machine's PostgreSQL and Redis (`OUTBOX_TEST_POSTGRES_URL`,
//! `OUTBOX_TEST_REDIS_URL`, defaults as in the tests) and fails when they are down.
//! Commits are sequential (one in flight), so this is latency, not throughput.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use outbox_core::testing::contract::row;
use outbox_core::testing::{MemoryPublisher, MemoryStore};
use outbox_core::{CommitNotifier, OutboxMessage, PublishOutcome, Publisher, RelayOptions, Uuid};
use outbox_notify::postgres::PostgresTransport;
use outbox_notify::redis::RedisTransport;
use outbox_notify::testing::MemoryBus;
use outbox_notify::{ChannelName, NotificationTransport, spawn_relay_with_transport};
use outbox_tests::{host_port, postgres_url, redis_url, require_tcp, unique_name};
use tokio::sync::mpsc;

/// Reports each published message id with the instant it reached the publisher.
struct Signalling {
    inner: MemoryPublisher,
    published: mpsc::UnboundedSender<(Uuid, Instant)>,
}

impl Publisher for Signalling {
    async fn publish(&self, batch: &[OutboxMessage]) -> PublishOutcome {
        let at = Instant::now();
        for message in batch {
            let _ = self.published.send((message.message_id, at));
        }
        self.inner.publish_now(batch)
    }
}

fn options(relay_id: String) -> RelayOptions {
    RelayOptions::builder()
        .relay_id(relay_id)
        .schema(outbox_core::OutboxSchema::default()) // 8 buckets
        .poll_interval(Duration::from_secs(30))
        .lease_duration(Duration::from_secs(10))
        .lease_renew_interval(Duration::from_secs(1))
        .build()
        .unwrap()
}

async fn measure<T: NotificationTransport>(name: &str, make: impl Fn() -> T, rounds: usize) {
    let store = MemoryStore::new();
    let id = Uuid::new_v4().simple().to_string();
    let (tx, mut published) = mpsc::unbounded_channel();
    let (tx_a, _ignored) = mpsc::unbounded_channel();
    let a = spawn_relay_with_transport(
        store.clone(),
        Signalling {
            inner: MemoryPublisher::new(),
            published: tx_a,
        },
        options(format!("a-{id}")),
        make(),
    )
    .unwrap();
    let b_id = format!("b-{id}");
    let b = spawn_relay_with_transport(
        store.clone(),
        Signalling {
            inner: MemoryPublisher::new(),
            published: tx,
        },
        options(b_id.clone()),
        make(),
    )
    .unwrap();
    let owned_by_b = || -> Vec<i32> {
        store
            .leases()
            .into_iter()
            .filter(|(_, owner, _)| owner.as_deref() == Some(b_id.as_str()))
            .map(|(bucket, _, _)| bucket)
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while owned_by_b().len() != 4 {
        assert!(
            Instant::now() < deadline,
            "the relays did not split the buckets"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let buckets = owned_by_b();
    let notifier = a.notifier();

    let mut latencies = Vec::with_capacity(rounds + 1);
    let mut started = Instant::now();
    for round in 0..=rounds {
        if round == 1 {
            started = Instant::now();
        }
        let bucket = buckets[round % buckets.len()];
        let message = row(bucket, 0);
        let message_id = message.message_id;
        store.enqueue(message);
        let committed = Instant::now();
        notifier.notify_buckets(&[bucket]);
        let at = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let (id, at) = published.recv().await.unwrap();
                if id == message_id {
                    return at;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{name}: round {round} was not published within 10 s"));
        latencies.push(at - committed);
    }
    let elapsed = started.elapsed();
    let first = latencies.remove(0);
    latencies.sort();
    let pct = |p: usize| latencies[(latencies.len() * p / 100).min(latencies.len() - 1)];
    println!(
        "{name:<10} {first:>10.3?} {rounds:>6} {:>10.3?} {:>10.3?} {:>10.3?} {:>10.3?} {:>10.3?}",
        latencies[0],
        pct(50),
        pct(99),
        latencies[latencies.len() - 1],
        elapsed
    );
    a.stop(Duration::from_secs(5)).await.unwrap();
    b.stop(Duration::from_secs(5)).await.unwrap();
}

fn main() {
    // `cargo bench` passes `--bench`; the only argument we read is a bare number.
    let rounds = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse::<usize>().ok())
        .unwrap_or(500)
        .max(1);
    require_tcp(
        "PostgreSQL (OUTBOX_TEST_POSTGRES_URL)",
        &host_port(&postgres_url()),
    );
    require_tcp("Redis (OUTBOX_TEST_REDIS_URL)", &host_port(&redis_url()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!(
            "wake-up latency, commit in relay A -> row published by relay B (fallback poll 30 s)"
        );
        println!(
            "{:<10} {:>10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "transport", "first", "rounds", "min", "p50", "p99", "max", "total"
        );
        let bus = MemoryBus::new();
        measure("memory", || bus.transport(), rounds).await;
        let channel = ChannelName::new(&unique_name("bench")).unwrap();
        measure(
            "postgres",
            || {
                PostgresTransport::builder(channel.clone(), postgres_url())
                    .build()
                    .unwrap()
            },
            rounds,
        )
        .await;
        let channel = ChannelName::new(&unique_name("bench")).unwrap();
        measure(
            "redis",
            || {
                RedisTransport::builder(channel.clone(), redis_url())
                    .build()
                    .unwrap()
            },
            rounds,
        )
        .await;
    });
}
