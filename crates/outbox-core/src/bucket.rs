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
mod tests {
    use super::*;

    fn nz(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).unwrap()
    }

    /// Apache Kafka, clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java,
    /// `testMurmur2` (read at apache/kafka commit f55581dc73953c3509a4702433aeeeddc2970779).
    #[test]
    fn matches_kafka_utils_test_vectors() {
        let cases: [(&[u8], i32); 6] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ];
        for (input, expected) in cases {
            assert_eq!(
                murmur2(input),
                expected,
                "murmur2({:?})",
                String::from_utf8_lossy(input)
            );
        }
    }

    /// librdkafka, src/rdmurmur2.c, `unittest_murmur2` (read at confluentinc/librdkafka
    /// commit 6cbbd2f7aee9cad3be4aea2c169f12b5b3d787b0). Its table is labelled
    /// `java_murmur2_results` and compares the `int32_t` view of the hash, so the
    /// `u32` bit patterns are compared here. The suffixes of "1234" and of the long
    /// string are how that test exercises every tail length (0 to 3 bytes).
    #[test]
    fn matches_librdkafka_unittest_vectors() {
        let short: &[u8] = b"1234";
        let long: &[u8] = b"PreAmbleWillBeRemoved,ThePrePartThatIs";
        let cases: [(&[u8], u32); 11] = [
            (b"kafka", 0xd067_cf64),
            (b"giberish123456789", 0x8f55_2b0c),
            (short, 0x9fc9_7b14),
            (&short[1..], 0xe7c0_09ca),
            (&short[2..], 0x8739_30da),
            (&short[3..], 0x5a4b_5ca1),
            (long, 0x7842_4f1c),
            (&long[1..], 0x4a62_b377),
            (&long[2..], 0xe0e4_e09e),
            (&long[3..], 0x62b8_b43f),
            (b"", 0x106e_08d9),
        ];
        for (input, expected) in cases {
            assert_eq!(
                murmur2(input).cast_unsigned(),
                expected,
                "murmur2({:?})",
                String::from_utf8_lossy(input)
            );
        }
    }

    /// kafka-python, test/test_partitioner.py, `test_murmur2_java_compatibility`
    /// (read at dpkp/kafka-python commit 077dc4742ffa82584946379790424faf4c6ba47f):
    /// partitions over 1000 partitions, which that test says were compared with the
    /// Java client's partitioner. Its `Murmur2Partitioner` computes
    /// `(murmur2(key) & 0x7fffffff) % len(partitions)`, the formula used here.
    #[test]
    fn matches_kafka_python_partition_vectors() {
        let cases: [(&[u8], u32); 6] = [
            (b"", 681),
            (b"a", 524),
            (b"ab", 434),
            (b"abc", 107),
            (b"123456789", 566),
            (b"\x00 ", 742),
        ];
        for (key, expected) in cases {
            assert_eq!(partition_for_key(key, nz(1000)), expected, "key {key:?}");
        }
    }

    #[test]
    fn to_positive_clears_only_the_sign_bit() {
        assert_eq!(to_positive(0), 0);
        assert_eq!(to_positive(5), 5);
        assert_eq!(to_positive(i32::MAX), i32::MAX);
        assert_eq!(to_positive(i32::MIN), 0);
        assert_eq!(to_positive(-1), i32::MAX);
        // -790332482 is murmur2("foobar") in the Kafka vectors above.
        assert_eq!(to_positive(-790_332_482), 1_357_151_166);
    }

    #[test]
    fn explicit_partition_wins_over_key() {
        let id = Uuid::from_u128(7);
        assert_eq!(bucket_for(Some(b"abc"), Some(13), &id, nz(8)), 5);
        assert_eq!(bucket_for(None, Some(13), &id, nz(8)), 5);
        assert_eq!(bucket_for(Some(b""), Some(0), &id, nz(8)), 0);
    }

    #[test]
    fn key_bucket_matches_the_java_partition_when_counts_agree() {
        let id = Uuid::from_u128(1);
        for key in [&b""[..], b"a", b"ab", b"abc", b"123456789", b"\x00 "] {
            let bucket = bucket_for(Some(key), None, &id, nz(1000));
            assert_eq!(
                u32::try_from(bucket).unwrap(),
                partition_for_key(key, nz(1000))
            );
        }
        // kafka-python's vector for "abc" over 1000 partitions, via bucket_for.
        assert_eq!(bucket_for(Some(b"abc"), None, &id, nz(1000)), 107);
    }

    #[test]
    fn empty_key_is_a_key_not_a_missing_one() {
        // The empty key's hash is fixed (librdkafka's "" vector), so its bucket does not
        // depend on the message id; a missing key hashes the id instead.
        let n = nz(1000);
        for raw in [
            0_u128,
            1,
            u128::MAX,
            0x0190_0000_0000_7000_8000_0000_0000_0001,
        ] {
            let id = Uuid::from_u128(raw);
            assert_eq!(bucket_for(Some(b""), None, &id, n), 681);
            let expected = to_positive(murmur2(id.as_bytes())) % 1000;
            assert_eq!(bucket_for(None, None, &id, n), expected);
        }
    }

    #[test]
    fn negative_partitions_stay_in_range() {
        let id = Uuid::nil();
        for count in [1, 2, 7, 8, 65_536, u32::MAX] {
            for partition in [-1, -2, i32::MIN, i32::MIN + 1] {
                let bucket = bucket_for(None, Some(partition), &id, nz(count));
                assert!(bucket >= 0 && u32::try_from(bucket).unwrap() < count);
            }
        }
    }

    #[test]
    fn huge_bucket_counts_keep_results_in_i32() {
        let id = Uuid::from_u128(u128::MAX);
        let n = nz(u32::MAX);
        assert_eq!(bucket_for(None, Some(i32::MAX), &id, n), i32::MAX);
        assert!(bucket_for(Some(b"foobar"), None, &id, n) >= 0);
        assert!(bucket_for(None, None, &id, n) >= 0);
        assert_eq!(bucket_for(Some(b"foobar"), None, &id, n), 1_357_151_166);
    }
}
