//! The binary COPY stream, byte by byte. (That PostgreSQL accepts it and stores every
//! field as the insert does is the database suite's `bulk_enqueue` test.)

use outbox_core::{OutboxMessage, Timestamp, Uuid};

use super::*;

fn row(created_at_ms: i64) -> OutboxMessage {
    OutboxMessage {
        id: 0,
        message_id: Uuid::from_u128(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10),
        bucket: 3,
        topic: "t".into(),
        key: None,
        value: Some(vec![0xaa, 0xbb]),
        headers: None,
        partition: Some(7),
        created_at: Timestamp::from_millis(created_at_ms),
        store_ref: None,
    }
}

#[test]
fn a_row_is_framed_as_postgres_reads_binary_copy() {
    // 2000-01-01T00:00:01.5Z: 1.5 s after PostgreSQL's epoch.
    let bytes = encode_rows(&[row(POSTGRES_EPOCH_MS + 1_500)]).unwrap();
    let mut want = Vec::new();
    want.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]); // flags, extension length
    want.extend_from_slice(&[0, 8]); // fields
    want.extend_from_slice(&[0, 0, 0, 16]);
    want.extend_from_slice(&(1u8..=16).collect::<Vec<_>>());
    want.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 3]); // bucket
    want.extend_from_slice(&[0, 0, 0, 1, b't']); // topic
    want.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]); // key: NULL
    want.extend_from_slice(&[0, 0, 0, 2, 0xaa, 0xbb]); // value
    want.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]); // headers: NULL
    want.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 7]); // partition
    want.extend_from_slice(&[0, 0, 0, 8]);
    want.extend_from_slice(&1_500_000i64.to_be_bytes()); // microseconds since 2000
    want.extend_from_slice(&[0xff, 0xff]); // trailer
    assert_eq!(bytes, want);
}

#[test]
fn times_before_2000_are_negative_microseconds() {
    let bytes = encode_rows(&[row(0)]).unwrap();
    let stamp = &bytes[bytes.len() - 2 - 8..bytes.len() - 2];
    assert_eq!(
        i64::from_be_bytes(stamp.try_into().unwrap()),
        -POSTGRES_EPOCH_MS * 1_000
    );
}

#[test]
fn an_unstorable_creation_time_is_the_inserts_typed_error() {
    let rows = [row(0), row(i64::MAX)];
    match encode_rows(&rows) {
        Err(EnqueueError::CreatedAtOutOfRange { index: 1, .. }) => {}
        other => panic!("expected CreatedAtOutOfRange for row 1, got {other:?}"),
    }
}

#[test]
fn the_statement_names_the_schema_and_every_column_but_id() {
    let tables = OutboxTables::builder()
        .schema("messaging")
        .messages("out")
        .build()
        .unwrap();
    assert_eq!(
        copy_statement(&tables),
        "COPY \"messaging\".\"out\" (message_id, bucket, topic, key, value, headers, partition, created_at) FROM STDIN (FORMAT binary)"
    );
}
