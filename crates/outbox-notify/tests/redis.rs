//! `RedisTransport` against the machine's Redis (`OUTBOX_TEST_REDIS_URL`, default
//! `redis://127.0.0.1:6379/`). Every test uses its own channel. Where a test must find its
//! own connections on the server (to kill or count them), the transport connects through a
//! loopback proxy whose upstream ports identify them: killing every pub/sub client would
//! disturb the tests running in parallel.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::proxy::Proxy;
use common::scenarios;
use outbox_notify::redis::{Client, RedisTransport};
use outbox_notify::{ChannelName, ConfigError, NotificationTransport, TransportError};
use outbox_tests::{host_port, redis_url, require_tcp, unique_name};
use redis::aio::MultiplexedConnection;

fn setup() -> ChannelName {
    require_tcp("Redis (OUTBOX_TEST_REDIS_URL)", &host_port(&redis_url()));
    ChannelName::new(&unique_name("notify")).unwrap()
}

fn transport(channel: &ChannelName) -> RedisTransport {
    RedisTransport::builder(channel.clone(), redis_url())
        .connect_timeout(Duration::from_secs(2))
        .send_timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

fn proxied(channel: &ChannelName, proxy: &Proxy) -> RedisTransport {
    RedisTransport::builder(channel.clone(), format!("redis://{}/", proxy.addr()))
        .connect_timeout(Duration::from_secs(2))
        .send_timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

async fn admin() -> MultiplexedConnection {
    Client::open(redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Subscribers of `channel`.
async fn subscribers(channel: &ChannelName) -> usize {
    let (_, count): (String, usize) = redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(channel.as_str())
        .query_async(&mut admin().await)
        .await
        .unwrap();
    count
}

/// `(id, port)` of the server's clients (of `kind`, if given) that came through `proxy`.
async fn proxied_clients(proxy: &Proxy, kind: Option<&str>) -> Vec<(u64, u16)> {
    let mut list = redis::cmd("CLIENT");
    list.arg("LIST");
    if let Some(kind) = kind {
        list.arg("TYPE").arg(kind);
    }
    let text: String = list.query_async(&mut admin().await).await.unwrap();
    let ports = proxy.upstream_ports();
    text.lines()
        .filter_map(|line| {
            let field = |name: &str| {
                line.split(' ')
                    .find_map(|f| f.strip_prefix(name))
                    .map(str::to_owned)
            };
            let id = field("id=")?.parse().ok()?;
            let port = field("addr=")?.rsplit_once(':')?.1.parse().ok()?;
            ports.contains(&port).then_some((id, port))
        })
        .collect()
}

async fn in_time<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(90), test)
        .await
        .expect("the test did not finish within 90 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_in_one_relay_wakes_the_owner_in_another() {
    let channel = setup();
    let latencies = in_time(scenarios::commit_in_a_wakes_owner_b(|| transport(&channel))).await;
    eprintln!("wake-up latencies: {latencies:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_foreign_and_unknown_hints() {
    let channel = setup();
    in_time(scenarios::duplicate_foreign_and_unknown_hints(|| {
        transport(&channel)
    }))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn received_hints_are_not_rebroadcast() {
    let channel = setup();
    in_time(scenarios::received_hints_are_not_rebroadcast(|| {
        transport(&channel)
    }))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_commits_is_coalesced() {
    let channel = setup();
    let sends = in_time(scenarios::burst_is_coalesced(|| transport(&channel))).await;
    eprintln!("10,000 commits, {sends} sends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_listen_waits_for_running_callbacks_and_unsubscribes() {
    let channel = setup();
    in_time(scenarios::cancel_while_callbacks_run(|| {
        transport(&channel)
    }))
    .await;
    let released = common::wait_until_async(Duration::from_secs(10), async || {
        subscribers(&channel).await == 0
    })
    .await;
    assert!(released, "the subscription outlived the cancelled listen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_round_trip_through_pubsub() {
    let channel = setup();
    let send_raw = async |payload: &str| {
        let _: usize = redis::cmd("PUBLISH")
            .arg(channel.as_str())
            .arg(payload)
            .query_async(&mut admin().await)
            .await
            .unwrap();
    };
    in_time(scenarios::payloads_round_trip(
        || transport(&channel),
        send_raw,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_relay_closes_its_connections() {
    let channel = setup();
    let proxy = Proxy::start(&host_port(&redis_url())).await;
    // The subscribed connection and the sending connection.
    in_time(scenarios::stopping_the_relay_stops_the_workers(
        proxied(&channel, &proxy),
        2,
        async || proxied_clients(&proxy, None).await.len(),
    ))
    .await;
    assert_eq!(subscribers(&channel).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hints_resume_after_the_subscriber_is_killed() {
    let channel = setup();
    let proxy = Proxy::start(&host_port(&redis_url())).await;
    let kill_b = async || -> Vec<u64> {
        let clients = proxied_clients(&proxy, Some("pubsub")).await;
        assert_eq!(clients.len(), 1, "B has exactly one subscribed connection");
        let mut admin = admin().await;
        for (id, _) in &clients {
            let killed: usize = redis::cmd("CLIENT")
                .arg("KILL")
                .arg("ID")
                .arg(id)
                .query_async(&mut admin)
                .await
                .unwrap();
            assert_eq!(killed, 1);
        }
        clients.into_iter().map(|(id, _)| id).collect()
    };
    let resubscribed_b = async |killed: &Vec<u64>| -> bool {
        proxied_clients(&proxy, Some("pubsub"))
            .await
            .iter()
            .any(|(id, _)| !killed.contains(id))
    };
    in_time(scenarios::hints_resume_after_the_listener_is_killed(
        transport(&channel),
        proxied(&channel, &proxy),
        kill_b,
        resubscribed_b,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_covered_by_polling_and_the_subscribers_reconnect() {
    let channel = setup();
    let proxy = Proxy::start(&host_port(&redis_url())).await;
    in_time(scenarios::outage_is_covered_by_polling(
        proxied(&channel, &proxy),
        proxied(&channel, &proxy),
        &proxy,
        async || subscribers(&channel).await,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_to_an_unreachable_server_fails_within_the_connect_timeout() {
    let channel = setup();
    let proxy = Proxy::start(&host_port(&redis_url())).await;
    proxy.cut();
    let transport = proxied(&channel, &proxy);
    let error = transport.publish(&[1]).await.unwrap_err();
    assert!(
        matches!(
            error,
            TransportError::Connect(_) | TransportError::Timeout { .. }
        ),
        "{error:?}"
    );
    proxy.restore();
    transport.publish(&[1]).await.unwrap();
}

/// A cached sending connection that the server closed meanwhile costs no batch: the
/// send is retried once on a fresh connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_survives_a_killed_sending_connection() {
    let channel = setup();
    let proxy = Proxy::start(&host_port(&redis_url())).await;
    in_time(async {
        let writer = proxied(&channel, &proxy);
        let (received, task) = common::record(std::sync::Arc::new(transport(&channel)));
        common::await_subscribed(&writer, &received, 7).await;
        let clients = proxied_clients(&proxy, Some("normal")).await;
        assert_eq!(clients.len(), 1, "the writer's sending connection");
        let killed: usize = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(clients[0].0)
            .query_async(&mut admin().await)
            .await
            .unwrap();
        assert_eq!(killed, 1);
        received.clear();
        writer.publish(&[4]).await.unwrap();
        assert!(common::wait_until(Duration::from_secs(10), || received.ids() == vec![4]).await);
        task.abort();
    })
    .await;
}

#[test]
fn builder_validates_its_settings() {
    let channel = ChannelName::for_outbox("orders", "test").unwrap();
    assert!(matches!(
        RedisTransport::builder(channel.clone(), "http://not-redis").build(),
        Err(ConfigError::InvalidUrl(_))
    ));
    assert!(matches!(
        RedisTransport::builder(channel.clone(), "redis://h/")
            .send_timeout(Duration::ZERO)
            .build(),
        Err(ConfigError::ZeroTimeout("send_timeout"))
    ));
    let built =
        RedisTransport::builder_with_client(channel.clone(), Client::open("redis://h/").unwrap())
            .build()
            .unwrap();
    assert_eq!(built.channel(), &channel);
}
