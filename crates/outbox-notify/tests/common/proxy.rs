//! A loopback TCP proxy that a test can cut and restore: a controllable outage between a
//! transport and its (real) service, and a way to learn which server-side connections
//! belong to the proxied client.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

#[derive(Default)]
struct State {
    cut: AtomicBool,
    connections: Mutex<Vec<JoinHandle<()>>>,
    /// Local ports of the proxy's connections to the service, as the service sees them.
    upstream_ports: Mutex<Vec<u16>>,
}

impl Proxy {
    /// Listens on an ephemeral loopback port and forwards to `upstream` (`host:port`).
    pub async fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let upstream = upstream.to_owned();
        let shared = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                if shared.cut.load(Ordering::SeqCst) {
                    drop(client); // refused, as by a dead service
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                if let Ok(local) = server.local_addr() {
                    shared.upstream_ports.lock().unwrap().push(local.port());
                }
                let task = tokio::spawn(async move {
                    let (mut client, mut server) = (client, server);
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                shared.connections.lock().unwrap().push(task);
            }
        });
        Proxy {
            addr,
            state,
            accept,
        }
    }

    /// `127.0.0.1:<port>` of the proxy.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every proxied connection and refuses new ones.
    pub fn cut(&self) {
        self.state.cut.store(true, Ordering::SeqCst);
        for task in self.state.connections.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    /// Accepts connections again.
    pub fn restore(&self) {
        self.state.cut.store(false, Ordering::SeqCst);
    }

    pub fn upstream_ports(&self) -> Vec<u16> {
        self.state.upstream_ports.lock().unwrap().clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}
