//! Measurement against the real broker: `LANES` concurrent publish loops, each writing
//! single-partition batches to its own partition through one publisher, with shared
//! produce requests (the production setting) and with one request per partition batch
//! pipelined on the connection (how the publisher sent before requests were shared; it
//! exists only here, for comparison). Both must deliver everything; the wall times and
//! request counts are printed, not asserted (timing claims belong to benchmarks):
//!
//! `cargo nextest run -p outbox-kafka --lib coalesce::measure_tests --no-capture`

use std::time::{Duration, Instant};

use outbox_core::{EnqueueConfig, OutboxMessage, Publisher};

use super::{MAX_IN_FLIGHT_PER_CONNECTION, RequestLimit};
use crate::KafkaPublisher;

const LANES: i32 = 8;
const ROUNDS: usize = 100;
const ROWS: usize = 5;

struct Figures {
    elapsed: Duration,
    requests: u64,
    batches: u64,
}

async fn run(brokers: &str, topic: &str, shared: bool) -> Figures {
    let config = KafkaPublisher::builder(brokers.split(','))
        .client_id("outbox-kafka-measure")
        .build_config()
        .unwrap();
    let limit = RequestLimit {
        max_request_size: config.max_request_size,
        client_id_len: config.client_id.len(),
        max_batches: if shared { usize::MAX } else { 1 },
        max_in_flight: if shared {
            MAX_IN_FLIGHT_PER_CONNECTION
        } else {
            usize::MAX
        },
    };
    let publisher = KafkaPublisher::with_request_limit(config, limit);
    publisher.connect().await.unwrap();
    // Warm the metadata cache and the connection.
    let warm = message(topic, 0, 0);
    assert!(publisher.publish(&[warm]).await.error.is_none());
    let (requests0, batches0) = (publisher.produce_requests(), publisher.produce_batches());

    let started = Instant::now();
    let lanes: Vec<_> = (0..LANES)
        .map(|partition| {
            let (publisher, topic) = (publisher.clone(), topic.to_owned());
            tokio::spawn(async move {
                for round in 0..ROUNDS {
                    let batch: Vec<OutboxMessage> = (0..ROWS)
                        .map(|i| message(&topic, partition, round * ROWS + i))
                        .collect();
                    let outcome = publisher.publish(&batch).await;
                    assert!(outcome.error.is_none(), "{:?}", outcome.error);
                    assert_eq!(outcome.acknowledged, ROWS);
                }
            })
        })
        .collect();
    for lane in lanes {
        lane.await.unwrap();
    }
    Figures {
        elapsed: started.elapsed(),
        requests: publisher.produce_requests() - requests0,
        batches: publisher.produce_batches() - batches0,
    }
}

fn message(topic: &str, partition: i32, n: usize) -> OutboxMessage {
    OutboxMessage::builder(topic)
        .value(format!("row-{n}").into_bytes())
        .partition(partition)
        .build(&EnqueueConfig::default())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_requests_versus_one_request_per_lane() {
    outbox_tests::require_broker();
    let brokers = outbox_tests::brokers();
    let client = outbox_tests::kafka::client(&brokers).await;
    let mut report = Vec::new();
    for (name, shared) in [
        ("per-lane", false),
        ("shared", true),
        ("per-lane", false),
        ("shared", true),
    ] {
        let topic = outbox_tests::unique_name("kafka_measure");
        outbox_tests::kafka::create_topic(&client, &topic, LANES).await;
        let f = run(&brokers, &topic, shared).await;
        let calls = u64::try_from(LANES).unwrap() * u64::try_from(ROUNDS).unwrap();
        assert_eq!(f.batches, calls, "{name}: one batch per call");
        if shared {
            assert!(f.requests < f.batches, "{name}: nothing was shared");
        } else {
            assert_eq!(f.requests, f.batches, "{name}: one request per batch");
        }
        let per_second = calls as f64 / f.elapsed.as_secs_f64();
        report.push(format!(
            "{name:>8}: {calls} calls x {ROWS} rows on {LANES} lanes in {:>7.1} ms = {per_second:>8.0} calls/s; {} produce requests for {} batches",
            f.elapsed.as_secs_f64() * 1000.0,
            f.requests,
            f.batches
        ));
    }
    for line in report {
        println!("{line}");
    }
}
