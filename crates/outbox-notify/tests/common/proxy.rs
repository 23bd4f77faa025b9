//! A loopback TCP proxy that a test can cut and restore: a controllable outage between a
//! transport and its (real) service, and a way to learn which server-side connections
//! belong to the proxied client. The forwarding itself is the tests' shared
//! [`Forwarder`].

use std::net::SocketAddr;

use outbox_tests::forward::Forwarder;

pub struct Proxy {
    forwarder: Forwarder,
    addr: SocketAddr,
}

impl Proxy {
    /// Listens on an ephemeral loopback port and forwards to `upstream` (`host:port`).
    pub async fn start(upstream: &str) -> Proxy {
        let forwarder = Forwarder::plain(upstream).await.unwrap();
        let addr = forwarder.addr().parse().unwrap();
        Proxy { forwarder, addr }
    }

    /// `127.0.0.1:<port>` of the proxy.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every proxied connection and refuses new ones.
    pub fn cut(&self) {
        self.forwarder.set_refusing(true);
        self.forwarder.cut_connections();
    }

    /// Accepts connections again.
    pub fn restore(&self) {
        self.forwarder.set_refusing(false);
    }

    pub fn upstream_ports(&self) -> Vec<u16> {
        self.forwarder.upstream_ports()
    }
}
