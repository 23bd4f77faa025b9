use super::*;

fn varint(v: i32) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, v);
    out
}

#[test]
fn varints_match_the_protocol_examples() {
    assert_eq!(varint(0), [0x00]);
    assert_eq!(varint(-1), [0x01]);
    assert_eq!(varint(1), [0x02]);
    assert_eq!(varint(63), [0x7e]);
    assert_eq!(varint(-64), [0x7f]);
    assert_eq!(varint(64), [0x80, 0x01]);
    assert_eq!(varint(i32::MAX), [0xfe, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(varint(i32::MIN), [0xff, 0xff, 0xff, 0xff, 0x0f]);
    let mut long = Vec::new();
    put_varlong(&mut long, i64::MIN);
    assert_eq!(long.len(), 10);
}

fn stamp() -> ProducerStamp {
    ProducerStamp {
        producer_id: 7,
        producer_epoch: 3,
        base_sequence: 42,
    }
}

#[test]
fn header_fields_and_crc() {
    let records = [
        RecordRef {
            timestamp_ms: 1_000,
            key: Some(b"k"),
            value: None,
            headers: vec![("n", None), ("e", Some(b""))],
        },
        RecordRef {
            timestamp_ms: 999,
            key: None,
            value: Some(b"v"),
            headers: vec![],
        },
    ];
    let batch = encode_batch(&records, stamp(), Compression::None).unwrap();
    let be_i32 = |at: usize| i32::from_be_bytes(batch[at..at + 4].try_into().unwrap());
    let be_i64 = |at: usize| i64::from_be_bytes(batch[at..at + 8].try_into().unwrap());
    assert_eq!(be_i64(0), 0, "base offset");
    assert_eq!(be_i32(8) as usize, batch.len() - 12, "batch length");
    assert_eq!(batch[16], 2, "magic");
    let crc = u32::from_be_bytes(batch[17..21].try_into().unwrap());
    assert_eq!(crc, crc32c::crc32c(&batch[21..]));
    assert_eq!(be_i32(23), 1, "last offset delta");
    assert_eq!(be_i64(27), 1_000, "base timestamp");
    assert_eq!(be_i64(35), 1_000, "max timestamp");
    assert_eq!(be_i64(43), 7, "producer id");
    assert_eq!(i16::from_be_bytes([batch[51], batch[52]]), 3, "epoch");
    assert_eq!(be_i32(53), 42, "base sequence");
    assert_eq!(be_i32(57), 2, "record count");
    assert_eq!(BATCH_OVERHEAD, 61);
    // First record: attributes 0, ts delta 0, offset delta 0, key "k", null value,
    // two headers: "n" with a null value (-1 = 0x01), "e" with an empty one.
    let first = &batch[BATCH_OVERHEAD..];
    let body = [
        0x00, 0x00, 0x00, 0x02, b'k', 0x01, 0x04, 0x02, b'n', 0x01, 0x02, b'e', 0x00,
    ];
    assert_eq!(first[0] as usize, body.len() * 2, "zig-zag length");
    assert_eq!(&first[1..1 + body.len()], &body);
    // Second record: timestamp delta -1 (0x01), offset delta 1 (0x02), null key.
    let second = &first[1 + body.len()..];
    assert_eq!(&second[1..], &[0x00, 0x01, 0x02, 0x01, 0x02, b'v', 0x00]);
}

#[test]
fn size_bound_holds() {
    let value = vec![7u8; 300];
    let r = RecordRef {
        timestamp_ms: i64::MAX,
        key: Some(b"key"),
        value: Some(&value),
        headers: vec![("x-outbox-message-id", Some(&value[..36]))],
    };
    let batch = encode_batch(std::slice::from_ref(&r), stamp(), Compression::None).unwrap();
    assert!(batch.len() <= BATCH_OVERHEAD + r.max_encoded_len());
}
