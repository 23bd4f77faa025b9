//! A slow link to a database, protocol-blind: a TCP proxy that holds every client →
//! server chunk for a set latency before forwarding it, and counts round trips.
//!
//! A round trip is a request the client sends after the server last spoke: the first
//! client bytes of a connection, and every client write that follows server bytes. Bytes
//! the client writes back to back (a pipelined request split over several writes) are
//! one round trip, and each is held once: the latency is per round trip, like a long
//! network path, not per TCP segment. Server → client bytes pass untouched.
//!
//! Used to count the round trips a store call costs (PostgreSQL and MySQL alike) and to
//! run a relay against a database half a second away.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::forward::Forwarder;

/// A running proxy; dropping it stops listening and cuts every connection.
#[derive(Debug)]
pub struct SlowLink {
    forwarder: Forwarder,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    latency_ms: AtomicU64,
    round_trips: AtomicUsize,
}

impl SlowLink {
    /// A proxy on a free port of 127.0.0.1 forwarding to `upstream` with `latency` per
    /// round trip (zero: none).
    pub async fn start(upstream: &str, latency: Duration) -> io::Result<SlowLink> {
        let shared = Arc::new(Shared::default());
        shared.latency_ms.store(millis(latency), Ordering::SeqCst);
        let conn_shared = Arc::clone(&shared);
        let forwarder = Forwarder::start(upstream, move |client, server| {
            connection(client, server, Arc::clone(&conn_shared))
        })
        .await?;
        Ok(SlowLink { forwarder, shared })
    }

    /// `127.0.0.1:PORT` where clients connect.
    pub fn addr(&self) -> &str {
        self.forwarder.addr()
    }

    /// Changes the latency from the next round trip on.
    pub fn set_latency(&self, latency: Duration) {
        self.shared
            .latency_ms
            .store(millis(latency), Ordering::SeqCst);
    }

    /// Round trips so far, over every connection.
    pub fn round_trips(&self) -> usize {
        self.shared.round_trips.load(Ordering::SeqCst)
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
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Set when the server has spoken since the client's last write: the next client
    // bytes start a new round trip.
    let server_spoke = Arc::new(AtomicBool::new(true));
    let spoke = Arc::clone(&server_spoke);
    let requests = tokio::spawn(async move {
        let mut buf = vec![0_u8; 64 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if spoke.swap(false, Ordering::SeqCst) {
                shared.round_trips.fetch_add(1, Ordering::SeqCst);
                let latency = shared.latency_ms.load(Ordering::SeqCst);
                if latency > 0 {
                    tokio::time::sleep(Duration::from_millis(latency)).await;
                }
            }
            if server_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = server_write.shutdown().await;
    });
    let _guard = AbortOnDrop(requests.abort_handle());
    let mut buf = vec![0_u8; 64 * 1024];
    loop {
        let n = match server_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        server_spoke.store(true, Ordering::SeqCst);
        if client_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = client_write.shutdown().await;
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
