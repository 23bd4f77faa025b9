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
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db:5432/orders?sslmode=require"),
            "postgres://app:***@db:5432/orders?sslmode=require"
        );
        assert_eq!(
            redact_url("postgres://app@db/orders"),
            "postgres://app@db/orders"
        );
        assert_eq!(
            redact_url("mysql://u@h/db?password=pw&ssl-mode=disabled"),
            "mysql://u@h/db?password=***&ssl-mode=disabled"
        );
        assert_eq!(
            redact_url("redis://:token@cache:6379/0"),
            "redis://:***@cache:6379/0"
        );
        assert_eq!(
            redact_url("sqlite://x.db?mode=rwc"),
            "sqlite://x.db?mode=rwc"
        );
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn database_addresses() {
        let cases = [
            ("postgres://u:p@db:6543/x", Some("db:6543")),
            ("postgresql://db/x", Some("db:5432")),
            ("mysql://root@127.0.0.1/test", Some("127.0.0.1:3306")),
            ("mariadb://root@[::1]:3307/t", Some("[::1]:3307")),
            ("postgres://u@[::1]/t", Some("[::1]:5432")),
            ("postgres://%2Fvar%2Frun%2Fpostgresql/db", None),
            ("postgres:///db?host=/run/pg", None),
            ("sqlite://x.db?mode=rwc", None),
            ("sqlite::memory:", None),
        ];
        for (url, expected) in cases {
            assert_eq!(database_address(url).as_deref(), expected, "{url}");
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_named_refused_and_an_open_one_passes() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let open = listener.local_addr().unwrap().to_string();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        };
        let e = tcp_reachable(std::slice::from_ref(&closed), PROBE_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(e, "unreachable: connection refused");
        let both = [closed.clone(), closed.clone()];
        let e = tcp_reachable(&both, PROBE_TIMEOUT).await.unwrap_err();
        assert_eq!(
            e,
            format!("unreachable: {closed} connection refused; {closed} connection refused")
        );
        assert_eq!(tcp_reachable(&[closed, open], PROBE_TIMEOUT).await, Ok(()));
    }
}
