//! A private Apache Kafka node per test, and its admin tools.

use std::time::Duration;

use outbox_core::RelayOptions;
use outbox_core::driver::{Relay, RelayHandle};
use outbox_core::testing::MemoryStore;
use outbox_kafka::KafkaPublisher;
use outbox_tests::broker::{Broker, BrokerKind, BrokerSpec, KafkaSettings, admin};

/// Starts a private Apache Kafka node with `settings` and waits until it is ready.
pub fn start(settings: KafkaSettings) -> Broker {
    outbox_tests::start_broker(&BrokerSpec::private(BrokerKind::Kafka).kafka(settings))
}

/// Creates `topic` through Kafka's own tool, with topic `configs`.
pub fn create_topic(broker: &Broker, topic: &str, partitions: u32, configs: &[(&str, &str)]) {
    admin::create_topic(broker, topic, partitions, configs)
        .unwrap_or_else(|e| panic!("creating {topic}: {e:#}"));
}

/// Polls `condition` every 50 ms until it holds or `within` passes; whether it held.
pub async fn eventually(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The real relay draining `store` through `publisher`, polling every 50 ms and backing
/// off from 50 ms up to `max_error_backoff`, so a scenario with failures runs in seconds.
pub fn spawn_relay(
    store: &MemoryStore,
    publisher: KafkaPublisher,
    max_error_backoff: Duration,
) -> RelayHandle {
    let options = RelayOptions::builder()
        .poll_interval(Duration::from_millis(50))
        .error_backoff(Duration::from_millis(50))
        .max_error_backoff(max_error_backoff)
        .build()
        .unwrap();
    Relay::spawn(store.clone(), publisher, options).unwrap()
}
