//! The [`Proxy`] handle: starting a plain, Kafka-aware or TLS-terminating proxy on top of
//! the shared [`Forwarder`], cutting or refusing connections, and queueing faults.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use super::connection::kafka_connection;
use super::fault::{Fault, PRODUCE, Rule, Shared};
use crate::forward::Forwarder;

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

    /// A Kafka-aware proxy (see the [`proxy`](super) module docs) forwarding to the broker
    /// at `upstream`.
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
