//! A PostgreSQL-aware TCP proxy that slows down chosen statements only: a "slow
//! database" for one kind of call (the relay's lease calls, say) while every other
//! statement on the same pool passes at full speed.
//!
//! # How a statement is recognised
//!
//! The proxy reads the frontend (client → server) side of the wire protocol message by
//! message. A statement runs either as a simple `Query` (its SQL text in the message) or
//! through the extended protocol: `Parse` (statement name + SQL text), later `Bind`
//! (portal + statement name) and `Execute`. sqlx, under sea-orm, caches prepared
//! statements per connection: the SQL text crosses the wire only in the first `Parse` of
//! a connection, every later execution is a `Bind` naming the cached statement. A pattern
//! match on raw chunks would therefore slow the first execution on each connection and
//! none after it; delaying a whole *connection* once it carried the pattern would slow
//! every fetch and delete that later borrows that pooled connection too.
//!
//! So the proxy tracks, per connection, which prepared statement names were parsed from
//! SQL containing the pattern (a `Parse` of the same name without it clears the mark),
//! and delays an **execution**: a `Bind` of a marked statement, or a `Query` whose text
//! contains the pattern. The delay is applied once per request (up to the next `Sync`),
//! before the delayed message and everything after it is forwarded; the messages before
//! it are forwarded first. A `Parse` alone is not delayed, so each execution costs one
//! latency, whether or not the statement was cached. Server → client bytes pass
//! untouched.
//!
//! Connections must be plain text (`sslmode=disable`): a connection that asks for TLS or
//! GSS encryption is forwarded untouched and never delayed. [`StatementDelayProxy::delayed`]
//! counts delayed executions, so a test can check that the latency really hit.

use std::collections::HashSet;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::forward::Forwarder;

/// Frontend message: parse a prepared statement (name, SQL text, parameter types).
const PARSE: u8 = b'P';
/// Frontend message: bind a portal to a prepared statement (portal, statement name, ...).
const BIND: u8 = b'B';
/// Frontend message: a simple-protocol query (SQL text).
const QUERY: u8 = b'Q';
/// Frontend message: end of an extended-protocol request.
const SYNC: u8 = b'S';
/// Startup-phase request codes that switch the connection to an encrypted stream.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// A running proxy; dropping it stops listening and cuts every connection.
#[derive(Debug)]
pub struct StatementDelayProxy {
    forwarder: Forwarder,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    pattern: Vec<u8>,
    latency_ms: AtomicU64,
    delayed: AtomicUsize,
}

impl StatementDelayProxy {
    /// A proxy on a free port of 127.0.0.1 forwarding to the PostgreSQL server at
    /// `upstream`, delaying every execution of a statement whose SQL text contains
    /// `pattern` by `latency` (see the module docs; zero disables the delay).
    pub async fn start(
        upstream: &str,
        pattern: &str,
        latency: Duration,
    ) -> io::Result<StatementDelayProxy> {
        let shared = Arc::new(Shared {
            pattern: pattern.as_bytes().to_vec(),
            latency_ms: AtomicU64::new(millis(latency)),
            delayed: AtomicUsize::new(0),
        });
        let conn_shared = Arc::clone(&shared);
        let forwarder = Forwarder::start(upstream, move |client, server| {
            connection(client, server, Arc::clone(&conn_shared))
        })
        .await?;
        Ok(StatementDelayProxy { forwarder, shared })
    }

    /// `127.0.0.1:PORT` where clients connect.
    pub fn addr(&self) -> &str {
        self.forwarder.addr()
    }

    /// Changes the latency for executions from now on (zero: no delay).
    pub fn set_latency(&self, latency: Duration) {
        self.shared
            .latency_ms
            .store(millis(latency), Ordering::SeqCst);
    }

    /// How many statement executions have been delayed so far.
    pub fn delayed(&self) -> usize {
        self.shared.delayed.load(Ordering::SeqCst)
    }

    /// Closes every open connection (both sides); new ones are still accepted.
    pub fn cut_connections(&self) {
        self.forwarder.cut_connections();
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

async fn connection(client: TcpStream, server: TcpStream, shared: Arc<Shared>) {
    let (client_read, mut client_write) = client.into_split();
    let (mut server_read, server_write) = server.into_split();
    let requests = tokio::spawn(request_pump(client_read, server_write, shared));
    // The connection task is aborted to cut it; the request pump must end with it.
    let _guard = AbortOnDrop(requests.abort_handle());
    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
    let _ = client_write.shutdown().await;
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One connection's frontend state.
#[derive(Debug, Default)]
struct Frontend {
    /// Past the startup message: every message has a type byte.
    typed: bool,
    /// The client switched to TLS or GSS encryption: bytes are opaque from here on.
    opaque: bool,
    /// Prepared statements whose SQL text contains the pattern.
    marked: HashSet<Vec<u8>>,
    /// The current request (up to `Sync`) has been delayed already.
    delayed_this_request: bool,
}

/// What to do with one complete frontend message.
#[derive(Debug, PartialEq, Eq)]
enum Action {
    Forward,
    DelayThenForward,
}

impl Frontend {
    /// The length of the first complete message in `buf`, if there is one.
    fn message_len(&self, buf: &[u8]) -> Option<usize> {
        let header = if self.typed { 5 } else { 4 };
        let len_at = usize::from(self.typed);
        let len_bytes: [u8; 4] = buf.get(len_at..len_at + 4)?.try_into().ok()?;
        // A length below its own four bytes is malformed; forward it as a header only
        // and let the server reject it.
        let body = usize::try_from(u32::from_be_bytes(len_bytes))
            .unwrap_or(usize::MAX)
            .max(4);
        let total = len_at.saturating_add(body).max(header);
        (buf.len() >= total).then_some(total)
    }

    /// Classifies one complete message and updates the state.
    fn classify(&mut self, message: &[u8], pattern: &[u8]) -> Action {
        if self.opaque {
            return Action::Forward;
        }
        if !self.typed {
            let code = message
                .get(4..8)
                .and_then(|c| <[u8; 4]>::try_from(c).ok())
                .map(u32::from_be_bytes);
            match code {
                Some(SSL_REQUEST | GSSENC_REQUEST) => self.opaque = true,
                _ => self.typed = true,
            }
            return Action::Forward;
        }
        let body = message.get(5..).unwrap_or_default();
        let delay = match message.first() {
            Some(&PARSE) => {
                let mut fields = body.split(|b| *b == 0);
                let name = fields.next().unwrap_or_default().to_vec();
                let sql = fields.next().unwrap_or_default();
                if contains(sql, pattern) {
                    self.marked.insert(name);
                } else {
                    self.marked.remove(&name);
                }
                false
            }
            Some(&BIND) => {
                let statement = body.split(|b| *b == 0).nth(1).unwrap_or_default();
                self.marked.contains(statement)
            }
            Some(&QUERY) => contains(body, pattern),
            _ => false,
        };
        let action = if delay && !self.delayed_this_request {
            self.delayed_this_request = true;
            Action::DelayThenForward
        } else {
            Action::Forward
        };
        if matches!(message.first(), Some(&SYNC | &QUERY)) {
            self.delayed_this_request = false;
        }
        action
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

async fn request_pump(mut client: OwnedReadHalf, mut server: OwnedWriteHalf, shared: Arc<Shared>) {
    let mut state = Frontend::default();
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = vec![0u8; 8192];
    loop {
        let n = match client.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        // Forward whole messages in order; a delayed one waits, and so does everything
        // after it (the connection is one ordered stream).
        let mut start = 0;
        let mut ready = 0;
        while !state.opaque
            && let Some(len) = state.message_len(&buf[ready..])
        {
            let message = &buf[ready..ready + len];
            if state.classify(message, &shared.pattern) == Action::DelayThenForward {
                let latency = shared.latency_ms.load(Ordering::SeqCst);
                if latency > 0 {
                    if server.write_all(&buf[start..ready]).await.is_err() {
                        return;
                    }
                    start = ready;
                    shared.delayed.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(latency)).await;
                }
            }
            ready += len;
        }
        if state.opaque {
            ready = buf.len();
        }
        if server.write_all(&buf[start..ready]).await.is_err() {
            return;
        }
        buf.drain(..ready);
    }
    let _ = server.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&u32::try_from(body.len() + 4).unwrap().to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn startup() -> Vec<u8> {
        let mut m = 12u32.to_be_bytes().to_vec();
        m.extend_from_slice(&196_608u32.to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 0]);
        m
    }

    fn run(state: &mut Frontend, messages: &[Vec<u8>]) -> Vec<Action> {
        messages
            .iter()
            .map(|m| {
                assert_eq!(state.message_len(m), Some(m.len()));
                state.classify(m, b"leases")
            })
            .collect()
    }

    #[test]
    fn delays_each_execution_of_a_marked_statement_once() {
        let mut s = Frontend::default();
        use Action::{DelayThenForward as D, Forward as F};
        let actions = run(
            &mut s,
            &[
                startup(),
                typed(PARSE, b"s1\0UPDATE leases SET x = 1\0\0\0"),
                typed(SYNC, b""),
                typed(BIND, b"\0s1\0\0\0\0\0\0\0"),
                typed(b'E', b"\0\0\0\0\0"),
                typed(SYNC, b""),
                typed(BIND, b"\0s1\0\0\0\0\0\0\0"),
                typed(SYNC, b""),
                typed(PARSE, b"s2\0SELECT * FROM messages\0\0\0"),
                typed(BIND, b"\0s2\0\0\0\0\0\0\0"),
                typed(SYNC, b""),
                typed(QUERY, b"SELECT 1 FROM leases\0"),
                typed(QUERY, b"SELECT 1\0"),
            ],
        );
        assert_eq!(actions, [F, F, F, D, F, F, D, F, F, F, F, D, F]);
    }

    #[test]
    fn a_reparsed_name_loses_its_mark_and_tls_is_left_alone() {
        let mut s = Frontend::default();
        run(&mut s, &[startup(), typed(PARSE, b"s1\0leases\0\0\0")]);
        run(&mut s, &[typed(PARSE, b"s1\0messages\0\0\0")]);
        assert_eq!(
            run(&mut s, &[typed(BIND, b"\0s1\0\0\0")]),
            [Action::Forward]
        );
        let mut tls = Frontend::default();
        let mut ssl = 8u32.to_be_bytes().to_vec();
        ssl.extend_from_slice(&SSL_REQUEST.to_be_bytes());
        run(&mut tls, &[ssl]);
        assert!(tls.opaque);
    }

    #[test]
    fn incomplete_messages_wait_for_more_bytes() {
        let s = Frontend {
            typed: true,
            ..Frontend::default()
        };
        let m = typed(QUERY, b"SELECT 1\0");
        assert_eq!(s.message_len(&m[..m.len() - 1]), None);
        assert_eq!(s.message_len(&m[..3]), None);
        assert_eq!(s.message_len(&m), Some(m.len()));
    }
}
