//! A private Apache Kafka node per test, and its admin tools.

use std::time::Duration;

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
