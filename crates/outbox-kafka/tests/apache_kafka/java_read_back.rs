//! Every codec, keys (binary, empty, none), values (binary, empty, none), headers with
//! binary and null values, and the message-id header, read back byte for byte by Kafka's
//! own Java consumer (`tests/java/DumpRecords.java`, run from the broker's jars with
//! CRC checks on): the hand-written record batches and codecs are checked by the
//! client the protocol comes from, not only by rskafka.

use std::fmt::Write as _;
use std::path::Path;

use outbox_core::{EnqueueConfig, OutboxMessage};
use outbox_kafka::Compression;
use outbox_tests::broker::{Broker, KafkaSettings};

use crate::kafka::{create_topic, start};
use crate::support::{ID_HEADER, publish, publisher_for};

fn hex(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "-".to_owned(),
        Some(b) => b.iter().fold(String::new(), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        }),
    }
}

/// The record lines DumpRecords prints for `topic` (one partition, in offset order).
fn java_read(broker: &Broker, topic: &str) -> Vec<String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/java/DumpRecords.java");
    let home = broker.kafka_home().expect("an Apache Kafka node");
    let out = home
        .java(&source.display().to_string())
        .args([&broker.addr(), topic])
        .output()
        .expect("running java");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "DumpRecords failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("record "))
        .map(str::to_owned)
        .collect()
}

/// A key or a value: bytes, or none at all.
type KeyOrValue = Option<Vec<u8>>;

fn rows(topic: &str) -> Vec<OutboxMessage> {
    let config = EnqueueConfig::default();
    let binary: Vec<u8> = (0..=255).collect();
    let cases: Vec<(KeyOrValue, KeyOrValue)> = vec![
        (Some(b"plain".to_vec()), Some(b"hello".to_vec())),
        (Some(binary.clone()), Some(binary.repeat(20))),
        (None, Some(b"no key".to_vec())),
        (Some(Vec::new()), Some(Vec::new())),
        (Some(b"no value".to_vec()), None),
    ];
    cases
        .into_iter()
        .enumerate()
        .map(|(i, (key, value))| {
            let mut b = OutboxMessage::builder(topic)
                .partition(0)
                .header("trace", format!("t-{i}"))
                .null_header("nothing")
                .header_from_bytes(b"bin".to_vec(), Some(vec![0, 255, 10, 13]));
            if let Some(k) = key {
                b = b.key(k);
            }
            if let Some(v) = value {
                b = b.value(v);
            }
            b.build(&config).unwrap()
        })
        .collect()
}

/// What DumpRecords must print for `m` at `offset`.
fn expected_line(m: &OutboxMessage, offset: usize) -> String {
    let mut line = format!(
        "0 {offset} {} {}",
        hex(m.key.as_deref()),
        hex(m.value.as_deref())
    );
    for h in m.decoded_headers().unwrap().iter() {
        let _ = write!(
            line,
            " {}={}",
            hex(Some(h.name.as_bytes())),
            hex(h.value.as_deref())
        );
    }
    let id = m.message_id.hyphenated().to_string();
    let _ = write!(
        line,
        " {}={}",
        hex(Some(ID_HEADER.as_bytes())),
        hex(Some(id.as_bytes()))
    );
    line
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafkas_java_consumer_reads_every_codec_byte_for_byte() {
    let broker = start(KafkaSettings::default());
    for compression in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let topic = outbox_tests::unique_name("codec");
        create_topic(&broker, &topic, 1, &[]);
        let client = outbox_tests::kafka::client(&broker.addr()).await;
        outbox_tests::kafka::wait_topic_ready(&client, &topic, 1).await;
        let publisher = publisher_for(&broker.addr())
            .compression(compression)
            .build()
            .unwrap();
        let batch = rows(&topic);
        let outcome = publish(&publisher, &batch).await;
        assert!(
            outcome.error.is_none(),
            "{compression:?}: {:?}",
            outcome.error
        );
        let expected: Vec<String> = batch
            .iter()
            .enumerate()
            .map(|(offset, m)| expected_line(m, offset))
            .collect();
        assert_eq!(java_read(&broker, &topic), expected, "{compression:?}");
    }
}
