//! Plumbing check against the real broker at `OUTBOX_TEST_BROKERS` (Tansu by default):
//! create a topic, produce records with keys, values and headers, read them back.
//!
//! Reads to the end with Fetch's high watermark, never ListOffsets: Tansu 0.6.0 answers
//! ListOffsets(latest) wrongly on its memory engine (see broker-facts.md).

// Test code: a panic is the failure report (clippy.toml allows this only inside #[test]
// functions, not in their async helpers).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use outbox_tests::{broker_list, require_broker, unique_name};
use rskafka::BackoffConfig;
use rskafka::chrono::{TimeZone, Utc};
use rskafka::client::ClientBuilder;
use rskafka::client::partition::{Compression, UnknownTopicHandling};
use rskafka::record::{Record, RecordAndOffset};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

fn records() -> Vec<Record> {
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    let mut out = Vec::new();
    for (i, (key, value, headers)) in [
        (
            b"key-0".to_vec(),
            b"value-0".to_vec(),
            vec![("trace-id", b"abc".to_vec())],
        ),
        (
            // Arbitrary binary key and value, an empty header value, several headers.
            vec![0, 255, 1, 254],
            all_bytes.clone(),
            vec![
                ("binary", all_bytes.iter().rev().copied().collect()),
                ("empty", Vec::new()),
                (
                    "outbox-id",
                    b"0191b2c3-0000-7000-8000-000000000001".to_vec(),
                ),
            ],
        ),
        (
            "ключ-2 ✓".as_bytes().to_vec(),
            "{\"n\":2}".as_bytes().to_vec(),
            vec![("content-type", b"application/json".to_vec())],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        out.push(Record {
            key: Some(key),
            value: Some(value),
            headers: headers
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect::<BTreeMap<_, _>>(),
            timestamp: Utc
                .timestamp_millis_opt(1_700_000_000_000 + i as i64)
                .single()
                .unwrap(),
        });
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topic_produce_and_fetch_back() {
    require_broker();
    tokio::time::timeout(Duration::from_secs(60), round_trip())
        .await
        .expect("the broker round trip did not finish within 60 s");
}

async fn round_trip() {
    let client = ClientBuilder::new(broker_list())
        .client_id("outbox-tests-plumbing")
        .backoff_config(BackoffConfig {
            deadline: Some(Duration::from_secs(20)),
            ..BackoffConfig::default()
        })
        .build()
        .await
        .unwrap();

    let topic = unique_name("plumbing");
    client
        .controller_client()
        .unwrap()
        .create_topic(&topic, 3, 1, 5_000)
        .await
        .unwrap();

    let listed = client.list_topics().await.unwrap();
    let ours = listed
        .iter()
        .find(|t| t.name == topic)
        .unwrap_or_else(|| panic!("{topic} missing from the topic list"));
    assert_eq!(ours.partitions, BTreeSet::from([0, 1, 2]));

    let partition = client
        .partition_client(&topic, 0, UnknownTopicHandling::Retry)
        .await
        .unwrap();
    let sent = records();
    let offsets = partition
        .produce(sent.clone(), Compression::NoCompression)
        .await
        .unwrap();
    assert_eq!(offsets, vec![0, 1, 2]);

    // Fetch until the high watermark that Fetch itself reports.
    let mut got: Vec<RecordAndOffset> = Vec::new();
    let mut next = 0i64;
    let mut high_watermark;
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(
            rounds <= 20,
            "no progress fetching {topic}/0 at offset {next}"
        );
        let (batch, hw) = partition
            .fetch_records(next, 1..1_000_000, 500)
            .await
            .unwrap();
        high_watermark = hw;
        for r in batch {
            assert!(
                r.offset >= next,
                "fetch returned offset {} below {next}",
                r.offset
            );
            next = r.offset + 1;
            got.push(r);
        }
        if next >= high_watermark {
            break;
        }
    }

    assert_eq!(high_watermark, 3);
    assert_eq!(
        got.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    for (sent, got) in sent.iter().zip(&got) {
        assert_eq!(got.record.key, sent.key, "key at offset {}", got.offset);
        assert_eq!(
            got.record.value, sent.value,
            "value at offset {}",
            got.offset
        );
        assert_eq!(
            got.record.headers, sent.headers,
            "headers at offset {}",
            got.offset
        );
    }
}
