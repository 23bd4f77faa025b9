//! The reference's partial-failure scenario, and acknowledged prefixes.

use std::collections::HashSet;

use outbox_core::{EnqueueConfig, OutboxMessage, PublishErrorKind};
use outbox_kafka::KafkaPublishError;
use outbox_tests::proxy::{Fault, Proxy};

use crate::support::*;

fn first_deliveries(ids: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    ids.iter()
        .filter(|id| seen.insert((*id).clone()))
        .cloned()
        .collect()
}

/// Rows 1, 2, 3 share a key; row 1 is too large. The reference publisher lets 2 and 3
/// become visible before 1 fails, so after the repair a deduplicating consumer sees
/// 2, 3, 1. Here nothing of the key may be visible after the failure, and after the
/// repair the first deliveries must be exactly 1, 2, 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_row_hides_the_rows_after_it_and_repair_restores_enqueue_order() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_order", 3).await;
    let publisher = publisher_limited_to(&brokers, 4096).build().unwrap();
    let key = b"customer-42";
    let row1 = message(&topic, Some(key), &vec![b'x'; 10_000]); // too large
    let row2 = message(&topic, Some(key), b"second");
    let row3 = message(&topic, Some(key), b"third");

    let outcome = publish(&publisher, &[row1.clone(), row2.clone(), row3.clone()]).await;
    assert_eq!(outcome.acknowledged, 0);
    let error = outcome.error.expect("row 1 must fail");
    assert_eq!(error.kind, PublishErrorKind::Permanent);
    assert_eq!(
        error.message_id,
        Some(row1.message_id),
        "the error names row 1"
    );
    assert!(matches!(
        error.source.downcast_ref::<KafkaPublishError>(),
        Some(KafkaPublishError::RecordTooLarge { max: 4096, .. })
    ));
    assert_eq!(publisher.permanent_failures(), 1);

    assert_eq!(
        record_count(&client, &topic, 3).await,
        0,
        "nothing of the key may be visible after row 1 failed"
    );

    // The operator repairs row 1's payload, keeping its message id; the relay retries
    // the same rows from the front.
    let mut repaired = row1.clone();
    repaired.value = Some(b"first, repaired".to_vec());
    let outcome = publish(&publisher, &[repaired, row2.clone(), row3.clone()]).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.acknowledged, 3);

    let all: Vec<String> = read_all(&client, &topic, 3)
        .await
        .iter()
        .flat_map(|p| ids(p))
        .collect();
    let expected: Vec<String> = [&row1, &row2, &row3]
        .iter()
        .map(|m| m.message_id.to_string())
        .collect();
    assert_eq!(
        first_deliveries(&all),
        expected,
        "consumer order after deduplication"
    );
    assert_eq!(all, expected, "and no duplicates at all in this scenario");
}

/// Rows of two partitions; the later partition's produce is rejected by the broker
/// (injected through the proxy). The acknowledged prefix stops before that row, and the
/// error names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prefix_stops_at_a_later_partitions_broker_rejection() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_prefix", 2).await;
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher = publisher_for(proxy.addr()).build().unwrap();
    let pin = |p: i32, v: &[u8]| {
        OutboxMessage::builder(&topic)
            .key(b"k".to_vec())
            .value(v.to_vec())
            .partition(p)
            .build(&EnqueueConfig::default())
            .unwrap()
    };
    let batch = [pin(0, b"a1"), pin(1, b"b1"), pin(0, b"a2"), pin(1, b"b2")];
    // INVALID_RECORD (87): permanent, nothing appended.
    proxy.fault_produce_to(&topic, 1, Fault::FailWith(87), 1);
    let outcome = publish(&publisher, &batch).await;
    assert_eq!(outcome.acknowledged, 1, "only a1 precedes the failed b1");
    let error = outcome.error.unwrap();
    assert!(error.is_permanent());
    assert_eq!(error.message_id, Some(batch[1].message_id));

    let parts = read_all(&client, &topic, 2).await;
    let id = |i: usize| batch[i].message_id.to_string();
    assert_eq!(ids(&parts[0]), [id(0), id(2)], "partition 0 went through");
    assert!(
        parts[1].is_empty(),
        "nothing after the failure on partition 1"
    );

    // The relay retries from b1: a2 appears twice (allowed, deduplicated by id), order
    // per partition is kept.
    let outcome = publish(&publisher, &batch[1..]).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let parts = read_all(&client, &topic, 2).await;
    assert_eq!(ids(&parts[0]), [id(0), id(2), id(2)]);
    assert_eq!(ids(&parts[1]), [id(1), id(3)]);
}

/// A local failure in the middle: the rows before it are published and acknowledged,
/// nothing after it is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_after_a_locally_failed_row_is_sent() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_local", 2).await;
    let publisher = publisher_limited_to(&brokers, 2048).build().unwrap();
    let batch = [
        message(&topic, Some(b"a"), b"1"),
        message(&topic, Some(b"b"), b"2"),
        message(&topic, Some(b"c"), &[0u8; 4000]),
        message(&topic, Some(b"d"), b"4"),
    ];
    let outcome = publish(&publisher, &batch).await;
    assert_eq!(outcome.acknowledged, 2);
    assert_eq!(outcome.error.unwrap().message_id, Some(batch[2].message_id));
    let mut on_broker: Vec<String> = read_all(&client, &topic, 2)
        .await
        .iter()
        .flat_map(|p| ids(p))
        .collect();
    on_broker.sort();
    let mut expected = vec![
        batch[0].message_id.to_string(),
        batch[1].message_id.to_string(),
    ];
    expected.sort();
    assert_eq!(on_broker, expected);
}
