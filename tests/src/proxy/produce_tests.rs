//! Tests of reading a hand-made Produce request and answering it with an error code.

use super::*;

/// `body` behind its 4-byte size.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

#[test]
fn builds_produce_error_responses() {
    let mut req = vec![0, 0, 0, 7]; // api key 0, version 7
    req.extend_from_slice(&42i32.to_be_bytes());
    req.extend_from_slice(&1i16.to_be_bytes());
    req.push(b'c'); // client id
    req.extend_from_slice(&(-1i16).to_be_bytes()); // no transactional id
    req.extend_from_slice(&(-1i16).to_be_bytes()); // acks
    req.extend_from_slice(&1000i32.to_be_bytes());
    req.extend_from_slice(&1i32.to_be_bytes());
    req.extend_from_slice(&1i16.to_be_bytes());
    req.push(b't');
    req.extend_from_slice(&1i32.to_be_bytes());
    req.extend_from_slice(&2i32.to_be_bytes()); // partition 2
    req.extend_from_slice(&3i32.to_be_bytes());
    req.extend_from_slice(&[1, 2, 3]);
    assert_eq!(
        produce_targets(&frame(&req), 7).unwrap(),
        vec![("t".to_owned(), 2)]
    );
    let out = produce_error_response(&frame(&req), 7, 42, 6).unwrap();
    assert_eq!(&out[4..8], &42i32.to_be_bytes());
    assert_eq!(
        i32::from_be_bytes(out[..4].try_into().unwrap()) as usize,
        out.len() - 4
    );
    // one topic "t", one partition 2 with error 6
    assert_eq!(&out[8..12], &1i32.to_be_bytes());
    assert_eq!(&out[12..15], &[0, 1, b't']);
    assert_eq!(&out[19..23], &2i32.to_be_bytes());
    assert_eq!(&out[23..25], &6i16.to_be_bytes());
    assert_eq!(out.len(), 4 + 4 + 4 + 3 + 4 + 4 + 2 + 8 + 8 + 8 + 4);
}
