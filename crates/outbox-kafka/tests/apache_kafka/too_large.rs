//! A topic whose `max.message.bytes` is below one record: the broker refuses it, the
//! relay parks that row with the broker's reason and holds its key, and everything else
//! flows, including the rows that shared a refused *batch* with it.

use std::collections::HashMap;
use std::time::Duration;

use outbox_core::park::ParkReason;
use outbox_core::testing::MemoryStore;
use outbox_core::{EnqueueConfig, OutboxMessage};
use outbox_tests::broker::KafkaSettings;

use crate::kafka::{create_topic, eventually, spawn_relay, start};
use crate::support::{ID_HEADER, publisher_for};

const LIMIT: usize = 2_048;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_over_the_topics_size_limit_is_parked_with_the_brokers_reason_and_only_its_key_waits()
{
    let broker = start(KafkaSettings::default());
    let limited = outbox_tests::unique_name("too_large");
    let other = outbox_tests::unique_name("unlimited");
    create_topic(
        &broker,
        &limited,
        2,
        &[("max.message.bytes", &LIMIT.to_string())],
    );
    create_topic(&broker, &other, 1, &[]);
    let client = outbox_tests::kafka::client(&broker.addr()).await;
    outbox_tests::kafka::wait_topic_ready(&client, &limited, 2).await;
    outbox_tests::kafka::wait_topic_ready(&client, &other, 1).await;

    // 12 keys x 6 rows of 150 bytes: the partitions' batches are several times the
    // limit, so the broker refuses whole batches before the poison row is alone.
    let config = EnqueueConfig::default();
    let poison_key = "key-3";
    let mut rows = Vec::new();
    for round in 0..6 {
        for k in 0..12 {
            let key = format!("key-{k}");
            let value = if key == poison_key && round == 2 {
                vec![b'x'; 3 * LIMIT]
            } else {
                vec![b'v'; 150]
            };
            rows.push(
                OutboxMessage::builder(&limited)
                    .key(key.clone())
                    .value(value)
                    .build(&config)
                    .unwrap(),
            );
        }
        rows.push(
            OutboxMessage::builder(&other)
                .key(format!("other-{round}"))
                .value(vec![b'o'; 150])
                .build(&config)
                .unwrap(),
        );
    }
    let poison = rows
        .iter()
        .filter(|m| m.key.as_deref() == Some(poison_key.as_bytes()))
        .nth(2)
        .unwrap()
        .clone();

    let store = MemoryStore::new();
    store.enqueue_all(rows.clone());
    let publisher = publisher_for(&broker.addr()).build().unwrap();
    let relay = spawn_relay(&store, publisher, Duration::from_millis(200));
    let settled = eventually(Duration::from_secs(60), || store.pending_count() == 0).await;
    relay.stop(Duration::from_secs(5)).await.unwrap();
    assert!(settled, "{} rows still pending", store.pending_count());

    // Parked: the poison row with the broker's reason, and its key's later rows behind it.
    let parked = store.parked();
    let failed: Vec<_> = parked
        .iter()
        .filter(|p| matches!(p.reason, ParkReason::Failed(_)))
        .collect();
    assert_eq!(failed.len(), 1, "only the poison row fails: {parked:?}");
    assert_eq!(failed[0].message.message_id, poison.message_id);
    let reason = failed[0].reason.to_string();
    assert!(
        reason.contains("MessageTooLarge (10)") || reason.contains("RecordListTooLarge (18)"),
        "the broker's reason is kept: {reason}"
    );
    let held: Vec<_> = parked
        .iter()
        .filter(|p| matches!(p.reason, ParkReason::HeldBehind { .. }))
        .map(|p| p.message.message_id)
        .collect();
    let after_poison: Vec<_> = rows
        .iter()
        .filter(|m| m.key.as_deref() == Some(poison_key.as_bytes()))
        .skip(3)
        .map(|m| m.message_id)
        .collect();
    assert_eq!(
        held, after_poison,
        "the poison key's later rows wait behind it"
    );

    // Published: every other row, each key's first copies in enqueue order, none of the
    // parked ones. Copies are possible (rows of other partitions appended before an
    // earlier row of the batch failed are sent again with it), as everywhere.
    let mut published: HashMap<String, Vec<String>> = HashMap::new();
    for (topic, partitions) in [(&limited, 2), (&other, 1)] {
        for p in 0..partitions {
            for r in outbox_tests::kafka::read_partition(&client, topic, p).await {
                let key = String::from_utf8(r.record.key.clone().unwrap()).unwrap();
                let id = outbox_tests::kafka::header_text(&r, ID_HEADER).unwrap();
                let ids = published.entry(key).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }
    for m in &rows {
        let key = String::from_utf8(m.key.clone().unwrap()).unwrap();
        let expected: Vec<String> = rows
            .iter()
            .filter(|r| r.key == m.key)
            .take(if key == poison_key { 2 } else { usize::MAX })
            .map(|r| r.message_id.to_string())
            .collect();
        let got = published.get(&key).cloned().unwrap_or_default();
        assert_eq!(
            got, expected,
            "{key}: every row, first copies in enqueue order"
        );
    }
}
