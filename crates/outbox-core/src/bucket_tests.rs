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
