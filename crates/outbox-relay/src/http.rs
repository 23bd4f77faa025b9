//! `/metrics`, `/healthz` and `/readyz` over a deliberately tiny HTTP/1.1 server.
//!
//! Three fixed GET endpoints for a scraper and a kubelet do not justify a web framework
//! (and its compile time): each connection reads one request head, answers, closes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::readiness::Readiness;

/// Serves until the task is aborted. `render` produces the Prometheus text.
pub async fn serve(
    listener: TcpListener,
    health: Arc<Readiness>,
    render: Arc<dyn Fn() -> String + Send + Sync>,
) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (health, render) = (Arc::clone(&health), Arc::clone(&render));
        tokio::spawn(async move {
            let _ =
                tokio::time::timeout(Duration::from_secs(10), answer(socket, &health, &*render))
                    .await;
        });
    }
}

/// Binds the listener early so a taken port is a start-up error, not a silent failure.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

async fn answer(
    mut socket: TcpStream,
    health: &Readiness,
    render: &(dyn Fn() -> String + Send + Sync),
) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8 * 1024 {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let request = String::from_utf8_lossy(&head);
    let mut words = request.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET", "/metrics") => ("200 OK", "text/plain; version=0.0.4", render()),
        ("GET", "/healthz") => probe(if health.is_live() {
            Ok(())
        } else {
            Err("the relay has stopped".to_owned())
        }),
        ("GET", "/readyz") => probe(health.check()),
        ("GET", _) => ("404 Not Found", "text/plain", "not found\n".to_owned()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n".to_owned(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await
}

fn probe(outcome: Result<(), String>) -> (&'static str, &'static str, String) {
    match outcome {
        Ok(()) => ("200 OK", "text/plain", "ok\n".to_owned()),
        Err(why) => ("503 Service Unavailable", "text/plain", format!("{why}\n")),
    }
}
