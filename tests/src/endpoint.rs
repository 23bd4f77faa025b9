//! Talking to a child process over loopback: a free port to give it, a plain HTTP `GET`
//! on its endpoints (`/readyz`, `/metrics`), and polling until it answers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A free TCP port on 127.0.0.1, bound then released (xtask's `pick_free_port`).
///
/// # Panics
/// When no port can be bound.
pub fn free_port() -> u16 {
    crate::broker::pick_free_port().unwrap_or_else(|e| panic!("no free port: {e:#}"))
}

/// `GET path` on 127.0.0.1:`port`: the status code and the body, `None` when nothing
/// answers (within a second to connect, two seconds to read) or the answer is not HTTP.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Some((status, body))
}

/// Polls `check` every 100 ms (blocking the thread) until it holds or `within` has
/// passed; the last check decides.
pub fn wait_until(mut check: impl FnMut() -> bool, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    check()
}
