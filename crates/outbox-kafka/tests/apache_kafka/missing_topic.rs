//! Auto-creation off and rows for a topic that does not exist: they wait (retried with
//! the relay's backoff, counted, never parked) and flow once the topic is created, with
//! no operator action on the relay.

use std::time::Duration;

use outbox_core::testing::MemoryStore;
use outbox_core::{EnqueueConfig, OutboxMessage};
use outbox_kafka::{KafkaPublishError, TopicUnavailableReason};
use outbox_tests::broker::KafkaSettings;

use crate::kafka::{create_topic, eventually, spawn_relay, start};
use crate::support::{ID_HEADER, message, publish, publisher_for};

/// One publish call: the topic is reported unavailable, nothing is blamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_topic_is_a_setup_fault_that_names_the_topic_and_blames_no_row() {
    let broker = start(KafkaSettings::default().auto_create_topics(false));
    let missing = outbox_tests::unique_name("missing");
    let publisher = publisher_for(&broker.addr()).build().unwrap();
    let outcome = publish(&publisher, &[message(&missing, Some(b"k"), b"v")]).await;
    assert_eq!(outcome.acknowledged, 0);
    let error = outcome.error.expect("the topic does not exist");
    assert_eq!(error.kind, outbox_core::PublishErrorKind::Setup, "{error}");
    assert_eq!(error.blamed_message(), None, "no row is blamed: {error}");
    let source = error.source.downcast_ref::<KafkaPublishError>().unwrap();
    assert_eq!(
        source.topic_unavailable(),
        Some((missing.as_str(), TopicUnavailableReason::Missing))
    );
    assert!(error.to_string().contains(&missing), "{error}");
    assert_eq!(publisher.topic_unavailable(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_for_a_missing_topic_wait_unparked_and_flow_once_it_is_created() {
    let broker = start(KafkaSettings::default().auto_create_topics(false));
    let missing = outbox_tests::unique_name("later");
    let config = EnqueueConfig::default();
    let rows: Vec<OutboxMessage> = (0..30)
        .map(|i| {
            OutboxMessage::builder(&missing)
                .key(format!("key-{}", i % 5))
                .value(format!("{i}"))
                .build(&config)
                .unwrap()
        })
        .collect();
    let store = MemoryStore::new();
    store.enqueue_all(rows.clone());
    let publisher = publisher_for(&broker.addr()).build().unwrap();
    let relay = spawn_relay(&store, publisher.clone(), Duration::from_millis(400));

    // Retried again and again (each attempt counted), well past max_publish_attempts (3),
    // and nothing parked: a broker-side configuration fault is not the rows' fault.
    assert!(
        eventually(Duration::from_secs(30), || publisher.topic_unavailable()
            >= 8)
        .await,
        "the relay stopped retrying: {} attempts counted",
        publisher.topic_unavailable()
    );
    assert!(store.parked().is_empty(), "{:?}", store.parked());
    assert_eq!(store.pending_count(), rows.len(), "every row still waits");

    create_topic(&broker, &missing, 3, &[]);
    let drained = eventually(Duration::from_secs(30), || store.pending_count() == 0).await;
    relay.stop(Duration::from_secs(5)).await.unwrap();
    assert!(drained, "{} rows still pending", store.pending_count());
    assert!(store.parked().is_empty());

    let client = outbox_tests::kafka::client(&broker.addr()).await;
    for k in 0..5 {
        let key = format!("key-{k}");
        let expected: Vec<String> = rows
            .iter()
            .filter(|m| m.key.as_deref() == Some(key.as_bytes()))
            .map(|m| m.message_id.to_string())
            .collect();
        let mut got = Vec::new();
        for p in 0..3 {
            for r in outbox_tests::kafka::read_partition(&client, &missing, p).await {
                if r.record.key.as_deref() == Some(key.as_bytes()) {
                    got.push(outbox_tests::kafka::header_text(&r, ID_HEADER).unwrap());
                }
            }
        }
        assert_eq!(got, expected, "{key}: each row once, in enqueue order");
    }
}
