use super::*;

#[test]
fn layout() {
    let mut out = Vec::new();
    ProduceBatchRequest {
        batches: &[PartitionBatch {
            topic: "t",
            partition: 2,
            batch: &[9, 9],
        }],
        timeout_ms: 1000,
    }
    .write_versioned(&mut out, ApiVersion(Int16(7)))
    .unwrap();
    let expected: Vec<u8> = [
        &[0xff, 0xff][..],      // null transactional id
        &[0xff, 0xff],          // acks -1
        &1000i32.to_be_bytes(), // timeout
        &1i32.to_be_bytes(),
        &[0, 1, b't'],
        &1i32.to_be_bytes(),
        &2i32.to_be_bytes(),
        &2i32.to_be_bytes(),
        &[9, 9],
    ]
    .concat();
    assert_eq!(out, expected);
}

#[test]
fn several_partitions_are_grouped_by_topic() {
    let mut out = Vec::new();
    let batch = |topic, partition, batch| PartitionBatch {
        topic,
        partition,
        batch,
    };
    ProduceBatchRequest {
        batches: &[
            batch("a", 0, &[1]),
            batch("b", 5, &[2, 2]),
            batch("a", 3, &[3]),
        ],
        timeout_ms: 7,
    }
    .write_versioned(&mut out, ApiVersion(Int16(7)))
    .unwrap();
    let expected: Vec<u8> = [
        &[0xff, 0xff][..],
        &[0xff, 0xff],
        &7i32.to_be_bytes(),
        &2i32.to_be_bytes(), // two topics
        &[0, 1, b'a'],
        &2i32.to_be_bytes(), // a: partitions 0 and 3
        &0i32.to_be_bytes(),
        &1i32.to_be_bytes(),
        &[1],
        &3i32.to_be_bytes(),
        &1i32.to_be_bytes(),
        &[3],
        &[0, 1, b'b'],
        &1i32.to_be_bytes(), // b: partition 5
        &5i32.to_be_bytes(),
        &2i32.to_be_bytes(),
        &[2, 2],
    ]
    .concat();
    assert_eq!(out, expected);
}
