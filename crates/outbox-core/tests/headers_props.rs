//! Properties of the header codec: lossless round trips, and no panic on any input.

use outbox_core::headers::{HEADER_CODEC_VERSION, Header, Headers};
use proptest::prelude::*;

fn any_header() -> impl Strategy<Value = Header> {
    // Names come from a small pool so that duplicates are common; values cover null,
    // empty and non-empty.
    let name = prop_oneof![
        Just(String::new()),
        Just("trace-id".to_owned()),
        Just("ü".to_owned()),
        any::<String>(),
    ];
    let value = prop::option::of(prop::collection::vec(any::<u8>(), 0..40));
    (name, value).prop_map(|(name, value)| Header { name, value })
}

fn any_headers() -> impl Strategy<Value = Headers> {
    prop::collection::vec(any_header(), 0..12).prop_map(Headers::from)
}

/// How to damage a valid encoding.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Flip {
        at: usize,
        mask: u8,
    },
    Set {
        at: usize,
        byte: u8,
    },
    Insert {
        at: usize,
        byte: u8,
    },
    Remove(usize),
    Append(Vec<u8>),
    /// Overwrite 4 bytes, to forge counts and length prefixes.
    Word {
        at: usize,
        word: u32,
    },
}

fn any_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1_u8..).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Insert { at, byte }),
        any::<usize>().prop_map(Mutation::Remove),
        prop::collection::vec(any::<u8>(), 1..8).prop_map(Mutation::Append),
        (
            any::<usize>(),
            prop_oneof![
                Just(u32::MAX),
                Just(0x7fff_ffff),
                Just(0x8000_0000),
                Just(0xffff_fffe),
                any::<u32>()
            ]
        )
            .prop_map(|(at, word)| Mutation::Word { at, word }),
    ]
}

fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let len = bytes.len();
    match *mutation {
        Mutation::Truncate(at) => bytes.truncate(at % (len + 1)),
        Mutation::Flip { at, mask } if len > 0 => bytes[at % len] ^= mask,
        Mutation::Set { at, byte } if len > 0 => bytes[at % len] = byte,
        Mutation::Insert { at, byte } => bytes.insert(at % (len + 1), byte),
        Mutation::Remove(at) if len > 0 => {
            bytes.remove(at % len);
        }
        Mutation::Append(ref extra) => bytes.extend_from_slice(extra),
        Mutation::Word { at, word } if len >= 4 => {
            let at = at % (len - 3);
            bytes[at..at + 4].copy_from_slice(&word.to_be_bytes());
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trips_in_order(headers in any_headers()) {
        let bytes = headers.encode();
        prop_assert_eq!(bytes.first(), Some(&HEADER_CODEC_VERSION));
        prop_assert_eq!(headers.encoded_len(), bytes.len());
        prop_assert_eq!(headers.try_encode(), Ok(bytes.clone()));
        let decoded = Headers::decode(&bytes).unwrap();
        prop_assert_eq!(&decoded, &headers);
        // Order, duplicates and null-ness survive element by element.
        let pairs: Vec<(&str, Option<&[u8]>)> =
            decoded.iter().map(|h| (h.name.as_str(), h.value.as_deref())).collect();
        let expected: Vec<(&str, Option<&[u8]>)> =
            headers.iter().map(|h| (h.name.as_str(), h.value.as_deref())).collect();
        prop_assert_eq!(pairs, expected);
    }

    #[test]
    fn push_builds_the_same_as_from(headers in any_headers()) {
        let mut pushed = Headers::new();
        for header in &headers {
            pushed.push(header.name.clone(), header.value.clone());
        }
        prop_assert_eq!(pushed.encode(), headers.encode());
        prop_assert_eq!(pushed.len(), headers.len());
    }

    #[test]
    fn decode_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = Headers::decode(&bytes);
    }

    #[test]
    fn decode_never_panics_on_version_1_garbage(body in prop::collection::vec(any::<u8>(), 0..256)) {
        let mut bytes = vec![HEADER_CODEC_VERSION];
        bytes.extend(body);
        if let Ok(headers) = Headers::decode(&bytes) {
            // Whatever decodes must be exactly the canonical encoding of the result.
            prop_assert_eq!(headers.encode(), bytes);
        }
    }

    #[test]
    fn decode_never_panics_on_damaged_encodings(
        headers in any_headers(),
        mutations in prop::collection::vec(any_mutation(), 1..4),
    ) {
        let mut bytes = headers.encode();
        for mutation in &mutations {
            apply(&mut bytes, mutation);
        }
        if let Ok(decoded) = Headers::decode(&bytes) {
            // The format has one encoding per header list, so anything accepted must
            // re-encode to the same bytes.
            prop_assert_eq!(decoded.encode(), bytes);
        }
    }

    #[test]
    fn every_strict_prefix_is_rejected(headers in any_headers()) {
        let bytes = headers.encode();
        for cut in 0..bytes.len() {
            prop_assert!(Headers::decode(&bytes[..cut]).is_err(), "prefix of {} bytes", cut);
        }
    }
}
