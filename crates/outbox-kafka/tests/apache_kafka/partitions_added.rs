//! Partitions added to a topic while the publisher runs: it notices on its next metadata
//! refresh (WARN, counter) and places keys by the new count from then on, as Kafka's
//! Java client does.

use std::time::Duration;

use outbox_core::bucket::partition_for_key;
use outbox_tests::broker::{KafkaSettings, admin};

use crate::kafka::{create_topic, start};
use crate::support::{message, publish, publisher_for, read_all};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_partitions_are_noticed_and_used_for_later_records() {
    let broker = start(KafkaSettings::default());
    let topic = outbox_tests::unique_name("grow");
    create_topic(&broker, &topic, 2, &[]);
    let client = outbox_tests::kafka::client(&broker.addr()).await;
    outbox_tests::kafka::wait_topic_ready(&client, &topic, 2).await;
    // Metadata older than a millisecond is refreshed: every call sees the current count.
    let publisher = publisher_for(&broker.addr())
        .metadata_max_age(Duration::from_millis(1))
        .build()
        .unwrap();
    let keys: Vec<String> = (0..16).map(|k| format!("key-{k}")).collect();
    let batch = |tag: &str| -> Vec<_> {
        keys.iter()
            .map(|k| message(&topic, Some(k.as_bytes()), tag.as_bytes()))
            .collect()
    };
    assert!(publish(&publisher, &batch("before")).await.error.is_none());
    assert_eq!(publisher.partition_changes(), 0);

    admin::add_partitions(&broker, &topic, 4).unwrap();
    // A new client: rskafka's cache still knows two partitions.
    let client = outbox_tests::kafka::client(&broker.addr()).await;
    outbox_tests::kafka::wait_topic_ready(&client, &topic, 4).await;
    let outcome = publish(&publisher, &batch("after")).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(
        publisher.partition_changes(),
        1,
        "the change was noticed once"
    );

    // Each record sits where Kafka's partitioner puts its key for the count it was sent
    // under.
    let parts = read_all(&client, &topic, 4).await;
    for (partition, records) in parts.iter().enumerate() {
        for r in records {
            let key = r.record.key.as_deref().unwrap();
            let count = match r.record.value.as_deref() {
                Some(b"before") => 2,
                Some(b"after") => 4,
                other => panic!("unexpected value {other:?}"),
            };
            let expected = partition_for_key(key, std::num::NonZeroU32::new(count).unwrap());
            assert_eq!(
                partition as u32,
                expected,
                "{:?}",
                String::from_utf8_lossy(key)
            );
        }
    }
    let total: usize = parts.iter().map(Vec::len).sum();
    assert_eq!(total, 2 * keys.len());
}
