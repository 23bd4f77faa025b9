//! `PostgresTransport` against the machine's PostgreSQL (`OUTBOX_TEST_POSTGRES_URL`,
//! default `postgres://postgres@127.0.0.1:5432/test`). Every test uses its own channel, and
//! marks its connections with its own `application_name`, so that parallel test processes
//! never see each other's listeners.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::proxy::Proxy;
use common::scenarios;
use outbox_notify::postgres::{PgConnectOptions, PostgresTransport};
use outbox_notify::{ChannelName, ConfigError};
use outbox_tests::{host_port, postgres_url, require_tcp, unique_name};
use sqlx::{Connection, PgConnection};

/// A fresh channel and application name, after checking PostgreSQL is up (fails, never
/// skips, when it is not).
fn setup() -> (ChannelName, String) {
    require_tcp(
        "PostgreSQL (OUTBOX_TEST_POSTGRES_URL)",
        &host_port(&postgres_url()),
    );
    let name = unique_name("notify");
    (ChannelName::new(&name).unwrap(), name)
}

fn connect_options(application_name: &str) -> PgConnectOptions {
    postgres_url()
        .parse::<PgConnectOptions>()
        .unwrap()
        .application_name(application_name)
}

fn transport(channel: &ChannelName, application_name: &str) -> PostgresTransport {
    PostgresTransport::builder_with_options(channel.clone(), connect_options(application_name))
        .connect_timeout(Duration::from_secs(2))
        .send_timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

/// A transport whose connections go through `proxy`.
fn proxied(channel: &ChannelName, application_name: &str, proxy: &Proxy) -> PostgresTransport {
    let options = connect_options(application_name)
        .host("127.0.0.1")
        .port(proxy.addr().port());
    PostgresTransport::builder_with_options(channel.clone(), options)
        .connect_timeout(Duration::from_secs(2))
        .send_timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

async fn admin() -> PgConnection {
    PgConnection::connect(&postgres_url()).await.unwrap()
}

/// Sessions currently listening on `channel`.
async fn listeners(channel: &ChannelName) -> usize {
    let count: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE query LIKE $1")
            // `LISTEN "c"` first, `LISTEN "c";` after sqlx resubscribes.
            .bind(format!("LISTEN \"{channel}\"%"))
            .fetch_one(&mut admin().await)
            .await
            .unwrap();
    usize::try_from(count).unwrap()
}

/// Sessions opened under `application_name`.
async fn sessions(application_name: &str) -> usize {
    let count: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
            .bind(application_name)
            .fetch_one(&mut admin().await)
            .await
            .unwrap();
    usize::try_from(count).unwrap()
}

async fn in_time<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(90), test)
        .await
        .expect("the test did not finish within 90 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_in_one_relay_wakes_the_owner_in_another() {
    let (channel, name) = setup();
    let latencies = in_time(scenarios::commit_in_a_wakes_owner_b(|| {
        transport(&channel, &name)
    }))
    .await;
    eprintln!("wake-up latencies: {latencies:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_foreign_and_unknown_hints() {
    let (channel, name) = setup();
    in_time(scenarios::duplicate_foreign_and_unknown_hints(|| {
        transport(&channel, &name)
    }))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn received_hints_are_not_rebroadcast() {
    let (channel, name) = setup();
    in_time(scenarios::received_hints_are_not_rebroadcast(|| {
        transport(&channel, &name)
    }))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_commits_is_coalesced() {
    let (channel, name) = setup();
    let sends = in_time(scenarios::burst_is_coalesced(|| transport(&channel, &name))).await;
    eprintln!("10,000 commits, {sends} sends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_listen_waits_for_running_callbacks_and_unlistens() {
    let (channel, name) = setup();
    in_time(scenarios::cancel_while_callbacks_run(|| {
        transport(&channel, &name)
    }))
    .await;
    let released = common::wait_until_async(Duration::from_secs(10), async || {
        listeners(&channel).await == 0
    })
    .await;
    assert!(released, "the LISTEN session outlived the cancelled listen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_round_trip_through_notify() {
    let (channel, name) = setup();
    let send_raw = async |payload: &str| {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(channel.as_str())
            .bind(payload)
            .execute(&mut admin().await)
            .await
            .unwrap();
    };
    in_time(scenarios::payloads_round_trip(
        || transport(&channel, &name),
        send_raw,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_relay_closes_its_connections() {
    let (channel, name) = setup();
    // The listening session and the sending session.
    in_time(scenarios::stopping_the_relay_stops_the_workers(
        transport(&channel, &name),
        2,
        async || sessions(&name).await,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hints_resume_after_the_listening_backend_is_terminated() {
    let (channel, name) = setup();
    let name_b = format!("{name}_b");
    let kill_b = async || -> Vec<i32> {
        let pids: Vec<i32> = sqlx::query_scalar(
            // Materialized first, so that only the selected sessions are terminated.
            "WITH b AS MATERIALIZED (SELECT pid FROM pg_stat_activity \
             WHERE application_name = $1 AND query LIKE 'LISTEN%') \
             SELECT pid FROM b WHERE pg_terminate_backend(pid)",
        )
        .bind(&name_b)
        .fetch_all(&mut admin().await)
        .await
        .unwrap();
        assert_eq!(pids.len(), 1, "exactly B's listening session is terminated");
        pids
    };
    let resubscribed_b = async |killed: &Vec<i32>| -> bool {
        let pids: Vec<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'",
        )
        .bind(&name_b)
        .fetch_all(&mut admin().await)
        .await
        .unwrap();
        pids.iter().any(|pid| !killed.contains(pid))
    };
    in_time(scenarios::hints_resume_after_the_listener_is_killed(
        transport(&channel, &name),
        transport(&channel, &name_b),
        kill_b,
        resubscribed_b,
    ))
    .await;
}

/// sqlx's PgListener notices the terminated backend, reconnects and listens again inside
/// the same `listen` call: the call does not end, and hints arrive on the new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_listen_call_survives_a_terminated_backend() {
    let (channel, name) = setup();
    in_time(async {
        let writer = transport(&channel, &format!("{name}_w"));
        let (received, task) = common::record(std::sync::Arc::new(transport(&channel, &name)));
        common::await_subscribed(&writer, &received, 7).await;
        let killed: Vec<i32> = sqlx::query_scalar(
            "WITH l AS MATERIALIZED (SELECT pid FROM pg_stat_activity \
             WHERE application_name = $1 AND query LIKE 'LISTEN%') \
             SELECT pid FROM l WHERE pg_terminate_backend(pid)",
        )
        .bind(&name)
        .fetch_all(&mut admin().await)
        .await
        .unwrap();
        assert_eq!(killed.len(), 1);
        let reopened = common::wait_until_async(Duration::from_secs(10), async || {
            let pids: Vec<i32> = sqlx::query_scalar(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'",
            )
            .bind(&name)
            .fetch_all(&mut admin().await)
            .await
            .unwrap();
            pids.iter().any(|pid| !killed.contains(pid))
        })
        .await;
        assert!(reopened, "no new LISTEN session");
        received.clear();
        common::await_subscribed(&writer, &received, 5).await;
        assert!(!task.is_finished(), "the listen call ended instead of reconnecting");
        task.abort();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_covered_by_polling_and_the_listeners_reconnect() {
    let (channel, name) = setup();
    let proxy = Proxy::start(&host_port(&postgres_url())).await;
    in_time(scenarios::outage_is_covered_by_polling(
        proxied(&channel, &name, &proxy),
        proxied(&channel, &name, &proxy),
        &proxy,
        async || listeners(&channel).await,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_to_an_unreachable_server_fails_within_the_connect_timeout() {
    use outbox_notify::{NotificationTransport, TransportError};
    let (channel, name) = setup();
    let proxy = Proxy::start(&host_port(&postgres_url())).await;
    proxy.cut();
    let transport = proxied(&channel, &name, &proxy);
    let error = transport.publish(&[1]).await.unwrap_err();
    assert!(
        matches!(
            error,
            TransportError::Connect(_) | TransportError::Timeout { .. }
        ),
        "{error:?}"
    );
    // The same transport works once the server is back.
    proxy.restore();
    transport.publish(&[1]).await.unwrap();
}

/// A cached sending connection that the server closed meanwhile costs no batch: the
/// send is retried once on a fresh connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_survives_a_terminated_sending_backend() {
    use outbox_notify::NotificationTransport;
    let (channel, name) = setup();
    in_time(async {
        let writer = transport(&channel, &name);
        let (received, task) = common::record(std::sync::Arc::new(transport(
            &channel,
            &format!("{name}_l"),
        )));
        common::await_subscribed(&writer, &received, 7).await;
        let killed: Vec<i32> = sqlx::query_scalar(
            "WITH s AS MATERIALIZED (SELECT pid FROM pg_stat_activity \
             WHERE application_name = $1 AND query LIKE 'SELECT pg_notify%') \
             SELECT pid FROM s WHERE pg_terminate_backend(pid)",
        )
        .bind(&name)
        .fetch_all(&mut admin().await)
        .await
        .unwrap();
        assert_eq!(killed.len(), 1, "the writer's sending session");
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
        PostgresTransport::builder(channel.clone(), "postgres://u@h:notaport/db").build(),
        Err(ConfigError::InvalidUrl(_))
    ));
    assert!(matches!(
        PostgresTransport::builder(channel.clone(), "postgres://u@h/db")
            .send_timeout(Duration::ZERO)
            .build(),
        Err(ConfigError::ZeroTimeout("send_timeout"))
    ));
    assert!(matches!(
        PostgresTransport::builder(channel.clone(), "postgres://u@h/db")
            .connect_timeout(Duration::ZERO)
            .build(),
        Err(ConfigError::ZeroTimeout("connect_timeout"))
    ));
    let built = PostgresTransport::builder(channel.clone(), "postgres://u@h/db")
        .build()
        .unwrap();
    assert_eq!(built.channel(), &channel);
}
