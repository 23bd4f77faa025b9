//! A TCP proxy owned by the tests, for fault injection between a client and a service.
//!
//! [`Proxy::start`] forwards bytes both ways untouched: enough for any protocol (a
//! database connection, say) when a test needs to [cut](Proxy::cut_connections) live
//! connections or [refuse](Proxy::set_refusing) new ones.
//!
//! [`Proxy::start_kafka`] understands Kafka's framing (a 4-byte size, then a request
//! header with api key, version and correlation id). It
//! - rewrites Metadata responses so that every broker is advertised at the proxy's own
//!   address, keeping the client's later connections on the proxy too (meant for the
//!   single-broker test clusters: every broker maps to the one upstream);
//! - applies [`Fault`]s to the next requests of an api key: drop the response after the
//!   broker handled the request (with or without closing the connection), or answer a
//!   Produce request with an error code without forwarding it at all.
//!
//! Metadata rewriting covers every version (classic and flexible encodings); injected
//! Produce errors cover the classic versions 3–8, which the clients under test use.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::forward::Forwarder;

/// Kafka api key of Produce.
pub const PRODUCE: i16 = 0;
/// Kafka api key of Metadata.
pub const METADATA: i16 = 3;

/// What to do to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward the request, then swallow the broker's response; the connection stays
    /// open, so the client only notices through its own timeout.
    DropResponse,
    /// Forward the request, swallow the response and close the client connection.
    DropResponseAndClose,
    /// Do not forward; answer a Produce request with this error code for every
    /// partition in it (for example 6, NOT_LEADER_OR_FOLLOWER).
    FailWith(i16),
}

/// A queued fault: which requests it applies to.
#[derive(Debug, Clone)]
struct Rule {
    api_key: i16,
    /// Only Produce requests that include this topic and partition.
    target: Option<(String, i32)>,
    fault: Fault,
}

#[derive(Debug, Default)]
struct Shared {
    faults: VecDeque<Rule>,
    requests: HashMap<i16, usize>,
    faults_applied: usize,
}

/// A running proxy; dropping it stops listening and cuts every connection.
pub struct Proxy {
    forwarder: Forwarder,
    kafka: bool,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("addr", &self.addr())
            .field("upstream", &self.upstream())
            .field("kafka", &self.kafka)
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// A plain TCP proxy on a free port of 127.0.0.1 forwarding to `upstream`.
    pub async fn start(upstream: &str) -> io::Result<Proxy> {
        Self::spawn(upstream, false).await
    }

    /// A Kafka-aware proxy (see the module docs) forwarding to the broker at `upstream`.
    pub async fn start_kafka(upstream: &str) -> io::Result<Proxy> {
        Self::spawn(upstream, true).await
    }

    /// A Kafka-aware proxy that clients reach over TLS (terminated here with `tls`);
    /// the hop to the broker is plain TCP. For testing a client's TLS end to end
    /// against a broker that offers none.
    pub async fn start_kafka_tls(
        upstream: &str,
        tls: Arc<rustls::ServerConfig>,
    ) -> io::Result<Proxy> {
        Self::spawn_with(upstream, true, Some(tokio_rustls::TlsAcceptor::from(tls))).await
    }

    async fn spawn(upstream: &str, kafka: bool) -> io::Result<Proxy> {
        Self::spawn_with(upstream, kafka, None).await
    }

    async fn spawn_with(
        upstream: &str,
        kafka: bool,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> io::Result<Proxy> {
        let shared = Arc::new(Mutex::new(Shared::default()));
        // The proxy's own address is known only once it listens; Metadata rewriting needs it.
        let own_addr = Arc::new(std::sync::OnceLock::<String>::new());
        let (conn_shared, conn_addr) = (Arc::clone(&shared), Arc::clone(&own_addr));
        let forwarder = Forwarder::start(upstream, move |client, server| {
            let (shared, tls) = (Arc::clone(&conn_shared), tls.clone());
            let own_addr = conn_addr.get().cloned().unwrap_or_default();
            async move {
                if let Some(acceptor) = tls {
                    let Ok(client) = acceptor.accept(client).await else {
                        return;
                    };
                    kafka_connection(client, server, own_addr, shared).await;
                } else if kafka {
                    kafka_connection(client, server, own_addr, shared).await;
                } else {
                    let (mut client, mut server) = (client, server);
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            }
        })
        .await?;
        let _ = own_addr.set(forwarder.addr().to_owned());
        Ok(Proxy {
            forwarder,
            kafka,
            shared,
        })
    }

    /// `127.0.0.1:PORT` where clients connect.
    pub fn addr(&self) -> &str {
        self.forwarder.addr()
    }

    /// The address the proxy forwards to.
    pub fn upstream(&self) -> &str {
        self.forwarder.upstream()
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closes every open connection (both sides); new ones are still accepted.
    pub fn cut_connections(&self) {
        self.forwarder.cut_connections();
    }

    /// While `true`, new connections are accepted and closed at once.
    pub fn set_refusing(&self, refusing: bool) {
        self.forwarder.set_refusing(refusing);
    }

    /// Applies `fault` to the next `times` requests with `api_key` (Kafka proxies only).
    ///
    /// # Panics
    /// On a plain TCP proxy, which cannot see requests.
    pub fn fault_next(&self, api_key: i16, fault: Fault, times: usize) {
        assert!(
            self.kafka,
            "faults need a Kafka-aware proxy (Proxy::start_kafka)"
        );
        let mut shared = self.shared();
        for _ in 0..times {
            shared.faults.push_back(Rule {
                api_key,
                target: None,
                fault,
            });
        }
    }

    /// Applies `fault` to the next `times` Produce requests that write to
    /// `topic`/`partition`; other Produce requests pass.
    pub fn fault_produce_to(&self, topic: &str, partition: i32, fault: Fault, times: usize) {
        assert!(
            self.kafka,
            "faults need a Kafka-aware proxy (Proxy::start_kafka)"
        );
        let mut shared = self.shared();
        for _ in 0..times {
            shared.faults.push_back(Rule {
                api_key: PRODUCE,
                target: Some((topic.to_owned(), partition)),
                fault,
            });
        }
    }

    /// How many requests with `api_key` passed so far (Kafka proxies only).
    pub fn requests(&self, api_key: i16) -> usize {
        self.shared().requests.get(&api_key).copied().unwrap_or(0)
    }

    /// How many queued faults have been applied.
    pub fn faults_applied(&self) -> usize {
        self.shared().faults_applied
    }
}

/// What the proxy remembers about a forwarded request until its response.
#[derive(Debug, Clone, Copy)]
struct Pending {
    api_key: i16,
    api_version: i16,
    fault: Option<Fault>,
}

async fn kafka_connection<C>(
    client: C,
    server: TcpStream,
    own_addr: String,
    shared: Arc<Mutex<Shared>>,
) where
    C: AsyncRead + AsyncWrite + Send + 'static,
{
    let (client_read, client_write) = tokio::io::split(client);
    let (server_read, server_write) = server.into_split();
    let pending: Arc<Mutex<HashMap<i32, Pending>>> = Arc::default();
    // Everything for the client goes through one writer task.
    let (to_client, from_pumps) = mpsc::unbounded_channel::<Option<Vec<u8>>>();
    let writer = tokio::spawn(client_writer(client_write, from_pumps));
    let requests = tokio::spawn(request_pump(
        client_read,
        server_write,
        Arc::clone(&pending),
        shared,
        to_client.clone(),
    ));
    let responses = tokio::spawn(response_pump(server_read, pending, own_addr, to_client));
    // Whichever side ends first ends the connection. Aborting on drop matters too: the
    // proxy cuts connections by aborting this task.
    let _guard = AbortOnDrop(vec![
        requests.abort_handle(),
        responses.abort_handle(),
        writer.abort_handle(),
    ]);
    let _ = writer.await;
}

/// Aborts the connection's pump tasks when the connection task ends or is aborted.
struct AbortOnDrop(Vec<tokio::task::AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

async fn client_writer(
    mut write: impl AsyncWrite + Unpin,
    mut frames: mpsc::UnboundedReceiver<Option<Vec<u8>>>,
) {
    while let Some(frame) = frames.recv().await {
        let Some(frame) = frame else {
            break; // close requested
        };
        if write.write_all(&frame).await.is_err() {
            break;
        }
    }
    let _ = write.shutdown().await;
}

async fn read_frame(read: &mut (impl AsyncRead + Unpin)) -> io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    read.read_exact(&mut size).await?;
    let len = usize::try_from(i32::from_be_bytes(size))
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "negative frame size"))?;
    let mut frame = vec![0u8; 4 + len];
    frame[..4].copy_from_slice(&size);
    read.read_exact(&mut frame[4..]).await?;
    Ok(frame)
}

async fn request_pump(
    mut client: impl AsyncRead + Unpin,
    mut server: impl AsyncWrite + Unpin,
    pending: Arc<Mutex<HashMap<i32, Pending>>>,
    shared: Arc<Mutex<Shared>>,
    to_client: mpsc::UnboundedSender<Option<Vec<u8>>>,
) {
    while let Ok(frame) = read_frame(&mut client).await {
        let Some((api_key, api_version, correlation)) = request_header(&frame) else {
            break;
        };
        let fault = {
            let mut shared = shared.lock().unwrap_or_else(|p| p.into_inner());
            *shared.requests.entry(api_key).or_default() += 1;
            let targets = if api_key == PRODUCE {
                produce_targets(&frame, api_version).unwrap_or_default()
            } else {
                Vec::new()
            };
            let position = shared.faults.iter().position(|r| {
                r.api_key == api_key && r.target.as_ref().is_none_or(|t| targets.contains(t))
            });
            let fault = position
                .and_then(|i| shared.faults.remove(i))
                .map(|r| r.fault);
            if fault.is_some() {
                shared.faults_applied += 1;
            }
            fault
        };
        if let Some(Fault::FailWith(code)) = fault {
            match produce_error_response(&frame, api_version, correlation, code) {
                Some(response) => {
                    let _ = to_client.send(Some(response));
                    continue;
                }
                None => panic!(
                    "the proxy can only fail Produce v3..=8 requests, got api key {api_key} v{api_version}"
                ),
            }
        }
        pending.lock().unwrap_or_else(|p| p.into_inner()).insert(
            correlation,
            Pending {
                api_key,
                api_version,
                fault,
            },
        );
        if server.write_all(&frame).await.is_err() {
            break;
        }
    }
    let _ = to_client.send(None);
}

async fn response_pump(
    mut server: impl AsyncRead + Unpin,
    pending: Arc<Mutex<HashMap<i32, Pending>>>,
    own_addr: String,
    to_client: mpsc::UnboundedSender<Option<Vec<u8>>>,
) {
    let (host, port) = own_addr.rsplit_once(':').unwrap_or((&own_addr, "0"));
    let port: i32 = port.parse().unwrap_or(0);
    while let Ok(frame) = read_frame(&mut server).await {
        let Some(correlation) = frame
            .get(4..8)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        else {
            break;
        };
        let request = pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&correlation);
        let frame = match request {
            Some(Pending {
                fault: Some(Fault::DropResponse),
                ..
            }) => continue,
            Some(Pending {
                fault: Some(Fault::DropResponseAndClose),
                ..
            }) => {
                let _ = to_client.send(None);
                break;
            }
            Some(Pending {
                api_key: METADATA,
                api_version,
                ..
            }) => rewrite_metadata(&frame, api_version, host, port).unwrap_or(frame),
            _ => frame,
        };
        if to_client.send(Some(frame)).is_err() {
            break;
        }
    }
    let _ = to_client.send(None);
}

/// (api key, api version, correlation id) of a request frame.
fn request_header(frame: &[u8]) -> Option<(i16, i16, i32)> {
    let h = frame.get(4..12)?;
    Some((
        i16::from_be_bytes([h[0], h[1]]),
        i16::from_be_bytes([h[2], h[3]]),
        i32::from_be_bytes([h[4], h[5], h[6], h[7]]),
    ))
}

/// A cursor over a frame for the few fields the proxy parses.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(bytes)
    }
    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn uvarint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.take(1)?.first()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    /// Classic string or nullable string (i16 length, -1 = null).
    fn string(&mut self) -> Option<Option<&'a [u8]>> {
        let len = self.i16()?;
        if len < 0 {
            return Some(None);
        }
        self.take(usize::try_from(len).ok()?).map(Some)
    }
    /// Compact string or nullable string (uvarint length + 1, 0 = null).
    fn compact_string(&mut self) -> Option<Option<&'a [u8]>> {
        let len = self.uvarint()?;
        if len == 0 {
            return Some(None);
        }
        self.take(usize::try_from(len - 1).ok()?).map(Some)
    }
    fn tagged_fields(&mut self) -> Option<()> {
        for _ in 0..self.uvarint()? {
            self.uvarint()?;
            let size = self.uvarint()?;
            self.take(usize::try_from(size).ok()?)?;
        }
        Some(())
    }
}

fn put_uvarint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The Metadata response `frame` with every broker's host and port replaced, or `None`
/// if it cannot be parsed (it is then forwarded as is).
fn rewrite_metadata(frame: &[u8], version: i16, host: &str, port: i32) -> Option<Vec<u8>> {
    let flexible = version >= 9;
    let mut c = Cursor { buf: frame, pos: 8 }; // size and correlation id
    if flexible {
        c.tagged_fields()?; // response header v1
    }
    if version >= 3 {
        c.i32()?; // throttle time
    }
    let brokers_start = c.pos;
    let count = if flexible {
        usize::try_from(c.uvarint()?.checked_sub(1)?).ok()?
    } else {
        usize::try_from(c.i32()?).ok()?
    };
    let mut brokers = Vec::new();
    if flexible {
        put_uvarint(&mut brokers, count as u64 + 1);
    } else {
        brokers.extend_from_slice(&i32::try_from(count).ok()?.to_be_bytes());
    }
    for _ in 0..count {
        let node_id = c.i32()?;
        brokers.extend_from_slice(&node_id.to_be_bytes());
        if flexible {
            c.compact_string()?;
            put_uvarint(&mut brokers, host.len() as u64 + 1);
        } else {
            c.string()?;
            brokers.extend_from_slice(&i16::try_from(host.len()).ok()?.to_be_bytes());
        }
        brokers.extend_from_slice(host.as_bytes());
        c.i32()?;
        brokers.extend_from_slice(&port.to_be_bytes());
        let rest_start = c.pos;
        if version >= 1 {
            if flexible {
                c.compact_string()?; // rack
                c.tagged_fields()?;
            } else {
                c.string()?;
            }
        }
        brokers.extend_from_slice(&frame[rest_start..c.pos]);
    }
    let mut out = Vec::with_capacity(frame.len() + brokers.len());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&frame[4..brokers_start]);
    out.extend_from_slice(&brokers);
    out.extend_from_slice(&frame[c.pos..]);
    let size = i32::try_from(out.len() - 4).ok()?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Some(out)
}

/// The topic-partitions a Produce request (v3..=8) writes to.
fn produce_targets(request: &[u8], version: i16) -> Option<Vec<(String, i32)>> {
    if !(3..=8).contains(&version) {
        return None;
    }
    let mut c = Cursor {
        buf: request,
        pos: 12,
    };
    c.string()?; // client id
    c.string()?; // transactional id
    c.i16()?; // acks
    c.i32()?; // timeout
    let mut out = Vec::new();
    for _ in 0..c.i32()? {
        let name = String::from_utf8_lossy(c.string()??).into_owned();
        for _ in 0..c.i32()? {
            let index = c.i32()?;
            let records = c.i32()?;
            c.take(usize::try_from(records.max(0)).ok()?)?;
            out.push((name.clone(), index));
        }
    }
    Some(out)
}

/// A Produce response answering `request` with `code` for each of its partitions.
fn produce_error_response(
    request: &[u8],
    version: i16,
    correlation: i32,
    code: i16,
) -> Option<Vec<u8>> {
    let (api_key, ..) = request_header(request)?;
    if api_key != PRODUCE || !(3..=8).contains(&version) {
        return None;
    }
    let mut c = Cursor {
        buf: request,
        pos: 12,
    };
    c.string()?; // client id
    c.string()?; // transactional id
    c.i16()?; // acks
    c.i32()?; // timeout
    let mut body = Vec::new();
    let topics = c.i32()?;
    body.extend_from_slice(&topics.to_be_bytes());
    for _ in 0..topics {
        let name = c.string()??;
        body.extend_from_slice(&i16::try_from(name.len()).ok()?.to_be_bytes());
        body.extend_from_slice(name);
        let partitions = c.i32()?;
        body.extend_from_slice(&partitions.to_be_bytes());
        for _ in 0..partitions {
            let index = c.i32()?;
            let records = c.i32()?;
            c.take(usize::try_from(records.max(0)).ok()?)?;
            body.extend_from_slice(&index.to_be_bytes());
            body.extend_from_slice(&code.to_be_bytes());
            body.extend_from_slice(&(-1i64).to_be_bytes()); // base offset
            body.extend_from_slice(&(-1i64).to_be_bytes()); // log append time
            if version >= 5 {
                body.extend_from_slice(&(-1i64).to_be_bytes()); // log start offset
            }
            if version >= 8 {
                body.extend_from_slice(&0i32.to_be_bytes()); // no record errors
                body.extend_from_slice(&(-1i16).to_be_bytes()); // null error message
            }
        }
    }
    body.extend_from_slice(&0i32.to_be_bytes()); // throttle time
    let mut out = Vec::with_capacity(body.len() + 8);
    out.extend_from_slice(&i32::try_from(body.len() + 4).ok()?.to_be_bytes());
    out.extend_from_slice(&correlation.to_be_bytes());
    out.extend_from_slice(&body);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
