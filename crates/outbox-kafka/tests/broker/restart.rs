//! A broker restart in the middle of a batch, on a private broker so that no other test
//! is disturbed. What the publisher must guarantee on every broker, and what is
//! asserted: every row it reports acknowledged from the batch that straddled the
//! restart is on the restarted broker, in key order, and it reconnects, re-resolves
//! metadata and publishes everything in the end.
//!
//! Apache Kafka keeps its records and producer state across the restart: the resend
//! after the reconnect carries the original producer id and sequences, so the broker
//! recognises what it already holds and no row of the batch is there twice (asserted).
//! Tansu's memory engine forgets everything on restart (topics, records, producer
//! state), so rows acknowledged *before* the restart are gone with it (the broker's
//! durability, not the publisher's); the publisher's old sequence then meets a broker
//! that knows no such producer, and it takes a new producer id.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use outbox_core::OutboxMessage;
use outbox_tests::proxy::{Fault, PRODUCE, Proxy};

use crate::support::*;

async fn create_topic_tolerant(addr: &str, topic: &str, partitions: i32) {
    let client = outbox_tests::kafka::client(addr).await;
    // The publisher's own metadata requests may have created it meanwhile, and Apache
    // Kafka keeps it across the restart.
    outbox_tests::kafka::ensure_topic(&client, topic, partitions).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_batch_acknowledges_only_what_the_restarted_broker_holds() {
    let mut broker = outbox_tests::private_broker();
    let addr = broker.addr();
    let topic = outbox_tests::unique_name("kafka_restart");
    create_topic_tolerant(&addr, &topic, 2).await;

    let proxy = Proxy::start_kafka(&addr).await.unwrap();
    let publisher = publisher_limited_to(proxy.addr(), 4096)
        .request_timeout(Duration::from_secs(2))
        .delivery_timeout(Duration::from_secs(4))
        .build()
        .unwrap();

    // Before the restart: acknowledged (and, on Tansu, lost with the broker's memory).
    let before: Vec<OutboxMessage> = (0..20)
        .map(|i| message(&topic, Some(format!("k{}", i % 4).as_bytes()), b"before"))
        .collect();
    assert!(publish(&publisher, &before).await.error.is_none());

    // The straddling batch: its first produce reaches the old broker, the answer is
    // swallowed, and the broker restarts while the publisher waits. One key, so one
    // partition: no other partition's chunks are acknowledged by the old broker (and
    // forgotten by its restart) meanwhile.
    let rows: Vec<OutboxMessage> = (0..120)
        .map(|i| {
            message(
                &topic,
                Some(b"k0".as_slice()),
                format!("{i:0>150}").as_bytes(),
            )
        })
        .collect();
    proxy.fault_next(PRODUCE, Fault::DropResponse, 1);
    let relay_like = {
        let publisher = publisher.clone();
        let rows = rows.clone();
        tokio::spawn(async move {
            // What the relay does: retry from the first unacknowledged row.
            let mut acked = 0;
            let mut calls = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(40);
            while acked < rows.len() && Instant::now() < deadline {
                let outcome = publish(&publisher, &rows[acked..]).await;
                calls.push((
                    outcome.acknowledged,
                    outcome.error.as_ref().map(|e| e.to_string()),
                ));
                acked += outcome.acknowledged;
                if outcome.error.is_some() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            (acked, calls)
        })
    };
    let wait = Instant::now();
    while proxy.faults_applied() == 0 {
        assert!(
            wait.elapsed() < Duration::from_secs(10),
            "the batch never reached the broker"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let broker = tokio::task::spawn_blocking(move || {
        broker.restart().unwrap();
        broker
            .wait_ready(outbox_tests::BROKER_READY_TIMEOUT)
            .unwrap();
        broker
    })
    .await
    .unwrap();
    create_topic_tolerant(&addr, &topic, 2).await;

    let (acked, calls) = relay_like.await.unwrap();
    eprintln!("publish calls (acknowledged, error): {calls:#?}");
    assert_eq!(
        acked,
        rows.len(),
        "the publisher recovered and published everything: {calls:?}"
    );

    // Every acknowledged row of the straddling batch is on the restarted broker, and
    // per partition the first deliveries follow enqueue order.
    let client = outbox_tests::kafka::client(&broker.addr()).await;
    let index: HashMap<String, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, m)| (m.message_id.to_string(), i))
        .collect();
    let mut found = vec![false; rows.len()];
    let mut copies = 0;
    for p in 0..2 {
        let records = outbox_tests::kafka::read_partition(&client, &topic, p).await;
        let mut order = Vec::new();
        for id in ids(&records) {
            if let Some(&row) = index.get(&id) {
                copies += 1;
                if !found[row] {
                    found[row] = true;
                    order.push(row);
                }
            }
        }
        assert!(
            order.is_sorted(),
            "partition {p}: first deliveries out of enqueue order: {order:?}"
        );
    }
    let missing: Vec<usize> = (0..rows.len()).filter(|r| !found[*r]).collect();
    assert!(
        missing.is_empty(),
        "acknowledged but not on the broker: rows {missing:?}"
    );
    if outbox_tests::broker_kind() == outbox_tests::broker::BrokerKind::Kafka {
        assert_eq!(
            copies,
            rows.len(),
            "Apache Kafka kept the producer state: the resend after the restart added no duplicate"
        );
    }
    drop(broker);
}
