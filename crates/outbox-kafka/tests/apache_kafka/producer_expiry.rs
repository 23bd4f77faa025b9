//! Producer-state expiry: a broker with a short `producer.id.expiration.ms` forgets an
//! idle producer; the publisher's next call, still under the old id and sequences,
//! recovers with no loss, no reorder and no duplicate.

use std::time::Duration;

use outbox_tests::broker::{Broker, KafkaSettings, admin};

use crate::kafka::{create_topic, start};
use crate::support::{ids, message, publish, publisher_for};

/// The producer ids the broker keeps state for on `topic`/0 (Kafka's own tool: a table
/// whose first column is the producer id, under a header line).
fn active_producers(broker: &Broker, topic: &str) -> Vec<i64> {
    admin::run_tool(
        broker,
        "org.apache.kafka.tools.TransactionsCommand",
        &["describe-producers", "--topic", topic, "--partition", "0"],
    )
    .unwrap()
    .lines()
    .filter_map(|l| l.split_whitespace().next()?.parse().ok())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_after_the_broker_expired_the_producer_recovers_without_loss_or_reorder() {
    let broker = start(KafkaSettings::default().producer_id_expiration(Duration::from_secs(2)));
    let topic = outbox_tests::unique_name("expiry");
    create_topic(&broker, &topic, 1, &[]);
    let client = outbox_tests::kafka::client(&broker.addr()).await;
    outbox_tests::kafka::wait_topic_ready(&client, &topic, 1).await;
    let publisher = publisher_for(&broker.addr()).build().unwrap();

    let first: Vec<_> = (0..5)
        .map(|i| message(&topic, Some(b"k"), format!("a{i}").as_bytes()))
        .collect();
    for row in &first {
        let outcome = publish(&publisher, std::slice::from_ref(row)).await;
        assert!(outcome.error.is_none(), "{:?}", outcome.error);
    }
    let producer_id = publisher.producer_id().expect("a producer id was obtained");
    let active = active_producers(&broker, &topic);
    assert!(
        active.contains(&producer_id),
        "the broker holds state for producer {producer_id}: {active:?}"
    );

    // Idle until the broker has dropped the producer (its own tool says so).
    let mut expired = false;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if !active_producers(&broker, &topic).contains(&producer_id) {
            expired = true;
            break;
        }
    }
    assert!(expired, "the broker never expired producer {producer_id}");

    let second: Vec<_> = (0..5)
        .map(|i| message(&topic, Some(b"k"), format!("b{i}").as_bytes()))
        .collect();
    let outcome = publish(&publisher, &second).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.acknowledged, second.len());

    let expected: Vec<String> = first
        .iter()
        .chain(&second)
        .map(|m| m.message_id.to_string())
        .collect();
    let got = ids(&outbox_tests::kafka::read_partition(&client, &topic, 0).await);
    assert_eq!(got, expected, "every row once, in order, across the expiry");
}
