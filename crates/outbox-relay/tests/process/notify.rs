//! `--notify postgres|redis`: a writer in another process commits a row and sends the
//! commit hint through the transport; the relay, polling only every 60 s, publishes it
//! within seconds, so the hint is what woke it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use outbox_core::driver::LocalNotifier;
use outbox_core::{OutboxMessage, OutboxSchema};
use outbox_notify::postgres::PostgresTransport;
use outbox_notify::redis::RedisTransport;
use outbox_notify::{Backoff, ChannelName, NotificationTransport, spawn_workers};
use outbox_seaorm::Outbox;
use outbox_tests::faults::{FaultEnv, checker, eventually};
use sea_orm::{ConnectionTrait, Statement};

use crate::common::Relay;
use crate::logs::table_args;

/// The relay's flags: `env`'s tables, a 60 s poll, long leases (renewals do not scan for
/// rows either way), and the transport.
fn relay_args(env: &FaultEnv, transport: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--database-url",
        &env.database_url,
        "--brokers",
        &env.brokers,
        "--poll-interval",
        "60s",
        "--lease-duration",
        "120s",
        "--lease-renew-interval",
        "60s",
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(table_args(env));
    args.extend(transport.iter().map(|s| (*s).to_owned()));
    args
}

/// Commits one row as a writer in another pod does: its own `LocalNotifier` whose
/// committed buckets the sender worker broadcasts on `transport`. Returns when the
/// record is on the topic, and how long that took after the commit.
async fn write_with_hint<T: NotificationTransport>(
    env: &FaultEnv,
    transport: T,
    relay: &Relay,
) -> Duration {
    let schema = OutboxSchema::builder()
        .tables(env.tables.clone())
        .build()
        .unwrap();
    let notifier = Arc::new(LocalNotifier::new(schema.bucket_count().get()));
    let workers = spawn_workers(
        Arc::new(transport),
        Arc::clone(&notifier),
        Backoff::default(),
    )
    .unwrap();
    let outbox = Outbox::new(schema).with_notifier(notifier);
    let txn = outbox.begin(&env.db).await.unwrap();
    txn.enqueue(
        OutboxMessage::builder(env.topic.clone())
            .key("hinted")
            .value("woken"),
    )
    .await
    .unwrap();
    txn.commit().await.unwrap();
    let committed = Instant::now();
    let arrived = eventually(Duration::from_secs(15), || async {
        checker::read_topic(&env.brokers, &env.topic)
            .await
            .iter()
            .any(|r| r.value.as_deref() == Some("woken"))
    })
    .await;
    workers.abort();
    assert!(
        arrived,
        "the record did not arrive within 15 s of the hint\n{}",
        relay.output()
    );
    committed.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_hint_wakes_the_relay_long_before_its_poll() {
    let env = FaultEnv::new("relay_pgnotify", &outbox_tests::brokers(), 1).await;
    let channel = ChannelName::new(&outbox_tests::unique_name("relay")).unwrap();
    let args = relay_args(
        &env,
        &["--notify", "postgres", "--notify-channel", channel.as_str()],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let relay = Relay::start(&args, &[]);
    relay.wait_ready(Duration::from_secs(30));
    // The relay's listener has subscribed (its session's last statement is the LISTEN).
    let listening = eventually(Duration::from_secs(15), || async {
        let row = env
            .db
            .query_one_raw(Statement::from_string(
                env.db.get_database_backend(),
                format!(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN \"{channel}\"%'"
                ),
            ))
            .await
            .unwrap();
        row.and_then(|r| r.try_get_by_index::<i64>(0).ok()) == Some(1)
    })
    .await;
    assert!(listening, "the relay never listened\n{}", relay.output());
    let transport = PostgresTransport::builder(channel, env.database_url.clone())
        .build()
        .unwrap();
    let took = write_with_hint(&env, transport, &relay).await;
    eprintln!("published {took:?} after the commit (poll interval 60 s)");
    let (status, output) = relay.terminate();
    assert_eq!(status.code(), Some(0), "{output}");
    assert!(
        output.contains("listening for commit notifications"),
        "{output}"
    );
    env.drop_tables().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_hint_wakes_the_relay_long_before_its_poll() {
    let redis_url = outbox_tests::redis_url();
    outbox_tests::require_tcp(
        "Redis (OUTBOX_TEST_REDIS_URL)",
        &outbox_tests::host_port(&redis_url),
    );
    let env = FaultEnv::new("relay_rnotify", &outbox_tests::brokers(), 1).await;
    let channel = ChannelName::new(&outbox_tests::unique_name("relay")).unwrap();
    let args = relay_args(
        &env,
        &[
            "--notify",
            "redis",
            "--notify-url",
            &redis_url,
            "--notify-channel",
            channel.as_str(),
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let relay = Relay::start(&args, &[]);
    relay.wait_ready(Duration::from_secs(30));
    let client = redis::Client::open(redis_url.as_str()).unwrap();
    let admin = client.get_multiplexed_async_connection().await.unwrap();
    let listening = eventually(Duration::from_secs(15), || {
        let mut admin = admin.clone();
        let channel = channel.clone();
        async move {
            let (_, count): (String, usize) = redis::cmd("PUBSUB")
                .arg("NUMSUB")
                .arg(channel.as_str())
                .query_async(&mut admin)
                .await
                .unwrap();
            count == 1
        }
    })
    .await;
    assert!(listening, "the relay never subscribed\n{}", relay.output());
    let transport = RedisTransport::builder(channel, redis_url).build().unwrap();
    let took = write_with_hint(&env, transport, &relay).await;
    eprintln!("published {took:?} after the commit (poll interval 60 s)");
    let (status, output) = relay.terminate();
    assert_eq!(status.code(), Some(0), "{output}");
    env.drop_tables().await;
}
