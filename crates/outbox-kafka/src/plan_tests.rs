use super::*;
use outbox_core::{EnqueueConfig, MessageError, OutboxSchema, Uuid};

use crate::config::KafkaPublisherBuilder;

fn msg(topic: &str, key: Option<&str>, value_len: usize) -> OutboxMessage {
    let mut b = OutboxMessage::builder(topic).value(vec![1u8; value_len]);
    if let Some(k) = key {
        b = b.key(k);
    }
    b.build(&EnqueueConfig::default()).unwrap()
}

fn limits(max: usize) -> Limits<'static> {
    Limits {
        max_request_size: max,
        client_id_len: 6,
        message_id_header: "x-outbox-message-id",
        batch_caps: None,
    }
}

fn three(_: &str) -> Result<NonZeroU32, KafkaPublishError> {
    Ok(NonZeroU32::new(3).unwrap())
}

#[test]
fn a_learned_batch_cap_cuts_its_topic_into_smaller_chunks_only() {
    let batch: Vec<_> = (0..8)
        .map(|i| msg(if i % 2 == 0 { "capped" } else { "free" }, Some("k"), 200))
        .collect();
    let mut d = Decoded::new(&batch);
    let uncapped = plan(&batch, &mut d, limits(1 << 20), three);
    assert!(uncapped.groups.iter().all(|g| g.chunks.len() == 1));
    let one_record = uncapped.groups[0].chunks[0].size() / 4;
    let mut caps = BatchCaps::default();
    // Room for two records of "capped" per chunk.
    caps.refused("capped", 4, 5 * one_record);
    // Each plan borrows its own decoding; these are the chunk sizes by topic.
    let chunk_rows = |caps: &BatchCaps| -> (usize, Vec<(String, Vec<usize>)>) {
        let mut d = Decoded::new(&batch);
        let p = plan(
            &batch,
            &mut d,
            Limits {
                batch_caps: Some(caps),
                ..limits(1 << 20)
            },
            three,
        );
        let groups = p
            .groups
            .iter()
            .map(|g| {
                let rows = g.chunks.iter().map(|c| c.rows.len()).collect();
                (g.topic.to_owned(), rows)
            })
            .collect();
        (p.planned, groups)
    };
    let (planned, groups) = chunk_rows(&caps);
    assert_eq!(planned, 8, "a cap never stops the plan");
    for (topic, sizes) in &groups {
        match topic.as_str() {
            "capped" => assert_eq!(sizes, &vec![2, 2], "{sizes:?}"),
            _ => assert_eq!(sizes, &vec![4], "other topics keep whole batches"),
        }
    }
    // A record larger than the cap still goes, alone in its chunk.
    caps.refused("capped", 2, 2);
    let (_, groups) = chunk_rows(&caps);
    let (_, capped) = groups.iter().find(|(t, _)| t == "capped").unwrap();
    assert_eq!(capped, &vec![1, 1, 1, 1]);
}

#[test]
fn a_caller_supplied_id_header_is_replaced_by_the_stamped_id() {
    // As an external writer would store it: the reserved header with its own value.
    let mut headers = Headers::new();
    headers.push("trace", Some(b"t-1".to_vec()));
    headers.push("x-outbox-message-id", Some(b"caller-chosen".to_vec()));
    let mut m = msg("t", Some("k"), 4);
    m.headers = Some(headers.try_encode().unwrap());
    let batch = [m];
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits(1 << 20), three);
    let record = &p.groups[0].chunks[0].records[0];
    let ids: Vec<_> = record
        .headers
        .iter()
        .filter(|(name, _)| *name == "x-outbox-message-id")
        .collect();
    assert_eq!(ids.len(), 1, "one id header: {:?}", record.headers);
    assert_eq!(
        ids[0].1,
        Some(batch[0].message_id.hyphenated().to_string().as_bytes())
    );
    assert!(record.headers.iter().any(|(name, _)| *name == "trace"));
}

#[test]
fn undecodable_headers_fail_that_row_for_good_and_blame_it() {
    let good = msg("t", Some("a"), 4);
    let mut bad = msg("t", Some("b"), 4);
    bad.headers = Some(vec![0xff, 0, 0, 0]);
    let batch = [good, bad];
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits(1 << 20), three);
    assert_eq!(p.planned, 1, "the row before it still goes");
    let error = p.failure.expect("the bad row fails");
    assert!(error.blames_row(), "{error}");
    let error = error.into_publish_error(batch[1].message_id);
    assert_eq!(error.blamed_message(), Some(batch[1].message_id));
}

#[test]
fn groups_by_partition_in_row_order() {
    let batch: Vec<_> = ["a", "b", "a", "c", "a"]
        .iter()
        .map(|k| msg("t", Some(k), 10))
        .collect();
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits(1 << 20), three);
    assert_eq!(p.planned, 5);
    assert!(p.failure.is_none());
    let a = partition_for_key(b"a", NonZeroU32::new(3).unwrap()) as i32;
    let g = p.groups.iter().find(|g| g.partition == a).unwrap();
    let rows: Vec<usize> = g.chunks.iter().flat_map(|c| c.rows.clone()).collect();
    // Other keys may share the partition; the order is row order either way.
    assert!(rows.is_sorted(), "{rows:?}");
    let of_a: Vec<usize> = rows.into_iter().filter(|r| [0, 2, 4].contains(r)).collect();
    assert_eq!(of_a, [0, 2, 4]);
    // Every record carries the message id last.
    let first = &g.chunks[0].records[0];
    let (name, value) = first.headers.last().unwrap();
    assert_eq!(*name, "x-outbox-message-id");
    assert_eq!(
        Uuid::parse_str(std::str::from_utf8(value.unwrap()).unwrap()).unwrap(),
        batch[0].message_id
    );
}

/// A writer and a publisher built from one schema agree: the record carries the id
/// under the schema's header (which the writer refuses as a user header), and with
/// as many partitions as buckets each row lands on the partition of its bucket.
#[test]
fn a_writer_and_a_publisher_from_one_schema_agree() {
    let schema = OutboxSchema::builder()
        .bucket_count(3)
        .message_id_header("x-order-event-id")
        .build()
        .unwrap();
    let writer = EnqueueConfig::from(schema.clone());
    let publisher = KafkaPublisherBuilder::new(vec!["localhost:9092".into()])
        .schema(&schema)
        .build_config()
        .unwrap();
    let batch: Vec<OutboxMessage> = (0..30)
        .map(|n| {
            OutboxMessage::builder("t")
                .key(format!("order-{n}"))
                .build(&writer)
                .unwrap()
        })
        .collect();
    let limits = Limits {
        max_request_size: publisher.max_request_size(),
        client_id_len: publisher.client_id().len(),
        message_id_header: publisher.message_id_header(),
        batch_caps: None,
    };
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits, three);
    assert_eq!(p.planned, batch.len());
    let mut seen = 0;
    for g in &p.groups {
        for c in &g.chunks {
            for (&row, record) in c.rows.iter().zip(&c.records) {
                assert_eq!(g.partition, batch[row].bucket, "row {row}");
                let (name, value) = record.headers.last().unwrap();
                assert_eq!(*name, "x-order-event-id");
                let id = batch[row].message_id.hyphenated().to_string();
                assert_eq!(*value, Some(id.as_bytes()));
                seen += 1;
            }
        }
    }
    assert_eq!(seen, batch.len());
    assert_eq!(
        OutboxMessage::builder("t")
            .header("x-order-event-id", "forged")
            .build(&writer)
            .unwrap_err(),
        MessageError::ReservedHeader("x-order-event-id".into())
    );
}

#[test]
fn a_too_large_row_stops_the_plan_before_it() {
    let batch = vec![
        msg("t", Some("k"), 10),
        msg("t", Some("k"), 5000),
        msg("t", Some("k"), 10),
    ];
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits(2048), three);
    assert_eq!(p.planned, 1);
    assert!(matches!(
        p.failure,
        Some(KafkaPublishError::RecordTooLarge { max: 2048, .. })
    ));
    let rows: Vec<usize> = p
        .groups
        .iter()
        .flat_map(|g| &g.chunks)
        .flat_map(|c| c.rows.clone())
        .collect();
    assert_eq!(rows, [0]);
}

#[test]
fn chunks_respect_the_request_size() {
    let batch: Vec<_> = (0..10).map(|_| msg("t", Some("same"), 400)).collect();
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits(2048), three);
    assert_eq!(p.planned, 10);
    assert_eq!(p.groups.len(), 1);
    let chunks = &p.groups[0].chunks;
    assert!(chunks.len() > 2);
    let order: Vec<usize> = chunks.iter().flat_map(|c| c.rows.clone()).collect();
    assert_eq!(order, (0..10).collect::<Vec<_>>());
    for c in chunks {
        assert!(outbox_core::wire_size::request_overhead(6, 1) + c.size <= 2048);
    }
}

#[test]
fn explicit_partitions_are_checked() {
    let mut m = msg("t", Some("k"), 1);
    m.partition = Some(2);
    let mut bad = msg("t", Some("k"), 1);
    bad.partition = Some(3);
    let batch = vec![m, bad];
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits(1 << 20), three);
    assert_eq!(p.planned, 1);
    assert_eq!(p.groups[0].partition, 2);
    assert!(matches!(
        p.failure,
        Some(KafkaPublishError::UnknownPartition {
            partition: 3,
            partitions: 3,
            ..
        })
    ));
}

#[test]
fn bad_topic_and_headers_fail_at_their_row() {
    let mut bad_topic = msg("t", None, 1);
    bad_topic.topic = "no spaces".into();
    let batch = vec![msg("t", None, 1), bad_topic];
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits(1 << 20), three);
    assert_eq!(p.planned, 1);
    assert!(matches!(
        p.failure,
        Some(KafkaPublishError::InvalidTopic { .. })
    ));

    let mut bad_headers = msg("t", None, 1);
    bad_headers.headers = Some(vec![9, 9]);
    let batch = vec![bad_headers];
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits(1 << 20), three);
    assert_eq!(p.planned, 0);
    assert!(matches!(
        p.failure,
        Some(KafkaPublishError::InvalidHeaders(_))
    ));
}

#[test]
fn metadata_errors_stop_at_the_topics_first_row() {
    let batch = vec![
        msg("ok", None, 1),
        msg("missing", None, 1),
        msg("ok", None, 1),
    ];
    let mut d = Decoded::new(&batch);
    let p = plan(&batch, &mut d, limits(1 << 20), |t| {
        if t == "ok" {
            Ok(NonZeroU32::new(1).unwrap())
        } else {
            Err(KafkaPublishError::ProducerId("stand-in".into()))
        }
    });
    assert_eq!(p.planned, 1);
    assert!(p.failure.is_some());
}

proptest::proptest! {
    /// Writers and the publisher measure a record one way: a record the writer
    /// accepts under a schema's `max_request_size` is never refused as too large by a
    /// publisher built from that schema, whatever its client id; and with the longest
    /// client id the two agree exactly, so the writer's check is no stricter than
    /// that allowance.
    #[test]
    fn what_a_writer_accepts_the_publisher_sends(
        key_len in 0usize..3000,
        value_len in 0usize..3000,
        header_lens in proptest::collection::vec((1usize..40, 0usize..600), 0..4),
        topic_len in 1usize..60,
        client_id_len in 1usize..=outbox_core::wire_size::MAX_CLIENT_ID_LEN,
    ) {
        let schema = OutboxSchema::builder().max_request_size(4096).build().unwrap();
        let writer = EnqueueConfig::from(schema.clone());
        let topic = "t".repeat(topic_len);
        let mut builder = OutboxMessage::builder(topic.as_str())
            .key(vec![1u8; key_len])
            .value(vec![2u8; value_len]);
        for (i, (name_len, value_len)) in header_lens.iter().enumerate() {
            builder = builder.header(format!("{i}{}", "h".repeat(*name_len)), vec![3u8; *value_len]);
        }
        let accepted = builder.clone().build(&writer);
        let Ok(row) = accepted else {
            // Refused by the writer: with the longest client id the publisher refuses
            // it too (built here under a larger limit, as a row written around the check).
            let roomy = EnqueueConfig::from(OutboxSchema::default());
            let batch = [builder.build(&roomy).unwrap()];
            let mut d = Decoded::new(&batch);
            let limits = Limits {
                max_request_size: schema.max_request_size(),
                client_id_len: outbox_core::wire_size::MAX_CLIENT_ID_LEN,
                message_id_header: schema.message_id_header(),
                batch_caps: None,
            };
            let p = plan(&batch, &mut d, limits, three);
            proptest::prop_assert_eq!(p.planned, 0);
            proptest::prop_assert!(
                matches!(p.failure, Some(KafkaPublishError::RecordTooLarge { .. })),
                "{:?}", p.failure
            );
            return Ok(());
        };
        let batch = [row];
        for client in [client_id_len, outbox_core::wire_size::MAX_CLIENT_ID_LEN] {
            let mut d = Decoded::new(&batch);
            let limits = Limits {
                max_request_size: schema.max_request_size(),
                client_id_len: client,
                message_id_header: schema.message_id_header(),
                batch_caps: None,
            };
            let p = plan(&batch, &mut d, limits, three);
            proptest::prop_assert_eq!(p.planned, 1, "client id {} bytes: {:?}", client, p.failure);
        }
    }
}
