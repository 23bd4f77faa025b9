//! The accept-and-forward core of every TCP proxy the tests own: the fault-injecting
//! [`Proxy`](crate::proxy::Proxy), the notification tests' outage proxy and the
//! benchmark's statement-counting proxy.
//!
//! A [`Forwarder`] listens on a free port of 127.0.0.1; for each client it opens a
//! connection to the upstream and hands both streams to the caller's handler (plain
//! forwarding by default). It can refuse new clients, cut the open connections, and say
//! which local ports its upstream connections use (how a test finds "its" server-side
//! sessions).

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A running listener; dropping it stops listening and cuts every connection.
#[derive(Debug)]
pub struct Forwarder {
    addr: String,
    upstream: String,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

#[derive(Debug, Default)]
struct State {
    refusing: AtomicBool,
    connections: Mutex<Vec<JoinHandle<()>>>,
    /// Local ports of the connections to the upstream, as the upstream sees them.
    upstream_ports: Mutex<Vec<u16>>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Forwarder {
    /// Forwards bytes both ways untouched.
    pub async fn plain(upstream: &str) -> io::Result<Forwarder> {
        Self::start(upstream, |mut client, mut server| async move {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        })
        .await
    }

    /// Runs `handle(client, server)` for each accepted client once its upstream
    /// connection is open (a client whose upstream cannot be reached is closed). Both
    /// streams have `TCP_NODELAY` set, so small requests are not delayed by the proxy.
    pub async fn start<H, F>(upstream: &str, handle: H) -> io::Result<Forwarder>
    where
        H: Fn(TcpStream, TcpStream) -> F + Send + Sync + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?.to_string();
        let state = Arc::new(State::default());
        let accept = tokio::spawn(accept_loop(
            listener,
            upstream.to_owned(),
            Arc::clone(&state),
            Arc::new(handle),
        ));
        Ok(Forwarder {
            addr,
            upstream: upstream.to_owned(),
            state,
            accept,
        })
    }

    /// `127.0.0.1:PORT` where clients connect.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The address connections are forwarded to.
    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// Closes every open connection (both sides); new ones are still accepted unless
    /// [refusing](Self::set_refusing).
    pub fn cut_connections(&self) {
        for task in locked(&self.state.connections).drain(..) {
            task.abort();
        }
    }

    /// While `true`, new connections are accepted and closed at once, as by a dead
    /// service.
    pub fn set_refusing(&self, refusing: bool) {
        self.state.refusing.store(refusing, Ordering::SeqCst);
    }

    /// The local ports of every upstream connection opened so far.
    pub fn upstream_ports(&self) -> Vec<u16> {
        locked(&self.state.upstream_ports).clone()
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut_connections();
    }
}

async fn accept_loop<H, F>(
    listener: TcpListener,
    upstream: String,
    state: Arc<State>,
    handle: Arc<H>,
) where
    H: Fn(TcpStream, TcpStream) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    while let Ok((client, _)) = listener.accept().await {
        if state.refusing.load(Ordering::SeqCst) {
            drop(client);
            continue;
        }
        let (upstream, conn_state, handle) =
            (upstream.clone(), Arc::clone(&state), Arc::clone(&handle));
        let task = tokio::spawn(async move {
            let Ok(server) = TcpStream::connect(&upstream).await else {
                return;
            };
            if let Ok(local) = server.local_addr() {
                locked(&conn_state.upstream_ports).push(local.port());
            }
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            handle(client, server).await;
        });
        let mut connections = locked(&state.connections);
        connections.retain(|t| !t.is_finished());
        connections.push(task);
    }
}
