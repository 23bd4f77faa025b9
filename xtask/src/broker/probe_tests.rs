//! Tests of the Kafka probes against fake brokers on local ports: what they send and how
//! they read the answers.

use super::*;
use crate::broker::pick_free_port;
use std::net::TcpListener;
use std::thread;

/// A fake broker that answers each of the answers `script` makes from its port (bodies
/// after the correlation id), one connection each, and returns the requests it read.
fn fake_broker(
    script: impl FnOnce(i32) -> Vec<Vec<u8>>,
) -> (String, thread::JoinHandle<Vec<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let answers = script(i32::from(addr.port()));
    let handle = thread::spawn(move || {
        let mut requests = Vec::new();
        for answer in answers {
            let (mut s, _) = listener.accept().unwrap();
            let mut size = [0u8; 4];
            s.read_exact(&mut size).unwrap();
            let mut req = vec![0u8; i32::from_be_bytes(size) as usize];
            s.read_exact(&mut req).unwrap();
            let mut resp = req[4..8].to_vec(); // echo the correlation id
            resp.extend_from_slice(&answer);
            let mut frame = (resp.len() as i32).to_be_bytes().to_vec();
            frame.extend_from_slice(&resp);
            s.write_all(&frame).unwrap();
            requests.push(req);
        }
        requests
    });
    (addr.to_string(), handle)
}

fn api_versions_answer(error_code: i16) -> Vec<u8> {
    let mut a = error_code.to_be_bytes().to_vec();
    a.extend_from_slice(&0i32.to_be_bytes()); // empty api_keys array
    a
}

fn metadata_answer(port: i32) -> Vec<u8> {
    let mut a = 0i32.to_be_bytes().to_vec(); // throttle
    a.extend_from_slice(&1i32.to_be_bytes()); // one broker
    a.extend_from_slice(&1i32.to_be_bytes()); // node id
    a.extend_from_slice(&9i16.to_be_bytes());
    a.extend_from_slice(b"127.0.0.1");
    a.extend_from_slice(&port.to_be_bytes());
    a.extend_from_slice(&(-1i16).to_be_bytes()); // rack: null
    a.extend_from_slice(&(-1i16).to_be_bytes()); // cluster id: null
    a.extend_from_slice(&1i32.to_be_bytes()); // controller id
    a.extend_from_slice(&0i32.to_be_bytes()); // topics
    a
}

#[test]
fn api_versions_request_framing_and_success() {
    let (addr, server) = fake_broker(|_| vec![api_versions_answer(0)]);
    api_versions(&addr, Duration::from_secs(5)).unwrap();
    let req = server.join().unwrap().remove(0);
    assert_eq!(&req[0..2], &18i16.to_be_bytes()); // ApiVersions
    assert_eq!(&req[2..4], &0i16.to_be_bytes()); // version 0
    assert_eq!(&req[8..10], &11i16.to_be_bytes()); // client id length
    assert_eq!(&req[10..], b"xtask-probe");
}

#[test]
fn api_versions_error_code_is_not_ready() {
    // 35: UNSUPPORTED_VERSION
    let (addr, server) = fake_broker(|_| vec![api_versions_answer(35)]);
    let err = api_versions(&addr, Duration::from_secs(5)).unwrap_err();
    server.join().unwrap();
    assert!(format!("{err:#}").contains("error code 35"), "{err:#}");
}

#[test]
fn ready_when_metadata_lists_the_broker_itself() {
    let (addr, server) = fake_broker(|port| vec![api_versions_answer(0), metadata_answer(port)]);
    ready(&addr, Duration::from_secs(5)).unwrap();
    let requests = server.join().unwrap();
    assert_eq!(&requests[1][0..4], &[0, 3, 0, 4]); // Metadata v4
    assert_eq!(&requests[1][21..], &[0, 0, 0, 0, 0]); // no topics, no auto-create
}

#[test]
fn not_ready_while_metadata_lacks_the_broker() {
    // A KRaft broker not yet registered lists no broker, or others only.
    let (addr, server) =
        fake_broker(|port| vec![api_versions_answer(0), metadata_answer(port + 1)]);
    let err = ready(&addr, Duration::from_secs(5)).unwrap_err();
    server.join().unwrap();
    assert!(
        format!("{err:#}").contains("no live broker on port"),
        "{err:#}"
    );
}

#[test]
fn nothing_listening_is_not_ready() {
    let port = pick_free_port().unwrap();
    assert!(api_versions(&format!("127.0.0.1:{port}"), Duration::from_millis(500)).is_err());
    assert!(ready(&format!("127.0.0.1:{port}"), Duration::from_millis(500)).is_err());
}
