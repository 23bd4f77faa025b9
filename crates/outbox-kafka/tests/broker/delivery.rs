//! Placement, bytes, headers and compression.

use std::num::NonZeroU32;

use outbox_core::bucket::partition_for_key;
use outbox_core::{EnqueueConfig, OutboxMessage};
use outbox_kafka::Compression;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_land_on_the_murmur2_partition_with_bytes_and_headers_intact() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_placement", 4).await;
    let publisher = publisher_for(&brokers).build().unwrap();
    let keys: Vec<Vec<u8>> = vec![
        b"order-1".to_vec(),
        b"order-2".to_vec(),
        Vec::new(), // an empty key is a real key
        vec![0, 255, 1, 254],
        b"order-1".to_vec(),
        "ключ ✓".as_bytes().to_vec(),
        b"order-2".to_vec(),
    ];
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    let batch: Vec<OutboxMessage> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            OutboxMessage::builder(&topic)
                .key(k.clone())
                .value([all_bytes.as_slice(), &[i as u8]].concat())
                .header("trace-id", format!("t{i}"))
                .header(
                    "binary",
                    all_bytes.iter().rev().copied().collect::<Vec<u8>>(),
                )
                .header("empty", Vec::new())
                .build(&EnqueueConfig::default())
                .unwrap()
        })
        .collect();
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.acknowledged, batch.len());

    let partitions = read_all(&client, &topic, 4).await;
    assert_eq!(partitions.iter().map(Vec::len).sum::<usize>(), batch.len());
    let four = NonZeroU32::new(4).unwrap();
    for m in &batch {
        let key = m.key.as_deref().unwrap();
        let expected = partition_for_key(key, four) as usize;
        let found: Vec<usize> = partitions
            .iter()
            .enumerate()
            .filter(|(_, recs)| recs.iter().any(|r| r.record.key.as_deref() == Some(key)))
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            found,
            vec![expected],
            "key {key:?}: all records of a key on the murmur2 partition"
        );
        let record = partitions[expected]
            .iter()
            .find(|r| {
                r.record.headers.get(ID_HEADER).map(|v| v.as_slice())
                    == Some(m.message_id.to_string().as_bytes())
            })
            .expect("record with this message id");
        assert_eq!(record.record.value, m.value, "value byte for byte");
        assert_eq!(record.record.key, m.key, "key byte for byte");
        let h = &record.record.headers;
        assert_eq!(
            h.get("binary").unwrap(),
            &all_bytes.iter().rev().copied().collect::<Vec<u8>>()
        );
        assert_eq!(h.get("empty").unwrap(), &Vec::<u8>::new());
        assert!(h.contains_key("trace-id"));
        assert_eq!(h.len(), 4, "the row's three headers plus the message id");
        assert_eq!(
            record.record.timestamp.timestamp_millis(),
            m.created_at.as_millis()
        );
    }
    // Per key, enqueue order is offset order.
    for p in &partitions {
        let mut seen = Vec::new();
        for r in p {
            seen.push(
                batch
                    .iter()
                    .position(|m| {
                        Some(m.message_id.to_string())
                            == crate::support::ids(std::slice::from_ref(r))
                                .first()
                                .cloned()
                    })
                    .unwrap(),
            );
        }
        assert!(seen.is_sorted(), "{seen:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_batches_round_trip() {
    let brokers = brokers();
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let (client, topic) = topic(&brokers, "kafka_codec", 1).await;
        let publisher = publisher_for(&brokers).compression(codec).build().unwrap();
        let value = b"compressible ".repeat(200);
        let batch: Vec<OutboxMessage> = (0..20)
            .map(|i| message(&topic, Some(format!("k{i}").as_bytes()), &value))
            .collect();
        let outcome = publish(&publisher, &batch).await;
        assert!(outcome.error.is_none(), "{codec:?}: {:?}", outcome.error);
        let got = kafka_read(&client, &topic).await;
        assert_eq!(got.len(), 20, "{codec:?}");
        assert!(
            got.iter()
                .all(|r| r.record.value.as_deref() == Some(&value[..])),
            "{codec:?}"
        );
        assert_eq!(
            ids(&got),
            batch
                .iter()
                .map(|m| m.message_id.to_string())
                .collect::<Vec<_>>(),
            "{codec:?}"
        );
    }
}

async fn kafka_read(
    client: &rskafka::client::Client,
    topic: &str,
) -> Vec<rskafka::record::RecordAndOffset> {
    outbox_tests::kafka::read_partition(client, topic, 0).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_records_spread_and_explicit_partitions_are_respected() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_spread", 4).await;
    let publisher = publisher_for(&brokers).build().unwrap();
    let keyless: Vec<OutboxMessage> = (0..200).map(|_| message(&topic, None, b"v")).collect();
    // Pinned rows: partition 3 even though the key hashes elsewhere.
    let key = (0..)
        .map(|i| format!("k{i}"))
        .find(|k| partition_for_key(k.as_bytes(), NonZeroU32::new(4).unwrap()) != 3)
        .unwrap();
    let pinned: Vec<OutboxMessage> = (0..3)
        .map(|i| {
            OutboxMessage::builder(&topic)
                .key(key.clone())
                .value(format!("pinned{i}"))
                .partition(3)
                .build(&EnqueueConfig::default())
                .unwrap()
        })
        .collect();
    let batch: Vec<OutboxMessage> = keyless.iter().chain(&pinned).cloned().collect();
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let parts = read_all(&client, &topic, 4).await;
    let keyless_ids: std::collections::HashSet<String> =
        keyless.iter().map(|m| m.message_id.to_string()).collect();
    for (p, records) in parts.iter().enumerate() {
        let n = ids(records)
            .iter()
            .filter(|id| keyless_ids.contains(*id))
            .count();
        // 200 rows over 4 partitions at random: each gets some (expected 50).
        assert!(n >= 15, "partition {p} got only {n} of 200 keyless records");
        assert!(records.iter().filter(|r| r.record.key.is_none()).count() == n);
    }
    let pinned_ids: Vec<String> = pinned.iter().map(|m| m.message_id.to_string()).collect();
    let on_3: Vec<String> = ids(&parts[3])
        .into_iter()
        .filter(|id| pinned_ids.contains(id))
        .collect();
    assert_eq!(on_3, pinned_ids, "pinned rows on partition 3, in order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_message_id_header_name_is_used() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_header_name", 1).await;
    let publisher = publisher_for(&brokers)
        .schema(
            &outbox_core::OutboxSchema::builder()
                .message_id_header("msg-id")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let m = message(&topic, Some(b"k"), b"v");
    assert!(
        publish(&publisher, std::slice::from_ref(&m))
            .await
            .error
            .is_none()
    );
    let got = outbox_tests::kafka::read_partition(&client, &topic, 0).await;
    assert_eq!(
        outbox_tests::kafka::header_text(&got[0], "msg-id"),
        Some(m.message_id.to_string())
    );
    assert!(!got[0].record.headers.contains_key(ID_HEADER));
}

/// Many rows of one partition split into several record batches by the request size;
/// they arrive complete and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_batches_are_chunked_by_the_request_size_in_order() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_chunks", 1).await;
    let publisher = publisher_limited_to(&brokers, 16 * 1024).build().unwrap();
    let batch: Vec<OutboxMessage> = (0..300)
        .map(|i| message(&topic, Some(b"one-key"), format!("{i:0>500}").as_bytes()))
        .collect();
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let got = outbox_tests::kafka::read_partition(&client, &topic, 0).await;
    assert_eq!(
        ids(&got),
        batch
            .iter()
            .map(|m| m.message_id.to_string())
            .collect::<Vec<_>>()
    );
}

/// An empty batch is acknowledged as zero rows without a produce request (an empty
/// request would cost the broker a round trip for nothing). The publisher has connected,
/// so a request could have gone out; its counters and the topic show that none did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_batch_acknowledges_nothing_and_sends_nothing() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_empty_batch", 2).await;
    let publisher = publisher_for(&brokers).build().unwrap();
    publisher.connect().await.unwrap();

    let outcome = publish(&publisher, &[]).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.acknowledged, 0);
    assert_eq!(
        publisher.produce_requests(),
        0,
        "no produce request was sent"
    );
    assert_eq!(
        publisher.produce_batches(),
        0,
        "no partition batch was sent"
    );

    // A real row afterwards goes out in one request: the counters do count.
    let row = message(&topic, Some(b"k"), b"after the empty batch");
    let outcome = publish(&publisher, std::slice::from_ref(&row)).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.acknowledged, 1);
    assert_eq!(publisher.produce_requests(), 1);
    assert_eq!(
        record_count(&client, &topic, 2).await,
        1,
        "only the real row reached the topic"
    );
}
