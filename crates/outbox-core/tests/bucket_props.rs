//! Properties of bucket hashing that must hold for every input, not only for the
//! published vectors pinned in the unit tests.

use std::num::NonZeroU32;

use outbox_core::bucket::{bucket_for, murmur2, partition_for_key, to_positive};
use proptest::prelude::*;
use uuid::Uuid;

/// A second, deliberately literal transcription of the Java client's `Utils.murmur2`:
/// signed `i32` arithmetic, byte masking and `>>>` written as an unsigned shift. It
/// shares no code with the crate's version, so agreement on arbitrary input checks
/// the crate's unsigned formulation against the Java shape.
fn java_shaped_murmur2(data: &[u8]) -> i32 {
    fn ushr(x: i32, by: u32) -> i32 {
        (x.cast_unsigned() >> by).cast_signed()
    }
    fn byte(data: &[u8], i: usize) -> i32 {
        i32::from(data[i])
    }
    let length = data.len();
    let seed: i32 = 0x9747_b28c_u32.cast_signed();
    let m: i32 = 0x5bd1_e995;
    let r = 24;
    // Java's `data.length` is an `int`; the inputs here are far below `i32::MAX`.
    let mut h: i32 = seed ^ length as i32;
    let length4 = length / 4;
    for i in 0..length4 {
        let i4 = i * 4;
        let mut k: i32 = byte(data, i4)
            .wrapping_add(byte(data, i4 + 1) << 8)
            .wrapping_add(byte(data, i4 + 2) << 16)
            .wrapping_add(byte(data, i4 + 3) << 24);
        k = k.wrapping_mul(m);
        k ^= ushr(k, r);
        k = k.wrapping_mul(m);
        h = h.wrapping_mul(m);
        h ^= k;
    }
    let base = length & !3;
    let rem = length % 4;
    if rem == 3 {
        h ^= byte(data, base + 2) << 16;
    }
    if rem >= 2 {
        h ^= byte(data, base + 1) << 8;
    }
    if rem >= 1 {
        h ^= byte(data, base);
        h = h.wrapping_mul(m);
    }
    h ^= ushr(h, 13);
    h = h.wrapping_mul(m);
    h ^= ushr(h, 15);
    h
}

fn any_count() -> impl Strategy<Value = NonZeroU32> {
    prop_oneof![
        (1_u32..=64).prop_filter_map("non-zero", NonZeroU32::new),
        (1_u32..=65_536).prop_filter_map("non-zero", NonZeroU32::new),
        any::<NonZeroU32>(),
    ]
}

fn any_id() -> impl Strategy<Value = Uuid> {
    any::<u128>().prop_map(Uuid::from_u128)
}

fn any_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..80)
}

fn in_range(bucket: i32, count: NonZeroU32) -> bool {
    u32::try_from(bucket).is_ok_and(|b| b < count.get())
}

proptest! {
    #[test]
    fn murmur2_is_deterministic(data in any_key()) {
        let copy = data.clone();
        prop_assert_eq!(murmur2(&data), murmur2(&copy));
    }

    #[test]
    fn murmur2_matches_the_java_shaped_transcription(data in prop::collection::vec(any::<u8>(), 0..300)) {
        prop_assert_eq!(murmur2(&data), java_shaped_murmur2(&data));
    }

    #[test]
    fn to_positive_is_non_negative_and_keeps_the_low_bits(n in any::<i32>()) {
        let p = to_positive(n);
        prop_assert!(p >= 0);
        prop_assert_eq!(p.cast_unsigned(), n.cast_unsigned() & 0x7fff_ffff);
    }

    #[test]
    fn partition_for_key_is_in_range(key in any_key(), count in any_count()) {
        prop_assert!(partition_for_key(&key, count) < count.get());
    }

    #[test]
    fn bucket_is_always_in_range(
        key in prop::option::of(any_key()),
        partition in prop::option::of(any::<i32>()),
        id in any_id(),
        count in any_count(),
    ) {
        let bucket = bucket_for(key.as_deref(), partition, &id, count);
        prop_assert!(in_range(bucket, count), "bucket {} of {}", bucket, count);
    }

    #[test]
    fn same_key_same_bucket_whatever_the_id(
        key in any_key(),
        a in any_id(),
        b in any_id(),
        count in any_count(),
    ) {
        let bucket = bucket_for(Some(&key), None, &a, count);
        prop_assert_eq!(bucket, bucket_for(Some(&key), None, &b, count));
        // And it is the Java default partitioner's choice for that many partitions.
        prop_assert_eq!(bucket.cast_unsigned(), partition_for_key(&key, count));
    }

    #[test]
    fn explicit_partition_is_partition_mod_count(
        key in prop::option::of(any_key()),
        partition in 0..=i32::MAX,
        id in any_id(),
        count in any_count(),
    ) {
        let bucket = bucket_for(key.as_deref(), Some(partition), &id, count);
        prop_assert_eq!(bucket.cast_unsigned(), partition.cast_unsigned() % count.get());
    }

    #[test]
    fn empty_key_is_hashed_and_missing_key_uses_the_id(
        a in any_id(),
        b in any_id(),
        count in any_count(),
    ) {
        // The empty key is a key: its bucket ignores the id.
        let empty = bucket_for(Some(&[]), None, &a, count);
        prop_assert_eq!(empty, bucket_for(Some(&[]), None, &b, count));
        prop_assert_eq!(empty.cast_unsigned(), partition_for_key(&[], count));
        // A missing key hashes the id's bytes instead.
        for id in [a, b] {
            let missing = bucket_for(None, None, &id, count);
            prop_assert_eq!(missing.cast_unsigned(), partition_for_key(id.as_bytes(), count));
        }
    }
}

#[test]
fn missing_key_buckets_vary_with_the_id() {
    // With many buckets, distinct ids must not all collapse onto one bucket (which is
    // what would happen if a missing key were treated like the empty key).
    let count = NonZeroU32::new(1024).unwrap();
    let buckets: std::collections::BTreeSet<i32> = (0_u128..64)
        .map(|n| bucket_for(None, None, &Uuid::from_u128(n), count))
        .collect();
    assert!(buckets.len() > 1, "{buckets:?}");
}
