//! Idempotence for real: lost responses, leader changes and sequence errors injected
//! between the publisher and the broker by the test proxy.

use std::time::Duration;

use outbox_kafka::KafkaPublishError;
use outbox_tests::proxy::{Fault, PRODUCE, Proxy};

use crate::support::*;

/// The broker appends, the proxy swallows the answer; the publisher times out and drops
/// the connection, then resends the batch under the same producer id and sequence. The
/// broker recognises it as appended already (Apache Kafka answers success with the
/// original offset; Tansu DUPLICATE_SEQUENCE_NUMBER): the batch is on the topic once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_produce_response_is_resent_with_its_sequence_and_not_duplicated() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_lost_ack", 1).await;
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher = publisher_for(proxy.addr())
        .request_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    // A first publish so that the swallowed batch is not at sequence 0.
    let warm = [message(&topic, Some(b"k"), b"warm-up")];
    assert!(publish(&publisher, &warm).await.error.is_none());

    let batch: Vec<_> = (0..5)
        .map(|i| message(&topic, Some(b"k"), format!("v{i}").as_bytes()))
        .collect();
    let id = publisher.producer_id();
    let before = proxy.requests(PRODUCE);
    proxy.fault_next(PRODUCE, Fault::DropResponse, 1);
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.acknowledged, 5);
    assert_eq!(proxy.faults_applied(), 1);
    assert_eq!(
        proxy.requests(PRODUCE) - before,
        2,
        "one lost answer, one resend"
    );

    assert_eq!(
        publisher.producer_id(),
        id,
        "the resend kept the producer id"
    );

    let got = ids(&outbox_tests::kafka::read_partition(&client, &topic, 0).await);
    let expected: Vec<String> = warm
        .iter()
        .chain(&batch)
        .map(|m| m.message_id.to_string())
        .collect();
    assert_eq!(got, expected, "the first attempt's copy only");
}

/// Same, but the proxy also closes the connection after swallowing the answer (a
/// connection reset right after the broker appended): every record arrives once, each
/// partition in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cut_after_the_append_loses_nothing() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_cut", 2).await;
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher = publisher_for(proxy.addr()).build().unwrap();
    let batch: Vec<_> = (0..6)
        .map(|i| message(&topic, Some(format!("key{}", i % 3).as_bytes()), b"v"))
        .collect();
    proxy.fault_next(PRODUCE, Fault::DropResponseAndClose, 1);
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.acknowledged, 6);
    let partitions = read_all(&client, &topic, 2).await;
    let position: std::collections::HashMap<String, usize> = batch
        .iter()
        .enumerate()
        .map(|(i, m)| (m.message_id.to_string(), i))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut total = 0;
    for p in &partitions {
        let mut first = Vec::new();
        for id in ids(p) {
            total += 1;
            if seen.insert(id.clone()) {
                first.push(position[&id]);
            }
        }
        assert!(
            first.windows(2).all(|w| w[0] < w[1]),
            "first deliveries in order"
        );
    }
    assert_eq!(seen.len(), 6, "every record arrived");
    assert_eq!(
        total, 6,
        "the cut partition's batch was resent with its sequence: no duplicate"
    );
}

/// NOT_LEADER_OR_FOLLOWER: nothing appended; the publisher refreshes metadata and
/// resends within the same call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_change_is_retried_within_the_call() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_not_leader", 1).await;
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher = publisher_for(proxy.addr()).build().unwrap();
    let batch: Vec<_> = (0..3).map(|_| message(&topic, Some(b"k"), b"v")).collect();
    proxy.fault_next(PRODUCE, Fault::FailWith(6), 2);
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(proxy.faults_applied(), 2);
    let got = ids(&outbox_tests::kafka::read_partition(&client, &topic, 0).await);
    assert_eq!(got.len(), 3);
}

/// A retryable error that outlasts the delivery timeout: reported as retryable, nothing
/// acknowledged, nothing appended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_retryable_error_ends_at_the_delivery_timeout() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_timeout", 1).await;
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher = publisher_for(proxy.addr())
        .request_timeout(Duration::from_millis(500))
        .delivery_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let batch = [message(&topic, Some(b"k"), b"v")];
    proxy.fault_next(PRODUCE, Fault::FailWith(19), 1000); // NOT_ENOUGH_REPLICAS
    let started = std::time::Instant::now();
    let outcome = publish(&publisher, &batch).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(outcome.acknowledged, 0);
    let error = outcome.error.unwrap();
    assert!(!error.is_permanent());
    assert!(matches!(
        error.source.downcast_ref::<KafkaPublishError>(),
        Some(KafkaPublishError::DeliveryTimeout { .. })
    ));
    assert!(
        outbox_tests::kafka::read_partition(&client, &topic, 0)
            .await
            .is_empty()
    );
}

/// OUT_OF_ORDER_SEQUENCE_NUMBER: the batch is reported not acknowledged (retryable),
/// the producer id is re-initialised, and the relay's retry goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequence_error_reinitialises_the_producer() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_sequence", 1).await;
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher = publisher_for(proxy.addr()).build().unwrap();
    publisher.connect().await.unwrap();
    let first_id = publisher.producer_id().unwrap();
    let batch: Vec<_> = (0..2).map(|_| message(&topic, Some(b"k"), b"v")).collect();
    proxy.fault_next(PRODUCE, Fault::FailWith(45), 1);
    let outcome = publish(&publisher, &batch).await;
    assert_eq!(outcome.acknowledged, 0);
    let error = outcome.error.unwrap();
    assert!(!error.is_permanent());
    assert!(matches!(
        error.source.downcast_ref::<KafkaPublishError>(),
        Some(KafkaPublishError::Sequence { code: 45, .. })
    ));
    assert_eq!(
        publisher.producer_id(),
        None,
        "the old producer id is dropped"
    );

    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_ne!(publisher.producer_id(), Some(first_id), "a new producer id");
    assert_eq!(
        outbox_tests::kafka::read_partition(&client, &topic, 0)
            .await
            .len(),
        2
    );
}

/// The answer to a batch is lost, then the broker cannot be reached for a while (as when
/// it restarts), then the resend is answered DUPLICATE_SEQUENCE_NUMBER. A broker that
/// forgot its producer state may have given our producer id to someone else, so that
/// answer proves nothing: the batch is reported unacknowledged (never a loss), and the
/// relay's next publish appends it again under a new producer id (a duplicate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_answer_after_the_broker_was_unreachable_is_not_trusted() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_dup_after_outage", 1).await;
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher = publisher_for(proxy.addr())
        .retry_backoff(Duration::from_millis(300), Duration::from_millis(300))
        .build()
        .unwrap();
    let warm = [message(&topic, Some(b"k"), b"warm-up")];
    assert!(publish(&publisher, &warm).await.error.is_none());
    let first_id = publisher.producer_id().unwrap();

    let batch: Vec<_> = (0..3)
        .map(|i| message(&topic, Some(b"k"), format!("v{i}").as_bytes()))
        .collect();
    let before = proxy.requests(PRODUCE);
    proxy.fault_next(PRODUCE, Fault::DropResponseAndClose, 1);
    proxy.fault_next(PRODUCE, Fault::FailWith(46), 1);
    let call = {
        let (publisher, batch) = (publisher.clone(), batch.clone());
        tokio::spawn(async move { publish(&publisher, &batch).await })
    };
    // Refuse connections as soon as the first attempt went through (the publisher waits
    // 300 ms before reconnecting), for long enough that it tries and fails.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while proxy.requests(PRODUCE) == before {
        assert!(tokio::time::Instant::now() < deadline, "no produce request");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    proxy.set_refusing(true);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    proxy.set_refusing(false);
    let outcome = call.await.unwrap();
    assert_eq!(
        proxy.faults_applied(),
        2,
        "lost answer, then the duplicate answer"
    );
    assert_eq!(
        outcome.acknowledged, 0,
        "the duplicate answer was not trusted"
    );
    assert!(
        outcome.error.as_ref().is_some_and(untrusted_duplicate),
        "{:?}",
        outcome.error
    );
    assert_eq!(publisher.producer_id(), None, "the producer id is dropped");

    // The relay publishes the rows again: appended a second time, nothing lost.
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_ne!(publisher.producer_id(), Some(first_id));
    let got = ids(&outbox_tests::kafka::read_partition(&client, &topic, 0).await);
    let once: Vec<String> = batch.iter().map(|m| m.message_id.to_string()).collect();
    let expected: Vec<String> = std::iter::once(warm[0].message_id.to_string())
        .chain(once.iter().cloned())
        .chain(once.iter().cloned())
        .collect();
    assert_eq!(got, expected, "the first attempt's copy, then the resend's");
}

/// A broker that cannot be reached: a retryable connection error within the delivery
/// timeout, nothing acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_broker_is_a_retryable_error() {
    let port = outbox_tests::broker::pick_free_port().unwrap();
    let publisher = publisher_for(&format!("127.0.0.1:{port}"))
        .request_timeout(Duration::from_millis(300))
        .delivery_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let outcome = publish(&publisher, &[message("some_topic", None, b"v")]).await;
    assert_eq!(outcome.acknowledged, 0);
    let error = outcome.error.unwrap();
    assert!(!error.is_permanent(), "{error}");
}
