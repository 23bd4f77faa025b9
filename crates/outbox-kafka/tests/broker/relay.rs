//! The real relay (outbox-core's driver) publishing through the Kafka publisher.

use std::time::Duration;

use outbox_core::driver::Relay;
use outbox_core::testing::MemoryStore;
use outbox_core::{EnqueueConfig, OutboxMessage, RelayOptions};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_drains_a_store_into_the_topic_in_key_order() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_relay", 3).await;
    let publisher = publisher_for(&brokers).build().unwrap();
    let store = MemoryStore::new();
    let config = EnqueueConfig::default();
    let rows: Vec<OutboxMessage> = (0..60)
        .map(|i| {
            OutboxMessage::builder(&topic)
                .key(format!("key-{}", i % 7))
                .value(format!("{i}"))
                .build(&config)
                .unwrap()
        })
        .collect();
    store.enqueue_all(rows.clone());
    let options = RelayOptions::builder()
        .poll_interval(Duration::from_millis(50))
        .build()
        .unwrap();
    let relay = Relay::spawn(store.clone(), publisher, options).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while store.pending_count() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the relay did not drain the store"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    relay.stop(Duration::from_secs(5)).await.unwrap();

    let parts = read_all(&client, &topic, 3).await;
    let all: Vec<String> = parts.iter().flat_map(|p| ids(p)).collect();
    assert_eq!(all.len(), rows.len(), "each row exactly once");
    for k in 0..7 {
        let key = format!("key-{k}");
        let expected: Vec<String> = rows
            .iter()
            .filter(|m| m.key.as_deref() == Some(key.as_bytes()))
            .map(|m| m.message_id.to_string())
            .collect();
        let got: Vec<String> = parts
            .iter()
            .flat_map(|p| p.iter())
            .filter(|r| r.record.key.as_deref() == Some(key.as_bytes()))
            .map(|r| outbox_tests::kafka::header_text(r, ID_HEADER).unwrap())
            .collect();
        assert_eq!(got, expected, "{key} in enqueue order");
    }
}
