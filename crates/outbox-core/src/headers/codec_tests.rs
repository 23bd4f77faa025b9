use super::*;

/// The encoding of `[("a", Some(b"xy")), ("", None)]`, spelled out byte by byte.
const SAMPLE: &[u8] = &[
    1, // version
    0, 0, 0, 2, // count
    0, 0, 0, 1, b'a', // name "a"
    0, 0, 0, 2, b'x', b'y', // value "xy"
    0, 0, 0, 0, // empty name
    0xff, 0xff, 0xff, 0xff, // null value
];

/// The two headers [`SAMPLE`] encodes (the list tests use them too).
pub(crate) fn sample() -> Headers {
    let mut headers = Headers::new();
    headers.push("a", Some(b"xy".to_vec()));
    headers.push("", None);
    headers
}

#[test]
fn encodes_the_documented_layout() {
    assert_eq!(sample().encode(), SAMPLE);
    assert_eq!(sample().encoded_len(), SAMPLE.len());
    assert_eq!(Headers::decode(SAMPLE).unwrap(), sample());
}

#[test]
fn empty_list_is_five_bytes() {
    let empty = Headers::new();
    assert_eq!(empty.encode(), [1, 0, 0, 0, 0]);
    assert_eq!(empty.encoded_len(), 5);
    assert_eq!(Headers::decode(&[1, 0, 0, 0, 0]).unwrap(), empty);
}

#[test]
fn null_and_empty_values_stay_distinct() {
    let mut headers = Headers::new();
    headers.push("k", None);
    headers.push("k", Some(Vec::new()));
    let decoded = Headers::decode(&headers.encode()).unwrap();
    assert_eq!(decoded, headers);
    assert_eq!(decoded.get("k").unwrap().value, None);
    assert_eq!(decoded.iter().nth(1).unwrap().value, Some(Vec::new()));
}

#[test]
fn empty_input() {
    assert_eq!(Headers::decode(&[]), Err(HeaderDecodeError::Empty));
}

#[test]
fn unknown_versions() {
    for version in [0, 2, 0xff] {
        let mut bytes = SAMPLE.to_vec();
        bytes[0] = version;
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::UnknownVersion(version))
        );
    }
}

/// Start and length of every field after the version byte, in encoding order.
fn field_layout(headers: &Headers) -> Vec<(usize, usize)> {
    let mut fields = vec![(1, 4)];
    let mut at = 5;
    let mut field = |len: usize| {
        fields.push((at, len));
        at += len;
    };
    for header in headers {
        field(4);
        field(header.name.len());
        field(4);
        field(header.value.as_ref().map_or(0, Vec::len));
    }
    fields
}

#[test]
fn truncated_at_every_point() {
    // A long first header, so that cuts past the count check still land inside
    // its name and value, followed by a null value and an empty one.
    let mut headers = Headers::new();
    headers.push("n".repeat(30), Some(vec![7; 20]));
    headers.push("", None);
    headers.push("n2", Some(Vec::new()));
    let full = headers.encode();
    assert_eq!(full.len(), 81);
    let fields = field_layout(&headers);
    let count_needs = 5 + headers.len() * MIN_ENCODED_HEADER_LEN;

    for cut in 1..full.len() {
        let expected = if (5..count_needs).contains(&cut) {
            // Too short for three headers of the minimum size: rejected before
            // any header is read.
            HeaderDecodeError::CountExceedsInput {
                count: 3,
                remaining: cut - 5,
            }
        } else {
            // Otherwise the cut falls inside exactly one non-empty field.
            let &(offset, needed) = fields
                .iter()
                .find(|&&(start, len)| start <= cut && cut < start + len)
                .unwrap();
            HeaderDecodeError::Truncated {
                offset,
                needed,
                remaining: cut - offset,
            }
        };
        assert_eq!(Headers::decode(&full[..cut]), Err(expected), "cut at {cut}");
    }
    assert_eq!(Headers::decode(&full).unwrap(), headers);
}

#[test]
fn lengths_claiming_more_than_is_left() {
    // Name length 9 with only 6 bytes after it.
    let bytes = [1, 0, 0, 0, 1, 0, 0, 0, 9, b'a', b'b', 0, 0, 0, 0];
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::Truncated {
            offset: 9,
            needed: 9,
            remaining: 6,
        })
    );
    // Value length raised from 2 to 3 in the encoding of ("ab", "cd").
    let mut one = Headers::new();
    one.push("ab", Some(b"cd".to_vec()));
    let mut bytes = one.encode();
    assert_eq!(bytes[11..15], [0, 0, 0, 2]);
    bytes[14] = 3;
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::Truncated {
            offset: 15,
            needed: 3,
            remaining: 2,
        })
    );
}

#[test]
fn huge_lengths_fail_without_allocating() {
    // A name length of u32::MAX and a value length of i32::MAX must be caught by
    // the bounds check, not by an allocation failure.
    let bytes = [1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::Truncated {
            offset: 9,
            needed: u32::MAX as usize,
            remaining: 4,
        })
    );
    let bytes = [1, 0, 0, 0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff];
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::Truncated {
            offset: 13,
            needed: i32::MAX as usize,
            remaining: 0,
        })
    );
}

#[test]
fn huge_counts_are_rejected_up_front() {
    let bytes = [1, 0xff, 0xff, 0xff, 0xff];
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::CountExceedsInput {
            count: u32::MAX,
            remaining: 0,
        })
    );
    // 16 bytes after the count hold at most two headers.
    let mut bytes = vec![1, 0, 0, 0, 3];
    bytes.extend([0; 16]);
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::CountExceedsInput {
            count: 3,
            remaining: 16,
        })
    );
    // Exactly enough bytes for two minimal headers (empty names, empty values).
    bytes[4] = 2;
    let decoded = Headers::decode(&bytes).unwrap();
    assert_eq!(decoded.len(), 2);
    assert!(
        decoded
            .iter()
            .all(|h| h.name.is_empty() && h.value == Some(Vec::new()))
    );
}

#[test]
fn negative_value_lengths_other_than_null() {
    for len in [-2_i32, -100, i32::MIN] {
        let mut bytes = SAMPLE.to_vec();
        bytes[10..14].copy_from_slice(&len.to_be_bytes());
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::InvalidValueLength {
                index: 0,
                offset: 10,
                len,
            })
        );
    }
}

#[test]
fn invalid_utf8_names() {
    let mut bytes = SAMPLE.to_vec();
    bytes[9] = 0xff;
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::InvalidUtf8 {
            index: 0,
            offset: 9,
        })
    );
    // A multi-byte character cut in half by the name length is invalid too.
    let mut one = Headers::new();
    one.push("é", None);
    let mut bytes = one.encode();
    assert_eq!(
        bytes,
        [
            1, 0, 0, 0, 1, 0, 0, 0, 2, 0xc3, 0xa9, 0xff, 0xff, 0xff, 0xff
        ]
    );
    // Claim a one-byte name, and drop the character's second byte.
    bytes[8] = 1;
    bytes.remove(10);
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::InvalidUtf8 {
            index: 0,
            offset: 9,
        })
    );
}

#[test]
fn trailing_bytes() {
    let mut bytes = SAMPLE.to_vec();
    bytes.push(0);
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::TrailingBytes {
            offset: SAMPLE.len(),
            len: 1,
        })
    );
    let mut bytes = vec![1, 0, 0, 0, 0];
    bytes.extend([7; 9]);
    assert_eq!(
        Headers::decode(&bytes),
        Err(HeaderDecodeError::TrailingBytes { offset: 5, len: 9 })
    );
}

#[test]
fn error_messages_name_the_problem() {
    let err = Headers::decode(&[9]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown header encoding version 9 (supported: 1)"
    );
    let err = Headers::decode(&[1, 0, 0]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "header bytes truncated at offset 1: 4 bytes needed, 2 left"
    );
}
