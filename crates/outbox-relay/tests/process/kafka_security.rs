//! The relay binary against a private Apache Kafka with SASL/SCRAM and the
//! StandardAuthorizer: a wrong password is one clear error naming the mechanism and the
//! broker, in the log and in `/readyz`; a topic the relay may not write is waited out
//! (WARN naming it, a metric rising, nothing parked) and flows by itself once the ACL is
//! granted.

use std::time::Duration;

use outbox_tests::broker::{Broker, BrokerKind, BrokerSpec, KafkaSettings, admin};
use outbox_tests::faults::FaultEnv;
use outbox_tests::faults::checker::read_topic;

use crate::common::{Relay, sqlite_args, wait_for};
use crate::logs::{table_args, write_one};
use crate::probes::{assert_alive_not_ready, warn_line};

const USER: &str = "relay";
const PASSWORD: &str = "relay-secret";

fn scram_broker() -> Broker {
    outbox_tests::start_broker(
        &BrokerSpec::private(BrokerKind::Kafka).kafka(
            KafkaSettings::default()
                .scram_user(USER, PASSWORD)
                .authorizer(true)
                .auto_create_topics(false),
        ),
    )
}

fn sasl_args(broker: &Broker) -> Vec<String> {
    [
        "--brokers",
        &broker.addr(),
        "--sasl-mechanism",
        "scram-sha-256",
        "--sasl-username",
        USER,
        "--max-error-backoff",
        "2s",
    ]
    .map(str::to_owned)
    .to_vec()
}

#[test]
fn a_wrong_password_is_one_clear_error_naming_the_mechanism_and_the_broker() {
    let broker = scram_broker();
    let url = outbox_tests::sqlite_url();
    let mut args = sqlite_args(&url);
    args.extend(sasl_args(&broker));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let relay = Relay::start(&args, &[("OUTBOX_SASL_PASSWORD", "not-the-password")]);
    let says = format!(
        "SASL SCRAM-SHA-256 authentication with the broker at {}",
        broker.addr()
    );
    let mut line = None;
    assert!(
        wait_for(
            || {
                line = warn_line(&relay.output(), "broker", &broker.addr());
                line.is_some()
            },
            Duration::from_secs(10)
        ),
        "no WARN line naming the broker\n{}",
        relay.output()
    );
    let line = line.unwrap();
    assert!(line.contains(&says), "{line}");
    assert_alive_not_ready(&relay, &says);
    let (status, output) = relay.terminate();
    assert_eq!(status.code(), Some(0), "{output}");
    assert!(!output.contains(" ERROR "), "{output}");
}

/// The value of `metric` with `topic` in its labels on the relay's `/metrics`.
fn counter_for(relay: &Relay, metric: &str, topic: &str) -> f64 {
    relay
        .get("/metrics")
        .map(|(_, body)| {
            body.lines()
                .filter(|l| l.starts_with(metric) && l.contains(&format!("topic=\"{topic}\"")))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        })
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_without_a_write_acl_waits_unparked_and_flows_once_granted() {
    let broker = scram_broker();
    // Tables on PostgreSQL, the topic created through the broker's internal listener
    // (its anonymous principal is a super user).
    let env = FaultEnv::new("relay_acl", &broker.admin_addr(), 1).await;
    // WRITE on some other topic lets the relay obtain a producer id (KIP-679), so what
    // it meets is the missing ACL on its own topic, not a cluster refusal.
    admin::grant_topic(&broker, &format!("User:{USER}"), "unrelated", &["Write"]).unwrap();

    let mut args = vec!["--database-url".to_owned(), env.database_url.clone()];
    args.extend(table_args(&env));
    args.extend(sasl_args(&broker));
    args.extend(["--error-backoff", "200ms"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let relay = Relay::start(&args, &[("OUTBOX_SASL_PASSWORD", PASSWORD)]);
    relay.wait_ready(Duration::from_secs(60));
    write_one(&env, "k1").await;

    let metric = "outbox_kafka_topic_unavailable";
    assert!(
        wait_for(
            || counter_for(&relay, metric, &env.topic) >= 3.0,
            Duration::from_secs(30)
        ),
        "{metric} for {} did not rise past 3: {:?}\n{}",
        env.topic,
        relay.get("/metrics"),
        relay.output()
    );
    let output = relay.output();
    assert!(
        output.lines().any(|l| l.contains(" WARN ")
            && l.contains(&env.topic)
            && l.contains("TOPIC_AUTHORIZATION_FAILED")),
        "no WARN naming the topic and the refusal\n{output}"
    );
    assert_eq!(env.parked().await, 0, "a missing ACL parks nothing");
    assert_eq!(env.pending().await, 1, "the row waits");

    admin::grant_topic(
        &broker,
        &format!("User:{USER}"),
        &env.topic,
        &["Write", "Describe"],
    )
    .unwrap();
    assert!(
        env.wait_drained(Duration::from_secs(30)).await,
        "the row did not flow after the grant\n{}",
        relay.output()
    );
    let published = read_topic(&broker.admin_addr(), &env.topic).await;
    assert_eq!(published.len(), 1, "{published:?}");
    assert_eq!(env.parked().await, 0);
    let (status, output) = relay.terminate();
    assert_eq!(status.code(), Some(0), "{output}");
    env.drop_tables().await;
}
