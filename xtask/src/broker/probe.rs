//! Is a Kafka broker answering? One `ApiVersions` round trip, and polling it.

use anyhow::{Context, Result, anyhow, ensure};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// One Kafka `ApiVersions` (api key 18, version 0) round trip with the broker at `addr`;
/// `Ok` only when it answers with error code 0.
///
/// Request: `i32 size, i16 api_key, i16 api_version, i32 correlation_id, i16-length
/// client_id`, no body. Response: `i32 size, i32 correlation_id, i16 error_code, ...`.
pub fn api_versions(addr: &str, timeout: Duration) -> Result<()> {
    let mut last_err = anyhow!("{addr} resolved to no address");
    for sock in addr
        .to_socket_addrs()
        .with_context(|| format!("resolving {addr}"))?
    {
        match api_versions_at(&sock, timeout) {
            Ok(()) => return Ok(()),
            Err(e) => last_err = e,
        }
    }
    Err(last_err)
}

fn api_versions_at(sock: &std::net::SocketAddr, timeout: Duration) -> Result<()> {
    const CORRELATION_ID: i32 = 0x7874_6b31;
    let client_id = b"xtask-probe";
    let mut stream = TcpStream::connect_timeout(sock, timeout)
        .with_context(|| format!("connecting to {sock}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let _ = stream.set_nodelay(true);

    let mut body = Vec::with_capacity(32);
    body.extend_from_slice(&18i16.to_be_bytes()); // api_key: ApiVersions
    body.extend_from_slice(&0i16.to_be_bytes()); // api_version 0
    body.extend_from_slice(&CORRELATION_ID.to_be_bytes());
    body.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    body.extend_from_slice(client_id);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    stream
        .write_all(&frame)
        .with_context(|| format!("sending ApiVersions to {sock}"))?;

    let mut size = [0u8; 4];
    stream
        .read_exact(&mut size)
        .with_context(|| format!("reading the ApiVersions response size from {sock}"))?;
    let size = i32::from_be_bytes(size);
    ensure!(
        (6..=1 << 20).contains(&size),
        "{sock} answered ApiVersions with an implausible frame size {size}"
    );
    let mut response = vec![0u8; size as usize];
    stream
        .read_exact(&mut response)
        .with_context(|| format!("reading the ApiVersions response from {sock}"))?;
    let correlation = be_i32(&response, 0)?;
    ensure!(
        correlation == CORRELATION_ID,
        "{sock} answered ApiVersions with correlation id {correlation}, sent {CORRELATION_ID}"
    );
    let error_code = be_i16(&response, 4)?;
    ensure!(
        error_code == 0,
        "{sock} answered ApiVersions with error code {error_code}"
    );
    Ok(())
}

fn be_i32(buf: &[u8], at: usize) -> Result<i32> {
    let bytes = buf
        .get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .ok_or_else(|| anyhow!("response too short"))?;
    Ok(i32::from_be_bytes(bytes))
}

fn be_i16(buf: &[u8], at: usize) -> Result<i16> {
    let bytes = buf
        .get(at..at + 2)
        .and_then(|b| <[u8; 2]>::try_from(b).ok())
        .ok_or_else(|| anyhow!("response too short"))?;
    Ok(i16::from_be_bytes(bytes))
}

/// Polls [`api_versions`] at `addr` until it succeeds or `timeout` passes.
pub fn wait_ready(addr: &str, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let err = match api_versions(addr, Duration::from_secs(1)) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(err.context(format!(
                "no Kafka broker answered ApiVersions at {addr} within {:.1} s",
                timeout.as_secs_f64()
            )));
        }
        sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::{is_running_in, pick_free_port};
    use std::net::TcpListener;
    use std::thread;

    /// A one-shot fake broker that checks the request bytes and answers with `error_code`.
    fn fake_broker(error_code: i16) -> (String, thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let handle = thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut size = [0u8; 4];
            s.read_exact(&mut size).unwrap();
            let mut req = vec![0u8; i32::from_be_bytes(size) as usize];
            s.read_exact(&mut req).unwrap();
            let mut resp = Vec::new();
            resp.extend_from_slice(&req[4..8]); // echo the correlation id
            resp.extend_from_slice(&error_code.to_be_bytes());
            resp.extend_from_slice(&0i32.to_be_bytes()); // empty api_keys array
            let mut frame = (resp.len() as i32).to_be_bytes().to_vec();
            frame.extend_from_slice(&resp);
            s.write_all(&frame).unwrap();
            req
        });
        (addr, handle)
    }

    #[test]
    fn api_versions_request_framing_and_success() {
        let (addr, server) = fake_broker(0);
        api_versions(&addr, Duration::from_secs(5)).unwrap();
        let req = server.join().unwrap();
        assert_eq!(&req[0..2], &18i16.to_be_bytes()); // ApiVersions
        assert_eq!(&req[2..4], &0i16.to_be_bytes()); // version 0
        assert_eq!(&req[8..10], &11i16.to_be_bytes()); // client id length
        assert_eq!(&req[10..], b"xtask-probe");
    }

    #[test]
    fn api_versions_error_code_is_not_ready() {
        let (addr, server) = fake_broker(35); // UNSUPPORTED_VERSION
        let err = api_versions(&addr, Duration::from_secs(5)).unwrap_err();
        server.join().unwrap();
        assert!(format!("{err:#}").contains("error code 35"), "{err:#}");
    }

    #[test]
    fn nothing_listening_is_not_ready() {
        let port = pick_free_port().unwrap();
        assert!(api_versions(&format!("127.0.0.1:{port}"), Duration::from_millis(500)).is_err());
        assert!(!is_running_in(&std::env::temp_dir(), port));
    }
}
