//! Where the dependencies are, said without secrets, and whether they accept a TCP
//! connection at all.
//!
//! The TCP check comes before each client connection attempt because the clients hide
//! the cause: sqlx retries a refused connection until its pool timeout and then reports
//! only "pool timed out". A check of our own names the operating system's answer
//! (`connection refused`, `timed out`, a DNS failure) at once.

use std::io;
use std::time::Duration;

use tokio::net::TcpStream;

/// Limit on one TCP check (connect only, nothing is sent).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// `url` with the password of its user info, and any `password=` query parameter,
/// replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => format!("{user_info}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// `host:port` of a PostgreSQL or MySQL/MariaDB URL (the scheme's port when none is
/// given); `None` for SQLite and for URLs without a network host (a Unix socket).
pub fn database_address(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme {
        "postgres" | "postgresql" => 5432,
        "mysql" | "mariadb" => 3306,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    if host_port.is_empty() || host_port.starts_with('%') {
        return None;
    }
    // `[::1]:5432`, `[::1]`, `host:5432`, `host`.
    let has_port = match host_port.rfind(']') {
        Some(bracket) => host_port[bracket..].contains(':'),
        None => host_port.contains(':'),
    };
    Some(if has_port {
        host_port.to_owned()
    } else {
        format!("{host_port}:{default_port}")
    })
}

/// Whether the database server of `url` accepts a TCP connection within
/// [`PROBE_TIMEOUT`] (see [`tcp_reachable`]); always `Ok` where there is no network
/// address to try ([`database_address`]: SQLite, a Unix socket).
pub async fn database_reachable(url: &str) -> Result<(), String> {
    match database_address(url) {
        Some(address) => tcp_reachable(&[address], PROBE_TIMEOUT).await,
        None => Ok(()),
    }
}

/// Succeeds as soon as one of `addresses` accepts a TCP connection (tried in order);
/// otherwise `unreachable: ...` with each address's error (just the error for one).
pub async fn tcp_reachable(addresses: &[String], timeout: Duration) -> Result<(), String> {
    let mut errors = Vec::with_capacity(addresses.len());
    for address in addresses {
        match tokio::time::timeout(timeout, TcpStream::connect(address.as_str())).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => errors.push((address, describe(&e))),
            Err(_) => errors.push((address, format!("no answer within {timeout:?}"))),
        }
    }
    Err(match errors.as_slice() {
        [(_, e)] => format!("unreachable: {e}"),
        _ => {
            let each: Vec<String> = errors.iter().map(|(a, e)| format!("{a} {e}")).collect();
            format!("unreachable: {}", each.join("; "))
        }
    })
}

/// The operating system's answer in words: the kind for the common network failures
/// (`connection refused`), else the full error (a DNS failure says which name).
fn describe(e: &io::Error) -> String {
    use io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused | ConnectionReset | ConnectionAborted | TimedOut | HostUnreachable
        | NetworkUnreachable | AddrNotAvailable => e.kind().to_string(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
#[path = "probe_tests.rs"]
mod tests;
