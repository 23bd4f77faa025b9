use super::*;
use proptest::prelude::*;

fn decoded(payloads: &[String]) -> Vec<i32> {
    let mut out = Vec::new();
    for payload in payloads {
        assert!(decode(payload, |b| out.push(b)), "{payload:?}");
    }
    out
}

#[test]
fn compact_forms() {
    assert_eq!(encode(&[], 100), Vec::<String>::new());
    assert_eq!(encode(&[-1], 100), vec!["-1"]);
    assert_eq!(encode(&[-1, 3], 100), vec!["-1,3"]);
    assert_eq!(encode(&[1, 2], 100), vec!["1,2"]);
    assert_eq!(encode(&[0, 1, 2, 3, 7, 9, 10, 11], 100), vec!["0-3,7,9-11"]);
    assert_eq!(encode(&[5, 5, 5], 100), vec!["5"]);
    assert_eq!(
        encode(&[3, -7, 1], 100),
        vec!["-1,3,1"],
        "any order works, negatives collapse"
    );
    let all: Vec<i32> = (0..65_536).collect();
    assert_eq!(encode(&all, 7_999), vec!["0-65535"]);
}

#[test]
fn splits_at_the_limit() {
    let sparse: Vec<i32> = (0..3_000).map(|i| i * 2).collect();
    let payloads = encode(&sparse, 7_999);
    assert!(payloads.len() > 1);
    assert!(payloads.iter().all(|p| p.len() <= 7_999));
    assert_eq!(decoded(&payloads), sparse);
    let tiny = encode(&[1_000_000_000, 1_000_000_002, 1_000_000_004], 1);
    assert_eq!(
        tiny,
        vec!["1000000000,1000000002", "1000000004"],
        "the limit is raised to the minimum"
    );
}

#[test]
fn lenient_decoding() {
    let mut got = Vec::new();
    assert!(decode("", |b| got.push(b)));
    assert!(decode("  ", |b| got.push(b)));
    assert_eq!(got, vec![-1, -1], "an empty NOTIFY asks for discovery");
    for bad in ["x", "1,,2", "3-1", "1-2-3", "0-70000", "-x", "2.5", "1-"] {
        let mut got = Vec::new();
        assert!(!decode(bad, |b| got.push(b)), "{bad:?}");
        assert_eq!(got.last(), Some(&-1), "{bad:?}");
    }
    let mut got = Vec::new();
    assert!(decode(" 4 , -5 ,6-8", |b| got.push(b)));
    assert_eq!(got, vec![4, -1, 6, 7, 8]);
    assert_eq!(excerpt("short"), "short");
    assert_eq!(excerpt(&"é".repeat(100)).chars().count(), 64);
}

proptest! {
    #[test]
    fn round_trip(ids in proptest::collection::vec(-3i32..70_000, 0..400), limit in 21usize..200) {
        let payloads = encode(&ids, limit);
        prop_assert!(payloads.iter().all(|p| p.len() <= limit && !p.is_empty()));
        let mut expected: Vec<i32> = Vec::new();
        if ids.iter().any(|&b| b < 0) {
            expected.push(-1);
        }
        for &id in ids.iter().filter(|&&b| b >= 0) {
            if expected.last() != Some(&id) {
                expected.push(id);
            }
        }
        prop_assert_eq!(decoded(&payloads), expected);
    }
}
