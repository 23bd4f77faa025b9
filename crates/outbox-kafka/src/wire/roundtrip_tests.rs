//! Our record-batch encoder checked against rskafka's independent reader, for every
//! codec. (rskafka's reader rejects null header values, so those are covered by the
//! byte-level tests in `record_batch`.)

use rskafka::protocol::record::{ControlBatchOrRecords, RecordBatch, RecordBatchCompression};
use rskafka::protocol::traits::ReadType;

use crate::compression::Compression;
use crate::record_batch::{ProducerStamp, RecordRef, encode_batch};

#[test]
fn rskafka_reads_what_we_write() {
    let big: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let records = vec![
        RecordRef {
            timestamp_ms: 1_700_000_000_000,
            key: Some(b""),
            value: Some(&big),
            headers: vec![
                ("a", Some(b"1")),
                ("a", Some(b"")),
                ("x-outbox-message-id", Some(b"id")),
            ],
        },
        RecordRef {
            timestamp_ms: 1_700_000_000_005,
            key: None,
            value: None,
            headers: vec![],
        },
    ];
    for (ours, theirs) in [
        (Compression::None, RecordBatchCompression::NoCompression),
        (Compression::Gzip, RecordBatchCompression::Gzip),
        (Compression::Snappy, RecordBatchCompression::Snappy),
        (Compression::Lz4, RecordBatchCompression::Lz4),
        (Compression::Zstd, RecordBatchCompression::Zstd),
    ]
    .into_iter()
    .filter(|(ours, _)| ours.is_enabled())
    {
        let stamp = ProducerStamp {
            producer_id: 99,
            producer_epoch: 1,
            base_sequence: 5,
        };
        let bytes = encode_batch(&records, stamp, ours).unwrap();
        let mut cursor = std::io::Cursor::new(&bytes);
        let batch = RecordBatch::read(&mut cursor).unwrap();
        assert_eq!(cursor.position() as usize, bytes.len());
        assert_eq!(batch.compression, theirs);
        assert_eq!(
            (batch.producer_id, batch.producer_epoch, batch.base_sequence),
            (99, 1, 5)
        );
        assert_eq!(batch.last_offset_delta, 1);
        assert_eq!(batch.first_timestamp, 1_700_000_000_000);
        assert_eq!(batch.max_timestamp, 1_700_000_000_005);
        let ControlBatchOrRecords::Records(read) = batch.records else {
            panic!("not a data batch");
        };
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].key.as_deref(), Some(&b""[..]));
        assert_eq!(read[0].value.as_deref(), Some(&big[..]));
        let headers: Vec<(&str, &[u8])> = read[0]
            .headers
            .iter()
            .map(|h| (h.key.as_str(), h.value.as_slice()))
            .collect();
        assert_eq!(
            headers,
            [("a", &b"1"[..]), ("a", b""), ("x-outbox-message-id", b"id")]
        );
        assert_eq!((read[1].key.clone(), read[1].value.clone()), (None, None));
        assert_eq!((read[1].offset_delta, read[1].timestamp_delta), (1, 5));
        if ours != Compression::None {
            assert!(bytes.len() < big.len(), "{ours:?} did not compress");
        }
    }
}
