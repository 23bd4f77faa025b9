//! A TCP proxy in front of the database that counts the statements clients execute: the
//! "counting connection wrapper" of section 5. Bytes pass through untouched; the
//! client-to-server direction is parsed only to count.
//!
//! PostgreSQL: every simple `Query` and every extended-protocol `Execute` counts once,
//! classified by its SQL (from `Query`, or from the `Parse` the `Bind` before the
//! `Execute` refers to). Clients must not negotiate TLS (`sslmode=disable`).
//! MySQL/MariaDB: every `COM_QUERY` and `COM_STMT_EXECUTE` counts once; prepared
//! statements are matched to their SQL assuming the server numbers them 1, 2, ... per
//! connection, as MySQL and MariaDB do. Clients must use `ssl-mode=disabled`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use outbox_tests::forward::Forwarder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Postgres,
    MySql,
}

/// Statement counts by kind (see [`CountingProxy::start`]'s `classify`).
pub type Counts = BTreeMap<String, u64>;

type Classify = Arc<dyn Fn(&str) -> String + Send + Sync>;

pub struct CountingProxy {
    forwarder: Forwarder,
    counts: Arc<Mutex<Counts>>,
}

impl CountingProxy {
    /// Listens on a free local port and forwards every connection to `upstream`;
    /// `classify` names the kind of each executed statement from its SQL.
    pub async fn start(
        upstream: &str,
        protocol: Protocol,
        classify: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> CountingProxy {
        let counts: Arc<Mutex<Counts>> = Arc::default();
        let classify: Classify = Arc::new(classify);
        let shared = Arc::clone(&counts);
        let forwarder = Forwarder::start(upstream, move |client, server| {
            let (counts, classify) = (Arc::clone(&shared), Arc::clone(&classify));
            relay_connection(client, server, protocol, counts, classify)
        })
        .await
        .unwrap();
        CountingProxy { forwarder, counts }
    }

    pub fn addr(&self) -> &str {
        self.forwarder.addr()
    }

    /// The counts so far, resetting them.
    pub fn take(&self) -> Counts {
        std::mem::take(&mut *self.counts.lock().unwrap())
    }
}

async fn relay_connection(
    client: TcpStream,
    server: TcpStream,
    protocol: Protocol,
    counts: Arc<Mutex<Counts>>,
    classify: Classify,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let down = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    });
    let mut parser = Parser::new(protocol);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match client_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if server_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
        for sql in parser.feed(&buf[..n]) {
            let kind = classify(&sql);
            *counts.lock().unwrap().entry(kind).or_default() += 1;
        }
    }
    let _ = server_write.shutdown().await;
    let _ = down.await;
}

/// Splits the client's byte stream into protocol messages and yields the SQL of each
/// executed statement.
struct Parser {
    protocol: Protocol,
    pending: Vec<u8>,
    /// PostgreSQL: still in the untyped startup phase (SSLRequest, StartupMessage).
    startup: bool,
    /// Prepared statements: name (PostgreSQL) or number (MySQL) -> SQL.
    statements: HashMap<String, String>,
    prepared: u32,
    bound: String,
}

impl Parser {
    fn new(protocol: Protocol) -> Parser {
        Parser {
            protocol,
            pending: Vec::new(),
            startup: true,
            statements: HashMap::new(),
            prepared: 0,
            bound: String::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut executed = Vec::new();
        loop {
            let consumed = match self.protocol {
                Protocol::Postgres => self.next_postgres(&mut executed),
                Protocol::MySql => self.next_mysql(&mut executed),
            };
            match consumed {
                Some(n) => {
                    self.pending.drain(..n);
                }
                None => return executed,
            }
        }
    }

    fn next_postgres(&mut self, executed: &mut Vec<String>) -> Option<usize> {
        let p = &self.pending;
        if self.startup {
            let len = u32::from_be_bytes(p.get(0..4)?.try_into().ok()?) as usize;
            if p.len() < len.max(8) {
                return None;
            }
            let code = u32::from_be_bytes(p[4..8].try_into().ok()?);
            // SSLRequest and GSSENCRequest come before the StartupMessage.
            if code != 80_877_103 && code != 80_877_104 {
                self.startup = false;
            }
            return Some(len);
        }
        let kind = *p.first()?;
        let len = u32::from_be_bytes(p.get(1..5)?.try_into().ok()?) as usize;
        if p.len() < 1 + len {
            return None;
        }
        let body = &p[5..1 + len];
        let mut fields = body
            .split(|b| *b == 0)
            .map(|s| String::from_utf8_lossy(s).into_owned());
        match kind {
            b'Q' => executed.push(fields.next().unwrap_or_default()),
            b'P' => {
                let name = fields.next().unwrap_or_default();
                let sql = fields.next().unwrap_or_default();
                self.statements.insert(name, sql);
            }
            b'B' => {
                let _portal = fields.next();
                let name = fields.next().unwrap_or_default();
                self.bound = self.statements.get(&name).cloned().unwrap_or_default();
            }
            b'E' => executed.push(self.bound.clone()),
            _ => {}
        }
        Some(1 + len)
    }

    fn next_mysql(&mut self, executed: &mut Vec<String>) -> Option<usize> {
        let p = &self.pending;
        let header = p.get(0..4)?;
        let len =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        if p.len() < 4 + len {
            return None;
        }
        // Commands start a new exchange: sequence id 0.
        if header[3] == 0 && len > 0 {
            let payload = &p[4..4 + len];
            match payload[0] {
                0x03 => executed.push(String::from_utf8_lossy(&payload[1..]).into_owned()),
                0x16 => {
                    self.prepared += 1;
                    let sql = String::from_utf8_lossy(&payload[1..]).into_owned();
                    self.statements.insert(self.prepared.to_string(), sql);
                }
                0x17 if payload.len() >= 5 => {
                    let id = u32::from_le_bytes(payload[1..5].try_into().ok()?);
                    executed.push(
                        self.statements
                            .get(&id.to_string())
                            .cloned()
                            .unwrap_or_default(),
                    );
                }
                _ => {}
            }
        }
        Some(4 + len)
    }
}
