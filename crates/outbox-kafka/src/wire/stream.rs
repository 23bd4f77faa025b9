//! The byte stream under rskafka's `Messenger`: plain TCP or TLS over TCP.
//!
//! rskafka's own transport type is private even with `unstable-fuzzing`, so the TLS
//! handshake is done here with the same `tokio-rustls` that rskafka would use.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// A connected broker stream.
#[derive(Debug)]
pub(crate) enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP; boxed because a TLS session is large.
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// Connects to `addr` (`host:port`) and, with a TLS configuration, runs the handshake
    /// checking the certificate against `host`.
    pub(crate) async fn connect(
        addr: &str,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> io::Result<Stream> {
        let tcp = TcpStream::connect(addr).await?;
        // Produce requests are latency-bound; never wait for Nagle.
        tcp.set_nodelay(true)?;
        let Some(config) = tls else {
            return Ok(Stream::Plain(tcp));
        };
        let host = host_of(addr);
        let server_name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let tls = TlsConnector::from(Arc::clone(config))
            .connect(server_name, tcp)
            .await?;
        Ok(Stream::Tls(Box::new(tls)))
    }
}

/// The host part of `host:port`, without the brackets of an IPv6 literal.
pub(crate) fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
