//! Bucket hashing: which ordering bucket a message belongs to.
//!
//! The outbox keeps submission order per bucket, and one relay worker drains a bucket
//! at a time. Everything that Kafka keeps in order must therefore land in one bucket:
//!
//! * an explicit partition `p` goes to bucket `p % bucket_count`, so every record
//!   pinned to one partition shares one submission sequence;
//! * otherwise a key (an empty key included: it is a real key) goes to bucket
//!   `to_positive(murmur2(key)) % bucket_count`. That is the formula of the Java
//!   client's default partitioner, so when `bucket_count` equals the topic's partition
//!   count, bucket `b` feeds exactly partition `b`. With other counts, records of one
//!   key still share a bucket, and that is all ordering needs;
//! * a keyless record has no ordering to keep; its message id's 16 bytes are hashed
//!   the same way, which spreads keyless records evenly and keeps the choice stable
//!   for a given id.
//!
//! Buckets are computed once, at enqueue time, and stored with the row, so these
//! functions must never change their output: the unit tests pin them to the test
//! vectors published by Apache Kafka, librdkafka and kafka-python.

use std::num::NonZeroU32;

use uuid::Uuid;

/// Kafka's 32-bit MurmurHash2, bit for bit the Java client's
/// `org.apache.kafka.common.utils.Utils.murmur2`.
///
/// Reads the input in little-endian 4-byte words with seed `0x9747b28c`; the result
/// is the Java `int`, so it is frequently negative. Total: never panics.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;

    // Java computes `seed ^ length` on an `int`; truncating the length to 32 bits
    // gives the same value even for inputs beyond 4 GiB.
    let mut h: u32 = SEED ^ (data.len() as u32);

    // Unsigned wrapping arithmetic produces the same bits as Java's overflowing `int`
    // arithmetic, and `>>` on a `u32` is Java's logical `>>>`.
    let (words, tail) = data.as_chunks::<4>();
    for word in words {
        let mut k = u32::from_le_bytes(*word);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }

    // The Java `switch` falls through from case 3 down to case 1; each arm here spells
    // that fall-through out, and only a non-empty tail gets the extra multiply.
    match *tail {
        [a, b, c] => {
            h ^= u32::from(c) << 16;
            h ^= u32::from(b) << 8;
            h ^= u32::from(a);
            h = h.wrapping_mul(M);
        }
        [a, b] => {
            h ^= u32::from(b) << 8;
            h ^= u32::from(a);
            h = h.wrapping_mul(M);
        }
        [a] => {
            h ^= u32::from(a);
            h = h.wrapping_mul(M);
        }
        _ => {}
    }

    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;

    h.cast_signed()
}

/// Clears the sign bit, as the Java client's `Utils.toPositive` does.
///
/// Unlike `abs`, this is total (`i32::MIN` maps to 0) and the result is always in
/// `0..=i32::MAX`.
pub fn to_positive(n: i32) -> i32 {
    n & 0x7fff_ffff
}

/// The partition the Java client's default partitioner picks for a non-null `key`:
/// `to_positive(murmur2(key)) % partitions`.
///
/// Taking a [`NonZeroU32`] makes the division total: this never panics.
pub fn partition_for_key(key: &[u8], partitions: NonZeroU32) -> u32 {
    positive_rem(murmur2(key), partitions)
}

/// The ordering bucket of a message, in `0..bucket_count`.
///
/// Precedence, and why:
///
/// 1. An explicit `partition` maps to `partition % bucket_count`, whatever the key.
///    Kafka orders records per partition, so records pinned to one partition must
///    share one bucket (one submission sequence) even when their keys differ.
///    Callers reject negative partitions; should one arrive anyway, its sign bit is
///    cleared (as [`to_positive`] does for hashes) so the result stays in range.
/// 2. A present `key`, including an empty one, maps to
///    `to_positive(murmur2(key)) % bucket_count`. When `bucket_count` equals the
///    topic's partition count, this is exactly the partition the Java default
///    partitioner would choose, so one bucket feeds one partition.
/// 3. A missing key hashes `message_id`'s 16 bytes the same way: keyless records
///    carry no ordering promise, and the id spreads them evenly and deterministically.
///
/// Never panics. The result always fits in an `i32` because both the hashed value and
/// the sign-cleared partition are at most `i32::MAX`.
pub fn bucket_for(
    key: Option<&[u8]>,
    partition: Option<i32>,
    message_id: &Uuid,
    bucket_count: NonZeroU32,
) -> i32 {
    let bucket = match (partition, key) {
        (Some(partition), _) => positive_rem(partition, bucket_count),
        (None, Some(key)) => partition_for_key(key, bucket_count),
        (None, None) => positive_rem(murmur2(message_id.as_bytes()), bucket_count),
    };
    // `positive_rem` returns at most `i32::MAX`, so the reinterpretation keeps the value.
    bucket.cast_signed()
}

/// `to_positive(n) % divisor`, in `0..=i32::MAX`.
fn positive_rem(n: i32, divisor: NonZeroU32) -> u32 {
    // `to_positive` leaves a value in `0..=i32::MAX`, which `u32` holds unchanged.
    to_positive(n).cast_unsigned() % divisor
}

#[cfg(test)]
#[path = "bucket_tests.rs"]
mod tests;
