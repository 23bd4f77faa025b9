//! Is a Kafka broker answering? `ApiVersions` and `Metadata` round trips, and polling them.
//!
//! Ready means more than an open port: the broker answers `ApiVersions` without error
//! and lists itself among the live brokers of its `Metadata` answer. A KRaft broker
//! answers `ApiVersions` while it still waits for its controller; only once it is
//! registered does it show up in `Metadata`.

use anyhow::{Context, Result, anyhow, ensure};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::thread::sleep;
use std::time::{Duration, Instant};

const CLIENT_ID: &[u8] = b"xtask-probe";
const CORRELATION_ID: i32 = 0x7874_6b31;
const API_VERSIONS: i16 = 18;
const METADATA: i16 = 3;
/// Metadata v4: the lowest version Kafka 4 still serves (KIP-896) and the highest without
/// the flexible encoding, so the answer is read with fixed-width fields.
const METADATA_VERSION: i16 = 4;

/// One Kafka `ApiVersions` (api key 18, version 0) round trip with the broker at `addr`;
/// `Ok` only when it answers with error code 0.
///
/// Request: `i32 size, i16 api_key, i16 api_version, i32 correlation_id, i16-length
/// client_id`, no body. Response: `i32 size, i32 correlation_id, i16 error_code, ...`.
pub fn api_versions(addr: &str, timeout: Duration) -> Result<()> {
    each_address(addr, |sock| {
        let response = round_trip(sock, API_VERSIONS, 0, &[], timeout)?;
        let error_code = Reader::new(&response).i16()?;
        ensure!(
            error_code == 0,
            "{sock} answered ApiVersions with error code {error_code}"
        );
        Ok(())
    })
}

/// One broker as a `Metadata` answer lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataBroker {
    /// `node.id`.
    pub node_id: i32,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: i32,
}

/// The live brokers of a `Metadata` (v4, no topics) answer from `addr`.
pub fn metadata_brokers(addr: &str, timeout: Duration) -> Result<Vec<MetadataBroker>> {
    // topics: an empty array (not null: null asks for every topic); no auto-creation.
    let mut body = 0i32.to_be_bytes().to_vec();
    body.push(0);
    each_address(addr, |sock| {
        let response = round_trip(sock, METADATA, METADATA_VERSION, &body, timeout)?;
        let mut r = Reader::new(&response);
        let _throttle_ms = r.i32()?;
        let count = r.i32()?;
        ensure!(
            (0..=10_000).contains(&count),
            "{sock} answered Metadata with {count} brokers"
        );
        let mut brokers = Vec::new();
        for _ in 0..count {
            let node_id = r.i32()?;
            let host = r.string()?.unwrap_or_default();
            let port = r.i32()?;
            let _rack = r.string()?;
            brokers.push(MetadataBroker {
                node_id,
                host,
                port,
            });
        }
        Ok(brokers)
    })
}

/// `Ok` when the broker at `addr` answers `ApiVersions` and lists a live broker on the
/// port of `addr` in its `Metadata` answer.
pub fn ready(addr: &str, timeout: Duration) -> Result<()> {
    api_versions(addr, timeout)?;
    let port: i32 = addr
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .ok_or_else(|| anyhow!("{addr} has no port"))?;
    let brokers = metadata_brokers(addr, timeout)?;
    ensure!(
        brokers.iter().any(|b| b.port == port),
        "{addr} answers, but its Metadata lists no live broker on port {port} yet ({brokers:?})"
    );
    Ok(())
}

/// Polls [`ready`] at `addr` until it succeeds or `timeout` passes.
pub fn wait_ready(addr: &str, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let err = match ready(addr, Duration::from_secs(1)) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(err.context(format!(
                "no Kafka broker was ready at {addr} within {:.1} s",
                timeout.as_secs_f64()
            )));
        }
        sleep(Duration::from_millis(100));
    }
}

fn each_address<T>(addr: &str, mut f: impl FnMut(&SocketAddr) -> Result<T>) -> Result<T> {
    let mut last_err = anyhow!("{addr} resolved to no address");
    for sock in addr
        .to_socket_addrs()
        .with_context(|| format!("resolving {addr}"))?
    {
        match f(&sock) {
            Ok(v) => return Ok(v),
            Err(e) => last_err = e,
        }
    }
    Err(last_err)
}

/// Sends one request (header v1: key, version, correlation id, client id) and returns the
/// response after its correlation id.
fn round_trip(
    sock: &SocketAddr,
    api_key: i16,
    version: i16,
    body: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(sock, timeout)
        .with_context(|| format!("connecting to {sock}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let _ = stream.set_nodelay(true);

    let mut request = Vec::with_capacity(32 + body.len());
    request.extend_from_slice(&api_key.to_be_bytes());
    request.extend_from_slice(&version.to_be_bytes());
    request.extend_from_slice(&CORRELATION_ID.to_be_bytes());
    request.extend_from_slice(&(CLIENT_ID.len() as i16).to_be_bytes());
    request.extend_from_slice(CLIENT_ID);
    request.extend_from_slice(body);
    let mut frame = (request.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&request);
    stream
        .write_all(&frame)
        .with_context(|| format!("sending api key {api_key} to {sock}"))?;

    let mut size = [0u8; 4];
    stream
        .read_exact(&mut size)
        .with_context(|| format!("reading the response size of api key {api_key} from {sock}"))?;
    let size = i32::from_be_bytes(size);
    ensure!(
        (4..=16 << 20).contains(&size),
        "{sock} answered api key {api_key} with an implausible frame size {size}"
    );
    let mut response = vec![0u8; size as usize];
    stream
        .read_exact(&mut response)
        .with_context(|| format!("reading the response of api key {api_key} from {sock}"))?;
    let mut r = Reader::new(&response);
    let correlation = r.i32()?;
    ensure!(
        correlation == CORRELATION_ID,
        "{sock} answered with correlation id {correlation}, sent {CORRELATION_ID}"
    );
    Ok(response.split_off(4))
}

/// Big-endian fields from a response, each read checked against its length.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, at: 0 }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self
            .buf
            .get(self.at..self.at + N)
            .and_then(|b| <[u8; N]>::try_from(b).ok())
            .ok_or_else(|| anyhow!("response too short"))?;
        self.at += N;
        Ok(bytes)
    }

    fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(self.take()?))
    }

    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.take()?))
    }

    /// An `i16`-length string; length -1 is null.
    fn string(&mut self) -> Result<Option<String>> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(None);
        }
        let len = len as usize;
        let bytes = self
            .buf
            .get(self.at..self.at + len)
            .ok_or_else(|| anyhow!("response too short"))?;
        self.at += len;
        Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
    }
}

#[cfg(test)]
#[path = "probe_tests.rs"]
mod tests;
