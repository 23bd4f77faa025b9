//! Tests of the Metadata rewrite on hand-made classic and flexible responses.

use super::*;

/// `body` behind its 4-byte size.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

#[test]
fn rewrites_classic_metadata() {
    let mut body = 7i32.to_be_bytes().to_vec(); // correlation
    body.extend_from_slice(&0i32.to_be_bytes()); // throttle (v3+)
    body.extend_from_slice(&1i32.to_be_bytes()); // one broker
    body.extend_from_slice(&1i32.to_be_bytes()); // node 1
    body.extend_from_slice(&9i16.to_be_bytes());
    body.extend_from_slice(b"127.0.0.1");
    body.extend_from_slice(&19092i32.to_be_bytes());
    body.extend_from_slice(&(-1i16).to_be_bytes()); // null rack
    body.extend_from_slice(b"REST");
    let out = rewrite_metadata(&frame(&body), 4, "proxy", 5).unwrap();
    let mut expected = 7i32.to_be_bytes().to_vec();
    expected.extend_from_slice(&0i32.to_be_bytes());
    expected.extend_from_slice(&1i32.to_be_bytes());
    expected.extend_from_slice(&1i32.to_be_bytes());
    expected.extend_from_slice(&5i16.to_be_bytes());
    expected.extend_from_slice(b"proxy");
    expected.extend_from_slice(&5i32.to_be_bytes());
    expected.extend_from_slice(&(-1i16).to_be_bytes());
    expected.extend_from_slice(b"REST");
    assert_eq!(out, frame(&expected));
}

#[test]
fn rewrites_flexible_metadata() {
    let mut body = 7i32.to_be_bytes().to_vec();
    body.push(0); // header tagged fields
    body.extend_from_slice(&0i32.to_be_bytes()); // throttle
    body.push(2); // compact array of one
    body.extend_from_slice(&3i32.to_be_bytes());
    body.push(5);
    body.extend_from_slice(b"host");
    body.extend_from_slice(&9092i32.to_be_bytes());
    body.push(0); // null rack
    body.push(0); // tagged fields
    body.extend_from_slice(b"REST");
    let out = rewrite_metadata(&frame(&body), 12, "p", 1).unwrap();
    let mut expected = 7i32.to_be_bytes().to_vec();
    expected.push(0);
    expected.extend_from_slice(&0i32.to_be_bytes());
    expected.push(2);
    expected.extend_from_slice(&3i32.to_be_bytes());
    expected.push(2);
    expected.extend_from_slice(b"p");
    expected.extend_from_slice(&1i32.to_be_bytes());
    expected.extend_from_slice(&[0, 0]);
    expected.extend_from_slice(b"REST");
    assert_eq!(out, frame(&expected));
}
