//! One publisher, many lanes: concurrent publish calls for different partitions share
//! produce requests on the broker connection, and a request lost as a whole loses no
//! partition's rows and reorders none.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use outbox_core::{EnqueueConfig, OutboxMessage};
use outbox_kafka::KafkaPublisher;
use outbox_tests::broker::BrokerKind;
use outbox_tests::proxy::{Fault, PRODUCE, Proxy};

use crate::support::*;

/// `count` rows pinned to `partition`, values naming both.
fn rows(topic: &str, partition: i32, count: usize, round: usize) -> Vec<OutboxMessage> {
    (0..count)
        .map(|i| {
            OutboxMessage::builder(topic)
                .key(format!("k{partition}").into_bytes())
                .value(format!("p{partition}-r{round}-{i}").into_bytes())
                .partition(partition)
                .build(&EnqueueConfig::default())
                .unwrap()
        })
        .collect()
}

fn id_list(batch: &[OutboxMessage]) -> Vec<String> {
    batch.iter().map(|m| m.message_id.to_string()).collect()
}

/// Eight lanes publish to eight different partitions of a 16-partition topic at once,
/// ten calls each, through one publisher: every call succeeds, each partition holds its
/// rows once and in order, the untouched partitions stay empty, and the 80 partition
/// batches went out in fewer produce requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_lanes_share_produce_requests() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_lanes", 16).await;
    let publisher = publisher_for(&brokers).build().unwrap();
    publisher.connect().await.unwrap();
    const LANES: i32 = 8;
    const ROUNDS: usize = 10;
    let barrier = Arc::new(tokio::sync::Barrier::new(LANES as usize));
    let lanes: Vec<_> = (0..LANES)
        .map(|lane| {
            let partition = lane * 2; // every other partition
            let (publisher, topic, barrier) =
                (publisher.clone(), topic.clone(), Arc::clone(&barrier));
            tokio::spawn(async move {
                barrier.wait().await;
                let mut sent = Vec::new();
                for round in 0..ROUNDS {
                    let batch = rows(&topic, partition, 5, round);
                    let outcome = publish(&publisher, &batch).await;
                    assert!(outcome.error.is_none(), "{:?}", outcome.error);
                    assert_eq!(outcome.acknowledged, batch.len());
                    sent.extend(id_list(&batch));
                }
                (partition, sent)
            })
        })
        .collect();
    let mut expected: HashMap<i32, Vec<String>> = HashMap::new();
    for lane in lanes {
        let (partition, sent) = lane.await.unwrap();
        expected.insert(partition, sent);
    }

    let partitions = read_all(&client, &topic, 16).await;
    for (p, records) in partitions.iter().enumerate() {
        let p = i32::try_from(p).unwrap();
        let want = expected.get(&p).cloned().unwrap_or_default();
        assert_eq!(ids(records), want, "partition {p}: once each, in order");
    }
    let (requests, batches) = (publisher.produce_requests(), publisher.produce_batches());
    assert_eq!(batches, 80, "one batch per call, none resent");
    assert!(
        requests < batches,
        "{requests} produce requests for {batches} partition batches: nothing was shared"
    );
}

/// One call with rows for eight partitions: the first five partitions' batches go out
/// at once, one request each (no linger, and a connection carries five produce requests
/// at a time, as Kafka's own producer does), and the three that became ready while all
/// five were out share the next request. On a single-threaded runtime the request task
/// cannot run before every partition queued its batch, so the count is exact.
#[tokio::test(flavor = "current_thread")]
async fn batches_ready_while_a_request_is_out_go_in_the_next_one() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_gather", 16).await;
    let publisher = publisher_for(&brokers).build().unwrap();
    publisher.connect().await.unwrap();
    let batch: Vec<OutboxMessage> = (0..8).flat_map(|p| rows(&topic, p, 3, 0)).collect();
    let outcome = publish(&publisher, &batch).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.acknowledged, 24);
    assert_eq!(publisher.produce_batches(), 8);
    assert_eq!(
        publisher.produce_requests(),
        6,
        "five alone while slots were free, then three together"
    );
    let partitions = read_all(&client, &topic, 16).await;
    for p in 0..8 {
        let want = id_list(&batch[p * 3..p * 3 + 3]);
        assert_eq!(ids(&partitions[p]), want, "partition {p}");
    }
}

/// The request carrying seven partitions' batches is appended by the broker, then its
/// answer is lost with the connection (cut by the test proxy). Every partition in it
/// gets the transport error, reconnects and resends its batch with the same producer id
/// and sequence, which the broker recognises as already appended: each partition holds
/// its rows once, and a following call lands after them in enqueue order.
#[tokio::test(flavor = "current_thread")]
async fn a_cut_connection_under_a_shared_request_loses_nothing_and_keeps_order() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_gather_cut", 8).await;
    let proxy = Proxy::start_kafka(&brokers).await.unwrap();
    let publisher: KafkaPublisher = publisher_for(proxy.addr()).build().unwrap();
    publisher.connect().await.unwrap();

    let first: Vec<OutboxMessage> = (0..8).flat_map(|p| rows(&topic, p, 3, 0)).collect();
    // Partition 5 is never first, so the fault hits the shared request.
    proxy.fault_produce_to(&topic, 5, Fault::DropResponseAndClose, 1);
    let outcome = publish(&publisher, &first).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.acknowledged, first.len());
    assert_eq!(proxy.faults_applied(), 1);

    let second: Vec<OutboxMessage> = (0..8).flat_map(|p| rows(&topic, p, 2, 1)).collect();
    let outcome = publish(&publisher, &second).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);

    let partitions = read_all(&client, &topic, 8).await;
    for p in 0..8 {
        let mut want = id_list(&first[p * 3..p * 3 + 3]);
        want.extend(id_list(&second[p * 2..p * 2 + 2]));
        assert_eq!(
            ids(&partitions[p]),
            want,
            "partition {p}: every row once, in order (the resend was recognised)"
        );
    }
    assert!(
        proxy.requests(PRODUCE) >= 4,
        "the cut request's partitions were resent"
    );
}

/// Eight lanes publish in loops while the proxy cuts every connection, twice, at
/// moments the lanes do not know about (requests shared by several lanes are on the
/// wire then). Every row arrives, per partition the first copies keep enqueue order.
/// On Apache Kafka every call succeeds within its delivery timeout and the producer id
/// survives the cuts (resends keep their sequences and the broker recognises them).
/// Tansu answers the resend of a batch it had appended before the cut with
/// DUPLICATE_SEQUENCE_NUMBER, which the publisher does not trust after lost contact (see
/// the crate docs): it reports the batch unacknowledged and retires the producer id. A
/// lane then publishes the batch again, as the relay does with unacknowledged rows; any
/// other failure fails the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cuts_under_concurrent_lanes_lose_nothing_and_keep_order() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "kafka_lanes_cut", 8).await;
    let proxy = Arc::new(Proxy::start_kafka(&brokers).await.unwrap());
    let publisher = publisher_for(proxy.addr()).build().unwrap();
    publisher.connect().await.unwrap();
    let first_id = publisher.producer_id();
    let tansu = outbox_tests::broker_kind() == BrokerKind::Tansu;
    const LANES: i32 = 8;
    const ROUNDS: usize = 60;
    let lanes: Vec<_> = (0..LANES)
        .map(|partition| {
            let (publisher, topic) = (publisher.clone(), topic.clone());
            tokio::spawn(async move {
                let mut sent = Vec::new();
                let mut untrusted = 0;
                for round in 0..ROUNDS {
                    let batch = rows(&topic, partition, 3, round);
                    loop {
                        let outcome = publish(&publisher, &batch).await;
                        match &outcome.error {
                            None => break,
                            Some(error) if tansu && untrusted_duplicate(error) => untrusted += 1,
                            Some(error) => panic!("partition {partition}: {error:?}"),
                        }
                    }
                    sent.extend(id_list(&batch));
                }
                (partition, sent, untrusted)
            })
        })
        .collect();
    for cut in [10, 30] {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        while proxy.requests(PRODUCE) < cut {
            assert!(tokio::time::Instant::now() < deadline, "lanes stalled");
            assert!(
                !lanes.iter().all(|l| l.is_finished()),
                "the lanes finished before the cut"
            );
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        proxy.cut_connections();
    }
    let mut expected = HashMap::new();
    let mut untrusted = 0;
    for lane in lanes {
        let (partition, sent, duplicates) = lane.await.unwrap();
        expected.insert(partition, sent);
        untrusted += duplicates;
    }
    let partitions = read_all(&client, &topic, 8).await;
    for (p, records) in partitions.iter().enumerate() {
        let got = ids(records);
        let mut seen = HashSet::new();
        let firsts: Vec<String> = got.iter().filter(|id| seen.insert(*id)).cloned().collect();
        let p = i32::try_from(p).unwrap();
        assert_eq!(
            firsts, expected[&p],
            "partition {p}: every row, first copies in order"
        );
    }
    if untrusted == 0 {
        assert_eq!(
            publisher.producer_id(),
            first_id,
            "a lost connection keeps the producer id: only the broker's answer retires it"
        );
    }
    assert!(publisher.produce_requests() < publisher.produce_batches());
}
