use super::*;

fn encode(version: i16) -> Vec<u8> {
    let mut out = Vec::new();
    InitProducerIdRequest
        .write_versioned(&mut out, ApiVersion(Int16(version)))
        .unwrap();
    out
}

#[test]
fn request_layouts() {
    // v0/v1: i16 -1 (null string), i32 timeout.
    assert_eq!(encode(0), [0xff, 0xff, 0x7f, 0xff, 0xff, 0xff]);
    // v2: compact null string (0), timeout, no tagged fields (0).
    assert_eq!(encode(2), [0x00, 0x7f, 0xff, 0xff, 0xff, 0x00]);
    // v4: plus producer id -1 and epoch -1.
    let mut v4 = vec![0x00, 0x7f, 0xff, 0xff, 0xff];
    v4.extend_from_slice(&[0xff; 10]);
    v4.push(0x00);
    assert_eq!(encode(4), v4);
}

#[test]
fn response_flexible() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&0i32.to_be_bytes());
    bytes.extend_from_slice(&0i16.to_be_bytes());
    bytes.extend_from_slice(&1234i64.to_be_bytes());
    bytes.extend_from_slice(&0i16.to_be_bytes());
    bytes.push(0); // no tagged fields
    let mut cursor = std::io::Cursor::new(bytes);
    let r = InitProducerIdResponse::read_versioned(&mut cursor, ApiVersion(Int16(4))).unwrap();
    assert_eq!(
        (r.error_code, r.producer_id, r.producer_epoch),
        (0, 1234, 0)
    );
    assert_eq!(cursor.position(), 17);
}
