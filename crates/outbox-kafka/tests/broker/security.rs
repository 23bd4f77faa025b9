//! TLS end to end, SASL plumbing, and cancellation.
//!
//! Tansu 0.6.0 cannot serve TLS from its command line (its `--cert` and `--key` flags
//! are mutually exclusive, and the listener stays plain TCP either way), so TLS is
//! terminated by the test proxy in front of it: the publisher's side is real rustls with
//! certificate and host-name verification.

use std::time::Duration;

use outbox_kafka::{KafkaPublishError, Sasl};
use outbox_tests::proxy::{Fault, PRODUCE, Proxy};
use outbox_tests::tls::test_pki;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_over_tls_and_refuses_an_untrusted_certificate() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_tls", 1).await;
    let pki = test_pki(&["127.0.0.1", "localhost"]);
    let proxy = Proxy::start_kafka_tls(&brokers, pki.server.clone())
        .await
        .unwrap();

    let publisher = publisher_for(proxy.addr())
        .tls(pki.client.clone())
        .build()
        .unwrap();
    let batch: Vec<_> = (0..3)
        .map(|i| message(&topic, Some(b"k"), format!("{i}").as_bytes()))
        .collect();
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert!(
        proxy.requests(PRODUCE) >= 1,
        "the produce went through the TLS proxy"
    );
    let got = outbox_tests::kafka::read_partition(&client, &topic, 0).await;
    assert_eq!(
        ids(&got),
        batch
            .iter()
            .map(|m| m.message_id.to_string())
            .collect::<Vec<_>>()
    );

    // A client that does not trust the server's CA never gets to publish.
    let untrusting = publisher_for(proxy.addr())
        .tls(pki.untrusting_client.clone())
        .delivery_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let outcome = publish(&untrusting, &batch).await;
    assert_eq!(outcome.acknowledged, 0);
    let error = outcome.error.unwrap();
    assert!(
        error.is_permanent(),
        "a certificate that does not verify is permanent: {error}"
    );
    assert!(matches!(
        error.source.downcast_ref::<KafkaPublishError>(),
        Some(KafkaPublishError::Connection {
            permanent: true,
            ..
        })
    ));
}

/// Tansu 0.6.0 without `--authentication` cannot check credentials, so this only shows
/// that configured SASL credentials reach the wire: the publisher runs the SASL
/// handshake (api key 17) before anything else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_credentials_are_sent_in_the_handshake() {
    const SASL_HANDSHAKE: i16 = 17;
    let brokers = brokers();
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher = publisher_for(proxy.addr())
        .sasl(Sasl::Plain {
            username: "relay".into(),
            password: "secret".into(),
        })
        .delivery_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(30), publisher.connect())
        .await
        .unwrap();
    assert!(
        proxy.requests(SASL_HANDSHAKE) >= 1,
        "no SASL handshake was sent"
    );
    // Neither broker kind enables SASL on the test listener (Apache Kafka's is PLAINTEXT,
    // Tansu has no authentication): the mechanism is refused, and a refused
    // authentication is permanent, not retried.
    let e = result.expect_err("a listener without SASL accepted SASL/PLAIN");
    assert!(e.is_permanent(), "{e}");
}

/// Dropping a publish future while a batch is on the wire leaves its fate unknown:
/// the producer id is dropped so that the next send cannot reuse the sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_publish_invalidates_the_producer_id() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_cancel", 1).await;
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher = publisher_for(proxy.addr()).build().unwrap();
    publisher.connect().await.unwrap();
    assert!(publisher.producer_id().is_some());
    let batch = [message(&topic, Some(b"k"), b"v")];
    proxy.fault_next(PRODUCE, Fault::DropResponse, 1);
    let cancelled = tokio::time::timeout(
        Duration::from_millis(500),
        outbox_core::Publisher::publish(&publisher, &batch),
    )
    .await;
    assert!(cancelled.is_err(), "the publish should still be waiting");
    assert_eq!(publisher.producer_id(), None);
    // The relay retries: the record was appended by the cancelled call and is appended
    // again under the new producer id (a duplicate the message id identifies).
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let got = ids(&outbox_tests::kafka::read_partition(&client, &topic, 0).await);
    assert_eq!(got, vec![batch[0].message_id.to_string(); 2]);
}
